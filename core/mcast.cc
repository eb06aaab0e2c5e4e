// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// UD multicast on one engine: the groups its QPs are attached to, and the
// delivery of a datagram sent to DQPN 0xFFFFFF (IBA 9.8.1, 10.5) to each of
// them, every QP checking its own Q_Key and taking its own receive WQE. The
// table is written by attach/detach (control commands on the owning worker) and
// read by rx on the same thread: no sharing. Which engines see a multicast
// frame is the worker's business (core/worker.h: Handoff multicast members).
#include <algorithm>

#include "abi/burst_limits.h"
#include "core/engine.h"

namespace burst::core {

namespace {

// ff00::/8, or an IPv4 class D address as ::ffff:224.0.0.0/4.
bool is_multicast_gid(const std::array<uint8_t, 16>& g) {
  constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::equal(g.begin(), g.begin() + 12, kMapped)) return (g[12] & 0xf0) == 0xe0;
  return g[0] == 0xff;
}

}  // namespace

Status Engine::attach_mcast(uint32_t qpn, const std::array<uint8_t, 16>& gid) {
  const Qp* qp = find_qp(qpn);
  if (qp == nullptr) return Errc::kNotFound;
  const bool gsi = qp->index == config_.max_qps;  // QP1: IB_QPT_GSI, not UD
  if (qp->type != QpType::kUd || gsi || !is_multicast_gid(gid)) return Errc::kInvalid;
  auto g =
      std::find_if(mcast_.begin(), mcast_.end(), [&](const McastGroup& m) { return m.gid == gid; });
  if (g == mcast_.end()) {
    mcast_.push_back(McastGroup{gid, {}});
    g = mcast_.end() - 1;
  }
  if (std::find(g->qpns.begin(), g->qpns.end(), qpn) != g->qpns.end()) return Status::Ok();
  if (g->qpns.size() >= BURST_MAX_MCAST_QP_ATTACH) return Errc::kNoMemory;
  g->qpns.push_back(qpn);
  return Status::Ok();
}

Status Engine::detach_mcast(uint32_t qpn, const std::array<uint8_t, 16>& gid) {
  if (find_qp(qpn) == nullptr) return Errc::kNotFound;
  auto g =
      std::find_if(mcast_.begin(), mcast_.end(), [&](const McastGroup& m) { return m.gid == gid; });
  if (g == mcast_.end()) return Errc::kInvalid;
  auto q = std::find(g->qpns.begin(), g->qpns.end(), qpn);
  if (q == g->qpns.end()) return Errc::kInvalid;
  g->qpns.erase(q);
  if (g->qpns.empty()) mcast_.erase(g);
  return Status::Ok();
}

void Engine::mcast_detach_all(uint32_t qpn) {
  for (McastGroup& g : mcast_) std::erase(g.qpns, qpn);
  std::erase_if(mcast_, [](const McastGroup& g) { return g.qpns.empty(); });
}

void Engine::mcast_receive(const wire::PacketView& pv) {
  const wire::Gid dgid = pv.dgid();
  for (const McastGroup& g : mcast_) {
    if (g.gid != dgid) continue;
    for (const uint32_t qpn : g.qpns) {
      if (Qp* qp = find_qp(qpn)) ud_receive(*qp, pv);
    }
    return;
  }
  ++counters_.rx_drop[static_cast<size_t>(Drop::kMcastUnattached)];
}

}  // namespace burst::core
