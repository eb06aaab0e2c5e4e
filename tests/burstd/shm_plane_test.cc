// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// ShmPlane against hostile shared memory: an application owns every byte of its
// rings and of the doorbell page, so each test writes what a broken or
// malicious one could and checks that only its QP suffers (error state, the
// right completion, IBV_EVENT_QP_FATAL) while the plane and the engine go on.
#include "daemon/burstd/shm_plane.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "core/copy/copy_engine.h"
#include "core/engine.h"
#include "core/mr.h"
#include "shm/layout.h"

namespace burst::burstd {
namespace {

constexpr uint32_t kIbvEventQpFatal = 1;

class ShmPlaneTest : public ::testing::Test {
 protected:
  void SetUp() override {
    engine_ = std::make_unique<core::Engine>(core::EngineConfig{}, mrs_, copier_);
    pd_ = mrs_.alloc_pd();
    ASSERT_NE(pd_, 0u);
    ASSERT_TRUE(engine_->create_cq(64, &shard_).ok());
    ASSERT_TRUE(ShmCq::Create(1, 64, 0xc0ffee, -1, &cq_).ok());
    ASSERT_EQ(pipe(async_pipe_), 0);
    async_ = std::make_shared<AsyncSink>(async_pipe_[1]);
    plane_.bind_cq(shard_, cq_.get());
    plane_.set_ah_table(&ahs_);
  }
  void TearDown() override { close(async_pipe_[0]); }

  // A QP in INIT with its region; returns the QPN.
  uint32_t make_qp(uint32_t client = 7) {
    core::QpInitAttr init;
    init.pd = pd_;
    init.send_cq = init.recv_cq = shard_;
    init.cap.max_send_wr = init.cap.max_recv_wr = 16;
    init.cap.max_send_sge = init.cap.max_recv_sge = 2;
    uint32_t qpn = 0;
    EXPECT_TRUE(engine_->create_qp(init, &qpn).ok());
    core::QpAttr a;
    a.qp_state = core::QpState::kInit;
    a.port_num = 1;
    EXPECT_TRUE(
        engine_->modify_qp(qpn, a, core::kQpState | core::kQpPort | core::kQpPkeyIndex |
                                       core::kQpAccessFlags)
            .ok());
    shm::RingSpec specs[2];
    specs[0].kind = BURST_SHM_RING_SQ;
    specs[0].max_sge = 2;
    specs[0].max_inline = 64;
    specs[0].geom.log2_entries = 4;
    specs[0].geom.entry_size = shm::SendEntrySize(2, 64);
    specs[1].kind = BURST_SHM_RING_RQ;
    specs[1].max_sge = 2;
    specs[1].geom.log2_entries = 4;
    specs[1].geom.entry_size = shm::RecvEntrySize(2);
    shm::RegionLayout layout;
    EXPECT_TRUE(shm::LayoutRings(specs, &layout).ok());
    EXPECT_TRUE(shm::ShmRegion::Create("test-qp", layout.size, &region_).ok());
    shm::InitRingRegion(region_.data(), layout, BURST_SHM_REGION_QP, qpn, specs);
    ShmQpBinding b;
    b.qpn = qpn;
    b.client = client;
    b.user_handle = 0xabcdef;
    b.region = region_.data();
    b.sq_offset = layout.part_offset[0];
    b.rq_offset = layout.part_offset[1];
    b.sq_geom = specs[0].geom;
    b.rq_geom = specs[1].geom;
    b.sq_limits = shm::WqeLimits{specs[0].geom.entry_size, 2, 64};
    b.rq_limits = shm::WqeLimits{specs[1].geom.entry_size, 2, 0};
    b.send_cq = b.recv_cq = cq_.get();
    b.async = async_;
    plane_.bind_qp(b);
    sq_ = shm::RingProducer(region_.data(), b.sq_offset, b.sq_geom);
    rq_ = shm::RingProducer(region_.data(), b.rq_offset, b.rq_geom);
    sq_off_ = b.sq_offset;
    rq_off_ = b.rq_offset;
    return qpn;
  }
  core::QpState state(uint32_t qpn) {
    core::QpAttr a;
    EXPECT_TRUE(engine_->query_qp(qpn, &a, nullptr).ok());
    return a.qp_state;
  }
  // Runs the plane until nothing more happens (the sweep finds the rings:
  // these tests ring no doorbell).
  void pump() {
    for (int i = 0; i < 4; ++i) {
      now_ += 2'000'000;
      plane_.poll(*engine_, now_);
      plane_.deliver(*engine_);
    }
  }
  std::vector<burst_shm_cqe> completions() {
    auto* r = reinterpret_cast<const burst_shm_region*>(cq_region());
    shm::RingGeometry g;
    EXPECT_TRUE(shm::CheckRing(cq_region(), cq_->size(), r->part_offset[0], BURST_SHM_RING_CQ, &g));
    shm::RingConsumer c(const_cast<uint8_t*>(cq_region()), r->part_offset[0], g, cq_seen_);
    std::vector<burst_shm_cqe> out;
    const uint32_t n = c.Peek(64);
    for (uint32_t i = 0; i < n; ++i) {
      burst_shm_cqe e;
      std::memcpy(&e, c.EntryInPlace(i), sizeof(e));
      out.push_back(e);
    }
    c.Release(n);
    cq_seen_ = c.index();
    return out;
  }
  const uint8_t* cq_region() {
    // The CQ's memfd, mapped again (as the application does).
    if (cq_map_.data() == nullptr) {
      EXPECT_TRUE(shm::ShmRegion::Map(cq_->fd(), &cq_map_).ok());
    }
    return cq_map_.data();
  }
  bool async_event(uint64_t* element, uint32_t* type) {
    uint8_t rec[16];
    if (read(async_pipe_[0], rec, 16) != 16) return false;
    std::memcpy(element, rec, 8);
    std::memcpy(type, rec + 8, 4);
    return true;
  }
  uint32_t ring_status(uint64_t off) {
    return reinterpret_cast<burst_shm_ring*>(region_.data() + off)->status;
  }

