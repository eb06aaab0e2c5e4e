// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// UD multicast on one engine: a datagram to DQPN 0xFFFFFF and a group reaches
// every QP attached to that group (each with its own receive WQE and Q_Key
// check), and no other; attach/detach semantics as rxe / uverbs (twice is a
// success, detaching what is not attached EINVAL, only UD QPs, only multicast
// GIDs); destroying a QP detaches it.
#include <gtest/gtest.h>

#include "tests/unit/transport/transport_test_util.h"

namespace burst::core::test {
namespace {

constexpr uint32_t kQkey = 0x0badcafe;

std::array<uint8_t, 16> v4_group(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a, b, c, d};
}

std::array<uint8_t, 16> v6_group(uint8_t last) {
  return {0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x12, last};
}

class McastTest : public ::testing::Test {
 protected:
  void SetUp() override {
    qa = a.create_qp(QpType::kUd);
    bring_up_ud(a, qa, kQkey);
    for (uint32_t& q : qb) {
      q = b.create_qp(QpType::kUd);
      bring_up_ud(b, q, kQkey);
    }
    src = pattern(256, 7);
    ka = a.reg(src);
    for (int i = 0; i < 3; ++i) {
      dst[i].assign(512, 0);
      kb[i] = b.reg(dst[i]);
    }
  }
  void post_recvs() {
    for (int i = 0; i < 3; ++i)
      ASSERT_TRUE(b.eng.post_recv(qb[i], make_recv(10 + i, dst[i], kb[i], 512)).ok());
  }
  // A datagram from a to `group`, as a's engine builds it.
  Frames send_to(const std::array<uint8_t, 16>& group, uint32_t qkey = kQkey) {
    SendWr w = make_wr(WrOpcode::kSend, 1, src, ka, 200);
    w.ud.ah.dgid = group;
    w.ud.ah.dmac = {0x01, 0x00, 0x5e, static_cast<uint8_t>(group[13] & 0x7f), group[14], group[15]};
    w.ud.remote_qpn = wire::kMulticastQpn;
    w.ud.remote_qkey = qkey;
    EXPECT_TRUE(a.eng.post_send(qa, w).ok());
    Frames f = capture(a.eng, 0);
    a.poll();
    return f;
  }
  uint64_t drops(Drop d) const { return b.eng.counters().rx_drop[static_cast<size_t>(d)]; }

  Node a{1, 1514};
  Node b{2, 1514};
  uint32_t qa = 0, ka = 0;
  uint32_t qb[3] = {}, kb[3] = {};
  Bytes src, dst[3];
};

TEST_F(McastTest, DeliveredToEveryAttachedQpOnly) {
  const auto g = v4_group(239, 1, 2, 3);
  ASSERT_TRUE(b.eng.attach_mcast(qb[0], g).ok());
  ASSERT_TRUE(b.eng.attach_mcast(qb[1], g).ok());
  post_recvs();
  Frames f = send_to(g);
  ASSERT_EQ(f.size(), 1u);
  wire::PacketView pv = parse(f[0]);
  EXPECT_EQ(pv.bth().dest_qpn(), wire::kMulticastQpn);
  EXPECT_EQ(pv.dgid(), g);
  EXPECT_EQ(pv.dmac()[0], 0x01);
  deliver(b.eng, f, 0);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 2u);
  for (const Wc& w : wc) {
    EXPECT_EQ(w.status, WcStatus::kSuccess);
    EXPECT_EQ(w.byte_len, 240u);
    EXPECT_EQ(w.src_qp, qa);
    EXPECT_EQ(w.wc_flags, kWcGrh);
    EXPECT_EQ(w.sl, 0xAu);
    EXPECT_TRUE(w.qp_num == qb[0] || w.qp_num == qb[1]);
  }
  EXPECT_NE(wc[0].qp_num, wc[1].qp_num);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(std::equal(src.begin(), src.begin() + 200, dst[i].begin() + 40));
    EXPECT_EQ(0, std::memcmp(dst[i].data() + 20 + 16, g.data() + 12, 4));  // IPv4 daddr = group
  }
  EXPECT_EQ(dst[2][40], 0);  // qb[2] is not attached
  EXPECT_EQ(b.eng.counters().ud_received, 2u);
}

TEST_F(McastTest, OtherGroupAndQkeyMismatchDropped) {
  ASSERT_TRUE(b.eng.attach_mcast(qb[0], v4_group(239, 1, 2, 3)).ok());
  post_recvs();
  deliver(b.eng, send_to(v4_group(239, 1, 2, 4)), 0);
  EXPECT_EQ(drops(Drop::kMcastUnattached), 1u);
  deliver(b.eng, send_to(v4_group(239, 1, 2, 3), kQkey + 1), 0);
  EXPECT_EQ(drops(Drop::kBadQkey), 1u);
  EXPECT_TRUE(b.poll().empty());
}

