// The datapath entry points: rx_burst (parse, ICRC, dispatch by destination QPN
// to responder / completer / UD) and tx_build (round-robin over the QPs with
// transmit work; per QP responder output first, then requests).
#include "core/engine.h"

namespace burst::core {

void Engine::rx_burst(const datapath::Frame* frames, uint32_t n, uint64_t now_ns) {
  for (uint32_t i = 0; i < n; ++i) {
    ++counters_.rx_packets;
    counters_.rx_bytes += frames[i].len;
    wire::PacketView pv;
    const wire::RxDrop d =
        wire::parse_frame(frames[i].data, frames[i].len, &pv, config_.verify_icrc);
    if (d != wire::RxDrop::kNone) {
      ++counters_.rx_parse_drop[static_cast<size_t>(d)];
      continue;
    }
    dispatch(pv, now_ns);
  }
  flush_cqes();  // drains the copies first: frames are not touched after return
}

void Engine::dispatch(const wire::PacketView& pv, uint64_t now_ns) {
  if (pv.ecn == 3) ++counters_.rx_ecn_ce;
  const wire::OpcodeInfo& info = *pv.info;
  if (info.has(wire::kCnp)) {
    ++counters_.rx_cnp;  // DCQCN reaction point: a later issue
    return;
  }
  const wire::Bth& bth = pv.bth();
  Qp* qp = find_qp(bth.dest_qpn());
  if (qp == nullptr) {
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
      if (pv.sgid != qp->attr.ah.dgid) {
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
  uint32_t out = 0;
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
      const uint32_t built = build_for_qp(qp, bufs + out, budget, now_ns, &no_room);
      out += built;
      if (built != 0) progress = true;
      if (no_room || qp_tx_ready(qp, now_ns)) tx_schedule(qp);
    }
  }
  flush_cqes();
  return out;
}

}  // namespace burst::core
