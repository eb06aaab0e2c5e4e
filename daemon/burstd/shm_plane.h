/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The data path between applications and burstd: the shared-memory rings of
// abi/burst_shm_abi.h joined to the transport Engines.
//
//   application (provider)                       burstd worker w (ShmPlane)
//   post_send: WQE -> SQ ring, doorbell(w) ---->  poll(): doorbell records name
//                                                  QPs; their SQ/RQ rings are
//                                                  copied out, validated, and
//                                                  posted to the Engine
//   poll_cq:   CQ ring  <------------------------  deliver(): Engine CQ shards ->
//   req_notify_cq: ring.arm_sequence++             CQ rings; one event per arm
//                                                  into the CQ's channel socket
//
// Objects and owners:
//   ShmCq     one per CQ: its region and the ring's producer side. Every worker
//             with a QP on the CQ produces into it, under the CQ's spin lock.
//             Owned by Resources (control thread); bound to a worker's plane
//             (with the worker's Engine CQ shard) while that shard exists.
//   QP region owned by Resources; the worker's plane keeps the consumer side of
//             its SQ and RQ rings while the QP exists (bind/unbind run on the
//             worker, inside Resources' commands).
//   AhTable   device-wide address handles for UD work requests, written by the
//             control thread, read by the workers (owner checked on each use).
//   AsyncSink a client's async-event pipe (write end); shared by its QPs.
//
// Everything read from shared memory is copied before use and validated
// (shm/shm_ring.h, shm/wqe.h); a fault or a bad work request moves that QP to
// the error state with an error completion and an IBV_EVENT_QP_FATAL, and the
// daemon carries on. Doorbells are hints: a periodic sweep also looks at the
// bound rings, a bounded slice per millisecond (every ring within
// ceil(QPs / 64) ms), so a lost or forged doorbell costs latency, never work.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "abi/burst_limits.h"
#include "core/engine.h"
#include "core/status.h"
#include "shm/doorbell.h"
#include "shm/layout.h"
#include "shm/region.h"
#include "shm/shm_ring.h"
#include "shm/wqe.h"

namespace burst::burstd {

class KmodDevice;  // kmod_device.h

// A client's async-event pipe. Writes of one 16-byte record are atomic (below
// PIPE_BUF), so workers write without a lock; a full pipe drops the event
// (counted) rather than block a worker. In native mode (abi/burst_kmod.h) the
// sink is the kernel module instead: post() raises the event on the shadow
// named by (element = the object's user_handle, the client's tgid); a raise
// the module refuses is counted as dropped.
class AsyncSink {
 public:
  explicit AsyncSink(int fd) : fd_(fd) {}
  AsyncSink(const KmodDevice* kmod, uint32_t tgid) : fd_(-1), kmod_(kmod), tgid_(tgid) {}
  ~AsyncSink();
  AsyncSink(const AsyncSink&) = delete;
  AsyncSink& operator=(const AsyncSink&) = delete;
  void post(uint64_t element, uint32_t event_type);
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  int fd_;
  const KmodDevice* kmod_ = nullptr;  // outlives every client (Device owns it)
  uint32_t tgid_ = 0;
  std::atomic<uint64_t> dropped_{0};
};

class ShmCq {
 public:
  // A region with one CQ ring of at least `cqe` entries. channel_fd (-1: none)
  // is adopted: completion events go there. With `kmod` (native mode, no
  // channel_fd) they are raised through the module on the shadow named by
  // (user_handle, tgid) instead.
  static core::Status Create(uint32_t handle, uint32_t cqe, uint64_t user_handle, int channel_fd,
                             std::unique_ptr<ShmCq>* out, const KmodDevice* kmod = nullptr,
                             uint32_t tgid = 0);
  ~ShmCq();
  ShmCq(const ShmCq&) = delete;
  ShmCq& operator=(const ShmCq&) = delete;

  int fd() const { return region_.fd(); }
  int release_fd() { return region_.release_fd(); }  // see shm::ShmRegion
  uint64_t size() const { return region_.size(); }
  uint32_t entries() const { return geom_.entries(); }

