// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Doorbell queue, single thread, with the consumer's clock under test
// control: ordering, full/empty, reclaim of a reservation after (and not
// before) the timeout, late commits after a reclaim, a lap collision, and
// recovery from garbage in the shared head and slots (exact-size heap buffer
// so that ASan sees any stray access).
#include "shm/doorbell.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "shm/layout.h"
#include "shm_test_util.h"

namespace burst::shm {
namespace {

constexpr uint64_t kTimeout = 1000;  // fake nanoseconds

struct TestQueue {
  explicit TestQueue(uint32_t log2_slots)
      : log2(log2_slots),
        mem(DoorbellBytes(log2_slots)),
        prod(hdr(), log2_slots),
        cons(hdr(), log2_slots, kTimeout) {}
  burst_shm_doorbell* hdr() { return reinterpret_cast<burst_shm_doorbell*>(mem.data()); }
  uint64_t* slots() { return reinterpret_cast<uint64_t*>(mem.data() + kDoorbellSlotsOffset); }
  std::vector<DoorbellRecord> PollAll(uint64_t now, uint32_t max = 64) {
    std::vector<DoorbellRecord> out(max);
    out.resize(cons.Poll(out.data(), max, now));
    return out;
  }

  uint32_t log2;
  testing::HeapRegion mem;
  DoorbellProducer prod;
  DoorbellConsumer cons;
};

DoorbellRecord Rec(uint32_t handle, uint16_t value, uint8_t kind = BURST_SHM_DB_SQ) {
  DoorbellRecord r;
  r.handle = handle;
  r.kind = kind;
  r.value = value;
  return r;
}

TEST(ShmDoorbell, SlotWordEncoding) {
  DoorbellRecord r{0xabcdef, BURST_SHM_DB_CQ_ARM, BURST_SHM_DB_FLAG_SOLICITED, 0x1234};
  const uint64_t w = db::Committed(0x2345, r);
  EXPECT_EQ(db::StateOf(w), uint32_t{BURST_SHM_DB_COMMITTED});
  EXPECT_EQ(db::LapOf(w), 0x2345u);
  EXPECT_EQ(db::RecordOf(w), r);
  EXPECT_EQ(db::Lap(uint64_t{5} << 10 | 7, 10), 5u);
  EXPECT_EQ(db::Lap(uint64_t{1} << (10 + BURST_SHM_DB_LAP_BITS), 10), 0u) << "lap wraps at 14 bits";
  EXPECT_EQ(db::Word(BURST_SHM_DB_FREE, 0), 0u) << "a zeroed slot is FREE at lap 0";
}

TEST(ShmDoorbell, InOrderAcrossManyLaps) {
  TestQueue q(3);  // 8 slots
  std::mt19937 rng(7);
  uint32_t posted = 0, received = 0;
  while (received < 5000) {
    const uint32_t burst = rng() % 10;
    for (uint32_t i = 0; i < burst && posted < 5000; ++i) {
      const PostResult r = q.prod.Post(Rec(posted % 1000, static_cast<uint16_t>(posted)));
      if (r == PostResult::kFull) break;
      ASSERT_EQ(r, PostResult::kOk);
      ++posted;
    }
    for (const DoorbellRecord& r : q.PollAll(0, 1 + rng() % 8)) {
      ASSERT_EQ(r, Rec(received % 1000, static_cast<uint16_t>(received)));
      ++received;
    }
  }
  EXPECT_EQ(q.cons.stats().delivered, 5000u);
  EXPECT_EQ(q.hdr()->tail, 5000u) << "tail published for diagnostics";
  EXPECT_EQ(q.cons.stats().reclaimed, 0u);
}

TEST(ShmDoorbell, FullThenDrain) {
  TestQueue q(2);  // 4 slots
  for (uint16_t i = 0; i < 4; ++i) ASSERT_EQ(q.prod.Post(Rec(1, i)), PostResult::kOk);
  EXPECT_EQ(q.prod.Post(Rec(1, 4)), PostResult::kFull);
  EXPECT_EQ(q.PollAll(0, 3).size(), 3u);
  for (uint16_t i = 4; i < 7; ++i) ASSERT_EQ(q.prod.Post(Rec(1, i)), PostResult::kOk);
  EXPECT_EQ(q.prod.Post(Rec(1, 7)), PostResult::kFull);
  const auto got = q.PollAll(0);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].value, 3);
  EXPECT_EQ(got[3].value, 6);
  EXPECT_TRUE(q.PollAll(0).empty());
}

