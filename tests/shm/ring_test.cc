// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// SPSC rings: wrap-around, full/empty, indices across the uint32 wrap, faults
// on corrupted shared indices, garbage in the shared header (exact-size heap
// region: ASan flags any access outside it), and a producer in another process.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "shm/layout.h"
#include "shm/shm_ring.h"
#include "shm/wqe.h"
#include "shm_test_util.h"

namespace burst::shm {
namespace {

using testing::HeapRegion;

// One ring at offset 0 of an exact-size buffer (no region header needed here).
struct TestRing {
  explicit TestRing(RingGeometry g, uint32_t start = 0)
      : geom(g), mem(RingBytes(g)), prod(mem.data(), 0, g, start), cons(mem.data(), 0, g, start) {
    hdr()->producer_index = start;
    hdr()->consumer_index = start;
  }
  burst_shm_ring* hdr() { return reinterpret_cast<burst_shm_ring*>(mem.data()); }

  // Producer side writes `v` into the first 4 bytes of each of n entries.
  uint32_t Push(uint32_t n, uint32_t first) {
    const uint32_t got = prod.Reserve(n);
    for (uint32_t k = 0; k < got; ++k) {
      const uint32_t v = first + k;
      std::memcpy(prod.Entry(k), &v, sizeof(v));
    }
    prod.Publish(got);
    return got;
  }
  // Consumer side reads up to n entries, appending their values.
  uint32_t Pull(uint32_t n, std::vector<uint32_t>* out) {
    const uint32_t got = cons.Peek(n);
    std::vector<uint8_t> copy(cons.entry_size());
    for (uint32_t k = 0; k < got; ++k) {
      cons.CopyEntry(k, copy.data());
      uint32_t v;
      std::memcpy(&v, copy.data(), sizeof(v));
      out->push_back(v);
    }
    cons.Release(got);
    return got;
  }

