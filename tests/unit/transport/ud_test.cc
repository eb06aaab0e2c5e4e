// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// UD: SEND_ONLY (+imm) with DETH between two engines; the 40-byte GRH area
// (IPv4 header in its last 20 bytes), Q_Key checks (a WR Q_Key with the high
// bit set means the QP's own), missing receive WQEs, oversized messages, QP1.
#include <gtest/gtest.h>

#include "tests/unit/transport/transport_test_util.h"

namespace burst::core::test {
namespace {

using namespace wire::op;  // NOLINT(build/namespaces)

constexpr uint32_t kQkey = 0x11223344;

class UdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    qa = a.create_qp(QpType::kUd);
    qb = b.create_qp(QpType::kUd);
    bring_up_ud(a, qa, kQkey, 0x10);
    bring_up_ud(b, qb, kQkey);
    src = pattern(2048, 3);
    dst.assign(4096, 0);
    ka = a.reg(src);
    kb = b.reg(dst);
  }
  SendWr ud_wr(uint64_t id, uint32_t len, uint32_t qkey = kQkey, bool imm = false) {
    SendWr w = make_wr(imm ? WrOpcode::kSendWithImm : WrOpcode::kSend, id, src, ka, len);
    w.ud.ah.dgid = v4_gid(2);
    w.ud.ah.dmac = mac_of(2);
    w.ud.remote_qpn = qb;
    w.ud.remote_qkey = qkey;
    w.imm_data = 0x5a5a0001;
    return w;
  }
  uint64_t drops(Drop d) const { return b.eng.counters().rx_drop[static_cast<size_t>(d)]; }

  Node a{1, 1514};
  Node b{2, 1514};
  uint32_t qa = 0, qb = 0, ka = 0, kb = 0;
  Bytes src, dst;
};

TEST_F(UdTest, SendReceiveWithGrhArea) {
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(4, dst, kb, 4096)).ok());
  ASSERT_TRUE(a.eng.post_send(qa, ud_wr(1, 700, kQkey, true)).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  wire::PacketView pv = parse(f[0]);
  EXPECT_EQ(pv.opcode, kUdSendOnlyWithImmediate);
  EXPECT_EQ(pv.deth()->qkey(), kQkey);
  EXPECT_EQ(pv.deth()->src_qpn(), qa);
  EXPECT_EQ(pv.bth().psn().value(), 0x10u);
  EXPECT_FALSE(pv.bth().ack_req());
  // UD completes once the frame is built.
  auto wa = a.poll();
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kSuccess);
  deliver(b.eng, f, 0);
  auto wb = b.poll();
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].byte_len, 40u + 700);
  EXPECT_EQ(wb[0].src_qp, qa);
  EXPECT_EQ(wb[0].qp_num, qb);
  EXPECT_EQ(wb[0].wc_flags, kWcGrh | kWcWithImm);
  EXPECT_EQ(wb[0].imm_data, 0x5a5a0001u);
  // What a ConnectX reports: RoCE v2 (UDP) over IPv4 in sl, UCX 1.13 reads sl & 7 == 2.
  EXPECT_EQ(wb[0].sl, 0xAu);
  EXPECT_EQ(wb[0].sl & 7, 2);
  EXPECT_EQ(wb[0].pkey_index, 0u);
  EXPECT_EQ(wb[0].slid, 0u);
  EXPECT_EQ(wb[0].dlid_path_bits, 0u);
  // IPv4 peer: 20 zero bytes, then the received IPv4 header.
  EXPECT_EQ(Bytes(dst.begin(), dst.begin() + 20), Bytes(20, 0));
  EXPECT_EQ(dst[20], 0x45);                                                   // version 4, IHL 5
  EXPECT_EQ(dst[20 + 9], 17);                                                 // UDP
  EXPECT_EQ(0, std::memcmp(dst.data() + 20 + 12, v4_gid(1).data() + 12, 4));  // source address
  EXPECT_EQ(0, std::memcmp(dst.data() + 20 + 16, v4_gid(2).data() + 12, 4));  // destination
  EXPECT_EQ(0, std::memcmp(dst.data() + 20, f[0].data() + 14, 20));
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + 700, dst.begin() + 40));
  EXPECT_EQ(b.eng.counters().ud_received, 1u);
}

TEST_F(UdTest, SolicitedSendCarriesSeAndCompletesSolicited) {
  for (const bool solicited : {true, false}) {
    ASSERT_TRUE(b.eng.post_recv(qb, make_recv(4, dst, kb, 4096)).ok());
    SendWr w = ud_wr(1, 100, kQkey, false);
    if (solicited) w.send_flags |= kSendSolicited;
    ASSERT_TRUE(a.eng.post_send(qa, w).ok());
    Frames f = capture(a.eng, 0);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(parse(f[0]).bth().se(), solicited);
    ASSERT_EQ(a.poll().size(), 1u);
    deliver(b.eng, f, 0);
    auto wb = b.poll();
    ASSERT_EQ(wb.size(), 1u);
    EXPECT_EQ(wb[0].status, WcStatus::kSuccess);
    EXPECT_EQ(wb[0].solicited, solicited);
  }
}

