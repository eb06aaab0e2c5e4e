// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// RC requester: turns send WQEs into request packets. Segmentation by path MTU
// (FIRST/MIDDLE/LAST/ONLY; RETH on the first packet of a WRITE, ImmDt/IETH on the
// last), READ requests (one packet consuming a PSN per response packet), atomics,
// AckReq on the last packet of each message and every ack_coalesce_pkts packets,
// fence and max_rd_atomic gating, a bounded window of unacknowledged packets.
// Retransmission is the same path: go_back_n() moves the cursor back.
#include <sys/uio.h>

#include <cstring>

#include "core/engine.h"

namespace burst::core {

namespace {

using namespace wire::op;  // NOLINT(build/namespaces): opcode names

uint32_t packets_for(const SendWqe& w, uint32_t mtu) {
  if (w.length == 0) return 1;
  return (w.length + mtu - 1) / mtu;
}

bool is_local_op(WrOpcode op) { return op == WrOpcode::kBindMw || op == WrOpcode::kLocalInv; }

bool is_send(WrOpcode op) {
  return op == WrOpcode::kSend || op == WrOpcode::kSendWithImm || op == WrOpcode::kSendWithInv;
}

// Opcode of packet k of n of a SEND or WRITE message.
uint8_t data_opcode(WrOpcode op, uint32_t k, uint32_t n) {
  const bool first = k == 0;
  const bool last = k + 1 == n;
  if (is_send(op)) {
    if (first && last) {
      return op == WrOpcode::kSendWithImm   ? kRcSendOnlyWithImmediate
             : op == WrOpcode::kSendWithInv ? kRcSendOnlyWithInvalidate
                                            : kRcSendOnly;
    }
    if (first) return kRcSendFirst;
    if (!last) return kRcSendMiddle;
    return op == WrOpcode::kSendWithImm   ? kRcSendLastWithImmediate
           : op == WrOpcode::kSendWithInv ? kRcSendLastWithInvalidate
                                          : kRcSendLast;
  }
  const bool imm = op == WrOpcode::kRdmaWriteWithImm;
  if (first && last) return imm ? kRcRdmaWriteOnlyWithImmediate : kRcRdmaWriteOnly;
  if (first) return kRcRdmaWriteFirst;
  if (!last) return kRcRdmaWriteMiddle;
  return imm ? kRcRdmaWriteLastWithImmediate : kRcRdmaWriteLast;
}

}  // namespace

bool Engine::validate_local_sges(const Qp& qp, SendWqe& w, WcStatus* err) const {
  if (w.inline_data) return true;
  const uint32_t need = w.rd_atomic ? uint32_t{kAccessLocalWrite} : 0u;
  for (uint32_t i = 0; i < w.wr.num_sge; ++i) {
    const Sge& s = w.wr.sg_list[i];
    if (s.length == 0) continue;
    MrRef ref;
    uint32_t space = MemSpaces::kLocal;
    const uint8_t* host = mrs_.local_ref(qp.pd, s.lkey, s.addr, s.length, need, err, &ref, &space);
    if (host == nullptr) return false;
    if (w.wr.num_sge == 1) {
      w.sge0_host = host;
      w.sge0_ref = ref;
      w.sge0_space = space;
    }
  }
  return true;
}

bool Engine::gather(Qp& qp, uint32_t sq_index, uint32_t offset, uint32_t len, uint8_t* dst,
                    WcStatus* err) {
  const SendWqe& w = qp.sq.at(sq_index);
  if (len == 0) return true;
  if (w.inline_data) {
    std::memcpy(dst, qp.sq.inline_of(sq_index) + offset, len);
    return true;
  }
  // One SGE, checked when the WQE started and unchanged since: segmentation
  // keeps offset + len within it.
  if (w.wr.num_sge == 1 && MrTable::still_valid(w.sge0_ref)) {
    if (w.sge0_space == MemSpaces::kLocal) [[likely]] {
      std::memcpy(dst, w.sge0_host + offset, len);  // transmit gather
      return true;
    }
    if (space_read(w.sge0_space, dst, w.sge0_host + offset, len, w.wr.sg_list[0].length - offset)) {
      return true;
    }
    *err = WcStatus::kLocProtErr;
    return false;
  }
  // Pieces in another space are read with one MemSpaces::readv per run of
  // SGEs in the same space.
  iovec local_iov[kMaxSge];
  iovec space_iov[kMaxSge];
  uint32_t niov = 0;
  uint32_t iov_space = MemSpaces::kLocal;
  uint32_t iov_bytes = 0;
  const auto read_pending = [&]() {
    if (niov == 0) return true;
    const ssize_t got = mrs_.spaces().readv(iov_space, local_iov, space_iov, niov);
    niov = 0;
    if (got >= 0 && static_cast<uint32_t>(got) == iov_bytes) return true;
    ++counters_.mem_space_read_errors;
    *err = WcStatus::kLocProtErr;
    return false;
  };
  uint32_t rest = 0;
  const bool gathered =
      for_each_sge_piece(w.wr, offset, len, &rest, [&](const Sge& s, uint32_t at, uint32_t n) {
        uint32_t space = MemSpaces::kLocal;
        const uint8_t* src = mrs_.local(qp.pd, s.lkey, s.addr + at, n, 0, err, &space);
        if (src == nullptr) return false;
        if (space == MemSpaces::kLocal) {
          std::memcpy(dst, src, n);  // transmit gather: the frame is finished right after
        } else {
          if (niov != 0 && space != iov_space && !read_pending()) return false;
          if (niov == 0) {
            iov_space = space;
            iov_bytes = 0;
          }
          local_iov[niov] = iovec{dst, n};
          space_iov[niov] = iovec{const_cast<uint8_t*>(src), n};
          ++niov;
          iov_bytes += n;
        }
        dst += n;
        return true;
      });
  if (!gathered || !read_pending()) return false;
  if (rest != 0) {
    *err = WcStatus::kLocLenErr;
    return false;
  }
  return true;
}

bool Engine::req_can_send(const Qp& qp, uint64_t now_ns) const {
  if (qp.state != QpState::kRts && qp.state != QpState::kSqd) return false;
  const ReqState& rq = qp.req;
  if (rq.rnr_until_ns != 0 && now_ns < rq.rnr_until_ns) return false;
  const SendQueue& sq = qp.sq;
  if (sq.cursor == sq.head) return false;
  const SendWqe& w = sq.at(sq.cursor);
  if (w.local_err != WcStatus::kSuccess) return false;
  if (!w.assigned) {
    if (qp.state == QpState::kSqd) return false;  // draining: start nothing new
    // A local operation waits for every older WQE to complete (a stronger
    // order than IBA asks: it never sits among WQEs with PSNs).
    if (is_local_op(w.wr.opcode)) return sq.tail == sq.cursor;
    if ((w.wr.send_flags & kSendFence) && rq.rd_atomic_inflight > 0) return false;
    const uint32_t max_rd = qp.attr.max_rd_atomic == 0 ? 1 : qp.attr.max_rd_atomic;
    if (w.rd_atomic && rq.rd_atomic_inflight >= max_rd) return false;
    if (static_cast<uint32_t>(wire::psn_diff(rq.psn_alloc, rq.una)) >= config_.window_pkts) {
      return false;
    }
    return true;
  }
  if (!w.rd_atomic) {
    const int32_t d = wire::psn_diff(w.first_psn + sq.cursor_pkt, rq.una);
    if (d >= 0 && static_cast<uint32_t>(d) >= config_.window_pkts) return false;
  }
  return true;
}

void Engine::run_local_op(Qp& qp, SendWqe& w) {
  WcStatus st = WcStatus::kSuccess;
  if (w.wr.opcode == WrOpcode::kBindMw) {
    st = mrs_.bind_mw(qp.pd, qp.qpn, w.wr.bind);  // kMwBindErr as rxe
  } else if (!mrs_.invalidate_rkey(qp.pd, w.wr.invalidate_rkey).ok()) {
    st = WcStatus::kLocQpOpErr;  // as rxe (rxe_do_local_ops)
  }
  if (st != WcStatus::kSuccess) {
    w.local_err = st;
    check_tail_error(qp);  // it is the oldest: error completion, QP to error
    return;
  }
  complete_send_tail(qp, WcStatus::kSuccess);
}

Engine::Build Engine::build_rc_request(Qp& qp, datapath::Frame& buf, uint64_t now_ns) {
  SendQueue& sq = qp.sq;
  ReqState& rq = qp.req;
  const uint32_t index = sq.cursor;
  SendWqe& w = sq.at(index);

  if (!w.assigned && is_local_op(w.wr.opcode)) {
    run_local_op(qp, w);
    return Build::kBlocked;  // no frame; look at the next WQE
  }
  if (!w.assigned) {
    WcStatus err = WcStatus::kSuccess;
    if (!validate_local_sges(qp, w, &err)) {
      w.local_err = err;
      check_tail_error(qp);  // completes now if nothing older is outstanding
      return Build::kBlocked;
    }
  }

  const uint32_t npkts = w.assigned ? w.npkts : packets_for(w, qp.mtu);
  const uint32_t k = w.assigned ? sq.cursor_pkt : 0;
  const Psn psn = (w.assigned ? w.first_psn : rq.psn_alloc) + k;
  const WrOpcode op = w.wr.opcode;
  uint8_t opcode;
  uint32_t payload = 0;
  uint32_t offset = 0;
  bool last_of_message = true;
  switch (op) {
    case WrOpcode::kRdmaRead:
      opcode = kRcRdmaReadRequest;
      break;
    case WrOpcode::kAtomicCmpAndSwp:
      opcode = kRcCompareSwap;
      break;
    case WrOpcode::kAtomicFetchAndAdd:
      opcode = kRcFetchAdd;
      break;
    default:
      opcode = data_opcode(op, k, npkts);
      offset = k * qp.mtu;
      payload = std::min(qp.mtu, w.length - offset);
      last_of_message = k + 1 == npkts;
      break;
  }

  // A frame of the same kind as the previous one (the MIDDLE packets of a long
  // message) starts from a copy of its headers.
  const bool same_kind = qp.req_tmpl.matches(opcode, payload);
  wire::FrameWriter fw = same_kind
                             ? wire::FrameWriter(buf.data, buf.cap, qp.req_tmpl)
                             : wire::FrameWriter(buf.data, buf.cap, qp.path_tmpl, opcode, payload);
  if (!same_kind) fw.save(&qp.req_tmpl);
  if (!fw.ok()) {
    ++counters_.tx_buffer_too_small;
    return Build::kNoRoom;
  }
  if (payload != 0) {
    WcStatus err = WcStatus::kSuccess;
    if (!gather(qp, index, offset, payload, fw.payload(), &err)) {
      // The memory went away after the WQE started (deregistered MR).
      w.local_err = err;
      check_tail_error(qp);
      return Build::kBlocked;
    }
  }

  rq.rnr_until_ns = 0;  // a finished RNR wait (tick may not have seen it yet)
  if (!w.assigned) {
    w.assigned = true;
    w.npkts = npkts;
    w.first_psn = rq.psn_alloc;
    w.last_psn = rq.psn_alloc + (npkts - 1);
    rq.psn_alloc = rq.psn_alloc + npkts;
    ++sq.assigned;
    if (w.rd_atomic) ++rq.rd_atomic_inflight;
  }

  // AckReq: end of a message, every ack_coalesce_pkts packets, and on the packet
  // that fills the window (or the requester would wait for the timer).
  const int32_t window = static_cast<int32_t>(config_.window_pkts);
  const bool ack_req =
      last_of_message || w.rd_atomic ||
      wire::psn_diff(psn, rq.last_ackreq) >= static_cast<int32_t>(config_.ack_coalesce_pkts) ||
      wire::psn_diff(psn + 1, rq.una) >= window;
  wire::Bth& bth = fw.bth();
  bth.set_dest_qpn(qp.attr.dest_qp_num);
  bth.set_psn(psn);
  bth.set_ack_req(ack_req);
  // SE (IBA 9.2.3): on the last packet of a SEND or an RDMA WRITE with
  // immediate the sender asked to be solicited (as rxe and mlx5 do).
  if (last_of_message && (w.wr.send_flags & kSendSolicited) &&
      (is_send(op) || op == WrOpcode::kRdmaWriteWithImm)) {
    bth.set_se(true);
  }

  switch (op) {
    case WrOpcode::kRdmaRead: {
      const uint64_t skip = uint64_t{k} * qp.mtu;
      wire::Reth& reth = fw.reth();
      reth.set_va(w.wr.rdma.remote_addr + skip);
      reth.set_rkey(w.wr.rdma.rkey);
      reth.set_dma_len(static_cast<uint32_t>(w.length - std::min<uint64_t>(skip, w.length)));
      break;
    }
    case WrOpcode::kAtomicCmpAndSwp:
    case WrOpcode::kAtomicFetchAndAdd: {
      wire::AtomicEth& a = fw.atomic_eth();
      a.set_va(w.wr.atomic.remote_addr);
      a.set_rkey(w.wr.atomic.rkey);
      if (op == WrOpcode::kAtomicCmpAndSwp) {
        a.set_swap_add(w.wr.atomic.swap);
        a.set_compare(w.wr.atomic.compare_add);
      } else {
        a.set_swap_add(w.wr.atomic.compare_add);
        a.set_compare(0);
      }
      break;
    }
    default: {
      const wire::OpcodeInfo& info = wire::opcode_info(opcode);
      if (info.has(wire::kHasReth)) {
        wire::Reth& reth = fw.reth();
        reth.set_va(w.wr.rdma.remote_addr);
        reth.set_rkey(w.wr.rdma.rkey);
        reth.set_dma_len(w.length);
      }
      if (info.has(wire::kHasImmDt)) fw.immdt().set_imm(w.wr.imm_data);
      if (info.has(wire::kHasIeth)) fw.ieth().set_rkey(w.wr.invalidate_rkey);
      break;
    }
  }
  fw.set_ipv4_id(ipv4_id_++);
  buf.len = fw.finish();

  // Advance the cursor: a READ request covers all its remaining PSNs.
  Psn end = psn + 1;
  if (w.rd_atomic || k + 1 == npkts) {
    end = w.last_psn + 1;
    ++sq.cursor;
    sq.cursor_pkt = 0;
  } else {
    ++sq.cursor_pkt;
  }
  if (wire::psn_after(end, rq.psn_hi)) {
    rq.psn_hi = end;
  } else {
    ++counters_.retransmitted_packets;
  }
  if (ack_req) rq.last_ackreq = psn;
  arm_retx(qp, now_ns);
  return Build::kBuilt;
}

}  // namespace burst::core
