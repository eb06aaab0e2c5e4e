// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Shared receive queues at the handler level: the SRQ verbs (limits, rounding,
// errors), QPs attached to an SRQ (post_recv refused, references), RC requests
// crafted from a fake peer (node 1) into QPs of node 2 that share one SRQ (RNR
// NAK when it is empty, SEND / WRITE_WITH_IMM taking from it, a multi-packet
// SEND holding its WQE across an error), the limit and last-WQE events, UD QPs
// on an SRQ, and three real engines: two peers sending to QPs of one SRQ.
#include <gtest/gtest.h>

#include <map>

#include "tests/unit/transport/transport_test_util.h"

namespace burst::core::test {
namespace {

using namespace wire::op;  // NOLINT(build/namespaces)

constexpr uint32_t kEpsn = 0x200;
constexpr uint32_t kQkey = 0x5151;

uint32_t create_qp_on(Node& n, uint32_t srq, QpType type = QpType::kRc, QpCap cap = {}) {
  QpInitAttr init;
  init.type = type;
  init.pd = n.pd;
  init.send_cq = n.cq;
  init.recv_cq = n.cq;
  init.cap = cap;
  init.sq_sig_all = true;
  init.srq = srq;
  uint32_t qpn = 0;
  EXPECT_TRUE(n.eng.create_qp(init, &qpn).ok());
  return qpn;
}

uint32_t make_srq(Engine& e, uint32_t max_wr = 64, uint32_t max_sge = 4, uint32_t limit = 0) {
  SrqAttr a;
  a.max_wr = max_wr;
  a.max_sge = max_sge;
  a.srq_limit = limit;
  uint32_t id = 0;
  EXPECT_TRUE(e.create_srq(a, &id).ok());
  return id;
}

std::vector<uint32_t> limit_events(Engine& e) {
  std::vector<uint32_t> v;
  uint32_t id;
  while (e.take_srq_limit_event(&id)) v.push_back(id);
  return v;
}

std::vector<uint32_t> last_wqe_events(Engine& e) {
  std::vector<uint32_t> v;
  uint32_t qpn;
  while (e.take_last_wqe_event(&qpn)) v.push_back(qpn);
  return v;
}

// ---------------------------------------------------------------------------
// Verbs

TEST(SrqVerbs, CreateRoundsUpAndRejectsBeyondLimits) {
  Node n{2};
  SrqAttr a;
  uint32_t id = 0;
  a.max_wr = 0;
  a.max_sge = 1;
  EXPECT_EQ(n.eng.create_srq(a, &id).errc(), Errc::kInvalid);
  a.max_wr = kMaxQpWr + 1;
  EXPECT_EQ(n.eng.create_srq(a, &id).errc(), Errc::kInvalid);
  a.max_wr = 10;
  a.max_sge = kMaxSge + 1;
  EXPECT_EQ(n.eng.create_srq(a, &id).errc(), Errc::kInvalid);
  a.max_sge = 1;
  a.srq_limit = 17;  // above the rounded max_wr (16)
  EXPECT_EQ(n.eng.create_srq(a, &id).errc(), Errc::kInvalid);

  a.max_wr = 100;
  a.max_sge = 0;
  a.srq_limit = 0;
  ASSERT_TRUE(n.eng.create_srq(a, &id).ok());
  EXPECT_NE(id, 0u);
  SrqAttr q;
  ASSERT_TRUE(n.eng.query_srq(id, &q).ok());
  EXPECT_EQ(q.max_wr, 128u);
  EXPECT_EQ(q.max_sge, 1u);
  EXPECT_EQ(q.srq_limit, 0u);

  a.max_wr = kMaxQpWr;
  a.max_sge = kMaxSge;
  a.srq_limit = 5;  // armed at creation, as rxe
  uint32_t id2 = 0;
  ASSERT_TRUE(n.eng.create_srq(a, &id2).ok());
  EXPECT_NE(id2, id);
  ASSERT_TRUE(n.eng.query_srq(id2, &q).ok());
  EXPECT_EQ(q.max_wr, kMaxQpWr);
  EXPECT_EQ(q.max_sge, kMaxSge);
  EXPECT_EQ(q.srq_limit, 5u);
}

TEST(SrqVerbs, UnknownIds) {
  Node n{2};
  SrqAttr q;
  RecvWr w;
  EXPECT_EQ(n.eng.destroy_srq(0).errc(), Errc::kNotFound);
  EXPECT_EQ(n.eng.destroy_srq(7).errc(), Errc::kNotFound);
  EXPECT_EQ(n.eng.destroy_srq(1u << 30).errc(), Errc::kNotFound);
  EXPECT_EQ(n.eng.modify_srq(7, 1).errc(), Errc::kNotFound);
  EXPECT_EQ(n.eng.query_srq(7, &q).errc(), Errc::kNotFound);
  EXPECT_EQ(n.eng.post_srq_recv(7, w).errc(), Errc::kNotFound);
  const uint32_t id = make_srq(n.eng);
  ASSERT_TRUE(n.eng.destroy_srq(id).ok());
  EXPECT_EQ(n.eng.destroy_srq(id).errc(), Errc::kNotFound);
  EXPECT_EQ(n.eng.query_srq(id, &q).errc(), Errc::kNotFound);
  // A QP naming an unknown SRQ is refused.
  QpInitAttr init;
  init.pd = n.pd;
  init.send_cq = n.cq;
  init.recv_cq = n.cq;
  init.srq = id;
  uint32_t qpn = 0;
  EXPECT_EQ(n.eng.create_qp(init, &qpn).errc(), Errc::kNotFound);
}

TEST(SrqVerbs, PostChecksSgesAndCapacity) {
  Node n{2};
  Bytes mem(4096);
  const uint32_t key = n.reg(mem);
  const uint32_t id = make_srq(n.eng, 4, 2);
  RecvWr w = make_recv(1, mem, key, 64);
  w.num_sge = 3;
  EXPECT_EQ(n.eng.post_srq_recv(id, w).errc(), Errc::kInvalid);
  w.num_sge = 2;
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(n.eng.post_srq_recv(id, w).ok()) << i;
  EXPECT_EQ(n.eng.post_srq_recv(id, w).errc(), Errc::kNoMemory);
}

TEST(SrqVerbs, ModifyArmsAndChecksTheLimit) {
  Node n{2};
  const uint32_t id = make_srq(n.eng, 8);
  EXPECT_EQ(n.eng.modify_srq(id, 9).errc(), Errc::kInvalid);
  SrqAttr q;
  ASSERT_TRUE(n.eng.query_srq(id, &q).ok());
  EXPECT_EQ(q.srq_limit, 0u);
  ASSERT_TRUE(n.eng.modify_srq(id, 8).ok());
  ASSERT_TRUE(n.eng.query_srq(id, &q).ok());
  EXPECT_EQ(q.srq_limit, 8u);
  ASSERT_TRUE(n.eng.modify_srq(id, 0).ok());  // disarm
  ASSERT_TRUE(n.eng.query_srq(id, &q).ok());
  EXPECT_EQ(q.srq_limit, 0u);
  EXPECT_TRUE(limit_events(n.eng).empty());  // arming alone fires nothing
}

TEST(SrqVerbs, QpOnSrqRefusesPostRecvAndHoldsAReference) {
  Node n{2};
  const uint32_t id = make_srq(n.eng);
  QpCap cap;
  cap.max_recv_wr = kMaxQpWr + 100;  // ignored with an SRQ
  cap.max_recv_sge = kMaxSge + 1;
  const uint32_t q1 = create_qp_on(n, id, QpType::kRc, cap);
  const uint32_t q2 = create_qp_on(n, id, QpType::kUd);
  QpCap got;
  ASSERT_TRUE(n.eng.query_qp(q1, nullptr, &got).ok());
  EXPECT_EQ(got.max_recv_wr, 0u);
  EXPECT_EQ(got.max_recv_sge, 0u);
  EXPECT_EQ(got.max_send_wr, 128u);
  Bytes mem(64);
  const uint32_t key = n.reg(mem);
  EXPECT_EQ(n.eng.post_recv(q1, make_recv(1, mem, key, 64)).errc(), Errc::kInvalid);
  EXPECT_EQ(n.eng.destroy_srq(id).errc(), Errc::kBusy);
  ASSERT_TRUE(n.eng.destroy_qp(q1).ok());
  EXPECT_EQ(n.eng.destroy_srq(id).errc(), Errc::kBusy);
  ASSERT_TRUE(n.eng.destroy_qp(q2).ok());
  EXPECT_TRUE(n.eng.destroy_srq(id).ok());
}

// ---------------------------------------------------------------------------
// RC responder on an SRQ, crafted requests from node 1.

class SrqResponderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    srq = make_srq(b.eng, 16, 2);
    for (int i = 0; i < 3; ++i) {
      qps[i] = create_qp_on(b, srq);
      RcOpts o;
      o.rq_psn = kEpsn;
      o.min_rnr_timer = 14;
      bring_up_rc(b, qps[i], 1, kPeer + i, o);
    }
    mem.assign(16384, 0);
    key = b.reg(mem);
  }
  Bytes req(int qp, uint8_t op, uint32_t psn, const Bytes& payload = {},
            const std::function<void(wire::FrameWriter&)>& ext = {}) {
    return craft(1, 2, op, qps[qp], psn, payload, ext, true);
  }
  void post(uint64_t id, uint32_t len, uint32_t off) {
    ASSERT_TRUE(b.eng.post_srq_recv(srq, make_recv(id, mem, key, len, off)).ok());
  }
  // The frames b sends now, by destination QPN.
  std::map<uint32_t, Frames> out() {
    std::map<uint32_t, Frames> m;
    for (Bytes& f : capture(b.eng, 0)) m[parse(f).bth().dest_qpn()].push_back(f);
    return m;
  }