TEST(ShmDoorbell, RecordsThatDoNotFitAreRefusedBeforeReserving) {
  TestQueue q(2);
  EXPECT_EQ(q.prod.Post(Rec(1u << 24, 0)), PostResult::kInvalid);
  EXPECT_EQ(q.prod.Post(Rec(1, 0, BURST_SHM_DB_NONE)), PostResult::kInvalid);
  EXPECT_EQ(q.prod.Post(Rec(1, 0, BURST_SHM_DB_KIND_MAX + 1)), PostResult::kInvalid);
  DoorbellRecord flags = Rec(1, 0);
  flags.flags = 16;
  EXPECT_EQ(q.prod.Post(flags), PostResult::kInvalid);
  EXPECT_EQ(q.hdr()->head, 0u);
  EXPECT_EQ(q.slots()[0], 0u);
}

// A committed word with an out-of-range kind (only a hostile writer makes
// one) is consumed and counted, not delivered.
TEST(ShmDoorbell, CommittedGarbageKindIsDropped) {
  TestQueue q(2);
  q.slots()[0] = db::Word(BURST_SHM_DB_COMMITTED, 0) | (uint64_t{9} << BURST_SHM_DB_KIND_SHIFT);
  q.hdr()->head = 1;
  ASSERT_EQ(q.prod.Post(Rec(5, 5)), PostResult::kOk);
  const auto got = q.PollAll(0);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], Rec(5, 5));
  EXPECT_EQ(q.cons.stats().invalid, 1u);
}

TEST(ShmDoorbell, ReservationBlocksUntilTheTimeoutThenIsReclaimed) {
  TestQueue q(3);
  ASSERT_EQ(q.prod.Post(Rec(1, 0)), PostResult::kOk);
  DoorbellProducer::Reservation dead;
  ASSERT_EQ(q.prod.Reserve(&dead), PostResult::kOk);  // never committed
  EXPECT_EQ(dead.position, 1u);
  for (uint16_t i = 1; i <= 3; ++i) ASSERT_EQ(q.prod.Post(Rec(2, i)), PostResult::kOk);

  auto got = q.PollAll(100);
  ASSERT_EQ(got.size(), 1u) << "delivers up to the reservation";
  EXPECT_TRUE(q.PollAll(100 + kTimeout - 1).empty()) << "not before the timeout";
  got = q.PollAll(100 + kTimeout);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0], Rec(2, 1));
  EXPECT_EQ(got[2], Rec(2, 3));
  EXPECT_EQ(q.cons.stats().reclaimed, 1u);
  EXPECT_EQ(q.hdr()->reclaimed, 1u);

  // The slow producer commits after all: it is told, and nothing arrives.
  EXPECT_EQ(q.prod.Commit(dead, Rec(9, 9)), PostResult::kStale);
  EXPECT_TRUE(q.PollAll(1'000'000).empty());
  // No capacity was lost: all 8 slots take records again.
  for (uint16_t i = 0; i < 8; ++i) ASSERT_EQ(q.prod.Post(Rec(3, i)), PostResult::kOk);
  EXPECT_EQ(q.prod.Post(Rec(3, 8)), PostResult::kFull);
  EXPECT_EQ(q.PollAll(2'000'000).size(), 8u);
}

TEST(ShmDoorbell, CommitBeforeTheTimeoutIsDelivered) {
  TestQueue q(3);
  DoorbellProducer::Reservation r;
  ASSERT_EQ(q.prod.Reserve(&r), PostResult::kOk);
  ASSERT_EQ(q.prod.Post(Rec(2, 1)), PostResult::kOk);
  EXPECT_TRUE(q.PollAll(0).empty());  // the timer starts
  ASSERT_EQ(q.prod.Commit(r, Rec(1, 0)), PostResult::kOk);
  const auto got = q.PollAll(kTimeout - 1);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], Rec(1, 0));
  EXPECT_EQ(got[1], Rec(2, 1));
  EXPECT_EQ(q.cons.stats().reclaimed, 0u);
}

