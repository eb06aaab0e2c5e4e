// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Shared receive queues between engine pairs over the loopback wire: several RC
// QPs of side 1 share one SRQ and receive SENDs (multi-packet, two SGEs per
// WQE, with and without immediate) from their peers on side 0, clean and under
// loss and mixed faults; every message must arrive exactly once, in its QP's
// order, into whichever WQE its QP took. Then RNR NAKs while the SRQ is empty
// and recovery once receives are posted late, UD QPs on an SRQ, the limit event
// under traffic, a QP error that leaves the SRQ's WQEs to the other QPs, and
// destroy_srq refused while QPs use the SRQ, and a placement into a dead
// process's memory that fails only the QP that took the SRQ WQE.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tests/engine/child_process.h"
#include "tools/common/engine_pair.h"

namespace burst::test {
using tools::EnginePair;
using tools::PairOptions;
namespace {

using core::WcOpcode;
using core::WcStatus;
using core::WrOpcode;

struct Faults {
  const char* name;
  datapath::LoopbackFaults f;
};
const Faults kClean{"Clean", {}};
const Faults kLoss1{"Loss1", {.drop = 0.01}};
const Faults kMixed{"Mixed", {.drop = 0.02, .duplicate = 0.02, .reorder = 0.02, .corrupt = 0.01}};

std::string faults_name(const testing::TestParamInfo<Faults>& i) { return i.param.name; }
void PrintTo(const Faults& f, std::ostream* os) { *os << f.name; }

void set_faults(EnginePair& pair, const Faults& f, uint64_t seed) {
  for (int s = 0; s < 2; ++s) {
    datapath::LoopbackFaults x = f.f;
    x.seed = seed * 2 + static_cast<uint64_t>(s);
    pair.set_faults(s, x);
  }
}

uint32_t make_srq(core::Engine& e, uint32_t max_wr, uint32_t max_sge = 2) {
  core::SrqAttr a;
  a.max_wr = max_wr;
  a.max_sge = max_sge;
  uint32_t id = 0;
  EXPECT_TRUE(e.create_srq(a, &id).ok());
  return id;
}

// The message m of QP q: its size, and its bytes (8-byte header q, m, then a
// pattern of the pair).
uint32_t msg_size(uint32_t q, uint32_t m) { return 8 + (m * 613 + q * 1013) % 5000; }

void fill_msg(uint8_t* p, uint32_t q, uint32_t m) {
  const uint32_t n = msg_size(q, m);
  std::memcpy(p, &q, 4);
  std::memcpy(p + 4, &m, 4);
  std::mt19937 rng(q * 7919 + m);
  for (uint32_t i = 8; i < n; ++i) p[i] = static_cast<uint8_t>(rng());
}

constexpr uint32_t kSlot = 5120;  // bytes per receive buffer (every message fits)

// Side 0 sends `msgs` SENDs on each QP of `qps` (SEND and SEND_WITH_IMM
// alternating); side 1 receives them through one SRQ. Source buffers and the
// receive slots live here.
class Traffic {
 public:
  Traffic(EnginePair& pair, const std::vector<size_t>& qps, uint32_t msgs)
      : pair_(pair), qps_(qps), msgs_(msgs) {
    src_.resize(size_t{qps.size()} * msgs * kSlot);
    for (uint32_t q = 0; q < qps.size(); ++q)
      for (uint32_t m = 0; m < msgs; ++m) fill_msg(src_at(q, m), q, m);
    uint32_t rkey;
    pair.reg(0, src_.data(), src_.size(), 0, &src_lkey_, &rkey);
    dst_.assign(size_t{qps.size()} * msgs * kSlot, 0);
    pair.reg(1, dst_.data(), dst_.size(), 0, &dst_lkey_, &rkey);
    for (uint32_t q = 0; q < qps.size(); ++q) qp_index_[pair.qpn(qps[q], 1)] = q;
  }
  uint32_t total() const { return static_cast<uint32_t>(qps_.size()) * msgs_; }

