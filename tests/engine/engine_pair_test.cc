// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Engine pairs over the loopback datapath: every RC operation and UD, message
// sizes 0 B .. 16 MB, MTU 1024 and 4096, with seeded loss, reordering,
// duplication and corruption in both directions. Every byte is verified, and
// every completion must arrive exactly once, in order, with the right status.
#include "tools/common/engine_pair.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace burst::test {
using tools::EnginePair;
using tools::PairOptions;
namespace {

using core::WcOpcode;
using core::WcStatus;
using core::WrOpcode;

enum class Op { kWrite, kWriteImm, kSend, kSendImm, kRead };

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

struct Faults {
  const char* name;
  datapath::LoopbackFaults f;
};

const Faults kClean{"Clean", {}};
const Faults kLoss1{"Loss1", {.drop = 0.01}};
const Faults kLoss5{"Loss5", {.drop = 0.05}};
const Faults kReorder{"Reorder", {.reorder = 0.05, .reorder_depth = 6}};
const Faults kDup{"Dup", {.duplicate = 0.05}};
const Faults kCorrupt{"Corrupt", {.corrupt = 0.03}};
const Faults kMixed{"Mixed", {.drop = 0.02, .duplicate = 0.02, .reorder = 0.02, .corrupt = 0.01}};

void fill_pattern(uint8_t* p, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rng();
    std::memcpy(p + i, &v, 8);
  }
  uint64_t v = rng();
  std::memcpy(p + i, &v, n - i);
}

// Index of the first differing byte, or -1.
int64_t first_diff(const uint8_t* a, const uint8_t* b, size_t n) {
  if (std::memcmp(a, b, n) == 0) return -1;
  for (size_t i = 0; i < n; ++i)
    if (a[i] != b[i]) return static_cast<int64_t>(i);
  return -1;
}

struct Case {
  Op op;
  uint32_t size;
  uint32_t count;  // messages posted back to back
  core::Mtu mtu;
  Faults faults;
};

void PrintTo(const Faults& f, std::ostream* os) { *os << f.name; }

void PrintTo(const Case& c, std::ostream* os) {
  *os << op_name(c.op) << " " << c.size << "B x" << c.count << " mtu" << core::mtu_bytes(c.mtu)
      << " " << c.faults.name;
}

std::string case_name(const testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return std::string(op_name(c.op)) + "_" + std::to_string(c.size) + "B_x" +
         std::to_string(c.count) + "_mtu" + std::to_string(core::mtu_bytes(c.mtu)) + "_" +
         c.faults.name;
}

class RcTransfer : public testing::TestWithParam<Case> {};

