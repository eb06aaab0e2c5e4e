// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// RC completer: ACKs (coalesced: an ACK for PSN p completes every SEND/WRITE
// ending at or before p), implicit ACKs (a READ response or atomic ACK for a later
// request acknowledges earlier SEND/WRITEs), READ response placement, atomic
// results, NAKs (PSN sequence error -> Go-Back-N; RNR -> wait and resend; invalid
// request / remote access / remote operational error -> error completion and ERR).
// Completions are strictly in WQE order.
//
// Retry accounting: transport timeouts, sequence NAKs and detected losses of
// READ/atomic responses each use one retry_cnt (as rxe does); RNR NAKs use
// rnr_retry (7 = never give up). Any forward progress restores both counters.
#include <algorithm>

#include "core/engine.h"

namespace burst::core {

namespace {

WcStatus nak_status(wire::NakCode code) {
  switch (code) {
    case wire::NakCode::kInvalidRequest:
      return WcStatus::kRemInvReqErr;
    case wire::NakCode::kRemoteAccessError:
      return WcStatus::kRemAccessErr;
    case wire::NakCode::kRemoteOpError:
      return WcStatus::kRemOpErr;
    case wire::NakCode::kInvalidRdRequest:
      return WcStatus::kRemInvRdReqErr;
    case wire::NakCode::kPsnSeqError:
      break;
  }
  return WcStatus::kRemOpErr;  // reserved codes: as a remote operational error
}

}  // namespace

void Engine::complete_tail_ok(Qp& qp) {
  complete_send_tail(qp, WcStatus::kSuccess);
  tx_schedule(qp);       // fence, max_rd_atomic or the window may have opened
  check_tail_error(qp);  // a WQE that failed before sending completes once it is the oldest
}

void Engine::retry_missing_responses(Qp& qp) {
  ReqState& rq = qp.req;
  ++counters_.read_out_of_sequence;
  // Several later responses (or ACKs) reveal the same gap: ask again once.
  if (rq.oos_armed && rq.oos_psn == rq.una) return;
  rq.oos_armed = true;
  rq.oos_psn = rq.una;
  if (count_retry(qp, WcStatus::kRetryExcErr)) go_back_n(qp, rq.una);
}

void Engine::complete_error_at(Qp& qp, WcStatus status) {
  if (qp.sq.tail != qp.sq.head) complete_send_tail(qp, status);
  enter_error(qp);
}

void Engine::check_tail_error(Qp& qp) {
  if (qp.state == QpState::kErr || qp.sq.tail == qp.sq.head) return;
  const SendWqe& w = qp.sq.at(qp.sq.tail);
  if (w.local_err != WcStatus::kSuccess) complete_error_at(qp, w.local_err);
}

void Engine::req_progress(Qp& qp, uint64_t now_ns) {
  if (qp.state == QpState::kErr) return;
  ReqState& rq = qp.req;
  rq.retry_left = qp.attr.retry_cnt;
  rq.rnr_left = qp.attr.rnr_retry;
  rq.oos_armed = false;
  rq.retx_deadline_ns = 0;
  if (wire::psn_before(rq.una, rq.psn_hi)) arm_retx(qp, now_ns);
  tx_schedule(qp);
}

bool Engine::count_retry(Qp& qp, WcStatus exhausted) {
  if (qp.req.retry_left == 0) {
    complete_error_at(qp, exhausted);
    return false;
  }
  --qp.req.retry_left;
  return true;
}

bool Engine::implicit_ack(Qp& qp, Psn upto, uint64_t now_ns) {
  SendQueue& sq = qp.sq;
  ReqState& rq = qp.req;
  Psn target = upto;
  bool ok = true;
  while (sq.tail != sq.assigned) {
    const SendWqe& w = sq.at(sq.tail);
    if (w.rd_atomic) {
      if (!wire::psn_before(w.first_psn, upto)) break;  // starts at or after upto
      // A READ/atomic is acknowledged only by its own responses. If it ends
      // before `upto`, they were lost.
      ok = !wire::psn_before(w.last_psn, upto);
      const Psn cap = wire::psn_after(w.first_psn, rq.una) ? w.first_psn : rq.una;
      if (wire::psn_after(target, cap)) target = cap;
      break;
    }
    if (!wire::psn_before(w.last_psn, upto)) break;
    complete_tail_ok(qp);
  }
  if (wire::psn_after(target, rq.una)) {
    rq.una = target;
    req_progress(qp, now_ns);
  }
  return ok;
}

void Engine::go_back_n(Qp& qp, Psn from) {
  SendQueue& sq = qp.sq;
  ++counters_.retransmit_events;
  uint32_t i = sq.tail;
  for (; i != sq.assigned; ++i) {
    const SendWqe& w = sq.at(i);
    if (!wire::psn_after(from, w.last_psn)) {
      sq.cursor = i;
      const int32_t k = wire::psn_diff(from, w.first_psn);
      sq.cursor_pkt = k > 0 ? static_cast<uint32_t>(k) : 0;
      break;
    }
  }
  if (i == sq.assigned) {
    sq.cursor = sq.assigned;
    sq.cursor_pkt = 0;
  }
  tx_schedule(qp);
}

void Engine::rc_response(Qp& qp, const wire::PacketView& pv, uint64_t now_ns) {
  if (qp.state != QpState::kRts && qp.state != QpState::kSqd) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kBadQpState)];
    return;
  }
  ReqState& rq = qp.req;
  const Psn p = pv.bth().psn();
  if (!wire::psn_before(p, rq.psn_hi)) {  // acknowledges something never sent
    ++counters_.rx_drop[static_cast<size_t>(Drop::kAckBadPsn)];
    return;
  }
  if (pv.info->has(wire::kReadResp)) {
    on_read_response(qp, pv, now_ns);
    return;
  }
  if (pv.info->has(wire::kAtomicAck)) {
    on_atomic_ack(qp, pv, now_ns);
    return;
  }
  const wire::AethSyndrome syn = pv.aeth()->syn();
  const bool stale = wire::psn_before(p, rq.una);
  switch (syn.type()) {
    case wire::AethType::kAck:
      ++counters_.acks_received;
      if (stale) break;
      if (!implicit_ack(qp, p + 1, now_ns)) retry_missing_responses(qp);
      return;
    case wire::AethType::kRnrNak:
      ++counters_.rnr_naks_received;
      if (stale) break;
      if (!implicit_ack(qp, p, now_ns)) {
        retry_missing_responses(qp);
        return;
      }
      if (qp.state == QpState::kErr) return;
      if (qp.attr.rnr_retry != 7) {
        if (rq.rnr_left == 0) {
          complete_error_at(qp, WcStatus::kRnrRetryExcErr);
          return;
        }
        --rq.rnr_left;
      }
      rq.retx_deadline_ns = 0;
      rq.rnr_until_ns = now_ns + rnr_timer_ns(syn.rnr_timer());
      go_back_n(qp, rq.una);
      timer_watch(qp);
      return;
    case wire::AethType::kNak: {
      const wire::NakCode code = syn.nak_code();
      ++counters_.naks_received[std::min<size_t>(static_cast<size_t>(code), kNakCodes - 1)];
      if (stale) break;
      if (code == wire::NakCode::kPsnSeqError) {
        // While waiting out an RNR NAK, a sequence NAK for the same PSN carries
        // nothing new (the responder saw the packets behind the RNR'd one).
        if (rq.rnr_until_ns != 0 && p == rq.una) break;
        implicit_ack(qp, p, now_ns);
        if (qp.state == QpState::kErr) return;
        if (count_retry(qp, WcStatus::kRetryExcErr)) go_back_n(qp, rq.una);
        return;
      }
      implicit_ack(qp, p, now_ns);
      if (qp.state != QpState::kErr) complete_error_at(qp, nak_status(code));
      return;
    }
    case wire::AethType::kReserved:
      ++counters_.rx_drop[static_cast<size_t>(Drop::kBadResponse)];
      return;
  }
  ++counters_.rx_drop[static_cast<size_t>(Drop::kStaleResponse)];
}

