// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Engine pairs over the loopback wire where MRs live in forked child processes
// (core::MemSpaces, process_vm_readv/writev): the requester's, the responder's
// or both sides' memory in a child. Every RC operation, 0 B .. 1 MB, MTU 1024 and
// 4096, clean and with 1% loss; atomics; UD; several SGEs across spaces. Every
// byte is verified by reading the child's memory. Then the children are killed
// mid-transfer: nothing crashes or hangs, the affected work completes with
// error statuses and the mem_space_*_errors counters move.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <functional>
#include <memory>
#include <random>
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

constexpr uint32_t kAllAccess = core::kAccessLocalWrite | core::kAccessRemoteWrite |
                                core::kAccessRemoteRead | core::kAccessRemoteAtomic;

std::vector<uint8_t> pattern(size_t n, uint64_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
  for (; i < n; ++i) v[i] = static_cast<uint8_t>(rng());
  return v;
}

int64_t first_diff(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return -2;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  return -1;
}

// A child whose memory is `len` bytes (rounded up to pages) of private
// anonymous memory, and its id in one host's MemSpaces.
ChildProcess::Values child_mmap(size_t len) {
  const size_t n = (std::max<size_t>(len, 1) + 4095) & ~size_t{4095};
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("mmap");
  return {reinterpret_cast<uint64_t>(p)};
}

// A registered buffer on one host, in burst's own memory or in a child.
class Buffer {
 public:
  Buffer(EnginePair& pair, int side, bool in_child, size_t len, uint32_t access) : len_(len) {
    core::MrTable& mrs = pair.host(side).mrs;
    uint32_t space = core::MemSpaces::kLocal;
    if (in_child) {
      child_ = std::make_unique<ChildProcess>([len] { return child_mmap(len); });
      space = mrs.spaces().attach(child_->mem_fd());
      if (space == 0) throw std::runtime_error("attach");
      addr_ = child_->addr();
    } else {
      local_.resize(std::max<size_t>(len, 1));
      addr_ = local_.data();
    }
    if (!mrs.reg_mr(pair.host(side).pd, addr_, reinterpret_cast<uint64_t>(addr_),
                    std::max<size_t>(len, 1), access | core::kAccessLocalWrite, &lkey_, &rkey_,
                    space)
             .ok()) {
      throw std::runtime_error("reg_mr");
    }
  }
  uint64_t va(size_t off = 0) const { return reinterpret_cast<uint64_t>(addr_) + off; }
  uint32_t lkey() const { return lkey_; }
  uint32_t rkey() const { return rkey_; }
  ChildProcess* child() { return child_.get(); }

  void set(size_t off, const uint8_t* p, size_t n) {
    if (child_) {
      if (!child_->write(va(off), p, n)) throw std::runtime_error("child write");
    } else if (n != 0) {
      std::memcpy(local_.data() + off, p, n);
    }
  }
  void fill(uint8_t b) {
    std::vector<uint8_t> v(len_, b);
    set(0, v.data(), v.size());
  }
  std::vector<uint8_t> get(size_t off, size_t n) const {
    if (child_) return child_->bytes(va(off), n);
    return {local_.begin() + static_cast<ptrdiff_t>(off),
            local_.begin() + static_cast<ptrdiff_t>(off + n)};
  }

 private:
  size_t len_;
  std::unique_ptr<ChildProcess> child_;
  std::vector<uint8_t> local_;
  uint8_t* addr_ = nullptr;
  uint32_t lkey_ = 0, rkey_ = 0;
};

enum class Op { kWrite, kWriteImm, kSend, kSendImm, kRead };
enum class Where { kRequester, kResponder, kBoth };

const char* op_name(Op op) {
  switch (op) {
    case Op::kWrite:
      return "Write";
    case Op::kWriteImm:
      return "WriteImm";
    case Op::kSend:
      return "Send";
    case Op::kSendImm:
      return "SendImm";
    case Op::kRead:
      return "Read";
  }
  return "?";
}
const char* where_name(Where w) {
  return w == Where::kRequester ? "ReqChild" : w == Where::kResponder ? "RespChild" : "BothChild";
}

