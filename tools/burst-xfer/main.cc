// burst-xfer: perftest-style RDMA transfers over the burst transport, run
// in-process. With --backend loopback both peers run in this process on the
// loopback datapath (the core-only demo and a benchmark of the transport
// itself); the network backends add a server/client mode.
//
// It ends with one summary line: goodput, message rate, latency percentiles,
// verification result and the drop counters.
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "tools/common/engine_pair.h"

namespace burst::tools {
namespace {

enum class Op { kWrite, kWriteImm, kRead, kSend };

struct Options {
  std::string backend = "loopback";
  std::string op = "write";
  uint64_t size = 65536;
  uint32_t qps = 1;
  uint32_t depth = 16;  // outstanding messages per QP
  uint64_t iters = 0;
  double duration_s = 0;
  uint32_t mtu = 4096;
  bool verify = false;
  double loss = 0;
};

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// Pattern of message `seq` of QP `qp`: cheap to generate and to check, and
// different for every message so stale bytes are caught.
void fill(uint8_t* p, uint64_t n, uint64_t qp, uint64_t seq) {
  uint64_t x = (qp << 40) ^ (seq * 0x9E3779B97F4A7C15ull) ^ 0x5bd1e995;
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    std::memcpy(p + i, &x, 8);
  }
  x ^= x << 13; x ^= x >> 7; x ^= x << 17;
  std::memcpy(p + i, &x, n - i);
}

bool check(const uint8_t* p, uint64_t n, uint64_t qp, uint64_t seq, std::vector<uint8_t>& tmp) {
  tmp.resize(std::max<uint64_t>(n, 8));
  fill(tmp.data(), n, qp, seq);
  return std::memcmp(tmp.data(), p, n) == 0;
}

struct Slot {
  uint64_t seq = 0;
  uint64_t posted_ns = 0;
  bool busy = false;
};

struct QpState {
  size_t pair = 0;
  uint64_t next_seq = 0;
  std::vector<Slot> slots;   // one per outstanding message
  std::deque<uint32_t> order;  // slots in posting order (completions arrive in order)
  std::deque<uint32_t> recv_order;
};

int run_loopback(const Options& o, Op op) {
  PairOptions po;
  po.mtu = o.mtu == 4096 ? core::Mtu::k4096 : core::Mtu::k1024;
  po.l2_mtu = o.mtu == 4096 ? 9014 : 1514;
  po.real_clock = true;
  po.timeout = 14;
  po.cap.max_send_wr = o.depth + 4;
  po.cap.max_recv_wr = o.depth + 4;
  po.cq_depth = std::max<uint32_t>(4096, 4 * o.qps * (o.depth + 4));
  EnginePair pair(po);
  if (o.loss > 0) {
    datapath::LoopbackFaults f;
    f.drop = o.loss;
    pair.set_faults(0, f);
    f.seed = 2;
    pair.set_faults(1, f);
  }

  const uint64_t slot_bytes = std::max<uint64_t>(o.size, 1);
  const uint64_t region = slot_bytes * o.depth;
  std::vector<QpState> qs(o.qps);
  // Side 0 is the requester; for READ the data flows from side 1 to side 0.
  std::vector<uint8_t> a(region * o.qps), b(region * o.qps);
  uint32_t a_l, a_r, b_l, b_r;
  const uint32_t acc = core::kAccessRemoteWrite | core::kAccessRemoteRead;
  pair.reg(0, a.data(), a.size(), acc, &a_l, &a_r);
  pair.reg(1, b.data(), b.size(), acc, &b_l, &b_r);
  for (uint32_t q = 0; q < o.qps; ++q) {
    qs[q].pair = pair.connect_rc();
    qs[q].slots.resize(o.depth);
  }
  const bool two_sided = op == Op::kSend || op == Op::kWriteImm;
  uint8_t* src_base = op == Op::kRead ? b.data() : a.data();
  uint8_t* dst_base = op == Op::kRead ? a.data() : b.data();

  auto post_recv = [&](uint32_t q, uint32_t s) {
    core::RecvWr rw;
    rw.wr_id = (uint64_t{q} << 32) | s;
    if (op == Op::kSend) {
      rw.num_sge = 1;
      rw.sg_list[0] = {reinterpret_cast<uint64_t>(b.data() + q * region + s * slot_bytes),
                       static_cast<uint32_t>(o.size), b_l};
    }
    return pair.engine(1).post_recv(pair.qpn(qs[q].pair, 1), rw);
  };
  if (two_sided) {
    for (uint32_t q = 0; q < o.qps; ++q)
      for (uint32_t s = 0; s < o.depth; ++s)
        if (!post_recv(q, s).ok()) {
          std::fprintf(stderr, "burst-xfer: post_recv failed\n");
          return 1;
        }
  }

  std::vector<uint64_t> lat_ns;
  lat_ns.reserve(1 << 20);
  std::vector<uint8_t> tmp;
  uint64_t completed = 0, posted = 0, verify_fail = 0;
  const uint64_t iters = o.iters ? o.iters : UINT64_MAX;
  const uint64_t start = now_ns();
  const uint64_t deadline =
      o.duration_s > 0 ? start + static_cast<uint64_t>(o.duration_s * 1e9) : UINT64_MAX;
  // Hard bound: never run more than duration + 60 s, or 10 minutes for --iters.
  const uint64_t hard_stop = (o.duration_s > 0 ? deadline : start + 540'000'000'000ull) +
                             60'000'000'000ull;
  bool stop_posting = false;
  bool timed_out = false;
  core::Wc wc[64];
  while (true) {
    const uint64_t t = now_ns();
    if (t >= deadline) stop_posting = true;
    if (t >= hard_stop) {
      timed_out = true;
      break;
    }
    // Post into free slots.
    for (uint32_t q = 0; q < o.qps && !stop_posting; ++q) {
      QpState& st = qs[q];
      for (uint32_t s = 0; s < o.depth && posted < iters; ++s) {
        Slot& sl = st.slots[s];
        if (sl.busy) continue;
        sl.seq = st.next_seq++;
        uint8_t* src = src_base + q * region + s * slot_bytes;
        uint8_t* dst = dst_base + q * region + s * slot_bytes;
        if (o.verify) fill(src, o.size, q, sl.seq);
        core::SendWr wr;
        wr.wr_id = (uint64_t{q} << 32) | s;
        wr.send_flags = core::kSendSignaled;
        wr.num_sge = 1;
        switch (op) {
          case Op::kWrite:
          case Op::kWriteImm:
            wr.opcode = op == Op::kWrite ? core::WrOpcode::kRdmaWrite
                                         : core::WrOpcode::kRdmaWriteWithImm;
            wr.sg_list[0] = {reinterpret_cast<uint64_t>(src), static_cast<uint32_t>(o.size), a_l};
            wr.rdma = {reinterpret_cast<uint64_t>(dst), b_r};
            wr.imm_data = static_cast<uint32_t>(sl.seq);
            break;
          case Op::kSend:
            wr.opcode = core::WrOpcode::kSend;
            wr.sg_list[0] = {reinterpret_cast<uint64_t>(src), static_cast<uint32_t>(o.size), a_l};
            break;
          case Op::kRead:
            wr.opcode = core::WrOpcode::kRdmaRead;
            wr.sg_list[0] = {reinterpret_cast<uint64_t>(dst), static_cast<uint32_t>(o.size), a_l};
            wr.rdma = {reinterpret_cast<uint64_t>(src), b_r};
            break;
        }
        sl.posted_ns = now_ns();
        const core::Status ps = pair.engine(0).post_send(pair.qpn(st.pair, 0), wr);
        if (!ps.ok()) {
          std::fprintf(stderr, "burst-xfer: post_send failed (errno %d)\n", ps.to_errno());
          return 1;
        }
        sl.busy = true;
        st.order.push_back(s);
        ++posted;
      }
    }
    pair.step();
    // Responder side: recycle receive buffers (and check SEND payloads).
    int n1;
    while ((n1 = pair.engine(1).poll_cq(pair.host(1).cq, wc, 64)) > 0) {
      for (int i = 0; i < n1; ++i) {
        if (wc[i].status != core::WcStatus::kSuccess) {
          std::fprintf(stderr, "burst-xfer: receive completion error %d\n",
                       static_cast<int>(wc[i].status));
          return 1;
        }
        const uint32_t q = static_cast<uint32_t>(wc[i].wr_id >> 32);
        const uint32_t s = static_cast<uint32_t>(wc[i].wr_id);
        if (q >= o.qps || s >= o.depth || !post_recv(q, s).ok()) {
          std::fprintf(stderr, "burst-xfer: bad receive completion\n");
          return 1;
        }
      }
    }
    int n0;
    while ((n0 = pair.engine(0).poll_cq(pair.host(0).cq, wc, 64)) > 0) {
      const uint64_t t1 = now_ns();
      for (int i = 0; i < n0; ++i) {
        const uint32_t q = static_cast<uint32_t>(wc[i].wr_id >> 32);
        const uint32_t s = static_cast<uint32_t>(wc[i].wr_id);
        if (wc[i].status != core::WcStatus::kSuccess || q >= o.qps || s >= o.depth) {
          std::fprintf(stderr, "burst-xfer: completion error status %d\n",
                       static_cast<int>(wc[i].status));
          return 1;
        }
        QpState& st = qs[q];
        if (st.order.empty() || st.order.front() != s) {
          std::fprintf(stderr, "burst-xfer: completion out of order on QP %u\n", q);
          return 1;
        }
        st.order.pop_front();
        Slot& sl = st.slots[s];
        if (o.verify &&
            !check(dst_base + q * region + s * slot_bytes, o.size, q, sl.seq, tmp))
          ++verify_fail;
        sl.busy = false;
        lat_ns.push_back(t1 - sl.posted_ns);
        ++completed;
      }
    }
    if ((stop_posting || posted >= iters) && completed == posted) break;
  }
  const double secs = static_cast<double>(now_ns() - start) / 1e9;
  std::sort(lat_ns.begin(), lat_ns.end());
  auto pct = [&](double p) {
    if (lat_ns.empty()) return 0.0;
    size_t i = static_cast<size_t>(p * static_cast<double>(lat_ns.size() - 1));
    return static_cast<double>(lat_ns[i]) / 1000.0;
  };
  uint64_t drops = 0;
  for (int s = 0; s < 2; ++s)
  {
    for (uint64_t d : pair.engine(s).counters().rx_drop) drops += d;
    for (uint64_t d : pair.engine(s).counters().rx_parse_drop) drops += d;
  }
  const double gbit = static_cast<double>(completed) * static_cast<double>(o.size) * 8 / secs / 1e9;
  std::printf(
      "burst-xfer backend=%s op=%s size=%" PRIu64 " qps=%u depth=%u mtu=%u msgs=%" PRIu64
      " time=%.3fs goodput=%.3f Gbit/s rate=%.0f msg/s lat_us p50=%.1f p99=%.1f p999=%.1f "
      "verify=%s drops=%" PRIu64 "%s\n",
      o.backend.c_str(), o.op.c_str(), o.size, o.qps, o.depth, o.mtu, completed, secs, gbit,
      static_cast<double>(completed) / secs, pct(0.5), pct(0.99), pct(0.999),
      o.verify ? (verify_fail ? "FAILED" : "ok") : "off", drops, timed_out ? " TIMEOUT" : "");
  if (verify_fail) {
    std::fprintf(stderr, "burst-xfer: %" PRIu64 " messages failed verification\n", verify_fail);
    return 1;
  }
  return timed_out ? 1 : 0;
}

}  // namespace
}  // namespace burst::tools