TEST_P(RcTransfer, EveryByteAndEveryCompletion) {
  const Case c = GetParam();
  PairOptions opt;
  opt.mtu = c.mtu;
  opt.l2_mtu = c.mtu == core::Mtu::k4096 ? 9014 : 1514;
  opt.cap.max_send_wr = 256;
  opt.cap.max_recv_wr = 256;
  opt.sq_psn[0] = 0xFFFF00;  // the transfer crosses the 24-bit PSN wrap
  EnginePair pair(opt);
  for (int s = 0; s < 2; ++s) {
    datapath::LoopbackFaults f = c.faults.f;
    f.seed = 1000 + static_cast<uint64_t>(s) * 7 + c.size;
    pair.set_faults(s, f);
  }
  const size_t qp = pair.connect_rc();

  // Requester is side 0. Source and destination buffers hold all messages.
  const size_t total = static_cast<size_t>(c.size) * c.count;
  const size_t alloc = std::max<size_t>(total, 1);
  std::vector<uint8_t> src(alloc), dst(alloc, 0xEE), expect;
  fill_pattern(src.data(), total, c.size * 31 + c.count);
  const int data_side = c.op == Op::kRead ? 1 : 0;  // who holds the source bytes
  const int sink_side = data_side ^ 1;
  uint8_t* src_mem = src.data();
  uint8_t* dst_mem = dst.data();
  uint32_t src_lkey, src_rkey, dst_lkey, dst_rkey;
  const uint32_t remote = core::kAccessRemoteWrite | core::kAccessRemoteRead;
  pair.reg(data_side, src_mem, alloc, remote, &src_lkey, &src_rkey);
  pair.reg(sink_side, dst_mem, alloc, remote, &dst_lkey, &dst_rkey);

  const bool two_sided = c.op == Op::kSend || c.op == Op::kSendImm || c.op == Op::kWriteImm;
  if (two_sided) {
    for (uint32_t m = 0; m < c.count; ++m) {
      core::RecvWr rw;
      rw.wr_id = 5000 + m;
      if (c.op != Op::kWriteImm) {
        rw.num_sge = 1;
        rw.sg_list[0] = {reinterpret_cast<uint64_t>(dst_mem) + size_t{m} * c.size, c.size,
                         dst_lkey};
      }
      ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
    }
  }

  for (uint32_t m = 0; m < c.count; ++m) {
    core::SendWr wr;
    wr.wr_id = 100 + m;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    const uint64_t off = size_t{m} * c.size;
    switch (c.op) {
      case Op::kWrite:
      case Op::kWriteImm:
        wr.opcode = c.op == Op::kWrite ? WrOpcode::kRdmaWrite : WrOpcode::kRdmaWriteWithImm;
        wr.sg_list[0] = {reinterpret_cast<uint64_t>(src_mem) + off, c.size, src_lkey};
        wr.rdma = {reinterpret_cast<uint64_t>(dst_mem) + off, dst_rkey};
        wr.imm_data = 0xA0000000u + m;
        break;
      case Op::kSend:
      case Op::kSendImm:
        wr.opcode = c.op == Op::kSend ? WrOpcode::kSend : WrOpcode::kSendWithImm;
        wr.sg_list[0] = {reinterpret_cast<uint64_t>(src_mem) + off, c.size, src_lkey};
        wr.imm_data = 0xB0000000u + m;
        break;
      case Op::kRead:
        wr.opcode = WrOpcode::kRdmaRead;
        wr.sg_list[0] = {reinterpret_cast<uint64_t>(dst_mem) + off, c.size, dst_lkey};
        wr.rdma = {reinterpret_cast<uint64_t>(src_mem) + off, src_rkey};
        break;
    }
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok()) << "message " << m;
  }

  std::vector<core::Wc> wc0, wc1;
  const uint32_t want1 = two_sided ? c.count : 0;
  const bool done = pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() >= c.count && wc1.size() >= want1;
  });
  ASSERT_TRUE(done) << "completions: requester " << wc0.size() << "/" << c.count << ", responder "
                    << wc1.size() << "/" << want1;
  // Let the wire settle: duplicates and retransmissions must not produce more.
  pair.run_until([] { return false; }, 20'000, 10'000);
  pair.poll(0, &wc0);
  pair.poll(1, &wc1);
  ASSERT_EQ(wc0.size(), c.count);
  ASSERT_EQ(wc1.size(), want1);

  const WcOpcode req_op = c.op == Op::kRead                             ? WcOpcode::kRdmaRead
                          : (c.op == Op::kSend || c.op == Op::kSendImm) ? WcOpcode::kSend
                                                                        : WcOpcode::kRdmaWrite;
  for (uint32_t m = 0; m < c.count; ++m) {
    SCOPED_TRACE("message " + std::to_string(m));
    EXPECT_EQ(wc0[m].wr_id, 100u + m);
    EXPECT_EQ(wc0[m].status, WcStatus::kSuccess);
    EXPECT_EQ(wc0[m].opcode, req_op);
    EXPECT_EQ(wc0[m].qp_num, pair.qpn(qp, 0));
    if (c.op == Op::kRead) {
      EXPECT_EQ(wc0[m].byte_len, c.size);
    }
    if (two_sided) {
      EXPECT_EQ(wc1[m].wr_id, 5000u + m);
      EXPECT_EQ(wc1[m].status, WcStatus::kSuccess);
      EXPECT_EQ(wc1[m].byte_len, c.size);
      EXPECT_EQ(wc1[m].qp_num, pair.qpn(qp, 1));
      if (c.op == Op::kWriteImm) {
        EXPECT_EQ(wc1[m].opcode, WcOpcode::kRecvRdmaWithImm);
        EXPECT_TRUE(wc1[m].wc_flags & core::kWcWithImm);
        EXPECT_EQ(wc1[m].imm_data, 0xA0000000u + m);
      } else {
        EXPECT_EQ(wc1[m].opcode, WcOpcode::kRecv);
        if (c.op == Op::kSendImm) {
          EXPECT_TRUE(wc1[m].wc_flags & core::kWcWithImm);
          EXPECT_EQ(wc1[m].imm_data, 0xB0000000u + m);
        } else {
          EXPECT_FALSE(wc1[m].wc_flags & core::kWcWithImm);
        }
      }
    }
  }
  EXPECT_EQ(first_diff(src_mem, dst_mem, total), -1) << "payload differs";
  // Corrupted frames must be caught (by the ICRC, or by the header checks when
  // the flip hit Ethernet/IP/UDP); a flip in a masked or unchecked field (TTL,
  // MAC) is harmless, so ask for detections only when several frames were hit.
  const uint64_t corrupted =
      pair.wire().port(0).counters().corrupted + pair.wire().port(1).counters().corrupted;
  uint64_t caught = 0;
  for (int s = 0; s < 2; ++s)
    for (uint64_t d : pair.engine(s).counters().rx_parse_drop) caught += d;
  if (corrupted >= 3) {
    EXPECT_GT(caught, 0u) << corrupted << " frames corrupted, none caught";
  }
}