  static constexpr uint32_t kPeer = 0x70;
  Node b{2};
  uint32_t srq = 0;
  uint32_t qps[3] = {};
  Bytes mem;
  uint32_t key = 0;
};

TEST_F(SrqResponderTest, SendsFromSeveralQpsTakeWqesInArrivalOrder) {
  for (int i = 0; i < 4; ++i) post(100 + i, 1024, static_cast<uint32_t>(i) * 1024);
  const Bytes d0 = pattern(100, 1), d1 = pattern(200, 2), d2 = pattern(300, 3), d3 = pattern(50, 4);
  deliver(b.eng,
          {req(1, kRcSendOnly, kEpsn, d0), req(0, kRcSendOnly, kEpsn, d1),
           req(2, kRcSendOnlyWithImmediate, kEpsn, d2,
               [](wire::FrameWriter& fw) { fw.immdt().set_imm(0xabcd); }),
           req(1, kRcSendOnly, kEpsn + 1, d3)},
          0);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 4u);
  const uint32_t want_qp[4] = {qps[1], qps[0], qps[2], qps[1]};
  const Bytes* want_data[4] = {&d0, &d1, &d2, &d3};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(wc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(wc[i].wr_id, 100u + i);  // the SRQ's WQEs in order, whichever QP takes them
    EXPECT_EQ(wc[i].qp_num, want_qp[i]);
    EXPECT_EQ(wc[i].opcode, WcOpcode::kRecv);
    EXPECT_EQ(wc[i].byte_len, want_data[i]->size());
    EXPECT_TRUE(std::equal(want_data[i]->begin(), want_data[i]->end(), mem.begin() + i * 1024));
  }
  EXPECT_EQ(wc[2].wc_flags, kWcWithImm);
  EXPECT_EQ(wc[2].imm_data, 0xabcdu);
  EXPECT_EQ(wc[1].src_qp, kPeer + 0);
  auto acks = out();
  ASSERT_EQ(acks.size(), 3u);
  for (auto& [dest, frames] : acks) {
    for (const Bytes& f : frames) EXPECT_TRUE(wire::AethSyndrome(syndrome_of(f)).is_ack());
  }
}

