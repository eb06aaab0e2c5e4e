// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The rows of daemon/ctl/ctl_ops.h with burstd's handlers.
#include "daemon/burstd/ctl_ops.h"

#include <cstddef>

#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {
namespace {

#define BURSTD_CTL_ROW(OP, REQ, RESP, SHAPE, FDS_IN, FDS_OUT, NEEDS, HANDLER) \
  CtlOp{BURST_CTL_OP_SPEC(OP, REQ, RESP, SHAPE, FDS_IN, FDS_OUT, NEEDS), &HANDLER},
constexpr CtlOp kCtlOps[] = {BURST_CTL_OPS(BURSTD_CTL_ROW)};
#undef BURSTD_CTL_ROW

// The dispatcher holds at most kMaxFdsIn descriptors of a request.
constexpr bool fds_fit() {
  for (const CtlOp& row : kCtlOps) {
    if (row.spec.max_fds_in > Dispatcher::kMaxFdsIn) return false;
  }
  return true;
}
static_assert(fds_fit());

}  // namespace

const CtlOp* find_ctl_op(uint16_t op) {
  for (const CtlOp& row : kCtlOps) {
    if (row.spec.op == op) return &row;
  }
  return nullptr;
}

int handle_op(Call& c, int (Resources::*fn)(uint32_t client, uint32_t handle)) {
  const auto req = c.request<burst_ctl_handle_req>();
  c.what = "handle " + std::to_string(req.handle);
  return (c.res.*fn)(c.s.id, req.handle);
}

void Call::start_response(size_t len) {
  out->assign(len, 0);
  ctl::init_response(reinterpret_cast<burst_ctl_hdr*>(out->data()), h, static_cast<uint32_t>(len),
                     0);
}

}  // namespace burst::burstd
