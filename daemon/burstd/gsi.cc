// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/gsi.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace burst::burstd {
namespace {

constexpr uint32_t kReceiveChunk = 16;  // MADs taken from the ring at a time

}  // namespace

Gsi::Gsi(std::vector<net::Gid> gids, Resolve resolve, core::Handoff* handoff)
    : gids_(std::move(gids)), resolve_(std::move(resolve)), handoff_(handoff) {
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  if (const char* v = getenv("BURST_TEST_GSI_TX_LOSS")) {
    const double pct = std::clamp(strtod(v, nullptr), 0.0, 100.0);
    test_loss_ppm_ = static_cast<uint32_t>(pct * 10000.0);
  }
  if (const char* v = getenv("BURST_TEST_GSI_TX_DROP_EVERY")) test_every_ = strtoull(v, nullptr, 10);
  if (const char* v = getenv("BURST_TEST_GSI_TX_SEED")) test_rng_ = strtoull(v, nullptr, 0) | 1;
#endif
}

#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
bool Gsi::test_drop() {
  ++test_seen_;
  bool drop = test_every_ != 0 && test_seen_ % test_every_ == 0;
  if (test_loss_ppm_ != 0) {
    test_rng_ ^= test_rng_ << 13;
    test_rng_ ^= test_rng_ >> 7;
    test_rng_ ^= test_rng_ << 17;
    drop = drop || test_rng_ % 1000000 < test_loss_ppm_;
  }
  if (drop) ++test_dropped_;
  return drop;
}
#endif

size_t Gsi::receive(cm::Mad* out, size_t max) {
  size_t n = 0;
  core::GsiMad in[kReceiveChunk];
  while (n < max) {
    const uint32_t want = static_cast<uint32_t>(std::min<size_t>(max - n, kReceiveChunk));
    const uint32_t got = channel_.receive(in, want);
    for (uint32_t i = 0; i < got; ++i) {
      const auto own = std::find(gids_.begin(), gids_.end(), in[i].local_gid);
      if (own == gids_.end()) {
        ++drop_dgid_;
        continue;
      }
      cm::Mad& m = out[n++];
      m.peer.gid = in[i].remote_gid;
      m.peer.mac = in[i].remote_mac;
      m.peer.remote_qpn = in[i].remote_qpn;
      m.peer.sgid_index = static_cast<uint8_t>(own - gids_.begin());
      m.peer.traffic_class = in[i].traffic_class;
      m.peer.hop_limit = in[i].hop_limit;
      m.peer.pkey_index = 0;
      static_assert(sizeof(m.bytes) == sizeof(in[i].mad));
      m.bytes = in[i].mad;
    }
    if (got < want) break;
  }
  return n;
}

int Gsi::send(const cm::Mad& mad) {
  const cm::MadPeer& p = mad.peer;
  if (p.sgid_index >= gids_.size() || net::gid_is_zero(gids_[p.sgid_index]) ||
      p.remote_qpn > 0xFFFFFF) {
    return EINVAL;
  }
  const net::Gid& sgid = gids_[p.sgid_index];
  if (net::gid_is_ipv4_mapped(sgid) != net::gid_is_ipv4_mapped(p.gid)) return EINVAL;
  core::GsiMad m;
  m.remote_gid = p.gid;
  m.local_gid = sgid;
  m.remote_mac = p.mac;
  m.remote_qpn = p.remote_qpn;
  m.traffic_class = p.traffic_class;
  m.hop_limit = p.hop_limit;
  m.mad = mad.bytes;
  if (m.remote_mac == net::MacAddr{}) {
    if (!resolve_ || resolve_(p.gid, &m.remote_mac) != 0 || m.remote_mac == net::MacAddr{}) {
      ++tx_unreachable_;
      return EHOSTUNREACH;
    }
  }
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  if ((test_loss_ppm_ != 0 || test_every_ != 0) && test_drop()) return 0;  // lost on the "wire"
#endif
  if (!channel_.send(m)) return EAGAIN;  // counted by the channel
  if (handoff_ != nullptr) handoff_->wake(core::kGsiOwner);
  return 0;
}

std::vector<std::pair<std::string, uint64_t>> Gsi::counters() const {
  const core::GsiCounters c = channel_.counters();
  std::vector<std::pair<std::string, uint64_t>> out = {{"gsi.rx", c.rx},
          {"gsi.tx", c.tx},
          {"gsi.drop_qkey", c.drop_qkey},
          {"gsi.drop_len", c.drop_len},
          {"gsi.drop_opcode", c.drop_opcode},
          {"gsi.drop_dgid", drop_dgid_},
          {"gsi.rx_ring_full", c.rx_ring_full},
          {"gsi.tx_ring_full", c.tx_ring_full},
          {"gsi.tx_bad_path", c.tx_bad_path},
          {"gsi.tx_unreachable", tx_unreachable_}};
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  if (test_loss_ppm_ != 0 || test_every_ != 0) out.emplace_back("gsi.test_tx_dropped", test_dropped_);
#endif
  return out;
}

}  // namespace burst::burstd