TEST_F(SrqResponderTest, EmptySrqIsRnrNakedThenTheRetryCompletes) {
  const Bytes d = pattern(700, 9);
  deliver(b.eng, req(0, kRcSendOnly, kEpsn, d), 0);
  auto f = out();
  ASSERT_EQ(f[kPeer].size(), 1u);
  wire::AethSyndrome syn(syndrome_of(f[kPeer][0]));
  EXPECT_TRUE(syn.is_rnr_nak());
  EXPECT_EQ(syn.rnr_timer(), 14);
  EXPECT_EQ(psn_of(f[kPeer][0]), kEpsn);
  EXPECT_EQ(b.eng.counters().rnr_naks_sent, 1u);
  EXPECT_TRUE(b.poll().empty());
  // A WRITE_WITH_IMM needs one too.
  deliver(b.eng,
          req(1, kRcRdmaWriteOnlyWithImmediate, kEpsn, pattern(8, 1),
              [&](wire::FrameWriter& fw) {
                fw.reth().set_va(Node::addr(mem) + 8192);
                fw.reth().set_rkey(key);
                fw.reth().set_dma_len(8);
                fw.immdt().set_imm(7);
              }),
          0);
  f = out();
  ASSERT_EQ(f[kPeer + 1].size(), 1u);
  EXPECT_TRUE(wire::AethSyndrome(syndrome_of(f[kPeer + 1][0])).is_rnr_nak());

  post(5, 1024, 0);
  post(6, 1024, 1024);
  deliver(b.eng, req(0, kRcSendOnly, kEpsn, d), 0);  // the retry after the RNR wait
  deliver(b.eng,
          req(1, kRcRdmaWriteOnlyWithImmediate, kEpsn, pattern(8, 1),
              [&](wire::FrameWriter& fw) {
                fw.reth().set_va(Node::addr(mem) + 8192);
                fw.reth().set_rkey(key);
                fw.reth().set_dma_len(8);
                fw.immdt().set_imm(7);
              }),
          0);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 5u);
  EXPECT_EQ(wc[0].qp_num, qps[0]);
  EXPECT_EQ(wc[0].byte_len, 700u);
  EXPECT_EQ(wc[1].wr_id, 6u);
  EXPECT_EQ(wc[1].qp_num, qps[1]);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(wc[1].byte_len, 8u);
  EXPECT_EQ(wc[1].imm_data, 7u);
  EXPECT_TRUE(std::equal(d.begin(), d.end(), mem.begin()));
  f = out();
  EXPECT_TRUE(wire::AethSyndrome(syndrome_of(f[kPeer][0])).is_ack());
  EXPECT_TRUE(wire::AethSyndrome(syndrome_of(f[kPeer + 1][0])).is_ack());
}

