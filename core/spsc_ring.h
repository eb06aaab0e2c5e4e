/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Single-producer single-consumer ring of fixed-size slots, for handing frames
// from one worker to another without locks. Producer and consumer indices live
// on separate cache lines; each side caches the other's index and reads the
// shared one (acquire) only when its cache says full / empty; publication is a
// release store (the consumer also refreshes its cache when it holds fewer
// entries than asked for). Slots are preallocated; nothing allocates after construction.
//
// Threading: push side is one thread (the producer worker), pop side one thread
// (the consumer worker). Sizes are fixed at construction.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace burst::core {

class SpscFrameRing {
 public:
  // `slots` is rounded up to a power of two; each slot holds up to slot_bytes.
  SpscFrameRing(uint32_t slots, uint32_t slot_bytes)
      : mask_(round_pow2(slots) - 1),
        slot_bytes_(slot_bytes),
        lens_(new uint32_t[mask_ + 1]),
        data_(new uint8_t[size_t{mask_ + 1} * slot_bytes]) {}

  SpscFrameRing(const SpscFrameRing&) = delete;
  SpscFrameRing& operator=(const SpscFrameRing&) = delete;

  // Producer: copies the frame into the next slot. False when full or too big.
  bool push(const uint8_t* frame, uint32_t len) {
    if (len > slot_bytes_) return false;
    const uint32_t head = prod_.head;
    if (head - prod_.tail_cache > mask_) {
      prod_.tail_cache = cons_.tail.load(std::memory_order_acquire);  // written by consumer
      if (head - prod_.tail_cache > mask_) return false;
    }
    const uint32_t i = head & mask_;
    std::memcpy(data_.get() + size_t{i} * slot_bytes_, frame, len);
    lens_[i] = len;
    prod_.head = head + 1;
    shared_head_.store(head + 1, std::memory_order_release);  // read by consumer
    return true;
  }

  // Consumer: up to n frames, in order, as pointers into the ring; they stay
  // valid until release(n) is called with the count returned.
  uint32_t peek(const uint8_t** frames, uint32_t* lens, uint32_t n) {
    const uint32_t tail = cons_.tail_local;
    if (cons_.head_cache - tail < n) {
      // The cache cannot fill the request: look at the producer's index once.
      cons_.head_cache = shared_head_.load(std::memory_order_acquire);  // written by producer
      if (cons_.head_cache == tail) return 0;
    }
    uint32_t avail = cons_.head_cache - tail;
    if (avail > n) avail = n;
    for (uint32_t k = 0; k < avail; ++k) {
      const uint32_t i = (tail + k) & mask_;
      frames[k] = data_.get() + size_t{i} * slot_bytes_;
      lens[k] = lens_[i];
    }
    return avail;
  }

  void release(uint32_t n) {
    cons_.tail_local += n;
    cons_.tail.store(cons_.tail_local, std::memory_order_release);  // read by producer
  }

  // Consumer: whether the producer has published frames not yet released
  // (reads the producer's index; for a decision to sleep, not per frame).
  bool readable() const { return shared_head_.load(std::memory_order_acquire) != cons_.tail_local; }

  uint32_t capacity() const { return mask_ + 1; }

 private:
  static uint32_t round_pow2(uint32_t v) {
    uint32_t p = 2;
    while (p < v) p <<= 1;
    return p;
  }

  const uint32_t mask_;
  const uint32_t slot_bytes_;
  std::unique_ptr<uint32_t[]> lens_;
  std::unique_ptr<uint8_t[]> data_;

  struct alignas(64) Producer {
    uint32_t head = 0;        // written by producer only
    uint32_t tail_cache = 0;  // producer's copy of cons_.tail
  } prod_;
  alignas(64) std::atomic<uint32_t> shared_head_{0};  // written by producer, read by consumer
  struct alignas(64) Consumer {
    std::atomic<uint32_t> tail{0};  // written by consumer, read by producer
    uint32_t tail_local = 0;        // consumer's own tail
    uint32_t head_cache = 0;        // consumer's copy of shared_head_
  } cons_;
};

}  // namespace burst::core
