// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "tools/burst-xfer/xfer.h"

#include <signal.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <iterator>

#include "core/enum_names.h"

namespace burst::tools {

namespace {
constexpr const char* kOpNames[] = {"write", "write_imm", "read", "send"};
static_assert(static_cast<size_t>(Op::kSend) + 1 == std::size(kOpNames));
}  // namespace

const char* op_name(Op op) { return enum_name(kOpNames, op); }
bool parse_op(const std::string& s, Op* op) { return enum_parse(kOpNames, s, op); }

namespace {
std::atomic<bool> g_interrupted{false};
void on_signal(int) { g_interrupted.store(true, std::memory_order_relaxed); }
}  // namespace

bool interrupted() { return g_interrupted.load(std::memory_order_relaxed); }

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void fill_pattern(uint8_t* p, uint64_t n, uint64_t qp, uint64_t seq) {
  uint64_t x = (qp << 40) ^ (seq * 0x9E3779B97F4A7C15ull) ^ 0x5bd1e995;
  uint64_t i = 0;
  auto step = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  };
  for (; i + 8 <= n; i += 8) {
    step();
    std::memcpy(p + i, &x, 8);
  }
  step();
  std::memcpy(p + i, &x, n - i);
}

bool check_pattern(const uint8_t* p, uint64_t n, uint64_t qp, uint64_t seq,
                   std::vector<uint8_t>* tmp) {
  tmp->resize(std::max<uint64_t>(n, 8));
  fill_pattern(tmp->data(), n, qp, seq);
  return std::memcmp(tmp->data(), p, n) == 0;
}

namespace {
constexpr uint64_t kReadBackTag = uint64_t{1} << 40;  // wr_id bit of a verify READ
}

QpRequester::QpRequester(core::Engine& engine, uint32_t qpn, uint32_t qp_index, const Params& p,
                         uint8_t* local, uint32_t lkey, uint8_t* check, uint32_t check_lkey,
                         RemoteRegion remote)
    : QpEnd(engine, qpn, qp_index, p, local, lkey),
      check_(check),
      check_lkey_(check_lkey),
      remote_(remote),
      slots_(p.depth) {}

uint32_t QpRequester::post(uint64_t now, uint64_t budget, Results* r) {
  uint32_t posted = 0;
  const bool readback = p_.verify && (p_.op == Op::kWrite || p_.op == Op::kWriteImm);
  for (uint32_t s = 0; s < p_.depth && posted < budget; ++s) {
    Slot& sl = slots_[s];
    if (sl.busy) continue;
    sl.seq = next_seq_;
    uint8_t* lbuf = local_ + s * slot_bytes_;
    const uint64_t rva = remote_.va + s * slot_bytes_;
    core::SendWr wr;
    wr.wr_id = s;
    wr.send_flags = core::kSendSignaled;
    wr.num_sge = 1;
    wr.sg_list[0] = {reinterpret_cast<uint64_t>(lbuf), p_.size, lkey_};
    switch (p_.op) {
      case Op::kWrite:
      case Op::kWriteImm:
        if (p_.verify) fill_pattern(lbuf, p_.size, qp_index_, sl.seq);
        wr.opcode =
            p_.op == Op::kWrite ? core::WrOpcode::kRdmaWrite : core::WrOpcode::kRdmaWriteWithImm;
        wr.rdma = {rva, remote_.rkey};
        wr.imm_data = static_cast<uint32_t>(sl.seq);
        if (readback) wr.send_flags = 0;  // the READ that follows completes the slot
        break;
      case Op::kSend:
        if (p_.verify) fill_pattern(lbuf, p_.size, qp_index_, sl.seq);
        wr.opcode = core::WrOpcode::kSend;
        break;
      case Op::kRead:
        wr.opcode = core::WrOpcode::kRdmaRead;
        wr.rdma = {rva, remote_.rkey};
        if (p_.verify) std::memset(lbuf, 0, p_.size);
        break;
    }
    core::Status st = engine_.post_send(qpn_, wr);
    if (st.ok() && readback) {
      core::SendWr rd;
      rd.wr_id = s | kReadBackTag;
      rd.opcode = core::WrOpcode::kRdmaRead;
      rd.send_flags = core::kSendSignaled;
      rd.num_sge = 1;
      std::memset(check_ + s * slot_bytes_, 0, p_.size);
      rd.sg_list[0] = {reinterpret_cast<uint64_t>(check_ + s * slot_bytes_), p_.size, check_lkey_};
      rd.rdma = {rva, remote_.rkey};
      st = engine_.post_send(qpn_, rd);
    }
    if (!st.ok()) {
      if (st.errc() == core::Errc::kNoMemory) break;  // send queue full: try later
      if (r->error.empty())
        r->error = "post_send failed on QP " + std::to_string(qpn_) + " (errno " +
                   std::to_string(st.to_errno()) + ")";
      break;
    }
    sl.busy = true;
    sl.posted_ns = now;
    order_.push_back(s);
    ++next_seq_;
    ++inflight_;
    ++posted;
  }
  return posted;
}