struct Case {
  Op op;
  uint32_t size;
  uint32_t count;
  core::Mtu mtu;
  Where where;
  double loss;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << op_name(c.op) << " " << c.size << "B x" << c.count << " mtu" << core::mtu_bytes(c.mtu)
      << " " << where_name(c.where) << " loss " << c.loss;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(op_name(c.op)) + "_" + std::to_string(c.size) + "B_x" +
         std::to_string(c.count) + "_mtu" + std::to_string(core::mtu_bytes(c.mtu)) + "_" +
         where_name(c.where) + (c.loss > 0 ? "_Loss1" : "_Clean");
}

PairOptions options(core::Mtu mtu) {
  PairOptions opt;
  opt.mtu = mtu;
  opt.l2_mtu = mtu == core::Mtu::k4096 ? 9014 : 1514;
  opt.cap.max_send_wr = 256;
  opt.cap.max_recv_wr = 256;
  opt.cap.max_send_sge = 4;
  opt.cap.max_recv_sge = 4;
  return opt;
}

class ChildRcTransfer : public testing::TestWithParam<Case> {};

TEST_P(ChildRcTransfer, EveryByteAndEveryCompletion) {
  const Case c = GetParam();
  EnginePair pair(options(c.mtu));
  if (c.loss > 0) {
    for (int s = 0; s < 2; ++s) {
      datapath::LoopbackFaults f{.drop = c.loss};
      f.seed = 300 + static_cast<uint64_t>(s) * 11 + c.size;
      pair.set_faults(s, f);
    }
  }
  const size_t qp = pair.connect_rc();
  const size_t total = size_t{c.size} * c.count;
  const int data_side = c.op == Op::kRead ? 1 : 0;
  const int sink_side = data_side ^ 1;
  const auto in_child = [&](int side) {
    return c.where == Where::kBoth || (side == 0) == (c.where == Where::kRequester);
  };
  Buffer src(pair, data_side, in_child(data_side), total, kAllAccess);
  Buffer dst(pair, sink_side, in_child(sink_side), total, kAllAccess);
  const std::vector<uint8_t> data = pattern(total, c.size * 31 + c.count);
  src.set(0, data.data(), total);
  dst.fill(0xEE);

  const bool two_sided = c.op == Op::kSend || c.op == Op::kSendImm || c.op == Op::kWriteImm;
  if (two_sided) {
    for (uint32_t m = 0; m < c.count; ++m) {
      core::RecvWr rw;
      rw.wr_id = 5000 + m;
      if (c.op != Op::kWriteImm) {
        rw.num_sge = 1;
        rw.sg_list[0] = {dst.va(size_t{m} * c.size), c.size, dst.lkey()};
      }
      ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
    }
  }
  for (uint32_t m = 0; m < c.count; ++m) {
    core::SendWr wr;
    wr.wr_id = 100 + m;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    const size_t off = size_t{m} * c.size;
    switch (c.op) {
      case Op::kWrite:
      case Op::kWriteImm:
        wr.opcode = c.op == Op::kWrite ? WrOpcode::kRdmaWrite : WrOpcode::kRdmaWriteWithImm;
        wr.sg_list[0] = {src.va(off), c.size, src.lkey()};
        wr.rdma = {dst.va(off), dst.rkey()};
        wr.imm_data = 0xA0000000u + m;
        break;
      case Op::kSend:
      case Op::kSendImm:
        wr.opcode = c.op == Op::kSend ? WrOpcode::kSend : WrOpcode::kSendWithImm;
        wr.sg_list[0] = {src.va(off), c.size, src.lkey()};
        wr.imm_data = 0xB0000000u + m;
        break;
      case Op::kRead:
        wr.opcode = WrOpcode::kRdmaRead;
        wr.sg_list[0] = {dst.va(off), c.size, dst.lkey()};
        wr.rdma = {src.va(off), src.rkey()};
        break;
    }
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  std::vector<core::Wc> wc0, wc1;
  const size_t want1 = two_sided ? c.count : 0;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() >= c.count && wc1.size() >= want1;
  })) << "completions: requester "
      << wc0.size() << ", responder " << wc1.size();
  pair.run_until([] { return false; }, 20'000, 10'000);
  pair.poll(0, &wc0);
  pair.poll(1, &wc1);
  ASSERT_EQ(wc0.size(), c.count);
  ASSERT_EQ(wc1.size(), want1);
  for (uint32_t m = 0; m < c.count; ++m) {
    SCOPED_TRACE("message " + std::to_string(m));
    EXPECT_EQ(wc0[m].wr_id, 100u + m);
    EXPECT_EQ(wc0[m].status, WcStatus::kSuccess);
    if (two_sided) {
      EXPECT_EQ(wc1[m].wr_id, 5000u + m);
      EXPECT_EQ(wc1[m].status, WcStatus::kSuccess);
      EXPECT_EQ(wc1[m].byte_len, c.size);
      if (c.op != Op::kSend) {
        EXPECT_TRUE(wc1[m].wc_flags & core::kWcWithImm);
      }
    }
  }
  EXPECT_EQ(first_diff(dst.get(0, total), data), -1) << "payload differs";
  for (int s = 0; s < 2; ++s) {
    const core::EngineCounters& k = pair.engine(s).counters();
    EXPECT_EQ(k.mem_space_write_errors + k.mem_space_read_errors + k.mem_space_atomic_errors, 0u);
  }
}

