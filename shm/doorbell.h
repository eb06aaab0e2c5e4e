/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The per-worker doorbell queue (struct burst_shm_doorbell): many producers
// (the provider in every application with a queue on the worker), one
// consumer (the worker). The protocol, its state diagram, the memory orderings
// and the cost of a producer that dies between reserve and commit are
// described at the top of abi/burst_shm_abi.h; this file implements it.
//
// Summary: each slot is one 64-bit word {state, lap, record}. A producer
// reserves position p by CAS FREE(lap p) -> RESERVED(lap p) on slot p & mask
// (the shared head is only a hint for finding p), then commits by CAS
// RESERVED -> COMMITTED(record) (release). The consumer reads positions in
// order; a position that stays undeliverable for reclaim_timeout_ns is
// reclaimed by CAS to FREE(next lap), after which the late producer's commit
// CAS fails and it learns PostResult::kStale. Nothing but the slot word is
// ever written for a record, so a producer that lost its reservation cannot
// touch a slot that has moved on.
#pragma once

#include <atomic>
#include <cstdint>

#include "abi/burst_shm_abi.h"
#include "shm/geometry.h"

namespace burst::shm {

struct DoorbellRecord {
  uint32_t handle = 0;  // QPN, SRQN or CQN: 24 bits
  uint8_t kind = 0;     // enum burst_shm_db_kind
  uint8_t flags = 0;    // BURST_SHM_DB_FLAG_*: 4 bits
  uint16_t value = 0;   // low 16 bits of the new producer index: a hint only

  bool operator==(const DoorbellRecord&) const = default;
};

enum class PostResult : uint8_t {
  kOk,       // committed: the worker will see the record exactly once
  kFull,     // every slot is in use: the worker is behind; post again later
  kBusy,     // no slot after BURST_SHM_DB_MAX_ATTEMPTS rounds (contention or a corrupted head)
  kStale,    // the worker reclaimed the reservation before the commit: nothing was
             // delivered; post again
  kInvalid,  // the record does not fit the encoding (handle, kind or flags out of range)
};

// Encoding of a slot word (see the layout in burst_shm_abi.h).
namespace db {

inline constexpr uint64_t kLapMask = (uint64_t{1} << BURST_SHM_DB_LAP_BITS) - 1;

constexpr uint64_t Lap(uint64_t position, uint32_t log2_slots) {
  return (position >> log2_slots) & kLapMask;
}
constexpr uint64_t Word(burst_shm_db_state state, uint64_t lap) {
  return (uint64_t{state} << BURST_SHM_DB_STATE_SHIFT) |
         ((lap & kLapMask) << BURST_SHM_DB_LAP_SHIFT);
}
constexpr uint64_t Committed(uint64_t lap, const DoorbellRecord& r) {
  return Word(BURST_SHM_DB_COMMITTED, lap) | (uint64_t{r.value} << BURST_SHM_DB_VALUE_SHIFT) |
         (uint64_t{r.flags} << BURST_SHM_DB_FLAGS_SHIFT) |
         (uint64_t{r.kind} << BURST_SHM_DB_KIND_SHIFT) |
         (uint64_t{r.handle} << BURST_SHM_DB_HANDLE_SHIFT);
}
constexpr uint32_t StateOf(uint64_t w) {
  return static_cast<uint32_t>(w >> BURST_SHM_DB_STATE_SHIFT);
}
constexpr uint64_t LapOf(uint64_t w) { return (w >> BURST_SHM_DB_LAP_SHIFT) & kLapMask; }
constexpr DoorbellRecord RecordOf(uint64_t w) {
  DoorbellRecord r;
  r.handle = static_cast<uint32_t>(w >> BURST_SHM_DB_HANDLE_SHIFT) &
             ((1u << BURST_SHM_DB_HANDLE_BITS) - 1);
  r.kind =
      static_cast<uint8_t>((w >> BURST_SHM_DB_KIND_SHIFT) & ((1u << BURST_SHM_DB_KIND_BITS) - 1));
  r.flags =
      static_cast<uint8_t>((w >> BURST_SHM_DB_FLAGS_SHIFT) & ((1u << BURST_SHM_DB_FLAGS_BITS) - 1));
  r.value = static_cast<uint16_t>(w >> BURST_SHM_DB_VALUE_SHIFT);
  return r;
}
constexpr bool Encodable(const DoorbellRecord& r) {
  return r.handle < (1u << BURST_SHM_DB_HANDLE_BITS) && r.kind != BURST_SHM_DB_NONE &&
         r.kind <= BURST_SHM_DB_KIND_MAX && r.flags < (1u << BURST_SHM_DB_FLAGS_BITS);
}

static_assert(std::atomic_ref<uint64_t>::is_always_lock_free, "slots need address-free atomics");
static_assert(std::atomic_ref<uint64_t>::required_alignment <= alignof(uint64_t));

inline std::atomic_ref<uint64_t> Ref(uint64_t* p) { return std::atomic_ref<uint64_t>(*p); }

}  // namespace db

#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
namespace test_hooks {
// Called by DoorbellProducer::Post after a successful reserve and before the
// commit, with the reserved position. Tests set it to stop, stall or kill a
// producer in between. Only with BURST_TEST_HOOKS (never in release builds).
inline std::atomic<void (*)(uint64_t position)> after_doorbell_reserve{nullptr};
}  // namespace test_hooks
#endif

// Producer side. Holds only constant state, so one object may be shared by
// all threads of a process. `doorbell` points at the queue header inside the
// mapped doorbell region; log2_slots comes from CheckDoorbell.
class DoorbellProducer {
 public:
  struct Reservation {
    uint64_t position = 0;
  };