  // Receive slot `slot` into the SRQ: two SGEs (1000 bytes, then the rest).
  void post_recv(uint32_t srq, uint32_t slot) {
    core::RecvWr rw;
    rw.wr_id = slot;
    rw.num_sge = 2;
    const uint64_t a = reinterpret_cast<uint64_t>(dst_.data()) + uint64_t{slot} * kSlot;
    rw.sg_list[0] = {a, 1000, dst_lkey_};
    rw.sg_list[1] = {a + 1000, kSlot - 1000, dst_lkey_};
    ASSERT_TRUE(pair_.engine(1).post_srq_recv(srq, rw).ok()) << "slot " << slot;
  }
  void post_sends() {
    for (uint32_t m = 0; m < msgs_; ++m) {
      for (uint32_t q = 0; q < qps_.size(); ++q) {
        core::SendWr wr;
        wr.wr_id = uint64_t{q} << 32 | m;
        wr.opcode = m % 2 ? WrOpcode::kSendWithImm : WrOpcode::kSend;
        wr.imm_data = q << 16 | m;
        wr.send_flags = core::kSendSignaled;
        wr.num_sge = 1;
        wr.sg_list[0] = {reinterpret_cast<uint64_t>(src_at(q, m)), msg_size(q, m), src_lkey_};
        ASSERT_TRUE(pair_.engine(0).post_send(pair_.qpn(qps_[q], 0), wr).ok());
      }
    }
  }
  // Polls both sides until `want0` / `want1` completions, then lets the wire
  // settle (retransmissions and duplicates must not add any).
  void run(size_t want0, size_t want1) {
    ASSERT_TRUE(pair_.run_until([&] {
      poll();
      return wc0.size() >= want0 && wc1.size() >= want1;
    })) << "completions: sender "
        << wc0.size() << "/" << want0 << ", receiver " << wc1.size() << "/" << want1;
    pair_.run_until([] { return false; }, 20'000, 10'000);
    poll();
    ASSERT_EQ(wc0.size(), want0);
    ASSERT_EQ(wc1.size(), want1);
  }
  void poll() {
    while (pair_.poll(0, &wc0) > 0) {
    }
    while (pair_.poll(1, &wc1) > 0) {
    }
  }
  // Every receive completion: success, a slot never used before, its QP's next
  // message (per-QP order), the right length, immediate and bytes.
  void check_receives() {
    std::map<uint32_t, uint32_t> next;
    std::set<uint64_t> slots;
    for (const core::Wc& w : wc1) {
      ASSERT_EQ(w.status, WcStatus::kSuccess);
      ASSERT_EQ(w.opcode, WcOpcode::kRecv);
      auto it = qp_index_.find(w.qp_num);
      ASSERT_NE(it, qp_index_.end()) << "qp_num " << w.qp_num;
      const uint32_t q = it->second;
      ASSERT_TRUE(slots.insert(w.wr_id).second) << "slot " << w.wr_id << " completed twice";
      const uint32_t m = next[q]++;
      SCOPED_TRACE("qp " + std::to_string(q) + " message " + std::to_string(m));
      EXPECT_EQ(w.src_qp, pair_.qpn(qps_[q], 0));
      EXPECT_EQ(w.byte_len, msg_size(q, m));
      EXPECT_EQ(static_cast<bool>(w.wc_flags & core::kWcWithImm), m % 2 == 1);
      if (m % 2 == 1) {
        EXPECT_EQ(w.imm_data, q << 16 | m);
      }
      const uint8_t* got = dst_.data() + w.wr_id * kSlot;
      EXPECT_EQ(std::memcmp(got, src_at(q, m), msg_size(q, m)), 0);
    }
  }
  // Sender completions: success, per QP in posting order.
  void check_sends() {
    std::map<uint32_t, uint32_t> next;
    for (const core::Wc& w : wc0) {
      EXPECT_EQ(w.status, WcStatus::kSuccess);
      const uint32_t q = static_cast<uint32_t>(w.wr_id >> 32);
      EXPECT_EQ(w.wr_id & 0xffffffffu, next[q]++) << "qp " << q;
      EXPECT_EQ(w.qp_num, pair_.qpn(qps_[q], 0));
    }
  }

  std::vector<core::Wc> wc0, wc1;