// A multi-packet SEND holds its WQE (taken at FIRST) across other QPs' traffic;
// when its QP errors, that WQE completes with a flush error on that QP, the
// SRQ keeps its other WQEs for the other QPs, and the last-WQE event follows.
TEST_F(SrqResponderTest, QpErrorFlushesOnlyItsHeldWqe) {
  for (int i = 0; i < 4; ++i) post(10 + i, 4096, static_cast<uint32_t>(i) * 4096);
  deliver(b.eng, req(0, kRcSendFirst, kEpsn, pattern(1024, 1)), 0);  // takes WQE 10
  deliver(b.eng, req(1, kRcSendOnly, kEpsn, pattern(10, 2)), 0);     // takes WQE 11
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 11u);
  EXPECT_EQ(wc[0].qp_num, qps[1]);
  EXPECT_TRUE(last_wqe_events(b.eng).empty());

  QpAttr a;
  a.qp_state = QpState::kErr;
  ASSERT_TRUE(b.eng.modify_qp(qps[0], a, kQpState).ok());
  wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 10u);
  EXPECT_EQ(wc[0].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wc[0].qp_num, qps[0]);
  EXPECT_EQ(last_wqe_events(b.eng), std::vector<uint32_t>{qps[0]});
  EXPECT_TRUE(last_wqe_events(b.eng).empty());  // taken once

  // WQEs 12 and 13 are still in the SRQ: QP 2 and QP 1 receive into them.
  deliver(b.eng, req(2, kRcSendOnly, kEpsn, pattern(30, 3)), 0);
  deliver(b.eng, req(1, kRcSendOnly, kEpsn + 1, pattern(40, 4)), 0);
  wc = b.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 12u);
  EXPECT_EQ(wc[0].qp_num, qps[2]);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[1].wr_id, 13u);
  EXPECT_EQ(wc[1].qp_num, qps[1]);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
  // The errored QP takes nothing more.
  post(14, 64, 0);
  deliver(b.eng, req(0, kRcSendOnly, kEpsn + 1, pattern(8, 5)), 0);
  EXPECT_TRUE(b.poll().empty());
  deliver(b.eng, req(2, kRcSendOnly, kEpsn + 1, pattern(8, 6)), 0);
  wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 14u);
  // An error without a held WQE still reports the last WQE.
  ASSERT_TRUE(b.eng.modify_qp(qps[2], a, kQpState).ok());
  EXPECT_TRUE(b.poll().empty());
  EXPECT_EQ(last_wqe_events(b.eng), std::vector<uint32_t>{qps[2]});
}