std::vector<Case> rc_cases() {
  std::vector<Case> v;
  const Op ops[] = {Op::kWrite, Op::kWriteImm, Op::kSend, Op::kSendImm, Op::kRead};
  // Sizes around the segment boundaries of both MTUs, at every fault profile.
  for (Op op : ops) {
    for (core::Mtu mtu : {core::Mtu::k1024, core::Mtu::k4096}) {
      const uint32_t m = core::mtu_bytes(mtu);
      for (uint32_t size : {0u, 1u, m - 1, m, m + 1, 3 * m + 17, 65536u}) {
        v.push_back({op, size, 16, mtu, kClean});
      }
      for (const Faults& f : {kLoss1, kLoss5, kReorder, kDup, kCorrupt, kMixed}) {
        v.push_back({op, 0, 8, mtu, f});
        v.push_back({op, m + 1, 16, mtu, f});
        v.push_back({op, 200000, 8, mtu, f});
      }
      v.push_back({op, 1u << 20, 4, mtu, kMixed});
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Ops, RcTransfer, testing::ValuesIn(rc_cases()), case_name);

// The largest messages: 16 MB in one WR, clean and with loss.
std::vector<Case> big_cases() {
  std::vector<Case> v;
  for (Op op : {Op::kWrite, Op::kSend, Op::kRead}) {
    v.push_back({op, 16u << 20, 1, core::Mtu::k4096, kClean});
    v.push_back({op, 16u << 20, 1, core::Mtu::k4096, kLoss1});
  }
  v.push_back({Op::kWriteImm, 16u << 20, 1, core::Mtu::k1024, kMixed});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Big, RcTransfer, testing::ValuesIn(big_cases()), case_name);

class Atomics : public testing::TestWithParam<Faults> {};

// FETCH_ADD and CMP_SWAP under faults: duplicates must be answered from the
// responder's saved result, never executed twice, or the sums below break.
TEST_P(Atomics, ExecutedExactlyOnce) {
  PairOptions opt;
  opt.cap.max_send_wr = 256;
  opt.max_rd_atomic = 8;
  EnginePair pair(opt);
  for (int s = 0; s < 2; ++s) {
    datapath::LoopbackFaults f = GetParam().f;
    f.seed = 77 + static_cast<uint64_t>(s);
    pair.set_faults(s, f);
  }
  const size_t qp = pair.connect_rc();
  alignas(8) uint64_t counter[2] = {1000, 0};  // [0] fetch-add target, [1] cmp-swap target
  alignas(8) uint64_t results[256] = {};
  uint32_t t_lkey, t_rkey, r_lkey, r_rkey;
  pair.reg(1, reinterpret_cast<uint8_t*>(counter), sizeof(counter), core::kAccessRemoteAtomic,
           &t_lkey, &t_rkey);
  pair.reg(0, reinterpret_cast<uint8_t*>(results), sizeof(results), 0, &r_lkey, &r_rkey);

  const int kAdds = 120, kSwaps = 120;
  for (int i = 0; i < kAdds + kSwaps; ++i) {
    core::SendWr wr;
    wr.wr_id = static_cast<uint64_t>(i);
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(&results[i]), 8, r_lkey};
    if (i < kAdds) {
      wr.opcode = WrOpcode::kAtomicFetchAndAdd;
      wr.atomic = {reinterpret_cast<uint64_t>(&counter[0]), 3, 0, t_rkey};
    } else {
      // Each swap expects the value the previous one left: a chain that only
      // holds if every CMP_SWAP ran exactly once, in order.
      const uint64_t k = static_cast<uint64_t>(i - kAdds);
      wr.opcode = WrOpcode::kAtomicCmpAndSwp;
      wr.atomic = {reinterpret_cast<uint64_t>(&counter[1]), k, k + 1, t_rkey};
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
  for (int i = 0; i < kAdds + kSwaps; ++i) {
    EXPECT_EQ(wc[i].wr_id, static_cast<uint64_t>(i));
    EXPECT_EQ(wc[i].status, WcStatus::kSuccess);
    EXPECT_EQ(wc[i].opcode, i < kAdds ? WcOpcode::kFetchAdd : WcOpcode::kCompSwap);
    const uint64_t want =
        i < kAdds ? 1000 + 3 * static_cast<uint64_t>(i) : static_cast<uint64_t>(i - kAdds);
    EXPECT_EQ(results[i], want) << "atomic " << i;
  }
  EXPECT_EQ(counter[0], 1000u + 3u * kAdds);
  EXPECT_EQ(counter[1], static_cast<uint64_t>(kSwaps));
}

INSTANTIATE_TEST_SUITE_P(Faults, Atomics,
                         testing::Values(kClean, kLoss5, kReorder, kDup, kCorrupt, kMixed),
                         [](const testing::TestParamInfo<Faults>& i) { return i.param.name; });

// Several QPs share one engine pair and interleave; each stream stays intact.
TEST(MultiQp, EightQpsInterleaveWritesAndSends) {
  PairOptions opt;
  opt.cap.max_send_wr = 64;
  opt.cap.max_recv_wr = 64;
  EnginePair pair(opt);
  for (int s = 0; s < 2; ++s) {
    datapath::LoopbackFaults f = kMixed.f;
    f.seed = 5 + static_cast<uint64_t>(s);
    pair.set_faults(s, f);
  }
  constexpr int kQps = 8, kMsgs = 16;
  constexpr uint32_t kSize = 5000;
  std::vector<size_t> qps;
  for (int q = 0; q < kQps; ++q) qps.push_back(pair.connect_rc());
  std::vector<uint8_t> src(size_t{kQps} * kMsgs * kSize), dst(src.size(), 0);
  fill_pattern(src.data(), src.size(), 9);
  uint32_t sl, sr, dl, dr;
  pair.reg(0, src.data(), src.size(), 0, &sl, &sr);
  pair.reg(1, dst.data(), dst.size(), core::kAccessRemoteWrite, &dl, &dr);
  for (int q = 0; q < kQps; ++q) {
    for (int m = 0; m < kMsgs; ++m) {
      const size_t off = (size_t{static_cast<size_t>(q)} * kMsgs + m) * kSize;
      if (q % 2 == 1) {
        core::RecvWr rw;
        rw.wr_id = off;
        rw.num_sge = 1;
        rw.sg_list[0] = {reinterpret_cast<uint64_t>(dst.data() + off), kSize, dl};
        ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qps[q], 1), rw).ok());
      }
      core::SendWr wr;
      wr.wr_id = off;
      wr.send_flags = core::kSendSignaled;
      wr.num_sge = 1;
      wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data() + off), kSize, sl};
      wr.opcode = q % 2 == 1 ? WrOpcode::kSend : WrOpcode::kRdmaWrite;
      wr.rdma = {reinterpret_cast<uint64_t>(dst.data() + off), dr};
      ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qps[q], 0), wr).ok());
    }
  }
  std::vector<core::Wc> wc0, wc1;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() >= size_t{kQps} * kMsgs && wc1.size() >= size_t{kQps / 2} * kMsgs;
  }));
  // Per QP, completions keep posting order.
  std::map<uint32_t, uint64_t> last;
  for (const auto& w : wc0) {
    EXPECT_EQ(w.status, WcStatus::kSuccess);
    auto it = last.find(w.qp_num);
    if (it != last.end()) {
      EXPECT_GT(w.wr_id, it->second);
    }
    last[w.qp_num] = w.wr_id;
  }
  EXPECT_EQ(first_diff(src.data(), dst.data(), src.size()), -1);
}

