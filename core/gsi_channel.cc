// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// QP1 in the datapath (core/gsi_channel.h): the channel between QPN 1's worker and the
// control thread, and the Engine's part: MADs received on DQPN 1, UD SEND_ONLY
// frames built from QP1.
#include "core/gsi_channel.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstring>

#include "core/engine.h"

namespace burst::core {

GsiChannel::GsiChannel(uint32_t slots)
    : rx_(slots, sizeof(GsiMad)),
      tx_(slots, sizeof(GsiMad)),
      event_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

GsiChannel::~GsiChannel() {
  if (event_fd_ >= 0) close(event_fd_);
}

uint32_t GsiChannel::receive(GsiMad* out, uint32_t max) {
  if (event_fd_ >= 0) {
    uint64_t v;
    (void)!read(event_fd_, &v, sizeof(v));  // reset first: a later delivery writes it again
  }
  uint32_t n = 0;
  while (n < max) {
    const uint8_t* p;
    uint32_t len;
    if (rx_.peek(&p, &len, 1) == 0) break;
    std::memcpy(&out[n++], p, sizeof(GsiMad));
    rx_.release(1);
  }
  if (rx_.readable()) notify();  // more than max waited: stay readable
  return n;
}

bool GsiChannel::send(const GsiMad& mad) {
  if (tx_.push(reinterpret_cast<const uint8_t*>(&mad), sizeof(mad))) return true;
  bump(tx_ring_full_, 1);
  return false;
}

GsiCounters GsiChannel::counters() const {
  constexpr auto r = std::memory_order_relaxed;
  GsiCounters c;
  c.rx = rx_count_.load(r);
  c.tx = tx_count_.load(r);
  c.drop_qkey = drop_qkey_.load(r);
  c.drop_len = drop_len_.load(r);
  c.drop_opcode = drop_opcode_.load(r);
  c.rx_ring_full = rx_ring_full_.load(r);
  c.tx_ring_full = tx_ring_full_.load(r);
  c.tx_bad_path = tx_bad_path_.load(r);
  return c;
}

bool GsiChannel::tx_front(GsiMad* out) {
  const uint8_t* p;
  uint32_t len;
  if (tx_.peek(&p, &len, 1) == 0) return false;
  std::memcpy(out, p, sizeof(GsiMad));
  return true;
}

bool GsiChannel::deliver(const GsiMad& mad) {
  if (rx_.push(reinterpret_cast<const uint8_t*>(&mad), sizeof(mad))) {
    bump(rx_count_, 1);
    return true;
  }
  bump(rx_ring_full_, 1);
  return false;
}

void GsiChannel::notify() {
  if (event_fd_ < 0) return;
  const uint64_t one = 1;
  (void)!write(event_fd_, &one, sizeof(one));
}

// ---------------------------------------------------------------------------
// The Engine's part (QPN 1's owner only).

Status Engine::attach_gsi(GsiChannel* channel, uint32_t initial_psn) {
  if (channel != nullptr && qps_[config_.max_qps].in_use) return Errc::kBusy;  // a verbs QP1
  gsi_ = channel;
  gsi_psn_ = Psn(initial_psn);
  gsi_notify_ = false;
  return Status::Ok();
}

// A frame for DQPN 1 (parsed, ICRC checked, no verbs QP1): a MAD for the CM,
// or a drop counted by its reason.
void Engine::gsi_receive(const wire::PacketView& pv) {
  if ((pv.bth().pkey() & 0x7FFF) != (wire::kDefaultPkey & 0x7FFF)) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kBadPkey)];
    return;
  }
  if (pv.opcode != wire::op::kUdSendOnly) {
    gsi_->count_drop_opcode();
    return;
  }
  const wire::Deth* deth = pv.deth();
  if (deth->qkey() != wire::kQp1Qkey) {
    gsi_->count_drop_qkey();
    return;
  }
  if (pv.payload_len != kGsiMadBytes) {
    gsi_->count_drop_len();
    return;
  }
  GsiMad m;
  m.remote_gid = pv.sgid();
  m.local_gid = pv.dgid();
  m.remote_mac = pv.smac();
  const uint8_t* l3 = pv.frame + pv.l3_off;
  if (pv.ipv6) {
    const auto* ip = reinterpret_cast<const wire::Ipv6Hdr*>(l3);
    m.traffic_class = ip->traffic_class();
    m.hop_limit = ip->hop_limit();
  } else {
    const auto* ip = reinterpret_cast<const wire::Ipv4Hdr*>(l3);
    m.traffic_class = ip->tos();
    m.hop_limit = ip->ttl();
  }
  m.remote_qpn = deth->src_qpn();
  std::memcpy(m.mad.data(), pv.payload(), kGsiMadBytes);
  if (gsi_->deliver(m)) gsi_notify_ = true;
}

namespace {

bool v4_mapped(const std::array<uint8_t, 16>& g) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  return std::memcmp(g.data(), kPrefix, sizeof(kPrefix)) == 0;
}

}  // namespace

// UD SEND_ONLY frames from QP1 for the queued MADs, into bufs (up to n).
// A MAD that does not fit its buffer stays queued (counted as tx_buffer_too_small).
uint32_t Engine::gsi_build(datapath::Frame* bufs, uint32_t n) {
  uint32_t out = 0;
  GsiMad m;
  while (out < n && gsi_->tx_front(&m)) {
    wire::PathHeaders path{};
    path.smac = config_.port.mac;
    path.dmac = m.remote_mac;
    path.has_vlan = false;
    path.vlan_tci = 0;
    path.sgid = m.local_gid;
    path.dgid = m.remote_gid;
    path.ipv6 = !v4_mapped(m.local_gid);
    path.traffic_class = m.traffic_class;
    path.hop_limit = m.hop_limit;
    path.flow_label = 0;
    path.udp_sport = udp_sport_for(kGsiQpn, m.remote_qpn);
    if (path.ipv6 == v4_mapped(m.remote_gid) || m.remote_qpn > wire::kQpnMask) {
      gsi_->count_tx_bad_path();
      gsi_->tx_pop();
      continue;
    }
    wire::FrameWriter fw(bufs[out].data, bufs[out].cap, path, wire::op::kUdSendOnly, kGsiMadBytes);
    if (!fw.ok()) {
      ++counters_.tx_buffer_too_small;
      break;
    }
    wire::Bth& bth = fw.bth();
    bth.set_dest_qpn(m.remote_qpn);
    bth.set_psn(gsi_psn_);
    bth.set_ack_req(true);  // as rxe (and the captured kernel MADs)
    gsi_psn_ = gsi_psn_ + 1;
    fw.deth().set_qkey(wire::kQp1Qkey);
    fw.deth().set_src_qpn(kGsiQpn);
    std::memcpy(fw.payload(), m.mad.data(), kGsiMadBytes);
    fw.set_ipv4_id(ipv4_id_++);
    bufs[out].len = fw.finish();
    gsi_->tx_pop();
    ++out;
  }
  if (out > 0) gsi_->count_tx(out);
  return out;
}

}  // namespace burst::core
