// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// ShmCq, the application's CQ ring as burstd produces into it:
//   - arming (abi/burst_shm_abi.h arm_sequence: all requests in the low half,
//     solicited-only ones in the high half): a solicited-only arm is answered
//     by a solicited or unsuccessful completion only, a "next" arm by any, and
//     "next" wins when both were asked; one event per arm;
//   - Resize: the completions the application has not polled are kept, in
//     order, EINVAL below their number; the arm word goes along; and, with a
//     worker thread pushing all along, none is lost or duplicated across many
//     resizes (the application polls between resizes, never during one).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "daemon/burstd/shm_plane.h"
#include "shm/geometry.h"

namespace burst::burstd {
namespace {

// The application's side: the CQ region mapped, its ring consumed, arm
// requests written as the provider writes them.
class AppCq {
 public:
  explicit AppCq(const ShmCq& cq) { remap(cq); }
  void remap(const ShmCq& cq) {
    map_ = shm::ShmRegion();
    ASSERT_TRUE(shm::ShmRegion::Map(cq.fd(), &map_).ok());
    const auto* r = reinterpret_cast<const burst_shm_region*>(map_.data());
    shm::RingGeometry g;
    ASSERT_TRUE(shm::CheckRing(map_.data(), map_.size(), r->part_offset[0], BURST_SHM_RING_CQ, &g));
    hdr_ = reinterpret_cast<burst_shm_ring*>(map_.data() + r->part_offset[0]);
    ring_ = shm::RingConsumer(map_.data(), r->part_offset[0], g);
    capacity_ = g.entries();
  }
  std::vector<uint64_t> poll(uint32_t max = 1u << 16) {
    std::vector<uint64_t> ids;
    const uint32_t n = ring_.Peek(max);
    for (uint32_t i = 0; i < n; ++i) {
      burst_shm_cqe c;
      std::memcpy(&c, ring_.EntryInPlace(i), sizeof(c));
      ids.push_back(c.wr_id);
    }
    ring_.Release(n);
    return ids;
  }
  void arm(bool solicited_only) {
    const uint32_t w = hdr_->arm_sequence;
    const uint32_t add = solicited_only ? 1u << BURST_SHM_ARM_SOLICITED_SHIFT : 0;
    hdr_->arm_sequence = ((w + add) & ~BURST_SHM_ARM_ALL_MASK) | ((w + 1) & BURST_SHM_ARM_ALL_MASK);
  }
  uint32_t capacity() const { return capacity_; }

 private:
  shm::ShmRegion map_;
  burst_shm_ring* hdr_ = nullptr;
  shm::RingConsumer ring_;
  uint32_t capacity_ = 0;
};

core::Wc wc(uint64_t id, bool solicited = false, core::WcStatus status = core::WcStatus::kSuccess) {
  core::Wc w;
  w.wr_id = id;
  w.opcode = core::WcOpcode::kRecv;
  w.status = status;
  w.solicited = solicited;
  return w;
}

class ShmCqTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv_), 0);
    ASSERT_TRUE(ShmCq::Create(3, 64, 0x5eed, sv_[1], &cq_).ok());  // adopts sv_[1]
  }
  void TearDown() override { close(sv_[0]); }
  // Events waiting in the channel (each is the CQ's user handle).
  int events() {
    int n = 0;
    uint64_t h = 0;
    while (recv(sv_[0], &h, sizeof(h), MSG_DONTWAIT) == sizeof(h)) {
      EXPECT_EQ(h, 0x5eedu);
      ++n;
    }
    return n;
  }
  int sv_[2] = {-1, -1};
  std::unique_ptr<ShmCq> cq_;
};

TEST_F(ShmCqTest, SolicitedOnlyArmIgnoresOrdinaryCompletions) {
  AppCq app(*cq_);
  app.arm(true);
  ASSERT_TRUE(cq_->push(wc(1)));
  ASSERT_TRUE(cq_->push(wc(2)));
  EXPECT_EQ(events(), 0);
  ASSERT_TRUE(cq_->push(wc(3, true)));
  EXPECT_EQ(events(), 1);
  ASSERT_TRUE(cq_->push(wc(4, true)));  // answered: no arm left
  EXPECT_EQ(events(), 0);
  EXPECT_EQ(app.poll(), (std::vector<uint64_t>{1, 2, 3, 4}));
}

TEST_F(ShmCqTest, SolicitedOnlyArmAnsweredByAnError) {
  AppCq app(*cq_);
  app.arm(true);
  ASSERT_TRUE(cq_->push(wc(1)));
  EXPECT_EQ(events(), 0);
  ASSERT_TRUE(cq_->push(wc(2, false, core::WcStatus::kLocProtErr)));
  EXPECT_EQ(events(), 1);
}