// The timer belongs to a position: a later stuck position gets a full timeout
// of its own, however long the one before it waited.
TEST(ShmDoorbell, EachStuckPositionGetsItsOwnTimeout) {
  TestQueue q(3);
  DoorbellProducer::Reservation a, b;
  ASSERT_EQ(q.prod.Reserve(&a), PostResult::kOk);
  EXPECT_TRUE(q.PollAll(0).empty());
  ASSERT_EQ(q.prod.Reserve(&b), PostResult::kOk);
  EXPECT_TRUE(q.PollAll(kTimeout).empty());  // a reclaimed; b seen for the first time
  EXPECT_EQ(q.cons.stats().reclaimed, 1u);
  ASSERT_EQ(q.prod.Commit(b, Rec(4, 4)), PostResult::kOk);
  const auto got = q.PollAll(kTimeout + 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], Rec(4, 4));
  EXPECT_EQ(q.prod.Commit(a, Rec(3, 3)), PostResult::kStale);
}

// The reclaimed slot has been handed to a new producer before the slow one
// commits: the late commit must not touch it.
TEST(ShmDoorbell, LateCommitAfterTheSlotWasReused) {
  TestQueue q(2);  // 4 slots
  DoorbellProducer::Reservation slow;
  ASSERT_EQ(q.prod.Reserve(&slow), PostResult::kOk);  // position 0, slot 0
  EXPECT_TRUE(q.PollAll(0).empty());
  EXPECT_TRUE(q.PollAll(kTimeout).empty());  // reclaimed
  for (uint16_t i = 1; i <= 3; ++i) ASSERT_EQ(q.prod.Post(Rec(1, i)), PostResult::kOk);
  DoorbellProducer::Reservation reuse;
  ASSERT_EQ(q.prod.Reserve(&reuse), PostResult::kOk);
  EXPECT_EQ(reuse.position, 4u);  // slot 0 again, next lap
  EXPECT_EQ(q.prod.Commit(slow, Rec(9, 9)), PostResult::kStale);
  ASSERT_EQ(q.prod.Commit(reuse, Rec(1, 4)), PostResult::kOk);
  const auto got = q.PollAll(kTimeout);
  ASSERT_EQ(got.size(), 4u);
  for (uint16_t i = 0; i < 4; ++i) EXPECT_EQ(got[i], Rec(1, i + 1));
}

// A producer stalled for 2^14 laps finds its slot reserved again at the same
// lap tag. Its commit then lands in that reservation: the record is delivered
// once, and the owner of the reservation is told kStale and posts again, so
// nothing is lost or duplicated.
TEST(ShmDoorbell, LapCollisionLosesAndDuplicatesNothing) {
  TestQueue q(0);  // one slot: every position is a new lap
  DoorbellProducer::Reservation slow;
  ASSERT_EQ(q.prod.Reserve(&slow), PostResult::kOk);
  EXPECT_TRUE(q.PollAll(0).empty());
  EXPECT_TRUE(q.PollAll(kTimeout).empty());
  ASSERT_EQ(q.cons.stats().reclaimed, 1u);
  for (uint32_t i = 1; i < (1u << BURST_SHM_DB_LAP_BITS); ++i) {
    ASSERT_EQ(q.prod.Post(Rec(1, static_cast<uint16_t>(i))), PostResult::kOk);
    ASSERT_EQ(q.PollAll(kTimeout, 1).size(), 1u);
  }
  DoorbellProducer::Reservation owner;
  ASSERT_EQ(q.prod.Reserve(&owner), PostResult::kOk);
  ASSERT_EQ(owner.position, uint64_t{1} << BURST_SHM_DB_LAP_BITS);
  EXPECT_EQ(q.prod.Commit(slow, Rec(9, 9)), PostResult::kOk);
  EXPECT_EQ(q.prod.Commit(owner, Rec(2, 2)), PostResult::kStale);
  auto got = q.PollAll(kTimeout);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], Rec(9, 9));
  ASSERT_EQ(q.prod.Post(Rec(2, 2)), PostResult::kOk);  // the owner posts again
  got = q.PollAll(kTimeout);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], Rec(2, 2));
}

TEST(ShmDoorbell, CorruptedHeadIsRepairedAndProducersStayBounded) {
  for (const uint64_t bad : {uint64_t{1} << 40, ~uint64_t{0}, uint64_t{3}, uint64_t{100}}) {
    TestQueue q(4);  // 16 slots
    for (uint16_t i = 0; i < 5; ++i) ASSERT_EQ(q.prod.Post(Rec(1, i)), PostResult::kOk);
    ASSERT_EQ(q.PollAll(0).size(), 5u);
    q.hdr()->head = bad;
    // Whatever the head says, a post returns (bounded attempts).
    const PostResult r = q.prod.Post(Rec(1, 5));
    const bool posted = r == PostResult::kOk;
    EXPECT_TRUE(posted || r == PostResult::kBusy || r == PostResult::kFull) << bad;
    // The consumer puts the head back in its window (or skips the holes
    // below a head that points into it) and posts get through again.
    uint64_t now = 1;
    std::vector<DoorbellRecord> got;
    for (int round = 0; round < 20 && got.size() < 3; ++round, now += kTimeout) {
      q.prod.Post(Rec(2, static_cast<uint16_t>(round)));
      for (const auto& rec : q.PollAll(now)) got.push_back(rec);
    }
    EXPECT_GE(got.size(), 3u) << "head " << bad;
  }
}

