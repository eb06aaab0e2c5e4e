/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Worker<Backend>: the poll loop that joins one transport Engine to one datapath
// queue. Instantiated once per backend type; every call to the backend is a
// direct call (no virtual dispatch per packet), as DESIGN.md §3 asks.
//
// Several workers can share one port (one backend queue each). A QP belongs to
// exactly one worker: QPNs are striped over the workers (EngineConfig
// qpn_stride / qpn_offset), so the owner of a packet is arithmetic on its
// destination QPN. A packet that arrives on another worker's queue is copied
// into that worker's inbound SPSC ring (Handoff) and processed there; QP1 and
// anything below the first QPN belong to worker 0. A multicast datagram (DQPN
// 0xFFFFFF) is processed by the worker that received it and copied to every
// other worker the Handoff lists as a multicast member (one with a QP attached
// to some group).
//
// One-host loopback (enable_local_delivery; ports with a real wire): a built
// frame whose destination MAC is the port's own never reaches the backend. It
// is copied into the handoff ring of the worker owning its destination QPN
// (ring(w, w) for this worker's own QPs), its transmit buffer is freed, and the
// owner receives it like a wire frame (ICRC, PSNs, ACKs: the full transport),
// as rxe_loopback does. A full ring drops it, counted (loop_full); the
// transport recovers as from a loss. Cost per transmitted frame: one 6-byte
// compare.
//
// Threading: a Worker, its Engine and its backend queue belong to one thread;
// poll_once() must only be called from that thread.
#pragma once

#include <unistd.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/engine.h"
#include "core/spsc_ring.h"
#include "core/wire/bth.h"
#include "core/wire/peek.h"
#include "datapath/datapath.h"

namespace burst::core {

// The handoff rings of one port: ring(from, to) carries frames that worker
// `from` received for a QP of worker `to`. Created by the control plane before
// the workers start; each ring has one producer and one consumer thread.
//
// A worker that sleeps when idle (burstd) is woken by a producer: it registers
// an eventfd (set_wake_fd), says may_sleep() before sleeping and woke() after;
// a producer calls wake(to) after pushing to `to`'s rings, which writes the
// eventfd only when `to` sleeps (Dekker: each side stores, fences, then reads
// the other's flag, so a frame is never left behind a sleeping worker).
class Handoff {
 public:
  Handoff(uint32_t workers, uint32_t slots, uint32_t slot_bytes)
      : workers_(workers), sleepers_(new Sleeper[workers]) {
    rings_.reserve(size_t{workers} * workers);
    for (uint32_t i = 0; i < workers * workers; ++i)
      rings_.push_back(std::make_unique<SpscFrameRing>(slots, slot_bytes));
  }
  uint32_t workers() const { return workers_; }
  SpscFrameRing& ring(uint32_t from, uint32_t to) { return *rings_[size_t{from} * workers_ + to]; }
  // Workers with a QP attached to a multicast group (bit w; at most 64 workers):
  // written by the control plane after an attach / detach on worker w, read by
  // every worker for each multicast frame it receives.
  void set_mcast_member(uint32_t w, bool member) {
    if (w >= 64) return;
    if (member) {
      mcast_members_.fetch_or(uint64_t{1} << w, std::memory_order_relaxed);
    } else {
      mcast_members_.fetch_and(~(uint64_t{1} << w), std::memory_order_relaxed);
    }
  }
  uint64_t mcast_members() const { return mcast_members_.load(std::memory_order_relaxed); }

  // Control plane, before the workers start: worker w's wake descriptor.
  void set_wake_fd(uint32_t w, int fd) { sleepers_[w].fd = fd; }
  // Control plane, before the workers start: one more ring whose consumer is
  // worker w and whose producer is another thread (QP1's MADs to send,
  // core/gsi_channel.h); may_sleep(w) checks it too, its producer calls wake(w).
  void add_inbound(uint32_t w, const SpscFrameRing* ring) { sleepers_[w].inbound = ring; }
  // Worker w, about to sleep: false (do not sleep) when a ring to w holds frames.
  bool may_sleep(uint32_t w) {
    sleepers_[w].sleeping.store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
    bool busy = sleepers_[w].inbound != nullptr && sleepers_[w].inbound->readable();
    for (uint32_t from = 0; from < workers_ && !busy; ++from) busy = ring(from, w).readable();
    if (busy) sleepers_[w].sleeping.store(0, std::memory_order_relaxed);
    return !busy;
  }
  void woke(uint32_t w) { sleepers_[w].sleeping.store(0, std::memory_order_relaxed); }
  // A producer, after pushing frames for worker w (once per burst).
  void wake(uint32_t w) {
    std::atomic_thread_fence(std::memory_order_seq_cst);
    Sleeper& s = sleepers_[w];
    if (s.sleeping.load(std::memory_order_relaxed) == 0 || s.fd < 0) return;
    if (s.sleeping.exchange(0, std::memory_order_relaxed) == 0) return;
    const uint64_t one = 1;
    (void)!::write(s.fd, &one, sizeof(one));
  }