// UD: datagrams with the GRH area, Q_Key checks, loss tolerated (UD is unreliable).
TEST(Ud, DatagramsCarryGrhAndData) {
  PairOptions opt;
  EnginePair pair(opt);
  const size_t qp = pair.create_ud(0x11111111);
  constexpr int kMsgs = 32;
  constexpr uint32_t kSize = 1000;
  std::vector<uint8_t> src(kMsgs * kSize), dst(kMsgs * (kSize + 40), 0);
  fill_pattern(src.data(), src.size(), 3);
  uint32_t sl, sr, dl, dr;
  pair.reg(0, src.data(), src.size(), 0, &sl, &sr);
  pair.reg(1, dst.data(), dst.size(), 0, &dl, &dr);
  for (int m = 0; m < kMsgs; ++m) {
    core::RecvWr rw;
    rw.wr_id = static_cast<uint64_t>(m);
    rw.num_sge = 1;
    rw.sg_list[0] = {reinterpret_cast<uint64_t>(dst.data() + m * (kSize + 40)), kSize + 40, dl};
    ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
  }
  for (int m = 0; m < kMsgs; ++m) {
    core::SendWr wr;
    wr.wr_id = static_cast<uint64_t>(m);
    wr.opcode = m % 2 ? WrOpcode::kSendWithImm : WrOpcode::kSend;
    wr.imm_data = 0x1234 + m;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data() + m * kSize), kSize, sl};
    wr.ud.ah.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
    wr.ud.ah.dmac = {0x02, 0, 0, 0, 0, 2};
    wr.ud.remote_qpn = pair.qpn(qp, 1);
    // Every fourth datagram carries a wrong Q_Key and must not be delivered.
    wr.ud.remote_qkey = m % 4 == 3 ? 0x22222222 : 0x11111111;
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  std::vector<core::Wc> wc0, wc1;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() >= size_t{kMsgs} && wc1.size() >= size_t{kMsgs - kMsgs / 4};
  }));
  pair.run_until([] { return false; }, 2000, 5000);
  pair.poll(1, &wc1);
  ASSERT_EQ(wc1.size(), size_t{kMsgs - kMsgs / 4});
  int k = 0;
  for (int m = 0; m < kMsgs; ++m) {
    EXPECT_EQ(wc0[m].status, WcStatus::kSuccess);
    if (m % 4 == 3) continue;
    const core::Wc& w = wc1[k++];
    EXPECT_EQ(w.status, WcStatus::kSuccess);
    EXPECT_EQ(w.src_qp, pair.qpn(qp, 0));
    EXPECT_EQ(w.byte_len, kSize + 40);
    EXPECT_TRUE(w.wc_flags & core::kWcGrh);
    EXPECT_EQ(static_cast<bool>(w.wc_flags & core::kWcWithImm), m % 2 == 1);
    // Receive buffers are consumed in order; the k-th delivered datagram lands in buffer k-1.
    const uint8_t* buf = dst.data() + w.wr_id * (kSize + 40);
    // IPv4 peer: the IPv4 header sits in the last 20 bytes of the 40-byte GRH area.
    EXPECT_EQ(buf[20] >> 4, 4) << "IPv4 version nibble in the GRH area";
    EXPECT_EQ(first_diff(buf + 40, src.data() + m * kSize, kSize), -1) << "datagram " << m;
  }
}

