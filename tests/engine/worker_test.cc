// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Worker<Backend> with several workers on one port: frames that arrive on one
// worker's queue for a QP of another worker are handed over through the SPSC
// rings and processed by the owner; QPNs of the engines never collide. A
// multicast datagram (DQPN 0xFFFFFF) is processed where it arrived and copied
// to each worker the Handoff lists as a multicast member, and to no other.
#include "core/worker.h"

#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/engine.h"
#include "core/mr.h"
#include "core/spsc_ring.h"
#include "core/wire/frame.h"
#include "core/wire/opcode.h"

namespace burst::test {
namespace {

// A queue that receives what the test injects and records what is sent.
struct FakeQueue {
  static constexpr uint32_t kMaxBurst = 8;
  std::deque<std::vector<uint8_t>> inbox;
  std::vector<std::vector<uint8_t>> sent;
  std::vector<std::vector<uint8_t>> held;  // frames handed out by rx_burst
  std::vector<uint8_t> tx_store = std::vector<uint8_t>(kMaxBurst * 2048);

  uint32_t rx_burst(datapath::Frame* f, uint32_t n) {
    uint32_t k = 0;
    held.clear();
    while (k < n && !inbox.empty()) {
      held.push_back(std::move(inbox.front()));
      inbox.pop_front();
      ++k;
    }
    for (uint32_t i = 0; i < k; ++i)
      f[i] = {held[i].data(), static_cast<uint32_t>(held[i].size()),
              static_cast<uint32_t>(held[i].size()), i};
    return k;
  }
  void rx_release(datapath::Frame*, uint32_t) {}
  uint32_t tx_alloc(datapath::Frame* f, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) f[i] = {tx_store.data() + i * 2048, 0, 2048, i};
    return n;
  }
  uint32_t tx_burst(datapath::Frame* f, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) sent.emplace_back(f[i].data, f[i].data + f[i].len);
    return n;
  }
  void tx_free(datapath::Frame*, uint32_t) {}
  void flush() {}
  void refill() {}
  uint32_t mtu() const { return 1514; }
  uint32_t headroom() const { return 0; }
  uint32_t queue_count() const { return 2; }
  bool zero_copy() const { return false; }
};
static_assert(datapath::Backend<FakeQueue>);

TEST(SpscFrameRing, FifoAndFull) {
  core::SpscFrameRing r(4, 16);
  EXPECT_EQ(r.capacity(), 4u);
  uint8_t b[32] = {};
  for (uint8_t i = 0; i < 4; ++i) {
    b[0] = i;
    EXPECT_TRUE(r.push(b, 1 + i));
  }
  EXPECT_FALSE(r.push(b, 1)) << "full";
  EXPECT_FALSE(core::SpscFrameRing(4, 16).push(b, 17)) << "too big for a slot";
  const uint8_t* p[8];
  uint32_t len[8];
  ASSERT_EQ(r.peek(p, len, 8), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(p[i][0], i);
    EXPECT_EQ(len[i], i + 1);
  }
  r.release(2);
  EXPECT_TRUE(r.push(b, 1));
  EXPECT_EQ(r.peek(p, len, 8), 3u);
}

struct Side {
  core::MrTable mrs{64, 8};
  core::CopyEngine copier;
  std::unique_ptr<core::Engine> engine;
  FakeQueue queue;
  uint32_t cq = 0;
};

core::EngineConfig config(uint32_t stride, uint32_t offset) {
  core::EngineConfig c;
  c.port.mac = {2, 0, 0, 0, 0, 1};
  c.port.gids = {{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1}};
  c.max_qps = 16;
  c.qpn_stride = stride;
  c.qpn_offset = offset;
  return c;
}

