// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Requester segmentation at every path MTU (256..4096) and edge sizes (0, 1,
// MTU-1, MTU, MTU+1, 3*MTU+5): opcodes FIRST/MIDDLE/LAST/ONLY, payload sizes,
// consecutive PSNs, RETH only on FIRST/ONLY of a WRITE, ImmDt/IETH only on the
// last packet, AckReq on the last packet, READ PSN accounting. Each message is
// also delivered to a real responder engine and checked byte for byte.
#include <gtest/gtest.h>

#include <tuple>

#include "tests/unit/transport/transport_test_util.h"

namespace burst::core::test {
namespace {

using namespace wire::op;  // NOLINT(build/namespaces)

class SegmentationTest : public ::testing::TestWithParam<std::tuple<Mtu, int>> {
 protected:
  void SetUp() override {
    mtu_enum = std::get<0>(GetParam());
    mtu = mtu_bytes(mtu_enum);
    const int which = std::get<1>(GetParam());
    const uint32_t sizes[] = {0, 1, mtu - 1, mtu, mtu + 1, 3 * mtu + 5};
    len = sizes[which];
    RcOpts o;
    o.mtu = mtu_enum;
    o.sq_psn = 0xFFFFFE;  // every case crosses or touches the PSN wrap
    o.rq_psn = 0x500;
    qa = a.create_qp();
    qb = b.create_qp();
    bring_up_rc(a, qa, 2, qb, o);
    RcOpts ob = o;
    ob.sq_psn = 0x500;
    ob.rq_psn = 0xFFFFFE;
    bring_up_rc(b, qb, 1, qa, ob);
    src = pattern(len + 8, 0x31);
    dst.assign(len + 8, 0);
    ka = a.reg(src);
    kb = b.reg(dst);
  }
  uint32_t expected_packets() const { return len == 0 ? 1 : (len + mtu - 1) / mtu; }

  Node a{1};
  Node b{2};
  Mtu mtu_enum = Mtu::k1024;
  uint32_t mtu = 0, len = 0, qa = 0, qb = 0, ka = 0, kb = 0;
  Bytes src, dst;
};

TEST_P(SegmentationTest, SendWithImmediate) {
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(5, dst, kb, len + 8)).ok());
  SendWr w = make_wr(WrOpcode::kSendWithImm, 1, src, ka, len);
  w.imm_data = 0x01020304;
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  Frames f = capture(a.eng, 0);
  const uint32_t n = expected_packets();
  ASSERT_EQ(f.size(), n);
  for (uint32_t k = 0; k < n; ++k) {
    wire::PacketView pv = parse(f[k]);
    EXPECT_EQ(pv.bth().psn().value(), (0xFFFFFEu + k) & 0xFFFFFF);
    EXPECT_EQ(pv.bth().dest_qpn(), qb);
    const uint8_t op = n == 1       ? kRcSendOnlyWithImmediate
                       : k == 0     ? kRcSendFirst
                       : k + 1 == n ? kRcSendLastWithImmediate
                                    : kRcSendMiddle;
    EXPECT_EQ(pv.opcode, op) << k;
    EXPECT_EQ(pv.payload_len, std::min(mtu, len - std::min(len, k * mtu))) << k;
    EXPECT_EQ(pv.bth().ack_req(), k + 1 == n) << k;
    EXPECT_EQ(pv.immdt() != nullptr, k + 1 == n);
    if (pv.immdt()) {
      EXPECT_EQ(pv.immdt()->imm(), 0x01020304u);
    }
    EXPECT_EQ(pv.reth(), nullptr);
    EXPECT_EQ(0, std::memcmp(pv.payload(), src.data() + k * mtu, pv.payload_len));
    EXPECT_LE(f[k].size(), mtu + 14 + 20 + 8 + 12 + 4 + 4 + 3);
  }
  deliver(b.eng, f, 0);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].byte_len, len);
  EXPECT_EQ(wc[0].imm_data, 0x01020304u);
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + len, dst.begin()));
  Frames acks = capture(b.eng, 0);
  ASSERT_EQ(acks.size(), 1u);  // coalesced: one ACK for the message
  EXPECT_EQ(psn_of(acks[0]), (0xFFFFFEu + n - 1) & 0xFFFFFF);
  deliver(a.eng, acks, 0);
  ASSERT_EQ(a.poll().size(), 1u);
}

