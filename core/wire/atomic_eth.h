/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Atomic Extended Transport Header (IBA 9.3.4, 28 bytes) and
// Atomic Acknowledge Extended Transport Header (IBA 9.3.6, 8 bytes).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/wire/be.h"

namespace burst::wire {

class AtomicEth {
 public:
  uint64_t va() const { return va_.get(); }
  uint32_t rkey() const { return rkey_.get(); }
  uint64_t swap_add() const { return swap_add_.get(); }  // swap value or add operand
  uint64_t compare() const { return compare_.get(); }    // compare value (CMP_SWAP only)
  void set_va(uint64_t v) { va_.set(v); }
  void set_rkey(uint32_t v) { rkey_.set(v); }
  void set_swap_add(uint64_t v) { swap_add_.set(v); }
  void set_compare(uint64_t v) { compare_.set(v); }

 private:
  Be64 va_;
  Be32 rkey_;
  Be64 swap_add_;
  Be64 compare_;
};

class AtomicAckEth {
 public:
  uint64_t orig() const { return orig_.get(); }  // original remote value
  void set_orig(uint64_t v) { orig_.set(v); }

 private:
  Be64 orig_;
};

static_assert(sizeof(AtomicEth) == 28 && alignof(AtomicEth) == 1 &&
              std::is_standard_layout_v<AtomicEth>);
static_assert(sizeof(AtomicAckEth) == 8 && alignof(AtomicAckEth) == 1 &&
              std::is_standard_layout_v<AtomicAckEth>);

}  // namespace burst::wire
