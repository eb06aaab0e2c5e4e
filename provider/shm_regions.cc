// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The shared-memory regions burstd hands over (abi/burst_shm_abi.h), mapped
// into the application: a region's header and rings are checked before use
// (shm/geometry.h), so a region of another layout fails the verb with EPROTO.
// Owns map_region/unmap_region, the per-worker doorbell queues (mapped on first
// use) and attaching the rings of CQs, QPs and SRQs to their objects.
//
// Threading: control path, called on application threads from the create and
// destroy verbs (pd_cq.cc, qp_control.cc, srq_control.cc). A doorbell is set up
// once under Context::mu and read-only afterwards; attaching initialises the
// spin locks that post (post_wr.cc) and poll (poll_cq.cc) take.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>

#include "provider/provider.h"

namespace burst::provider {
namespace {

// One ring of a mapped region: its header, offset and geometry.
struct RingPart {
  burst_shm_ring* hdr = nullptr;
  uint64_t offset = 0;
  shm::RingGeometry geom;
};

// Part `part` of a mapped region as a ring of `kind`, checked (shm::CheckRing:
// kind, geometry, limits, bounds); false when the part is absent or malformed.
bool ring_part(const Mapping& m, unsigned part, burst_shm_ring_kind kind, RingPart* out) {
  const auto* r = reinterpret_cast<const burst_shm_region*>(m.base);
  const uint64_t off = r->part_offset[part];
  if (off == 0 || !shm::CheckRing(m.base, m.size, off, kind, &out->geom)) return false;
  out->hdr = reinterpret_cast<burst_shm_ring*>(m.base + off);
  out->offset = off;
  return true;
}

// A receive ring (RQ or SRQ) whose entries hold max_sge SGEs.
bool recv_entries_fit(const RingPart& p) {
  return p.geom.entry_size >= BURST_SHM_RECV_WQE_PAYLOAD + p.hdr->max_sge * sizeof(burst_shm_sge);
}

// A send ring whose entries hold max_sge SGEs and max_inline bytes.
bool send_entries_fit(const RingPart& p) {
  return p.geom.entry_size >= BURST_SHM_SEND_WQE_PAYLOAD + p.hdr->max_sge * sizeof(burst_shm_sge) &&
         p.geom.entry_size >= BURST_SHM_SEND_WQE_PAYLOAD + p.hdr->max_inline;
}

// A region that did not pass its checks: unmapped, e returned.
int unmap_and_fail(Mapping* m, int e) {
  unmap_region(m);
  return e;
}

shm::RingProducer producer_of(const Mapping& m, const RingPart& p) {
  return shm::RingProducer(m.base, p.offset, p.geom);
}

// MAP_DOORBELL: maps worker's doorbell queue into d (which must not be ready)
// and takes its wake-up eventfd. 0 or an errno value; d unchanged on failure.
int map_doorbell(Context* ctx, uint32_t worker, Doorbell* d) {
  burst_ctl_map_doorbell_req req{};
  req.worker = worker;
  burst_ctl_map_doorbell_resp resp{};
  int fds[2] = {-1, -1};
  int e = ctl_call_fd2(&ctx->ctl, BURST_CTL_OP_MAP_DOORBELL, &req, sizeof(req), &resp, sizeof(resp),
                       fds);
  if (e == 0 && fds[1] < 0) e = EPROTO;
  if (e == 0) {
    e = map_region(fds[0], resp.region_size, BURST_SHM_REGION_DOORBELL, &d->map);
  } else if (fds[0] >= 0) {
    close(fds[0]);
  }
  if (e != 0) {
    if (fds[1] >= 0) close(fds[1]);
    return e;
  }
  const auto* r = reinterpret_cast<const burst_shm_region*>(d->map.base);
  const uint64_t off = r->part_offset[0];
  uint32_t log2_slots = 0;
  if (off == 0 || !shm::CheckDoorbell(d->map.base, d->map.size, off, &log2_slots)) {
    close(fds[1]);
    return unmap_and_fail(&d->map, EPROTO);
  }
  auto* h = reinterpret_cast<burst_shm_doorbell*>(d->map.base + off);
  d->producer = shm::DoorbellProducer(h, log2_slots);
  d->hdr = h;
  d->wake_fd = fds[1];
  d->ready = true;
  return 0;
}

}  // namespace

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
  const int e = d.ready ? 0 : map_doorbell(ctx, worker, &d);
  pthread_mutex_unlock(&ctx->mu);
  if (e != 0) {
    errno = e;
    return nullptr;
  }
  return &d;
}

