/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Packet sequence numbers: all 24-bit PSN arithmetic of the project lives here.
// A PSN is compared only relative to another one: psn_diff() gives the signed
// distance in [-2^23, 2^23), so "a is before b" is psn_diff(a, b) < 0 and stays
// correct across the wrap from 0xFFFFFF to 0.
#pragma once

#include <cstdint>

namespace burst::wire {

constexpr uint32_t kPsnMask = 0xFFFFFF;
constexpr uint32_t kPsnBits = 24;
constexpr uint32_t kPsnWindow = 1u << 23;  // half the PSN space: the largest unambiguous distance

class Psn {
 public:
  constexpr Psn() = default;
  constexpr explicit Psn(uint32_t v) : v_(v & kPsnMask) {}

  constexpr uint32_t value() const { return v_; }
  constexpr Psn operator+(uint32_t n) const { return Psn(v_ + n); }
  constexpr Psn operator-(uint32_t n) const { return Psn(v_ - n); }
  constexpr Psn& operator+=(uint32_t n) {
    v_ = (v_ + n) & kPsnMask;
    return *this;
  }
  constexpr Psn next() const { return *this + 1; }
  constexpr bool operator==(const Psn&) const = default;

 private:
  uint32_t v_ = 0;
};

// Signed 24-bit distance a - b, in [-kPsnWindow, kPsnWindow).
constexpr int32_t psn_diff(Psn a, Psn b) {
  const uint32_t d = (a.value() - b.value()) & kPsnMask;
  // Sign-extend bit 23 (arithmetic shift of a negative value is defined in C++20).
  return static_cast<int32_t>(d << (32 - kPsnBits)) >> (32 - kPsnBits);
}
constexpr bool psn_before(Psn a, Psn b) { return psn_diff(a, b) < 0; }
constexpr bool psn_after(Psn a, Psn b) { return psn_diff(a, b) > 0; }

// True when p lies in [base, base + window_pkts). window_pkts must be <= kPsnWindow.
constexpr bool psn_in_window(Psn p, Psn base, uint32_t window_pkts) {
  const int32_t d = psn_diff(p, base);
  return d >= 0 && static_cast<uint32_t>(d) < window_pkts;
}

static_assert(psn_diff(Psn(0), Psn(kPsnMask)) == 1);
static_assert(psn_diff(Psn(kPsnMask), Psn(0)) == -1);
static_assert((Psn(kPsnMask) + 1).value() == 0);

}  // namespace burst::wire
