// Two engines wired by hand: frames captured from one's tx_build are delivered
// to the other's rx_burst. End-to-end checks of every RC operation, byte for
// byte, including across the 24-bit PSN wrap and with frames dropped.
#include <gtest/gtest.h>

#include "tests/unit/transport/transport_test_util.h"

namespace burst::core::test {
namespace {

class PairTest : public ::testing::Test {
 protected:
  void connect(const RcOpts& oa = {}, const RcOpts& ob_in = {}) {
    qa = a.create_qp(QpType::kRc, QpCap{256, 256, 4, 4, 64});
    qb = b.create_qp(QpType::kRc, QpCap{256, 256, 4, 4, 64});
    RcOpts ob = ob_in;
    ob.sq_psn = oa.rq_psn;
    ob.rq_psn = oa.sq_psn;
    ob.mtu = oa.mtu;
    bring_up_rc(a, qa, b.id, qb, oa);
    bring_up_rc(b, qb, a.id, qa, ob);
  }
  Node a{1};
  Node b{2};
  uint32_t qa = 0, qb = 0;
};

TEST_F(PairTest, SendMultiPacketInOrder) {
  connect();
  Bytes src = pattern(3000, 1), dst(4096, 0);
  const uint32_t ls = a.reg(src), ld = b.reg(dst);
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(7, dst, ld, 4096)).ok());
  ASSERT_TRUE(a.eng.post_send(qa, make_wr(WrOpcode::kSend, 1, src, ls, 3000)).ok());
  pump(a, b, 0);
  auto wb = b.poll();
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wb[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wb[0].byte_len, 3000u);
  EXPECT_EQ(wb[0].wr_id, 7u);
  EXPECT_EQ(wb[0].src_qp, qa);
  EXPECT_EQ(wb[0].qp_num, qb);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin()));
  auto wa = a.poll();
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wa[0].opcode, WcOpcode::kSend);
  EXPECT_EQ(wa[0].wr_id, 1u);
}

TEST_F(PairTest, WriteWithImmAndRead) {
  connect();
  Bytes src = pattern(10000, 3), remote(12000, 0), back(10000, 0), rbuf(16, 0);
  const uint32_t ls = a.reg(src), lb = a.reg(back), kr = b.reg(remote), krb = b.reg(rbuf);
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(9, rbuf, krb, 16)).ok());
  SendWr w = make_wr(WrOpcode::kRdmaWriteWithImm, 1, src, ls, 10000);
  w.rdma = {Node::addr(remote) + 100, kr};
  w.imm_data = 0xabcd1234;
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  SendWr r = make_wr(WrOpcode::kRdmaRead, 2, back, lb, 10000);
  r.rdma = {Node::addr(remote) + 100, kr};
  ASSERT_TRUE(a.eng.post_send(qa, r).ok());
  pump(a, b, 0);
  EXPECT_TRUE(std::equal(src.begin(), src.end(), remote.begin() + 100));
  EXPECT_TRUE(std::equal(src.begin(), src.end(), back.begin()));
  auto wb = b.poll();
  ASSERT_EQ(wb.size(), 1u);
  EXPECT_EQ(wb[0].opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(wb[0].imm_data, 0xabcd1234u);
  EXPECT_EQ(wb[0].byte_len, 10000u);
  EXPECT_TRUE(wb[0].wc_flags & kWcWithImm);
  auto wa = a.poll();
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].wr_id, 1u);
  EXPECT_EQ(wa[0].opcode, WcOpcode::kRdmaWrite);
  EXPECT_EQ(wa[1].wr_id, 2u);
  EXPECT_EQ(wa[1].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(wa[1].status, WcStatus::kSuccess);
}

TEST_F(PairTest, Atomics) {
  connect();
  Bytes target(16, 0), res1(8, 0xee), res2(8, 0xee);
  uint64_t init = 100;
  std::memcpy(target.data() + 8, &init, 8);
  const uint32_t kt = b.reg(target), k1 = a.reg(res1), k2 = a.reg(res2);
  SendWr cas = make_wr(WrOpcode::kAtomicCmpAndSwp, 1, res1, k1, 8);
  cas.atomic = {Node::addr(target) + 8, 100, 555, kt};
  SendWr fa = make_wr(WrOpcode::kAtomicFetchAndAdd, 2, res2, k2, 8);
  fa.atomic = {Node::addr(target) + 8, 45, 0, kt};
  ASSERT_TRUE(a.eng.post_send(qa, cas).ok());
  ASSERT_TRUE(a.eng.post_send(qa, fa).ok());
  pump(a, b, 0);
  uint64_t v, o1, o2;
  std::memcpy(&v, target.data() + 8, 8);
  std::memcpy(&o1, res1.data(), 8);
  std::memcpy(&o2, res2.data(), 8);
  EXPECT_EQ(o1, 100u);
  EXPECT_EQ(o2, 555u);
  EXPECT_EQ(v, 600u);
  auto wa = a.poll();
  ASSERT_EQ(wa.size(), 2u);
  EXPECT_EQ(wa[0].opcode, WcOpcode::kCompSwap);
  EXPECT_EQ(wa[1].opcode, WcOpcode::kFetchAdd);
}