TEST_P(SegmentationTest, WriteRethOnlyOnFirst) {
  SendWr w = make_wr(WrOpcode::kRdmaWrite, 1, src, ka, len);
  w.rdma = {Node::addr(dst) + 3, kb};
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  Frames f = capture(a.eng, 0);
  const uint32_t n = expected_packets();
  ASSERT_EQ(f.size(), n);
  for (uint32_t k = 0; k < n; ++k) {
    wire::PacketView pv = parse(f[k]);
    const uint8_t op = n == 1       ? kRcRdmaWriteOnly
                       : k == 0     ? kRcRdmaWriteFirst
                       : k + 1 == n ? kRcRdmaWriteLast
                                    : kRcRdmaWriteMiddle;
    EXPECT_EQ(pv.opcode, op) << k;
    ASSERT_EQ(pv.reth() != nullptr, k == 0) << k;
    if (k == 0) {
      EXPECT_EQ(pv.reth()->va(), Node::addr(dst) + 3);
      EXPECT_EQ(pv.reth()->rkey(), kb);
      EXPECT_EQ(pv.reth()->dma_len(), len);
    }
    EXPECT_EQ(pv.bth().ack_req(), k + 1 == n);
  }
  deliver(b.eng, f, 0);
  EXPECT_TRUE(std::equal(src.begin(), src.begin() + len, dst.begin() + 3));
  EXPECT_TRUE(b.poll().empty());  // a WRITE consumes no receive WQE
  deliver(a.eng, capture(b.eng, 0), 0);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRdmaWrite);
}

// IBV_SEND_SOLICITED: BTH SE on the last packet only, of a SEND and of an
// RDMA WRITE with immediate (IBA 9.2.3, as rxe); the receive completion says
// solicited. Without the flag no packet carries SE and the completion does not.
TEST_P(SegmentationTest, SolicitedEventBitOnLastPacketOnly) {
  for (const bool solicited : {true, false}) {
    for (const WrOpcode op : {WrOpcode::kSend, WrOpcode::kRdmaWriteWithImm}) {
      ASSERT_TRUE(b.eng.post_recv(qb, make_recv(5, dst, kb, len + 8)).ok());
      SendWr w = make_wr(op, 1, src, ka, len);
      w.rdma = {Node::addr(dst), kb};
      if (solicited) w.send_flags |= kSendSolicited;
      ASSERT_TRUE(a.eng.post_send(qa, w).ok());
      Frames f = capture(a.eng, 0);
      const uint32_t n = expected_packets();
      ASSERT_EQ(f.size(), n);
      for (uint32_t k = 0; k < n; ++k) {
        EXPECT_EQ(parse(f[k]).bth().se(), solicited && k + 1 == n) << k;
      }
      deliver(b.eng, f, 0);
      auto wc = b.poll();
      ASSERT_EQ(wc.size(), 1u);
      EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
      EXPECT_EQ(wc[0].solicited, solicited);
      deliver(a.eng, capture(b.eng, 0), 0);
      ASSERT_EQ(a.poll().size(), 1u);
    }
  }
}

// A solicited SEND's SE bit is not carried by a WRITE or a READ (no SE there).
TEST_P(SegmentationTest, SolicitedFlagIgnoredOnWrite) {
  SendWr w = make_wr(WrOpcode::kRdmaWrite, 1, src, ka, len);
  w.rdma = {Node::addr(dst), kb};
  w.send_flags |= kSendSolicited;
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  for (const Bytes& frame : capture(a.eng, 0)) EXPECT_FALSE(parse(frame).bth().se());
}

TEST_P(SegmentationTest, ReadConsumesOnePsnPerResponse) {
  Bytes remote = pattern(len + 8, 0x77);
  const uint32_t kr = b.reg(remote);
  Bytes local(len + 8, 0);
  const uint32_t kl = a.reg(local);
  SendWr r = make_wr(WrOpcode::kRdmaRead, 1, local, kl, len);
  r.rdma = {Node::addr(remote), kr};
  ASSERT_TRUE(a.eng.post_send(qa, r).ok());
  ASSERT_TRUE(a.eng.post_send(qa, make_wr(WrOpcode::kSend, 2, src, ka, 1)).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 2u);
  wire::PacketView req = parse(f[0]);
  EXPECT_EQ(req.opcode, kRcRdmaReadRequest);
  EXPECT_EQ(req.reth()->dma_len(), len);
  EXPECT_TRUE(req.bth().ack_req());
  const uint32_t n = expected_packets();
  EXPECT_EQ(psn_of(f[1]), (0xFFFFFEu + n) & 0xFFFFFF);  // the SEND follows the READ's PSNs
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(3, dst, kb, len + 8)).ok());
  deliver(b.eng, f, 0);
  Frames resp = capture(b.eng, 0);
  ASSERT_EQ(resp.size(), n + 1);  // READ responses, then the ACK of the SEND
  for (uint32_t k = 0; k < n; ++k) {
    wire::PacketView pv = parse(resp[k]);
    const uint8_t op = n == 1       ? kRcRdmaReadResponseOnly
                       : k == 0     ? kRcRdmaReadResponseFirst
                       : k + 1 == n ? kRcRdmaReadResponseLast
                                    : kRcRdmaReadResponseMiddle;
    EXPECT_EQ(pv.opcode, op) << k;
    EXPECT_EQ(pv.aeth() != nullptr, op != kRcRdmaReadResponseMiddle);
    if (pv.aeth()) {
      EXPECT_EQ(pv.aeth()->syndrome(), 0x1f);
    }
    EXPECT_EQ(pv.bth().psn().value(), (0xFFFFFEu + k) & 0xFFFFFF);
    EXPECT_EQ(pv.payload_len, std::min(mtu, len - std::min(len, k * mtu)));
  }
  EXPECT_EQ(opcode_of(resp[n]), kRcAcknowledge);
  deliver(a.eng, resp, 0);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(std::equal(remote.begin(), remote.begin() + len, local.begin()));
}

