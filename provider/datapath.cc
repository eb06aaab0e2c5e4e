// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The provider's data path on the shared-memory rings of abi/burst_shm_abi.h:
// ibv_post_send / ibv_post_recv write work requests into the QP's rings and
// ring the worker's doorbell; ibv_poll_cq reads the CQ ring; ibv_req_notify_cq
// bumps the ring's arm sequence. None of them makes a system call.
//
// Also here: memory registration and address handles (control path through
// burstd), mapping the regions burstd hands over, and the watcher thread that
// turns burstd going away into IBV_EVENT_DEVICE_FATAL, woken completion
// channels and failing posts and polls.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "abi/burst_shim.h"
#include "provider/provider.h"
#include "shm/wqe_encode.h"

namespace burst::provider {
namespace {

constexpr uint32_t kIbvEventDeviceFatal = 8;  // IBV_EVENT_DEVICE_FATAL
constexpr uint32_t kEmptyPollsBeforeYield = 64;

bool context_dead(const Context* ctx) { return __atomic_load_n(&ctx->dead, __ATOMIC_ACQUIRE); }

// The ring header at `off` of a mapping (0: the part is absent), checked
// (shm::CheckRing: kind, geometry, limits, bounds); its geometry in *geom.
burst_shm_ring* ring_at(const Mapping& m, uint64_t off, burst_shm_ring_kind kind,
                        shm::RingGeometry* geom) {
  if (off == 0 || !shm::CheckRing(m.base, m.size, off, kind, geom)) return nullptr;
  return reinterpret_cast<burst_shm_ring*>(m.base + off);
}

bool ring_failed(const burst_shm_ring* r) {
  return __atomic_load_n(&r->status, __ATOMIC_ACQUIRE) != BURST_SHM_RING_OK;
}

// The completion channel's other end, from the preload shim (burstctl run),
// duplicated: the shim's own descriptor goes away with the channel, ours stays
// valid until the CQ is destroyed.
int channel_peer(ibv_comp_channel* channel) {
  auto fn = reinterpret_cast<burst_shim_channel_peer_fn>(
      dlsym(RTLD_DEFAULT, BURST_SHIM_CHANNEL_PEER_SYMBOL));
  const int peer = fn != nullptr ? fn(channel->fd) : -1;
  return peer >= 0 ? fcntl(peer, F_DUPFD_CLOEXEC, 0) : -1;
}

void* watcher_main(void* arg) {
  auto* ctx = static_cast<Context*>(arg);
  pollfd p[2] = {{ctx->ctl.fd, POLLRDHUP, 0}, {ctx->watcher_wake_fd, POLLIN, 0}};
  for (;;) {
    const int r = poll(p, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || (p[1].revents & POLLIN)) return nullptr;
    if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) break;
  }
  __atomic_store_n(&ctx->dead, true, __ATOMIC_RELEASE);
  const burst_ctl_async_event ev{0, kIbvEventDeviceFatal, 0};
  if (write(ctx->async_write_fd, &ev, sizeof(ev)) != sizeof(ev)) {
    debug_log("burst: could not report IBV_EVENT_DEVICE_FATAL");
  }
  // Applications blocked in ibv_get_cq_event wake up, poll, and get an error.
  pthread_mutex_lock(&ctx->mu);
  for (Cq* cq = ctx->channel_cqs; cq != nullptr; cq = cq->next_channel) {
    const uint64_t handle = reinterpret_cast<uintptr_t>(&cq->vcq.cq);
    (void)!send(cq->channel_peer, &handle, sizeof(handle), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  pthread_mutex_unlock(&ctx->mu);
  fprintf(stderr, "burst: burstd closed the connection: device %s is gone (IBV_EVENT_DEVICE_FATAL)\n",
          ctx->vctx.context.device->name);
  return nullptr;
}

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

// ---- posting ------------------------------------------------------------------

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
      return type == IBV_QPT_RC;
    default:
      return false;
  }
}

constexpr unsigned kKnownSendFlags =
    IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;
static_assert(IBV_SEND_INLINE == BURST_SHM_SEND_INLINE);

// Translates one send WR into the ring's terms and writes it into entry with
// the shared encoder (shm/wqe_encode.h); an errno value on a bad WR.
int encode_send(Qp* qp, const ibv_send_wr* wr, uint8_t* entry) {
  const ibv_qp& q = qp->vqp.qp;
  if (!send_opcode_ok(q.qp_type, wr->opcode)) return EINVAL;
  if (wr->send_flags & ~kKnownSendFlags) return EINVAL;
  if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > qp->max_send_sge) return EINVAL;
  burst_shm_send_wqe w{};
  w.wr_id = wr->wr_id;
  w.opcode = static_cast<uint8_t>(wr->opcode);
  w.send_flags = wr->send_flags;
  if (qp->sq_sig_all) w.send_flags |= IBV_SEND_SIGNALED;
  switch (wr->opcode) {
    case IBV_WR_SEND_WITH_IMM:
    case IBV_WR_RDMA_WRITE_WITH_IMM:
      w.imm_data = be32toh(wr->imm_data);
      break;
    case IBV_WR_SEND_WITH_INV:
      w.imm_data = wr->invalidate_rkey;
      break;
    default:
      break;
  }
  if (wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP || wr->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
    w.remote_addr = wr->wr.atomic.remote_addr;
    w.rkey = wr->wr.atomic.rkey;
    w.compare_add = wr->wr.atomic.compare_add;
    w.swap = wr->wr.atomic.swap;
  } else if (q.qp_type == IBV_QPT_UD) {
    if (wr->wr.ud.ah == nullptr) return EINVAL;
    w.ah_handle = reinterpret_cast<Ah*>(wr->wr.ud.ah)->handle;
    w.remote_qpn = wr->wr.ud.remote_qpn;
    w.remote_qkey = wr->wr.ud.remote_qkey;
  } else {
    w.remote_addr = wr->wr.rdma.remote_addr;
    w.rkey = wr->wr.rdma.rkey;
  }
  // With IBV_SEND_INLINE the bytes are copied now: the application may reuse
  // its buffers on return.
  const shm::WqeLimits limits{qp->sq.entry_size(), qp->max_send_sge, qp->max_inline};
  return shm::EncodeSendWqe(w, wr->sg_list, static_cast<uint32_t>(wr->num_sge), limits, entry)
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

// Writes a receive WR into entry (shm/wqe_encode.h); EINVAL when it has more
// SGEs than the queue takes.
int encode_recv(const ibv_recv_wr* wr, const shm::WqeLimits& limits, uint8_t* entry) {
  if (wr->num_sge < 0) return EINVAL;
  return shm::EncodeRecvWqe(wr->wr_id, wr->sg_list, static_cast<uint32_t>(wr->num_sge), limits,
                            entry)
             ? 0
             : EINVAL;
}

}  // namespace

