// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Posting work requests on the shared-memory rings of abi/burst_shm_abi.h:
// ibv_post_send, ibv_post_recv and ibv_post_srq_recv write each WR into the
// next entry of the SQ / RQ / SRQ ring (shm/wqe_encode.h), publish the
// producer index and ring the doorbell of the burstd worker that owns the
// queue. No system call, except a write to the worker's eventfd when it sleeps.
//
// Errors, as libibverbs expects: an errno value, *bad_wr at the first WR not
// posted (the ones before it are posted): EINVAL for a bad WR or a QP in a
// state that takes none, ENOMEM when the ring is full, EIO once burstd is gone
// or stopped serving the ring.
//
// Threading: application threads; a post holds the queue's spin lock
// (Qp::sq_lock, Qp::rq_lock, Srq::lock) while it fills and publishes the ring.
// The doorbell queue is multi-producer (shm/doorbell.h): no lock.
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "provider/provider.h"
#include "shm/wqe_encode.h"

namespace burst::provider {
namespace {

bool send_opcode_ok(ibv_qp_type type, ibv_wr_opcode op) {
  switch (op) {
    case IBV_WR_SEND:
    case IBV_WR_SEND_WITH_IMM:
      return true;
    case IBV_WR_RDMA_WRITE:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
    case IBV_WR_RDMA_READ:
    case IBV_WR_ATOMIC_CMP_AND_SWP:
    case IBV_WR_ATOMIC_FETCH_AND_ADD:
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_BIND_MW:
    case IBV_WR_LOCAL_INV:
      return type == IBV_QPT_RC;
    default:
      return false;
  }
}

constexpr unsigned kKnownSendFlags =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;
static_assert(IBV_SEND_INLINE == BURST_SHM_SEND_INLINE);

// The immediate (host order) or the rkey to invalidate, for the opcodes that
// carry one.
uint32_t send_imm_data(const ibv_send_wr& wr) {
  switch (wr.opcode) {
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      return be32toh(wr.imm_data);
    case IBV_WR_SEND_WITH_INV:
    case IBV_WR_LOCAL_INV:
      return wr.invalidate_rkey;
    default:
      return 0;
  }
}

// A BIND_MW WR in the ring's terms (abi/burst_shm_abi.h); EINVAL without a
// window of this context or an MR for a non-zero length, EOPNOTSUPP for a
// zero-based window.
int set_bind_mw(const Qp* qp, const ibv_send_wr& wr, burst_shm_send_wqe* w) {
  const ibv_mw* mw = wr.bind_mw.mw;
  const ibv_mw_bind_info& b = wr.bind_mw.bind_info;
  if (mw == nullptr || mw->context != qp->vqp.qp.context) return EINVAL;
  if (b.length != 0 && b.mr == nullptr) return EINVAL;
  if (b.mw_access_flags & IBV_ACCESS_ZERO_BASED) return EOPNOTSUPP;
  w->imm_data = mw->rkey;
  w->rkey = wr.bind_mw.rkey;
  w->remote_addr = b.addr;
  w->compare_add = b.length;
  w->remote_qpn = b.length != 0 ? b.mr->lkey : 0;
  w->remote_qkey = b.mw_access_flags;
  return 0;
}

// The remote side of a send WR (atomic, UD or RDMA fields); EINVAL for a UD
// WR without an address handle.
int set_send_remote(ibv_qp_type type, const ibv_send_wr& wr, burst_shm_send_wqe* w) {
  if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
    w->remote_addr = wr.wr.atomic.remote_addr;
    w->rkey = wr.wr.atomic.rkey;
    w->compare_add = wr.wr.atomic.compare_add;
    w->swap = wr.wr.atomic.swap;
  } else if (type == IBV_QPT_UD) {
    if (wr.wr.ud.ah == nullptr) return EINVAL;
    w->ah_handle = reinterpret_cast<Ah*>(wr.wr.ud.ah)->handle;
    w->remote_qpn = wr.wr.ud.remote_qpn;
    w->remote_qkey = wr.wr.ud.remote_qkey;
  } else {
    w->remote_addr = wr.wr.rdma.remote_addr;
    w->rkey = wr.wr.rdma.rkey;
  }
  return 0;
}

// Translates one send WR into the ring's terms and writes it into entry with
// the shared encoder (shm/wqe_encode.h); an errno value on a bad WR.
int encode_send(const Qp* qp, const ibv_send_wr* wr, uint8_t* entry) {
  const ibv_qp_type type = qp->vqp.qp.qp_type;
  if (!send_opcode_ok(type, wr->opcode)) return EINVAL;
  if (wr->send_flags & ~kKnownSendFlags) return EINVAL;
  if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > qp->max_send_sge) return EINVAL;
  burst_shm_send_wqe w{};
  w.wr_id = wr->wr_id;
  w.opcode = static_cast<uint8_t>(wr->opcode);
  w.send_flags = wr->send_flags;
  if (qp->sq_sig_all) w.send_flags |= IBV_SEND_SIGNALED;
  w.imm_data = send_imm_data(*wr);
  if (wr->opcode == IBV_WR_BIND_MW || wr->opcode == IBV_WR_LOCAL_INV) {
    // Local operations carry no data: their SGEs and IBV_SEND_INLINE are ignored (as rxe).
    w.send_flags &= ~static_cast<uint32_t>(IBV_SEND_INLINE);
    if (wr->opcode == IBV_WR_BIND_MW) {
      if (int e = set_bind_mw(qp, *wr, &w); e != 0) return e;
    }
    const shm::WqeLimits limits{qp->sq.entry_size(), qp->max_send_sge, qp->max_inline};
    return shm::EncodeSendWqe(w, wr->sg_list, 0, limits, entry) ? 0 : EINVAL;
  }
  if (int e = set_send_remote(type, *wr, &w); e != 0) return e;
  // With IBV_SEND_INLINE the bytes are copied now: the application may reuse
  // its buffers on return.
  const shm::WqeLimits limits{qp->sq.entry_size(), qp->max_send_sge, qp->max_inline};
  return shm::EncodeSendWqe(w, wr->sg_list, static_cast<uint32_t>(wr->num_sge), limits, entry)
             ? 0
             : EINVAL;
}