 private:
  uint8_t* src_at(uint32_t q, uint32_t m) { return src_.data() + (size_t{q} * msgs_ + m) * kSlot; }
  EnginePair& pair_;
  std::vector<size_t> qps_;
  uint32_t msgs_;
  std::vector<uint8_t> src_, dst_;
  uint32_t src_lkey_ = 0, dst_lkey_ = 0;
  std::map<uint32_t, uint32_t> qp_index_;  // side-1 QPN -> QP index
};

PairOptions srq_options() {
  PairOptions opt;
  opt.cap.max_send_wr = 256;
  opt.cap.max_recv_wr = 0;
  opt.cap.max_recv_sge = 0;
  return opt;
}

class SrqRc : public testing::TestWithParam<Faults> {};

// Four RC QPs of side 1 on one SRQ, four peers on side 0, 40 SENDs each.
TEST_P(SrqRc, SeveralQpsShareOneSrqExactlyOnceInQpOrder) {
  EnginePair pair(srq_options());
  set_faults(pair, GetParam(), 11);
  const uint32_t srq = make_srq(pair.engine(1), 256);
  std::vector<size_t> qps;
  for (int i = 0; i < 4; ++i) qps.push_back(pair.connect_rc(core::kAccessLocalWrite, {0, srq}));
  Traffic t(pair, qps, 40);
  for (uint32_t s = 0; s < t.total(); ++s) t.post_recv(srq, s);
  t.post_sends();
  t.run(t.total(), t.total());
  t.check_receives();
  t.check_sends();
  if (GetParam().f.drop > 0) {
    EXPECT_GT(pair.wire().port(0).counters().dropped + pair.wire().port(1).counters().dropped, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Faults, SrqRc, testing::Values(kClean, kLoss1, kMixed), faults_name);

// Many interleavings of loss, duplication, reordering and corruption; the SRQ
// holds just enough WQEs (no spare), so a WQE taken twice would show as RNR.
class SrqSeedSweep : public testing::TestWithParam<uint64_t> {};

TEST_P(SrqSeedSweep, MixedFaultsThreeQps) {
  EnginePair pair(srq_options());
  set_faults(pair, kMixed, 100 + GetParam());
  const uint32_t srq = make_srq(pair.engine(1), 128);
  std::vector<size_t> qps;
  for (int i = 0; i < 3; ++i) qps.push_back(pair.connect_rc(core::kAccessLocalWrite, {0, srq}));
  Traffic t(pair, qps, 30);
  for (uint32_t s = 0; s < t.total(); ++s) t.post_recv(srq, s);
  t.post_sends();
  t.run(t.total(), t.total());
  t.check_receives();
  t.check_sends();
}

INSTANTIATE_TEST_SUITE_P(Seeds, SrqSeedSweep, testing::Range<uint64_t>(1, 21));

class SrqRnr : public testing::TestWithParam<Faults> {};

// No receive posted: every QP is RNR-NAKed and nothing completes. Receives
// posted late, half first: exactly that many messages complete, the others
// wait (RNR again) until the rest is posted.
TEST_P(SrqRnr, RnrWhileEmptyThenRecoveryWhenReceivesArriveLate) {
  PairOptions opt = srq_options();
  opt.min_rnr_timer = 14;  // 0.64 ms
  EnginePair pair(opt);
  set_faults(pair, GetParam(), 23);
  const uint32_t srq = make_srq(pair.engine(1), 64);
  std::vector<size_t> qps;
  for (int i = 0; i < 3; ++i) qps.push_back(pair.connect_rc(core::kAccessLocalWrite, {0, srq}));
  Traffic t(pair, qps, 6);
  t.post_sends();
  const uint64_t until = pair.now_ns() + 5'000'000;
  pair.run_until([&] {
    t.poll();
    return pair.now_ns() >= until;
  });
  EXPECT_TRUE(t.wc0.empty());
  EXPECT_TRUE(t.wc1.empty());
  EXPECT_GE(pair.engine(1).counters().rnr_naks_sent, 3u);
  EXPECT_GT(pair.engine(0).counters().rnr_naks_received, 0u);

  for (uint32_t s = 0; s < t.total() / 2; ++s) t.post_recv(srq, s);
  ASSERT_TRUE(pair.run_until([&] {
    t.poll();
    return t.wc1.size() >= t.total() / 2;
  }));
  const uint64_t rnr_before = pair.engine(1).counters().rnr_naks_sent;
  const uint64_t wait = pair.now_ns() + 3'000'000;
  pair.run_until([&] {
    t.poll();
    return pair.now_ns() >= wait;
  });
  EXPECT_EQ(t.wc1.size(), t.total() / 2);  // the SRQ is empty again
  EXPECT_GT(pair.engine(1).counters().rnr_naks_sent, rnr_before);

  for (uint32_t s = t.total() / 2; s < t.total(); ++s) t.post_recv(srq, s);
  t.run(t.total(), t.total());
  t.check_receives();
  t.check_sends();
}

INSTANTIATE_TEST_SUITE_P(Faults, SrqRnr, testing::Values(kClean, kLoss1), faults_name);

class SrqUd : public testing::TestWithParam<Faults> {};

// Three UD QPs of side 1 on one SRQ. UD is unreliable: under loss fewer arrive,
// but each at most once, in its QP's order, intact.
TEST_P(SrqUd, UdQpsShareOneSrq) {
  EnginePair pair(srq_options());
  set_faults(pair, GetParam(), 31);
  const uint32_t srq = make_srq(pair.engine(1), 256, 1);
  constexpr uint32_t kQps = 3, kMsgs = 50, kSize = 900;
  std::vector<size_t> qps;
  for (uint32_t i = 0; i < kQps; ++i) qps.push_back(pair.create_ud(0x4242, {0, srq}));
  std::vector<uint8_t> src(kQps * kMsgs * kSize), dst(kQps * kMsgs * (kSize + 40), 0);
  std::mt19937 rng(5);
  for (uint8_t& b : src) b = static_cast<uint8_t>(rng());
  uint32_t sl, dl, rk;
  pair.reg(0, src.data(), src.size(), 0, &sl, &rk);
  pair.reg(1, dst.data(), dst.size(), 0, &dl, &rk);
  for (uint32_t s = 0; s < kQps * kMsgs; ++s) {
    core::RecvWr rw;
    rw.wr_id = s;
    rw.num_sge = 1;
    rw.sg_list[0] = {reinterpret_cast<uint64_t>(dst.data()) + s * (kSize + 40), kSize + 40, dl};
    ASSERT_TRUE(pair.engine(1).post_srq_recv(srq, rw).ok());
  }
  for (uint32_t m = 0; m < kMsgs; ++m) {
    for (uint32_t q = 0; q < kQps; ++q) {
      const uint32_t idx = q * kMsgs + m;
      std::memcpy(src.data() + idx * kSize, &idx, 4);
      core::SendWr wr;
      wr.wr_id = idx;
      wr.opcode = WrOpcode::kSend;
      wr.send_flags = core::kSendSignaled;
      wr.num_sge = 1;
      wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data()) + idx * kSize, kSize, sl};
      wr.ud.ah.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
      wr.ud.ah.dmac = {0x02, 0, 0, 0, 0, 2};
      wr.ud.remote_qpn = pair.qpn(qps[q], 1);
      wr.ud.remote_qkey = 0x4242;
      ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qps[q], 0), wr).ok());
    }
  }
  std::vector<core::Wc> wc0, wc1;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    return wc0.size() >= kQps * kMsgs;
  }));
  pair.run_until([] { return false; }, 5'000, 5'000);
  while (pair.poll(1, &wc1) > 0) {
  }
  std::map<uint32_t, uint32_t> qp_of;
  for (uint32_t q = 0; q < kQps; ++q) qp_of[pair.qpn(qps[q], 1)] = q;
  std::map<uint32_t, int64_t> last;  // per QP: last message index delivered
  std::set<uint32_t> seen;
  for (const core::Wc& w : wc1) {
    ASSERT_EQ(w.status, WcStatus::kSuccess);
    ASSERT_EQ(qp_of.count(w.qp_num), 1u);
    const uint32_t q = qp_of[w.qp_num];
    EXPECT_EQ(w.byte_len, kSize + 40);
    EXPECT_EQ(w.src_qp, pair.qpn(qps[q], 0));
    const uint8_t* buf = dst.data() + w.wr_id * (kSize + 40);
    uint32_t idx;
    std::memcpy(&idx, buf + 40, 4);
    ASSERT_LT(idx, kQps * kMsgs);
    EXPECT_EQ(idx / kMsgs, q) << "datagram delivered to the wrong QP";
    EXPECT_TRUE(seen.insert(idx).second) << "datagram " << idx << " delivered twice";
    EXPECT_GT(static_cast<int64_t>(idx % kMsgs), last.count(q) ? last[q] : -1) << "out of order";
    last[q] = idx % kMsgs;
    EXPECT_EQ(std::memcmp(buf + 40, src.data() + idx * kSize, kSize), 0) << "datagram " << idx;
  }
  // Completions take the SRQ's WQEs in order.
  for (size_t i = 0; i < wc1.size(); ++i) EXPECT_EQ(wc1[i].wr_id, i);
  // Every datagram the wire did not drop was delivered.
  EXPECT_EQ(wc1.size() + pair.wire().port(0).counters().dropped, size_t{kQps} * kMsgs);
  EXPECT_EQ(pair.engine(1).counters().rx_drop[static_cast<size_t>(core::Drop::kUdNoRwqe)], 0u);
}