  RingGeometry geom;
  HeapRegion mem;
  RingProducer prod;
  RingConsumer cons;
};

TEST(ShmRing, EmptyAndFull) {
  TestRing r(RingGeometry{3, 64});  // 8 entries
  std::vector<uint32_t> got;
  EXPECT_EQ(r.cons.Peek(4), 0u);
  EXPECT_EQ(r.Push(5, 0), 5u);
  EXPECT_EQ(r.Push(5, 5), 3u);  // only 3 left
  EXPECT_EQ(r.prod.Reserve(1), 0u);
  EXPECT_EQ(r.Pull(2, &got), 2u);
  EXPECT_EQ(r.Push(5, 8), 2u);
  EXPECT_EQ(r.Pull(100, &got), 8u);
  EXPECT_EQ(r.cons.Peek(1), 0u);
  EXPECT_EQ(got, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(r.cons.fault(), RingFault::kNone);
  EXPECT_EQ(r.prod.fault(), RingFault::kNone);
}

TEST(ShmRing, WrapAroundInOrder) {
  for (const uint32_t start : {0u, 0xfffffff0u}) {  // second: indices cross 2^32
    TestRing r(RingGeometry{4, 32}, start);
    std::mt19937 rng(start + 1);
    std::vector<uint32_t> got;
    uint32_t next = 0;
    while (next < 5000) {
      next += r.Push(std::min<uint32_t>(1 + rng() % 20, 5000 - next), next);
      r.Pull(1 + rng() % 20, &got);
    }
    while (r.Pull(16, &got) != 0) {
    }
    ASSERT_EQ(got.size(), 5000u);
    for (uint32_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], i);
    EXPECT_EQ(r.cons.index(), start + 5000);
    EXPECT_EQ(r.hdr()->consumer_index, start + 5000);
    EXPECT_EQ(r.hdr()->producer_index, start + 5000);
  }
}

// Compact (the provider's CQ clean on QP reset): the dropped entries go, the
// others stay in order, across the ring's wrap and the uint32 index wrap, and
// the producer can fill the freed slots.
TEST(ShmRing, CompactDropsSelectedEntriesInOrder) {
  for (const uint32_t start : {0u, 5u, 0xfffffffcu}) {
    TestRing r(RingGeometry{3, 64}, start);  // 8 entries
    EXPECT_EQ(r.Push(8, 0), 8u);
    const uint32_t removed = r.cons.Compact([](const uint8_t* e) {
      uint32_t v;
      std::memcpy(&v, e, sizeof(v));
      return v % 3 == 0;  // 0, 3, 6
    });
    EXPECT_EQ(removed, 3u);
    EXPECT_EQ(r.hdr()->consumer_index, start + 3);
    EXPECT_EQ(r.Push(3, 8), 3u);
    std::vector<uint32_t> got;
    EXPECT_EQ(r.Pull(100, &got), 8u);
    EXPECT_EQ(got, (std::vector<uint32_t>{1, 2, 4, 5, 7, 8, 9, 10}));
    EXPECT_EQ(r.cons.Compact([](const uint8_t*) { return true; }), 0u);  // empty ring
    EXPECT_EQ(r.cons.fault(), RingFault::kNone);
  }
}

TEST(ShmRing, ConsumerFaultsOnProducerIndexMovingBackwards) {
  TestRing r(RingGeometry{3, 64});
  r.Push(6, 0);
  EXPECT_EQ(r.cons.Peek(2), 2u);
  r.hdr()->producer_index = 4;  // was 6
  EXPECT_EQ(r.cons.Peek(8), 0u);
  EXPECT_EQ(r.cons.fault(), RingFault::kIndexBackwards);
  // Sticky, even once the index looks right again.
  r.hdr()->producer_index = 6;
  EXPECT_EQ(r.cons.Peek(1), 0u);
}

TEST(ShmRing, ConsumerFaultsOnProducerIndexBelowConsumer) {
  TestRing r(RingGeometry{3, 64});
  std::vector<uint32_t> got;
  r.Push(4, 0);
  r.Pull(4, &got);
  r.hdr()->producer_index = 1;  // behind what was already consumed
  EXPECT_EQ(r.cons.Peek(1), 0u);
  EXPECT_EQ(r.cons.fault(), RingFault::kIndexBackwards);
}

TEST(ShmRing, ConsumerFaultsOnProducerIndexPastRingSize) {
  TestRing r(RingGeometry{3, 64});
  r.hdr()->producer_index = 9;  // 9 entries in an 8-entry ring
  EXPECT_EQ(r.cons.Peek(1), 0u);
  EXPECT_EQ(r.cons.fault(), RingFault::kIndexOverrun);
  TestRing r2(RingGeometry{3, 64});
  r2.hdr()->producer_index = 8;  // exactly full is fine
  EXPECT_EQ(r2.cons.Peek(100), 8u);
  EXPECT_EQ(r2.cons.fault(), RingFault::kNone);
}

TEST(ShmRing, ProducerFaultsOnBadConsumerIndex) {
  {
    TestRing r(RingGeometry{3, 64});
    r.Push(8, 0);
    r.hdr()->consumer_index = 9;  // consumed more than was produced
    EXPECT_EQ(r.prod.Reserve(1), 0u);
    EXPECT_EQ(r.prod.fault(), RingFault::kIndexOverrun);
  }
  {
    TestRing r(RingGeometry{3, 64});
    std::vector<uint32_t> got;
    r.Push(8, 0);
    r.Pull(5, &got);
    EXPECT_EQ(r.Push(8, 8), 5u);  // producer has seen consumer index 5
    r.hdr()->consumer_index = 3;  // moved backwards
    EXPECT_EQ(r.prod.Reserve(1), 0u);
    EXPECT_EQ(r.prod.fault(), RingFault::kIndexBackwards);
  }
}

TEST(ShmRing, MarkRingErrorIsVisibleInTheHeader) {
  TestRing r(RingGeometry{3, 64});
  MarkRingError(r.mem.data(), 0, BURST_SHM_RING_ERR_INDEX_OVERRUN);
  EXPECT_EQ(r.hdr()->status, uint32_t{BURST_SHM_RING_ERROR});
  EXPECT_EQ(r.hdr()->error_reason, uint32_t{BURST_SHM_RING_ERR_INDEX_OVERRUN});
}

// Random garbage in the shared header (indices and geometry) and in the
// entries, interleaved with honest operations on both sides. Nothing may be
// read or written outside the exact-size buffer (ASan), a consumer never sees
// more than a ring's worth, faults are sticky, and decoded entries respect
// the private limits.
TEST(ShmRing, GarbageInSharedMemoryNeverEscapesTheRing) {
  std::mt19937_64 rng(12345);
  const WqeLimits limits{SendEntrySize(4, 64), 4, 64};
  for (int round = 0; round < 300; ++round) {
    const RingGeometry g{static_cast<uint32_t>(rng() % 7), limits.entry_size};
    TestRing r(g, static_cast<uint32_t>(rng()));
    std::vector<uint8_t> copy(g.entry_size);
    bool cons_faulted = false, prod_faulted = false;
    for (int step = 0; step < 200; ++step) {
      switch (rng() % 6) {
        case 0: {  // scribble on the header, any field
          const uint64_t off = rng() % sizeof(burst_shm_ring);
          r.mem.data()[off] = static_cast<uint8_t>(rng());
          break;
        }
        case 1:  // a plausible-looking but wrong index
          r.hdr()->producer_index = r.cons.index() + static_cast<uint32_t>(rng() % 64) - 32;
          break;
        case 2:
          r.hdr()->consumer_index = r.prod.index() + static_cast<uint32_t>(rng() % 64) - 32;
          break;
        case 3: {  // garbage entries
          const uint64_t off = kRingEntriesOffset + rng() % g.entry_bytes();
          r.mem.data()[off] = static_cast<uint8_t>(rng());
          break;
        }
        case 4: {
          const uint32_t n = r.prod.Reserve(1 + rng() % 8);
          for (uint32_t k = 0; k < n; ++k) std::memset(r.prod.Entry(k), 0x11, g.entry_size);
          r.prod.Publish(n);
          break;
        }
        default: {
          const uint32_t n = r.cons.Peek(1 + rng() % 16);
          ASSERT_LE(n, g.entries());
          for (uint32_t k = 0; k < n; ++k) {
            r.cons.CopyEntry(k, copy.data());
            DecodedSendWqe d;
            if (DecodeSendWqe(copy.data(), limits, &d).ok()) {
              ASSERT_LE(d.wr.num_sge, limits.max_sge);
              ASSERT_LE(d.inline_len, limits.max_inline);
            }
          }
          r.cons.Release(n);
          break;
        }
      }
      if (cons_faulted) {
        ASSERT_EQ(r.cons.Peek(1), 0u);
      }
      if (prod_faulted) {
        ASSERT_EQ(r.prod.Reserve(1), 0u);
      }
      cons_faulted = r.cons.fault() != RingFault::kNone;
      prod_faulted = r.prod.fault() != RingFault::kNone;
    }
  }
}

// Producer in a forked process, consumer here, through a memfd.
TEST(ShmRing, ProducerInAnotherProcess) {
  const RingSpec spec[] = {{BURST_SHM_RING_SQ, 1, RingGeometry{5, 64}, 1, 0}};
  RegionLayout layout;
  ASSERT_TRUE(LayoutRings(spec, &layout).ok());
  ShmRegion region;
  ASSERT_TRUE(ShmRegion::Create("burst-test-ring", layout.size, &region).ok());
  InitRingRegion(region.data(), layout, BURST_SHM_REGION_QP, 1, spec);
  constexpr uint32_t kCount = 200000;
  const int fd = region.fd();
  const pid_t child = testing::ForkChild([fd] {
    ShmRegion mine;
    if (!ShmRegion::Map(fd, &mine).ok()) return 2;
    RingGeometry g;
    if (!CheckRing(mine.data(), mine.size(), sizeof(burst_shm_region), BURST_SHM_RING_SQ, &g)) {
      return 3;
    }
    RingProducer p(mine.data(), sizeof(burst_shm_region), g);
    for (uint32_t v = 0; v < kCount;) {
      const uint32_t n = p.Reserve(kCount - v < 7 ? kCount - v : 7);
      for (uint32_t k = 0; k < n; ++k) {
        const uint32_t x = v + k;
        std::memcpy(p.Entry(k), &x, sizeof(x));
      }
      p.Publish(n);
      v += n;
      if (p.fault() != RingFault::kNone) return 4;
    }
    return 0;
  });
  ASSERT_GT(child, 0);
  RingConsumer c(region.data(), layout.part_offset[0], spec[0].geom);
  std::vector<uint8_t> copy(64);
  uint32_t expect = 0;
  const uint64_t deadline = testing::NowNs() + 30'000'000'000ull;
  while (expect < kCount && testing::NowNs() < deadline) {
    const uint32_t n = c.Peek(16);
    for (uint32_t k = 0; k < n; ++k) {
      c.CopyEntry(k, copy.data());
      uint32_t v;
      std::memcpy(&v, copy.data(), sizeof(v));
      ASSERT_EQ(v, expect) << "out of order";
      ++expect;
    }
    c.Release(n);
  }
  EXPECT_EQ(expect, kCount);
  EXPECT_EQ(c.fault(), RingFault::kNone);
  EXPECT_EQ(testing::WaitChild(child, std::chrono::seconds(30)), 0);
}

}  // namespace
}  // namespace burst::shm