// Writes a receive WR into entry (shm/wqe_encode.h); EINVAL when it has more
// SGEs than the queue takes.
int encode_recv(const ibv_recv_wr* wr, const shm::WqeLimits& limits, uint8_t* entry) {
  if (wr->num_sge < 0) return EINVAL;
  return shm::EncodeRecvWqe(wr->wr_id, wr->sg_list, static_cast<uint32_t>(wr->num_sge), limits,
                            entry)
             ? 0
             : EINVAL;
}

void ring_doorbell(const Doorbell* db, burst_shm_db_kind kind, uint32_t handle, uint32_t index) {
  shm::DoorbellRecord rec;
  rec.kind = static_cast<uint8_t>(kind);
  rec.handle = handle;
  rec.value = static_cast<uint16_t>(index);
  // Full or busy: burstd sweeps every ring each millisecond, the work is seen anyway.
  for (int i = 0; i < 2; ++i) {
    if (db->producer.Post(rec) != shm::PostResult::kStale) break;
  }
  // Pairs with the worker's fence between setting need_wakeup and reading head.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (__atomic_load_n(&db->hdr->need_wakeup, __ATOMIC_RELAXED) != 0) {
    const uint64_t one = 1;
    (void)!write(db->wake_fd, &one, sizeof(one));
  }
}

// One ring a post writes into, with what the worker needs to hear about it.
struct PostTarget {
  const Context* ctx;
  const burst_shm_ring* hdr;  // its status: burstd stops serving a ring it gave up on
  shm::RingProducer* ring;
  pthread_spinlock_t* lock;
  const Doorbell* db;
  burst_shm_db_kind kind;
  uint32_t handle;  // the doorbell record's: QPN or SRQN
};

// A post that takes nothing: the whole chain is reported bad.
template <typename Wr>
int refuse_chain(Wr* wr, Wr** bad_wr, int err) {
  *bad_wr = wr;
  return err;
}

// Posts the chain wr on t (EIO for all of it once burstd is gone or stopped
// serving the ring): under the ring's lock, each WR is encoded into the next
// entry (encode(wr, entry): 0 or an errno value) until the chain ends, a WR is
// bad or the ring is full (ENOMEM: burstd has not taken the earlier requests
// yet); what was written is published and the doorbell rung. On an error
// *bad_wr is the first WR not posted.
template <typename Wr, typename Encode>
int post_chain(const PostTarget& t, Wr* wr, Wr** bad_wr, Encode encode) {
  if (context_dead(t.ctx) || ring_failed(t.hdr)) return refuse_chain(wr, bad_wr, EIO);
  int err = 0;
  uint32_t count = 0, room = 0;
  pthread_spin_lock(t.lock);
  for (; wr != nullptr; wr = wr->next) {
    if (count == room) {
      room = t.ring->Reserve(count + 1);
      if (room <= count) {
        err = ENOMEM;
        break;
      }
    }
    err = encode(wr, t.ring->Entry(count));
    if (err != 0) break;
    ++count;
  }
  if (count != 0) {
    t.ring->Publish(count);
    ring_doorbell(t.db, t.kind, t.handle, t.ring->index());
  }
  pthread_spin_unlock(t.lock);
  if (err != 0) *bad_wr = wr;
  return err;
}

// Posts receive WRs on t, an RQ or SRQ ring whose entries take max_sge SGEs.
int post_recv_chain(const PostTarget& t, uint32_t max_sge, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  const shm::WqeLimits limits{t.ring->entry_size(), max_sge, 0};
  return post_chain(t, wr, bad_wr, [&limits](const ibv_recv_wr* w, uint8_t* entry) {
    return encode_recv(w, limits, entry);
  });
}

}  // namespace

int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Qp* qp = to_qp(ibqp);
  const ibv_qp_state st = ibqp->state;  // kept by libibverbs' ibv_modify_qp
  if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR) {
    return refuse_chain(wr, bad_wr, EINVAL);
  }
  const PostTarget t{to_context(ibqp->context), qp->sq_hdr,  &qp->sq, &qp->sq_lock, qp->db,
                     BURST_SHM_DB_SQ,           ibqp->qp_num};
  return post_chain(t, wr, bad_wr, [qp](const ibv_send_wr* w, uint8_t* entry) {
    return encode_send(qp, w, entry);
  });
}

int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Qp* qp = to_qp(ibqp);
  if (ibqp->state == IBV_QPS_RESET || qp->rq_hdr == nullptr) {
    return refuse_chain(wr, bad_wr, EINVAL);
  }
  const PostTarget t{to_context(ibqp->context), qp->rq_hdr,  &qp->rq, &qp->rq_lock, qp->db,
                     BURST_SHM_DB_RQ,           ibqp->qp_num};
  return post_recv_chain(t, qp->max_recv_sge, wr, bad_wr);
}

int post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Srq* srq = to_srq(ibsrq);
  const PostTarget t{to_context(ibsrq->context), srq->hdr, &srq->ring, &srq->lock, srq->db,
                     BURST_SHM_DB_SRQ,           srq->srqn};
  return post_recv_chain(t, srq->max_sge, wr, bad_wr);
}

}  // namespace burst::provider