  DoorbellProducer() = default;
  DoorbellProducer(burst_shm_doorbell* doorbell, uint32_t log2_slots)
      : hdr_(doorbell),
        slots_(reinterpret_cast<uint64_t*>(reinterpret_cast<uint8_t*>(doorbell) +
                                           kDoorbellSlotsOffset)),
        log2_slots_(log2_slots),
        mask_((uint64_t{1} << log2_slots) - 1) {}

  // Reserve + commit. kStale means a reclaim happened in between; the caller
  // posts again (the record was not delivered).
  PostResult Post(const DoorbellRecord& rec) const {
    if (!db::Encodable(rec)) return PostResult::kInvalid;
    Reservation r;
    const PostResult res = Reserve(&r);
    if (res != PostResult::kOk) return res;
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
    if (auto* hook = test_hooks::after_doorbell_reserve.load(std::memory_order_relaxed)) {
      hook(r.position);
    }
#endif
    return Commit(r, rec);
  }

  // Step 1: claims the next position. Bounded: at most BURST_SHM_DB_MAX_ATTEMPTS rounds.
  PostResult Reserve(Reservation* out) const {
    uint64_t* const head = &hdr_->head;  // written by all producers (CAS), read by the consumer
    for (int attempt = 0; attempt < BURST_SHM_DB_MAX_ATTEMPTS; ++attempt) {
      uint64_t h = db::Ref(head).load(std::memory_order_relaxed);
      uint64_t* const slot = &slots_[h & mask_];
      const uint64_t lap = db::Lap(h, log2_slots_);
      uint64_t w = db::Ref(slot).load(std::memory_order_relaxed);
      const uint32_t state = db::StateOf(w);
      const uint64_t dlap = (db::LapOf(w) - lap) & db::kLapMask;
      if (dlap == 0 && state == BURST_SHM_DB_FREE) {
        if (db::Ref(slot).compare_exchange_strong(w, db::Word(BURST_SHM_DB_RESERVED, lap),
                                                  std::memory_order_relaxed)) {
          // Advance the hint; if this fails someone already helped.
          db::Ref(head).compare_exchange_strong(h, h + 1, std::memory_order_relaxed);
          out->position = h;
          return PostResult::kOk;
        }
        continue;  // another producer (or a reclaim) got there first
      }
      if (dlap == db::kLapMask) return PostResult::kFull;  // position h - N still in use
      // Reserved/committed at lap(h): its owner has not advanced head yet.
      // Any later lap or garbage: head lags or was corrupted. Either way: help.
      db::Ref(head).compare_exchange_strong(h, h + 1, std::memory_order_relaxed);
    }
    return PostResult::kBusy;
  }