  // Control thread (ibv_resize_cq): a new region with a ring of at least `cqe`
  // entries. Under the lock the workers deliver under, the completions the
  // application has not polled yet are copied into it (in order), with the arm
  // word and the ring's status, and the producer switches to it; the old region
  // is unmapped afterwards (workers touch a region only under the lock). The
  // application must not poll meanwhile (the provider holds its CQ lock across
  // the request). kInvalid when they do not fit, or the ring is faulted.
  core::Status Resize(uint32_t cqe);

  // Worker threads: moves what fits from the Engine CQ `shard` into the ring
  // (the rest stays in the Engine CQ); then answers a pending arm. Returns the
  // number moved.
  uint32_t deliver(core::Engine& engine, uint32_t shard);
  // Worker threads: one completion produced by the plane itself (a work request
  // the Engine never saw). False when the ring is full or faulted.
  bool push(const core::Wc& wc);
  uint64_t overflows() const { return overflows_.load(std::memory_order_relaxed); }

 private:
  ShmCq() = default;
  void lock() {
    while (lock_.test_and_set(std::memory_order_acquire)) {
    }
  }
  void unlock() { lock_.clear(std::memory_order_release); }
  // Answers a pending arm (arm_sequence) after completions were written;
  // `wakes_solicited`: one of them was solicited or unsuccessful.
  void notify_locked(bool wakes_solicited);

  shm::ShmRegion region_;
  shm::RingGeometry geom_;
  uint64_t ring_offset_ = 0;
  uint64_t user_handle_ = 0;
  uint32_t handle_ = 0;
  int channel_fd_ = -1;
  const KmodDevice* kmod_ = nullptr;  // native mode: events raised through the module
  uint32_t tgid_ = 0;                 // the client's, for kmod_
  std::atomic_flag lock_ = ATOMIC_FLAG_INIT;
  // region_, geom_, ring_offset_ and producer_ change only in Resize, under
  // lock_; workers use them only under lock_.
  shm::RingProducer producer_;  // under lock_
  uint32_t answered_arm_ = 0;   // under lock_: the last arm_sequence answered
  std::atomic<uint64_t> overflows_{0};
};

// Address handles for UD sends, device-wide. Slots never move.
class AhTable {
 public:
  static constexpr uint32_t kSlots = BURST_MAX_AH + 1;  // handle 0 is never an AH
  AhTable();
  // Control thread. 0 when full.
  uint32_t add(uint32_t client, const core::Address& ah);
  void remove(uint32_t handle);
  // Workers: the address of `handle` if `client` owns it.
  bool get(uint32_t handle, uint32_t client, core::Address* out) const;

 private:
  struct Slot {
    std::atomic<uint32_t> owner{0};  // client id; 0 = free
    std::atomic<uint32_t> seq{0};    // odd while being written
    core::Address ah;
  };
  std::unique_ptr<Slot[]> slots_;
  uint32_t next_ = 1;  // control thread
};

struct PlaneCounters {
  uint64_t doorbells = 0;       // records delivered
  uint64_t send_wqes = 0;       // SQ entries posted to the Engine
  uint64_t recv_wqes = 0;       // RQ entries posted to the Engine
  uint64_t bad_wqes = 0;        // entries that failed validation (QP to error)
  uint64_t ring_faults = 0;     // SQ/RQ index faults (QP to error)
  uint64_t cqes = 0;            // completions moved into CQ rings
  uint64_t sweeps = 0;          // periodic slices of the rings
  uint64_t sweep_visits = 0;    // QPs those slices looked at
  uint64_t sweep_finds = 0;     // rings with work that no doorbell announced
};

// A QP as the plane binds it (made by the control thread, moved to the worker).
struct ShmQpBinding {
  uint32_t qpn = 0;
  uint32_t client = 0;
  uint64_t user_handle = 0;
  uint8_t* region = nullptr;  // owned by Resources; outlives the binding
  uint64_t sq_offset = 0;
  uint64_t rq_offset = 0;
  shm::RingGeometry sq_geom, rq_geom;
  shm::WqeLimits sq_limits, rq_limits;
  ShmCq* send_cq = nullptr;
  ShmCq* recv_cq = nullptr;
  std::shared_ptr<AsyncSink> async;
};

// An SRQ as the plane binds it.
struct ShmSrqBinding {
  uint32_t srqn = 0;       // doorbell handle
  uint32_t engine_id = 0;  // the Engine's SRQ id on this worker
  uint64_t user_handle = 0;
  uint8_t* region = nullptr;  // owned by Resources; outlives the binding
  uint64_t ring_offset = 0;
  shm::RingGeometry geom;
  shm::WqeLimits limits;
  std::shared_ptr<AsyncSink> async;
};

// One per worker; every call on the worker thread (bind/unbind inside commands).
class ShmPlane {
 public:
  ShmPlane() = default;
  void set_doorbell(shm::ShmRegion* region, uint32_t log2_slots, uint64_t reclaim_ns);
  void clear_doorbell() {
    doorbell_.reset();
    doorbell_hdr_ = nullptr;
  }
  void set_ah_table(const AhTable* ahs) { ahs_ = ahs; }

