// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Copies into another process's memory that failed (the process exited, or
// unmapped or protected the range): the CopyEngine reports them, by the tag the
// transport submitted them with, when the copies are drained, which happens
// before any completion of the batch reaches a CQ and before any ACK or
// response of the batch is built. Each failure turns the operation that needed
// the copy into an error and the QP into ERR:
//   responder (RC): completions of RWQEs consumed since the failed copy become
//     errors (kLocProtErr for the RWQE the copy was for, kWrFlushErr after it;
//     order unchanged), and a NAK for the failed packet's PSN replaces the ACK
//     and the responses of later requests: remote access error for an RDMA
//     WRITE, remote operational error for a SEND (the requester completes the
//     WQE with kRemAccessErr / kRemOpErr, IBA class B/C as for a bad rkey or a
//     bad receive buffer);
//   responder (UD): the RWQE completes with kLocProtErr;
//   requester: the READ or atomic WQE completes with kLocProtErr, WQEs
//     completed after it in the same batch with kWrFlushErr.
// Only the earliest failure of a QP and side in a batch matters.
#include <algorithm>

#include "core/engine.h"

namespace burst::core {

namespace {
constexpr uint8_t nak(wire::NakCode c) { return wire::AethSyndrome::nak(c).raw(); }
}  // namespace

void Engine::handle_copy_failures() {
  failed_copies_.assign(copier_.failed_tags().begin(), copier_.failed_tags().end());
  copier_.clear_failed_tags();
  if (failed_copies_.empty()) return;
  counters_.mem_space_write_errors += failed_copies_.size();
  // The earliest failure of each QP and side (tags come grouped by space, so
  // not necessarily in submission order across spaces).
  const auto qp_side = [](uint64_t tag) { return tag >> 40 << 1 | ((tag & 7) == kTagReq); };
  const auto earlier = [](uint64_t a, uint64_t b) {
    if ((a & 7) == kTagReq) {
      return static_cast<int32_t>(static_cast<uint32_t>(a >> 3) - static_cast<uint32_t>(b >> 3)) <
             0;
    }
    return wire::psn_before(Psn(static_cast<uint32_t>(a >> 16)),
                            Psn(static_cast<uint32_t>(b >> 16)));
  };
  failed_first_.clear();
  for (const uint64_t tag : failed_copies_) {
    auto it = std::find_if(failed_first_.begin(), failed_first_.end(),
                           [&](uint64_t t) { return qp_side(t) == qp_side(tag); });
    if (it == failed_first_.end()) {
      failed_first_.push_back(tag);
    } else if (earlier(tag, *it)) {
      *it = tag;
    }
  }
  // Completions emitted while handling stay in pending_ (emit_cqe must not
  // flush from here).
  const bool was_flushing = flushing_;
  flushing_ = true;
  for (const uint64_t tag : failed_first_) {
    const uint32_t slot = static_cast<uint32_t>(tag >> 40);
    const auto kind = static_cast<CopyTag>(tag & 7);
    if (slot >= qps_.size() || !qps_[slot].in_use) continue;
    Qp& qp = qps_[slot];
    if (kind == kTagReq) {
      req_copy_failed(qp, static_cast<uint32_t>(tag >> 3));
    } else {
      resp_copy_failed(qp, Psn(static_cast<uint32_t>(tag >> 16)),
                       static_cast<uint32_t>(tag >> 3) & ((1u << kTagRqBits) - 1), kind);
    }
  }
  flushing_ = was_flushing;
}

void Engine::req_copy_failed(Qp& qp, uint32_t sq_index) {
  SendQueue& sq = qp.sq;
  if (static_cast<int32_t>(sq.tail - sq_index) <= 0) {
    // Still the oldest WQE: it completes with the error now.
    if (qp.state != QpState::kErr) complete_error_at(qp, WcStatus::kLocProtErr);
    return;
  }
  // It (and maybe later WQEs) completed after the failed copy, in this batch:
  // their completions, still pending, are replaced (unsignaled WQEs get one too).
  std::erase_if(pending_, [&](const PendingCqe& p) {
    return p.send_side && p.qp_index == qp.index && p.qpn == qp.qpn &&
           static_cast<int32_t>(p.wq_index - sq_index) >= 0;
  });
  for (uint32_t i = sq_index; i != sq.tail; ++i) {
    const SendWqe& w = sq.at(i);
    Wc wc;
    wc.wr_id = w.wr.wr_id;
    wc.status = i == sq_index ? WcStatus::kLocProtErr : WcStatus::kWrFlushErr;
    wc.opcode = wc_opcode(w.wr.opcode);
    wc.qp_num = qp.qpn;
    pending_.push_back(PendingCqe{qp.send_cq, qp.index, qp.qpn, i, true, wc});
  }
  enter_error(qp);  // flushes the WQEs not completed yet
}

void Engine::resp_copy_failed(Qp& qp, Psn psn, uint32_t rq_low, CopyTag kind) {
  RespState& r = qp.resp;
  const uint32_t first = qp.rq.tail - ((qp.rq.tail - rq_low) & ((1u << kTagRqBits) - 1));
  // RWQEs consumed from `first` on: their completions become errors, in place.
  for (PendingCqe& p : pending_) {
    if (p.send_side || p.qp_index != qp.index || p.qpn != qp.qpn) continue;
    const int32_t d = static_cast<int32_t>(p.wq_index - first);
    if (d < 0 || p.wc.status != WcStatus::kSuccess) continue;
    p.wc.status = d == 0 && kind != kTagRespWrite ? WcStatus::kLocProtErr : WcStatus::kWrFlushErr;
    p.wc.byte_len = 0;
    p.wc.wc_flags = 0;
  }
  // The message the copy was for is still in progress: its RWQE fails now.
  if (kind == kTagRespRwqe && first == qp.rq.tail && r.rwqe_held && qp.state != QpState::kErr) {
    complete_rwqe(qp, WcStatus::kLocProtErr,
                  r.msg >= RespState::kWrite ? WcOpcode::kRecvRdmaWithImm : WcOpcode::kRecv, 0, 0,
                  0);
  }
  if (qp.type != QpType::kRc) {
    enter_error(qp);
    return;
  }
  if (qp.state == QpState::kErr && !r.fatal) return;  // nothing leaves this QP any more
  // The NAK for the failed packet replaces the ACK and every response to a
  // request from that PSN on (an error NAK already queued for an earlier PSN stays).
  if (!(r.fatal && r.nak_pending && wire::psn_before(r.nak_psn, psn))) {
    r.nak_pending = true;
    r.nak_syndrome = nak(kind == kTagRespWrite ? wire::NakCode::kRemoteAccessError
                                               : wire::NakCode::kRemoteOpError);
    r.nak_psn = psn;
  }
  r.unqueue_from(r.nak_psn);
  r.ack_pending = false;
  r.fatal = true;
  enter_error(qp);  // (already in ERR after an earlier fatal error: no-op)
  tx_schedule(qp);
}

}  // namespace burst::core