std::vector<Case> child_cases() {
  std::vector<Case> v;
  for (Op op : {Op::kWrite, Op::kWriteImm, Op::kSend, Op::kSendImm, Op::kRead}) {
    for (core::Mtu mtu : {core::Mtu::k1024, core::Mtu::k4096}) {
      const uint32_t m = core::mtu_bytes(mtu);
      for (Where w : {Where::kRequester, Where::kResponder, Where::kBoth}) {
        for (uint32_t size : {0u, 1u, m - 1, m, m + 1, 3 * m + 17, 65536u}) {
          v.push_back({op, size, 8, mtu, w, 0.0});
        }
        v.push_back({op, 1u << 20, 2, mtu, w, 0.0});
        v.push_back({op, m + 1, 16, mtu, w, 0.01});
        v.push_back({op, 200000, 4, mtu, w, 0.01});
      }
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Ops, ChildRcTransfer, testing::ValuesIn(child_cases()), case_name);

// FETCH_ADD and CMP_SWAP on a counter in the responder's child, results into
// the requester's child; executed exactly once even with loss.
class ChildAtomics : public testing::TestWithParam<double> {};

TEST_P(ChildAtomics, ExecutedExactlyOnce) {
  PairOptions opt = options(core::Mtu::k1024);
  opt.max_rd_atomic = 8;
  EnginePair pair(opt);
  for (int s = 0; s < 2; ++s) {
    datapath::LoopbackFaults f{.drop = GetParam()};
    f.seed = 91 + static_cast<uint64_t>(s);
    pair.set_faults(s, f);
  }
  const size_t qp = pair.connect_rc();
  Buffer target(pair, 1, true, 16, kAllAccess);
  Buffer results(pair, 0, true, 8 * 256, kAllAccess);
  const uint64_t init[2] = {1000, 0};
  target.set(0, reinterpret_cast<const uint8_t*>(init), 16);
  results.fill(0);
  const int kAdds = 100, kSwaps = 100;
  for (int i = 0; i < kAdds + kSwaps; ++i) {
    core::SendWr wr;
    wr.wr_id = static_cast<uint64_t>(i);
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {results.va(size_t{static_cast<uint32_t>(i)} * 8), 8, results.lkey()};
    if (i < kAdds) {
      wr.opcode = WrOpcode::kAtomicFetchAndAdd;
      wr.atomic = {target.va(0), 3, 0, target.rkey()};
    } else {
      const uint64_t k = static_cast<uint64_t>(i - kAdds);
      wr.opcode = WrOpcode::kAtomicCmpAndSwp;
      wr.atomic = {target.va(8), k, k + 1, target.rkey()};
    }
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  std::vector<core::Wc> wc;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc);
    return wc.size() >= static_cast<size_t>(kAdds + kSwaps);
  }));
  pair.run_until([] { return false; }, 20'000, 10'000);
  pair.poll(0, &wc);
  ASSERT_EQ(wc.size(), static_cast<size_t>(kAdds + kSwaps));
  const std::vector<uint8_t> r = results.get(0, 8 * 256);
  for (int i = 0; i < kAdds + kSwaps; ++i) {
    EXPECT_EQ(wc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(wc[i].opcode, i < kAdds ? WcOpcode::kFetchAdd : WcOpcode::kCompSwap);
    uint64_t got;
    std::memcpy(&got, r.data() + size_t{static_cast<uint32_t>(i)} * 8, 8);
    const uint64_t want =
        i < kAdds ? 1000 + 3 * static_cast<uint64_t>(i) : static_cast<uint64_t>(i - kAdds);
    EXPECT_EQ(got, want) << "atomic " << i;
  }
  const std::vector<uint8_t> t = target.get(0, 16);
  uint64_t final_values[2];
  std::memcpy(final_values, t.data(), 16);
  EXPECT_EQ(final_values[0], 1000u + 3u * kAdds);
  EXPECT_EQ(final_values[1], static_cast<uint64_t>(kSwaps));
}