void QpRequester::complete(const core::Wc& wc, uint64_t now, Results* r) {
  const uint32_t s = static_cast<uint32_t>(wc.wr_id & 0xffffffffu);
  if (wc.status != core::WcStatus::kSuccess) {
    if (r->error.empty())
      r->error = "completion with status " + std::to_string(static_cast<int>(wc.status)) +
                 " on QP " + std::to_string(qpn_);
    return;
  }
  if (s >= p_.depth || order_.empty() || order_.front() != s) {
    if (r->error.empty()) r->error = "completion out of order on QP " + std::to_string(qpn_);
    return;
  }
  order_.pop_front();
  Slot& sl = slots_[s];
  if (p_.verify) {
    bool good = true;
    if (p_.op == Op::kRead) {
      good = check_pattern(local_ + s * slot_bytes_, p_.size, qp_index_, s, &tmp_) &&
             wc.byte_len == p_.size;
    } else if (p_.op == Op::kWrite || p_.op == Op::kWriteImm) {
      good = check_pattern(check_ + s * slot_bytes_, p_.size, qp_index_, sl.seq, &tmp_);
    }
    if (!good) ++r->verify_failures;
  }
  sl.busy = false;
  --inflight_;
  ++r->completed;
  r->latency_ns.push_back(now - sl.posted_ns);
}

QpResponder::QpResponder(core::Engine& engine, uint32_t qpn, uint32_t qp_index, const Params& p,
                         uint8_t* local, uint32_t lkey)
    : QpEnd(engine, qpn, qp_index, p, local, lkey) {}

core::Status QpResponder::start() {
  if (p_.op == Op::kRead) {
    for (uint32_t s = 0; s < p_.depth; ++s)
      fill_pattern(local_ + s * slot_bytes_, p_.size, qp_index_, s);
    return core::Status();
  }
  if (p_.op == Op::kWrite) return core::Status();
  // Twice the requester's depth: a message completes at the requester (ACK)
  // before this side has polled its receive completion and reposted, so the
  // requester may already send the next one; the spare half avoids RNR NAKs.
  for (uint32_t s = 0; s < 2 * p_.depth; ++s) {
    core::Status st = post_recv(s);
    if (!st.ok()) return st;
  }
  return core::Status();
}

core::Status QpResponder::post_recv(uint32_t slot) {
  core::RecvWr rw;
  rw.wr_id = slot;
  if (p_.op == Op::kSend) {
    rw.num_sge = 1;
    rw.sg_list[0] = {reinterpret_cast<uint64_t>(local_ + slot * slot_bytes_), p_.size, lkey_};
  }
  return engine_.post_recv(qpn_, rw);
}