// Called by pd_cq.cc after CREATE_CQ: maps the ring, registers the channel.
int attach_cq_ring(Context* ctx, Cq* cq, int fd, uint64_t size) {
  if (int e = map_region(fd, size, BURST_SHM_REGION_CQ, &cq->map); e != 0) return e;
  RingPart p;
  if (!ring_part(cq->map, 0, BURST_SHM_RING_CQ, &p) || p.geom.entry_size != sizeof(burst_shm_cqe)) {
    return unmap_and_fail(&cq->map, EPROTO);
  }
  cq->hdr = p.hdr;
  cq->ring = shm::RingConsumer(cq->map.base, p.offset, p.geom);
  pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
  pthread_spin_init(&cq->arm_lock, PTHREAD_PROCESS_PRIVATE);
  if (cq->channel_peer >= 0) add_channel_cq(ctx, cq);
  return 0;
}

void detach_cq_ring(Context* ctx, Cq* cq) {
  if (cq->channel_peer >= 0) remove_channel_cq(ctx, cq);
  if (cq->map.base != nullptr) {
    pthread_spin_destroy(&cq->lock);
    pthread_spin_destroy(&cq->arm_lock);
  }
  unmap_region(&cq->map);
  if (cq->channel_peer >= 0) close(cq->channel_peer);
  cq->channel_peer = -1;
}

int replace_cq_ring(Cq* cq, int fd, uint64_t size) {
  Mapping m;
  int e = map_region(fd, size, BURST_SHM_REGION_CQ, &m);
  RingPart p;
  if (e == 0 &&
      (!ring_part(m, 0, BURST_SHM_RING_CQ, &p) || p.geom.entry_size != sizeof(burst_shm_cqe))) {
    e = unmap_and_fail(&m, EPROTO);
  }
  if (e != 0) {
    __atomic_store_n(&cq->hdr->status, BURST_SHM_RING_ERROR, __ATOMIC_RELEASE);
    return e;
  }
  unmap_region(&cq->map);
  cq->map = m;
  cq->hdr = p.hdr;
  cq->ring = shm::RingConsumer(m.base, p.offset, p.geom);
  return 0;
}

// Called by qp_control.cc after CREATE_QP: maps the SQ and (without an SRQ)
// RQ rings, and the doorbell of the QP's worker.
int attach_qp_rings(Context* ctx, Qp* qp, int fd, uint64_t size, uint32_t worker) {
  if (int e = map_region(fd, size, BURST_SHM_REGION_QP, &qp->map); e != 0) return e;
  RingPart sq, rq;
  const bool has_rq = qp->vqp.qp.srq == nullptr;  // a QP on an SRQ has no RQ ring
  const bool sq_ok = ring_part(qp->map, 0, BURST_SHM_RING_SQ, &sq) && send_entries_fit(sq);
  const bool rq_ok =
      !has_rq || (ring_part(qp->map, 1, BURST_SHM_RING_RQ, &rq) && recv_entries_fit(rq));
  if (!sq_ok || !rq_ok) return unmap_and_fail(&qp->map, EPROTO);
  const Doorbell* db = doorbell_for(ctx, worker);
  if (db == nullptr) return unmap_and_fail(&qp->map, errno);
  qp->sq_hdr = sq.hdr;
  qp->rq_hdr = rq.hdr;  // nullptr without an RQ
  qp->sq = producer_of(qp->map, sq);
  if (has_rq) qp->rq = producer_of(qp->map, rq);
  qp->max_send_sge = sq.hdr->max_sge;
  qp->max_inline = sq.hdr->max_inline;
  qp->max_recv_sge = has_rq ? rq.hdr->max_sge : 0;
  qp->db = db;
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

// Called by srq_control.cc after CREATE_SRQ: maps the ring and the doorbell of
// the SRQ's worker.
int attach_srq_ring(Context* ctx, Srq* srq, int fd, uint64_t size, uint32_t worker) {
  if (int e = map_region(fd, size, BURST_SHM_REGION_SRQ, &srq->map); e != 0) return e;
  RingPart p;
  const bool ok = ring_part(srq->map, 0, BURST_SHM_RING_SRQ, &p) && recv_entries_fit(p);
  if (!ok) return unmap_and_fail(&srq->map, EPROTO);
  const Doorbell* db = doorbell_for(ctx, worker);
  if (db == nullptr) return unmap_and_fail(&srq->map, errno);
  srq->hdr = p.hdr;
  srq->ring = producer_of(srq->map, p);
  srq->max_sge = p.hdr->max_sge;
  srq->db = db;
  pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
  return 0;
}

void detach_srq_ring(Srq* srq) {
  if (srq->map.base != nullptr) pthread_spin_destroy(&srq->lock);
  unmap_region(&srq->map);
}

}  // namespace burst::provider
