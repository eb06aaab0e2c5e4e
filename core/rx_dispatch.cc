// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The datapath entry points: rx_burst (parse, ICRC, dispatch by destination QPN
// to responder / completer / UD) and tx_build (round-robin over the QPs with
// transmit work; per QP responder output first, then requests).
#include "core/engine.h"

namespace burst::core {

// The fast path of the receive side: the next RDMA WRITE MIDDLE packet of the
// WRITE in progress on an RC QP, the bulk of a large transfer. Together,
// rx_write_middle (matching: opcode, ECN, QP, P_Key, source address) and
// rx_write_middle_on (the QP's state) make every check that dispatch() ->
// rc_request() -> rc_write() make for such a packet, with the same effects. A
// packet that is not that case, or that fails any check, returns false with
// nothing changed and takes the general path, which handles (and counts) it.
// qp is the QP found for an earlier packet of the burst (QPs are not created
// or destroyed during rx_burst) or nullptr. A WRITE into another memory space
// (RespState::kWriteSpace) never takes it: the space costs this path nothing.
[[gnu::always_inline]] inline bool Engine::rx_write_middle(const wire::PacketView& pv, Qp*& qp) {
  if (pv.opcode != wire::op::kRcRdmaWriteMiddle || pv.ecn == 3) return false;
  const wire::Bth& bth = pv.bth();
  const uint32_t qpn = bth.dest_qpn();
  if (qp == nullptr || qp->qpn != qpn) {
    qp = find_qp(qpn);
    if (qp == nullptr) return false;
  }
  const bool match = qp->type == QpType::kRc &&
                     (bth.pkey() & 0x7FFF) == (wire::kDefaultPkey & 0x7FFF) &&
                     pv.sgid_is(qp->attr.ah.dgid);
  return match && rx_write_middle_on(*qp, pv);
}

// The part of the fast path that depends on the QP's state, for a packet
// already matched to qp (see above).
[[gnu::always_inline]] inline bool Engine::rx_write_middle_on(Qp& qp, const wire::PacketView& pv) {
  constexpr uint32_t kRecvStates = 1u << static_cast<uint32_t>(QpState::kRtr) |
                                   1u << static_cast<uint32_t>(QpState::kRts) |
                                   1u << static_cast<uint32_t>(QpState::kSqd);
  RespState& r = qp.resp;
  const wire::Bth& bth = pv.bth();
  const uint32_t len = pv.payload_len;
  const bool ok =
      ((kRecvStates >> static_cast<uint32_t>(qp.state)) & 1) != 0 && bth.psn() == r.epsn &&
      !r.nak_pending && r.msg == RespState::kWrite && len == qp.mtu && len < r.write_left &&
      (qp.attr.qp_access_flags & kAccessRemoteWrite) != 0 && MrTable::still_valid(r.write_ref);
  if (!ok) return false;
  r.nak_outstanding = false;  // the expected PSN arrived
  copy(r.write_host, pv.payload(), len);
  r.write_host += len;
  r.write_left -= len;
  r.epsn = r.epsn + 1;
  if (bth.ack_req()) {
    r.ack_pending = true;
    tx_schedule(qp);
  }
  return true;
}

void Engine::rx_burst(const datapath::Frame* frames, uint32_t n, uint64_t now_ns) {
  const bool verify_icrc = config_.verify_icrc;
  uint64_t bytes = 0;
  wire::PacketView pv;
  Qp* qp = nullptr;
  // Header prediction: the previous frame, when it took the WRITE MIDDLE fast
  // path as untagged IPv4 (pv and qp still describe it). A frame whose headers
  // match it (wire::same_ipv4_flow) skips parsing and matching: it would parse
  // to the same view and match the same QP. Any frame on the general path
  // clears it, so nothing but the fast path ran since it was set.
  const uint8_t* prev = nullptr;
  for (uint32_t i = 0; i < n; ++i) {
    const uint8_t* const data = frames[i].data;
    const uint32_t len = frames[i].len;
    bytes += len;
    if (prev != nullptr && len == pv.frame_len && wire::same_ipv4_flow(prev, data)) {
      pv.frame = data;
      if (verify_icrc && !wire::icrc_verify(data + pv.l3_off, pv.l3_len(), false)) {
        ++counters_.rx_parse_drop[static_cast<size_t>(wire::RxDrop::kBadIcrc)];
        continue;
      }
      if (rx_write_middle_on(*qp, pv)) {
        prev = data;
        continue;
      }
      prev = nullptr;
      dispatch(pv, now_ns);
      continue;
    }
    prev = nullptr;
    const wire::RxDrop d = wire::parse_frame(data, len, &pv, verify_icrc);
    if (d != wire::RxDrop::kNone) {
      ++counters_.rx_parse_drop[static_cast<size_t>(d)];
      continue;
    }
    if (rx_write_middle(pv, qp)) {
      if (pv.plain_ipv4()) prev = data;
      continue;
    }
    dispatch(pv, now_ns);
  }
  counters_.rx_packets += n;
  counters_.rx_bytes += bytes;
  flush_cqes();  // drains the copies first: frames are not touched after return
  // One wake-up of the control thread per burst that delivered MADs (QP1).
  if (gsi_notify_) {
    gsi_notify_ = false;
    gsi_->notify();
  }
}

void Engine::dispatch(const wire::PacketView& pv, uint64_t now_ns) {
  if (pv.ecn == 3) ++counters_.rx_ecn_ce;
  const wire::OpcodeInfo& info = *pv.info;
  if (info.has(wire::kCnp)) {
    ++counters_.rx_cnp;  // DCQCN reaction point: a later issue
    return;
  }
  const wire::Bth& bth = pv.bth();
  if (bth.dest_qpn() == wire::kMulticastQpn) {
    if ((bth.pkey() & 0x7FFF) != (wire::kDefaultPkey & 0x7FFF)) {
      ++counters_.rx_drop[static_cast<size_t>(Drop::kBadPkey)];
    } else if (!info.has(wire::kUd)) {
      ++counters_.rx_drop[static_cast<size_t>(Drop::kOpcodeForQpType)];
    } else {
      mcast_receive(pv);
    }
    return;
  }
  Qp* qp = find_qp(bth.dest_qpn());
  if (qp == nullptr) {
    if (gsi_ != nullptr && bth.dest_qpn() == kGsiQpn) {
      gsi_receive(pv);  // QP1 in the datapath (core/gsi_channel.cc)
      return;
    }
    ++counters_.rx_drop[static_cast<size_t>(Drop::kUnknownQp)];
    return;
  }
  if ((bth.pkey() & 0x7FFF) != (wire::kDefaultPkey & 0x7FFF)) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kBadPkey)];
    return;
  }
  switch (qp->type) {
    case QpType::kRc:
      if (!info.has(wire::kRc)) break;
      if (qp->state == QpState::kReset || qp->state == QpState::kInit) {
        ++counters_.rx_drop[static_cast<size_t>(Drop::kBadQpState)];
        return;
      }
      if (!pv.sgid_is(qp->attr.ah.dgid)) {
        ++counters_.rx_drop[static_cast<size_t>(Drop::kBadSource)];
        return;
      }
      if (info.has(wire::kRequest)) {
        rc_request(*qp, pv, now_ns);
      } else {
        rc_response(*qp, pv, now_ns);
      }
      return;
    case QpType::kUd:
      if (!info.has(wire::kUd)) break;
      ud_receive(*qp, pv);
      return;
    case QpType::kUc:
      break;
  }
  ++counters_.rx_drop[static_cast<size_t>(Drop::kOpcodeForQpType)];
}

