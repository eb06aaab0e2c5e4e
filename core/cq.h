/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Completion queue of one engine: a fixed ring of work completions.
//
// Overrun (IBA 11.4.2): a completion that finds the ring full is dropped, the CQ
// enters the error state (every later completion is dropped and counted too)
// and the engine moves the QP that lost its completion to the error state.
// Threading: owned by one worker (poll_cq included, for now).
#pragma once

#include <cstdint>
#include <vector>

#include "core/verbs.h"

namespace burst::core {

class Cq {
 public:
  Cq() = default;
  explicit Cq(uint32_t depth);

  // False (and the CQ in error) when the ring was full or the CQ already in error.
  bool push(const Wc& wc);
  int poll(Wc* out, int max);
  // A new depth of at least size(): the completions in the ring stay, in order.
  void resize(uint32_t depth);

  uint32_t depth() const { return depth_; }
  uint32_t size() const { return static_cast<uint32_t>(tail_ - head_); }
  bool error() const { return error_; }
  uint64_t dropped() const { return dropped_; }

 private:
  std::vector<Wc> ring_;
  uint32_t depth_ = 0;  // completions the application asked room for
  uint32_t mask_ = 0;
  uint64_t head_ = 0;  // next to poll
  uint64_t tail_ = 0;  // next to write
  uint64_t dropped_ = 0;
  bool error_ = false;
};

}  // namespace burst::core