INSTANTIATE_TEST_SUITE_P(Faults, SrqUd, testing::Values(kClean, kLoss1), faults_name);

// The limit event fires once when traffic takes the SRQ below the limit, the
// SRQ is disarmed after it; re-armed, it fires again.
TEST(SrqEvents, LimitArmedFiredDisarmedUnderTraffic) {
  EnginePair pair(srq_options());
  set_faults(pair, kLoss1, 41);
  const uint32_t srq = make_srq(pair.engine(1), 64);
  std::vector<size_t> qps;
  for (int i = 0; i < 2; ++i) qps.push_back(pair.connect_rc(core::kAccessLocalWrite, {0, srq}));
  Traffic t(pair, qps, 20);
  for (uint32_t s = 0; s < 64; ++s) t.post_recv(srq, s);
  ASSERT_TRUE(pair.engine(1).modify_srq(srq, 30).ok());
  core::SrqAttr q;
  ASSERT_TRUE(pair.engine(1).query_srq(srq, &q).ok());
  EXPECT_EQ(q.srq_limit, 30u);
  uint32_t id = 0;
  EXPECT_FALSE(pair.engine(1).take_srq_limit_event(&id));
  t.post_sends();  // 40 messages: 24 WQEs left
  t.run(t.total(), t.total());
  t.check_receives();
  ASSERT_TRUE(pair.engine(1).take_srq_limit_event(&id));
  EXPECT_EQ(id, srq);
  EXPECT_FALSE(pair.engine(1).take_srq_limit_event(&id));
  ASSERT_TRUE(pair.engine(1).query_srq(srq, &q).ok());
  EXPECT_EQ(q.srq_limit, 0u);
  EXPECT_EQ(q.max_wr, 64u);
}

