/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The two sides of a shared-memory SPSC ring (struct burst_shm_ring): the SQ,
// RQ and SRQ (provider produces, burstd consumes) and the CQ (burstd produces,
// the provider consumes).
//
// Neither side trusts the other's index. Each keeps private copies of the
// geometry (mask, entry size, entries pointer: never re-read from the header),
// masks every index it uses, and checks each index it loads from shared memory
// against its own state before using it:
//   consumer: producer_index may only move forward, and at most
//             num_entries ahead of the consumer's own index;
//   producer: consumer_index may only move forward, and never past the
//             producer's own index.
// A violation faults the side (sticky): it returns nothing more, and burstd
// moves that QP or CQ to error (BURST_SHM_RING_ERROR in the header). Entries are
// copied out (CopyEntry) before anything in them is validated or used.
//
// Each side caches the peer's index and loads the shared one (acquire) only
// when the cache cannot satisfy the request; it publishes its own index with a
// release store. Threading: each side is one thread (the owning burstd worker,
// or the application thread holding the queue's lock in the provider).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "abi/burst_shm_abi.h"
#include "shm/geometry.h"

namespace burst::shm {

enum class RingFault : uint8_t {
  kNone = BURST_SHM_RING_ERR_NONE,
  kIndexBackwards = BURST_SHM_RING_ERR_INDEX_BACKWARDS,
  kIndexOverrun = BURST_SHM_RING_ERR_INDEX_OVERRUN,
};

namespace internal {

static_assert(std::atomic_ref<uint32_t>::is_always_lock_free,
              "shared indices need address-free atomics");
static_assert(std::atomic_ref<uint32_t>::required_alignment <= alignof(uint32_t));

inline uint32_t LoadAcquire(uint32_t* p) {
  return std::atomic_ref<uint32_t>(*p).load(std::memory_order_acquire);
}
inline void StoreRelease(uint32_t* p, uint32_t v) {
  std::atomic_ref<uint32_t>(*p).store(v, std::memory_order_release);
}

// Classifies an index `seen` that failed the window check, relative to the
// last value accepted from the peer.
inline RingFault Classify(uint32_t seen, uint32_t last_accepted) {
  return static_cast<int32_t>(seen - last_accepted) < 0 ? RingFault::kIndexBackwards
                                                        : RingFault::kIndexOverrun;
}

// What both sides hold of the ring: the header, and private copies of the
// geometry (never re-read from the header). A member of each side, which
// stays standard layout.
struct RingView {
  RingView() = default;
  RingView(uint8_t* region, uint64_t ring_offset, RingGeometry geom)
      : hdr(reinterpret_cast<burst_shm_ring*>(region + ring_offset)),
        entries(region + ring_offset + kRingEntriesOffset),
        mask(geom.mask()),
        count(geom.entries()),
        entry_size(geom.entry_size) {}

  // The entry of (unmasked) ring index `index`.
  uint8_t* slot(uint32_t index) const { return entries + size_t{index & mask} * entry_size; }

  burst_shm_ring* hdr = nullptr;
  uint8_t* entries = nullptr;
  uint32_t mask = 0;
  uint32_t count = 0;  // entries
  uint32_t entry_size = 0;
};

}  // namespace internal

class RingConsumer {
 public:
  RingConsumer() = default;
  // `region` is the start of a mapping that holds the ring header at
  // `ring_offset` and its entries after it, laid out with `geom` (the
  // caller's private copy; burstd passes what it recorded at creation).
  // `start` is the consumer index to resume from (0 for a new ring).
  RingConsumer(uint8_t* region, uint64_t ring_offset, RingGeometry geom, uint32_t start = 0)
      : ring_(region, ring_offset, geom), cons_(start), prod_seen_(start) {}

  // Entries ready to read, at most `want` (0 when empty or faulted). Loads the
  // shared producer index only when the cached one cannot satisfy `want`.
  uint32_t Peek(uint32_t want) {
    if (fault_ != RingFault::kNone) return 0;
    uint32_t ready = prod_seen_ - cons_;
    if (ready < want) {
      const uint32_t prod =
          internal::LoadAcquire(&ring_.hdr->producer_index);  // written by producer
      const uint32_t ahead = prod - cons_;
      if (ahead > ring_.count || ahead < ready) {
        fault_ = internal::Classify(prod, prod_seen_);
        return 0;
      }
      prod_seen_ = prod;
      ready = ahead;
    }
    return ready < want ? ready : want;
  }

  // Copies the k-th ready entry (k < the last Peek result) into `dst`, which
  // holds entry_size() bytes. The copy is what the caller validates and uses:
  // the producer may rewrite the shared entry at any time.
  void CopyEntry(uint32_t k, void* dst) const {
    std::memcpy(dst, ring_.slot(cons_ + k), ring_.entry_size);
  }
  // The k-th ready entry in place, for a consumer that trusts its producer
  // (the provider reading burstd's CQ). burstd uses CopyEntry.
  const uint8_t* EntryInPlace(uint32_t k) const { return ring_.slot(cons_ + k); }