INSTANTIATE_TEST_SUITE_P(Loss, ChildAtomics, testing::Values(0.0, 0.01),
                         [](const testing::TestParamInfo<double>& i) {
                           return i.param > 0 ? std::string("Loss1") : std::string("Clean");
                         });

// SEND gathered from three SGEs (child, local, child) into a receive WQE of
// two SGEs (local, child).
TEST(ChildSge, GatherAndScatterAcrossSpaces) {
  EnginePair pair(options(core::Mtu::k1024));
  const size_t qp = pair.connect_rc();
  Buffer a(pair, 0, true, 10000, 0), b(pair, 0, false, 10000, 0);
  Buffer d1(pair, 1, false, 20000, 0), d2(pair, 1, true, 20000, 0);
  const std::vector<uint8_t> pa = pattern(10000, 1), pb = pattern(10000, 2);
  a.set(0, pa.data(), pa.size());
  b.set(0, pb.data(), pb.size());
  d1.fill(0);
  d2.fill(0);
  core::RecvWr rw;
  rw.wr_id = 1;
  rw.num_sge = 2;
  rw.sg_list[0] = {d1.va(), 4001, d1.lkey()};
  rw.sg_list[1] = {d2.va(), 20000, d2.lkey()};
  ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
  core::SendWr wr;
  wr.wr_id = 2;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = core::kSendSignaled;
  wr.num_sge = 3;
  wr.sg_list[0] = {a.va(100), 3000, a.lkey()};
  wr.sg_list[1] = {b.va(200), 2500, b.lkey()};
  wr.sg_list[2] = {a.va(5000), 4321, a.lkey()};
  ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  std::vector<core::Wc> wc0, wc1;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() == 1 && wc1.size() == 1;
  }));
  EXPECT_EQ(wc0[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc1[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc1[0].byte_len, 3000u + 2500u + 4321u);
  std::vector<uint8_t> want(pa.begin() + 100, pa.begin() + 3100);
  want.insert(want.end(), pb.begin() + 200, pb.begin() + 2700);
  want.insert(want.end(), pa.begin() + 5000, pa.begin() + 9321);
  std::vector<uint8_t> got = d1.get(0, 4001);
  const std::vector<uint8_t> rest = d2.get(0, want.size() - 4001);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(first_diff(got, want), -1);
}

// UD datagrams from a child's memory into a child's receive buffers.
TEST(ChildUd, DatagramsFromAndIntoChildren) {
  EnginePair pair(options(core::Mtu::k1024));
  const size_t qp = pair.create_ud(0x1234);
  constexpr int kMsgs = 16;
  constexpr uint32_t kSize = 900;
  Buffer src(pair, 0, true, kMsgs * kSize, 0), dst(pair, 1, true, kMsgs * (kSize + 40), 0);
  const std::vector<uint8_t> data = pattern(kMsgs * kSize, 8);
  src.set(0, data.data(), data.size());
  for (int m = 0; m < kMsgs; ++m) {
    core::RecvWr rw;
    rw.wr_id = static_cast<uint64_t>(m);
    rw.num_sge = 1;
    rw.sg_list[0] = {dst.va(size_t{static_cast<uint32_t>(m)} * (kSize + 40)), kSize + 40,
                     dst.lkey()};
    ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
  }
  for (int m = 0; m < kMsgs; ++m) {
    core::SendWr wr;
    wr.wr_id = static_cast<uint64_t>(m);
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {src.va(size_t{static_cast<uint32_t>(m)} * kSize), kSize, src.lkey()};
    wr.ud.ah.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
    wr.ud.ah.dmac = {0x02, 0, 0, 0, 0, 2};
    wr.ud.remote_qpn = pair.qpn(qp, 1);
    wr.ud.remote_qkey = 0x1234;
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  std::vector<core::Wc> wc0, wc1;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() == kMsgs && wc1.size() == kMsgs;
  }));
  for (int m = 0; m < kMsgs; ++m) {
    EXPECT_EQ(wc1[m].status, WcStatus::kSuccess);
    const std::vector<uint8_t> got =
        dst.get(size_t{static_cast<uint32_t>(m)} * (kSize + 40) + 40, kSize);
    EXPECT_EQ(
        std::memcmp(got.data(), data.data() + size_t{static_cast<uint32_t>(m)} * kSize, kSize), 0)
        << "datagram " << m;
  }
}