TEST(Worker, QpnsAreStripedAndPacketsReachTheirOwner) {
  constexpr uint32_t kWorkers = 3;
  Side side[kWorkers];
  core::Handoff handoff(kWorkers, 64, 2048);
  std::vector<std::unique_ptr<core::Worker<FakeQueue>>> workers;
  std::set<uint32_t> all;
  std::vector<std::vector<uint32_t>> qpns(kWorkers);
  for (uint32_t w = 0; w < kWorkers; ++w) {
    side[w].engine =
        std::make_unique<core::Engine>(config(kWorkers, w), side[w].mrs, side[w].copier);
    workers.push_back(
        std::make_unique<core::Worker<FakeQueue>>(*side[w].engine, side[w].queue, &handoff, w));
    ASSERT_TRUE(side[w].engine->create_cq(64, &side[w].cq).ok());
    for (int i = 0; i < 5; ++i) {
      core::QpInitAttr ia;
      ia.type = core::QpType::kUd;
      ia.pd = side[w].mrs.alloc_pd();
      ia.send_cq = ia.recv_cq = side[w].cq;
      uint32_t qpn;
      ASSERT_TRUE(side[w].engine->create_qp(ia, &qpn).ok());
      EXPECT_EQ((qpn - side[w].engine->config().first_qpn) % kWorkers, w);
      EXPECT_TRUE(all.insert(qpn).second) << "QPN " << qpn << " used twice";
      qpns[w].push_back(qpn);
      core::QpAttr a;
      a.qp_state = core::QpState::kInit;
      a.qkey = 7;
      a.port_num = 1;
      ASSERT_TRUE(
          side[w]
              .engine
              ->modify_qp(qpn, a,
                          core::kQpState | core::kQpPkeyIndex | core::kQpPort | core::kQpQkey)
              .ok());
      a.qp_state = core::QpState::kRtr;
      ASSERT_TRUE(side[w].engine->modify_qp(qpn, a, core::kQpState).ok());
    }
  }
  // Every frame arrives on worker 0's queue: UD sends to QPs of all workers.
  wire::PathHeaders path{};
  path.smac = {2, 0, 0, 0, 0, 2};
  path.dmac = {2, 0, 0, 0, 0, 1};
  path.sgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
  path.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
  path.hop_limit = 64;
  path.udp_sport = 0xC001;
  uint32_t sent_to[kWorkers] = {};
  for (uint32_t w = 0; w < kWorkers; ++w) {
    for (uint32_t qpn : qpns[w]) {
      std::vector<uint8_t> f(200);
      wire::FrameWriter fw(f.data(), static_cast<uint32_t>(f.size()), path, wire::op::kUdSendOnly,
                           16);
      ASSERT_TRUE(fw.ok());
      fw.bth().set_dest_qpn(qpn);
      fw.deth().set_qkey(7);
      fw.deth().set_src_qpn(0x99);
      f.resize(fw.finish());
      side[0].queue.inbox.push_back(f);
      ++sent_to[w];
    }
  }
  for (int round = 0; round < 10; ++round)
    for (uint32_t w = 0; w < kWorkers; ++w) workers[w]->poll_once(1000 + round);
  EXPECT_EQ(workers[0]->counters().handoff_out, sent_to[1] + sent_to[2]);
  EXPECT_EQ(workers[1]->counters().handoff_in, sent_to[1]);
  EXPECT_EQ(workers[2]->counters().handoff_in, sent_to[2]);
  for (uint32_t w = 0; w < kWorkers; ++w) {
    // Each engine saw exactly the frames for its own QPs (no receive WQE is
    // posted, so each is counted as a UD drop for lack of one, not as an
    // unknown QP).
    const auto& c = side[w].engine->counters();
    EXPECT_EQ(c.rx_packets, sent_to[w]) << "worker " << w;
    EXPECT_EQ(c.rx_drop[static_cast<size_t>(core::Drop::kUnknownQp)], 0u) << "worker " << w;
  }
}