// A fatal responder error on a held SRQ WQE completes it with the error (not a flush).
TEST_F(SrqResponderTest, TooLongSendCompletesTheTakenWqeWithLengthError) {
  post(20, 100, 0);
  post(21, 4096, 4096);
  deliver(b.eng, req(0, kRcSendOnly, kEpsn, pattern(200, 1)), 0);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 20u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocLenErr);
  EXPECT_EQ(wc[0].qp_num, qps[0]);
  EXPECT_EQ(b.state(qps[0]), QpState::kErr);
  EXPECT_EQ(last_wqe_events(b.eng), std::vector<uint32_t>{qps[0]});
  deliver(b.eng, req(1, kRcSendOnly, kEpsn, pattern(200, 1)), 0);
  wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 21u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
}

TEST_F(SrqResponderTest, LimitEventFiresOnceWhenTheCountDropsBelowTheLimit) {
  for (int i = 0; i < 6; ++i) post(30 + i, 64, static_cast<uint32_t>(i) * 64);
  ASSERT_TRUE(b.eng.modify_srq(srq, 4).ok());
  uint32_t psn[3] = {kEpsn, kEpsn, kEpsn};
  auto send = [&](int qp) { deliver(b.eng, req(qp, kRcSendOnly, psn[qp]++, pattern(8, 1)), 0); };
  send(0);  // 5 left
  send(1);  // 4 left: not below 4
  EXPECT_TRUE(limit_events(b.eng).empty());
  send(2);  // 3 left: fires, disarms
  EXPECT_EQ(limit_events(b.eng), std::vector<uint32_t>{srq});
  SrqAttr q;
  ASSERT_TRUE(b.eng.query_srq(srq, &q).ok());
  EXPECT_EQ(q.srq_limit, 0u);
  send(0);  // 2 left: disarmed, nothing
  EXPECT_TRUE(limit_events(b.eng).empty());
  // Re-armed below the current count: the next take fires.
  ASSERT_TRUE(b.eng.modify_srq(srq, 3).ok());
  EXPECT_TRUE(limit_events(b.eng).empty());
  send(1);  // 1 left
  EXPECT_EQ(limit_events(b.eng), std::vector<uint32_t>{srq});
  EXPECT_EQ(b.poll().size(), 5u);
  // Queued once until taken, even when re-armed and fired again meanwhile.
  for (int i = 0; i < 4; ++i) post(40 + i, 64, static_cast<uint32_t>(i) * 64);
  ASSERT_TRUE(b.eng.modify_srq(srq, 5).ok());
  send(2);
  ASSERT_TRUE(b.eng.modify_srq(srq, 5).ok());
  send(0);
  EXPECT_EQ(limit_events(b.eng), std::vector<uint32_t>{srq});
}