TEST_F(McastTest, AttachTwiceIsOneAttachment) {
  const auto g = v4_group(224, 0, 0, 100);
  ASSERT_TRUE(b.eng.attach_mcast(qb[0], g).ok());
  ASSERT_TRUE(b.eng.attach_mcast(qb[0], g).ok());
  EXPECT_EQ(b.eng.mcast_groups(), 1u);
  post_recvs();
  deliver(b.eng, send_to(g), 0);
  EXPECT_EQ(b.poll().size(), 1u);  // one completion, not two
  ASSERT_TRUE(b.eng.detach_mcast(qb[0], g).ok());
  EXPECT_EQ(b.eng.detach_mcast(qb[0], g).errc(), Errc::kInvalid);  // one detach was enough
  EXPECT_EQ(b.eng.mcast_groups(), 0u);
}

TEST_F(McastTest, DetachedQpReceivesNothing) {
  const auto g = v4_group(239, 9, 9, 9);
  ASSERT_TRUE(b.eng.attach_mcast(qb[0], g).ok());
  ASSERT_TRUE(b.eng.attach_mcast(qb[1], g).ok());
  ASSERT_TRUE(b.eng.detach_mcast(qb[0], g).ok());
  post_recvs();
  deliver(b.eng, send_to(g), 0);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].qp_num, qb[1]);
}

TEST_F(McastTest, AttachRules) {
  const auto g = v4_group(239, 1, 1, 1);
  EXPECT_EQ(b.eng.attach_mcast(qb[0], v4_gid(9)).errc(), Errc::kInvalid);  // unicast
  EXPECT_EQ(b.eng.attach_mcast(qb[0], v6_gid(9)).errc(), Errc::kInvalid);
  EXPECT_TRUE(b.eng.attach_mcast(qb[0], v6_group(1)).ok());
  const uint32_t rc = b.create_qp(QpType::kRc);
  EXPECT_EQ(b.eng.attach_mcast(rc, g).errc(), Errc::kInvalid);
  EXPECT_EQ(b.eng.attach_mcast(0x123456, g).errc(), Errc::kNotFound);
  EXPECT_EQ(b.eng.detach_mcast(qb[1], g).errc(), Errc::kInvalid);  // never attached
}

TEST_F(McastTest, DestroyDetaches) {
  const auto g = v4_group(239, 4, 4, 4);
  ASSERT_TRUE(b.eng.attach_mcast(qb[2], g).ok());
  EXPECT_EQ(b.eng.mcast_groups(), 1u);
  ASSERT_TRUE(b.eng.destroy_qp(qb[2]).ok());
  EXPECT_EQ(b.eng.mcast_groups(), 0u);
  deliver(b.eng, send_to(g), 0);
  EXPECT_EQ(drops(Drop::kMcastUnattached), 1u);
}

TEST_F(McastTest, GroupHoldsAtMostTheLimit) {
  const auto g = v4_group(239, 5, 5, 5);
  std::vector<uint32_t> qps;
  for (uint32_t i = 0; i < BURST_MAX_MCAST_QP_ATTACH; ++i) {
    qps.push_back(b.create_qp(QpType::kUd));
    ASSERT_TRUE(b.eng.attach_mcast(qps.back(), g).ok()) << i;
  }
  EXPECT_EQ(b.eng.attach_mcast(qb[0], g).errc(), Errc::kNoMemory);
}

TEST(McastIpv6, GroupOverIpv6) {
  Node a{1, node_config_v6(1)}, b{2, node_config_v6(2)};
  const uint32_t qa = a.create_qp(QpType::kUd), qb = b.create_qp(QpType::kUd);
  bring_up_ud(a, qa, kQkey);
  bring_up_ud(b, qb, kQkey);
  Bytes src = pattern(100, 2), dst(256, 0);
  const uint32_t ks = a.reg(src), kd = b.reg(dst);
  const auto g = v6_group(7);
  ASSERT_TRUE(b.eng.attach_mcast(qb, g).ok());
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(1, dst, kd, 256)).ok());
  SendWr w = make_wr(WrOpcode::kSend, 1, src, ks, 100);
  w.ud.ah.dgid = g;
  w.ud.ah.dmac = {0x33, 0x33, g[12], g[13], g[14], g[15]};
  w.ud.remote_qpn = wire::kMulticastQpn;
  w.ud.remote_qkey = kQkey;
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  deliver(b.eng, capture(a.eng, 0), 0);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].sl, 0x9u);
  EXPECT_EQ(0, std::memcmp(dst.data() + 24, g.data(), 16));  // IPv6 daddr = group
}

}  // namespace
}  // namespace burst::core::test