bool Engine::qp_tx_ready(const Qp& qp, uint64_t now_ns) const {
  if (!qp.in_use) return false;
  if (resp_has_output(qp)) return true;
  if (qp.type == QpType::kUd) return qp.state == QpState::kRts && qp.sq.cursor != qp.sq.head;
  return req_can_send(qp, now_ns);
}

uint32_t Engine::build_for_qp(Qp& qp, datapath::Frame* bufs, uint32_t n, uint64_t now_ns,
                              bool* no_room) {
  uint32_t built = 0;
  while (built < n) {
    Build b;
    if (resp_has_output(qp)) {
      b = build_response(qp, bufs[built]);
    } else if (qp.type == QpType::kUd) {
      if (qp.state != QpState::kRts || qp.sq.cursor == qp.sq.head) break;
      b = build_ud_send(qp, bufs[built]);
    } else if (req_can_send(qp, now_ns)) {
      b = build_rc_request(qp, bufs[built], now_ns);
    } else {
      break;
    }
    if (b == Build::kBuilt) {
      ++built;
    } else if (b == Build::kNoRoom) {
      *no_room = true;
      break;
    }
    // kBlocked: the QP state changed (error, local error); look again.
  }
  return built;
}

uint32_t Engine::tx_build(datapath::Frame* bufs, uint32_t n, uint64_t now_ns) {
  tx_stage_.begin = tx_stage_.end = nullptr;  // see space_read()
  uint32_t out = 0;
  if (gsi_ != nullptr) out = gsi_build(bufs, n);  // QP1's MADs first (core/gsi_channel.cc)
  bool no_room = false;
  bool progress = true;
  while (out < n && tx_count_ != 0 && progress && !no_room) {
    progress = false;
    for (uint32_t visits = tx_count_; visits > 0 && out < n && !no_room; --visits) {
      const uint32_t index = tx_list_[tx_head_];
      tx_head_ = (tx_head_ + 1) % tx_list_.size();
      --tx_count_;
      Qp& qp = qps_[index];
      qp.in_tx_list = false;
      if (!qp.in_use) continue;
      const uint32_t budget = std::min(n - out, config_.tx_qp_burst);
      tx_stage_cap_ = budget * qp.mtu;  // read ahead no more than this visit can send
      const uint32_t built = build_for_qp(qp, bufs + out, budget, now_ns, &no_room);
      out += built;
      if (built != 0) progress = true;
      if (no_room || qp_tx_ready(qp, now_ns)) tx_schedule(qp);
    }
  }
  // Counters once per burst (single writer; a reader sees them after the call).
  uint64_t bytes = 0;
  for (uint32_t i = 0; i < out; ++i) bytes += bufs[i].len;
  counters_.tx_packets += out;
  counters_.tx_bytes += bytes;
  flush_cqes();
  return out;
}

}  // namespace burst::core