void QpResponder::complete(const core::Wc& wc, Results* r) {
  const uint32_t s = static_cast<uint32_t>(wc.wr_id);
  if (wc.status != core::WcStatus::kSuccess || s >= 2 * p_.depth) {
    if (r->error.empty())
      r->error = "receive completion with status " + std::to_string(static_cast<int>(wc.status)) +
                 " on QP " + std::to_string(qpn_);
    return;
  }
  const uint64_t seq = received_++;
  if (p_.verify) {
    bool good = wc.byte_len == p_.size;
    if (p_.op == Op::kSend) {
      good = good && check_pattern(local_ + s * slot_bytes_, p_.size, qp_index_, seq, &tmp_);
    } else {
      good = good && (wc.wc_flags & core::kWcWithImm) && wc.imm_data == static_cast<uint32_t>(seq);
    }
    if (!good) ++r->verify_failures;
  }
  ++r->completed;
  core::Status st = post_recv(s);
  if (!st.ok() && r->error.empty())
    r->error = "post_recv failed (errno " + std::to_string(st.to_errno()) + ")";
}

core::Mtu path_mtu_of(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return core::Mtu::k256;
    case 512:
      return core::Mtu::k512;
    case 2048:
      return core::Mtu::k2048;
    case 4096:
      return core::Mtu::k4096;
    default:
      return core::Mtu::k1024;
  }
}

bool write_latency_samples(const std::string& path, const Results& r) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "burst-xfer: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    return false;
  }
  for (uint64_t ns : r.latency_ns) std::fprintf(f, "%" PRIu64 "\n", ns);
  const bool ok = std::fclose(f) == 0;
  if (!ok) std::fprintf(stderr, "burst-xfer: writing %s failed\n", path.c_str());
  return ok;
}

DropReport drop_report(const std::vector<const core::EngineCounters*>& engines) {
  DropReport d;
  for (size_t i = 0; i < static_cast<size_t>(wire::RxDrop::kCount); ++i) {
    uint64_t n = 0;
    for (const auto* c : engines) n += c->rx_parse_drop[i];
    if (n == 0) continue;
    d.total += n;
    d.by_reason += std::string(" ") + wire::rx_drop_name(static_cast<wire::RxDrop>(i)) + "=" +
                   std::to_string(n);
  }
  for (size_t i = 0; i < static_cast<size_t>(core::Drop::kCount); ++i) {
    uint64_t n = 0;
    for (const auto* c : engines) n += c->rx_drop[i];
    if (n == 0) continue;
    d.total += n;
    d.by_reason +=
        std::string(" ") + core::drop_name(static_cast<core::Drop>(i)) + "=" + std::to_string(n);
  }
  return d;
}

std::string summary_line(const Options& o, Results* r, double secs, const DropReport& drops,
                         const std::string& extra) {
  std::sort(r->latency_ns.begin(), r->latency_ns.end());
  auto pct = [&](double p) {
    if (r->latency_ns.empty()) return 0.0;
    const size_t i = static_cast<size_t>(p * static_cast<double>(r->latency_ns.size() - 1));
    return static_cast<double>(r->latency_ns[i]) / 1000.0;
  };
  const double gbit = static_cast<double>(r->completed) * static_cast<double>(o.size) * 8 /
                      std::max(secs, 1e-9) / 1e9;
  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                "burst-xfer backend=%s op=%s size=%" PRIu64 " qps=%u depth=%u mtu=%u msgs=%" PRIu64
                " time=%.3fs goodput=%.3f Gbit/s rate=%.0f msg/s lat_us p50=%.1f p99=%.1f "
                "p999=%.1f verify=%s drops=%" PRIu64 "%s%s%s",
                o.backend.c_str(), o.op.c_str(), o.size, o.qps, o.depth, o.mtu, r->completed, secs,
                gbit, static_cast<double>(r->completed) / std::max(secs, 1e-9), pct(0.5), pct(0.99),
                pct(0.999), o.verify ? (r->verify_failures ? "FAILED" : "ok") : "off", drops.total,
                drops.total ? " (" : "", drops.total ? drops.by_reason.substr(1).c_str() : "",
                (std::string(drops.total ? ")" : "") + extra).c_str());
  return buf;
}

}  // namespace burst::tools