TEST_F(SrqResponderTest, EventsOfDestroyedObjectsAreDropped) {
  post(1, 64, 0);
  ASSERT_TRUE(b.eng.modify_srq(srq, 1).ok());
  deliver(b.eng, req(0, kRcSendOnly, kEpsn, pattern(8, 1)), 0);
  QpAttr a;
  a.qp_state = QpState::kErr;
  ASSERT_TRUE(b.eng.modify_qp(qps[1], a, kQpState).ok());
  ASSERT_TRUE(b.eng.modify_qp(qps[2], a, kQpState).ok());
  ASSERT_TRUE(b.eng.destroy_qp(qps[1]).ok());
  EXPECT_EQ(last_wqe_events(b.eng), std::vector<uint32_t>{qps[2]});
  for (uint32_t q : {qps[0], qps[2]}) ASSERT_TRUE(b.eng.destroy_qp(q).ok());
  ASSERT_TRUE(b.eng.destroy_srq(srq).ok());
  EXPECT_TRUE(limit_events(b.eng).empty());
}

// ---------------------------------------------------------------------------
// UD QPs on an SRQ.

TEST(SrqUd, DatagramsToSeveralQpsShareTheSrq) {
  Node a{1, 1514};
  Node b{2, 1514};
  const uint32_t qa = a.create_qp(QpType::kUd);
  bring_up_ud(a, qa, kQkey);
  const uint32_t srq = make_srq(b.eng, 8);
  uint32_t qb[2];
  for (uint32_t& q : qb) {
    q = create_qp_on(b, srq, QpType::kUd);
    bring_up_ud(b, q, kQkey);
  }
  Bytes src = pattern(2048, 5), dst(8 * 1100, 0);
  const uint32_t ka = a.reg(src), kb = b.reg(dst);
  auto send = [&](uint64_t id, uint32_t to, uint32_t len) {
    SendWr w = make_wr(WrOpcode::kSend, id, src, ka, len, static_cast<uint32_t>(id));
    w.ud.ah.dgid = v4_gid(2);
    w.ud.ah.dmac = mac_of(2);
    w.ud.remote_qpn = to;
    w.ud.remote_qkey = kQkey;
    ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  };
  send(1, qb[0], 100);
  deliver(b.eng, capture(a.eng, 0), 0);
  EXPECT_EQ(b.eng.counters().rx_drop[static_cast<size_t>(Drop::kUdNoRwqe)], 1u);
  EXPECT_TRUE(b.poll().empty());
  for (uint32_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(b.eng.post_srq_recv(srq, make_recv(50 + i, dst, kb, 1100, i * 1100)).ok());
  }
  send(2, qb[1], 200);
  send(3, qb[0], 300);
  send(4, qb[1], 400);
  deliver(b.eng, capture(a.eng, 0), 0);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(wc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(wc[i].wr_id, 50u + i);
    EXPECT_EQ(wc[i].qp_num, qb[(i + 1) % 2]);
    EXPECT_EQ(wc[i].src_qp, qa);
    EXPECT_EQ(wc[i].byte_len, 40u + 200 + 100 * i);
    EXPECT_EQ(wc[i].wc_flags, kWcGrh);
    EXPECT_TRUE(std::equal(src.begin() + 2 + i, src.begin() + 2 + i + 200 + 100 * i,
                           dst.begin() + i * 1100 + 40));
  }
  // A UD QP error leaves the SRQ alone.
  ASSERT_TRUE(b.eng.post_srq_recv(srq, make_recv(60, dst, kb, 1100, 0)).ok());
  QpAttr e;
  e.qp_state = QpState::kErr;
  ASSERT_TRUE(b.eng.modify_qp(qb[0], e, kQpState).ok());
  EXPECT_TRUE(b.poll().empty());
  EXPECT_EQ(last_wqe_events(b.eng), std::vector<uint32_t>{qb[0]});
  send(5, qb[1], 10);
  deliver(b.eng, capture(a.eng, 0), 0);
  wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 60u);
  EXPECT_EQ(wc[0].qp_num, qb[1]);
}

