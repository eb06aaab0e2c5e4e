// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Memory windows between engine pairs (IBA 10.6.7): type 2 windows bound by
// BIND_MW on the responder's QP, used through their rkey by the peer, freed by
// LOCAL_INV and by a received SEND_WITH_INVALIDATE; type 1 windows bound and
// unbound; every bind error as an IBV_WC_MW_BIND_ERR completion (rxe), a bad
// LOCAL_INV as IBV_WC_LOC_QP_OP_ERR, and access through a window that is out of
// range, unbound or invalidated as a remote access error NAK.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tools/common/engine_pair.h"

namespace burst::test {
using tools::EnginePair;
namespace {

using core::WcOpcode;
using core::WcStatus;
using core::WrOpcode;

constexpr uint32_t kMrAccess = core::kAccessLocalWrite | core::kAccessRemoteWrite |
                               core::kAccessRemoteRead | core::kAccessMwBind;

uint64_t addr_of(const void* p) { return reinterpret_cast<uint64_t>(p); }
// ibv_inc_rkey: the next key byte, same index.
uint32_t inc(uint32_t rkey) { return (rkey & ~0xffu) | ((rkey + 1) & 0xffu); }

core::QpState state_of(core::Engine& e, uint32_t qpn) {
  core::QpAttr a;
  core::QpCap cap;
  return e.query_qp(qpn, &a, &cap).ok() ? a.qp_state : core::QpState::kReset;
}

// Side 1 owns a buffer and windows on it; side 0 writes and reads through them.
class MwPair : public ::testing::Test {
 protected:
  void SetUp() override {
    qp_ = pair_.connect_rc();
    src_.assign(4096, 0x5A);
    dst_.assign(4096, 0);
    pair_.reg(0, src_.data(), src_.size(), 0, &sl_, &sr_);
    pair_.reg(1, dst_.data(), dst_.size(), kMrAccess, &dl_, &dr_);
  }
  core::MrTable& mrs1() { return pair_.host(1).mrs; }
  uint32_t qpn(int side) const { return pair_.qpn(qp_, side); }

  // Posts a local operation on side 1 and returns its completion.
  core::Wc local_op(const core::SendWr& wr) {
    EXPECT_TRUE(pair_.engine(1).post_send(qpn(1), wr).ok());
    std::vector<core::Wc> wc;
    EXPECT_TRUE(pair_.run_until([&] { return pair_.poll(1, &wc) > 0 || !wc.empty(); }));
    return wc.empty() ? core::Wc{} : wc[0];
  }
  core::Wc bind(uint32_t mw_rkey, uint32_t new_rkey, uint64_t off, uint64_t len, uint32_t access,
                uint32_t mr_lkey = 0) {
    core::SendWr wr;
    wr.wr_id = 77;
    wr.opcode = WrOpcode::kBindMw;
    wr.send_flags = core::kSendSignaled;
    wr.bind = {mw_rkey, new_rkey, mr_lkey == 0 ? dl_ : mr_lkey, access,
               addr_of(dst_.data()) + off, len};
    return local_op(wr);
  }
  core::Wc local_inv(uint32_t rkey) {
    core::SendWr wr;
    wr.wr_id = 78;
    wr.opcode = WrOpcode::kLocalInv;
    wr.send_flags = core::kSendSignaled;
    wr.invalidate_rkey = rkey;
    return local_op(wr);
  }
  // One RDMA op from side 0 through rkey at dst_ + off; its completion status.
  WcStatus remote(WrOpcode op, uint32_t rkey, uint64_t off, uint32_t len) {
    core::SendWr wr;
    wr.wr_id = 1;
    wr.opcode = op;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {addr_of(src_.data()), len, sl_};
    wr.rdma = {addr_of(dst_.data()) + off, rkey};
    EXPECT_TRUE(pair_.engine(0).post_send(qpn(0), wr).ok());
    std::vector<core::Wc> wc;
    EXPECT_TRUE(pair_.run_until([&] {
      pair_.poll(0, &wc);
      return !wc.empty();
    }));
    return wc.empty() ? WcStatus::kGeneralErr : wc[0].status;
  }
  uint32_t alloc(uint8_t type) {
    uint32_t rkey = 0;
    EXPECT_TRUE(mrs1().alloc_mw(pair_.host(1).pd, type, &rkey).ok());
    return rkey;
  }

