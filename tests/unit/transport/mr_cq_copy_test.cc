// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// MR table (keys, PD, bounds, access, generations, invalidation), the copy
// engine and the CQ ring, including CQ overrun handling in the engine.
#include <gtest/gtest.h>

#include "tests/unit/transport/transport_test_util.h"

namespace burst::core::test {
namespace {

TEST(MrTable, LocalLookupChecksKeyPdBoundsAccess) {
  MrTable t(16, 4);
  const uint32_t pd = t.alloc_pd(), other_pd = t.alloc_pd();
  ASSERT_NE(pd, 0u);
  Bytes buf(4096);
  uint32_t lkey = 0, rkey = 0;
  ASSERT_TRUE(t.reg_mr(pd, buf.data(), 0x10000, 4096, kAccessLocalWrite, &lkey, &rkey).ok());
  EXPECT_EQ(lkey, rkey);
  WcStatus err = WcStatus::kSuccess;
  EXPECT_EQ(t.local(pd, lkey, 0x10000, 4096, kAccessLocalWrite, &err), buf.data());
  EXPECT_EQ(t.local(pd, lkey, 0x10010, 16, 0, &err), buf.data() + 16);
  EXPECT_EQ(t.local(pd, lkey, 0x10000 + 4096, 0, 0, &err), buf.data() + 4096);  // empty at the end
  EXPECT_EQ(err, WcStatus::kSuccess);
  EXPECT_EQ(t.local(pd, lkey, 0x10001, 4096, 0, &err), nullptr);  // one byte past the end
  EXPECT_EQ(err, WcStatus::kLocProtErr);
  EXPECT_EQ(t.local(pd, lkey, 0xFFFF, 16, 0, &err), nullptr);           // before the start
  EXPECT_EQ(t.local(pd, lkey, UINT64_MAX - 2, 16, 0, &err), nullptr);   // wraps
  EXPECT_EQ(t.local(other_pd, lkey, 0x10000, 16, 0, &err), nullptr);    // other PD
  EXPECT_EQ(t.local(pd, lkey ^ 0x100, 0x10000, 16, 0, &err), nullptr);  // other index
  EXPECT_EQ(t.local(pd, lkey + 1, 0x10000, 16, 0, &err), nullptr);      // other generation
  uint32_t ro = 0;
  ASSERT_TRUE(t.reg_mr(pd, buf.data(), 0x20000, 4096, 0, &ro, &rkey).ok());
  EXPECT_NE(t.local(pd, ro, 0x20000, 16, 0, &err), nullptr);  // gather needs no access flag
  EXPECT_EQ(t.local(pd, ro, 0x20000, 16, kAccessLocalWrite, &err), nullptr);  // placement does
}

TEST(MrTable, RemoteLookupNeedsRemoteAccess) {
  MrTable t;
  const uint32_t pd = t.alloc_pd();
  Bytes buf(256);
  uint32_t k = 0, rk = 0;
  ASSERT_TRUE(
      t.reg_mr(pd, buf.data(), 0x1000, 256, kAccessLocalWrite | kAccessRemoteRead, &k, &rk).ok());
  EXPECT_NE(t.remote(pd, rk, 0x1000, 256, kAccessRemoteRead), nullptr);
  EXPECT_EQ(t.remote(pd, rk, 0x1000, 256, kAccessRemoteWrite), nullptr);
  EXPECT_EQ(t.remote(pd, rk, 0x1000, 256, kAccessRemoteAtomic), nullptr);
  EXPECT_EQ(t.remote(pd, rk, 0x1000, 256, 0), nullptr);  // remote access always needs a flag
  EXPECT_EQ(t.remote(pd, rk, 0x1001, 256, kAccessRemoteRead), nullptr);
  EXPECT_EQ(t.remote(pd + 1, rk, 0x1000, 8, kAccessRemoteRead), nullptr);
  // libibverbs rules for the access flags.
  EXPECT_EQ(t.reg_mr(pd, buf.data(), 0x1000, 256, kAccessRemoteWrite, &k, &rk).errc(),
            Errc::kInvalid);
  EXPECT_EQ(t.reg_mr(pd, buf.data(), 0x1000, 256, kAccessRemoteAtomic, &k, &rk).errc(),
            Errc::kInvalid);
  EXPECT_EQ(t.reg_mr(pd, buf.data(), 0x1000, 256, 1u << 7, &k, &rk).errc(), Errc::kInvalid);
  EXPECT_EQ(t.reg_mr(99, buf.data(), 0x1000, 256, 0, &k, &rk).errc(), Errc::kNotFound);
}

TEST(MrTable, ReRegistrationChangesTheKeyGeneration) {
  MrTable t(1, 1);  // a single entry: the next registration reuses it
  const uint32_t pd = t.alloc_pd();
  Bytes buf(64);
  uint32_t k1 = 0, k2 = 0, r = 0;
  ASSERT_TRUE(t.reg_mr(pd, buf.data(), 0x1000, 64, kAccessLocalWrite, &k1, &r).ok());
  EXPECT_EQ(t.reg_mr(pd, buf.data(), 0x1000, 64, 0, &k2, &r).errc(), Errc::kNoMemory);
  EXPECT_EQ(t.dealloc_pd(pd).errc(), Errc::kBusy);
  ASSERT_TRUE(t.dereg_mr(k1).ok());
  EXPECT_EQ(t.dereg_mr(k1).errc(), Errc::kNotFound);
  ASSERT_TRUE(t.reg_mr(pd, buf.data(), 0x1000, 64, kAccessLocalWrite, &k2, &r).ok());
  EXPECT_EQ(k1 >> 8, k2 >> 8);      // same index
  EXPECT_NE(k1 & 0xff, k2 & 0xff);  // new generation
  WcStatus err;
  EXPECT_EQ(t.local(pd, k1, 0x1000, 8, 0, &err), nullptr);  // the stale key misses
  EXPECT_NE(t.local(pd, k2, 0x1000, 8, 0, &err), nullptr);
  ASSERT_TRUE(t.dereg_mr(k2).ok());
  EXPECT_TRUE(t.dealloc_pd(pd).ok());
}

TEST(MrTable, InvalidateRkey) {
  MrTable t;
  const uint32_t pd = t.alloc_pd(), other = t.alloc_pd();
  Bytes buf(64);
  uint32_t k = 0, rk = 0;
  ASSERT_TRUE(
      t.reg_mr(pd, buf.data(), 0x1000, 64, kAccessLocalWrite | kAccessRemoteWrite, &k, &rk).ok());
  EXPECT_EQ(t.invalidate_rkey(other, rk).errc(), Errc::kPermission);
  EXPECT_EQ(t.invalidate_rkey(pd, rk + 1).errc(), Errc::kNotFound);
  ASSERT_TRUE(t.invalidate_rkey(pd, rk).ok());
  EXPECT_EQ(t.remote(pd, rk, 0x1000, 8, kAccessRemoteWrite), nullptr);
  EXPECT_EQ(t.invalidate_rkey(pd, rk).errc(), Errc::kNotFound);  // already invalid
  EXPECT_TRUE(t.dereg_mr(k).ok());
}

TEST(CopyEngine, TicketsRingFullAndCompletion) {
  CopyEngine c(CopyKind::kCpu, 4);
  Bytes src = pattern(64, 3), dst(64, 0);
  uint64_t last = 0;
  for (int i = 0; i < 4; ++i) {
    const uint64_t t = c.submit(dst.data() + i * 16, src.data() + i * 16, 16);
    EXPECT_EQ(t, last + 1);
    last = t;
  }
  EXPECT_EQ(c.submit(dst.data(), src.data(), 1), 0u);  // ring full
  EXPECT_FALSE(c.idle());
  EXPECT_EQ(dst, Bytes(64, 0));  // nothing executed before poll()
  EXPECT_EQ(c.poll(), last);
  EXPECT_EQ(dst, src);
  EXPECT_TRUE(c.idle());
  EXPECT_EQ(c.submit(dst.data(), src.data(), 0), last + 1);
  c.drain();
  EXPECT_EQ(c.completed(), last + 1);
  EXPECT_EQ(c.bytes_copied(), 64u);
}

TEST(Cq, RingAndOverrun) {
  Cq cq(2);
  Wc w;
  w.wr_id = 1;
  EXPECT_TRUE(cq.push(w));
  w.wr_id = 2;
  EXPECT_TRUE(cq.push(w));
  w.wr_id = 3;
  EXPECT_FALSE(cq.push(w));
  EXPECT_TRUE(cq.error());
  Wc out[4];
  ASSERT_EQ(cq.poll(out, 4), 2);
  EXPECT_EQ(out[0].wr_id, 1u);
  EXPECT_EQ(out[1].wr_id, 2u);
  EXPECT_FALSE(cq.push(w));  // stays in error
  EXPECT_EQ(cq.dropped(), 2u);
}

// ibv_resize_cq's Engine half: the completions waiting stay, in order, and the
// depth never goes below their number.
TEST(Cq, ResizeKeepsWaitingCompletionsInOrder) {
  Cq cq(4);
  Wc w;
  for (uint64_t i = 0; i < 6; ++i) {  // wraps the ring of 4 once
    w.wr_id = i;
    ASSERT_TRUE(cq.push(w));
    if (i < 3) {
      Wc out;
      ASSERT_EQ(cq.poll(&out, 1), 1);
    }
  }
  ASSERT_EQ(cq.size(), 3u);
  cq.resize(100);
  EXPECT_EQ(cq.depth(), 100u);
  for (uint64_t i = 6; i < 50; ++i) {
    w.wr_id = i;
    ASSERT_TRUE(cq.push(w));
  }
  cq.resize(2);  // below the 47 waiting: they decide
  EXPECT_EQ(cq.depth(), 47u);
  EXPECT_FALSE(cq.push(w));
  Wc out[64];
  ASSERT_EQ(cq.poll(out, 64), 47);
  for (int i = 0; i < 47; ++i) EXPECT_EQ(out[i].wr_id, 3u + i);
}

TEST(Cq, EngineResizeChecksItsArguments) {
  Node a{1};
  EXPECT_EQ(a.eng.resize_cq(a.cq, 0).errc(), Errc::kInvalid);
  EXPECT_EQ(a.eng.resize_cq(a.cq + 1000, 8).errc(), Errc::kNotFound);
  EXPECT_TRUE(a.eng.resize_cq(a.cq, 8).ok());
}

// CQ overrun in the engine: the completion that does not fit is dropped and
// counted, the CQ is in error, and the QP that lost it goes to ERR.
TEST(Cq, EngineOverrunErrorsTheQp) {
  Node a{1, 9014, 2}, b{2};
  const uint32_t qa = a.create_qp(), qb = b.create_qp();
  bring_up_rc(a, qa, 2, qb);
  RcOpts ob;
  ob.sq_psn = 0x200;
  ob.rq_psn = 0x100;
  bring_up_rc(b, qb, 1, qa, ob);
  Bytes buf(64), rbuf(64 * 8);
  const uint32_t k = a.reg(buf), rk = b.reg(rbuf);
  for (int i = 0; i < 3; ++i) {
    SendWr w = make_wr(WrOpcode::kRdmaWrite, i, buf, k, 8);
    w.rdma = {Node::addr(rbuf) + i * 8u, rk};
    ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  }
  pump(a, b, 0);
  auto wcs = a.poll();
  ASSERT_EQ(wcs.size(), 2u);
  EXPECT_EQ(wcs[0].wr_id, 0u);
  EXPECT_EQ(wcs[1].wr_id, 1u);
  EXPECT_EQ(a.eng.counters().cq_overflows, 1u);
  EXPECT_TRUE(a.eng.cq_error(a.cq));
  EXPECT_EQ(a.state(qa), QpState::kErr);
}

}  // namespace
}  // namespace burst::core::test