// Many seeds of the mixed fault profile: each one a different interleaving of
// loss, duplication, reordering and corruption in both directions.
class SeedSweep : public testing::TestWithParam<uint64_t> {};

TEST_P(SeedSweep, MixedOpsOnOneQp) {
  PairOptions opt;
  opt.cap.max_send_wr = 128;
  opt.cap.max_recv_wr = 128;
  opt.max_rd_atomic = 4;
  opt.sq_psn[0] = 0xFFFFFF - GetParam() * 13;  // wrap at a different point per seed
  EnginePair pair(opt);
  for (int s = 0; s < 2; ++s) {
    datapath::LoopbackFaults f{.drop = 0.03, .duplicate = 0.03, .reorder = 0.03, .corrupt = 0.02};
    f.seed = GetParam() * 2 + static_cast<uint64_t>(s);
    pair.set_faults(s, f);
  }
  const size_t qp = pair.connect_rc();
  constexpr int kMsgs = 60;
  constexpr uint32_t kMax = 9000;
  std::vector<uint8_t> a(kMsgs * kMax), b(kMsgs * kMax, 0), expect_b(kMsgs * kMax, 0),
      readback(kMsgs * kMax, 0);
  fill_pattern(a.data(), a.size(), GetParam());
  uint32_t al, ar, bl, br, rl, rr;
  pair.reg(0, a.data(), a.size(), 0, &al, &ar);
  pair.reg(0, readback.data(), readback.size(), 0, &rl, &rr);
  pair.reg(1, b.data(), b.size(), core::kAccessRemoteWrite | core::kAccessRemoteRead, &bl, &br);
  std::mt19937 rng(static_cast<uint32_t>(GetParam()));
  // Message m: WRITE or SEND of a[m] into b[m], then every third one READ back
  // into readback[m] (the READ follows the write on the same QP, so it must see it).
  std::vector<uint32_t> sizes(kMsgs);
  int recvs = 0, sends = 0;
  for (int m = 0; m < kMsgs; ++m) {
    sizes[m] = rng() % kMax;
    const uint64_t off = uint64_t{static_cast<uint32_t>(m)} * kMax;
    const bool send = rng() % 2;
    if (send) {
      core::RecvWr rw;
      rw.wr_id = static_cast<uint64_t>(m);
      rw.num_sge = 1;
      rw.sg_list[0] = {reinterpret_cast<uint64_t>(b.data() + off), kMax, bl};
      ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
      ++recvs;
    }
    core::SendWr wr;
    wr.wr_id = static_cast<uint64_t>(m) * 2;
    wr.send_flags = core::kSendSignaled;
    wr.opcode = send ? WrOpcode::kSend : WrOpcode::kRdmaWrite;
    // Two SGEs split at a random point: gather must stitch them.
    const uint32_t cut = sizes[m] ? rng() % sizes[m] : 0;
    wr.num_sge = 2;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(a.data() + off), cut, al};
    wr.sg_list[1] = {reinterpret_cast<uint64_t>(a.data() + off + cut), sizes[m] - cut, al};
    wr.rdma = {reinterpret_cast<uint64_t>(b.data() + off), br};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
    sends += 1;
    std::memcpy(expect_b.data() + off, a.data() + off, sizes[m]);
    if (m % 3 == 0) {
      core::SendWr rd;
      rd.wr_id = static_cast<uint64_t>(m) * 2 + 1;
      rd.send_flags = core::kSendSignaled;
      rd.opcode = WrOpcode::kRdmaRead;
      rd.num_sge = 1;
      rd.sg_list[0] = {reinterpret_cast<uint64_t>(readback.data() + off), sizes[m], rl};
      rd.rdma = {reinterpret_cast<uint64_t>(b.data() + off), br};
      ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), rd).ok());
      sends += 1;
    }
  }
  std::vector<core::Wc> wc0, wc1;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() >= static_cast<size_t>(sends) && wc1.size() >= static_cast<size_t>(recvs);
  }));
  pair.run_until([] { return false; }, 20'000, 10'000);
  pair.poll(0, &wc0);
  pair.poll(1, &wc1);
  ASSERT_EQ(wc0.size(), static_cast<size_t>(sends));
  ASSERT_EQ(wc1.size(), static_cast<size_t>(recvs));
  uint64_t prev = 0;
  for (size_t i = 0; i < wc0.size(); ++i) {
    EXPECT_EQ(wc0[i].status, WcStatus::kSuccess);
    if (i > 0) {
      EXPECT_GT(wc0[i].wr_id, prev) << "completions out of order";
    }
    prev = wc0[i].wr_id;
  }
  for (const auto& w : wc1) {
    EXPECT_EQ(w.status, WcStatus::kSuccess);
    EXPECT_EQ(w.byte_len, sizes[w.wr_id]);
  }
  EXPECT_EQ(first_diff(b.data(), expect_b.data(), b.size()), -1);
  for (int m = 0; m < kMsgs; m += 3) {
    const uint64_t off = uint64_t{static_cast<uint32_t>(m)} * kMax;
    EXPECT_EQ(first_diff(readback.data() + off, expect_b.data() + off, sizes[m]), -1)
        << "READ after WRITE/SEND on message " << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, SeedSweep, testing::Range<uint64_t>(1, 41));

