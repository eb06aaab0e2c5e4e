// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "tools/common/engine_pair.h"

#include <time.h>

#include <stdexcept>
#include <string>

namespace burst::tools {

namespace {

std::array<uint8_t, 16> ipv4_gid(uint8_t last) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, last};
}

std::array<uint8_t, 6> mac(uint8_t last) { return {0x02, 0, 0, 0, 0, last}; }

void check(const core::Status& s, const char* what) {
  if (!s.ok())
    throw std::runtime_error(std::string(what) + " failed (errno " + std::to_string(s.to_errno()) +
                             ")");
}

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

EnginePair::EnginePair(const PairOptions& opt) : opt_(opt) {
  wire_ = std::make_unique<datapath::LoopbackWire>(opt.l2_mtu, 8192, 2048);
  if (opt_.real_clock) now_ns_ = monotonic_ns();
  for (int i = 0; i < 2; ++i) {
    hosts_[i] = std::make_unique<Host>();
    Host& h = *hosts_[i];
    core::EngineConfig cfg;
    cfg.port.mac = mac(static_cast<uint8_t>(i + 1));
    cfg.port.gids = {ipv4_gid(static_cast<uint8_t>(i + 1))};
    cfg.port.l2_mtu = opt.l2_mtu;
    cfg.verify_icrc = opt.verify_icrc;
    if (opt.window_pkts) cfg.window_pkts = opt.window_pkts;
    h.engine = std::make_unique<core::Engine>(cfg, h.mrs, h.copier);
    h.worker = std::make_unique<core::Worker<datapath::LoopbackPort>>(*h.engine, wire_->port(i));
    h.pd = h.mrs.alloc_pd();
    check(h.engine->create_cq(opt.cq_depth, &h.cq), "create_cq");
  }
}

void EnginePair::reg(int side, uint8_t* mem, size_t len, uint32_t access, uint32_t* lkey,
                     uint32_t* rkey) {
  Host& h = host(side);
  check(h.mrs.reg_mr(h.pd, mem, reinterpret_cast<uint64_t>(mem), len,
                     access | core::kAccessLocalWrite, lkey, rkey),
        "reg_mr");
}

core::QpInitAttr EnginePair::init_attr(int side, core::QpType type, uint32_t srq) {
  core::QpInitAttr ia{};
  ia.type = type;
  ia.pd = host(side).pd;
  ia.send_cq = host(side).cq;
  ia.recv_cq = host(side).cq;
  ia.cap = opt_.cap;
  ia.sq_sig_all = false;
  ia.srq = srq;
  return ia;
}

size_t EnginePair::connect_rc(uint32_t access, std::array<uint32_t, 2> srq) {
  QpPair p{};
  for (int i = 0; i < 2; ++i) {
    check(engine(i).create_qp(init_attr(i, core::QpType::kRc, srq[i]), &p.qpn[i]), "create_qp");
  }
  for (int i = 0; i < 2; ++i) {
    core::QpAttr a{};
    a.qp_state = core::QpState::kInit;
    a.pkey_index = 0;
    a.port_num = 1;
    a.qp_access_flags = access;
    check(engine(i).modify_qp(
              p.qpn[i], a,
              core::kQpState | core::kQpPkeyIndex | core::kQpPort | core::kQpAccessFlags),
          "modify_qp(INIT)");
    a = {};
    a.qp_state = core::QpState::kRtr;
    a.path_mtu = opt_.mtu;
    a.dest_qp_num = p.qpn[i ^ 1];
    a.rq_psn = opt_.sq_psn[i ^ 1];
    a.max_dest_rd_atomic = opt_.max_rd_atomic;
    a.min_rnr_timer = opt_.min_rnr_timer;
    a.ah.dgid = ipv4_gid(static_cast<uint8_t>((i ^ 1) + 1));
    a.ah.dmac = mac(static_cast<uint8_t>((i ^ 1) + 1));
    a.ah.sgid_index = 0;
    check(engine(i).modify_qp(p.qpn[i], a,
                              core::kQpState | core::kQpAv | core::kQpPathMtu | core::kQpDestQpn |
                                  core::kQpRqPsn | core::kQpMaxDestRdAtomic | core::kQpMinRnrTimer),
          "modify_qp(RTR)");
    a = {};
    a.qp_state = core::QpState::kRts;
    a.sq_psn = opt_.sq_psn[i];
    a.timeout = opt_.timeout;
    a.retry_cnt = opt_.retry_cnt;
    a.rnr_retry = opt_.rnr_retry;
    a.max_rd_atomic = opt_.max_rd_atomic;
    check(engine(i).modify_qp(p.qpn[i], a,
                              core::kQpState | core::kQpSqPsn | core::kQpQpTimeout |
                                  core::kQpRetryCnt | core::kQpRnrRetry | core::kQpMaxQpRdAtomic),
          "modify_qp(RTS)");
  }
  qps_.push_back(p);
  return qps_.size() - 1;
}

size_t EnginePair::create_ud(uint32_t qkey, std::array<uint32_t, 2> srq) {
  QpPair p{};
  for (int i = 0; i < 2; ++i) {
    check(engine(i).create_qp(init_attr(i, core::QpType::kUd, srq[i]), &p.qpn[i]), "create_qp(UD)");
    core::QpAttr a{};
    a.qp_state = core::QpState::kInit;
    a.qkey = qkey;
    a.port_num = 1;
    check(engine(i).modify_qp(p.qpn[i], a,
                              core::kQpState | core::kQpPkeyIndex | core::kQpPort | core::kQpQkey),
          "modify_qp(UD INIT)");
    a = {};
    a.qp_state = core::QpState::kRtr;
    check(engine(i).modify_qp(p.qpn[i], a, core::kQpState), "modify_qp(UD RTR)");
    a = {};
    a.qp_state = core::QpState::kRts;
    a.sq_psn = opt_.sq_psn[i];
    check(engine(i).modify_qp(p.qpn[i], a, core::kQpState | core::kQpSqPsn), "modify_qp(UD RTS)");
  }
  qps_.push_back(p);
  return qps_.size() - 1;
}

bool EnginePair::step() {
  if (opt_.real_clock) now_ns_ = monotonic_ns();
  bool worked = hosts_[0]->worker->poll_once(now_ns_);
  worked |= hosts_[1]->worker->poll_once(now_ns_);
  if (!opt_.real_clock) now_ns_ += opt_.tick_ns;
  return worked;
}

bool EnginePair::run_until(const std::function<bool()>& pred, uint64_t max_steps,
                           int64_t max_wall_ms) {
  const uint64_t start = monotonic_ns();
  for (uint64_t s = 0; s < max_steps; ++s) {
    if (pred()) return true;
    const bool worked = step();
    // Idle on a virtual clock: jump forward so timers fire without spinning.
    if (!worked && !opt_.real_clock) now_ns_ += 50'000;
    if ((s & 1023) == 0 &&
        (monotonic_ns() - start) / 1'000'000 > static_cast<uint64_t>(max_wall_ms))
      break;
  }
  return pred();
}

int EnginePair::poll(int side, std::vector<core::Wc>* out, int max) {
  core::Wc wc[64];
  const int got = engine(side).poll_cq(host(side).cq, wc, std::min(max, 64));
  for (int i = 0; i < got; ++i) out->push_back(wc[i]);
  return got;
}

}  // namespace burst::tools