TEST(Worker, MulticastCopiedToMemberWorkersOnly) {
  constexpr uint32_t kWorkers = 3;
  Side side[kWorkers];
  core::Handoff handoff(kWorkers, 64, 2048);
  std::vector<std::unique_ptr<core::Worker<FakeQueue>>> workers;
  const std::array<uint8_t, 16> group = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 239, 0, 0, 9};
  uint32_t qpn[kWorkers] = {};
  for (uint32_t w = 0; w < kWorkers; ++w) {
    side[w].engine =
        std::make_unique<core::Engine>(config(kWorkers, w), side[w].mrs, side[w].copier);
    workers.push_back(
        std::make_unique<core::Worker<FakeQueue>>(*side[w].engine, side[w].queue, &handoff, w));
    ASSERT_TRUE(side[w].engine->create_cq(64, &side[w].cq).ok());
    core::QpInitAttr ia;
    ia.type = core::QpType::kUd;
    ia.pd = side[w].mrs.alloc_pd();
    ia.send_cq = ia.recv_cq = side[w].cq;
    ASSERT_TRUE(side[w].engine->create_qp(ia, &qpn[w]).ok());
    core::QpAttr a;
    a.qp_state = core::QpState::kInit;
    a.qkey = 7;
    a.port_num = 1;
    ASSERT_TRUE(side[w]
                    .engine
                    ->modify_qp(qpn[w], a,
                                core::kQpState | core::kQpPkeyIndex | core::kQpPort | core::kQpQkey)
                    .ok());
    a.qp_state = core::QpState::kRtr;
    ASSERT_TRUE(side[w].engine->modify_qp(qpn[w], a, core::kQpState).ok());
  }
  // Workers 0 and 2 have a QP in the group; worker 1 has none.
  ASSERT_TRUE(side[0].engine->attach_mcast(qpn[0], group).ok());
  ASSERT_TRUE(side[2].engine->attach_mcast(qpn[2], group).ok());
  handoff.set_mcast_member(0, true);
  handoff.set_mcast_member(2, true);
  EXPECT_EQ(handoff.mcast_members(), 0b101u);
  wire::PathHeaders path{};
  path.smac = {2, 0, 0, 0, 0, 2};
  path.dmac = {0x01, 0x00, 0x5e, 0, 0, 9};
  path.sgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
  path.dgid = group;
  path.hop_limit = 64;
  path.udp_sport = 0xC001;
  std::vector<uint8_t> f(200);
  wire::FrameWriter fw(f.data(), static_cast<uint32_t>(f.size()), path, wire::op::kUdSendOnly, 16);
  ASSERT_TRUE(fw.ok());
  fw.bth().set_dest_qpn(wire::kMulticastQpn);
  fw.deth().set_qkey(7);
  fw.deth().set_src_qpn(0x99);
  f.resize(fw.finish());
  side[1].queue.inbox.push_back(f);  // arrives on worker 1, which has no member
  for (int round = 0; round < 5; ++round)
    for (uint32_t w = 0; w < kWorkers; ++w) workers[w]->poll_once(1000 + round);
  EXPECT_EQ(workers[1]->counters().handoff_out, 2u);
  EXPECT_EQ(workers[0]->counters().handoff_in, 1u);
  EXPECT_EQ(workers[2]->counters().handoff_in, 1u);
  // Worker 1 looked at it and found no member of the group; 0 and 2 reached
  // their QP (no receive WQE posted: a UD drop for lack of one).
  const auto drop = [&](uint32_t w, core::Drop d) {
    return side[w].engine->counters().rx_drop[static_cast<size_t>(d)];
  };
  EXPECT_EQ(drop(1, core::Drop::kMcastUnattached), 1u);
  EXPECT_EQ(drop(0, core::Drop::kUdNoRwqe), 1u);
  EXPECT_EQ(drop(2, core::Drop::kUdNoRwqe), 1u);
  // Worker 2 leaves: a second datagram on worker 1 is copied to worker 0 only.
  handoff.set_mcast_member(2, false);
  side[1].queue.inbox.push_back(f);
  for (int round = 0; round < 5; ++round)
    for (uint32_t w = 0; w < kWorkers; ++w) workers[w]->poll_once(2000 + round);
  EXPECT_EQ(workers[1]->counters().handoff_out, 3u);
  EXPECT_EQ(workers[2]->counters().handoff_in, 1u);
  EXPECT_EQ(drop(0, core::Drop::kUdNoRwqe), 2u);
}

}  // namespace
}  // namespace burst::test