TEST_F(UdTest, QkeyMismatchDroppedAndQpQkeySubstitution) {
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(4, dst, kb, 4096)).ok());
  ASSERT_TRUE(a.eng.post_send(qa, ud_wr(1, 8, kQkey + 1)).ok());
  deliver(b.eng, capture(a.eng, 0), 0);
  EXPECT_TRUE(b.poll().empty());
  EXPECT_EQ(drops(Drop::kBadQkey), 1u);
  EXPECT_EQ(EngineTestPeer::qp(b.eng, qb).rq.count(), 1u);  // the receive WQE is kept
  // High bit set: the sending QP's own Q_Key goes on the wire.
  ASSERT_TRUE(a.eng.post_send(qa, ud_wr(2, 8, 0x80000000u)).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(parse(f[0]).deth()->qkey(), kQkey);
  deliver(b.eng, f, 0);
  EXPECT_EQ(b.poll().size(), 1u);
}

TEST_F(UdTest, NoReceiveWqeDropsSilently) {
  ASSERT_TRUE(a.eng.post_send(qa, ud_wr(1, 8)).ok());
  deliver(b.eng, capture(a.eng, 0), 0);
  EXPECT_EQ(drops(Drop::kUdNoRwqe), 1u);
  EXPECT_TRUE(capture(b.eng, 0).empty());  // no NAK in UD
  EXPECT_EQ(b.state(qb), QpState::kRts);
}

TEST_F(UdTest, ReceiveBufferTooSmallForGrhAndPayload) {
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(4, dst, kb, 40 + 99)).ok());
  ASSERT_TRUE(a.eng.post_send(qa, ud_wr(1, 100)).ok());
  deliver(b.eng, capture(a.eng, 0), 0);
  auto wb = b.poll();
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].status, WcStatus::kLocLenErr);
  EXPECT_EQ(b.state(qb), QpState::kRts);  // a UD QP keeps working
}

TEST_F(UdTest, MessageLargerThanMtuRejectedAtPost) {
  // The 1514-byte port carries a 1024-byte path MTU.
  EXPECT_EQ(a.eng.post_send(qa, ud_wr(1, 1025)).errc(), Errc::kInvalid);
  EXPECT_TRUE(a.eng.post_send(qa, ud_wr(1, 1024)).ok());
  SendWr w = ud_wr(2, 8);
  w.opcode = WrOpcode::kRdmaWrite;
  EXPECT_EQ(a.eng.post_send(qa, w).errc(), Errc::kInvalid);
}

TEST_F(UdTest, OversizedDatagramOnTheWireDropped) {
  // A peer with a larger MTU sends 2000 bytes; this port's path MTU is 1024.
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(4, dst, kb, 4096)).ok());
  Bytes f = craft(1, 2, kUdSendOnly, qb, 0, pattern(2000, 1), [&](wire::FrameWriter& fw) {
    fw.deth().set_qkey(kQkey);
    fw.deth().set_src_qpn(0x42);
  });
  deliver(b.eng, f, 0);
  EXPECT_EQ(drops(Drop::kUdTooLong), 1u);
  EXPECT_TRUE(b.poll().empty());
}

TEST_F(UdTest, RcOpcodeToUdQpDropped) {
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(4, dst, kb, 4096)).ok());
  deliver(b.eng, craft(1, 2, kRcSendOnly, qb, 0, pattern(8, 1)), 0);
  EXPECT_EQ(drops(Drop::kOpcodeForQpType), 1u);
}

