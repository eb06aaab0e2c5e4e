// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// modify_qp: legal and illegal transitions, required and optional attribute
// masks per QP type, attribute values, and the effects on the queues (ERR
// flushes, RESET clears, posting rules per state).
#include <gtest/gtest.h>

#include "tests/unit/transport/transport_test_util.h"

namespace burst::core::test {
namespace {

constexpr uint32_t kInitMask = kQpState | kQpPkeyIndex | kQpPort | kQpAccessFlags;
constexpr uint32_t kRtrMask =
    kQpState | kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn | kQpMaxDestRdAtomic | kQpMinRnrTimer;
constexpr uint32_t kRtsMask =
    kQpState | kQpSqPsn | kQpQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic;

QpAttr rc_attr(QpState s) {
  QpAttr a;
  a.qp_state = s;
  a.path_mtu = Mtu::k1024;
  a.dest_qp_num = 0x99;
  a.rq_psn = 0x10;
  a.sq_psn = 0x20;
  a.ah.dgid = v4_gid(2);
  a.ah.dmac = mac_of(2);
  return a;
}

class QpStateTest : public ::testing::Test {
 protected:
  Status to(QpState s, uint32_t mask) { return n.eng.modify_qp(qpn, rc_attr(s), mask); }
  void to_rts() {
    ASSERT_TRUE(to(QpState::kInit, kInitMask).ok());
    ASSERT_TRUE(to(QpState::kRtr, kRtrMask).ok());
    ASSERT_TRUE(to(QpState::kRts, kRtsMask).ok());
  }
  Node n{1, 1514};
  uint32_t qpn = n.create_qp();
};

TEST_F(QpStateTest, LegalRcPathAndQuery) {
  EXPECT_EQ(n.state(qpn), QpState::kReset);
  to_rts();
  QpAttr a;
  QpCap cap;
  ASSERT_TRUE(n.eng.query_qp(qpn, &a, &cap).ok());
  EXPECT_EQ(a.qp_state, QpState::kRts);
  EXPECT_EQ(a.dest_qp_num, 0x99u);
  EXPECT_EQ(a.rq_psn, 0x10u);
  EXPECT_EQ(a.sq_psn, 0x20u);
  EXPECT_EQ(a.path_mtu, Mtu::k1024);
  EXPECT_EQ(cap.max_send_wr, 128u);
  const Qp& qp = EngineTestPeer::qp(n.eng, qpn);
  EXPECT_EQ(qp.resp.epsn.value(), 0x10u);
  EXPECT_EQ(qp.req.psn_alloc.value(), 0x20u);
  EXPECT_EQ(qp.mtu, 1024u);
}

TEST_F(QpStateTest, MissingRequiredAttributeRejected) {
  EXPECT_EQ(to(QpState::kInit, kInitMask & ~kQpAccessFlags).errc(), Errc::kInvalid);
  EXPECT_EQ(n.state(qpn), QpState::kReset);
  ASSERT_TRUE(to(QpState::kInit, kInitMask).ok());
  for (uint32_t bit :
       {kQpAv, kQpPathMtu, kQpDestQpn, kQpRqPsn, kQpMaxDestRdAtomic, kQpMinRnrTimer}) {
    EXPECT_EQ(to(QpState::kRtr, kRtrMask & ~bit).errc(), Errc::kInvalid) << bit;
    EXPECT_EQ(n.state(qpn), QpState::kInit);
  }
  ASSERT_TRUE(to(QpState::kRtr, kRtrMask).ok());
  for (uint32_t bit : {kQpSqPsn, kQpQpTimeout, kQpRetryCnt, kQpRnrRetry, kQpMaxQpRdAtomic}) {
    EXPECT_EQ(to(QpState::kRts, kRtsMask & ~bit).errc(), Errc::kInvalid) << bit;
    EXPECT_EQ(n.state(qpn), QpState::kRtr);
  }
}

TEST_F(QpStateTest, AttributeOutsideTheTransitionRejected) {
  EXPECT_EQ(to(QpState::kInit, kInitMask | kQpSqPsn).errc(), Errc::kInvalid);
  ASSERT_TRUE(to(QpState::kInit, kInitMask).ok());
  EXPECT_EQ(to(QpState::kRtr, kRtrMask | kQpSqPsn).errc(), Errc::kInvalid);
  ASSERT_TRUE(to(QpState::kRtr, kRtrMask | kQpAccessFlags).ok());  // optional
  EXPECT_EQ(to(QpState::kRts, kRtsMask | kQpDestQpn).errc(), Errc::kInvalid);
  ASSERT_TRUE(to(QpState::kRts, kRtsMask | kQpMinRnrTimer).ok());            // optional
  EXPECT_EQ(to(QpState::kRts, kQpState | kQpSqPsn).errc(), Errc::kInvalid);  // RTS->RTS
  EXPECT_TRUE(to(QpState::kRts, kQpState | kQpMinRnrTimer).ok());
  EXPECT_EQ(n.eng.modify_qp(qpn, rc_attr(QpState::kRts), kQpCap).errc(), Errc::kInvalid);
}

TEST_F(QpStateTest, IllegalTransitionsRejected) {
  EXPECT_EQ(to(QpState::kRtr, kRtrMask).errc(), Errc::kInvalid);
  EXPECT_EQ(to(QpState::kRts, kRtsMask).errc(), Errc::kInvalid);
  EXPECT_EQ(to(QpState::kSqd, kQpState).errc(), Errc::kInvalid);
  ASSERT_TRUE(to(QpState::kInit, kInitMask).ok());
  EXPECT_EQ(to(QpState::kRts, kRtsMask).errc(), Errc::kInvalid);
  EXPECT_EQ(to(QpState::kSqe, kQpState).errc(), Errc::kInvalid);
  ASSERT_TRUE(to(QpState::kRtr, kRtrMask).ok());
  EXPECT_EQ(to(QpState::kSqd, kQpState).errc(), Errc::kInvalid);
  EXPECT_EQ(to(QpState::kInit, kInitMask).errc(), Errc::kInvalid);
  ASSERT_TRUE(to(QpState::kRts, kRtsMask).ok());
  EXPECT_EQ(to(QpState::kRtr, kRtrMask).errc(), Errc::kInvalid);
  EXPECT_EQ(to(QpState::kSqe, kQpState).errc(), Errc::kInvalid);  // entered only on a send error
  ASSERT_TRUE(to(QpState::kErr, kQpState).ok());
  EXPECT_EQ(to(QpState::kRts, kQpState).errc(), Errc::kInvalid);
  EXPECT_EQ(to(QpState::kInit, kInitMask).errc(), Errc::kInvalid);
  EXPECT_EQ(n.state(qpn), QpState::kErr);
}

TEST_F(QpStateTest, AnyStateToResetAndError) {
  const std::vector<std::pair<QpState, uint32_t>> path = {{QpState::kInit, kInitMask},
                                                          {QpState::kRtr, kRtrMask},
                                                          {QpState::kRts, kRtsMask},
                                                          {QpState::kSqd, kQpState}};
  for (size_t depth = 0; depth <= path.size(); ++depth) {
    for (QpState target : {QpState::kErr, QpState::kReset}) {
      ASSERT_TRUE(to(QpState::kReset, kQpState).ok());
      for (size_t i = 0; i < depth; ++i) ASSERT_TRUE(to(path[i].first, path[i].second).ok());
      EXPECT_TRUE(to(target, kQpState).ok()) << depth;
      EXPECT_EQ(n.state(qpn), target);
    }
  }
}

TEST_F(QpStateTest, SqdAndBackToRts) {
  to_rts();
  ASSERT_TRUE(to(QpState::kSqd, kQpState | kQpEnSqdAsyncNotify).ok());
  EXPECT_EQ(n.state(qpn), QpState::kSqd);
  QpAttr a = rc_attr(QpState::kSqd);
  a.timeout = 20;
  ASSERT_TRUE(n.eng.modify_qp(qpn, a, kQpState | kQpQpTimeout).ok());  // SQD->SQD
  ASSERT_TRUE(to(QpState::kRts, kQpState).ok());
  QpAttr q;
  ASSERT_TRUE(n.eng.query_qp(qpn, &q, nullptr).ok());
  EXPECT_EQ(q.timeout, 20);
}

TEST_F(QpStateTest, AttributeValuesChecked) {
  ASSERT_TRUE(to(QpState::kInit, kInitMask).ok());
  QpAttr a = rc_attr(QpState::kRtr);
  a.path_mtu = Mtu::k4096;  // the 1514-byte port carries at most 1024
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kRtrMask).errc(), Errc::kInvalid);
  a.path_mtu = static_cast<Mtu>(6);
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kRtrMask).errc(), Errc::kInvalid);
  a = rc_attr(QpState::kRtr);
  a.max_dest_rd_atomic = 17;
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kRtrMask).errc(), Errc::kInvalid);
  a = rc_attr(QpState::kRtr);
  a.min_rnr_timer = 32;
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kRtrMask).errc(), Errc::kInvalid);
  a = rc_attr(QpState::kRtr);
  a.dest_qp_num = 1u << 24;
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kRtrMask).errc(), Errc::kInvalid);
  a = rc_attr(QpState::kRtr);
  a.ah.sgid_index = 1;  // the port has one GID
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kRtrMask).errc(), Errc::kInvalid);
  a = rc_attr(QpState::kRtr);
  a.ah.dgid[10] = 0x12;  // an IPv6 destination from an IPv4 source GID
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kRtrMask).errc(), Errc::kInvalid);
  EXPECT_EQ(n.state(qpn), QpState::kInit);
  ASSERT_TRUE(to(QpState::kRtr, kRtrMask).ok());
  for (auto [field, value] : std::vector<std::pair<int, int>>{{0, 8}, {1, 8}, {2, 32}}) {
    a = rc_attr(QpState::kRts);
    if (field == 0) a.retry_cnt = static_cast<uint8_t>(value);
    if (field == 1) a.rnr_retry = static_cast<uint8_t>(value);
    if (field == 2) a.timeout = static_cast<uint8_t>(value);
    EXPECT_EQ(n.eng.modify_qp(qpn, a, kRtsMask).errc(), Errc::kInvalid) << field;
  }
  a = rc_attr(QpState::kRts);
  a.cur_qp_state = QpState::kInit;  // not the current state
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kRtsMask | kQpCurState).errc(), Errc::kInvalid);
  a.cur_qp_state = QpState::kRtr;
  a.sq_psn = 0x1234567;  // masked to 24 bits
  // The initiator depth is clamped to the device limit, not refused (perftest sets the
  // peer's max_qp_rd_atom, 128 on Linux rxe): it only bounds what this QP sends.
  a.max_rd_atomic = 128;
  EXPECT_TRUE(n.eng.modify_qp(qpn, a, kRtsMask | kQpCurState).ok());
  QpAttr q;
  ASSERT_TRUE(n.eng.query_qp(qpn, &q, nullptr).ok());
  EXPECT_EQ(q.sq_psn, 0x234567u);
  EXPECT_EQ(q.max_rd_atomic, kMaxRdAtomic);
  QpAttr init = rc_attr(QpState::kInit);
  init.pkey_index = 1;
  const uint32_t other = n.create_qp();
  EXPECT_EQ(n.eng.modify_qp(other, init, kInitMask).errc(), Errc::kInvalid);
  init.pkey_index = 0;
  init.port_num = 2;
  EXPECT_EQ(n.eng.modify_qp(other, init, kInitMask).errc(), Errc::kInvalid);
}

