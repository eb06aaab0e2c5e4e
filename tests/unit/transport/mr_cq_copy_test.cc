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

// ibv_rereg_mr: PD and access change in place with the same keys (as rxe); a
// new translation gives new keys and the old ones miss; an MR with a bound
// window is busy; a refused rereg leaves the MR as it was.
TEST(MrTable, ReregChangesPdAccessAndTranslation) {
  MrTable t(16, 4);
  const uint32_t pd = t.alloc_pd(), pd2 = t.alloc_pd();
  Bytes a(4096), b(8192);
  uint32_t lkey = 0, rkey = 0, nl = 0, nr = 0;
  ASSERT_TRUE(t.reg_mr(pd, a.data(), 0x10000, 4096, kAccessLocalWrite, &lkey, &rkey).ok());
  EXPECT_EQ(t.remote(pd, rkey, 0x10000, 16, kAccessRemoteWrite), nullptr);
  ASSERT_TRUE(t.rereg_mr(lkey, pd2, a.data(), 0x10000, 4096,
                         kAccessLocalWrite | kAccessRemoteWrite | kAccessMwBind, 0, false, &nl,
                         &nr)
                  .ok());
  EXPECT_EQ(nl, lkey);
  EXPECT_EQ(nr, rkey);
  EXPECT_EQ(t.remote(pd2, rkey, 0x10000, 16, kAccessRemoteWrite), a.data());
  EXPECT_EQ(t.remote(pd, rkey, 0x10000, 16, kAccessRemoteWrite), nullptr);  // the old PD
  EXPECT_TRUE(t.dealloc_pd(pd).ok()) << "the MR left the old PD";
  // Bad access (remote write without local write): refused, MR unchanged.
  EXPECT_EQ(t.rereg_mr(lkey, pd2, a.data(), 0x10000, 4096, kAccessRemoteWrite, 0, false, &nl, &nr)
                .errc(),
            Errc::kInvalid);
  EXPECT_EQ(t.remote(pd2, rkey, 0x10000, 16, kAccessRemoteWrite), a.data());
  // A window bound to it: busy.
  uint32_t mw = 0;
  ASSERT_TRUE(t.alloc_mw(pd2, 1, &mw).ok());
  MwBind bind{mw, mw, lkey, kAccessRemoteWrite, 0x10000, 64};
  ASSERT_EQ(t.bind_mw(pd2, 0, bind), WcStatus::kSuccess);
  EXPECT_EQ(t.rereg_mr(lkey, pd2, b.data(), 0x40000, 8192, kAccessLocalWrite, 0, true, &nl, &nr)
                .errc(),
            Errc::kBusy);
  ASSERT_TRUE(t.dealloc_mw(mw >> 8).ok());
  // New translation: new keys, the old ones miss.
  ASSERT_TRUE(t.rereg_mr(lkey, pd2, b.data(), 0x40000, 8192,
                         kAccessLocalWrite | kAccessRemoteRead, 0, true, &nl, &nr)
                  .ok());
  EXPECT_NE(nl, lkey);
  EXPECT_EQ(nl >> 8, lkey >> 8);
  EXPECT_EQ(t.remote(pd2, nr, 0x40000 + 4096, 16, kAccessRemoteRead), b.data() + 4096);
  EXPECT_EQ(t.remote(pd2, rkey, 0x40000, 16, kAccessRemoteRead), nullptr);
  WcStatus err = WcStatus::kSuccess;
  EXPECT_EQ(t.local(pd2, lkey, 0x10000, 16, 0, &err), nullptr);
  EXPECT_EQ(t.mr_count(), 1u);
  EXPECT_TRUE(t.dereg_mr(nl).ok());
}

// A WRITE in progress through a window (MrRef) stops when the window is
// invalidated or deallocated; lkeys never resolve to a window.
TEST(MrTable, WindowRefStopsWithTheWindow) {
  MrTable t(16, 4);
  const uint32_t pd = t.alloc_pd();
  Bytes a(4096);
  uint32_t lkey = 0, rkey = 0, mw = 0;
  ASSERT_TRUE(t.reg_mr(pd, a.data(), 0x10000, 4096, kAccessLocalWrite | kAccessMwBind, &lkey,
                       &rkey)
                  .ok());
  ASSERT_TRUE(t.alloc_mw(pd, 2, &mw).ok());
  EXPECT_EQ(t.mw_count(), 1u);
  ASSERT_EQ(t.bind_mw(pd, 7, MwBind{mw, mw, lkey, kAccessRemoteWrite, 0x10100, 256}),
            WcStatus::kSuccess);
  MrRef ref;
  EXPECT_EQ(t.remote_ref(pd, mw, 0x10100, 256, kAccessRemoteWrite, &ref, nullptr, 7),
            a.data() + 0x100);
  EXPECT_EQ(t.remote_ref(pd, mw, 0x10100, 256, kAccessRemoteWrite, &ref, nullptr, 8), nullptr)
      << "another QP";
  EXPECT_TRUE(MrTable::still_valid(ref));
  WcStatus err = WcStatus::kSuccess;
  EXPECT_EQ(t.local(pd, mw, 0x10100, 8, 0, &err), nullptr) << "a window has no lkey";
  EXPECT_EQ(t.invalidate_rkey(pd, rkey).errc(), Errc::kInvalid) << "MR with a window bound";
  ASSERT_TRUE(t.invalidate_rkey(pd, mw).ok());
  EXPECT_FALSE(MrTable::still_valid(ref));
  ASSERT_EQ(t.bind_mw(pd, 7, MwBind{mw, mw + 1, lkey, kAccessRemoteWrite, 0x10000, 16}),
            WcStatus::kSuccess);
  ASSERT_NE(t.remote_ref(pd, mw + 1, 0x10000, 16, kAccessRemoteWrite, &ref, nullptr, 7), nullptr);
  ASSERT_TRUE(t.dealloc_mw(mw >> 8).ok());
  EXPECT_FALSE(MrTable::still_valid(ref));
  EXPECT_EQ(t.mw_count(), 0u);
  EXPECT_TRUE(t.dereg_mr(lkey).ok());
  EXPECT_TRUE(t.dealloc_pd(pd).ok());
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
