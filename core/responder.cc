// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// RC responder, receive side: ePSN tracking, duplicates (re-ACK, READ replay,
// atomic replay from the saved result), one PSN sequence NAK per gap, opcode
// sequence and length checks, receive WQE consumption from the RQ or the SRQ
// (RNR NAK when none), rkey /
// access / bounds checks through MrTable::remote, atomics executed atomically on
// host memory (through MemSpaces when the MR lives in another process). Payload
// goes through the CopyEngine, into the MR's memory space.
#include <array>
#include <atomic>

#include "core/engine.h"

namespace burst::core {

namespace {

using wire::NakCode;

constexpr uint8_t nak(NakCode c) { return wire::AethSyndrome::nak(c).raw(); }

uint32_t rwqe_length(const RecvWr& w) {
  uint64_t total = 0;
  for (uint32_t i = 0; i < w.num_sge && i < kMaxSge; ++i) total += w.sg_list[i].length;
  return total > kMaxMessageBytes ? kMaxMessageBytes : static_cast<uint32_t>(total);
}

// The QP lets its peer READ or do atomics (`access`) and has responder
// resources for them (max_dest_rd_atomic).
bool rd_atomic_allowed(const Qp& qp, uint32_t access) {
  return (qp.attr.qp_access_flags & access) != 0 && qp.attr.max_dest_rd_atomic != 0;
}

}  // namespace

void Engine::resp_nak(Qp& qp, uint8_t syndrome) {
  RespState& r = qp.resp;
  r.nak_pending = true;
  r.nak_syndrome = syndrome;
  r.nak_psn = r.epsn;
  r.ack_pending = false;  // the NAK for ePSN acknowledges everything before it
  tx_schedule(qp);
}

void Engine::resp_fatal(Qp& qp, uint8_t nak_code, WcStatus rwqe_status) {
  RespState& r = qp.resp;
  if (r.rwqe_held) {
    complete_rwqe(qp, rwqe_status,
                  r.msg >= RespState::kWrite ? WcOpcode::kRecvRdmaWithImm : WcOpcode::kRecv, 0, 0,
                  0);
  }
  resp_nak(qp, nak(static_cast<NakCode>(nak_code)));
  r.fatal = true;
  enter_error(qp);
}

void Engine::complete_rwqe(Qp& qp, WcStatus status, WcOpcode opcode, uint32_t byte_len,
                           uint32_t wc_flags, uint32_t imm, bool solicited) {
  const RecvWr& rw = qp.rq.front();
  Wc wc;
  wc.wr_id = rw.wr_id;
  wc.status = status;
  wc.opcode = opcode;
  wc.byte_len = status == WcStatus::kSuccess ? byte_len : 0;
  wc.imm_data = imm;
  wc.qp_num = qp.qpn;
  wc.src_qp = qp.attr.dest_qp_num;
  wc.wc_flags = status == WcStatus::kSuccess ? wc_flags : 0;
  wc.solicited = solicited;
  emit_cqe(qp, false, wc);
  ++qp.rq.tail;
  qp.resp.rwqe_held = false;
}

bool Engine::take_rwqe(Qp& qp) {
  RespState& r = qp.resp;
  if (qp.rq.empty() && (qp.srq == 0 || !srq_take(qp))) {
    resp_nak(qp, wire::AethSyndrome::rnr_nak(qp.attr.min_rnr_timer).raw());
    r.nak_outstanding = true;  // silence for the packets behind it
    return false;
  }
  r.rwqe_held = true;
  r.rwqe_len = rwqe_length(qp.rq.front());
  r.sge_idx = 0;
  r.sge_off = 0;
  r.msg_bytes = 0;
  return true;
}

bool Engine::scatter(Qp& qp, const uint8_t* src, uint32_t len, WcStatus* err, uint64_t tag) {
  RespState& r = qp.resp;
  const RecvWr& rw = qp.rq.front();
  while (len > 0) {
    if (r.sge_idx >= rw.num_sge || r.sge_idx >= kMaxSge) {
      *err = WcStatus::kLocLenErr;
      return false;
    }
    const Sge& s = rw.sg_list[r.sge_idx];
    if (r.sge_off >= s.length) {
      ++r.sge_idx;
      r.sge_off = 0;
      continue;
    }
    const uint32_t n = std::min(len, s.length - r.sge_off);
    uint32_t space = MemSpaces::kLocal;
    uint8_t* dst = mrs_.local(qp.pd, s.lkey, s.addr + r.sge_off, n, kAccessLocalWrite, err, &space);
    if (dst == nullptr) return false;
    copy_to(space, dst, src, n, tag);
    src += n;
    len -= n;
    r.sge_off += n;
  }
  return true;
}

void Engine::queue_response(Qp& qp, uint32_t res_index) {
  RespState& r = qp.resp;
  r.res[res_index].queued = true;
  r.queue[(r.q_head + r.q_count) % kMaxRdAtomic] = static_cast<uint8_t>(res_index);
  ++r.q_count;
  tx_schedule(qp);
}

void Engine::rc_request(Qp& qp, const wire::PacketView& pv, uint64_t now_ns) {
  (void)now_ns;
  if (qp.state != QpState::kRtr && qp.state != QpState::kRts && qp.state != QpState::kSqd) {
    ++counters_.rx_drop[static_cast<size_t>(qp.state == QpState::kErr ? Drop::kAfterError
                                                                      : Drop::kBadQpState)];
    return;
  }
  RespState& r = qp.resp;
  const Psn psn = pv.bth().psn();
  const int32_t d = wire::psn_diff(psn, r.epsn);
  if (d > 0) {
    ++counters_.rx_out_of_sequence;
    if (r.nak_outstanding) {
      ++counters_.rx_drop[static_cast<size_t>(Drop::kOutOfSequence)];
      return;
    }
    resp_nak(qp, nak(NakCode::kPsnSeqError));
    r.nak_outstanding = true;
    return;
  }
  if (d < 0) {
    rc_duplicate(qp, pv);
    return;
  }
  r.nak_outstanding = false;  // the expected PSN arrived
  if (r.nak_pending) {
    // A sequence/RNR NAK not sent yet is moot now; the ACK it replaced is not.
    r.nak_pending = false;
    r.ack_pending = true;
  }

  const wire::OpcodeInfo& info = *pv.info;
  const bool first = info.has(wire::kFirst);
  const bool last = info.has(wire::kLast);
  // Opcode sequence: a message in progress continues with MIDDLE/LAST of its kind;
  // otherwise only a message start is acceptable.
  bool seq_ok;
  switch (r.msg) {
    case RespState::kSend:
      seq_ok = info.has(wire::kSend) && !first;
      break;
    case RespState::kWrite:
    case RespState::kWriteSpace:
      seq_ok = info.has(wire::kWrite) && !first;
      break;
    default:
      seq_ok = first;
      break;
  }
  if (!seq_ok) {
    resp_invalid(qp);
    return;
  }
  // Payload sizes by position: FIRST/MIDDLE carry exactly one path MTU, LAST 1..MTU.
  // (parse_frame already dropped READ requests and atomics that carry payload.)
  if (info.has(wire::kHasPayload)) {
    const uint32_t len = pv.payload_len;
    const bool bad = (!last && len != qp.mtu) || (last && !first && (len == 0 || len > qp.mtu)) ||
                     (first && last && len > qp.mtu);
    if (bad) {
      resp_invalid(qp);
      return;
    }
  }

  const Psn before = r.epsn;
  if (info.has(wire::kSend)) {
    rc_send(qp, pv);
  } else if (info.has(wire::kWrite)) {
    rc_write(qp, pv);
  } else if (info.has(wire::kRead)) {
    rc_read(qp, pv);
  } else if (info.has(wire::kAtomic)) {
    rc_atomic(qp, pv);
  } else {
    resp_invalid(qp);
    return;
  }
  if (r.epsn != before && (info.has(wire::kSend) || info.has(wire::kWrite)) &&
      (pv.bth().ack_req() || last)) {
    r.ack_pending = true;
    tx_schedule(qp);
  }
}

void Engine::rc_send(Qp& qp, const wire::PacketView& pv) {
  RespState& r = qp.resp;
  const wire::OpcodeInfo& info = *pv.info;
  if (info.has(wire::kFirst) && !take_rwqe(qp)) return;  // RNR NAK queued
  const uint32_t len = pv.payload_len;
  if (uint64_t{r.msg_bytes} + len > r.rwqe_len) {
    resp_fatal(qp, static_cast<uint8_t>(NakCode::kInvalidRequest), WcStatus::kLocLenErr);
    return;
  }
  WcStatus err = WcStatus::kLocProtErr;
  if (!scatter(qp, pv.payload(), len, &err, make_resp_tag(qp, r.epsn, kTagRespRwqe))) {
    // The receive WQE is unusable (bad lkey, bounds, access): IBA class A,
    // remote operational error for the requester, local error for us.
    resp_fatal(qp, static_cast<uint8_t>(NakCode::kRemoteOpError), err);
    return;
  }
  r.msg_bytes += len;
  if (!info.has(wire::kLast)) {
    r.msg = RespState::kSend;
    r.epsn = r.epsn + 1;
    return;
  }
  uint32_t flags = 0;
  uint32_t imm = 0;
  if (const wire::ImmDt* i = pv.immdt()) {
    flags |= kWcWithImm;
    imm = i->imm();
  }
  if (const wire::Ieth* inv = pv.ieth()) {
    if (!mrs_.invalidate_rkey(qp.pd, inv->rkey()).ok()) {
      resp_invalid(qp);
      return;
    }
    flags |= kWcWithInv;
    imm = inv->rkey();
  }
  complete_rwqe(qp, WcStatus::kSuccess, WcOpcode::kRecv, r.msg_bytes, flags, imm, pv.bth().se());
  r.epsn = r.epsn + 1;
  r.msg = RespState::kNone;
  r.msn = (r.msn + 1) & wire::kPsnMask;
}

void Engine::rc_write(Qp& qp, const wire::PacketView& pv) {
  RespState& r = qp.resp;
  const wire::OpcodeInfo& info = *pv.info;
  if ((qp.attr.qp_access_flags & kAccessRemoteWrite) == 0) {
    resp_invalid(qp);
    return;
  }
  const uint32_t len = pv.payload_len;
  const bool first = info.has(wire::kFirst);
  const bool last = info.has(wire::kLast);
  uint32_t left = r.write_left;
  uint8_t* host = nullptr;
  uint32_t space = MemSpaces::kLocal;
  MrRef ref;
  if (first) {
    const wire::Reth* reth = pv.reth();
    left = reth->dma_len();
    const bool bad_len = left > kMaxMessageBytes || (last ? len != left : left <= len);
    if (bad_len) {
      resp_invalid(qp);
      return;
    }
    // The whole message range is checked here, once; later packets only check
    // that the MR did not change (still_valid) and stay inside write_left.
    if (left != 0) {
      host =
          mrs_.remote_ref(qp.pd, reth->rkey(), reth->va(), left, kAccessRemoteWrite, &ref, &space,
                          qp.qpn);
      if (host == nullptr) {
        resp_access_error(qp);
        return;
      }
    }
  } else if (last ? len != left : len >= left) {
    resp_invalid(qp);
    return;
  }
  if (info.has(wire::kNeedsRwqe) && !take_rwqe(qp)) return;  // WRITE_WITH_IMM: RNR NAK

  if (first) {
    r.write_host = host;
    r.write_space = space;
    r.write_ref = ref;
    r.write_left = left;
    r.write_len = left;
  }
  if (len != 0) {
    if (!MrTable::still_valid(r.write_ref)) {  // deregistered or invalidated since the first packet
      resp_access_error(qp);
      return;
    }
    copy_to(r.write_space, r.write_host, pv.payload(), len,
            make_resp_tag(qp, r.epsn, r.rwqe_held ? kTagRespRwqe : kTagRespWrite));
    r.write_host += len;
  }
  r.write_left -= len;
  r.epsn = r.epsn + 1;
  if (!last) {
    r.msg = r.write_space == MemSpaces::kLocal ? RespState::kWrite : RespState::kWriteSpace;
    return;
  }
  r.msg = RespState::kNone;
  r.msn = (r.msn + 1) & wire::kPsnMask;
  if (const wire::ImmDt* i = pv.immdt()) {
    complete_rwqe(qp, WcStatus::kSuccess, WcOpcode::kRecvRdmaWithImm, r.write_len, kWcWithImm,
                  i->imm(), pv.bth().se());
  }
}

bool Engine::claim_resource(Qp& qp) {
  RespState& r = qp.resp;
  RdAtomicRes& res = r.res[r.res_next];
  if (!res.queued) return true;
  // Still queued. An original response not sent yet means the requester has more
  // READ/atomics outstanding than max_dest_rd_atomic allows. A replay (queued for
  // a duplicate that raced with the original responses) is moot: the requester
  // completed that request, or it could not have issued this one.
  if (!res.replay) return false;
  r.unqueue_if([&r](uint8_t q) { return q == r.res_next; });
  res.queued = false;
  return true;
}

void Engine::rc_read(Qp& qp, const wire::PacketView& pv) {
  RespState& r = qp.resp;
  if (!rd_atomic_allowed(qp, kAccessRemoteRead)) {
    resp_invalid(qp);
    return;
  }
  const wire::Reth* reth = pv.reth();
  const uint32_t len = reth->dma_len();
  if (len > kMaxMessageBytes || !claim_resource(qp)) {
    // Too long, or more outstanding READ/atomics than max_dest_rd_atomic.
    resp_invalid(qp);
    return;
  }
  if (len != 0 && mrs_.remote(qp.pd, reth->rkey(), reth->va(), len, kAccessRemoteRead, nullptr,
                              qp.qpn) == nullptr) {
    resp_access_error(qp);
    return;
  }
  const uint32_t npkts = len == 0 ? 1 : (len + qp.mtu - 1) / qp.mtu;
  const uint32_t slot = r.res_next;
  RdAtomicRes& res = r.res[slot];
  res = RdAtomicRes{};
  res.kind = RdAtomicRes::kRead;
  res.first_psn = r.epsn;
  res.last_psn = r.epsn + (npkts - 1);
  res.rkey = reth->rkey();
  res.va = reth->va();
  res.len = len;
  res.tx_psn = res.tx_first_psn = r.epsn;
  res.tx_va = res.va;
  res.tx_left = len;
  res.msn = (r.msn + 1) & wire::kPsnMask;
  r.res_next = (slot + 1) % qp.attr.max_dest_rd_atomic;
  // The response carries an AETH and acknowledges every earlier request: an
  // ACK still owed for them would reach the requester after it, out of PSN
  // order (and be dropped there as stale). The response replaces it.
  r.ack_pending = false;
  queue_response(qp, slot);
  r.epsn = r.epsn + npkts;
  r.msn = (r.msn + 1) & wire::kPsnMask;
}

void Engine::rc_atomic(Qp& qp, const wire::PacketView& pv) {
  RespState& r = qp.resp;
  const wire::AtomicEth* a = pv.atomic_eth();
  if (!rd_atomic_allowed(qp, kAccessRemoteAtomic) || (a->va() & 7) != 0) {
    resp_invalid(qp);  // or a misaligned target
    return;
  }
  uint32_t space = MemSpaces::kLocal;
  uint8_t* host = mrs_.remote(qp.pd, a->rkey(), a->va(), 8, kAccessRemoteAtomic, &space, qp.qpn);
  if (host == nullptr) {
    resp_access_error(qp);
    return;
  }
  if ((reinterpret_cast<uintptr_t>(host) & 7) != 0) {  // host mapping not 8-byte aligned
    resp_invalid(qp);
    return;
  }
  if (!claim_resource(qp)) {
    resp_invalid(qp);
    return;
  }
  copier_.drain();  // earlier WRITEs to these bytes land before the atomic reads them
  if (!copier_.failed_tags().empty()) [[unlikely]] {
    handle_copy_failures();  // an earlier request of this QP may have failed: no atomic then
    if (qp.state == QpState::kErr) return;
  }
  uint64_t orig;
  if (space == MemSpaces::kLocal) [[likely]] {
    std::atomic_ref<uint64_t> target(*reinterpret_cast<uint64_t*>(host));
    if (pv.opcode == wire::op::kRcCompareSwap) {
      orig = a->compare();
      target.compare_exchange_strong(orig, a->swap_add());  // orig: the value found
    } else {
      orig = target.fetch_add(a->swap_add());
    }
  } else {
    const MemSpaces& spaces = mrs_.spaces();
    const bool ok = pv.opcode == wire::op::kRcCompareSwap
                        ? spaces.compare_swap(space, host, a->compare(), a->swap_add(), &orig)
                        : spaces.fetch_add(space, host, a->swap_add(), &orig);
    if (!ok) {
      ++counters_.mem_space_atomic_errors;
      resp_access_error(qp);
      return;
    }
  }
  const uint32_t slot = r.res_next;
  RdAtomicRes& res = r.res[slot];
  res = RdAtomicRes{};
  res.kind = RdAtomicRes::kAtomic;
  res.first_psn = res.last_psn = res.tx_psn = res.tx_first_psn = r.epsn;
  res.rkey = a->rkey();
  res.va = a->va();
  res.len = 8;
  res.orig = orig;
  res.msn = (r.msn + 1) & wire::kPsnMask;
  r.res_next = (slot + 1) % qp.attr.max_dest_rd_atomic;
  // The response carries an AETH and acknowledges every earlier request: an
  // ACK still owed for them would reach the requester after it, out of PSN
  // order (and be dropped there as stale). The response replaces it.
  r.ack_pending = false;
  queue_response(qp, slot);
  r.epsn = r.epsn + 1;
  r.msn = (r.msn + 1) & wire::kPsnMask;
}

void Engine::rc_duplicate(Qp& qp, const wire::PacketView& pv) {
  RespState& r = qp.resp;
  ++counters_.rx_duplicate;
  const wire::OpcodeInfo& info = *pv.info;
  const Psn psn = pv.bth().psn();
  if (!info.has(wire::kRead) && !info.has(wire::kAtomic)) {
    // SEND / WRITE already executed: acknowledge again (latest PSN and MSN).
    r.ack_pending = true;
    tx_schedule(qp);
    return;
  }
  const uint32_t nres = qp.attr.max_dest_rd_atomic;
  RdAtomicRes* found = nullptr;
  uint32_t slot = 0;
  for (uint32_t i = 0; i < nres; ++i) {
    RdAtomicRes& res = r.res[i];
    const bool match = info.has(wire::kRead)
                           ? res.kind == RdAtomicRes::kRead &&
                                 !wire::psn_before(psn, res.first_psn) &&
                                 !wire::psn_after(psn, res.last_psn)
                           : res.kind == RdAtomicRes::kAtomic && res.first_psn == psn;
    if (match) {
      found = &res;
      slot = i;
      break;
    }
  }
  if (found == nullptr) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kDupUnmatched)];
    return;
  }
  if (info.has(wire::kRead)) {
    // Replay: read the memory again for the range the request names, which must
    // lie inside the original response range.
    const wire::Reth* reth = pv.reth();
    const uint32_t len = reth->dma_len();
    const uint32_t npkts = len == 0 ? 1 : (len + qp.mtu - 1) / qp.mtu;
    const bool fits = len <= found->len && !wire::psn_after(psn + (npkts - 1), found->last_psn) &&
                      reth->rkey() == found->rkey;
    if (!fits || (len != 0 && mrs_.remote(qp.pd, reth->rkey(), reth->va(), len, kAccessRemoteRead,
                                          nullptr, qp.qpn) == nullptr)) {
      ++counters_.rx_drop[static_cast<size_t>(Drop::kDupUnmatched)];
      return;
    }
    found->tx_va = reth->va();
    found->tx_left = len;
    ++counters_.read_replays;
  } else {
    ++counters_.atomic_replays;  // the saved result, never executed again
  }
  // Queued responses from this request on are for requests the requester
  // repeats too (Go-Back-N): drop them and restart from the duplicate. Earlier
  // ones (e.g. replays queued by the duplicates just before this one) stay ahead.
  r.unqueue_from(found->first_psn);
  found->tx_psn = found->tx_first_psn = psn;
  found->replay = true;
  queue_response(qp, slot);
}

}  // namespace burst::core