TEST_F(PairTest, PsnWrapBothSides) {
  RcOpts o;
  o.sq_psn = 0xFFFFF0;  // A's requester and B's responder wrap
  o.rq_psn = 0xFFFFF8;  // B's requester and A's responder wrap
  o.mtu = Mtu::k256;
  connect(o);
  Bytes src = pattern(256 * 40, 5), dst(256 * 40, 0);
  Bytes wsrc = pattern(256 * 30, 9), wdst(256 * 30, 0);
  Bytes rsrc = pattern(256 * 20 - 3, 11), rdst(256 * 20, 0);
  const uint32_t ls = a.reg(src), ld = b.reg(dst), lws = b.reg(wsrc), lwd = a.reg(wdst);
  const uint32_t lrs = a.reg(rsrc), lrd = b.reg(rdst);
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(1, dst, ld, static_cast<uint32_t>(dst.size()))).ok());
  ASSERT_TRUE(a.eng.post_send(qa, make_wr(WrOpcode::kSend, 1, src, ls, 256 * 40)).ok());
  SendWr w = make_wr(WrOpcode::kRdmaWrite, 2, wsrc, lws, 256 * 30);
  w.rdma = {Node::addr(wdst), lwd};
  ASSERT_TRUE(b.eng.post_send(qb, w).ok());
  SendWr r = make_wr(WrOpcode::kRdmaRead, 3, rdst, lrd, 256 * 20 - 3);
  r.rdma = {Node::addr(rsrc), lrs};
  ASSERT_TRUE(b.eng.post_send(qb, r).ok());
  pump(a, b, 0);
  EXPECT_EQ(src, dst);
  EXPECT_EQ(wsrc, wdst);
  for (size_t i = 0; i < wsrc.size(); ++i) if (wsrc[i] != wdst[i]) { ADD_FAILURE() << "first mismatch " << i; break; }
  EXPECT_TRUE(std::equal(rsrc.begin(), rsrc.end(), rdst.begin()));
  auto wa = a.poll();
  ASSERT_EQ(wa.size(), 1u);
  EXPECT_EQ(wa[0].status, WcStatus::kSuccess);
  auto wb = b.poll();
  ASSERT_EQ(wb.size(), 3u);  // the receive, then the WRITE and the READ in order
  EXPECT_EQ(wb[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wb[1].wr_id, 2u);
  EXPECT_EQ(wb[2].wr_id, 3u);
  EXPECT_EQ(wb[2].status, WcStatus::kSuccess);
  const Qp& qpa = EngineTestPeer::qp(a.eng, qa);
  const Qp& qpb = EngineTestPeer::qp(b.eng, qb);
  EXPECT_EQ(qpa.req.psn_hi.value(), (0xFFFFF0u + 40) & 0xFFFFFF);
  EXPECT_EQ(qpa.req.una.value(), (0xFFFFF0u + 40) & 0xFFFFFF);
  EXPECT_EQ(qpb.resp.epsn.value(), (0xFFFFF0u + 40) & 0xFFFFFF);
  EXPECT_EQ(qpb.req.psn_hi.value(), (0xFFFFF8u + 50) & 0xFFFFFF);
  EXPECT_EQ(qpb.req.una.value(), (0xFFFFF8u + 50) & 0xFFFFFF);
  EXPECT_EQ(qpa.resp.epsn.value(), (0xFFFFF8u + 50) & 0xFFFFFF);
}