// ---- regions ------------------------------------------------------------------

int map_region(int fd, uint64_t size, burst_shm_region_kind kind, Mapping* out) {
  if (fd < 0) return EPROTO;
  if (size < sizeof(burst_shm_region) || size > (uint64_t{1} << 32)) {
    close(fd);
    return EPROTO;
  }
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int e = errno;
  close(fd);
  if (p == MAP_FAILED) return e;
  const auto* r = static_cast<const burst_shm_region*>(p);
  if (!shm::CheckRegion(p, size, kind) || r->size != size) {
    munmap(p, size);
    debug_log("burst: region from burstd has another layout (ABI %u, want %u)", r->abi_version,
              BURST_SHM_ABI_VERSION);
    return EPROTO;
  }
  out->base = static_cast<uint8_t*>(p);
  out->size = size;
  return 0;
}

void unmap_region(Mapping* m) {
  if (m->base != nullptr) munmap(m->base, m->size);
  m->base = nullptr;
  m->size = 0;
}

const Doorbell* doorbell_for(Context* ctx, uint32_t worker) {
  if (worker >= ctx->workers) {
    errno = EPROTO;
    return nullptr;
  }
  pthread_mutex_lock(&ctx->mu);
  Doorbell& d = ctx->doorbells[worker];
  if (!d.ready) {
    burst_ctl_map_doorbell_req req{};
    req.worker = worker;
    burst_ctl_map_doorbell_resp resp{};
    int fds[2] = {-1, -1};
    int e = ctl_call_fd2(&ctx->ctl, BURST_CTL_OP_MAP_DOORBELL, &req, sizeof(req), &resp,
                         sizeof(resp), fds);
    if (e == 0 && fds[1] < 0) e = EPROTO;
    if (e == 0) {
      e = map_region(fds[0], resp.region_size, BURST_SHM_REGION_DOORBELL, &d.map);
    } else if (fds[0] >= 0) {
      close(fds[0]);
    }
    if (e != 0 && fds[1] >= 0) close(fds[1]);
    if (e == 0) {
      const auto* r = reinterpret_cast<const burst_shm_region*>(d.map.base);
      const uint64_t off = r->part_offset[0];
      uint32_t log2_slots = 0;
      if (off == 0 || !shm::CheckDoorbell(d.map.base, d.map.size, off, &log2_slots)) {
        unmap_region(&d.map);
        close(fds[1]);
        e = EPROTO;
      } else {
        auto* h = reinterpret_cast<burst_shm_doorbell*>(d.map.base + off);
        d.producer = shm::DoorbellProducer(h, log2_slots);
        d.hdr = h;
        d.wake_fd = fds[1];
        d.ready = true;
      }
    }
    if (e != 0) {
      pthread_mutex_unlock(&ctx->mu);
      errno = e;
      return nullptr;
    }
  }
  pthread_mutex_unlock(&ctx->mu);
  return &d;
}

