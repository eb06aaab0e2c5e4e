// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// RC responder, transmit side: READ responses (segmented by path MTU: FIRST and
// LAST/ONLY carry an AETH, MIDDLE does not), atomic ACKs, coalesced ACKs and
// NAKs. Output leaves in PSN order: queued READ/atomic responses first, then the
// NAK or the ACK for ePSN - 1. Positive ACKs use syndrome 0x1f (credit field
// invalid), as rxe does. A READ response / atomic ACK carries the MSN after its
// own request (RdAtomicRes::msn); a plain ACK or NAK the current one.
#include <cstring>

#include "core/engine.h"

namespace burst::core {

namespace {
using namespace wire::op;  // NOLINT(build/namespaces): opcode names
}  // namespace

bool Engine::resp_has_output(const Qp& qp) const {
  const RespState& r = qp.resp;
  return r.q_count != 0 || r.nak_pending || r.ack_pending;
}

Engine::Build Engine::build_response(Qp& qp, datapath::Frame& buf) {
  RespState& r = qp.resp;
  const uint8_t ack_syn = wire::AethSyndrome::ack().raw();
  if (r.q_count != 0) {
    const uint32_t slot = r.queue[r.q_head];
    RdAtomicRes& res = r.res[slot];
    if (res.kind == RdAtomicRes::kAtomic) {
      wire::FrameWriter fw(buf.data, buf.cap, qp.path_tmpl, kRcAtomicAcknowledge, 0);
      if (!fw.ok()) {
        ++counters_.tx_buffer_too_small;
        return Build::kNoRoom;
      }
      fw.bth().set_dest_qpn(qp.attr.dest_qp_num);
      fw.bth().set_psn(res.tx_psn);
      fw.aeth().set_syndrome(ack_syn);
      fw.aeth().set_msn(res.msn);
      fw.atomic_ack().set_orig(res.orig);
      fw.set_ipv4_id(ipv4_id_++);
      buf.len = fw.finish();
      ++counters_.atomic_acks_sent;
      res.queued = false;
      r.q_head = (r.q_head + 1) % kMaxRdAtomic;
      --r.q_count;
      return Build::kBuilt;
    }
    const uint32_t n = std::min(qp.mtu, res.tx_left);
    const bool first = res.tx_psn == res.tx_first_psn;
    const bool last = res.tx_left <= qp.mtu;
    const uint8_t opcode = first && last ? kRcRdmaReadResponseOnly
                           : first       ? kRcRdmaReadResponseFirst
                           : last        ? kRcRdmaReadResponseLast
                                         : kRcRdmaReadResponseMiddle;
    wire::FrameWriter fw(buf.data, buf.cap, qp.path_tmpl, opcode, n);
    if (!fw.ok()) {
      ++counters_.tx_buffer_too_small;
      return Build::kNoRoom;
    }
    if (n != 0) {
      uint32_t space = MemSpaces::kLocal;
      const uint8_t* src = mrs_.remote(qp.pd, res.rkey, res.tx_va, n, kAccessRemoteRead, &space,
                                                 qp.qpn);
      bool read_ok = src != nullptr;
      if (read_ok) {
        if (space == MemSpaces::kLocal) [[likely]] {
          std::memcpy(fw.payload(), src, n);
        } else {
          read_ok = space_read(space, fw.payload(), src, n, res.tx_left);
        }
      }
      if (!read_ok) {
        // The memory went away after the request was accepted (deregistered,
        // or its process is gone): a NAK takes the place of this response
        // packet, and of the responses queued behind it (later PSNs).
        for (uint32_t i = 0; i < r.q_count; ++i) {
          r.res[r.queue[(r.q_head + i) % kMaxRdAtomic]].queued = false;
        }
        r.q_count = 0;
        r.nak_pending = true;
        r.nak_syndrome = wire::AethSyndrome::nak(wire::NakCode::kRemoteAccessError).raw();
        r.nak_psn = res.tx_psn;
        r.fatal = true;
        enter_error(qp);
        return Build::kBlocked;
      }
    }
    fw.bth().set_dest_qpn(qp.attr.dest_qp_num);
    fw.bth().set_psn(res.tx_psn);
    if (opcode != kRcRdmaReadResponseMiddle) {
      fw.aeth().set_syndrome(ack_syn);
      fw.aeth().set_msn(res.msn);
    }
    fw.set_ipv4_id(ipv4_id_++);
    buf.len = fw.finish();
    ++counters_.read_responses_sent;
    res.tx_psn = res.tx_psn + 1;
    res.tx_va += n;
    res.tx_left -= n;
    if (last) {
      res.queued = false;
      r.q_head = (r.q_head + 1) % kMaxRdAtomic;
      --r.q_count;
    }
    return Build::kBuilt;
  }

  if (!r.nak_pending && !r.ack_pending) return Build::kBlocked;
  wire::FrameWriter fw(buf.data, buf.cap, qp.path_tmpl, kRcAcknowledge, 0);
  if (!fw.ok()) {
    ++counters_.tx_buffer_too_small;
    return Build::kNoRoom;
  }
  fw.bth().set_dest_qpn(qp.attr.dest_qp_num);
  if (r.nak_pending) {
    const wire::AethSyndrome syn(r.nak_syndrome);
    fw.bth().set_psn(r.nak_psn);
    fw.aeth().set_syndrome(syn);
    if (syn.is_rnr_nak()) {
      ++counters_.rnr_naks_sent;
    } else {
      ++counters_.naks_sent[std::min<size_t>(syn.value(), kNakCodes - 1)];
    }
  } else {
    fw.bth().set_psn(r.epsn - 1);
    fw.aeth().set_syndrome(ack_syn);
    ++counters_.acks_sent;
  }
  fw.aeth().set_msn(r.msn);
  fw.set_ipv4_id(ipv4_id_++);
  buf.len = fw.finish();
  r.nak_pending = false;
  r.ack_pending = false;
  r.fatal = false;
  return Build::kBuilt;
}

}  // namespace burst::core