// Random sizes in both directions with every 5th frame dropped: recovery by
// sequence NAKs, READ re-requests and the transport timer. Every byte checked.
TEST_F(PairTest, LossyMixedTrafficRecovers) {
  RcOpts o;
  o.mtu = Mtu::k512;
  o.timeout = 10;  // ~4 ms
  o.retry_cnt = 7;
  connect(o);
  constexpr int kMsgs = 24;
  std::vector<Bytes> srcs, dsts;
  std::vector<uint32_t> keys_a, keys_b;
  Bytes remote(1 << 17, 0);
  const uint32_t kr = b.reg(remote);
  Bytes rsrc = pattern(1 << 15, 77);
  const uint32_t krs = b.reg(rsrc);
  srcs.reserve(kMsgs);
  dsts.reserve(kMsgs);
  uint32_t remote_off = 0;
  std::vector<std::pair<uint64_t, size_t>> write_checks;  // remote offset, message
  for (int i = 0; i < kMsgs; ++i) {
    const uint32_t len = static_cast<uint32_t>((i * 1237 + 5) % 4000);
    srcs.push_back(pattern(len + 1, static_cast<uint8_t>(i)));
    dsts.push_back(Bytes(len + 1, 0));
    keys_a.push_back(a.reg(srcs.back()));
    keys_b.push_back(b.reg(dsts.back()));
  }
  for (int i = 0; i < kMsgs; ++i) {
    const uint32_t len = static_cast<uint32_t>(srcs[i].size() - 1);
    switch (i % 3) {
      case 0:
        ASSERT_TRUE(b.eng.post_recv(qb, make_recv(i, dsts[i], keys_b[i], len + 1)).ok());
        ASSERT_TRUE(a.eng.post_send(qa, make_wr(WrOpcode::kSend, i, srcs[i], keys_a[i], len)).ok());
        break;
      case 1: {
        SendWr w = make_wr(WrOpcode::kRdmaWrite, i, srcs[i], keys_a[i], len);
        w.rdma = {Node::addr(remote) + remote_off, kr};
        write_checks.push_back({remote_off, static_cast<size_t>(i)});
        remote_off += len;
        ASSERT_TRUE(a.eng.post_send(qa, w).ok());
        break;
      }
      default: {
        // READ into a registered copy on A of a slice of rsrc.
        SendWr r = make_wr(WrOpcode::kRdmaRead, i, srcs[i], keys_a[i], len);
        r.rdma = {Node::addr(rsrc) + static_cast<uint64_t>(i) * 100, krs};
        ASSERT_TRUE(a.eng.post_send(qa, r).ok());
        break;
      }
    }
  }
  uint64_t now = 0;
  uint64_t dropped = 0, counter = 0;
  for (int round = 0; round < 5000; ++round) {
    Frames fa = capture(a.eng, now);
    Frames fb = capture(b.eng, now);
    Frames keep_a, keep_b;
    for (auto& f : fa) { bool d = (++counter % 5 == 0); if (getenv("TRACE")) printf("%lu A->B op=%02x psn=%06x %s\n", now, opcode_of(f), psn_of(f), d ? "DROP" : ""); d ? ++dropped : (keep_a.push_back(f), 0); }
    for (auto& f : fb) { bool d = (++counter % 5 == 0); if (getenv("TRACE")) printf("%lu B->A op=%02x psn=%06x syn=%02x %s\n", now, opcode_of(f), psn_of(f), parse(f).aeth() ? syndrome_of(f) : 0, d ? "DROP" : ""); d ? ++dropped : (keep_b.push_back(f), 0); }
    deliver(b.eng, keep_a, now);
    deliver(a.eng, keep_b, now);
    now += 500'000;  // 0.5 ms per round
    a.eng.tick(now);
    b.eng.tick(now);
    if (fa.empty() && fb.empty() && !a.eng.tx_pending() && !b.eng.tx_pending() &&
        EngineTestPeer::qp(a.eng, qa).sq.tail == EngineTestPeer::qp(a.eng, qa).sq.head) {
      break;
    }
  }
  EXPECT_GT(dropped, 0u);
  auto wa = a.poll();
  ASSERT_EQ(wa.size(), static_cast<size_t>(kMsgs));
  for (int i = 0; i < kMsgs; ++i) {
    EXPECT_EQ(wa[i].wr_id, static_cast<uint64_t>(i));
    EXPECT_EQ(wa[i].status, WcStatus::kSuccess) << i;
  }
  for (int i = 0; i < kMsgs; ++i) {
    const uint32_t len = static_cast<uint32_t>(srcs[i].size() - 1);
    if (i % 3 == 0) {
      EXPECT_TRUE(std::equal(srcs[i].begin(), srcs[i].begin() + len, dsts[i].begin())) << i;
    } else if (i % 3 == 2) {
      EXPECT_TRUE(std::equal(srcs[i].begin(), srcs[i].begin() + len, rsrc.begin() + i * 100)) << i;
    }
  }
  for (auto [off, i] : write_checks) {
    const uint32_t len = static_cast<uint32_t>(srcs[i].size() - 1);
    // srcs[i] of a WRITE was not modified (only READ targets were).
    EXPECT_TRUE(std::equal(srcs[i].begin(), srcs[i].begin() + len, remote.begin() + off)) << i;
  }
  EXPECT_GT(a.eng.counters().retransmit_events, 0u);
  EXPECT_EQ(a.state(qa), QpState::kRts);
  EXPECT_EQ(b.state(qb), QpState::kRts);
}

}  // namespace
}  // namespace burst::core::test