// ---------------------------------------------------------------------------
// The application dies mid-transfer.

struct KillRun {
  std::vector<core::Wc> wc0, wc1;
};

// Runs until `kill_when` holds, kills `victim`, then runs until `want0` /
// `want1` completions arrived (bounded: a hang fails the test).
void run_and_kill(EnginePair& pair, ChildProcess& victim, const std::function<bool()>& kill_when,
                  size_t want0, size_t want1, KillRun* out) {
  ASSERT_TRUE(pair.run_until(kill_when, 5'000'000));
  victim.kill_now();
  const bool done = pair.run_until(
      [&] {
        pair.poll(0, &out->wc0);
        pair.poll(1, &out->wc1);
        return out->wc0.size() >= want0 && out->wc1.size() >= want1;
      },
      20'000'000, 60'000);
  ASSERT_TRUE(done) << "requester " << out->wc0.size() << "/" << want0 << ", responder "
                    << out->wc1.size() << "/" << want1;
  pair.run_until([] { return false; }, 20'000, 5'000);
  pair.poll(0, &out->wc0);
  pair.poll(1, &out->wc1);
}

core::QpState state(EnginePair& pair, int side, size_t qp) {
  core::QpAttr a;
  EXPECT_TRUE(pair.engine(side).query_qp(pair.qpn(qp, side), &a, nullptr).ok());
  return a.qp_state;
}

constexpr uint32_t kBig = 8u << 20;

// RDMA WRITE into the responder's child: NAK remote access error; the WQEs
// behind it are flushed; the responder QP is in ERR.
TEST(ChildKilled, WriteIntoResponderChild) {
  EnginePair pair(options(core::Mtu::k1024));
  const size_t qp = pair.connect_rc();
  Buffer src(pair, 0, false, kBig, 0);
  Buffer dst(pair, 1, true, kBig, kAllAccess);
  for (uint64_t i = 0; i < 4; ++i) {
    core::SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {src.va(i * (kBig / 4)), kBig / 4, src.lkey()};
    wr.rdma = {dst.va(i * (kBig / 4)), dst.rkey()};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  KillRun r;
  run_and_kill(
      pair, *dst.child(), [&] { return pair.engine(1).counters().rx_packets >= 300; }, 4, 0, &r);
  ASSERT_EQ(r.wc0.size(), 4u);
  EXPECT_EQ(r.wc0[0].status, WcStatus::kRemAccessErr);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(r.wc0[i].status, WcStatus::kWrFlushErr) << i;
  EXPECT_GT(pair.engine(1).counters().mem_space_write_errors, 0u);
  EXPECT_GT(pair.engine(1).counters().naks_sent[2], 0u);  // remote access error
  EXPECT_EQ(state(pair, 0, qp), core::QpState::kErr);
  EXPECT_EQ(state(pair, 1, qp), core::QpState::kErr);
}

// SEND into a receive buffer in the responder's child: the RWQE completes
// with a local protection error, the requester with a remote operational error.
TEST(ChildKilled, SendIntoResponderChild) {
  EnginePair pair(options(core::Mtu::k4096));
  const size_t qp = pair.connect_rc();
  Buffer src(pair, 0, false, kBig, 0);
  Buffer dst(pair, 1, true, kBig, 0);
  for (uint64_t i = 0; i < 3; ++i) {
    core::RecvWr rw;
    rw.wr_id = 50 + i;
    rw.num_sge = 1;
    rw.sg_list[0] = {dst.va(i * (kBig / 4)), kBig / 4, dst.lkey()};
    ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
  }
  for (uint64_t i = 0; i < 3; ++i) {
    core::SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {src.va(i * (kBig / 4)), kBig / 4, src.lkey()};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  KillRun r;
  run_and_kill(
      pair, *dst.child(), [&] { return pair.engine(1).counters().rx_packets >= 100; }, 3, 3, &r);
  EXPECT_GT(pair.engine(1).counters().naks_sent[3], 0u);  // remote operational error
  ASSERT_EQ(r.wc0.size(), 3u);
  ASSERT_EQ(r.wc1.size(), 3u);
  EXPECT_EQ(r.wc0[0].status, WcStatus::kRemOpErr);
  EXPECT_EQ(r.wc0[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(r.wc1[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(r.wc1[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(r.wc1[2].status, WcStatus::kWrFlushErr);
  EXPECT_GT(pair.engine(1).counters().mem_space_write_errors, 0u);
  EXPECT_EQ(state(pair, 1, qp), core::QpState::kErr);
}

// RDMA READ into the requester's child: the READ completes with a local
// protection error (placement of the response data failed).
TEST(ChildKilled, ReadIntoRequesterChild) {
  EnginePair pair(options(core::Mtu::k1024));
  const size_t qp = pair.connect_rc();
  Buffer src(pair, 1, false, kBig, kAllAccess);
  Buffer dst(pair, 0, true, kBig, 0);
  for (uint64_t i = 0; i < 2; ++i) {
    core::SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::kRdmaRead;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {dst.va(i * (kBig / 2)), kBig / 2, dst.lkey()};
    wr.rdma = {src.va(i * (kBig / 2)), src.rkey()};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  KillRun r;
  run_and_kill(
      pair, *dst.child(), [&] { return pair.engine(0).counters().rx_packets >= 300; }, 2, 0, &r);
  ASSERT_EQ(r.wc0.size(), 2u);
  EXPECT_EQ(r.wc0[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(r.wc0[1].status, WcStatus::kWrFlushErr);
  EXPECT_GT(pair.engine(0).counters().mem_space_write_errors, 0u);
  EXPECT_EQ(state(pair, 0, qp), core::QpState::kErr);
}

// RDMA WRITE gathered from the requester's child: local protection error.
TEST(ChildKilled, WriteFromRequesterChild) {
  EnginePair pair(options(core::Mtu::k1024));
  const size_t qp = pair.connect_rc();
  Buffer src(pair, 0, true, kBig, 0);
  Buffer dst(pair, 1, false, kBig, kAllAccess);
  for (uint64_t i = 0; i < 2; ++i) {
    core::SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {src.va(i * (kBig / 2)), kBig / 2, src.lkey()};
    wr.rdma = {dst.va(i * (kBig / 2)), dst.rkey()};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  KillRun r;
  run_and_kill(
      pair, *src.child(), [&] { return pair.engine(1).counters().rx_packets >= 300; }, 2, 0, &r);
  ASSERT_EQ(r.wc0.size(), 2u);
  EXPECT_EQ(r.wc0[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(r.wc0[1].status, WcStatus::kWrFlushErr);
  EXPECT_GT(pair.engine(0).counters().mem_space_read_errors, 0u);
  EXPECT_EQ(state(pair, 0, qp), core::QpState::kErr);
}

// RDMA READ whose source is the responder's child: the READ response cannot be
// read: NAK remote access error.
TEST(ChildKilled, ReadFromResponderChild) {
  // (4096 response packets per READ: more than the loopback wire's 2048 buffers,
  // so the responder cannot send a whole READ in one poll.)
  EnginePair pair(options(core::Mtu::k1024));
  const size_t qp = pair.connect_rc();
  Buffer src(pair, 1, true, kBig, kAllAccess);
  Buffer dst(pair, 0, false, kBig, 0);
  for (uint64_t i = 0; i < 2; ++i) {
    core::SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::kRdmaRead;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {dst.va(i * (kBig / 2)), kBig / 2, dst.lkey()};
    wr.rdma = {src.va(i * (kBig / 2)), src.rkey()};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  KillRun r;
  run_and_kill(
      pair, *src.child(), [&] { return pair.engine(1).counters().read_responses_sent >= 100; }, 2,
      0, &r);
  ASSERT_EQ(r.wc0.size(), 2u);
  EXPECT_EQ(r.wc0[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(r.wc0[1].status, WcStatus::kWrFlushErr);
  EXPECT_GT(pair.engine(1).counters().mem_space_read_errors, 0u);
}

// Atomics on a dead child's memory, and results into a dead child's memory.
TEST(ChildKilled, Atomics) {
  EnginePair pair(options(core::Mtu::k1024));
  const size_t qp = pair.connect_rc();
  Buffer target(pair, 1, true, 64, kAllAccess);
  Buffer results(pair, 0, false, 64, 0);
  target.child()->kill_now();
  core::SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kAtomicFetchAndAdd;
  wr.send_flags = core::kSendSignaled;
  wr.num_sge = 1;
  wr.sg_list[0] = {results.va(), 8, results.lkey()};
  wr.atomic = {target.va(), 1, 0, target.rkey()};
  ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  std::vector<core::Wc> wc;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc);
    return !wc.empty();
  }));
  EXPECT_EQ(wc[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(pair.engine(1).counters().mem_space_atomic_errors, 1u);

  // The result buffer in a dead child: local protection error at the requester.
  EnginePair pair2(options(core::Mtu::k1024));
  const size_t qp2 = pair2.connect_rc();
  Buffer target2(pair2, 1, false, 64, kAllAccess);
  Buffer results2(pair2, 0, true, 64, 0);
  results2.child()->kill_now();
  wr.sg_list[0] = {results2.va(), 8, results2.lkey()};
  wr.atomic = {target2.va(), 1, 0, target2.rkey()};
  ASSERT_TRUE(pair2.engine(0).post_send(pair2.qpn(qp2, 0), wr).ok());
  wc.clear();
  ASSERT_TRUE(pair2.run_until([&] {
    pair2.poll(0, &wc);
    return !wc.empty();
  }));
  EXPECT_EQ(wc[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(pair2.engine(0).counters().mem_space_write_errors, 1u);
}

// Short messages into a child that is already gone, so that whole messages
// complete within one received burst before the failed copies are found: the
// completions already pending are turned into errors (the first for the
// failed operation, the rest flushed), unsignaled WQEs included.
TEST(ChildDead, ReadsCompletedInTheSameBurst) {
  EnginePair pair(options(core::Mtu::k1024));
  const size_t qp = pair.connect_rc();
  Buffer src(pair, 1, false, 8192, kAllAccess);
  Buffer dst(pair, 0, true, 8192, 0);
  dst.child()->kill_now();
  for (uint64_t i = 0; i < 3; ++i) {
    core::SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::kRdmaRead;
    wr.send_flags = i == 1 ? 0u : uint32_t{core::kSendSignaled};  // the middle one unsignaled
    wr.num_sge = 1;
    wr.sg_list[0] = {dst.va(i * 2000), 2000, dst.lkey()};
    wr.rdma = {src.va(i * 2000), src.rkey()};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  std::vector<core::Wc> wc;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc);
    return wc.size() >= 3;
  }));
  pair.run_until([] { return false; }, 2'000, 2'000);
  pair.poll(0, &wc);
  ASSERT_EQ(wc.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ(wc[i].wr_id, i);
  EXPECT_EQ(wc[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wc[2].status, WcStatus::kWrFlushErr);
  EXPECT_GT(pair.engine(0).counters().mem_space_write_errors, 0u);
  EXPECT_EQ(state(pair, 0, qp), core::QpState::kErr);
}

TEST(ChildDead, SendsCompletedInTheSameBurst) {
  EnginePair pair(options(core::Mtu::k1024));
  const size_t qp = pair.connect_rc();
  Buffer src(pair, 0, false, 8192, 0);
  Buffer dst(pair, 1, true, 8192, 0);
  dst.child()->kill_now();
  for (uint64_t i = 0; i < 3; ++i) {
    core::RecvWr rw;
    rw.wr_id = 10 + i;
    rw.num_sge = 1;
    rw.sg_list[0] = {dst.va(i * 2000), 2000, dst.lkey()};
    ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
  }
  for (uint64_t i = 0; i < 3; ++i) {
    core::SendWr wr;
    wr.wr_id = i;
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {src.va(i * 2000), 2000, src.lkey()};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  std::vector<core::Wc> wc0, wc1;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() >= 3 && wc1.size() >= 3;
  }));
  pair.run_until([] { return false; }, 2'000, 2'000);
  pair.poll(0, &wc0);
  pair.poll(1, &wc1);
  ASSERT_EQ(wc0.size(), 3u);
  ASSERT_EQ(wc1.size(), 3u);
  EXPECT_EQ(wc1[0].wr_id, 10u);
  EXPECT_EQ(wc1[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wc1[0].byte_len, 0u);
  EXPECT_EQ(wc1[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wc1[2].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wc0[0].status, WcStatus::kRemOpErr);
  EXPECT_EQ(wc0[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wc0[2].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(pair.engine(0).counters().acks_received, 0u) << "no ACK may cover the failed SEND";
  EXPECT_GT(pair.engine(1).counters().mem_space_write_errors, 0u);
}

// UD: the datagram whose placement failed completes with a local protection
// error and the QP goes to ERR.
TEST(ChildDead, UdReceive) {
  EnginePair pair(options(core::Mtu::k1024));
  const size_t qp = pair.create_ud(0x77);
  Buffer src(pair, 0, false, 4096, 0), dst(pair, 1, true, 4096, 0);
  dst.child()->kill_now();
  for (uint64_t i = 0; i < 2; ++i) {
    core::RecvWr rw;
    rw.wr_id = i;
    rw.num_sge = 1;
    rw.sg_list[0] = {dst.va(i * 2048), 2048, dst.lkey()};
    ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
  }
  core::SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kSend;
  wr.num_sge = 1;
  wr.sg_list[0] = {src.va(), 500, src.lkey()};
  wr.ud.ah.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
  wr.ud.ah.dmac = {0x02, 0, 0, 0, 0, 2};
  wr.ud.remote_qpn = pair.qpn(qp, 1);
  wr.ud.remote_qkey = 0x77;
  ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  std::vector<core::Wc> wc1;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(1, &wc1);
    return wc1.size() >= 2;
  }));
  EXPECT_EQ(wc1[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wc1[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(state(pair, 1, qp), core::QpState::kErr);
  EXPECT_EQ(pair.engine(1).counters().mem_space_write_errors,
            3u);  // GRH zeros, IPv4 header, payload
}

// Both children die while WRITEs, SENDs and READs run in both directions with
// loss: no crash, no hang, every WR completes (most with errors).
TEST(ChildKilled, EverythingAtOnceWithLoss) {
  EnginePair pair(options(core::Mtu::k1024));
  for (int s = 0; s < 2; ++s) {
    datapath::LoopbackFaults f{.drop = 0.01};
    f.seed = 5 + static_cast<uint64_t>(s);
    pair.set_faults(s, f);
  }
  const size_t qp = pair.connect_rc();
  Buffer a(pair, 0, true, kBig, kAllAccess);
  Buffer b(pair, 1, true, kBig, kAllAccess);
  constexpr uint32_t kChunk = kBig / 16;
  for (uint64_t i = 0; i < 8; ++i) {
    core::RecvWr rw;
    rw.wr_id = 900 + i;
    rw.num_sge = 1;
    rw.sg_list[0] = {b.va(i * kChunk), kChunk, b.lkey()};
    ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
  }
  for (uint64_t i = 0; i < 16; ++i) {
    core::SendWr wr;
    wr.wr_id = i;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.opcode = i % 3 == 0   ? WrOpcode::kSend
                : i % 3 == 1 ? WrOpcode::kRdmaWrite
                             : WrOpcode::kRdmaRead;
    wr.sg_list[0] = {a.va(i * kChunk), kChunk, a.lkey()};
    wr.rdma = {b.va(i * kChunk), b.rkey()};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  ASSERT_TRUE(pair.run_until([&] { return pair.engine(1).counters().rx_packets >= 2000; }));
  a.child()->kill_now();
  b.child()->kill_now();
  std::vector<core::Wc> wc0, wc1;
  ASSERT_TRUE(pair.run_until(
      [&] {
        pair.poll(0, &wc0);
        pair.poll(1, &wc1);
        return wc0.size() >= 16;
      },
      20'000'000, 60'000));
  pair.run_until([] { return false; }, 20'000, 5'000);
  pair.poll(0, &wc0);
  pair.poll(1, &wc1);
  EXPECT_EQ(wc0.size(), 16u);
  size_t errors = 0;
  for (const auto& w : wc0) errors += w.status != WcStatus::kSuccess;
  EXPECT_GT(errors, 0u);
  const core::EngineCounters& k0 = pair.engine(0).counters();
  const core::EngineCounters& k1 = pair.engine(1).counters();
  EXPECT_GT(k0.mem_space_write_errors + k0.mem_space_read_errors + k1.mem_space_write_errors +
                k1.mem_space_read_errors,
            0u);
}

}  // namespace
}  // namespace burst::test
