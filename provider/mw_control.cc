// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Memory windows (IBA 10.6.7), allocated in burstd over the context's control
// connection (ALLOC_MW / DEALLOC_MW). Binding is a work request: ibv_bind_mw
// (type 1) posts an IBV_WR_BIND_MW on the QP as rxe does, with the next key
// (ibv_inc_rkey) that mw->rkey takes at once (the application undoes it on an
// error completion, as with rxe); type 2 windows are bound by IBV_WR_BIND_MW /
// ibv_wr_bind_mw with the key the application chose, and freed by
// IBV_WR_LOCAL_INV or a peer's SEND_WITH_INV (post_wr.cc, qp_ex.cc).
//
// Threading: control path, any application thread.
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "provider/provider.h"

namespace burst::provider {

ibv_mw* alloc_mw(ibv_pd* ibpd, ibv_mw_type type) {
  if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) return verb_error(EINVAL);
  auto* mw = alloc_object<ibv_mw>();
  if (mw == nullptr) return nullptr;
  burst_ctl_alloc_mw_req req{};
  req.pd_handle = to_pd(ibpd)->handle;
  req.type = static_cast<uint32_t>(type);
  burst_ctl_alloc_mw_resp resp{};
  if (int e = ctl_request(to_context(ibpd->context), BURST_CTL_OP_ALLOC_MW, &req, &resp); e != 0) {
    free(mw);
    return verb_error(e);
  }
  mw->context = ibpd->context;
  mw->pd = ibpd;
  mw->rkey = resp.rkey;
  mw->handle = resp.mw_handle;
  mw->type = type;
  return mw;
}

int dealloc_mw(ibv_mw* mw) {
  const int e = ctl_destroy(to_context(mw->context), BURST_CTL_OP_DEALLOC_MW, mw->handle);
  if (e == 0) free(mw);
  return e;
}

int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind) {
  if (mw_bind->bind_info.mw_access_flags & IBV_ACCESS_ZERO_BASED) return EINVAL;  // o10-36.2.2
  ibv_send_wr wr;
  memset(&wr, 0, sizeof(wr));
  wr.wr_id = mw_bind->wr_id;
  wr.opcode = IBV_WR_BIND_MW;
  wr.send_flags = mw_bind->send_flags;
  wr.bind_mw.mw = mw;
  wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
  wr.bind_mw.bind_info = mw_bind->bind_info;
  ibv_send_wr* bad = nullptr;
  if (int e = post_send(qp, &wr, &bad); e != 0) return e;
  mw->rkey = wr.bind_mw.rkey;
  return 0;
}

}  // namespace burst::provider
