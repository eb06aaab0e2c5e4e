// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// ibv_attach_mcast / ibv_detach_mcast: burstd keeps the attachments (and joins
// the group on its netdev); the checks are burstd's, with the kernel's errnos
// (EINVAL for a QP that is not UD or a GID that is not multicast, EINVAL to
// detach what is not attached; attaching twice succeeds).
#include <cstring>

#include "provider/provider.h"

namespace burst::provider {
namespace {

int mcast_request(ibv_qp* qp, uint16_t op, const ibv_gid* gid, uint16_t lid) {
  if (gid == nullptr) return EINVAL;
  burst_ctl_mcast_req req{};
  req.qp_handle = to_qp(qp)->handle;
  req.mlid = lid;
  static_assert(sizeof(req.gid) == sizeof(gid->raw));
  memcpy(req.gid, gid->raw, sizeof(req.gid));
  burst_ctl_empty_resp resp{};
  return ctl_request(to_context(qp->context), op, &req, &resp);
}

}  // namespace

int attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  return mcast_request(qp, BURST_CTL_OP_ATTACH_MCAST, gid, lid);
}

// After burstd is gone the attachment is gone with it (destroy_result).
int detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  return destroy_result(to_context(qp->context),
                        mcast_request(qp, BURST_CTL_OP_DETACH_MCAST, gid, lid));
}

}  // namespace burst::provider