INSTANTIATE_TEST_SUITE_P(AllMtus, SegmentationTest,
                         ::testing::Combine(::testing::Values(Mtu::k256, Mtu::k512, Mtu::k1024,
                                                              Mtu::k2048, Mtu::k4096),
                                            ::testing::Range(0, 6)));

// A long message carries AckReq every ack_coalesce_pkts packets (16) and on the
// last one, so the responder acknowledges progress within big messages.
TEST(Segmentation, PeriodicAckRequest) {
  Node a{1};
  const uint32_t qa = a.create_qp();
  RcOpts o;
  o.mtu = Mtu::k256;
  o.sq_psn = 0x10;
  bring_up_rc(a, qa, 2, 0x99, o);
  Bytes src = pattern(256 * 40, 1);
  ASSERT_TRUE(a.eng.post_send(qa, make_wr(WrOpcode::kSend, 1, src, a.reg(src), 256 * 40)).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 40u);
  std::vector<uint32_t> with_ack;
  for (uint32_t k = 0; k < 40; ++k) {
    if (parse(f[k]).bth().ack_req()) with_ack.push_back(k);
  }
  EXPECT_EQ(with_ack, (std::vector<uint32_t>{15, 31, 39}));
}

// SEND_WITH_INVALIDATE: IETH only on the last packet.
TEST(Segmentation, SendWithInvalidateCarriesIethOnLast) {
  Node a{1};
  const uint32_t qa = a.create_qp();
  bring_up_rc(a, qa, 2, 0x99);
  Bytes src = pattern(3000, 1);
  SendWr w = make_wr(WrOpcode::kSendWithInv, 1, src, a.reg(src), 3000);
  w.invalidate_rkey = 0x4242;
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(opcode_of(f[0]), kRcSendFirst);
  EXPECT_EQ(opcode_of(f[1]), kRcSendMiddle);
  EXPECT_EQ(opcode_of(f[2]), kRcSendLastWithInvalidate);
  EXPECT_EQ(parse(f[2]).ieth()->rkey(), 0x4242u);
}

// Inline data is copied at post time: changing the buffer afterwards does not
// change what goes out.
TEST(Segmentation, InlineCopiedAtPost) {
  Node a{1};
  const uint32_t qa = a.create_qp(QpType::kRc, QpCap{16, 16, 2, 2, 64});
  bring_up_rc(a, qa, 2, 0x99);
  Bytes src = pattern(40, 9);
  const Bytes original = src;
  SendWr w;
  w.wr_id = 1;
  w.opcode = WrOpcode::kSend;
  w.send_flags = kSendInline;
  w.num_sge = 2;
  w.sg_list[0] = {Node::addr(src), 10, 0xdead};  // lkeys are ignored for inline data
  w.sg_list[1] = {Node::addr(src) + 10, 30, 0xbeef};
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  std::fill(src.begin(), src.end(), 0);
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  wire::PacketView pv = parse(f[0]);
  ASSERT_EQ(pv.payload_len, 40u);
  EXPECT_EQ(0, std::memcmp(pv.payload(), original.data(), 40));
}

// Several SGEs gathered into one packet stream.
TEST(Segmentation, GatherFromSeveralSges) {
  Node a{1};
  const uint32_t qa = a.create_qp();
  bring_up_rc(a, qa, 2, 0x99);
  Bytes s1 = pattern(700, 1), s2 = pattern(900, 2), s3 = pattern(5, 3);
  SendWr w;
  w.opcode = WrOpcode::kSend;
  w.num_sge = 3;
  w.sg_list[0] = {Node::addr(s1), 700, a.reg(s1)};
  w.sg_list[1] = {Node::addr(s2), 900, a.reg(s2)};
  w.sg_list[2] = {Node::addr(s3), 5, a.reg(s3)};
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 2u);
  Bytes all = s1;
  all.insert(all.end(), s2.begin(), s2.end());
  all.insert(all.end(), s3.begin(), s3.end());
  wire::PacketView p0 = parse(f[0]), p1 = parse(f[1]);
  ASSERT_EQ(p0.payload_len, 1024u);
  ASSERT_EQ(p1.payload_len, 581u);
  EXPECT_EQ(0, std::memcmp(p0.payload(), all.data(), 1024));
  EXPECT_EQ(0, std::memcmp(p1.payload(), all.data() + 1024, 581));
}

}  // namespace
}  // namespace burst::core::test
