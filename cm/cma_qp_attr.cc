/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// INIT_QP_ATTR: the attributes librdmacm gives ibv_modify_qp for INIT, RTR and
// RTS (cma.c's rdma_init_qp_attr / cma_ib_init_qp_attr and cm.c's
// ib_cm_init_qp_attr, in ib_uverbs_qp_attr as ib_copy_qp_attr_to_user fills it).
#include <cerrno>
#include <cstring>

#include "cm/cma_impl.h"

namespace burst::cm {

using cma::State;

namespace {

// enum ib_qp_attr_mask
constexpr uint32_t kState = 1u << 0, kAccessFlags = 1u << 3, kPkeyIndex = 1u << 4,
                   kPort = 1u << 5, kQkey = 1u << 6, kAv = 1u << 7, kPathMtu = 1u << 8,
                   kTimeout = 1u << 9, kRetryCnt = 1u << 10, kRnrRetry = 1u << 11,
                   kRqPsn = 1u << 12, kMaxQpRdAtomic = 1u << 13, kMinRnrTimer = 1u << 15,
                   kSqPsn = 1u << 16, kMaxDestRdAtomic = 1u << 17, kDestQpn = 1u << 20;
constexpr uint32_t kRemoteWrite = 1u << 1, kRemoteRead = 1u << 2, kRemoteAtomic = 1u << 3;
constexpr uint32_t kInit = 1, kRtr = 2, kRts = 3;

void ah_from_path(const CmPath& p, ib_uverbs_ah_attr* ah) {
  std::memcpy(ah->grh.dgid, p.dgid.data(), 16);
  ah->grh.flow_label = p.flow_label;
  ah->grh.sgid_index = p.sgid_index;
  ah->grh.hop_limit = p.hop_limit;
  ah->grh.traffic_class = p.traffic_class;
  ah->dlid = 0;  // RoCE: no LID
  ah->sl = p.sl;
  ah->static_rate = p.rate;
  ah->is_global = 1;
  ah->port_num = 1;
}

// ib_cm_init_qp_attr for an RC connection in progress or established.
int cm_qp_attr(const Id& id, ib_uverbs_qp_attr* a) {
  if (id.state != State::kConnect) return -EINVAL;
  switch (a->qp_state) {
    case kInit:
      a->qp_attr_mask = kState | kAccessFlags | kPkeyIndex | kPort;
      a->qp_access_flags = kRemoteWrite;
      if (id.responder_resources) a->qp_access_flags |= kRemoteRead | kRemoteAtomic;
      a->pkey_index = 0;
      a->port_num = 1;
      return 0;
    case kRtr:
      if (!id.remote_known) return -EINVAL;
      a->qp_attr_mask = kState | kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic |
                        kMinRnrTimer;
      ah_from_path(id.path, &a->ah_attr);
      a->path_mtu = id.path.mtu;
      a->dest_qp_num = id.remote_qpn;
      a->rq_psn = id.seq_num;
      a->max_dest_rd_atomic = id.responder_resources;
      a->min_rnr_timer = 0;
      return 0;
    case kRts:
      if (!id.remote_known) return -EINVAL;
      a->qp_attr_mask = kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic;
      a->sq_psn = id.sq_psn;
      a->timeout = id.ack_timeout_qp;
      a->retry_cnt = id.retry_count;
      a->rnr_retry = id.rnr_retry_count;
      a->max_rd_atomic = id.initiator_depth;
      return 0;
    default: return -EINVAL;
  }
}

}  // namespace

int Cma::Impl::cmd_init_qp_attr(ChannelId ch, const void* in, size_t, void* out, size_t) {
  rdma_ucm_init_qp_attr cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  if (!id->has_device) return -EINVAL;
  ib_uverbs_qp_attr a{};
  a.qp_state = cmd.qp_state;
  if (id->cm == kNoCmHandle || id->qp_type == cma::kQptUd) {  // cma_ib_init_qp_attr
    a.qp_attr_mask = kState | kPkeyIndex | kPort;
    a.pkey_index = 0;
    a.port_num = 1;
    if (id->qp_type == cma::kQptUd) {
      if (int r = set_qkey(id, 0)) return r;
      a.qkey = id->qkey;
      a.qp_attr_mask |= kQkey;
    } else {
      a.qp_access_flags = 0;
      a.qp_attr_mask |= kAccessFlags;
    }
  } else if (int r = cm_qp_attr(*id, &a)) {
    return r;
  }
  if (a.qp_state == kRtr) a.rq_psn = id->seq_num;
  if ((a.qp_attr_mask & kTimeout) && id->ack_timeout_set) a.timeout = id->ack_timeout;
  std::memcpy(out, &a, sizeof(a));
  return sizeof(a);
}

}  // namespace burst::cm