TEST_F(ShmCqTest, NextWinsOverSolicitedInEitherOrder) {
  AppCq app(*cq_);
  app.arm(true);
  app.arm(false);
  ASSERT_TRUE(cq_->push(wc(1)));
  EXPECT_EQ(events(), 1);
  app.arm(false);
  app.arm(true);
  ASSERT_TRUE(cq_->push(wc(2)));
  EXPECT_EQ(events(), 1);
  // One event answers every request seen: nothing pending now.
  ASSERT_TRUE(cq_->push(wc(3, true)));
  EXPECT_EQ(events(), 0);
  // A plain arm, as before.
  app.arm(false);
  ASSERT_TRUE(cq_->push(wc(4)));
  EXPECT_EQ(events(), 1);
}

TEST_F(ShmCqTest, ResizeKeepsUnpolledCompletionsInOrder) {
  AppCq app(*cq_);
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(cq_->push(wc(i)));
  EXPECT_EQ(app.poll(3), (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(cq_->Resize(6).errc(), core::Errc::kInvalid);  // 7 held
  EXPECT_EQ(app.poll(1), (std::vector<uint64_t>{3}));      // the old ring still works
  ASSERT_TRUE(cq_->Resize(6).ok());
  app.remap(*cq_);
  EXPECT_GE(app.capacity(), 6u);
  EXPECT_EQ(cq_->entries(), app.capacity());
  ASSERT_TRUE(cq_->push(wc(10)));
  ASSERT_TRUE(cq_->Resize(1000).ok());
  app.remap(*cq_);
  EXPECT_EQ(app.capacity(), 1024u);
  ASSERT_TRUE(cq_->push(wc(11)));
  EXPECT_EQ(app.poll(), (std::vector<uint64_t>{4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(cq_->Resize(0).errc(), core::Errc::kInvalid);
  EXPECT_EQ(cq_->Resize(1u << 20).errc(), core::Errc::kInvalid);
}

TEST_F(ShmCqTest, ArmSurvivesResize) {
  AppCq app(*cq_);
  app.arm(true);
  ASSERT_TRUE(cq_->push(wc(1)));
  ASSERT_TRUE(cq_->Resize(8).ok());
  app.remap(*cq_);
  ASSERT_TRUE(cq_->push(wc(2)));
  EXPECT_EQ(events(), 0);
  ASSERT_TRUE(cq_->push(wc(3, true)));
  EXPECT_EQ(events(), 1);
  app.arm(false);
  ASSERT_TRUE(cq_->Resize(200).ok());
  app.remap(*cq_);
  ASSERT_TRUE(cq_->push(wc(4)));
  EXPECT_EQ(events(), 1);
  EXPECT_EQ(app.poll(), (std::vector<uint64_t>{1, 2, 3, 4}));
}

// A worker pushes 200000 completions (retrying when the ring is full) while the
// application polls and resizes between 4 and 4096 entries: every completion
// arrives once, in order.
TEST_F(ShmCqTest, NothingLostWhileAWorkerDeliversDuringResizes) {
  constexpr uint64_t kTotal = 200000;
  std::atomic<bool> stop{false};
  std::thread worker([&] {
    for (uint64_t i = 0; i < kTotal && !stop.load(std::memory_order_relaxed);) {
      if (cq_->push(wc(i))) ++i;
    }
  });
  AppCq app(*cq_);
  uint64_t next = 0;
  uint32_t resizes = 0, refused = 0;
  const uint32_t sizes[] = {4, 4096, 17, 300, 8, 2048, 64};
  for (uint32_t round = 0; next < kTotal && round < 10'000'000; ++round) {
    for (uint64_t id : app.poll(round % 5 == 0 ? 1 : 64)) {
      ASSERT_EQ(id, next) << "after " << resizes << " resizes";
      ++next;
    }
    if (round % 50 == 0) {
      const core::Status s = cq_->Resize(sizes[(round / 50) % std::size(sizes)]);
      if (s.ok()) {
        app.remap(*cq_);
        ++resizes;
      } else {
        ASSERT_EQ(s.errc(), core::Errc::kInvalid);  // more held than the size asked
        ++refused;
      }
    }
  }
  stop.store(true);
  worker.join();
  EXPECT_EQ(next, kTotal);
  EXPECT_GT(resizes, 10u);
  std::printf("%u resizes, %u refused (more completions held than asked for)\n", resizes, refused);
}

}  // namespace
}  // namespace burst::burstd
