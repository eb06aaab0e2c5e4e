/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The measured loop of the engine benchmarks: one RC QP streaming RDMA WRITEs
// from engine 0 to engine 1, driven by hand (no worker, no loopback queue) so
// that each timed section covers exactly one engine call:
//   tx:  engine0.tx_build  -> up to 32 request frames (WRITE FIRST/MIDDLE/LAST)
//   rx:  engine1.rx_burst  -> responder, payload placed through the copy engine
//   ack: engine1.tx_build -> ACKs; engine0.rx_burst -> completer
// Messages are 1 MB, so nearly every packet is a WRITE_MIDDLE.
#pragma once

#include <time.h>

#include <cstdint>
#include <vector>

#include "tools/common/engine_pair.h"

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#define BURST_CG_TOGGLE() CALLGRIND_TOGGLE_COLLECT
#else
#define BURST_CG_TOGGLE() \
  do {                    \
  } while (0)
#endif

namespace burst::bench {

inline uint64_t clock_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

class WriteStream {
 public:
  static constexpr uint32_t kBurst = 32;
  static constexpr uint32_t kMsg = 1u << 20;
  static constexpr uint32_t kDepth = 8;

  WriteStream(core::Mtu mtu, bool verify_icrc) {
    tools::PairOptions o;
    o.mtu = mtu;
    o.l2_mtu = mtu == core::Mtu::k4096 ? 9014 : 1514;
    o.verify_icrc = verify_icrc;
    o.cap.max_send_wr = kDepth * 2;
    pair_ = std::make_unique<tools::EnginePair>(o);
    qp_ = pair_->connect_rc();
    src_.resize(kMsg);
    dst_.resize(kMsg);
    for (size_t i = 0; i < src_.size(); ++i) src_[i] = static_cast<uint8_t>(i * 7);
    pair_->reg(0, src_.data(), src_.size(), 0, &sl_, &sr_);
    pair_->reg(1, dst_.data(), dst_.size(), core::kAccessRemoteWrite, &dl_, &dr_);
    for (uint32_t i = 0; i < kBurst; ++i) {
      tx_[i] = buffer(data_store_, i, o.l2_mtu);
      ack_[i] = buffer(ack_store_, i, 256);
    }
  }

  // One round; adds the nanoseconds of each engine call to the totals and
  // returns the number of data frames moved.
  uint32_t round(uint64_t* tx_ns, uint64_t* rx_ns, uint64_t* ack_ns) {
    top_up();
    datapath::Frame f[kBurst];
    for (uint32_t i = 0; i < kBurst; ++i) f[i] = tx_[i];
    uint64_t t0 = clock_ns();
    const uint32_t n = pair_->engine(0).tx_build(f, kBurst, now_);
    uint64_t t1 = clock_ns();
    pair_->engine(1).rx_burst(f, n, now_);
    uint64_t t2 = clock_ns();
    datapath::Frame a[kBurst];
    for (uint32_t i = 0; i < kBurst; ++i) a[i] = ack_[i];
    const uint32_t m = pair_->engine(1).tx_build(a, kBurst, now_);
    pair_->engine(0).rx_burst(a, m, now_);
    uint64_t t3 = clock_ns();
    *tx_ns += t1 - t0;
    *rx_ns += t2 - t1;
    *ack_ns += t3 - t2;
    now_ += 1000;
    return n;
  }

  // Untimed variant. For instruction counting run under
  // `valgrind --tool=callgrind --collect-atstart=no`: collection is toggled
  // around the one engine call named by `collect` (0: none, 1: the data
  // receiver's rx_burst, 2: the data sender's tx_build).
  uint32_t round(int collect = 0) {
    top_up();
    datapath::Frame f[kBurst];
    for (uint32_t i = 0; i < kBurst; ++i) f[i] = tx_[i];
    if (collect == 2) BURST_CG_TOGGLE();
    const uint32_t n = pair_->engine(0).tx_build(f, kBurst, now_);
    if (collect == 2) BURST_CG_TOGGLE();
    if (collect == 1) BURST_CG_TOGGLE();
    pair_->engine(1).rx_burst(f, n, now_);
    if (collect == 1) BURST_CG_TOGGLE();
    datapath::Frame a[kBurst];
    for (uint32_t i = 0; i < kBurst; ++i) a[i] = ack_[i];
    const uint32_t m = pair_->engine(1).tx_build(a, kBurst, now_);
    pair_->engine(0).rx_burst(a, m, now_);
    now_ += 1000;
    return n;
  }

 private:
  static datapath::Frame buffer(std::vector<uint8_t>& store, uint32_t i, uint32_t cap) {
    if (store.empty()) store.resize(size_t{kBurst} * cap);
    return datapath::Frame{store.data() + size_t{i} * cap, 0, cap, i};
  }

  void top_up() {
    core::Wc wc[64];
    int got;
    while ((got = pair_->engine(0).poll_cq(pair_->host(0).cq, wc, 64)) > 0) outstanding_ -= got;
    while (outstanding_ < static_cast<int>(kDepth)) {
      core::SendWr wr;
      wr.wr_id = posted_++;
      wr.opcode = core::WrOpcode::kRdmaWrite;
      wr.send_flags = core::kSendSignaled;
      wr.num_sge = 1;
      wr.sg_list[0] = {reinterpret_cast<uint64_t>(src_.data()), kMsg, sl_};
      wr.rdma = {reinterpret_cast<uint64_t>(dst_.data()), dr_};
      if (!pair_->engine(0).post_send(pair_->qpn(qp_, 0), wr).ok()) break;
      ++outstanding_;
    }
  }

  std::unique_ptr<tools::EnginePair> pair_;
  size_t qp_ = 0;
  std::vector<uint8_t> src_, dst_, data_store_, ack_store_;
  uint32_t sl_ = 0, sr_ = 0, dl_ = 0, dr_ = 0;
  datapath::Frame tx_[kBurst], ack_[kBurst];
  uint64_t now_ = 1'000'000;
  uint64_t posted_ = 0;
  int outstanding_ = 0;
};

}  // namespace burst::bench