 private:
  struct alignas(64) Sleeper {
    std::atomic<uint32_t> sleeping{0};       // written by worker w and its producers, read by both
    int fd = -1;                             // set by the control plane before start
    const SpscFrameRing* inbound = nullptr;  // add_inbound: set before start, read by worker w
  };
  uint32_t workers_;
  std::atomic<uint64_t> mcast_members_{0};
  std::vector<std::unique_ptr<SpscFrameRing>> rings_;
  std::unique_ptr<Sleeper[]> sleepers_;
};

struct WorkerCounters {
  uint64_t loops = 0;
  uint64_t rx_bursts = 0;
  uint64_t tx_bursts = 0;
  uint64_t tx_no_buffers = 0;  // the backend had no free tx buffer when the engine had work
  uint64_t tx_backlogged = 0;  // built frames the backend did not take at once (kept, retried)
  uint64_t handoff_out = 0;    // frames passed to the worker that owns their QP
  uint64_t handoff_in = 0;     // frames taken from the rings (other workers', looped ones)
  uint64_t handoff_full = 0;   // frames dropped: the owner's inbound ring was full (the
                               // transport recovers them like a loss on the wire)
  uint64_t looped = 0;         // built frames for the port's own MAC, delivered without the wire
  uint64_t looped_mcast = 0;   // copies of built multicast frames for this port's member workers
  uint64_t loop_full = 0;      // of those, dropped: the owner's ring was full (recovered as a loss)
};

template <datapath::Backend B>
class Worker {
 public:
  static constexpr uint32_t kBurst = B::kMaxBurst;
  static constexpr uint32_t kFirstTxAlloc = kBurst < 4 ? kBurst : 4;

  Worker(Engine& engine, B& port) : engine_(engine), port_(port) {}
  // Joins this worker to the other workers of its port; `index` must equal the
  // engine's qpn_offset and the handoff's worker count its qpn_stride.
  Worker(Engine& engine, B& port, Handoff* handoff, uint32_t index)
      : engine_(engine),
        port_(port),
        handoff_(handoff),
        index_(index),
        multi_(handoff != nullptr && handoff->workers() > 1) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() {
    if (backlog_n_ > 0) port_.tx_free(backlog_ + backlog_head_, backlog_n_);
  }

  // Frames for the port's own MAC (EngineConfig::port.mac) go to the port's
  // own receive path instead of the backend. Needs the handoff (the rings);
  // before the first poll_once. Not for a backend that reflects by itself.
  void enable_local_delivery() {
    if (handoff_ == nullptr) return;
    local_ = true;
    // The rings are drained whole each iteration (take_handed); looping at
    // most half a ring per iteration keeps them from filling in the common case.
    loop_budget_ = handoff_->ring(index_, index_).capacity() / 2;
    std::memcpy(own_mac_, engine_.config().port.mac.data(), sizeof(own_mac_));
  }

