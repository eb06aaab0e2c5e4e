/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstd's control plane as a table: the rows of daemon/ctl/ctl_ops.h (wire
// facts, descriptors, who may call: ctl::kOps) each with its handler. The Dispatcher
// checks a request against its row and calls the handler with a Call; the
// handler decodes the request, acts (Resources, Device), fills the response
// body and says `what` it did for the debug log. Handlers live in the file of
// their object (resources_pd.cc, resources_qp.cc, ..., dispatch_query.cc).
//
// Threading: control thread only.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "abi/burst_ctl_proto.h"
#include "daemon/ctl/ctl_codec.h"
#include "daemon/ctl/ctl_ops.h"

namespace burst::burstd {

class Dispatcher;
class Resources;
struct Session;

// One request being handled.
struct Call {
  Dispatcher& d;
  Resources& res;
  Session& s;
  const ctl::OpSpec& spec;
  const burst_ctl_hdr& h;
  const uint8_t* msg;  // the whole request, spec.request_size bytes
  int* in_fds;         // spec.max_fds_in entries, -1: none (or taken)
  std::vector<uint8_t>* out;
  std::vector<int>* out_fds;  // sent with a success, owned by burstd
  std::string what;           // for the debug log ("qp 3 qpn 17 on worker 0")

  template <class Req>
  Req request() const {
    Req r;
    std::memcpy(&r, msg, sizeof(Req));
    return r;
  }
  // The response (fixed ops: the row's size; list ops: `len`), zeroed with its
  // header filled in, created on the first call. A handler that returns 0
  // without calling it gets the zeroed response of the row's size.
  template <class Resp>
  Resp* response(size_t len = 0) {
    if (out->empty()) start_response(len != 0 ? len : spec.response_size);
    return reinterpret_cast<Resp*>(out->data());
  }
  // Takes request descriptor i: the callee adopts it (also on failure).
  int take_fd(int i = 0) {
    const int fd = in_fds[i];
    in_fds[i] = -1;
    return fd;
  }
  void start_response(size_t len);
};

using CtlHandler = int (*)(Call&);

// An op's row (ctl::kOps) and its handler.
struct CtlOp {
  const ctl::OpSpec* spec = nullptr;
  CtlHandler handler = nullptr;
};

// The ops whose request is a burst_ctl_handle_req and whose success is the
// empty response (DEALLOC_PD, DESTROY_CQ, ...): fn(client, handle).
int handle_op(Call& c, int (Resources::*fn)(uint32_t client, uint32_t handle));

// The row of an op with its handler; {nullptr, nullptr} for an unknown op.
CtlOp find_ctl_op(uint16_t op);

// The handlers, one per row of BURST_CTL_OPS.
#define BURSTD_DECLARE_HANDLER(OP, REQ, RESP, SHAPE, FDS_IN, FDS_OUT, NEEDS, HANDLER) \
  int HANDLER(Call& c);
BURST_CTL_OPS(BURSTD_DECLARE_HANDLER)
#undef BURSTD_DECLARE_HANDLER

}  // namespace burst::burstd
