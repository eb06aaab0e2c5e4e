// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// UD: SEND_ONLY (+immediate) with a DETH. Q_Key check on receive (a WR Q_Key
// with the high bit set means the QP's own Q_Key, IBA 10.2.5), the 40-byte GRH
// area first in every receive buffer (IPv4: the IPv4 header in its last 20
// bytes; IPv6: the IPv6 header), kWcGrh, src_qp from the DETH, sl the RoCE
// packet type as a ConnectX reports it (verbs.h WcRoceSl), pkey_index, slid and
// dlid_path_bits 0. The receive WQE
// comes from the RQ or the SRQ; none: the datagram is dropped and counted. A
// local error on a send WQE moves the QP to SQE (the receive side keeps working).
#include <cstring>

#include "core/engine.h"

namespace burst::core {

namespace {
constexpr uint32_t kGrhBytes = 40;
constexpr uint8_t kZeros[20] = {};
}  // namespace

void Engine::ud_receive(Qp& qp, const wire::PacketView& pv) {
  if (qp.state != QpState::kRtr && qp.state != QpState::kRts && qp.state != QpState::kSqd &&
      qp.state != QpState::kSqe) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kBadQpState)];
    return;
  }
  const wire::Deth* deth = pv.deth();
  if (deth->qkey() != qp.attr.qkey) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kBadQkey)];
    return;
  }
  if (pv.payload_len > port_max_mtu_) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kUdTooLong)];
    return;
  }
  if (qp.rq.empty() && (qp.srq == 0 || !srq_take(qp))) {
    ++counters_.rx_drop[static_cast<size_t>(Drop::kUdNoRwqe)];
    return;
  }
  RespState& r = qp.resp;
  r.rwqe_held = true;
  r.rwqe_len = 0;
  const RecvWr& rw = qp.rq.front();
  uint64_t room = 0;
  for (uint32_t i = 0; i < rw.num_sge && i < kMaxSge; ++i) room += rw.sg_list[i].length;
  if (room < uint64_t{kGrhBytes} + pv.payload_len) {
    complete_rwqe(qp, WcStatus::kLocLenErr, WcOpcode::kRecv, 0, 0, 0);
    return;
  }
  r.sge_idx = 0;
  r.sge_off = 0;
  WcStatus err = WcStatus::kLocProtErr;
  const uint8_t* l3 = pv.frame + pv.l3_off;
  const uint64_t tag = make_resp_tag(qp, pv.bth().psn(), kTagUdRecv);
  bool ok;
  if (pv.ipv6) {
    ok = scatter(qp, l3, kGrhBytes, &err, tag);
  } else {
    ok = scatter(qp, kZeros, sizeof(kZeros), &err, tag) && scatter(qp, l3, 20, &err, tag);
  }
  ok = ok && scatter(qp, pv.payload(), pv.payload_len, &err, tag);
  if (!ok) {
    complete_rwqe(qp, err, WcOpcode::kRecv, 0, 0, 0);
    enter_error(qp);
    return;
  }
  uint32_t flags = kWcGrh;
  uint32_t imm = 0;
  if (const wire::ImmDt* i = pv.immdt()) {
    flags |= kWcWithImm;
    imm = i->imm();
  }
  const RecvWr& done = qp.rq.front();
  Wc wc;
  wc.wr_id = done.wr_id;
  wc.status = WcStatus::kSuccess;
  wc.opcode = WcOpcode::kRecv;
  wc.byte_len = kGrhBytes + pv.payload_len;
  wc.imm_data = imm;
  wc.qp_num = qp.qpn;
  wc.src_qp = deth->src_qpn();
  wc.wc_flags = flags;
  wc.sl = kWcSlRoceV2 | (pv.ipv6 ? kWcSlL3Ipv6 : kWcSlL3Ipv4);
  wc.solicited = pv.bth().se();
  emit_cqe(qp, false, wc);
  ++qp.rq.tail;
  r.rwqe_held = false;
  ++counters_.ud_received;
}

Engine::Build Engine::build_ud_send(Qp& qp, datapath::Frame& buf) {
  SendQueue& sq = qp.sq;
  const uint32_t index = sq.cursor;
  SendWqe& w = sq.at(index);
  WcStatus err = WcStatus::kSuccess;
  wire::PathHeaders path{};
  const bool path_valid = make_path(w.wr.ud.ah, qp.qpn, w.wr.ud.remote_qpn, &path);
  if (!path_valid || !validate_local_sges(qp, w, &err)) {
    complete_send_tail(qp, path_valid ? err : WcStatus::kLocQpOpErr);
    qp.state = QpState::kSqe;
    qp.attr.qp_state = QpState::kSqe;
    flush_sq(qp);
    return Build::kBlocked;
  }
  const uint8_t opcode = w.wr.opcode == WrOpcode::kSendWithImm ? wire::op::kUdSendOnlyWithImmediate
                                                               : wire::op::kUdSendOnly;
  wire::FrameWriter fw(buf.data, buf.cap, path, opcode, w.length);
  if (!fw.ok()) {
    ++counters_.tx_buffer_too_small;
    return Build::kNoRoom;
  }
  if (!gather(qp, index, 0, w.length, fw.payload(), &err)) {
    complete_send_tail(qp, err);
    qp.state = QpState::kSqe;
    qp.attr.qp_state = QpState::kSqe;
    flush_sq(qp);
    return Build::kBlocked;
  }
  wire::Bth& bth = fw.bth();
  bth.set_dest_qpn(w.wr.ud.remote_qpn);
  bth.set_psn(qp.req.psn_alloc);
  if (w.wr.send_flags & kSendSolicited) bth.set_se(true);
  qp.req.psn_alloc = qp.req.psn_alloc + 1;
  const uint32_t qkey = (w.wr.ud.remote_qkey & 0x80000000u) ? qp.attr.qkey : w.wr.ud.remote_qkey;
  fw.deth().set_qkey(qkey);
  fw.deth().set_src_qpn(qp.qpn);
  if (opcode == wire::op::kUdSendOnlyWithImmediate) fw.immdt().set_imm(w.wr.imm_data);
  fw.set_ipv4_id(ipv4_id_++);
  buf.len = fw.finish();
  ++counters_.ud_sent;
  ++sq.cursor;
  ++sq.assigned;
  complete_send_tail(qp, WcStatus::kSuccess);  // UD completes once the frame is built
  return Build::kBuilt;
}

}  // namespace burst::core