TEST_F(QpStateTest, PostingRulesPerState) {
  Bytes buf(64);
  const uint32_t key = n.reg(buf);
  const SendWr s = make_wr(WrOpcode::kSend, 1, buf, key, 8);
  const RecvWr r = make_recv(2, buf, key, 64);
  EXPECT_EQ(n.eng.post_send(qpn, s).errc(), Errc::kState);  // RESET
  EXPECT_EQ(n.eng.post_recv(qpn, r).errc(), Errc::kState);
  ASSERT_TRUE(to(QpState::kInit, kInitMask).ok());
  EXPECT_EQ(n.eng.post_send(qpn, s).errc(), Errc::kState);
  EXPECT_TRUE(n.eng.post_recv(qpn, r).ok());  // receives may be posted from INIT on
  ASSERT_TRUE(to(QpState::kRtr, kRtrMask).ok());
  EXPECT_EQ(n.eng.post_send(qpn, s).errc(), Errc::kState);
  ASSERT_TRUE(to(QpState::kRts, kRtsMask).ok());
  EXPECT_TRUE(n.eng.post_send(qpn, s).ok());
  EXPECT_TRUE(n.poll().empty());
  // ERR flushes both queues; later posts complete with a flush error at once.
  ASSERT_TRUE(to(QpState::kErr, kQpState).ok());
  auto wcs = n.poll();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 1u);
  EXPECT_EQ(wcs[0].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wcs[1].wr_id, 2u);
  EXPECT_EQ(wcs[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wcs[1].opcode, WcOpcode::kRecv);
  EXPECT_TRUE(n.eng.post_send(qpn, s).ok());
  EXPECT_TRUE(n.eng.post_recv(qpn, r).ok());
  wcs = n.poll();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wcs[1].status, WcStatus::kWrFlushErr);
  // RESET clears without completions, and the QP can be brought up again.
  ASSERT_TRUE(to(QpState::kReset, kQpState).ok());
  EXPECT_TRUE(n.poll().empty());
  to_rts();
  EXPECT_TRUE(n.eng.post_send(qpn, s).ok());
  EXPECT_EQ(capture(n.eng, 0).size(), 1u);
}

