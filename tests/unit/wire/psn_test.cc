// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// 24-bit PSN arithmetic.
#include "core/wire/psn.h"

#include <gtest/gtest.h>

namespace burst::wire {
namespace {

TEST(Psn, ConstructionMasks) {
  EXPECT_EQ(Psn(0x1000000).value(), 0u);
  EXPECT_EQ(Psn(0xFFFFFFFF).value(), 0xFFFFFFu);
  EXPECT_EQ(Psn().value(), 0u);
}

TEST(Psn, AdditionWraps) {
  EXPECT_EQ((Psn(0xFFFFFF) + 1).value(), 0u);
  EXPECT_EQ(Psn(0xFFFFFF).next(), Psn(0));
  EXPECT_EQ((Psn(0xFFFFF0) + 0x20).value(), 0x10u);
  EXPECT_EQ((Psn(5) + 0x1000000).value(), 5u);  // a full turn is the identity
  EXPECT_EQ((Psn(0) - 1).value(), 0xFFFFFFu);
  Psn p(0xFFFFFE);
  p += 3;
  EXPECT_EQ(p.value(), 1u);
  EXPECT_EQ((Psn(7) + 0xFFFFFFFFu).value(), 6u);
}

TEST(Psn, DiffAcrossTheWrap) {
  EXPECT_EQ(psn_diff(Psn(0), Psn(0xFFFFFF)), 1);
  EXPECT_EQ(psn_diff(Psn(0xFFFFFF), Psn(0)), -1);
  EXPECT_EQ(psn_diff(Psn(5), Psn(0xFFFFFB)), 10);
  EXPECT_EQ(psn_diff(Psn(0xFFFFFB), Psn(5)), -10);
  EXPECT_EQ(psn_diff(Psn(100), Psn(100)), 0);
  EXPECT_TRUE(psn_before(Psn(0xFFFFFF), Psn(0)));
  EXPECT_FALSE(psn_before(Psn(0), Psn(0xFFFFFF)));
  EXPECT_TRUE(psn_after(Psn(0), Psn(0xFFFFFF)));
  EXPECT_FALSE(psn_before(Psn(9), Psn(9)));
  EXPECT_FALSE(psn_after(Psn(9), Psn(9)));
}

TEST(Psn, WindowEdges) {
  // The range is [-2^23, 2^23): +2^23 - 1 is ahead, +2^23 is already behind.
  EXPECT_EQ(psn_diff(Psn(kPsnWindow - 1), Psn(0)), static_cast<int32_t>(kPsnWindow - 1));
  EXPECT_EQ(psn_diff(Psn(kPsnWindow), Psn(0)), -static_cast<int32_t>(kPsnWindow));
  EXPECT_EQ(psn_diff(Psn(0), Psn(kPsnWindow)), -static_cast<int32_t>(kPsnWindow));
  EXPECT_EQ(psn_diff(Psn(kPsnWindow + 1), Psn(0)), -static_cast<int32_t>(kPsnWindow - 1));
  // Same edges shifted across the wrap.
  const Psn base(0xFFFFF0);
  EXPECT_EQ(psn_diff(base + (kPsnWindow - 1), base), static_cast<int32_t>(kPsnWindow - 1));
  EXPECT_EQ(psn_diff(base + kPsnWindow, base), -static_cast<int32_t>(kPsnWindow));

  EXPECT_TRUE(psn_in_window(base, base, 1));
  EXPECT_FALSE(psn_in_window(base + 1, base, 1));
  EXPECT_TRUE(psn_in_window(base + 0x1F, base, 0x20));  // crosses 0xFFFFFF -> 0
  EXPECT_FALSE(psn_in_window(base + 0x20, base, 0x20));
  EXPECT_FALSE(psn_in_window(base - 1, base, 0x20));
  EXPECT_TRUE(psn_in_window(base + (kPsnWindow - 1), base, kPsnWindow));
  EXPECT_FALSE(psn_in_window(base + kPsnWindow, base, kPsnWindow));
}

TEST(Psn, DiffIsAntisymmetricAndConsistentWithAddition) {
  // Deterministic pseudo-random sweep (LCG), including values near the wrap.
  uint32_t x = 12345;
  for (int i = 0; i < 20000; ++i) {
    x = x * 1664525u + 1013904223u;
    const Psn a(x);
    const uint32_t step = (x >> 8) % kPsnWindow;  // [0, 2^23)
    const Psn b = a + step;
    EXPECT_EQ(psn_diff(b, a), static_cast<int32_t>(step));
    if (step != 0) {
      EXPECT_EQ(psn_diff(a, b), -static_cast<int32_t>(step));
      EXPECT_TRUE(psn_before(a, b));
    }
  }
}

}  // namespace
}  // namespace burst::wire
