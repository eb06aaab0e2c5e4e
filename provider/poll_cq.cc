// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Polling completion queues on the CQ ring burstd produces into
// (abi/burst_shm_abi.h): ibv_poll_cq, and the ibv_cq_ex polling API
// (ibv_start_poll / ibv_next_poll / ibv_end_poll and the ibv_wc_read_*
// accessors). No system call, except a sched_yield after a run of empty polls.
// When burstd is gone, or stopped using the CQ, an empty CQ reports EIO.
//
// Threading: application threads. ibv_poll_cq holds the CQ's spin lock
// (Cq::lock) while it reads the ring; ibv_start_poll takes it and
// ibv_end_poll releases it, so the accessors in between read Cq::cur under it.
// clean_cq removes a QP's completions when it is reset (as mlx5's provider
// does): a reset QP's flushed work requests are not reported after the reset.
#include <sched.h>

#include <cerrno>
#include <cstring>

#include "provider/provider.h"

namespace burst::provider {
namespace {

constexpr uint32_t kEmptyPollsBeforeYield = 64;

inline ibv_wc_opcode wc_opcode(uint8_t op) { return static_cast<ibv_wc_opcode>(op); }

void cqe_to_wc(const burst_shm_cqe& c, ibv_wc* wc) {
  wc->wr_id = c.wr_id;
  wc->status = static_cast<ibv_wc_status>(c.status);
  wc->opcode = wc_opcode(c.opcode);
  wc->vendor_err = c.vendor_err;
  wc->byte_len = c.byte_len;
  if (c.wc_flags & IBV_WC_WITH_INV) {
    wc->invalidated_rkey = c.imm_data;
  } else {
    wc->imm_data = htobe32(c.imm_data);
  }
  wc->qp_num = c.qp_num;
  wc->src_qp = c.src_qp;
  wc->wc_flags = c.wc_flags;
  wc->pkey_index = c.pkey_index;
  wc->slid = c.slid;
  wc->sl = c.sl;
  wc->dlid_path_bits = c.dlid_path_bits;
}

// After a poll that found nothing: EIO when nothing will ever arrive, else 0
// (and, after a run of empty polls, the CPU given away once). `failed`: the
// ring's status, read under the CQ's lock (resize_cq replaces the ring).
int after_empty_poll(Cq* cq, bool failed) {
  if (context_dead(to_context(cq->vcq.cq.context)) || failed) {
    return EIO;  // burstd is gone (or stopped using this CQ): nothing will ever arrive
  }
  // An application spinning on an empty CQ would otherwise keep the burstd
  // worker that produces its completions off a CPU when cores are scarce:
  // after a run of empty polls, give the CPU away once (no system call
  // while completions keep coming).
  if (++cq->empty_polls >= kEmptyPollsBeforeYield) {
    cq->empty_polls = 0;
    sched_yield();
  }
  return 0;
}

// ---- ibv_cq_ex polling --------------------------------------------------------

Cq* cq_of(ibv_cq_ex* x) { return reinterpret_cast<Cq*>(x); }

// Loads the next completion into cur; ENOENT when the ring is empty.
int cq_ex_load(Cq* cq) {
  if (cq->ring.Peek(1) == 0) return context_dead(to_context(cq->vcq.cq.context)) ? EIO : ENOENT;
  memcpy(&cq->cur, cq->ring.EntryInPlace(0), sizeof(cq->cur));
  cq->ring.Release(1);
  ibv_cq_ex& x = cq->vcq.cq_ex;
  x.wr_id = cq->cur.wr_id;
  x.status = static_cast<ibv_wc_status>(cq->cur.status);
  return 0;
}
int cq_ex_start(ibv_cq_ex* x, ibv_poll_cq_attr* attr) {
  if (attr->comp_mask != 0) return EINVAL;
  Cq* cq = cq_of(x);
  pthread_spin_lock(&cq->lock);
  const int e = cq_ex_load(cq);
  if (e != 0) pthread_spin_unlock(&cq->lock);  // end_poll is not called after a failed start
  return e;
}
int cq_ex_next(ibv_cq_ex* x) { return cq_ex_load(cq_of(x)); }
void cq_ex_end(ibv_cq_ex* x) { pthread_spin_unlock(&cq_of(x)->lock); }
ibv_wc_opcode cq_ex_opcode(ibv_cq_ex* x) { return wc_opcode(cq_of(x)->cur.opcode); }
uint32_t cq_ex_vendor_err(ibv_cq_ex* x) { return cq_of(x)->cur.vendor_err; }
uint32_t cq_ex_byte_len(ibv_cq_ex* x) { return cq_of(x)->cur.byte_len; }
__be32 cq_ex_imm(ibv_cq_ex* x) { return htobe32(cq_of(x)->cur.imm_data); }
uint32_t cq_ex_qp_num(ibv_cq_ex* x) { return cq_of(x)->cur.qp_num; }
uint32_t cq_ex_src_qp(ibv_cq_ex* x) { return cq_of(x)->cur.src_qp; }
unsigned int cq_ex_wc_flags(ibv_cq_ex* x) { return cq_of(x)->cur.wc_flags; }
uint32_t cq_ex_slid(ibv_cq_ex* x) { return cq_of(x)->cur.slid; }
uint8_t cq_ex_sl(ibv_cq_ex* x) { return cq_of(x)->cur.sl; }
uint8_t cq_ex_dlid_path_bits(ibv_cq_ex* x) { return cq_of(x)->cur.dlid_path_bits; }

}  // namespace

int poll_cq(ibv_cq* ibcq, int ne, ibv_wc* wc) {
  Cq* cq = to_cq(ibcq);
  if (ne <= 0) return 0;
  pthread_spin_lock(&cq->lock);
  const uint32_t n = cq->ring.Peek(static_cast<uint32_t>(ne));
  for (uint32_t i = 0; i < n; ++i) {
    burst_shm_cqe c;
    memcpy(&c, cq->ring.EntryInPlace(i), sizeof(c));
    cqe_to_wc(c, &wc[i]);
  }
  cq->ring.Release(n);
  const bool failed = n == 0 && ring_failed(cq->hdr);
  pthread_spin_unlock(&cq->lock);
  if (n == 0) return -after_empty_poll(cq, failed);
  cq->empty_polls = 0;
  return static_cast<int>(n);
}

void clean_cq(Cq* cq, uint32_t qp_num) {
  pthread_spin_lock(&cq->lock);
  cq->ring.Compact([qp_num](const uint8_t* e) {
    burst_shm_cqe c;
    memcpy(&c, e, sizeof(c));
    return c.qp_num == qp_num;
  });
  pthread_spin_unlock(&cq->lock);
}

void init_cq_ex_ops(Cq* cq) {
  ibv_cq_ex& x = cq->vcq.cq_ex;
  x.start_poll = cq_ex_start;
  x.next_poll = cq_ex_next;
  x.end_poll = cq_ex_end;
  x.read_opcode = cq_ex_opcode;
  x.read_vendor_err = cq_ex_vendor_err;
  x.read_byte_len = cq_ex_byte_len;
  x.read_imm_data = cq_ex_imm;
  x.read_qp_num = cq_ex_qp_num;
  x.read_src_qp = cq_ex_src_qp;
  x.read_wc_flags = cq_ex_wc_flags;
  x.read_slid = cq_ex_slid;
  x.read_sl = cq_ex_sl;
  x.read_dlid_path_bits = cq_ex_dlid_path_bits;
}

}  // namespace burst::provider