TEST_F(QpStateTest, ResetDiscardsQueuedWork) {
  to_rts();
  Bytes buf(64);
  const uint32_t key = n.reg(buf);
  ASSERT_TRUE(n.eng.post_send(qpn, make_wr(WrOpcode::kSend, 1, buf, key, 8)).ok());
  ASSERT_TRUE(n.eng.post_recv(qpn, make_recv(2, buf, key, 64)).ok());
  ASSERT_TRUE(to(QpState::kReset, kQpState).ok());
  EXPECT_TRUE(n.poll().empty());
  const Qp& qp = EngineTestPeer::qp(n.eng, qpn);
  EXPECT_EQ(qp.sq.count(), 0u);
  EXPECT_EQ(qp.rq.count(), 0u);
  EXPECT_TRUE(capture(n.eng, 0).empty());
}

TEST_F(QpStateTest, BadWorkRequestsRejected) {
  to_rts();
  Bytes buf(64);
  const uint32_t key = n.reg(buf);
  SendWr w = make_wr(WrOpcode::kSend, 1, buf, key, 8);
  w.num_sge = 5;  // max_send_sge 4
  EXPECT_EQ(n.eng.post_send(qpn, w).errc(), Errc::kInvalid);
  w = make_wr(WrOpcode::kAtomicFetchAndAdd, 1, buf, key, 4);  // local buffer must be 8 bytes
  EXPECT_EQ(n.eng.post_send(qpn, w).errc(), Errc::kInvalid);
  w = make_wr(WrOpcode::kAtomicFetchAndAdd, 1, buf, key, 8);
  w.atomic.remote_addr = 0x1004;  // not 8-byte aligned
  EXPECT_EQ(n.eng.post_send(qpn, w).errc(), Errc::kInvalid);
  w = make_wr(WrOpcode::kSend, 1, buf, key, 8);
  w.send_flags = kSendInline;  // max_inline_data 0
  EXPECT_EQ(n.eng.post_send(qpn, w).errc(), Errc::kInvalid);
  w = make_wr(static_cast<WrOpcode>(10), 1, buf, key, 8);  // beyond IBV_WR_SEND_WITH_INV
  EXPECT_EQ(n.eng.post_send(qpn, w).errc(), Errc::kInvalid);
  RecvWr r = make_recv(1, buf, key, 8);
  r.num_sge = 5;
  EXPECT_EQ(n.eng.post_recv(qpn, r).errc(), Errc::kInvalid);
  EXPECT_EQ(n.eng.post_send(0xABCDEF, make_wr(WrOpcode::kSend, 1, buf, key, 8)).errc(),
            Errc::kNotFound);
  // A full send queue answers kNoMemory (ENOMEM), like libibverbs providers.
  const uint32_t small = n.create_qp(QpType::kRc, QpCap{2, 2, 1, 1, 0});
  ASSERT_TRUE(n.eng.modify_qp(small, rc_attr(QpState::kInit), kInitMask).ok());
  ASSERT_TRUE(n.eng.modify_qp(small, rc_attr(QpState::kRtr), kRtrMask).ok());
  ASSERT_TRUE(n.eng.modify_qp(small, rc_attr(QpState::kRts), kRtsMask).ok());
  w = make_wr(WrOpcode::kSend, 1, buf, key, 8);
  EXPECT_TRUE(n.eng.post_send(small, w).ok());
  EXPECT_TRUE(n.eng.post_send(small, w).ok());
  EXPECT_EQ(n.eng.post_send(small, w).errc(), Errc::kNoMemory);
  EXPECT_EQ(Status(Errc::kNoMemory).to_errno(), ENOMEM);
}