  void bind_qp(const ShmQpBinding& b);
  void unbind_qp(uint32_t qpn);
  void bind_cq(uint32_t shard, ShmCq* cq);
  void unbind_cq(uint32_t shard);
  void bind_srq(const ShmSrqBinding& b);
  void unbind_srq(uint32_t srqn);
  // The control plane revoked the QP's client: the QP goes to ERR (rings no
  // longer read, outstanding work flushed as error completions) and its
  // client gets IBV_EVENT_QP_FATAL. An unknown qpn is ignored.
  void revoke_qp(core::Engine& engine, uint32_t qpn);

  // Doorbells (and, every sweep interval, every ring) -> Engine. True if any work.
  bool poll(core::Engine& engine, uint64_t now_ns);
  // Engine CQ shards -> CQ rings. True if any completion moved.
  bool deliver(core::Engine& engine);

  // The worker is about to sleep: asks producers to kick its eventfd. False
  // (flag cleared again) when a doorbell record is already on its way.
  bool prepare_sleep();
  void end_sleep();

  const PlaneCounters& counters() const { return counters_; }
  const shm::DoorbellStats* doorbell_stats() const {
    return doorbell_ ? &doorbell_->stats() : nullptr;
  }

 private:
  struct QpRings {
    ShmQpBinding b;
    shm::RingConsumer sq, rq;
    bool failed = false;  // moved to error by the plane: rings no longer read
    uint32_t sweep_pos = 0;  // index in sweep_qps_
  };
  struct SrqRing {
    ShmSrqBinding b;
    shm::RingConsumer ring;
    bool failed = false;
  };
  bool drain_srq(core::Engine& engine, SrqRing& s);
  bool sweep(core::Engine& engine);
  uint32_t sweep_pos_of(uint32_t qpn) const;
  void engine_events(core::Engine& engine);
  // Worker thread: up to kEntriesPerVisit entries of one of q's rings, each
  // copied out and handed to post(entry); a bad one fails the QP.
  template <class Post>
  bool drain_ring(core::Engine& engine, QpRings& q, bool send_side, Post&& post);
  bool drain_sq(core::Engine& engine, QpRings& q);
  bool drain_rq(core::Engine& engine, QpRings& q);
  void fail_qp(core::Engine& engine, QpRings& q, bool send_side, uint64_t wr_id,
               burst_shm_ring_error reason);

  std::unique_ptr<shm::DoorbellConsumer> doorbell_;
  burst_shm_doorbell* doorbell_hdr_ = nullptr;
  const AhTable* ahs_ = nullptr;
  std::unordered_map<uint32_t, QpRings> qps_;
  std::unordered_map<uint32_t, SrqRing> srqs_;  // by srqn
  std::vector<std::pair<uint32_t, ShmCq*>> cqs_;  // (Engine CQ shard, ring)
  std::vector<uint8_t> copy_;                     // one entry, copied out of a ring
  uint64_t next_sweep_ns_ = 0;
  std::vector<uint32_t> sweep_qps_;  // bound QPNs in sweep order
  size_t sweep_cursor_ = 0;          // next position of sweep_qps_ to look at
  uint64_t cqes_seen_ = 0;           // engine.cqes_pushed() at the last CQ scan
  bool cq_backlog_ = false;          // a CQ ring was full: completions still wait
  PlaneCounters counters_;
};

}  // namespace burst::burstd