  // One iteration: receive a burst, run timers, transmit what the engine has.
  // `now_ns` is the one clock read of this iteration. Returns true when it did
  // any work (the caller backs off when it did none).
  bool poll_once(uint64_t now_ns) {
    bool worked = false;
    ++counters_.loops;

    datapath::Frame rx[kBurst];
    const uint32_t n = port_.rx_burst(rx, kBurst);
    if (n > 0) {
      if (!multi_) {
        engine_.rx_burst(rx, n, now_ns);
      } else {
        datapath::Frame mine[kBurst];
        const uint32_t k = hand_over(rx, n, mine);
        if (k > 0) engine_.rx_burst(mine, k, now_ns);
      }
      port_.rx_release(rx, n);
      ++counters_.rx_bursts;
      worked = true;
    }
    port_.refill();
    if (multi_ || local_) worked |= take_handed(now_ns);

    engine_.tick(now_ns);

    worked |= send_backlog();
    if (backlog_n_ == 0) {
      // The first allocation of an iteration is small: most iterations of a
      // latency-bound loop send one or two frames (a request, an ACK), and a
      // full burst taken and given back costs more than they do. A full first
      // round asks for a full burst next.
      uint32_t want = kFirstTxAlloc;
      uint32_t loop_room = loop_budget_;
      // loop_room: frames this iteration may still loop; at 0 the rest waits
      // for the next iteration, which drains the rings first.
      while (loop_room > 0 && engine_.tx_pending()) {
        datapath::Frame tx[kBurst];
        const uint32_t got = port_.tx_alloc(tx, want);
        if (got == 0) {
          ++counters_.tx_no_buffers;
          break;
        }
        uint32_t built = engine_.tx_build(tx, got, now_ns);
        if (built < got) port_.tx_free(tx + built, got - built);
        if (built == 0) break;
        want = kBurst;
        worked = true;
        if (local_) {
          built = loop_local(tx, built, &loop_room);
          if (built == 0) continue;
        }
        const uint32_t sent = port_.tx_burst(tx, built);
        ++counters_.tx_bursts;
        if (sent < built) {
          // Keep what the device did not take, in order; nothing is dropped.
          for (uint32_t i = sent; i < built; ++i) backlog_[backlog_n_++] = tx[i];
          backlog_head_ = 0;
          counters_.tx_backlogged += built - sent;
          break;
        }
      }
    }
    port_.flush();
    return worked;
  }

  const WorkerCounters& counters() const { return counters_; }
  Engine& engine() { return engine_; }
  B& port() { return port_; }

 private:
  bool send_backlog() {
    if (backlog_n_ == 0) return false;
    const uint32_t sent = port_.tx_burst(backlog_ + backlog_head_, backlog_n_);
    backlog_head_ += sent;
    backlog_n_ -= sent;
    if (backlog_n_ == 0) backlog_head_ = 0;
    return sent > 0;
  }

  uint32_t owner_of(uint32_t qpn) const {
    const uint32_t first = engine_.config().first_qpn;
    if (qpn < first) return 0;
    return (qpn - first) % handoff_->workers();
  }

  // Splits a received burst: frames for this worker's QPs go to `mine`, the
  // rest are copied to their owner's ring. Returns the count in `mine`.
  uint32_t hand_over(datapath::Frame* rx, uint32_t n, datapath::Frame* mine) {
    uint32_t k = 0;
    uint64_t pushed = 0;  // owners given frames (bit w; bit 63 also for w >= 63)
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t qpn;
      uint32_t owner = index_;
      if (wire::peek_dest_qpn(rx[i].data, rx[i].len, &qpn)) {
        if (qpn == wire::kMulticastQpn) {
          copy_to_mcast_members(rx[i], &pushed);
        } else {
          owner = owner_of(qpn);
        }
      }
      if (owner == index_) {
        mine[k++] = rx[i];
      } else if (handoff_->ring(index_, owner).push(rx[i].data, rx[i].len)) {
        ++counters_.handoff_out;
        pushed |= uint64_t{1} << (owner < 63 ? owner : 63);
      } else {
        ++counters_.handoff_full;
      }
    }
    wake_owners(pushed);
    return k;
  }

  // A multicast frame: a copy for every other worker with a QP in some group
  // (their bits are added to *pushed, as in hand_over).
  void copy_to_mcast_members(const datapath::Frame& f, uint64_t* pushed) {
    push_to_workers(f, handoff_->mcast_members() & ~(uint64_t{1} << index_), pushed,
                    &counters_.handoff_out, &counters_.handoff_full);
  }

  // Copies f into the ring of each worker in `workers` (bit w), this one's
  // own ring (w, w) included; counts each copy in *ok or *full.
  void push_to_workers(const datapath::Frame& f, uint64_t workers, uint64_t* pushed, uint64_t* ok,
                       uint64_t* full) {
    while (workers != 0) {
      const uint32_t to = static_cast<uint32_t>(std::countr_zero(workers));
      workers &= workers - 1;
      if (to >= handoff_->workers()) break;
      if (handoff_->ring(index_, to).push(f.data, f.len)) {
        ++*ok;
        if (to != index_) *pushed |= uint64_t{1} << (to < 63 ? to : 63);
      } else {
        ++*full;
      }
    }
  }