int main(int argc, char** argv) {
  using burst::tools::Op;
  burst::tools::Options o;
  CLI::App app{"burst-xfer: RDMA transfers over the burst transport"};
  app.add_option("--backend", o.backend, "datapath backend")->check(CLI::IsMember({"loopback"}));
  app.add_option("--op", o.op, "operation")
      ->check(CLI::IsMember({"write", "write_imm", "read", "send"}));
  app.add_option("--size", o.size, "message size in bytes")->check(CLI::Range(0, 1 << 30));
  app.add_option("--qps", o.qps, "queue pairs")->check(CLI::Range(1, 1024));
  app.add_option("--depth", o.depth, "outstanding messages per QP")->check(CLI::Range(1, 4096));
  auto* it = app.add_option("--iters", o.iters, "messages to transfer in total");
  auto* du = app.add_option("--duration", o.duration_s, "seconds to run")->check(CLI::Range(0.0, 3600.0));
  it->excludes(du);
  app.add_option("--mtu", o.mtu, "RoCE path MTU")->check(CLI::IsMember({1024, 4096}));
  app.add_flag("--verify", o.verify, "check every byte of every message");
  app.add_option("--loss", o.loss, "loopback only: drop probability per frame (testing builds)")
      ->check(CLI::Range(0.0, 0.5));
  CLI11_PARSE(app, argc, argv);
  if (o.iters == 0 && o.duration_s == 0) o.duration_s = 5;
  const Op op = o.op == "write" ? Op::kWrite
                : o.op == "write_imm" ? Op::kWriteImm
                : o.op == "read" ? Op::kRead
                                 : Op::kSend;
  try {
    return burst::tools::run_loopback(o, op);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "burst-xfer: %s\n", e.what());
    return 1;
  }
}