// A QP of the SRQ in ERR: no completion for the SRQ's WQEs (they are not its
// own), the last-WQE event for it, and the other QP receives into them.
TEST(SrqEvents, QpErrorDoesNotConsumeTheSrqsWqes) {
  EnginePair pair(srq_options());
  set_faults(pair, kLoss1, 53);
  const uint32_t srq = make_srq(pair.engine(1), 64);
  const size_t errored = pair.connect_rc(core::kAccessLocalWrite, {0, srq});
  const size_t live = pair.connect_rc(core::kAccessLocalWrite, {0, srq});
  Traffic t(pair, {live}, 30);
  for (uint32_t s = 0; s < t.total(); ++s) t.post_recv(srq, s);
  core::QpAttr a;
  a.qp_state = core::QpState::kErr;
  ASSERT_TRUE(pair.engine(1).modify_qp(pair.qpn(errored, 1), a, core::kQpState).ok());
  uint32_t qpn = 0;
  ASSERT_TRUE(pair.engine(1).take_last_wqe_event(&qpn));
  EXPECT_EQ(qpn, pair.qpn(errored, 1));
  EXPECT_FALSE(pair.engine(1).take_last_wqe_event(&qpn));
  pair.run_until([] { return false; }, 2'000, 5'000);
  t.poll();
  EXPECT_TRUE(t.wc1.empty()) << "the SRQ's WQEs were flushed";
  // All 30 WQEs are still there for the other QP.
  t.post_sends();
  t.run(t.total(), t.total());
  t.check_receives();
  t.check_sends();
  uint32_t id = 0;
  EXPECT_FALSE(pair.engine(1).take_srq_limit_event(&id));
  EXPECT_FALSE(pair.engine(1).take_last_wqe_event(&qpn));
}

TEST(SrqEvents, DestroySrqBusyWhileUsed) {
  EnginePair pair(srq_options());
  const uint32_t srq = make_srq(pair.engine(1), 16);
  const size_t rc = pair.connect_rc(core::kAccessLocalWrite, {0, srq});
  const size_t ud = pair.create_ud(7, {0, srq});
  core::Engine& e = pair.engine(1);
  EXPECT_EQ(e.destroy_srq(srq).errc(), core::Errc::kBusy);
  ASSERT_TRUE(e.destroy_qp(pair.qpn(rc, 1)).ok());
  EXPECT_EQ(e.destroy_srq(srq).errc(), core::Errc::kBusy);
  ASSERT_TRUE(e.destroy_qp(pair.qpn(ud, 1)).ok());
  EXPECT_TRUE(e.destroy_srq(srq).ok());
  EXPECT_EQ(e.destroy_srq(srq).errc(), core::Errc::kNotFound);
}