// A SEND with no receive posted is RNR-NAKed; it completes once a receive
// arrives, and the RNR wait is the one the responder advertised.
TEST(Rnr, SendWaitsForReceive) {
  PairOptions opt;
  opt.min_rnr_timer = 14;  // 0.64 ms
  EnginePair pair(opt);
  const size_t qp = pair.connect_rc();
  std::vector<uint8_t> src(3000), dst(3000, 0);
  fill_pattern(src.data(), src.size(), 4);
  uint32_t sl, sr, dl, dr;
  pair.reg(0, src.data(), src.size(), 0, &sl, &sr);
  pair.reg(1, dst.data(), dst.size(), 0, &dl, &dr);
  core::SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kSend;
  wr.send_flags = core::kSendSignaled;
  wr.num_sge = 1;
  wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data()), 3000, sl};
  ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  std::vector<core::Wc> wc0, wc1;
  // Run 5 ms of virtual time with no receive posted: RNR NAKs, no completion.
  const uint64_t until = pair.now_ns() + 5'000'000;
  pair.run_until([&] {
    pair.poll(0, &wc0);
    return pair.now_ns() >= until;
  });
  EXPECT_TRUE(wc0.empty());
  EXPECT_GT(pair.engine(1).counters().rnr_naks_sent, 0u);
  EXPECT_GT(pair.engine(0).counters().rnr_naks_received, 0u);
  // At most one RNR NAK per 0.64 ms wait (plus the first): the wait is honoured.
  EXPECT_LE(pair.engine(0).counters().rnr_naks_received, 5'000'000u / 640'000u + 2);
  core::RecvWr rw;
  rw.wr_id = 9;
  rw.num_sge = 1;
  rw.sg_list[0] = {reinterpret_cast<uint64_t>(dst.data()), 3000, dl};
  ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() == 1 && wc1.size() == 1;
  }));
  EXPECT_EQ(wc0[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc1[0].byte_len, 3000u);
  EXPECT_EQ(first_diff(src.data(), dst.data(), 3000), -1);
}