  // Step 2: publishes the record in the reserved slot, unless the worker
  // reclaimed it (kStale: the slot was left untouched).
  PostResult Commit(const Reservation& r, const DoorbellRecord& rec) const {
    if (!db::Encodable(rec)) return PostResult::kInvalid;
    const uint64_t lap = db::Lap(r.position, log2_slots_);
    uint64_t expected = db::Word(BURST_SHM_DB_RESERVED, lap);
    // Release: the ring contents and producer_index written before the
    // doorbell are visible to the worker once it sees the record.
    if (db::Ref(&slots_[r.position & mask_])
            .compare_exchange_strong(expected, db::Committed(lap, rec), std::memory_order_release,
                                     std::memory_order_relaxed)) {
      return PostResult::kOk;
    }
    return PostResult::kStale;
  }

  uint32_t capacity() const { return static_cast<uint32_t>(mask_ + 1); }

 private:
  burst_shm_doorbell* hdr_ = nullptr;
  uint64_t* slots_ = nullptr;
  uint32_t log2_slots_ = 0;
  uint64_t mask_ = 0;
};

struct DoorbellStats {
  uint64_t delivered = 0;     // records handed to the worker
  uint64_t reclaimed = 0;     // reserved positions skipped after the timeout
  uint64_t corrupt = 0;       // garbage slot words or holes skipped after the timeout
  uint64_t invalid = 0;       // committed records with a kind out of range (dropped)
  uint64_t head_repairs = 0;  // head found outside the valid window and reset
};

// Consumer side: the owning worker only.
class DoorbellConsumer {
 public:
  DoorbellConsumer() = default;
  // `doorbell`, `log2_slots`: burstd's private record of the queue it created.
  // `start`: position to resume from (0 for a new queue).
  DoorbellConsumer(burst_shm_doorbell* doorbell, uint32_t log2_slots, uint64_t reclaim_timeout_ns,
                   uint64_t start = 0)
      : hdr_(doorbell),
        slots_(reinterpret_cast<uint64_t*>(reinterpret_cast<uint8_t*>(doorbell) +
                                           kDoorbellSlotsOffset)),
        log2_slots_(log2_slots),
        mask_((uint64_t{1} << log2_slots) - 1),
        timeout_ns_(reclaim_timeout_ns),
        tail_(start) {}

  // Runs on the owning worker. Delivers up to `max` records in position order
  // into `out`; `now_ns` is the worker's clock (any monotonic nanoseconds).
  // Bounded work: at most 2 * max + 8 slot inspections.
  uint32_t Poll(DoorbellRecord* out, uint32_t max, uint64_t now_ns);

  const DoorbellStats& stats() const { return stats_; }
  uint64_t tail() const { return tail_; }
  uint32_t capacity() const { return static_cast<uint32_t>(mask_ + 1); }

 private:
  // Outcome of looking at the slot of position tail_.
  enum class Step : uint8_t { kDelivered, kSkipped, kEmpty, kWait, kRetry };
  Step Examine(DoorbellRecord* out, uint64_t now_ns);
  void Advance() {
    ++tail_;
    stuck_ = hole_run_ = false;
  }

