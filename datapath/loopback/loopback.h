/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// In-process datapath: two ports joined by a simulated wire, for tests and for
// running two engines in one process. With BURST_TEST_HOOKS the wire injects
// faults (drop, reorder, duplicate, corrupt) from a seeded generator, so a
// failing run can be replayed exactly; without it (release builds) the fault
// knobs do not exist.
//
// Threading: a LoopbackWire and both of its ports are used by one thread (the
// test driving both engines). Not for cross-thread use.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <vector>

#include "datapath/datapath.h"

namespace burst::datapath {

#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
struct LoopbackFaults {
  double drop = 0.0;           // probability a frame is lost
  double duplicate = 0.0;      // probability a frame is delivered twice
  double reorder = 0.0;        // probability a frame is held back behind later ones
  double corrupt = 0.0;        // probability one byte of a frame is flipped
  uint32_t reorder_depth = 8;  // a held-back frame is released after at most this many others
  uint64_t seed = 1;
};
#endif

struct LoopbackCounters {
  uint64_t tx_frames = 0;
  uint64_t rx_frames = 0;
  uint64_t dropped = 0;
  uint64_t duplicated = 0;
  uint64_t reordered = 0;
  uint64_t corrupted = 0;
  uint64_t tx_full = 0;  // tx_burst refused frames because the far side's queue was full
};

class LoopbackWire;

// One end of the wire; satisfies the Backend concept.
class LoopbackPort {
 public:
  static constexpr uint32_t kMaxBurst = 32;

  uint32_t rx_burst(Frame* frames, uint32_t n);
  void rx_release(Frame* frames, uint32_t n);
  uint32_t tx_alloc(Frame* frames, uint32_t n);
  uint32_t tx_burst(Frame* frames, uint32_t n);
  void tx_free(Frame* frames, uint32_t n);
  void flush();
  void refill() {}

  uint32_t mtu() const;
  uint32_t headroom() const { return 0; }
  uint32_t queue_count() const { return 1; }
  bool zero_copy() const { return false; }

  const LoopbackCounters& counters() const { return counters_; }

 private:
  friend class LoopbackWire;
  LoopbackPort(LoopbackWire* wire, int side) : wire_(wire), side_(side) {}

  LoopbackWire* wire_;
  int side_;
  LoopbackCounters counters_;
};

class LoopbackWire {
 public:
  // frame_bytes: largest frame (e.g. 1514 or 9014); frames: buffers in the pool
  // shared by both directions; queue_limit: frames in flight per direction.
  LoopbackWire(uint32_t frame_bytes, uint32_t frames = 4096, uint32_t queue_limit = 1024);
  LoopbackWire(const LoopbackWire&) = delete;
  LoopbackWire& operator=(const LoopbackWire&) = delete;

  LoopbackPort& port(int side) { return side == 0 ? a_ : b_; }

#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  // Faults on frames sent by `side` (0 or 1).
  void set_faults(int side, const LoopbackFaults& f);
#endif
  // Frames queued towards `side` plus frames held back for reordering.
  size_t in_flight(int side) const;
  uint32_t frame_bytes() const { return frame_bytes_; }
  uint32_t free_buffers() const { return static_cast<uint32_t>(free_.size()); }

 private:
  friend class LoopbackPort;
  struct Direction {
    std::deque<uint32_t> queue;  // buffer indices ready to be received
    std::deque<uint32_t> held;   // held back (reorder), released later
    std::vector<uint32_t> held_age;
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
    LoopbackFaults faults;
    bool faulty = false;
    std::mt19937_64 rng{1};
#endif
  };

  uint8_t* buf(uint32_t idx) { return storage_.get() + static_cast<size_t>(idx) * frame_bytes_; }
  bool alloc(uint32_t* idx);
  void release(uint32_t idx) { free_.push_back(idx); }
  // Moves one frame from the sender `from` onto the wire towards the other side.
  void transmit(int from, uint32_t idx, uint32_t len);
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  // transmit() with the direction's faults applied.
  void transmit_faulty(int from, Direction& d, uint32_t idx, uint32_t len);
  void age_held(Direction& d);
#endif

  uint32_t frame_bytes_;
  uint32_t queue_limit_;
  std::unique_ptr<uint8_t[]> storage_;
  std::vector<uint32_t> lens_;
  std::vector<uint32_t> free_;
  Direction dir_[2];  // dir_[s]: frames travelling towards side s
  LoopbackPort a_{this, 0};
  LoopbackPort b_{this, 1};
};

static_assert(Backend<LoopbackPort>);

}  // namespace burst::datapath