// rnr_retry 0: the first RNR NAK ends the WR with kRnrRetryExcErr; the QP
// enters the error state and later WRs are flushed.
TEST(Rnr, RetryExhaustedErrorsTheQp) {
  PairOptions opt;
  opt.rnr_retry = 0;
  EnginePair pair(opt);
  const size_t qp = pair.connect_rc();
  std::vector<uint8_t> src(100);
  uint32_t sl, sr;
  pair.reg(0, src.data(), src.size(), 0, &sl, &sr);
  for (int i = 0; i < 3; ++i) {
    core::SendWr wr;
    wr.wr_id = static_cast<uint64_t>(i);
    wr.opcode = WrOpcode::kSend;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data()), 100, sl};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  std::vector<core::Wc> wc0;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    return wc0.size() == 3;
  }));
  EXPECT_EQ(wc0[0].status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(wc0[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(wc0[2].status, WcStatus::kWrFlushErr);
  core::QpAttr attr;
  core::QpCap cap;
  ASSERT_TRUE(pair.engine(0).query_qp(pair.qpn(qp, 0), &attr, &cap).ok());
  EXPECT_EQ(attr.qp_state, core::QpState::kErr);
}

// A dead link: every frame lost. The transport timer fires retry_cnt + 1
// times, then the WR fails with kRetryExcErr and the rest is flushed.
TEST(Retry, DeadLinkExhaustsRetries) {
  PairOptions opt;
  opt.retry_cnt = 3;
  opt.timeout = 10;  // 4.2 ms
  EnginePair pair(opt);
  const size_t qp = pair.connect_rc();
  pair.set_faults(0, {.drop = 1.0});
  std::vector<uint8_t> src(5000), dst(5000);
  uint32_t sl, sr, dl, dr;
  pair.reg(0, src.data(), src.size(), 0, &sl, &sr);
  pair.reg(1, dst.data(), dst.size(), core::kAccessRemoteWrite, &dl, &dr);
  const uint64_t t0 = pair.now_ns();
  for (int i = 0; i < 2; ++i) {
    core::SendWr wr;
    wr.wr_id = static_cast<uint64_t>(i);
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data()), 5000, sl};
    wr.rdma = {reinterpret_cast<uint64_t>(dst.data()), dr};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  std::vector<core::Wc> wc0;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    return wc0.size() == 2;
  }));
  EXPECT_EQ(wc0[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(wc0[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(pair.engine(0).counters().timeouts, 4u);  // first try + 3 retries, each timed out
  // 4 timeouts of 4.096 us * 2^10 each: the failure cannot come earlier.
  EXPECT_GE(pair.now_ns() - t0, 4u * 4096u * 1024u);
}

// Wrong rkey / missing access: the responder NAKs with remote access error.
TEST(Access, WrongRkeyIsRemoteAccessError) {
  EnginePair pair;
  const size_t qp = pair.connect_rc();
  std::vector<uint8_t> src(64), dst(64, 0);
  uint32_t sl, sr, dl, dr;
  pair.reg(0, src.data(), src.size(), 0, &sl, &sr);
  pair.reg(1, dst.data(), dst.size(), core::kAccessRemoteRead, &dl, &dr);  // no remote write
  core::SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.send_flags = core::kSendSignaled;
  wr.num_sge = 1;
  wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data()), 64, sl};
  wr.rdma = {reinterpret_cast<uint64_t>(dst.data()), dr};
  ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  wr.wr_id = 2;
  ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  std::vector<core::Wc> wc0;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    return wc0.size() == 2;
  }));
  EXPECT_EQ(wc0[0].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(wc0[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(std::count(dst.begin(), dst.end(), 0), 64) << "nothing written without access";
  EXPECT_EQ(pair.engine(1).counters().naks_sent[2], 1u);  // remote access error
}

// Unsignaled WRs complete silently; a signaled one after them completes alone,
// and the data of all of them is there.
TEST(Signaling, UnsignaledThenSignaled) {
  EnginePair pair;
  const size_t qp = pair.connect_rc();
  std::vector<uint8_t> src(10 * 700), dst(10 * 700, 0);
  fill_pattern(src.data(), src.size(), 8);
  uint32_t sl, sr, dl, dr;
  pair.reg(0, src.data(), src.size(), 0, &sl, &sr);
  pair.reg(1, dst.data(), dst.size(), core::kAccessRemoteWrite, &dl, &dr);
  for (int i = 0; i < 10; ++i) {
    core::SendWr wr;
    wr.wr_id = static_cast<uint64_t>(i);
    wr.opcode = WrOpcode::kRdmaWrite;
    wr.send_flags = i == 9 ? uint32_t{core::kSendSignaled} : 0u;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data() + i * 700), 700, sl};
    wr.rdma = {reinterpret_cast<uint64_t>(dst.data() + i * 700), dr};
    ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  }
  std::vector<core::Wc> wc0;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    return !wc0.empty();
  }));
  pair.run_until([] { return false; }, 2000, 5000);
  pair.poll(0, &wc0);
  ASSERT_EQ(wc0.size(), 1u);
  EXPECT_EQ(wc0[0].wr_id, 9u);
  EXPECT_EQ(first_diff(src.data(), dst.data(), src.size()), -1);
}