int start_watcher(Context* ctx) {
  ctx->watcher_wake_fd = eventfd(0, EFD_CLOEXEC);
  if (ctx->watcher_wake_fd < 0) return errno;
  if (int e = pthread_create(&ctx->watcher, nullptr, watcher_main, ctx); e != 0) {
    close(ctx->watcher_wake_fd);
    ctx->watcher_wake_fd = -1;
    return e;
  }
  ctx->watcher_running = true;
  return 0;
}

void stop_watcher(Context* ctx) {
  if (!ctx->watcher_running) return;
  const uint64_t one = 1;
  (void)!write(ctx->watcher_wake_fd, &one, sizeof(one));
  pthread_join(ctx->watcher, nullptr);
  close(ctx->watcher_wake_fd);
  ctx->watcher_running = false;
}

// ---- CQs ----------------------------------------------------------------------

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
  pthread_spin_unlock(&cq->lock);
  if (n == 0) {
    if (context_dead(to_context(ibcq->context)) || ring_failed(cq->hdr)) {
      return -EIO;  // burstd is gone (or stopped using this CQ): nothing will ever arrive
    }
    // An application spinning on an empty CQ would otherwise keep the burstd
    // worker that produces its completions off a CPU when cores are scarce:
    // after a run of empty polls, give the CPU away once (no system call
    // while completions keep coming).
    if (++cq->empty_polls >= kEmptyPollsBeforeYield) {
      cq->empty_polls = 0;
      sched_yield();
    }
  } else {
    cq->empty_polls = 0;
  }
  return static_cast<int>(n);
}