  core::MrTable mrs_;
  core::CopyEngine copier_;
  std::unique_ptr<core::Engine> engine_;
  uint32_t pd_ = 0, shard_ = 0;
  std::unique_ptr<ShmCq> cq_;
  shm::ShmRegion cq_map_;
  uint32_t cq_seen_ = 0;
  int async_pipe_[2] = {-1, -1};
  std::shared_ptr<AsyncSink> async_;
  AhTable ahs_;
  ShmPlane plane_;
  shm::ShmRegion region_;
  shm::RingProducer sq_, rq_;
  uint64_t sq_off_ = 0, rq_off_ = 0;
  uint64_t now_ = 1;
};

TEST_F(ShmPlaneTest, GoodReceivesArePosted) {
  const uint32_t qpn = make_qp();
  ASSERT_EQ(rq_.Reserve(2), 2u);
  for (uint32_t k = 0; k < 2; ++k) {
    burst_shm_recv_wqe w{};
    w.wr_id = 100 + k;
    w.num_sge = 0;
    std::memcpy(rq_.Entry(k), &w, sizeof(w));
  }
  rq_.Publish(2);
  pump();
  EXPECT_EQ(plane_.counters().recv_wqes, 2u);
  EXPECT_EQ(state(qpn), core::QpState::kInit);
  EXPECT_EQ(ring_status(rq_off_), uint32_t{BURST_SHM_RING_OK});
}

TEST_F(ShmPlaneTest, BadSendOpcodeErrorsOnlyThatQp) {
  const uint32_t bad = make_qp();
  shm::ShmRegion keep = std::move(region_);  // the first QP's rings stay mapped
  shm::RingProducer bad_sq = sq_;
  const uint64_t bad_sq_off = sq_off_;
  const uint32_t good = make_qp();

  ASSERT_EQ(bad_sq.Reserve(1), 1u);
  burst_shm_send_wqe w{};
  w.wr_id = 0x5151;
  w.opcode = 0xee;  // no such opcode
  std::memcpy(bad_sq.Entry(0), &w, sizeof(w));
  bad_sq.Publish(1);
  pump();

  EXPECT_EQ(plane_.counters().bad_wqes, 1u);
  EXPECT_EQ(state(bad), core::QpState::kErr);
  EXPECT_EQ(state(good), core::QpState::kInit);
  auto* hdr = reinterpret_cast<burst_shm_ring*>(keep.data() + bad_sq_off);
  EXPECT_EQ(hdr->status, uint32_t{BURST_SHM_RING_ERROR});
  EXPECT_EQ(hdr->error_reason, uint32_t{BURST_SHM_RING_ERR_BAD_ENTRY});
  const auto cqes = completions();
  ASSERT_FALSE(cqes.empty());
  EXPECT_EQ(cqes.back().wr_id, 0x5151u);
  EXPECT_EQ(cqes.back().status, static_cast<uint8_t>(core::WcStatus::kLocQpOpErr));
  uint64_t element = 0;
  uint32_t type = 0;
  ASSERT_TRUE(async_event(&element, &type));
  EXPECT_EQ(element, 0xabcdefu);
  EXPECT_EQ(type, kIbvEventQpFatal);

  // The other QP still takes work.
  ASSERT_EQ(rq_.Reserve(1), 1u);
  burst_shm_recv_wqe r{};
  r.wr_id = 9;
  std::memcpy(rq_.Entry(0), &r, sizeof(r));
  rq_.Publish(1);
  pump();
  EXPECT_EQ(plane_.counters().recv_wqes, 1u);
  EXPECT_EQ(state(good), core::QpState::kInit);
}

TEST_F(ShmPlaneTest, TooManySgesAndForeignAddressHandlesAreBadEntries) {
  const uint32_t qpn = make_qp(/*client=*/7);
  ASSERT_EQ(rq_.Reserve(1), 1u);
  burst_shm_recv_wqe r{};
  r.wr_id = 1;
  r.num_sge = 1000;  // more than the entry holds
  std::memcpy(rq_.Entry(0), &r, sizeof(r));
  rq_.Publish(1);
  pump();
  EXPECT_EQ(state(qpn), core::QpState::kErr);
  EXPECT_EQ(plane_.counters().bad_wqes, 1u);

  // A UD-style send naming an address handle of client 8 from client 7's QP.
  const uint32_t h = ahs_.add(8, core::Address{});
  ASSERT_NE(h, 0u);
  core::Address got;
  EXPECT_FALSE(ahs_.get(h, 7, &got));
  EXPECT_TRUE(ahs_.get(h, 8, &got));
  ahs_.remove(h);
  EXPECT_FALSE(ahs_.get(h, 8, &got));
}

TEST_F(ShmPlaneTest, ProducerIndexOverrunFaultsTheRing) {
  const uint32_t qpn = make_qp();
  auto* hdr = reinterpret_cast<burst_shm_ring*>(region_.data() + sq_off_);
  hdr->producer_index = 16 + 5;  // past the ring's 16 entries
  pump();
  EXPECT_EQ(plane_.counters().ring_faults, 1u);
  EXPECT_EQ(state(qpn), core::QpState::kErr);
  EXPECT_EQ(hdr->status, uint32_t{BURST_SHM_RING_ERROR});
  // Garbage afterwards is never read again.
  hdr->producer_index = 0xdeadbeef;
  pump();
  EXPECT_EQ(plane_.counters().ring_faults, 1u);
}

}  // namespace
}  // namespace burst::burstd