// A copy into another process's memory that fails (the process is gone) errors
// the QP that took the SRQ WQE (core/copy_failure.cc names it by that QP's RQ
// index); the other QP of the SRQ goes on with the next WQEs.
TEST(SrqChildDead, PlacementFailureErrorsOnlyTheTakingQp) {
  EnginePair pair(srq_options());
  const uint32_t srq = make_srq(pair.engine(1), 16, 1);
  const size_t qa = pair.connect_rc(core::kAccessLocalWrite, {0, srq});
  const size_t qb = pair.connect_rc(core::kAccessLocalWrite, {0, srq});
  ChildProcess child([]() -> ChildProcess::Values {
    void* p = mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap");
    return {reinterpret_cast<uint64_t>(p)};
  });
  core::MrTable& mrs = pair.host(1).mrs;
  const uint32_t space = mrs.spaces().attach(child.mem_fd());
  ASSERT_NE(space, 0u);
  uint32_t child_lkey = 0, rkey = 0;
  const uint64_t child_va = reinterpret_cast<uint64_t>(child.addr());
  ASSERT_TRUE(mrs.reg_mr(pair.host(1).pd, child.addr(), child_va, 8192, core::kAccessLocalWrite,
                         &child_lkey, &rkey, space)
                  .ok());
  std::vector<uint8_t> src(8192, 0x5a), dst(8192, 0);
  uint32_t sl, dl;
  pair.reg(0, src.data(), src.size(), 0, &sl, &rkey);
  pair.reg(1, dst.data(), dst.size(), 0, &dl, &rkey);
  child.kill_now();
  core::RecvWr rw;
  rw.num_sge = 1;
  rw.wr_id = 10;  // in the dead child
  rw.sg_list[0] = {child_va, 4096, child_lkey};
  ASSERT_TRUE(pair.engine(1).post_srq_recv(srq, rw).ok());
  for (uint64_t i = 0; i < 2; ++i) {
    rw.wr_id = 11 + i;
    rw.sg_list[0] = {reinterpret_cast<uint64_t>(dst.data()) + i * 4096, 4096, dl};
    ASSERT_TRUE(pair.engine(1).post_srq_recv(srq, rw).ok());
  }
  auto send = [&](size_t qp, uint64_t id) {
    core::SendWr wr;
    wr.wr_id = id;
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data()), 3000, sl};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  };
  std::vector<core::Wc> wc0, wc1;
  send(qa, 1);  // takes WQE 10: placement fails
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() >= 1 && wc1.size() >= 1;
  }));
  send(qb, 2);
  send(qb, 3);
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() >= 3 && wc1.size() >= 3;
  }));
  pair.run_until([] { return false; }, 2'000, 2'000);
  pair.poll(0, &wc0);
  pair.poll(1, &wc1);
  ASSERT_EQ(wc1.size(), 3u);
  EXPECT_EQ(wc1[0].wr_id, 10u);
  EXPECT_EQ(wc1[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wc1[0].qp_num, pair.qpn(qa, 1));
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(wc1[i].wr_id, 10u + i);
    EXPECT_EQ(wc1[i].status, WcStatus::kSuccess);
    EXPECT_EQ(wc1[i].qp_num, pair.qpn(qb, 1));
    EXPECT_EQ(wc1[i].byte_len, 3000u);
  }
  ASSERT_EQ(wc0.size(), 3u);
  EXPECT_EQ(wc0[0].status, WcStatus::kRemOpErr);
  EXPECT_EQ(wc0[1].status, WcStatus::kSuccess);
  EXPECT_EQ(wc0[2].status, WcStatus::kSuccess);
  EXPECT_EQ(std::vector<uint8_t>(dst.begin(), dst.begin() + 3000),
            std::vector<uint8_t>(3000, 0x5a));
  uint32_t qpn = 0;
  ASSERT_TRUE(pair.engine(1).take_last_wqe_event(&qpn));
  EXPECT_EQ(qpn, pair.qpn(qa, 1));
  EXPECT_GT(pair.engine(1).counters().mem_space_write_errors, 0u);
}

}  // namespace
}  // namespace burst::test
