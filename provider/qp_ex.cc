// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The ibv_qp_ex work-request builder (ibv_wr_start / ibv_wr_<op> /
// ibv_wr_set_* / ibv_wr_complete), built on post_send: the builder collects a
// batch of ibv_send_wr and wr_complete posts it as one chain. (perftest 4.5
// uses this API only on devices it knows, mlx5/EFA/HNS; on burst0 it reports
// "ibv_wr* API : OFF" and calls ibv_post_send.)
//
//   ibv_wr_start(qpx)           takes the builder lock (held until complete or
//                               abort, as rdma-core providers hold their SQ
//                               lock), empties the batch, clears the error
//   ibv_wr_<op>(qpx, ...)       starts the next WR: opcode and remote fields
//                               from the arguments, wr_id and send flags from
//                               qpx->wr_id / qpx->wr_flags at this call
//   ibv_wr_set_sge/_list,       fill the WR started last (the last call wins);
//   ibv_wr_set_inline_data/_list, inline data is copied here (the caller may
//   ibv_wr_set_ud_addr          reuse its buffer on return) and marked
//                               IBV_SEND_INLINE, IBV_SEND_INLINE in wr_flags is
//                               ignored otherwise (as mlx5 and rxe do)
//   ibv_wr_complete(qpx)        posts the batch through post_send and returns
//                               its error (the WRs before *bad_wr are posted),
//                               or the first error the builder met, in which
//                               case nothing is posted; releases the lock
//   ibv_wr_abort(qpx)           drops the batch; releases the lock
//
// Builder errors: EINVAL (a setter without a WR, an operation this QP type
// cannot do, wr_set_ud_addr on a non-UD QP or without an AH, more SGEs than
// max_send_sge, more inline bytes than max_inline_data), ENOMEM (more WRs than
// the send queue holds, or no memory to grow the batch), EOPNOTSUPP (TSO,
// XRC, atomic write: never built by burst).
//
// Storage: the WR, SGE and inline-byte arrays are allocated at init for a
// full send queue and kept across batches; they grow (doubling) only when a
// batch needs more, so the steady state allocates nothing. While a batch is
// being built the WRs refer to SGEs and inline bytes by index (the arrays may
// move when they grow); wr_complete turns the indices into pointers and links
// the chain.
#include <pthread.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "provider/provider.h"

namespace burst::provider {

// Per WR, alongside its ibv_send_wr until wr_complete links the chain.
struct WrData {
  uint32_t sge_first;  // index of its first SGE in QpEx::sge
  bool inline_data;    // its one SGE's addr is an offset into QpEx::inl
};

struct QpEx {
  Qp* qp;
  pthread_mutex_t lock;  // held by the thread between wr_start and wr_complete/wr_abort
  uint64_t ops;          // IBV_QP_EX_WITH_* this QP type can build
  uint32_t max_batch;    // WRs per batch: the send queue's size
  uint32_t max_sge;      // 0: unknown (post_send checks)
  uint32_t max_inline;   // 0: unknown (post_send checks)