TEST(QpObjects, CreateDestroyAndReferences) {
  Node n{1};
  QpInitAttr init;
  init.pd = n.pd;
  init.send_cq = n.cq;
  init.recv_cq = n.cq;
  uint32_t qpn = 0;
  init.type = QpType::kUc;
  EXPECT_EQ(n.eng.create_qp(init, &qpn).errc(), Errc::kNotSupported);
  init.type = QpType::kRc;
  init.pd = 999;
  EXPECT_EQ(n.eng.create_qp(init, &qpn).errc(), Errc::kNotFound);
  init.pd = n.pd;
  init.cap.max_send_sge = kMaxSge + 1;
  EXPECT_EQ(n.eng.create_qp(init, &qpn).errc(), Errc::kInvalid);
  init.cap = QpCap{};
  ASSERT_TRUE(n.eng.create_qp(init, &qpn).ok());
  EXPECT_EQ(n.mrs.dealloc_pd(n.pd).errc(), Errc::kBusy);
  EXPECT_EQ(n.eng.destroy_cq(n.cq).errc(), Errc::kBusy);
  // A second QP of the same slot after destroy gets a different QPN.
  ASSERT_TRUE(n.eng.destroy_qp(qpn).ok());
  EXPECT_EQ(n.eng.destroy_qp(qpn).errc(), Errc::kNotFound);
  uint32_t again = 0;
  ASSERT_TRUE(n.eng.create_qp(init, &again).ok());
  EXPECT_NE(again, qpn);
  EXPECT_EQ(n.eng.modify_qp(qpn, QpAttr{}, 0).errc(), Errc::kNotFound);
  ASSERT_TRUE(n.eng.destroy_qp(again).ok());
  EXPECT_TRUE(n.eng.destroy_cq(n.cq).ok());
  EXPECT_TRUE(n.mrs.dealloc_pd(n.pd).ok());
}