// The checks a READ response and an atomic ACK share: a NAK syndrome where a
// response must carry an ACK, a PSN older than the oldest unacknowledged one,
// the implicit acknowledgement of earlier requests, and a gap (responses of
// the oldest request missing: ask again from the first missing PSN). Returns
// the oldest outstanding WQE when this is the response expected next; nullptr
// when the packet was counted as a drop or a retry was started instead.
SendWqe* Engine::response_wqe(Qp& qp, Psn p, const wire::Aeth* aeth, uint64_t now_ns) {
  ReqState& rq = qp.req;
  SendQueue& sq = qp.sq;
  if (aeth != nullptr && !aeth->syn().is_ack()) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kBadResponse)];
    return nullptr;
  }
  if (wire::psn_before(p, rq.una)) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kStaleResponse)];
    return nullptr;
  }
  const bool in_order_before = implicit_ack(qp, p, now_ns);
  if (qp.state == QpState::kErr) return nullptr;
  if (sq.tail == sq.assigned) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kUnexpectedResponse)];
    return nullptr;
  }
  if (!in_order_before || p != rq.una) {
    retry_missing_responses(qp);
    return nullptr;
  }
  return &sq.at(sq.tail);
}

void Engine::on_read_response(Qp& qp, const wire::PacketView& pv, uint64_t now_ns) {
  ReqState& rq = qp.req;
  const Psn p = pv.bth().psn();
  SendWqe* wp = response_wqe(qp, p, pv.aeth(), now_ns);
  if (wp == nullptr) return;
  SendWqe& w = *wp;
  if (w.wr.opcode != WrOpcode::kRdmaRead || wire::psn_after(p, w.last_psn)) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kUnexpectedResponse)];
    return;
  }
  const uint32_t k = static_cast<uint32_t>(wire::psn_diff(p, w.first_psn));
  const uint32_t offset = k * qp.mtu;
  const uint32_t expected = std::min(qp.mtu, w.length - std::min(offset, w.length));
  const bool is_last = p == w.last_psn;
  if (pv.payload_len != expected || pv.info->has(wire::kLast) != is_last) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kBadResponse)];
    complete_error_at(qp, WcStatus::kBadRespErr);
    return;
  }
  // Scatter into the local SGEs at `offset`.
  const uint8_t* src = pv.payload();
  uint32_t rest = 0;
  const bool scattered = for_each_sge_piece(
      w.wr, offset, pv.payload_len, &rest, [&](const Sge& s, uint32_t at, uint32_t n) {
        WcStatus err = WcStatus::kLocProtErr;
        uint32_t space = MemSpaces::kLocal;
        uint8_t* dst = mrs_.local(qp.pd, s.lkey, s.addr + at, n, kAccessLocalWrite, &err, &space);
        if (dst == nullptr) {
          complete_error_at(qp, err);
          return false;
        }
        copy_to(space, dst, src, n, make_req_tag(qp));
        src += n;
        return true;
      });
  if (!scattered) return;
  rq.una = p + 1;
  req_progress(qp, now_ns);
  if (is_last) complete_tail_ok(qp);
}

void Engine::on_atomic_ack(Qp& qp, const wire::PacketView& pv, uint64_t now_ns) {
  const Psn p = pv.bth().psn();
  SendWqe* wp = response_wqe(qp, p, pv.aeth(), now_ns);
  if (wp == nullptr) return;
  SendWqe& w = *wp;
  if (!w.rd_atomic || w.wr.opcode == WrOpcode::kRdmaRead || w.first_psn != p) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kUnexpectedResponse)];
    return;
  }
  w.atomic_orig = pv.atomic_ack()->orig();
  const Sge& s = w.wr.sg_list[0];
  WcStatus err = WcStatus::kLocProtErr;
  uint32_t space = MemSpaces::kLocal;
  uint8_t* dst = mrs_.local(qp.pd, s.lkey, s.addr, 8, kAccessLocalWrite, &err, &space);
  if (dst == nullptr) {
    complete_error_at(qp, err);
    return;
  }
  copy_to(space, dst, &w.atomic_orig, 8, make_req_tag(qp));
  qp.req.una = p + 1;
  req_progress(qp, now_ns);
  complete_tail_ok(qp);
}

}  // namespace burst::core