int req_notify_cq(ibv_cq* ibcq, int /*solicited_only*/) {
  Cq* cq = to_cq(ibcq);
  if (context_dead(to_context(ibcq->context))) return EIO;
  __atomic_fetch_add(&cq->hdr->arm_sequence, 1, __ATOMIC_RELEASE);
  return 0;
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

// Called by pd_cq.cc after CREATE_CQ: maps the ring, registers the channel.
int attach_cq_ring(Context* ctx, Cq* cq, int fd, uint64_t size) {
  if (int e = map_region(fd, size, BURST_SHM_REGION_CQ, &cq->map); e != 0) return e;
  const auto* r = reinterpret_cast<const burst_shm_region*>(cq->map.base);
  shm::RingGeometry g;
  cq->hdr = ring_at(cq->map, r->part_offset[0], BURST_SHM_RING_CQ, &g);
  if (cq->hdr == nullptr || g.entry_size != sizeof(burst_shm_cqe)) {
    unmap_region(&cq->map);
    return EPROTO;
  }
  cq->ring = shm::RingConsumer(cq->map.base, r->part_offset[0], g);
  pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
  if (cq->channel_peer >= 0) {
    pthread_mutex_lock(&ctx->mu);
    cq->next_channel = ctx->channel_cqs;
    ctx->channel_cqs = cq;
    pthread_mutex_unlock(&ctx->mu);
  }
  return 0;
}

void detach_cq_ring(Context* ctx, Cq* cq) {
  if (cq->channel_peer >= 0) {
    pthread_mutex_lock(&ctx->mu);
    for (Cq** p = &ctx->channel_cqs; *p != nullptr; p = &(*p)->next_channel) {
      if (*p == cq) {
        *p = cq->next_channel;
        break;
      }
    }
    pthread_mutex_unlock(&ctx->mu);
  }
  if (cq->map.base != nullptr) pthread_spin_destroy(&cq->lock);
  unmap_region(&cq->map);
  if (cq->channel_peer >= 0) close(cq->channel_peer);
  cq->channel_peer = -1;
}

int cq_channel_peer(ibv_comp_channel* channel) { return channel_peer(channel); }

// ---- QPs ----------------------------------------------------------------------

int attach_qp_rings(Context* ctx, Qp* qp, int fd, uint64_t size, uint32_t worker) {
  if (int e = map_region(fd, size, BURST_SHM_REGION_QP, &qp->map); e != 0) return e;
  const auto* r = reinterpret_cast<const burst_shm_region*>(qp->map.base);
  shm::RingGeometry sg, rg;
  qp->sq_hdr = ring_at(qp->map, r->part_offset[0], BURST_SHM_RING_SQ, &sg);
  const bool has_rq = qp->vqp.qp.srq == nullptr;  // a QP on an SRQ has no RQ ring
  qp->rq_hdr = has_rq ? ring_at(qp->map, r->part_offset[1], BURST_SHM_RING_RQ, &rg) : nullptr;
  if (qp->sq_hdr == nullptr || (has_rq && qp->rq_hdr == nullptr) ||
      sg.entry_size < BURST_SHM_SEND_WQE_PAYLOAD + qp->sq_hdr->max_sge * sizeof(burst_shm_sge) ||
      sg.entry_size < BURST_SHM_SEND_WQE_PAYLOAD + qp->sq_hdr->max_inline ||
      (has_rq &&
       rg.entry_size < BURST_SHM_RECV_WQE_PAYLOAD + qp->rq_hdr->max_sge * sizeof(burst_shm_sge))) {
    unmap_region(&qp->map);
    return EPROTO;
  }
  qp->sq = shm::RingProducer(qp->map.base, r->part_offset[0], sg);
  if (has_rq) qp->rq = shm::RingProducer(qp->map.base, r->part_offset[1], rg);
  qp->max_send_sge = qp->sq_hdr->max_sge;
  qp->max_inline = qp->sq_hdr->max_inline;
  qp->max_recv_sge = has_rq ? qp->rq_hdr->max_sge : 0;
  qp->db = doorbell_for(ctx, worker);
  if (qp->db == nullptr) {
    const int e = errno;
    unmap_region(&qp->map);
    return e;
  }
  pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
  pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
  return 0;
}

void detach_qp_rings(Qp* qp) {
  if (qp->map.base != nullptr) {
    pthread_spin_destroy(&qp->sq_lock);
    pthread_spin_destroy(&qp->rq_lock);
  }
  unmap_region(&qp->map);
}

int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  Qp* qp = to_qp(ibqp);
  const ibv_qp_state st = ibqp->state;  // kept by libibverbs' ibv_modify_qp
  if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_RTR) {
    *bad_wr = wr;
    return EINVAL;
  }
  if (context_dead(to_context(ibqp->context)) || ring_failed(qp->sq_hdr)) {
    *bad_wr = wr;
    return EIO;
  }
  int err = 0;
  uint32_t count = 0, room = 0;
  pthread_spin_lock(&qp->sq_lock);
  for (; wr != nullptr; wr = wr->next) {
    if (count == room) {
      room = qp->sq.Reserve(count + 1);
      if (room <= count) {
        err = ENOMEM;  // burstd has not taken the earlier requests yet
        break;
      }
    }
    err = encode_send(qp, wr, qp->sq.Entry(count));
    if (err != 0) break;
    ++count;
  }
  if (count != 0) {
    qp->sq.Publish(count);
    ring_doorbell(qp->db, BURST_SHM_DB_SQ, ibqp->qp_num, qp->sq.index());
  }
  pthread_spin_unlock(&qp->sq_lock);
  if (err != 0) *bad_wr = wr;
  return err;
}