TEST(QpObjects, GsiQpIsQpn1) {
  Node n{1};
  QpInitAttr init;
  init.type = QpType::kUd;
  init.gsi = true;
  init.pd = n.pd;
  init.send_cq = n.cq;
  init.recv_cq = n.cq;
  uint32_t qpn = 0;
  ASSERT_TRUE(n.eng.create_qp(init, &qpn).ok());
  EXPECT_EQ(qpn, 1u);
  uint32_t second = 0;
  EXPECT_EQ(n.eng.create_qp(init, &second).errc(), Errc::kBusy);
  init.type = QpType::kRc;
  EXPECT_EQ(n.eng.create_qp(init, &second).errc(), Errc::kInvalid);
  // GSI: RESET->INIT needs P_Key index and Q_Key, not the port.
  QpAttr a;
  a.qp_state = QpState::kInit;
  a.qkey = wire::kQp1Qkey;
  EXPECT_TRUE(n.eng.modify_qp(1, a, kQpState | kQpPkeyIndex | kQpQkey).ok());
}

TEST(QpObjects, UdTransitions) {
  Node n{1};
  const uint32_t qpn = n.create_qp(QpType::kUd);
  QpAttr a;
  a.qp_state = QpState::kInit;
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kQpState | kQpPkeyIndex | kQpPort).errc(), Errc::kInvalid);
  EXPECT_EQ(
      n.eng.modify_qp(qpn, a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey | kQpAccessFlags).errc(),
      Errc::kInvalid);
  ASSERT_TRUE(n.eng.modify_qp(qpn, a, kQpState | kQpPkeyIndex | kQpPort | kQpQkey).ok());
  a.qp_state = QpState::kRtr;
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kQpState | kQpAv).errc(), Errc::kInvalid);
  ASSERT_TRUE(n.eng.modify_qp(qpn, a, kQpState).ok());
  a.qp_state = QpState::kRts;
  EXPECT_EQ(n.eng.modify_qp(qpn, a, kQpState).errc(), Errc::kInvalid);
  ASSERT_TRUE(n.eng.modify_qp(qpn, a, kQpState | kQpSqPsn).ok());
}

}  // namespace
}  // namespace burst::core::test