// ---------------------------------------------------------------------------
// Three engines: nodes 1 and 3 send to two QPs of node 2 that share one SRQ.

TEST(SrqThreeNodes, TwoPeersSendIntoOneSrq) {
  Node a{1}, b{2}, c{3};
  const uint32_t srq = make_srq(b.eng, 256, 1);
  const uint32_t qa = a.create_qp(), qc = c.create_qp();
  const uint32_t qba = create_qp_on(b, srq), qbc = create_qp_on(b, srq);
  bring_up_rc(a, qa, 2, qba);
  bring_up_rc(c, qc, 2, qbc);
  RcOpts o;
  o.rq_psn = RcOpts{}.sq_psn;
  o.sq_psn = RcOpts{}.rq_psn;
  bring_up_rc(b, qba, 1, qa, o);
  bring_up_rc(b, qbc, 3, qc, o);
  constexpr uint32_t kMsgs = 40, kSize = 2500;
  Bytes sa = pattern(kMsgs * kSize, 1), sc = pattern(kMsgs * kSize, 2);
  Bytes dst(2 * kMsgs * 4096, 0);
  const uint32_t ka = a.reg(sa), kc = c.reg(sc), kb = b.reg(dst);
  for (uint32_t i = 0; i < 2 * kMsgs; ++i) {
    ASSERT_TRUE(b.eng.post_srq_recv(srq, make_recv(i, dst, kb, 4096, i * 4096)).ok());
  }
  for (uint32_t m = 0; m < kMsgs; ++m) {
    const uint32_t len = kSize - m * 37;
    ASSERT_TRUE(a.eng.post_send(qa, make_wr(WrOpcode::kSend, m, sa, ka, len, m * kSize)).ok());
    ASSERT_TRUE(c.eng.post_send(qc, make_wr(WrOpcode::kSend, m, sc, kc, len, m * kSize)).ok());
  }
  // Frames from b go to the node named by their destination MAC's last byte.
  for (int round = 0; round < 1000; ++round) {
    Frames fa = capture(a.eng, 0), fb = capture(b.eng, 0), fc = capture(c.eng, 0);
    if (fa.empty() && fb.empty() && fc.empty()) break;
    Frames to_a, to_c;
    for (Bytes& f : fb) (f[5] == 1 ? to_a : to_c).push_back(std::move(f));
    Frames to_b = fa;
    to_b.insert(to_b.end(), fc.begin(), fc.end());
    deliver(b.eng, to_b, 0);
    deliver(a.eng, to_a, 0);
    deliver(c.eng, to_c, 0);
  }
  EXPECT_EQ(a.poll().size(), kMsgs);
  EXPECT_EQ(c.poll().size(), kMsgs);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 2 * kMsgs);
  std::map<uint32_t, uint32_t> next;  // per QP: next message expected
  std::vector<bool> used(2 * kMsgs, false);
  for (const Wc& w : wc) {
    ASSERT_EQ(w.status, WcStatus::kSuccess);
    ASSERT_TRUE(w.qp_num == qba || w.qp_num == qbc);
    ASSERT_LT(w.wr_id, 2u * kMsgs);
    EXPECT_FALSE(used[w.wr_id]) << "WQE completed twice";
    used[w.wr_id] = true;
    const uint32_t m = next[w.qp_num]++;
    const uint32_t len = kSize - m * 37;
    EXPECT_EQ(w.byte_len, len);
    EXPECT_EQ(w.src_qp, w.qp_num == qba ? qa : qc);
    const Bytes& s = w.qp_num == qba ? sa : sc;
    EXPECT_TRUE(std::equal(s.begin() + m * kSize, s.begin() + m * kSize + len,
                           dst.begin() + w.wr_id * 4096))
        << "qp " << w.qp_num << " message " << m;
  }
  EXPECT_EQ(next[qba], kMsgs);
  EXPECT_EQ(next[qbc], kMsgs);
}

}  // namespace
}  // namespace burst::core::test