  // Takes the frames of a built burst addressed to the port's own MAC out of
  // it: each is copied into its owner's ring and its buffer freed. Returns the
  // count left in `tx` for the backend, in order.
  // *room counts down the frames this iteration may still loop.
  uint32_t loop_local(datapath::Frame* tx, uint32_t n, uint32_t* room) {
    datapath::Frame done[kBurst];
    uint32_t keep = 0;
    uint32_t looped = 0;
    uint64_t pushed = 0;  // as in hand_over
    for (uint32_t i = 0; i < n; ++i) {
      if (std::memcmp(tx[i].data, own_mac_, sizeof(own_mac_)) != 0) {
        // A multicast datagram also reaches this port's members, as an RNIC
        // loops it to the QPs of its port attached to the group.
        if ((tx[i].data[0] & 1) != 0) loop_to_mcast_members(tx[i], &pushed);
        tx[keep++] = tx[i];
        continue;
      }
      uint32_t qpn;
      uint32_t owner = index_;
      if (wire::peek_dest_qpn(tx[i].data, tx[i].len, &qpn)) owner = owner_of(qpn);
      if (handoff_->ring(index_, owner).push(tx[i].data, tx[i].len)) {
        if (owner != index_) pushed |= uint64_t{1} << (owner < 63 ? owner : 63);
      } else {
        ++counters_.loop_full;
      }
      done[looped++] = tx[i];
    }
    wake_owners(pushed);
    if (looped > 0) {
      port_.tx_free(done, looped);
      counters_.looped += looped;
      *room = looped < *room ? *room - looped : 0;
    }
    return keep;
  }

  // A multicast frame this worker built: a copy to every member worker's
  // ring, its own ring (w, w) included (the frame itself goes on the wire).
  void loop_to_mcast_members(const datapath::Frame& f, uint64_t* pushed) {
    push_to_workers(f, handoff_->mcast_members(), pushed, &counters_.looped_mcast,
                    &counters_.loop_full);
  }

  // Wakes the owners in `pushed` (hand_over) if they sleep.
  void wake_owners(uint64_t pushed) {
    if (pushed == 0) return;
    for (uint32_t w = 0; w < handoff_->workers(); ++w) {
      if (w != index_ && (pushed >> (w < 63 ? w : 63)) & 1) handoff_->wake(w);
    }
  }

  // Processes frames other workers passed to this one, and looped frames
  // (this worker's own ring when local delivery is on).
  bool take_handed(uint64_t now_ns) {
    bool any = false;
    for (uint32_t from = 0; from < handoff_->workers(); ++from) {
      if (from == index_ && !local_) continue;
      SpscFrameRing& r = handoff_->ring(from, index_);
      // The whole ring, at most its capacity (what was there when we came).
      for (uint32_t taken = 0; taken < r.capacity();) {
        const uint8_t* ptrs[kBurst];
        uint32_t lens[kBurst];
        const uint32_t got = r.peek(ptrs, lens, kBurst);
        if (got == 0) break;
        datapath::Frame f[kBurst];
        for (uint32_t i = 0; i < got; ++i)
          f[i] = datapath::Frame{const_cast<uint8_t*>(ptrs[i]), lens[i], lens[i], 0};
        engine_.rx_burst(f, got, now_ns);  // reads the frames during the call only
        r.release(got);
        counters_.handoff_in += got;
        taken += got;
        any = true;
      }
    }
    return any;
  }

  Engine& engine_;
  B& port_;
  Handoff* handoff_ = nullptr;
  uint32_t index_ = 0;
  bool multi_ = false;  // several workers: received frames may belong to another
  bool local_ = false;  // frames for own_mac_ loop to the receive path (enable_local_delivery)
  uint32_t loop_budget_ = UINT32_MAX;  // most frames looped per iteration
  uint8_t own_mac_[6] = {};
  datapath::Frame backlog_[kBurst];
  uint32_t backlog_head_ = 0;
  uint32_t backlog_n_ = 0;
  WorkerCounters counters_;
};

}  // namespace burst::core