  // The batch; everything below is under lock.
  bool open;      // between wr_start and wr_complete/wr_abort
  bool have_cur;  // the last builder call started a WR that setters may fill
  int err;        // the first error of this batch, reported by wr_complete
  uint32_t n_wr;
  uint32_t n_sge;
  size_t n_inl;
  ibv_send_wr* wr;
  WrData* data;
  uint32_t wr_cap;
  ibv_sge* sge;
  uint32_t sge_cap;
  unsigned char* inl;
  size_t inl_cap;
};

namespace {

constexpr uint64_t kRcOps = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
                            IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
                            IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
                            IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV |
                            IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
constexpr uint64_t kUdOps = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;

// Without a known send queue (the QP's rings not mapped yet): the initial
// sizes, and the largest batch accepted.
constexpr uint32_t kDefaultWrs = 64;
constexpr uint32_t kDefaultMaxBatch = 1u << 16;
constexpr size_t kInitialInlineBytes = 64 * 1024;  // at most; grows on demand

QpEx* to_ex(ibv_qp_ex* qpx) { return to_qp(&qpx->qp_base)->ex; }

void fail(QpEx* x, int err) {
  x->have_cur = false;
  if (x->open && x->err == 0) x->err = err;
}

// Makes room for `need` elements in *arr (capacity *cap), at least doubling.
template <typename T, typename Cap>
bool reserve(T** arr, Cap* cap, size_t need) {
  if (need <= *cap) return true;
  size_t n = *cap < 16 ? 16 : size_t{*cap} * 2;
  if (n < need) n = need;
  if (n > static_cast<size_t>(static_cast<Cap>(~Cap{0}))) return false;
  void* p = realloc(*arr, n * sizeof(T));
  if (p == nullptr) return false;
  *arr = static_cast<T*>(p);
  *cap = static_cast<Cap>(n);
  return true;
}

// Starts the next WR of the batch; nullptr (error recorded) when it cannot.
ibv_send_wr* begin_wr(ibv_qp_ex* qpx, uint64_t op, ibv_wr_opcode opcode) {
  QpEx* x = to_ex(qpx);
  x->have_cur = false;
  if (!x->open || x->err != 0) return nullptr;
  if (!(x->ops & op)) {
    fail(x, EINVAL);  // e.g. RDMA on a UD QP
    return nullptr;
  }
  if (x->n_wr >= x->max_batch) {
    fail(x, ENOMEM);  // more than the send queue holds
    return nullptr;
  }
  if (x->n_wr == x->wr_cap) {
    // wr[] and data[] share one capacity.
    uint32_t wr_cap = x->wr_cap;
    uint32_t data_cap = x->wr_cap;
    if (!reserve(&x->wr, &wr_cap, x->n_wr + 1) || !reserve(&x->data, &data_cap, wr_cap)) {
      fail(x, ENOMEM);
      return nullptr;
    }
    x->wr_cap = wr_cap;
  }
  ibv_send_wr* w = &x->wr[x->n_wr];
  WrData& d = x->data[x->n_wr];
  ++x->n_wr;
  memset(w, 0, sizeof(*w));
  w->wr_id = qpx->wr_id;
  w->opcode = opcode;
  w->send_flags = qpx->wr_flags & ~static_cast<unsigned>(IBV_SEND_INLINE);
  d.sge_first = 0;
  d.inline_data = false;
  x->have_cur = true;
  return w;
}

// The WR the setters fill; nullptr (error recorded) when there is none.
ibv_send_wr* current_wr(QpEx* x) {
  if (!x->open || x->err != 0) return nullptr;
  if (!x->have_cur) {
    fail(x, EINVAL);
    return nullptr;
  }
  return &x->wr[x->n_wr - 1];
}

// n SGEs at the end of the pool for the current WR; their index, or -1.
int64_t take_sges(QpEx* x, size_t n) {
  if (x->max_sge != 0 && n > x->max_sge) {
    fail(x, EINVAL);
    return -1;
  }
  if (n > INT_MAX || !reserve(&x->sge, &x->sge_cap, size_t{x->n_sge} + n)) {
    fail(x, n > INT_MAX ? EINVAL : ENOMEM);
    return -1;
  }
  const uint32_t first = x->n_sge;
  x->n_sge += static_cast<uint32_t>(n);
  return first;
}

// --- builders -------------------------------------------------------------------

void wr_send(ibv_qp_ex* qpx) { begin_wr(qpx, IBV_QP_EX_WITH_SEND, IBV_WR_SEND); }

void wr_send_imm(ibv_qp_ex* qpx, __be32 imm_data) {
  if (ibv_send_wr* w = begin_wr(qpx, IBV_QP_EX_WITH_SEND_WITH_IMM, IBV_WR_SEND_WITH_IMM)) {
    w->imm_data = imm_data;
  }
}

void wr_send_inv(ibv_qp_ex* qpx, uint32_t invalidate_rkey) {
  if (ibv_send_wr* w = begin_wr(qpx, IBV_QP_EX_WITH_SEND_WITH_INV, IBV_WR_SEND_WITH_INV)) {
    w->invalidate_rkey = invalidate_rkey;
  }
}

// Starts an RDMA WR at (rkey, remote_addr); nullptr when begin_wr refused.
ibv_send_wr* begin_rdma_wr(ibv_qp_ex* qpx, uint64_t op, ibv_wr_opcode opcode, uint32_t rkey,
                           uint64_t remote_addr) {
  ibv_send_wr* w = begin_wr(qpx, op, opcode);
  if (w != nullptr) {
    w->wr.rdma.rkey = rkey;
    w->wr.rdma.remote_addr = remote_addr;
  }
  return w;
}

// Starts an atomic WR on the 8 bytes at (rkey, remote_addr): compare_add is
// the compare value or the addend, swap the swap value (0 for fetch-and-add).
void begin_atomic_wr(ibv_qp_ex* qpx, uint64_t op, ibv_wr_opcode opcode, uint32_t rkey,
                     uint64_t remote_addr, uint64_t compare_add, uint64_t swap) {
  if (ibv_send_wr* w = begin_wr(qpx, op, opcode)) {
    w->wr.atomic.rkey = rkey;
    w->wr.atomic.remote_addr = remote_addr;
    w->wr.atomic.compare_add = compare_add;
    w->wr.atomic.swap = swap;
  }
}

void wr_rdma_write(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr) {
  begin_rdma_wr(qpx, IBV_QP_EX_WITH_RDMA_WRITE, IBV_WR_RDMA_WRITE, rkey, remote_addr);
}

void wr_rdma_write_imm(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr, __be32 imm_data) {
  if (ibv_send_wr* w = begin_rdma_wr(qpx, IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
                                     IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr)) {
    w->imm_data = imm_data;
  }
}

void wr_rdma_read(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr) {
  begin_rdma_wr(qpx, IBV_QP_EX_WITH_RDMA_READ, IBV_WR_RDMA_READ, rkey, remote_addr);
}

void wr_atomic_cmp_swp(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr, uint64_t compare,
                       uint64_t swap) {
  begin_atomic_wr(qpx, IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_CMP_AND_SWP, rkey,
                  remote_addr, compare, swap);
}

void wr_atomic_fetch_add(ibv_qp_ex* qpx, uint32_t rkey, uint64_t remote_addr, uint64_t add) {
  begin_atomic_wr(qpx, IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey,
                  remote_addr, add, 0);
}

// Local operations: no SGEs or inline data (a setter after them is EINVAL).
void wr_bind_mw(ibv_qp_ex* qpx, ibv_mw* mw, uint32_t rkey, const ibv_mw_bind_info* info) {
  if (mw == nullptr || info == nullptr) {
    fail(to_ex(qpx), EINVAL);
    return;
  }
  if (ibv_send_wr* w = begin_wr(qpx, IBV_QP_EX_WITH_BIND_MW, IBV_WR_BIND_MW)) {
    w->bind_mw.mw = mw;
    w->bind_mw.rkey = rkey;
    w->bind_mw.bind_info = *info;
    to_ex(qpx)->have_cur = false;
  }
}
void wr_local_inv(ibv_qp_ex* qpx, uint32_t invalidate_rkey) {
  if (ibv_send_wr* w = begin_wr(qpx, IBV_QP_EX_WITH_LOCAL_INV, IBV_WR_LOCAL_INV)) {
    w->invalidate_rkey = invalidate_rkey;
    to_ex(qpx)->have_cur = false;
  }
}

// What burst never builds: the slot is filled anyway (a NULL slot would crash
// the caller) and the batch fails.
void wr_send_tso(ibv_qp_ex* qpx, void*, uint16_t, uint16_t) { fail(to_ex(qpx), EOPNOTSUPP); }
void wr_set_xrc_srqn(ibv_qp_ex* qpx, uint32_t) { fail(to_ex(qpx), EOPNOTSUPP); }
void wr_atomic_write(ibv_qp_ex* qpx, uint32_t, uint64_t, const void*) {
  fail(to_ex(qpx), EOPNOTSUPP);
}

// --- setters --------------------------------------------------------------------

void wr_set_sge_list(ibv_qp_ex* qpx, size_t num_sge, const ibv_sge* sg_list) {
  QpEx* x = to_ex(qpx);
  ibv_send_wr* w = current_wr(x);
  if (w == nullptr) return;
  if (num_sge != 0 && sg_list == nullptr) {
    fail(x, EINVAL);
    return;
  }
  const int64_t first = take_sges(x, num_sge);
  if (first < 0) return;
  if (num_sge != 0) memcpy(&x->sge[first], sg_list, num_sge * sizeof(ibv_sge));
  w->num_sge = static_cast<int>(num_sge);
  w->send_flags &= ~static_cast<unsigned>(IBV_SEND_INLINE);
  x->data[x->n_wr - 1] = WrData{static_cast<uint32_t>(first), false};
}

void wr_set_sge(ibv_qp_ex* qpx, uint32_t lkey, uint64_t addr, uint32_t length) {
  const ibv_sge sge{addr, length, lkey};
  wr_set_sge_list(qpx, 1, &sge);
}

// Copies the buffers, one after the other, into the batch's inline bytes and
// makes them the current WR's data: one SGE (so max_send_sge never limits
// inline data), IBV_SEND_INLINE.
void set_inline(QpEx* x, size_t num_buf, const ibv_data_buf* bufs) {
  ibv_send_wr* w = current_wr(x);
  if (w == nullptr) return;
  if (num_buf != 0 && bufs == nullptr) {
    fail(x, EINVAL);
    return;
  }
  size_t total = 0;
  for (size_t i = 0; i < num_buf; ++i) {
    if (bufs[i].length != 0 && bufs[i].addr == nullptr) {
      fail(x, EINVAL);
      return;
    }
    if (bufs[i].length > UINT32_MAX - total) {
      fail(x, EINVAL);
      return;
    }
    total += bufs[i].length;
  }
  if (x->max_inline != 0 && total > x->max_inline) {
    fail(x, EINVAL);
    return;
  }
  if (!reserve(&x->inl, &x->inl_cap, x->n_inl + total)) {
    fail(x, ENOMEM);
    return;
  }
  const int64_t first = take_sges(x, 1);
  if (first < 0) return;
  const size_t offset = x->n_inl;
  for (size_t i = 0; i < num_buf; ++i) {
    if (bufs[i].length != 0) memcpy(x->inl + x->n_inl, bufs[i].addr, bufs[i].length);
    x->n_inl += bufs[i].length;
  }
  x->sge[first] = ibv_sge{offset, static_cast<uint32_t>(total), 0};
  w->num_sge = total != 0 ? 1 : 0;
  w->send_flags |= IBV_SEND_INLINE;
  x->data[x->n_wr - 1] = WrData{static_cast<uint32_t>(first), true};
}

void wr_set_inline_data(ibv_qp_ex* qpx, void* addr, size_t length) {
  const ibv_data_buf buf{addr, length};
  set_inline(to_ex(qpx), 1, &buf);
}

void wr_set_inline_data_list(ibv_qp_ex* qpx, size_t num_buf, const ibv_data_buf* buf_list) {
  set_inline(to_ex(qpx), num_buf, buf_list);
}

void wr_set_ud_addr(ibv_qp_ex* qpx, ibv_ah* ah, uint32_t remote_qpn, uint32_t remote_qkey) {
  QpEx* x = to_ex(qpx);
  ibv_send_wr* w = current_wr(x);
  if (w == nullptr) return;
  if (qpx->qp_base.qp_type != IBV_QPT_UD || ah == nullptr) {
    fail(x, EINVAL);
    return;
  }
  w->wr.ud.ah = ah;
  w->wr.ud.remote_qpn = remote_qpn;
  w->wr.ud.remote_qkey = remote_qkey;
}

// --- the batch ------------------------------------------------------------------

void reset_batch(QpEx* x) {
  x->open = false;
  x->have_cur = false;
  x->err = 0;
  x->n_wr = 0;
  x->n_sge = 0;
  x->n_inl = 0;
}

void wr_start(ibv_qp_ex* qpx) {
  QpEx* x = to_ex(qpx);
  pthread_mutex_lock(&x->lock);
  reset_batch(x);
  x->open = true;
}

int wr_complete(ibv_qp_ex* qpx) {
  QpEx* x = to_ex(qpx);
  if (!x->open) return EINVAL;  // no wr_start: the lock is not ours to release
  int ret = x->err;
  if (ret == 0 && x->n_wr != 0) {
    for (uint32_t i = 0; i < x->n_wr; ++i) {
      ibv_send_wr& w = x->wr[i];
      const WrData& d = x->data[i];
      if (w.num_sge != 0) {
        ibv_sge* s = &x->sge[d.sge_first];
        if (d.inline_data) s->addr = reinterpret_cast<uintptr_t>(x->inl + s->addr);
        w.sg_list = s;
      } else {
        w.sg_list = nullptr;
      }
      w.next = i + 1 < x->n_wr ? &x->wr[i + 1] : nullptr;
    }
    ibv_send_wr* bad = nullptr;
    ret = post_send(&x->qp->vqp.qp, x->wr, &bad);
  }
  reset_batch(x);
  pthread_mutex_unlock(&x->lock);
  return ret;
}

void wr_abort(ibv_qp_ex* qpx) {
  QpEx* x = to_ex(qpx);
  if (!x->open) return;
  reset_batch(x);
  pthread_mutex_unlock(&x->lock);
}

// The batch's storage for a full send queue (sq_entries WRs, 0: unknown),
// kept across batches. False when memory runs out (what was allocated is then
// freed by free_batch_storage).
bool alloc_batch_storage(QpEx* x, uint32_t sq_entries) {
  const uint32_t wrs = sq_entries != 0 ? sq_entries : kDefaultWrs;
  const uint32_t sges = wrs * (x->max_sge != 0 ? x->max_sge : 1);
  size_t inl = size_t{wrs} * x->max_inline;
  if (inl > kInitialInlineBytes) inl = kInitialInlineBytes;
  x->wr = static_cast<ibv_send_wr*>(malloc(size_t{wrs} * sizeof(ibv_send_wr)));
  x->data = static_cast<WrData*>(malloc(size_t{wrs} * sizeof(WrData)));
  x->sge = static_cast<ibv_sge*>(malloc(size_t{sges} * sizeof(ibv_sge)));
  x->inl = static_cast<unsigned char*>(malloc(inl != 0 ? inl : 1));
  x->wr_cap = wrs;
  x->sge_cap = sges;
  x->inl_cap = inl;
  return x->wr != nullptr && x->data != nullptr && x->sge != nullptr && x->inl != nullptr;
}

void free_batch_storage(QpEx* x) {
  free(x->wr);
  free(x->data);
  free(x->sge);
  free(x->inl);
}

// Every ibv_qp_ex callback: the builders, the setters and the batch.
void set_wr_callbacks(ibv_qp_ex* q) {
  q->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
  q->wr_atomic_fetch_add = wr_atomic_fetch_add;
  q->wr_bind_mw = wr_bind_mw;
  q->wr_local_inv = wr_local_inv;
  q->wr_rdma_read = wr_rdma_read;
  q->wr_rdma_write = wr_rdma_write;
  q->wr_rdma_write_imm = wr_rdma_write_imm;
  q->wr_send = wr_send;
  q->wr_send_imm = wr_send_imm;
  q->wr_send_inv = wr_send_inv;
  q->wr_send_tso = wr_send_tso;
  q->wr_set_ud_addr = wr_set_ud_addr;
  q->wr_set_xrc_srqn = wr_set_xrc_srqn;
  q->wr_set_inline_data = wr_set_inline_data;
  q->wr_set_inline_data_list = wr_set_inline_data_list;
  q->wr_set_sge = wr_set_sge;
  q->wr_set_sge_list = wr_set_sge_list;
  q->wr_start = wr_start;
  q->wr_complete = wr_complete;
  q->wr_abort = wr_abort;
  q->wr_atomic_write = wr_atomic_write;
}

}  // namespace

int init_qp_ex(Qp* qp, uint64_t send_ops_flags) {
  uint64_t ops = 0;
  switch (qp->vqp.qp.qp_type) {
    case IBV_QPT_RC:
      ops = kRcOps;
      break;
    case IBV_QPT_UD:
      ops = kUdOps;
      break;
    default:
      return EOPNOTSUPP;
  }
  // Memory windows, local invalidate, TSO, atomic write, anything unknown, and
  // what this QP type cannot do (RDMA or atomics on UD).
  if (send_ops_flags & ~ops) return EOPNOTSUPP;

  auto* x = static_cast<QpEx*>(calloc(1, sizeof(QpEx)));
  if (x == nullptr) return ENOMEM;
  x->qp = qp;
  x->ops = ops;
  // The send queue's size when its ring is mapped; otherwise defaults.
  const uint32_t sq_entries = qp->sq.capacity();
  x->max_batch = sq_entries != 0 ? sq_entries : kDefaultMaxBatch;
  x->max_sge = qp->max_send_sge;
  x->max_inline = qp->max_inline;
  if (!alloc_batch_storage(x, sq_entries) || pthread_mutex_init(&x->lock, nullptr) != 0) {
    free_batch_storage(x);
    free(x);
    return ENOMEM;
  }

  ibv_qp_ex& q = qp->vqp.qp_ex;
  q.comp_mask = 0;
  q.wr_id = 0;
  q.wr_flags = 0;
  set_wr_callbacks(&q);
  qp->ex = x;
  qp->vqp.comp_mask |= BURST_VERBS_QP_EX;  // ibv_qp_to_qp_ex() returns &vqp.qp_ex
  return 0;
}

void fini_qp_ex(Qp* qp) {
  QpEx* x = qp->ex;
  if (x == nullptr) return;
  qp->vqp.comp_mask &= ~static_cast<uint32_t>(BURST_VERBS_QP_EX);
  pthread_mutex_destroy(&x->lock);
  free_batch_storage(x);
  free(x);
  qp->ex = nullptr;
}

}  // namespace burst::provider