// Inline data is copied at post time: changing the buffer afterwards must not
// change what arrives.
TEST(Inline, CopiedAtPostTime) {
  PairOptions opt;
  opt.cap.max_inline_data = 64;
  EnginePair pair(opt);
  const size_t qp = pair.connect_rc();
  std::vector<uint8_t> src(48, 0x5A), dst(48, 0);
  uint32_t dl, dr;
  pair.reg(1, dst.data(), dst.size(), core::kAccessRemoteWrite, &dl, &dr);
  core::SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kRdmaWrite;
  wr.send_flags = core::kSendSignaled | core::kSendInline;
  wr.num_sge = 1;
  wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data()), 48, 0};
  wr.rdma = {reinterpret_cast<uint64_t>(dst.data()), dr};
  ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  std::fill(src.begin(), src.end(), 0x11);
  std::vector<core::Wc> wc0;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    return !wc0.empty();
  }));
  EXPECT_EQ(wc0[0].status, WcStatus::kSuccess);
  EXPECT_EQ(std::count(dst.begin(), dst.end(), 0x5A), 48);
}

// SEND_WITH_INVALIDATE: the responder's rkey stops working after the SEND.
TEST(Invalidate, SendWithInvalidateKillsTheRkey) {
  EnginePair pair;
  const size_t qp = pair.connect_rc();
  std::vector<uint8_t> src(256, 3), dst(256, 0), target(64, 0);
  uint32_t sl, sr, dl, dr, tl, tr;
  pair.reg(0, src.data(), src.size(), 0, &sl, &sr);
  pair.reg(1, dst.data(), dst.size(), 0, &dl, &dr);
  pair.reg(1, target.data(), target.size(), core::kAccessRemoteWrite, &tl, &tr);
  core::RecvWr rw;
  rw.wr_id = 1;
  rw.num_sge = 1;
  rw.sg_list[0] = {reinterpret_cast<uint64_t>(dst.data()), 256, dl};
  ASSERT_TRUE(pair.engine(1).post_recv(pair.qpn(qp, 1), rw).ok());
  core::SendWr wr;
  wr.wr_id = 1;
  wr.opcode = WrOpcode::kSendWithInv;
  wr.invalidate_rkey = tr;
  wr.send_flags = core::kSendSignaled;
  wr.num_sge = 1;
  wr.sg_list[0] = {reinterpret_cast<uint64_t>(src.data()), 256, sl};
  ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), wr).ok());
  core::SendWr w2;
  w2.wr_id = 2;
  w2.opcode = WrOpcode::kRdmaWrite;
  w2.send_flags = core::kSendSignaled;
  w2.num_sge = 1;
  w2.sg_list[0] = {reinterpret_cast<uint64_t>(src.data()), 64, sl};
  w2.rdma = {reinterpret_cast<uint64_t>(target.data()), tr};
  ASSERT_TRUE(pair.engine(0).post_send(pair.qpn(qp, 0), w2).ok());
  std::vector<core::Wc> wc0, wc1;
  ASSERT_TRUE(pair.run_until([&] {
    pair.poll(0, &wc0);
    pair.poll(1, &wc1);
    return wc0.size() == 2 && wc1.size() == 1;
  }));
  EXPECT_EQ(wc1[0].status, WcStatus::kSuccess);
  EXPECT_TRUE(wc1[0].wc_flags & core::kWcWithInv);
  EXPECT_EQ(wc1[0].imm_data, tr);
  EXPECT_EQ(wc0[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc0[1].status, WcStatus::kRemAccessErr);
  EXPECT_EQ(std::count(target.begin(), target.end(), 0), 64);
}

}  // namespace
}  // namespace burst::test