// head points a few positions beyond the consumer while those slots are free
// (only corruption does that). Posts land beyond the holes; the consumer skips
// the whole run of holes after one timeout.
TEST(ShmDoorbell, HolesBelowHeadAreSkippedAfterOneTimeout) {
  TestQueue q(4);
  q.hdr()->head = 3;
  ASSERT_EQ(q.prod.Post(Rec(1, 1)), PostResult::kOk);
  ASSERT_EQ(q.prod.Post(Rec(1, 2)), PostResult::kOk);
  EXPECT_TRUE(q.PollAll(0).empty());
  EXPECT_TRUE(q.PollAll(kTimeout - 1).empty());
  const auto got = q.PollAll(kTimeout);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], Rec(1, 1));
  EXPECT_EQ(got[1], Rec(1, 2));
  EXPECT_EQ(q.cons.stats().corrupt, 3u);
  EXPECT_EQ(q.cons.stats().reclaimed, 0u);
}

// Garbage written into the head and any slot, interleaved with honest posts
// and polls. Everything stays inside the buffer (ASan), every call returns,
// the consumer never hands out a record of an invalid kind, and once the
// garbage stops, honest records flow again, in order and exactly once.
TEST(ShmDoorbell, GarbageInSlotsAndHeadIsSurvivable) {
  std::mt19937_64 rng(4242);
  for (int round = 0; round < 100; ++round) {
    TestQueue q(static_cast<uint32_t>(rng() % 6));
    uint64_t now = 0;
    std::vector<DoorbellRecord> out(32);
    for (int step = 0; step < 400; ++step) {
      now += rng() % (kTimeout / 2);
      switch (rng() % 4) {
        case 0:
          q.slots()[rng() % q.cons.capacity()] =
              rng() % 3 == 0 ? rng() : rng() & ~(uint64_t{3} << 62);
          break;
        case 1:
          q.hdr()->head = rng() % 2 ? rng() : q.cons.tail() + rng() % 40 - 20;
          break;
        case 2:
          q.prod.Post(Rec(1, static_cast<uint16_t>(step)));
          break;
        default: {
          const uint32_t n = q.cons.Poll(out.data(), 32, now);
          for (uint32_t i = 0; i < n; ++i) {
            ASSERT_NE(out[i].kind, BURST_SHM_DB_NONE);
            ASSERT_LE(out[i].kind, BURST_SHM_DB_KIND_MAX);
          }
        }
      }
    }
    // The garbage stops. Left alone, the consumer skips what is left of it
    // (one timeout per stuck position at most) and puts head back in place.
    std::vector<DoorbellRecord> drain(q.cons.capacity() + 32);
    bool settled = false;
    for (int i = 0; i < 200 && !settled; ++i) {
      now += kTimeout;
      const uint32_t n = q.cons.Poll(drain.data(), static_cast<uint32_t>(drain.size()), now);
      const uint64_t ahead = q.hdr()->head - q.cons.tail();
      settled = n == 0 && (ahead == 0 || ahead == ~uint64_t{0});
    }
    ASSERT_TRUE(settled) << "round " << round;
    // Then honest records get through, in order, exactly once.
    constexpr uint32_t kTag = 0xabcde;
    uint16_t next_post = 0, next_got = 0;
    for (int i = 0; i < 4000 && next_got < 50; ++i) {
      now += kTimeout / 4;
      if (next_post < 50) {
        const PostResult r = q.prod.Post(Rec(kTag, next_post));
        if (r == PostResult::kOk) ++next_post;
      }
      const uint32_t n = q.cons.Poll(out.data(), 32, now);
      for (uint32_t k = 0; k < n; ++k) {
        if (out[k].handle != kTag) continue;  // garbage that looked committed
        ASSERT_EQ(out[k].value, next_got) << "round " << round;
        ++next_got;
      }
    }
    ASSERT_EQ(next_got, 50) << "round " << round << " did not recover";
  }
}

}  // namespace
}  // namespace burst::shm
