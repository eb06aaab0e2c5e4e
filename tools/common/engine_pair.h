/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Two transport engines joined by the loopback datapath, driven from one thread:
// the harness of the engine-pair tests (on a virtual clock, which makes
// retransmit and RNR timers deterministic and lets a 5%-loss run finish in
// bounded wall-clock time) and of burst-xfer --backend loopback (real clock).
// Setup errors throw std::runtime_error naming the call that failed.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/engine.h"
#include "core/mr.h"
#include "core/worker.h"
#include "datapath/loopback/loopback.h"

namespace burst::tools {

struct Host {
  core::MrTable mrs;
  core::CopyEngine copier;
  std::unique_ptr<core::Engine> engine;
  std::unique_ptr<core::Worker<datapath::LoopbackPort>> worker;
  uint32_t pd = 0;
  uint32_t cq = 0;
};

struct PairOptions {
  core::Mtu mtu = core::Mtu::k1024;
  uint32_t l2_mtu = 1514;
  uint32_t cq_depth = 4096;
  core::QpCap cap{};
  uint8_t timeout = 8;  // 4.096 us * 2^8 ~ 1 ms of virtual time
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
  uint8_t min_rnr_timer = 1;  // 0.01 ms
  uint8_t max_rd_atomic = 16;
  uint32_t sq_psn[2] = {0x100, 0x200};
  uint64_t tick_ns = 500;   // virtual time per poll iteration
  bool real_clock = false;  // use CLOCK_MONOTONIC instead of virtual time
  bool verify_icrc = true;
  uint32_t window_pkts =
      0;  // 0: the engine's default  // benchmarks measure the transport with and without it
};

class EnginePair {
 public:
  explicit EnginePair(const PairOptions& opt = {});

  Host& host(int i) { return *hosts_[i]; }
  core::Engine& engine(int i) { return *hosts_[i]->engine; }
  datapath::LoopbackWire& wire() { return *wire_; }
  uint64_t now_ns() const { return now_ns_; }

  // Creates one RC QP on each side and connects them (INIT, RTR, RTS).
  // srq[i] != 0: side i's QP receives from that SRQ of engine(i).
  // Returns the pair index.
  size_t connect_rc(uint32_t access = core::kAccessLocalWrite | core::kAccessRemoteWrite |
                                      core::kAccessRemoteRead | core::kAccessRemoteAtomic,
                    std::array<uint32_t, 2> srq = {});
  // Creates one UD QP on each side (RTS), Q_Key `qkey` (srq as for connect_rc).
  size_t create_ud(uint32_t qkey, std::array<uint32_t, 2> srq = {});
  uint32_t qpn(size_t pair, int side) const { return qps_[pair].qpn[side]; }

  // Registers `len` bytes at `mem` on host `side`.
  void reg(int side, uint8_t* mem, size_t len, uint32_t access, uint32_t* lkey, uint32_t* rkey);
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  // Faults on frames sent by `side` (fault injection: BURST_TEST_HOOKS builds only).
  void set_faults(int side, const datapath::LoopbackFaults& f) { wire_->set_faults(side, f); }
#endif

  // One poll iteration of both workers; advances virtual time.
  bool step();
  // Steps until pred() holds or `max_steps` / `max_wall_ms` pass. Returns pred().
  bool run_until(const std::function<bool()>& pred, uint64_t max_steps = 50'000'000,
                 int64_t max_wall_ms = 120'000);
  // Polls `want` completions from host `side`'s CQ into out (appends).
  int poll(int side, std::vector<core::Wc>* out, int max = 64);

 private:
  struct QpPair {
    uint32_t qpn[2];
  };
  // A QP of `type` on host `side`: its PD and CQ, opt_.cap, the SRQ `srq` (0: none).
  core::QpInitAttr init_attr(int side, core::QpType type, uint32_t srq);
  PairOptions opt_;
  std::unique_ptr<datapath::LoopbackWire> wire_;
  std::unique_ptr<Host> hosts_[2];
  std::vector<QpPair> qps_;
  uint64_t now_ns_ = 1'000'000;
};

}  // namespace burst::tools