  EnginePair pair_;
  size_t qp_ = 0;
  std::vector<uint8_t> src_, dst_;
  uint32_t sl_ = 0, sr_ = 0, dl_ = 0, dr_ = 0;
};

TEST_F(MwPair, Type2BindWriteReadLocalInvalidate) {
  const uint32_t mw = alloc(2);
  const uint32_t key = inc(mw);
  const core::Wc b = bind(mw, key, 1024, 512, core::kAccessRemoteWrite | core::kAccessRemoteRead);
  EXPECT_EQ(b.status, WcStatus::kSuccess);
  EXPECT_EQ(b.opcode, WcOpcode::kBindMw);
  EXPECT_EQ(b.wr_id, 77u);
  EXPECT_EQ(remote(WrOpcode::kRdmaWrite, key, 1024, 512), WcStatus::kSuccess);
  EXPECT_EQ(std::count(dst_.begin() + 1024, dst_.begin() + 1536, 0x5A), 512);
  EXPECT_EQ(std::count(dst_.begin(), dst_.begin() + 1024, 0), 1024) << "nothing outside";
  EXPECT_EQ(remote(WrOpcode::kRdmaRead, key, 1024, 512), WcStatus::kSuccess);
  EXPECT_EQ(mrs1().dereg_mr(dl_).errc(), core::Errc::kBusy) << "a bound window holds its MR";
  const core::Wc inv = local_inv(key);
  EXPECT_EQ(inv.status, WcStatus::kSuccess);
  EXPECT_EQ(inv.opcode, WcOpcode::kLocalInv);
  EXPECT_EQ(remote(WrOpcode::kRdmaWrite, key, 1024, 8), WcStatus::kRemAccessErr);
  EXPECT_EQ(pair_.engine(1).counters().naks_sent[2], 1u);
  EXPECT_TRUE(mrs1().dealloc_mw(mw >> 8).ok());
}

TEST_F(MwPair, Type2OldKeyAndOutOfWindowAreRemoteAccessErrors) {
  const uint32_t mw = alloc(2);
  const uint32_t key = inc(mw);
  ASSERT_EQ(bind(mw, key, 0, 256, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  EXPECT_EQ(remote(WrOpcode::kRdmaWrite, key, 200, 100), WcStatus::kRemAccessErr);
  EXPECT_EQ(std::count(dst_.begin(), dst_.end(), 0), 4096);
}

TEST_F(MwPair, Type2OldKeyMisses) {
  const uint32_t mw = alloc(2);
  ASSERT_EQ(bind(mw, inc(mw), 0, 256, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  EXPECT_EQ(remote(WrOpcode::kRdmaWrite, mw, 0, 8), WcStatus::kRemAccessErr);
}

TEST_F(MwPair, Type2WithoutReadAccessRefusesRead) {
  const uint32_t mw = alloc(2);
  ASSERT_EQ(bind(mw, inc(mw), 0, 256, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  EXPECT_EQ(remote(WrOpcode::kRdmaRead, inc(mw), 0, 8), WcStatus::kRemAccessErr);
}

TEST_F(MwPair, SendWithInvalidateFreesAType2Window) {
  const uint32_t mw = alloc(2);
  const uint32_t key = inc(mw);
  ASSERT_EQ(bind(mw, key, 0, 256, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  std::vector<uint8_t> rbuf(64);
  uint32_t rl, rr;
  pair_.reg(1, rbuf.data(), rbuf.size(), 0, &rl, &rr);
  core::RecvWr rw;
  rw.wr_id = 5;
  rw.num_sge = 1;
  rw.sg_list[0] = {addr_of(rbuf.data()), 64, rl};
  ASSERT_TRUE(pair_.engine(1).post_recv(qpn(1), rw).ok());
  core::SendWr wr;
  wr.wr_id = 2;
  wr.opcode = WrOpcode::kSendWithInv;
  wr.invalidate_rkey = key;
  wr.send_flags = core::kSendSignaled;
  wr.num_sge = 1;
  wr.sg_list[0] = {addr_of(src_.data()), 16, sl_};
  ASSERT_TRUE(pair_.engine(0).post_send(qpn(0), wr).ok());
  std::vector<core::Wc> wc0, wc1;
  ASSERT_TRUE(pair_.run_until([&] {
    pair_.poll(0, &wc0);
    pair_.poll(1, &wc1);
    return !wc0.empty() && !wc1.empty();
  }));
  EXPECT_EQ(wc0[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc1[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(wc1[0].wc_flags & core::kWcWithInv);
  EXPECT_EQ(wc1[0].imm_data, key);
  EXPECT_EQ(remote(WrOpcode::kRdmaWrite, key, 0, 8), WcStatus::kRemAccessErr);
  EXPECT_TRUE(mrs1().dereg_mr(dl_).ok()) << "the invalidated window released the MR";
}

TEST_F(MwPair, Type2RebindAfterInvalidateWithANewKey) {
  const uint32_t mw = alloc(2);
  const uint32_t k1 = inc(mw);
  ASSERT_EQ(bind(mw, k1, 0, 256, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  ASSERT_EQ(local_inv(k1).status, WcStatus::kSuccess);
  const uint32_t k2 = inc(k1);
  ASSERT_EQ(bind(k1, k2, 512, 256, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  EXPECT_EQ(remote(WrOpcode::kRdmaWrite, k2, 512, 256), WcStatus::kSuccess);
  EXPECT_EQ(std::count(dst_.begin() + 512, dst_.begin() + 768, 0x5A), 256);
}

// Each bad bind: IBV_WC_MW_BIND_ERR and the QP in error (a fresh pair each).
struct BadBind {
  const char* name;
  uint8_t type;
  uint64_t off, len;
  uint32_t access;
  int mr;  // 0: the MW_BIND MR, 1: an MR without MW_BIND, 2: local-write-less
};

class MwBadBind : public ::testing::TestWithParam<BadBind> {};

TEST_P(MwBadBind, IsMwBindError) {
  const BadBind& c = GetParam();
  EnginePair pair;
  const size_t qp = pair.connect_rc();
  std::vector<uint8_t> buf(4096);
  uint32_t l, r, l2, r2, l3, r3;
  pair.reg(1, buf.data(), 2048, kMrAccess, &l, &r);
  pair.reg(1, buf.data() + 2048, 1024, core::kAccessRemoteWrite, &l2, &r2);
  // No local write: registered directly (EnginePair::reg adds it).
  tools::Host& h = pair.host(1);
  ASSERT_TRUE(h.mrs
                  .reg_mr(h.pd, buf.data() + 3072, addr_of(buf.data() + 3072), 1024,
                          core::kAccessRemoteRead | core::kAccessMwBind, &l3, &r3)
                  .ok());
  uint32_t mw = 0;
  ASSERT_TRUE(h.mrs.alloc_mw(h.pd, c.type, &mw).ok());
  const uint64_t base = addr_of(buf.data()) + (c.mr == 1 ? 2048 : c.mr == 2 ? 3072 : 0);
  core::SendWr wr;
  wr.wr_id = 9;
  wr.opcode = WrOpcode::kBindMw;
  wr.bind = {mw, inc(mw), c.mr == 1 ? l2 : c.mr == 2 ? l3 : l, c.access, base + c.off, c.len};
  ASSERT_TRUE(pair.engine(1).post_send(pair.qpn(qp, 1), wr).ok());
  std::vector<core::Wc> wc;
  ASSERT_TRUE(pair.run_until([&] { return pair.poll(1, &wc) > 0 || !wc.empty(); }));
  EXPECT_EQ(wc[0].status, WcStatus::kMwBindErr);
  EXPECT_EQ(wc[0].wr_id, 9u);
  EXPECT_EQ(state_of(pair.engine(1), pair.qpn(qp, 1)), core::QpState::kErr);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MwBadBind,
    ::testing::Values(BadBind{"BeyondTheMr", 2, 1024, 2048, core::kAccessRemoteWrite, 0},
                      BadBind{"BeforeTheMr", 2, ~uint64_t{0}, 16, core::kAccessRemoteWrite, 0},
                      BadBind{"Type2ZeroLength", 2, 0, 0, core::kAccessRemoteWrite, 0},
                      BadBind{"MrWithoutMwBind", 2, 0, 64, core::kAccessRemoteRead, 1},
                      BadBind{"WriteOnMrWithoutLocalWrite", 2, 0, 64, core::kAccessRemoteWrite,
                              2},
                      BadBind{"Type1BeyondTheMr", 1, 2000, 100, core::kAccessRemoteRead, 0}),
    [](const ::testing::TestParamInfo<BadBind>& i) { return i.param.name; });

TEST_F(MwPair, Type2BoundTwiceIsBindError) {
  const uint32_t mw = alloc(2);
  ASSERT_EQ(bind(mw, inc(mw), 0, 64, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  EXPECT_EQ(bind(inc(mw), inc(inc(mw)), 0, 64, core::kAccessRemoteWrite).status,
            WcStatus::kMwBindErr);
}

TEST_F(MwPair, LocalInvalidateOfAFreeWindowIsLocQpOpError) {
  const uint32_t mw = alloc(2);
  EXPECT_EQ(local_inv(mw).status, WcStatus::kLocQpOpErr);
}

TEST_F(MwPair, Type1BindUnbindAndNoInvalidate) {
  const uint32_t mw = alloc(1);
  const uint32_t k1 = inc(mw);
  ASSERT_EQ(bind(mw, k1, 64, 128, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  EXPECT_EQ(remote(WrOpcode::kRdmaWrite, k1, 64, 128), WcStatus::kSuccess);
  EXPECT_EQ(std::count(dst_.begin() + 64, dst_.begin() + 192, 0x5A), 128);
  // Rebinding a type 1 window moves it (the old key stops working).
  const uint32_t k2 = inc(k1);
  ASSERT_EQ(bind(k1, k2, 1024, 64, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  EXPECT_EQ(remote(WrOpcode::kRdmaWrite, k2, 1024, 64), WcStatus::kSuccess);
  // Zero length: unbound; the MR may go.
  const uint32_t k3 = inc(k2);
  ASSERT_EQ(bind(k2, k3, 0, 0, 0).status, WcStatus::kSuccess);
  EXPECT_EQ(remote(WrOpcode::kRdmaWrite, k3, 0, 8), WcStatus::kRemAccessErr);
}

TEST_F(MwPair, Type1CannotBeInvalidated) {
  const uint32_t mw = alloc(1);
  ASSERT_EQ(bind(mw, inc(mw), 0, 64, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  EXPECT_EQ(local_inv(inc(mw)).status, WcStatus::kLocQpOpErr);  // o10-36.2.4
}

TEST_F(MwPair, DeallocUnbindsAndReleasesTheMr) {
  const uint32_t mw = alloc(1);
  ASSERT_EQ(bind(mw, inc(mw), 0, 64, core::kAccessRemoteWrite).status, WcStatus::kSuccess);
  EXPECT_EQ(mrs1().dereg_mr(dl_).errc(), core::Errc::kBusy);
  EXPECT_TRUE(mrs1().dealloc_mw(mw >> 8).ok());
  EXPECT_EQ(remote(WrOpcode::kRdmaWrite, inc(mw), 0, 8), WcStatus::kRemAccessErr);
  EXPECT_TRUE(mrs1().dereg_mr(dl_).ok());
  EXPECT_EQ(mrs1().mw_count(), 0u);
}

// A type 2 window is for the QP it was bound on: another QP of the same PD
// cannot use its rkey.
TEST(MwQp, Type2WindowOnlyForItsQp) {
  EnginePair pair;
  const size_t qa = pair.connect_rc();
  const size_t qb = pair.connect_rc();
  std::vector<uint8_t> src(64, 1), dst(256, 0);
  uint32_t sl, sr, dl, dr;
  pair.reg(0, src.data(), src.size(), 0, &sl, &sr);
  pair.reg(1, dst.data(), dst.size(), kMrAccess, &dl, &dr);
  tools::Host& h = pair.host(1);
  uint32_t mw = 0;
  ASSERT_TRUE(h.mrs.alloc_mw(h.pd, 2, &mw).ok());
  core::SendWr b;
  b.opcode = WrOpcode::kBindMw;
  b.send_flags = core::kSendSignaled;
  b.bind = {mw, inc(mw), dl, core::kAccessRemoteWrite, addr_of(dst.data()), 256};
  ASSERT_TRUE(pair.engine(1).post_send(pair.qpn(qa, 1), b).ok());
  std::vector<core::Wc> wc1;
  ASSERT_TRUE(pair.run_until([&] { return pair.poll(1, &wc1) > 0 || !wc1.empty(); }));
  ASSERT_EQ(wc1[0].status, WcStatus::kSuccess);
  for (size_t q : {qb, qa}) {
    core::SendWr wr;
    wr.wr_id = q;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {addr_of(src.data()), 64, sl};
    wr.rdma = {addr_of(dst.data()), inc(mw)};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(q, 0), wr).ok());
    std::vector<core::Wc> wc0;
    ASSERT_TRUE(pair.run_until([&] {
      pair.poll(0, &wc0);
      return !wc0.empty();
    }));
    EXPECT_EQ(wc0[0].status, q == qb ? WcStatus::kRemAccessErr : WcStatus::kSuccess) << q;
  }
  EXPECT_EQ(std::count(dst.begin(), dst.begin() + 64, 1), 64);
}

}  // namespace
}  // namespace burst::test
