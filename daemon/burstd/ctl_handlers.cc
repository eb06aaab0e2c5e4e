// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The rows of daemon/ctl/ctl_ops.h (ctl::kOps) with burstd's handlers.
#include "daemon/burstd/ctl_handlers.h"

#include <cstddef>
#include <iterator>

#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {
namespace {

// The handler column of ctl::kOps, row by row.
#define BURSTD_CTL_HANDLER(OP, REQ, RESP, SHAPE, FDS_IN, FDS_OUT, NEEDS, HANDLER) &HANDLER,
constexpr CtlHandler kHandlers[] = {BURST_CTL_OPS(BURSTD_CTL_HANDLER)};
#undef BURSTD_CTL_HANDLER
static_assert(std::size(kHandlers) == std::size(ctl::kOps));

// The dispatcher holds at most kMaxFdsIn descriptors of a request.
constexpr bool fds_fit() {
  for (const ctl::OpSpec& spec : ctl::kOps) {
    if (spec.max_fds_in > Dispatcher::kMaxFdsIn) return false;
  }
  return true;
}
static_assert(fds_fit());

}  // namespace

CtlOp find_ctl_op(uint16_t op) {
  const ctl::OpSpec* spec = ctl::find_op(op);
  if (spec == nullptr) return {};
  return {spec, kHandlers[spec - ctl::kOps]};
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