TEST_F(UdTest, LocalProtectionErrorMovesToSqe) {
  SendWr w = ud_wr(1, 8);
  w.sg_list[0].lkey = ka + 0x100;
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  ASSERT_TRUE(a.eng.post_send(qa, ud_wr(2, 8)).ok());
  EXPECT_TRUE(capture(a.eng, 0).empty());
  auto wa = a.poll();
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wa[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(a.state(qa), QpState::kSqe);
  // SQE -> RTS resumes sending.
  QpAttr attr;
  attr.qp_state = QpState::kRts;
  ASSERT_TRUE(a.eng.modify_qp(qa, attr, kQpState).ok());
  ASSERT_TRUE(a.eng.post_send(qa, ud_wr(3, 8)).ok());
  EXPECT_EQ(capture(a.eng, 0).size(), 1u);
}

// QP1 to QP1 (as the CM does): the WR names Q_Key 0x80010000, whose high bit
// selects the sending QP's own Q_Key, which for a GSI QP is 0x80010000.
TEST(UdGsi, Qp1ToQp1WithWellKnownQkey) {
  Node a{1}, b{2};
  for (Node* n : {&a, &b}) {
    QpInitAttr init;
    init.type = QpType::kUd;
    init.gsi = true;
    init.pd = n->pd;
    init.send_cq = n->cq;
    init.recv_cq = n->cq;
    uint32_t q1 = 0;
    ASSERT_TRUE(n->eng.create_qp(init, &q1).ok());
    ASSERT_EQ(q1, 1u);
    QpAttr attr;
    attr.qp_state = QpState::kInit;
    attr.qkey = wire::kQp1Qkey;
    ASSERT_TRUE(n->eng.modify_qp(1, attr, kQpState | kQpPkeyIndex | kQpQkey).ok());
    attr.qp_state = QpState::kRtr;
    ASSERT_TRUE(n->eng.modify_qp(1, attr, kQpState).ok());
    attr.qp_state = QpState::kRts;
    ASSERT_TRUE(n->eng.modify_qp(1, attr, kQpState | kQpSqPsn).ok());
  }
  Bytes mad = pattern(256, 7), rbuf(512, 0);
  const uint32_t km = a.reg(mad), kr = b.reg(rbuf);
  ASSERT_TRUE(b.eng.post_recv(1, make_recv(1, rbuf, kr, 512)).ok());
  SendWr w = make_wr(WrOpcode::kSend, 1, mad, km, 256);
  w.ud.ah.dgid = v4_gid(2);
  w.ud.ah.dmac = mac_of(2);
  w.ud.remote_qpn = 1;
  w.ud.remote_qkey = wire::kQp1Qkey;
  ASSERT_TRUE(a.eng.post_send(1, w).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(parse(f[0]).deth()->qkey(), wire::kQp1Qkey);
  EXPECT_EQ(parse(f[0]).deth()->src_qpn(), 1u);
  deliver(b.eng, f, 0);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].qp_num, 1u);
  EXPECT_EQ(wc[0].src_qp, 1u);
  EXPECT_TRUE(std::equal(mad.begin(), mad.end(), rbuf.begin() + 40));
}

// A non-GSI QP cannot put the controlled Q_Key 0x80010000 on the wire: its own
// Q_Key replaces it, and QP1 drops the datagram.
TEST(UdGsi, ControlledQkeyNotForgeable) {
  Node a{1}, b{2};
  const uint32_t qa = a.create_qp(QpType::kUd);
  bring_up_ud(a, qa, 0x1234);
  Bytes mad = pattern(64, 7);
  SendWr w = make_wr(WrOpcode::kSend, 1, mad, a.reg(mad), 64);
  w.ud.ah.dgid = v4_gid(2);
  w.ud.ah.dmac = mac_of(2);
  w.ud.remote_qpn = 1;
  w.ud.remote_qkey = wire::kQp1Qkey;
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(parse(f[0]).deth()->qkey(), 0x1234u);
}

// IPv6 peers: the GRH area holds the received IPv6 header itself.
TEST(UdIpv6, GrhAreaHoldsTheIpv6Header) {
  Node a{1, node_config_v6(1)}, b{2, node_config_v6(2)};
  const uint32_t qa = a.create_qp(QpType::kUd), qb = b.create_qp(QpType::kUd);
  bring_up_ud(a, qa, kQkey);
  bring_up_ud(b, qb, kQkey);
  Bytes src = pattern(300, 4), dst(512, 0);
  const uint32_t ks = a.reg(src), kd = b.reg(dst);
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(1, dst, kd, 512)).ok());
  SendWr w = make_wr(WrOpcode::kSend, 1, src, ks, 300);
  w.ud.ah.dgid = v6_gid(2);
  w.ud.ah.dmac = mac_of(2);
  w.ud.ah.hop_limit = 7;
  w.ud.remote_qpn = qb;
  w.ud.remote_qkey = kQkey;
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  deliver(b.eng, f, 0);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].byte_len, 340u);
  EXPECT_EQ(wc[0].wc_flags, kWcGrh);
  EXPECT_EQ(wc[0].sl, 0x9u);  // RoCE v2 (UDP) over IPv6
  EXPECT_EQ(wc[0].src_qp, qa);
  EXPECT_EQ(dst[0] >> 4, 6);  // IPv6 version nibble
  EXPECT_EQ(dst[7], 7);       // hop limit
  EXPECT_EQ(0, std::memcmp(dst.data() + 8, v6_gid(1).data(), 16));
  EXPECT_EQ(0, std::memcmp(dst.data() + 24, v6_gid(2).data(), 16));
  EXPECT_EQ(0, std::memcmp(dst.data(), f[0].data() + 14, 40));
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin() + 40));
}

}  // namespace
}  // namespace burst::core::test