  burst_shm_doorbell* hdr_ = nullptr;
  uint64_t* slots_ = nullptr;
  uint32_t log2_slots_ = 0;
  uint64_t mask_ = 0;
  uint64_t timeout_ns_ = 0;
  uint64_t tail_ = 0;   // private: next position to deliver
  bool stuck_ = false;  // tail_ seen undeliverable since stuck_since_ns_
  uint64_t stuck_since_ns_ = 0;
  bool hole_run_ = false;           // tail_ - 1 was a hole skipped after a timeout...
  uint64_t hole_run_since_ns_ = 0;  // ...that started at this time
  DoorbellStats stats_;
};

inline DoorbellConsumer::Step DoorbellConsumer::Examine(DoorbellRecord* out, uint64_t now_ns) {
  uint64_t* const slot = &slots_[tail_ & mask_];
  const uint64_t lap = db::Lap(tail_, log2_slots_);
  // Acquire: pairs with the producer's release commit.
  uint64_t w = db::Ref(slot).load(std::memory_order_acquire);
  const uint32_t state = db::StateOf(w);
  const bool this_lap = db::LapOf(w) == lap;
  if (this_lap && state == BURST_SHM_DB_COMMITTED) {
    *out = db::RecordOf(w);
    // Nobody else moves a COMMITTED slot: a plain store frees it for tail_ + N.
    db::Ref(slot).store(db::Word(BURST_SHM_DB_FREE, lap + 1), std::memory_order_relaxed);
    Advance();
    if (out->kind == BURST_SHM_DB_NONE || out->kind > BURST_SHM_DB_KIND_MAX) {
      ++stats_.invalid;
      return Step::kSkipped;
    }
    ++stats_.delivered;
    return Step::kDelivered;
  }
  bool hole = false;
  uint64_t h = 0;
  if (this_lap && state == BURST_SHM_DB_FREE) {
    h = db::Ref(&hdr_->head).load(std::memory_order_relaxed);
    const uint64_t ahead = h - tail_;
    if (ahead == 0 || ahead == ~uint64_t{0}) {  // head == tail or tail - 1 (owner about to advance)
      stuck_ = hole_run_ = false;
      return Step::kEmpty;
    }
    if (ahead > mask_ + 1) {  // outside [tail - 1, tail + N]: corrupted; tail is always safe
      db::Ref(&hdr_->head).compare_exchange_strong(h, tail_, std::memory_order_relaxed);
      ++stats_.head_repairs;
      stuck_ = hole_run_ = false;
      return Step::kEmpty;
    }
    hole = true;  // head says tail_ was reserved, yet the slot is free: transient, or a hole
  }
  // RESERVED(lap), a hole, or garbage: wait for the timeout, then skip.
  if (!stuck_) {
    stuck_ = true;
    // A run of holes below head is corruption, not reservations in flight:
    // one timeout covers the whole run.
    stuck_since_ns_ = (hole && hole_run_) ? hole_run_since_ns_ : now_ns;
  }
  if (now_ns < stuck_since_ns_ || now_ns - stuck_since_ns_ < timeout_ns_) return Step::kWait;
  if (!db::Ref(slot).compare_exchange_strong(w, db::Word(BURST_SHM_DB_FREE, lap + 1),
                                             std::memory_order_relaxed)) {
    return Step::kRetry;  // committed (or changed) just now: look again
  }
  if (this_lap && state == BURST_SHM_DB_RESERVED) {
    ++stats_.reclaimed;
  } else {
    ++stats_.corrupt;
  }
  const uint64_t stuck_since = stuck_since_ns_;
  Advance();
  if (hole) {
    hole_run_ = true;
    hole_run_since_ns_ = stuck_since;
  }
  return Step::kSkipped;
}

inline uint32_t DoorbellConsumer::Poll(DoorbellRecord* out, uint32_t max, uint64_t now_ns) {
  uint32_t n = 0;
  const uint64_t start = tail_;
  const uint32_t budget = 2 * max + 8;
  for (uint32_t i = 0; i < budget && n < max; ++i) {
    const Step s = Examine(&out[n], now_ns);
    if (s == Step::kDelivered) {
      ++n;
    } else if (s == Step::kEmpty || s == Step::kWait) {
      break;
    }
  }
  if (tail_ != start) {
    // Diagnostics for burstctl; nothing on the fast path reads them.
    db::Ref(&hdr_->tail).store(tail_, std::memory_order_relaxed);
    db::Ref(&hdr_->reclaimed).store(stats_.reclaimed, std::memory_order_relaxed);
  }
  return n;
}

}  // namespace burst::shm