int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Qp* qp = to_qp(ibqp);
  if (ibqp->state == IBV_QPS_RESET || qp->rq_hdr == nullptr) {
    *bad_wr = wr;
    return EINVAL;
  }
  if (context_dead(to_context(ibqp->context)) || ring_failed(qp->rq_hdr)) {
    *bad_wr = wr;
    return EIO;
  }
  int err = 0;
  uint32_t count = 0, room = 0;
  const shm::WqeLimits limits{qp->rq.entry_size(), qp->max_recv_sge, 0};
  pthread_spin_lock(&qp->rq_lock);
  for (; wr != nullptr; wr = wr->next) {
    if (count == room) {
      room = qp->rq.Reserve(count + 1);
      if (room <= count) {
        err = ENOMEM;
        break;
      }
    }
    err = encode_recv(wr, limits, qp->rq.Entry(count));
    if (err != 0) break;
    ++count;
  }
  if (count != 0) {
    qp->rq.Publish(count);
    ring_doorbell(qp->db, BURST_SHM_DB_RQ, ibqp->qp_num, qp->rq.index());
  }
  pthread_spin_unlock(&qp->rq_lock);
  if (err != 0) *bad_wr = wr;
  return err;
}

// ---- SRQs ---------------------------------------------------------------------

ibv_srq* create_srq(ibv_pd* ibpd, ibv_srq_init_attr* attr) {
  Context* ctx = to_context(ibpd->context);
  auto* srq = static_cast<Srq*>(calloc(1, sizeof(Srq)));
  if (srq == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  burst_ctl_create_srq_req req{};
  req.pd_handle = to_pd(ibpd)->handle;
  req.attr.max_wr = attr->attr.max_wr;
  req.attr.max_sge = attr->attr.max_sge;
  req.attr.srq_limit = attr->attr.srq_limit;
  req.user_handle = reinterpret_cast<uintptr_t>(&srq->srq);
  burst_ctl_create_srq_resp resp{};
  int fd = -1;
  int e = ctl_call_fd(&ctx->ctl, BURST_CTL_OP_CREATE_SRQ, &req, sizeof(req), &resp, sizeof(resp),
                      -1, &fd);
  if (e == 0) e = map_region(fd, resp.region_size, BURST_SHM_REGION_SRQ, &srq->map);
  if (e == 0) {
    const auto* r = reinterpret_cast<const burst_shm_region*>(srq->map.base);
    shm::RingGeometry g;
    srq->hdr = ring_at(srq->map, r->part_offset[0], BURST_SHM_RING_SRQ, &g);
    if (srq->hdr == nullptr ||
        g.entry_size < BURST_SHM_RECV_WQE_PAYLOAD + srq->hdr->max_sge * sizeof(burst_shm_sge)) {
      e = EPROTO;
    } else {
      srq->ring = shm::RingProducer(srq->map.base, r->part_offset[0], g);
      srq->max_sge = srq->hdr->max_sge;
      srq->db = doorbell_for(ctx, resp.worker);
      if (srq->db == nullptr) e = errno;
    }
  }
  if (e != 0) {
    unmap_region(&srq->map);
    if (resp.srq_handle != 0) {
      burst_ctl_handle_req dreq{};
      dreq.handle = resp.srq_handle;
      burst_ctl_empty_resp dresp{};
      (void)ctl_call(&ctx->ctl, BURST_CTL_OP_DESTROY_SRQ, &dreq, sizeof(dreq), &dresp,
                     sizeof(dresp));
    }
    free(srq);
    errno = e;
    return nullptr;
  }
  pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
  srq->handle = resp.srq_handle;
  srq->srqn = resp.srqn;
  srq->srq.handle = resp.srq_handle;
  attr->attr.max_wr = resp.attr.max_wr;
  attr->attr.max_sge = resp.attr.max_sge;
  return &srq->srq;
}

int destroy_srq(ibv_srq* ibsrq) {
  Srq* srq = to_srq(ibsrq);
  Context* ctx = to_context(ibsrq->context);
  burst_ctl_handle_req req{};
  req.handle = srq->handle;
  burst_ctl_empty_resp resp{};
  const int e = destroy_result(
      ctx, ctl_call(&ctx->ctl, BURST_CTL_OP_DESTROY_SRQ, &req, sizeof(req), &resp, sizeof(resp)));
  if (e != 0) return e;  // EBUSY while QPs use it
  pthread_spin_destroy(&srq->lock);
  unmap_region(&srq->map);
  free(srq);
  return 0;
}

int modify_srq(ibv_srq* ibsrq, ibv_srq_attr* attr, int mask) {
  Context* ctx = to_context(ibsrq->context);
  burst_ctl_modify_srq_req req{};
  req.srq_handle = to_srq(ibsrq)->handle;
  req.attr_mask = static_cast<uint32_t>(mask);
  req.attr.max_wr = attr->max_wr;
  req.attr.srq_limit = attr->srq_limit;
  burst_ctl_empty_resp resp{};
  return ctl_call(&ctx->ctl, BURST_CTL_OP_MODIFY_SRQ, &req, sizeof(req), &resp, sizeof(resp));
}

int query_srq(ibv_srq* ibsrq, ibv_srq_attr* attr) {
  Context* ctx = to_context(ibsrq->context);
  burst_ctl_handle_req req{};
  req.handle = to_srq(ibsrq)->handle;
  burst_ctl_query_srq_resp resp{};
  if (int e = ctl_call(&ctx->ctl, BURST_CTL_OP_QUERY_SRQ, &req, sizeof(req), &resp, sizeof(resp));
      e != 0) {
    return e;
  }
  attr->max_wr = resp.attr.max_wr;
  attr->max_sge = resp.attr.max_sge;
  attr->srq_limit = resp.attr.srq_limit;
  return 0;
}

int post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  Srq* srq = to_srq(ibsrq);
  if (context_dead(to_context(ibsrq->context)) || ring_failed(srq->hdr)) {
    *bad_wr = wr;
    return EIO;
  }
  int err = 0;
  uint32_t count = 0, room = 0;
  const shm::WqeLimits limits{srq->ring.entry_size(), srq->max_sge, 0};
  pthread_spin_lock(&srq->lock);
  for (; wr != nullptr; wr = wr->next) {
    if (count == room) {
      room = srq->ring.Reserve(count + 1);
      if (room <= count) {
        err = ENOMEM;
        break;
      }
    }
    err = encode_recv(wr, limits, srq->ring.Entry(count));
    if (err != 0) break;
    ++count;
  }
  if (count != 0) {
    srq->ring.Publish(count);
    ring_doorbell(srq->db, BURST_SHM_DB_SRQ, srq->srqn, srq->ring.index());
  }
  pthread_spin_unlock(&srq->lock);
  if (err != 0) *bad_wr = wr;
  return err;
}