  // Consumes n entries (clamped to what Peek reported ready) and publishes the
  // consumer index.
  void Release(uint32_t n) {
    const uint32_t ready = prod_seen_ - cons_;
    if (n > ready) n = ready;
    cons_ += n;
    internal::StoreRelease(&ring_.hdr->consumer_index, cons_);  // read by producer
  }

  // Removes, among the ready entries (all of them: Peek(capacity) first),
  // those `drop(entry)` selects, keeping the others in order, and returns how
  // many were removed. Only for a consumer that owns its ring's content (the
  // provider cleaning its CQ of a QP's completions on reset, as mlx5 does):
  // the kept entries move towards the producer index, the freed slots are
  // released, and the producer never writes a ready entry, so this is safe
  // while it runs.
  template <class Drop>
  uint32_t Compact(Drop drop) {
    const uint32_t n = Peek(ring_.count);
    uint32_t dst = n;  // one past the next slot to fill, counted from cons_
    for (uint32_t i = n; i-- > 0;) {
      uint8_t* e = ring_.slot(cons_ + i);
      if (drop(static_cast<const uint8_t*>(e))) continue;
      if (--dst != i) std::memcpy(ring_.slot(cons_ + dst), e, ring_.entry_size);
    }
    Release(dst);
    return dst;
  }

  RingFault fault() const { return fault_; }
  uint32_t index() const { return cons_; }
  uint32_t entry_size() const { return ring_.entry_size; }
  uint32_t capacity() const { return ring_.count; }

 private:
  internal::RingView ring_;
  uint32_t cons_ = 0;       // private consumer index
  uint32_t prod_seen_ = 0;  // last producer index accepted; cons_ <= prod_seen_ <= cons_ + entries
  RingFault fault_ = RingFault::kNone;
};

class RingProducer {
 public:
  RingProducer() = default;
  // Same arguments as RingConsumer; `start` is the producer index to resume from.
  RingProducer(uint8_t* region, uint64_t ring_offset, RingGeometry geom, uint32_t start = 0)
      : ring_(region, ring_offset, geom), prod_(start), cons_seen_(start) {}

  // Free entries, at most `want` (0 when full or faulted). Loads the shared
  // consumer index only when the cached one cannot satisfy `want`.
  uint32_t Reserve(uint32_t want) {
    if (fault_ != RingFault::kNone) return 0;
    uint32_t free_entries = ring_.count - (prod_ - cons_seen_);
    if (free_entries < want) {
      const uint32_t cons =
          internal::LoadAcquire(&ring_.hdr->consumer_index);  // written by consumer
      // The consumer may only have moved forward, and not past what was produced.
      if (cons - cons_seen_ > prod_ - cons_seen_) {
        fault_ = internal::Classify(cons, cons_seen_);
        return 0;
      }
      cons_seen_ = cons;
      free_entries = ring_.count - (prod_ - cons);
    }
    return free_entries < want ? free_entries : want;
  }

  // Entries produced and not consumed yet (loads the consumer index); 0 when
  // faulted. UnconsumedEntry(k), k below that count, is the k-th of them, oldest
  // first (burstd copies them into a CQ's new ring when it is resized).
  uint32_t Unconsumed() {
    const uint32_t free_entries = Reserve(ring_.count);
    return fault_ != RingFault::kNone ? 0 : ring_.count - free_entries;
  }
  const uint8_t* UnconsumedEntry(uint32_t k) const { return ring_.slot(cons_seen_ + k); }

  // The k-th reserved entry (k < the last Reserve result), to be filled.
  uint8_t* Entry(uint32_t k) { return ring_.slot(prod_ + k); }

  // Makes n filled entries visible (clamped to the free space last seen).
  void Publish(uint32_t n) {
    const uint32_t free_entries = ring_.count - (prod_ - cons_seen_);
    if (n > free_entries) n = free_entries;
    prod_ += n;
    internal::StoreRelease(&ring_.hdr->producer_index, prod_);  // read by consumer
  }

  RingFault fault() const { return fault_; }
  uint32_t index() const { return prod_; }
  uint32_t entry_size() const { return ring_.entry_size; }
  uint32_t capacity() const { return ring_.count; }

 private:
  internal::RingView ring_;
  uint32_t prod_ = 0;       // private producer index
  uint32_t cons_seen_ = 0;  // last consumer index accepted; prod_ - entries <= cons_seen_ <= prod_
  RingFault fault_ = RingFault::kNone;
};

// burstd: records a fault in the ring header so that the provider sees it
// (its next post returns an error and the QP reports IBV_EVENT_QP_FATAL).
inline void MarkRingError(uint8_t* region, uint64_t ring_offset, burst_shm_ring_error reason) {
  auto* hdr = reinterpret_cast<burst_shm_ring*>(region + ring_offset);
  std::atomic_ref<uint32_t>(hdr->error_reason).store(reason, std::memory_order_relaxed);
  internal::StoreRelease(&hdr->status, BURST_SHM_RING_ERROR);
}

}  // namespace burst::shm