// ---- MRs and AHs --------------------------------------------------------------

ibv_mr* reg_mr(ibv_pd* ibpd, void* addr, size_t length, uint64_t hca_va, int access) {
  Context* ctx = to_context(ibpd->context);
  auto* mr = static_cast<Mr*>(calloc(1, sizeof(Mr)));
  if (mr == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  burst_ctl_reg_mr_req req{};
  req.pd_handle = to_pd(ibpd)->handle;
  req.access = static_cast<uint32_t>(access);
  req.addr = reinterpret_cast<uintptr_t>(addr);
  req.length = length;
  req.iova = hca_va;
  // Shareable memory goes zero-copy when we hand burstd its file.
  const int file = shared_file_for(addr, length, (access & IBV_ACCESS_LOCAL_WRITE) != 0);
  if (file >= 0) req.flags |= BURST_CTL_MR_F_FILE;
  burst_ctl_reg_mr_resp resp{};
  const int e = ctl_call_fd(&ctx->ctl, BURST_CTL_OP_REG_MR, &req, sizeof(req), &resp, sizeof(resp),
                            file, nullptr);
  if (file >= 0) close(file);
  if (e != 0) {
    free(mr);
    errno = e;
    return nullptr;
  }
  mr->handle = resp.mr_handle;
  ibv_mr& m = mr->vmr.ibv_mr;
  m.context = ibpd->context;
  m.pd = ibpd;
  m.addr = addr;
  m.length = length;
  m.handle = resp.mr_handle;
  m.lkey = resp.lkey;
  m.rkey = resp.rkey;
  mr->vmr.mr_type = BURST_VERBS_MR_TYPE_MR;
  mr->vmr.access = access;
  debug_log("burst: MR %u: %zu bytes at %p, lkey 0x%x, %s", resp.mr_handle, length, addr,
            resp.lkey, resp.memory_mode == BURST_CTL_MEM_SHM ? "zero-copy" : "cross-memory");
  return &m;
}

int dereg_mr(verbs_mr* vmr) {
  auto* mr = reinterpret_cast<Mr*>(vmr);
  Context* ctx = to_context(vmr->ibv_mr.context);
  burst_ctl_handle_req req{};
  req.handle = mr->handle;
  burst_ctl_empty_resp resp{};
  const int e = destroy_result(
      ctx, ctl_call(&ctx->ctl, BURST_CTL_OP_DEREG_MR, &req, sizeof(req), &resp, sizeof(resp)));
  if (e == 0) free(mr);
  return e;
}

ibv_ah* create_ah(ibv_pd* ibpd, ibv_ah_attr* attr) {
  Context* ctx = to_context(ibpd->context);
  burst_ctl_create_ah_req req{};
  req.pd_handle = to_pd(ibpd)->handle;
  if (int e = ah_to_wire(*attr, &req.ah); e != 0) {
    errno = e;
    return nullptr;
  }
  auto* ah = static_cast<Ah*>(calloc(1, sizeof(Ah)));
  if (ah == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  burst_ctl_create_ah_resp resp{};
  if (int e = ctl_call(&ctx->ctl, BURST_CTL_OP_CREATE_AH, &req, sizeof(req), &resp, sizeof(resp));
      e != 0) {
    free(ah);
    errno = e;
    return nullptr;
  }
  ah->handle = resp.ah_handle;
  ah->ah.context = ibpd->context;
  ah->ah.pd = ibpd;
  ah->ah.handle = resp.ah_handle;
  return &ah->ah;
}

int destroy_ah(ibv_ah* ibah) {
  auto* ah = reinterpret_cast<Ah*>(ibah);
  Context* ctx = to_context(ibah->context);
  burst_ctl_handle_req req{};
  req.handle = ah->handle;
  burst_ctl_empty_resp resp{};
  const int e = destroy_result(
      ctx, ctl_call(&ctx->ctl, BURST_CTL_OP_DESTROY_AH, &req, sizeof(req), &resp, sizeof(resp)));
  if (e == 0) free(ah);
  return e;
}

}  // namespace burst::provider
