// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Engine construction, object tables (QPs, CQs), posting work requests,
// completions and the error state.
#include "core/engine.h"

#include <algorithm>
#include <cstring>

namespace burst::core {

namespace {

constexpr uint32_t kPendingCqes = 4096;
// Deepest CQ shard: in-process users (burst-xfer) may go beyond the device's
// BURST_MAX_CQE, which burstd enforces for its clients' CQs.
constexpr uint32_t kMaxCqDepth = 1u << 20;
static_assert(kMaxCqDepth >= BURST_MAX_CQE);
// Bytes of a frame around the payload in the worst case: Ethernet + 802.1Q,
// IPv6, UDP, BTH, RETH + ImmDt (the largest extension headers of a data packet),
// ICRC. A path MTU is usable when MTU + this fits in the port's frame size.
constexpr uint32_t kWorstOverhead = 14 + 4 + 40 + 8 + 12 + 16 + 4 + 4;

uint32_t round_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

bool v4_mapped(const std::array<uint8_t, 16>& g) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(g.data(), kPrefix, sizeof(kPrefix)) == 0;
}

// The completion opcode of each WrOpcode, in WrOpcode's value order.
constexpr WcOpcode kWcOpcodeOf[] = {WcOpcode::kRdmaWrite, WcOpcode::kRdmaWrite, WcOpcode::kSend,
                                    WcOpcode::kSend,      WcOpcode::kRdmaRead,  WcOpcode::kCompSwap,
                                    WcOpcode::kFetchAdd,  WcOpcode::kLocalInv,  WcOpcode::kBindMw,
                                    WcOpcode::kSend};
static_assert(std::size(kWcOpcodeOf) == static_cast<size_t>(WrOpcode::kSendWithInv) + 1);
}  // namespace

WcOpcode wc_opcode(WrOpcode op) {
  const auto i = static_cast<size_t>(op);
  return i < std::size(kWcOpcodeOf) ? kWcOpcodeOf[i] : WcOpcode::kSend;
}

namespace {

bool is_atomic(WrOpcode op) {
  return op == WrOpcode::kAtomicCmpAndSwp || op == WrOpcode::kAtomicFetchAndAdd;
}

}  // namespace

Engine::Engine(const EngineConfig& config, MrTable& mrs, CopyEngine& copier)
    : config_(config), mrs_(mrs), copier_(copier) {
  copier_.bind_spaces(&mrs_.spaces());
  static_assert(kPendingCqes < (1u << kTagRqBits), "copy tags: RQ index bits");
  if (config_.max_qps == 0) config_.max_qps = 1;
  if (config_.max_qps > (1u << 24) - 2) config_.max_qps = (1u << 24) - 2;  // QPNs (and copy tags)
  if (config_.first_qpn < 2) config_.first_qpn = 2;
  if (config_.qpn_stride == 0) config_.qpn_stride = 1;
  if (config_.qpn_offset >= config_.qpn_stride) config_.qpn_offset %= config_.qpn_stride;
  if (config_.window_pkts == 0 || config_.window_pkts >= wire::kPsnWindow / 2) {
    config_.window_pkts = 1024;
  }
  if (config_.ack_coalesce_pkts == 0) config_.ack_coalesce_pkts = 1;
  if (config_.tx_qp_burst == 0) config_.tx_qp_burst = 1;
  port_max_mtu_ = 0;
  for (uint32_t m = 4096; m >= 256; m /= 2) {
    if (m + kWorstOverhead <= config_.port.l2_mtu) {
      port_max_mtu_ = m;
      break;
    }
  }
  qps_.resize(size_t{config_.max_qps} + 1);  // last slot: QP1
  qp_gen_.assign(qps_.size(), 0);
  for (uint32_t i = 0; i < qps_.size(); ++i) qps_[i].index = i;
  free_qps_.reserve(config_.max_qps);
  for (uint32_t i = config_.max_qps; i > 0; --i) free_qps_.push_back(i - 1);
  cqs_.resize(size_t{config_.max_cqs} + 1);
  srqs_.resize(size_t{config_.max_srqs} + 1);
  srq_limit_events_.reserve(srqs_.size());
  last_wqe_events_.reserve(qps_.size());
  pending_.reserve(kPendingCqes);
  tx_list_.assign(qps_.size(), 0);
  timer_list_.reserve(qps_.size());
}

// ---------------------------------------------------------------------------
// CQs

Status Engine::create_cq(uint32_t depth, uint32_t* cq_id) {
  if (depth == 0 || depth > kMaxCqDepth) return Errc::kInvalid;
  for (uint32_t i = 1; i < cqs_.size(); ++i) {
    if (!cqs_[i].in_use) {
      cqs_[i].in_use = true;
      cqs_[i].qp_refs = 0;
      cqs_[i].cq = Cq(depth);
      *cq_id = i;
      return Status::Ok();
    }
  }
  return Errc::kNoMemory;
}

Status Engine::destroy_cq(uint32_t cq_id) {
  if (cq_id == 0 || cq_id >= cqs_.size() || !cqs_[cq_id].in_use) return Errc::kNotFound;
  if (cqs_[cq_id].qp_refs != 0) return Errc::kBusy;
  cqs_[cq_id].in_use = false;
  cqs_[cq_id].cq = Cq();
  return Status::Ok();
}

Status Engine::resize_cq(uint32_t cq_id, uint32_t depth) {
  if (cq_id == 0 || cq_id >= cqs_.size() || !cqs_[cq_id].in_use) return Errc::kNotFound;
  if (depth == 0 || depth > kMaxCqDepth) return Errc::kInvalid;
  Cq& cq = cqs_[cq_id].cq;
  cq.resize(std::max(depth, cq.size()));  // what waits in it stays
  return Status::Ok();
}

int Engine::poll_cq(uint32_t cq_id, Wc* wc, int max) {
  if (cq_id == 0 || cq_id >= cqs_.size() || !cqs_[cq_id].in_use || max <= 0) return 0;
  return cqs_[cq_id].cq.poll(wc, max);
}

uint32_t Engine::cq_size(uint32_t cq_id) const {
  return cq_id != 0 && cq_id < cqs_.size() && cqs_[cq_id].in_use ? cqs_[cq_id].cq.size() : 0;
}

bool Engine::cq_error(uint32_t cq_id) const {
  return cq_id != 0 && cq_id < cqs_.size() && cqs_[cq_id].in_use && cqs_[cq_id].cq.error();
}

// ---------------------------------------------------------------------------
// QPs

Qp* Engine::find_qp(uint32_t qpn) {
  return const_cast<Qp*>(static_cast<const Engine*>(this)->find_qp(qpn));
}

const Qp* Engine::find_qp(uint32_t qpn) const {
  const Qp* qp;
  if (qpn == 1) {
    qp = &qps_[config_.max_qps];
  } else {
    if (qpn < config_.first_qpn) return nullptr;
    const uint32_t rel = qpn - config_.first_qpn;
    if (rel % config_.qpn_stride != config_.qpn_offset) return nullptr;
    qp = &qps_[(rel / config_.qpn_stride) % config_.max_qps];
  }
  return (qp->in_use && qp->qpn == qpn) ? qp : nullptr;
}

Status Engine::create_qp(const QpInitAttr& init, uint32_t* qpn) {
  if (init.type == QpType::kUc) return Errc::kNotSupported;
  if (init.type != QpType::kRc && init.type != QpType::kUd) return Errc::kInvalid;
  if (init.gsi && init.type != QpType::kUd) return Errc::kInvalid;
  QpCap cap = init.cap;
  const bool on_srq = init.srq != 0;
  if (on_srq) {
    // The SRQ's capacities apply; the QP's RQ only holds the WQE it took.
    cap.max_recv_wr = 0;
    cap.max_recv_sge = 0;
  }
  if (cap.max_send_wr > kMaxQpWr || cap.max_recv_wr > kMaxQpWr || cap.max_send_sge > kMaxSge ||
      cap.max_recv_sge > kMaxSge || cap.max_inline_data > kMaxInlineData) {
    return Errc::kInvalid;
  }
  for (uint32_t cq : {init.send_cq, init.recv_cq}) {
    if (cq == 0 || cq >= cqs_.size() || !cqs_[cq].in_use) return Errc::kNotFound;
  }
  if (on_srq && (init.srq >= srqs_.size() || !srqs_[init.srq].in_use)) return Errc::kNotFound;
  if (!mrs_.pd_valid(init.pd)) return Errc::kNotFound;

  uint32_t slot;
  if (init.gsi) {
    slot = config_.max_qps;
    if (qps_[slot].in_use || gsi_ != nullptr) return Errc::kBusy;  // QP1 is the datapath's
  } else {
    if (free_qps_.empty()) return Errc::kNoMemory;
    slot = free_qps_.back();
    free_qps_.pop_back();
  }
  if (Status s = mrs_.pd_ref(init.pd); !s.ok()) {
    if (!init.gsi) free_qps_.push_back(slot);
    return s;
  }

  Qp& qp = qps_[slot];
  const bool was_in_tx = qp.in_tx_list;
  qp = Qp{};
  qp.index = slot;
  qp.in_tx_list = was_in_tx;  // a stale entry of a destroyed QP may still sit in the ring
  qp.in_use = true;
  if (init.gsi) {
    qp.qpn = 1;
  } else {
    // QPN = first + offset + stride * (slot + max_qps * generation), below 2^24.
    const uint32_t span = (wire::kQpnMask - config_.first_qpn) / config_.qpn_stride;
    const uint32_t gens = span / config_.max_qps;
    const uint32_t n = slot + config_.max_qps * (qp_gen_[slot] % (gens ? gens : 1));
    qp.qpn = config_.first_qpn + config_.qpn_offset + config_.qpn_stride * n;
  }
  qp.type = init.type;
  qp.pd = init.pd;
  qp.send_cq = init.send_cq;
  qp.recv_cq = init.recv_cq;
  qp.srq = init.srq;
  qp.sq_sig_all = init.sq_sig_all;
  qp.cap = cap;
  const uint32_t sq_slots = round_pow2(std::max<uint32_t>(cap.max_send_wr, 1));
  const uint32_t rq_slots = round_pow2(std::max<uint32_t>(cap.max_recv_wr, 1));
  qp.cap.max_send_wr = cap.max_send_wr == 0 ? 0 : sq_slots;
  qp.cap.max_recv_wr = cap.max_recv_wr == 0 ? 0 : rq_slots;
  qp.sq.ring.resize(sq_slots);
  qp.sq.mask = sq_slots - 1;
  qp.sq.inline_stride = cap.max_inline_data;
  qp.sq.inline_buf.resize(size_t{sq_slots} * cap.max_inline_data);
  qp.rq.ring.resize(rq_slots);
  qp.rq.mask = rq_slots - 1;
  qp.state = QpState::kReset;
  qp.attr.qp_state = QpState::kReset;
  qp.attr.cur_qp_state = QpState::kReset;
  if (init.gsi) qp.attr.qkey = wire::kQp1Qkey;
  ++cqs_[init.send_cq].qp_refs;
  ++cqs_[init.recv_cq].qp_refs;
  if (on_srq) ++srqs_[init.srq].qp_refs;
  *qpn = qp.qpn;
  return Status::Ok();
}

Status Engine::destroy_qp(uint32_t qpn) {
  Qp* qp = find_qp(qpn);
  if (qp == nullptr) return Errc::kNotFound;
  timer_unwatch(*qp);
  mrs_.pd_unref(qp->pd);
  --cqs_[qp->send_cq].qp_refs;
  --cqs_[qp->recv_cq].qp_refs;
  if (qp->srq != 0) --srqs_[qp->srq].qp_refs;
  if (qp->last_wqe_queued) std::erase(last_wqe_events_, qp->qpn);
  if (qp->type == QpType::kUd) mcast_detach_all(qp->qpn);
  // Completions of this QP still waiting for their copies are delivered first.
  flush_cqes();
  qp->in_use = false;
  qp->sq.ring = {};
  qp->sq.inline_buf = {};
  qp->rq.ring = {};
  ++qp_gen_[qp->index];
  if (qp->index != config_.max_qps) free_qps_.push_back(qp->index);
  return Status::Ok();
}

void Engine::reset_queues(Qp& qp) {
  qp.sq.head = qp.sq.tail = qp.sq.assigned = qp.sq.cursor = qp.sq.cursor_pkt = 0;
  qp.rq.head = qp.rq.tail = 0;
  qp.req = ReqState{};
  qp.resp = RespState{};
  timer_unwatch(qp);
}

// ---------------------------------------------------------------------------
// Posting

Status Engine::post_send(uint32_t qpn, const SendWr& wr) {
  Qp* qpp = find_qp(qpn);
  if (qpp == nullptr) return Errc::kNotFound;
  Qp& qp = *qpp;
  if (qp.state == QpState::kReset || qp.state == QpState::kInit || qp.state == QpState::kRtr) {
    return Errc::kState;
  }
  if (qp.type == QpType::kUd) {
    if (wr.opcode != WrOpcode::kSend && wr.opcode != WrOpcode::kSendWithImm) {
      return Errc::kInvalid;
    }
  } else if (static_cast<uint8_t>(wr.opcode) > static_cast<uint8_t>(WrOpcode::kSendWithInv)) {
    return Errc::kInvalid;
  }
  const bool local_op = wr.opcode == WrOpcode::kLocalInv || wr.opcode == WrOpcode::kBindMw;
  if (wr.num_sge > qp.cap.max_send_sge || wr.num_sge > kMaxSge) return Errc::kInvalid;
  uint64_t length = 0;
  for (uint32_t i = 0; i < wr.num_sge && !local_op; ++i) length += wr.sg_list[i].length;
  if (length > kMaxMessageBytes) return Errc::kInvalid;
  const bool inl = (wr.send_flags & kSendInline) != 0 && length != 0;
  if (inl) {
    if (wr.opcode == WrOpcode::kRdmaRead || is_atomic(wr.opcode)) return Errc::kInvalid;
    if (length > qp.cap.max_inline_data) return Errc::kInvalid;
  }
  if (is_atomic(wr.opcode)) {
    if (wr.num_sge != 1 || wr.sg_list[0].length != 8 || (wr.atomic.remote_addr & 7) != 0) {
      return Errc::kInvalid;
    }
  }
  if (qp.type == QpType::kUd) {
    if (length > port_max_mtu_ || wr.ud.remote_qpn > wire::kQpnMask || !path_ok(wr.ud.ah)) {
      return Errc::kInvalid;
    }
  }
  if (qp.sq.count() >= qp.cap.max_send_wr) return Errc::kNoMemory;

  const uint32_t slot = qp.sq.head;
  SendWqe& w = qp.sq.at(slot);
  w = SendWqe{};
  w.wr = wr;
  if (local_op) w.wr.num_sge = 0;  // a local operation carries no data (its SGEs are ignored)
  w.length = static_cast<uint32_t>(length);
  w.rd_atomic = wr.opcode == WrOpcode::kRdmaRead || is_atomic(wr.opcode);
  w.signaled = qp.sq_sig_all || (wr.send_flags & kSendSignaled) != 0;
  w.inline_data = inl;
  if (inl) {
    uint8_t* dst = qp.sq.inline_of(slot);
    for (uint32_t i = 0; i < wr.num_sge; ++i) {
      const Sge& s = wr.sg_list[i];
      if (s.length != 0) {
        std::memcpy(dst, reinterpret_cast<const void*>(static_cast<uintptr_t>(s.addr)), s.length);
      }
      dst += s.length;
    }
  }
  ++qp.sq.head;
  if (qp.state == QpState::kErr || qp.state == QpState::kSqe) {
    flush_sq(qp);
    flush_cqes();
  } else {
    tx_schedule(qp);
  }
  return Status::Ok();
}

Status Engine::post_recv(uint32_t qpn, const RecvWr& wr) {
  Qp* qpp = find_qp(qpn);
  if (qpp == nullptr) return Errc::kNotFound;
  Qp& qp = *qpp;
  if (qp.srq != 0) return Errc::kInvalid;  // post_srq_recv
  if (qp.state == QpState::kReset) return Errc::kState;
  if (wr.num_sge > qp.cap.max_recv_sge || wr.num_sge > kMaxSge) return Errc::kInvalid;
  if (qp.rq.count() >= qp.cap.max_recv_wr) return Errc::kNoMemory;
  qp.rq.ring[qp.rq.head & qp.rq.mask] = wr;
  ++qp.rq.head;
  if (qp.state == QpState::kErr) {
    flush_rq(qp);
    flush_cqes();
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Completions

void Engine::emit_cqe(const Qp& qp, bool send_side, const Wc& wc) {
  // (Bounded by kPendingCqes, not the capacity, which grows when copy failures
  // are handled: the RQ index of a copy tag assumes the bound, see engine.h.)
  if (pending_.size() >= kPendingCqes && !flushing_) flush_cqes();
  pending_.push_back(PendingCqe{send_side ? qp.send_cq : qp.recv_cq, qp.index, qp.qpn,
                                send_side ? qp.sq.tail : qp.rq.tail, send_side, wc});
}

void Engine::flush_cqes() {
  if (flushing_) return;
  // Drain even with no completion pending: an RDMA WRITE has none, but its ACK
  // (built after rx_burst returns) must not go out before its data is placed,
  // and the frames it copies from are released when rx_burst returns.
  copier_.drain();
  if (!copier_.failed_tags().empty()) [[unlikely]] {
    handle_copy_failures();
  }
  if (pending_.empty()) return;
  flushing_ = true;
  for (size_t i = 0; i < pending_.size(); ++i) {
    const PendingCqe p = pending_[i];  // by value: enter_error() may append
    CqSlot& slot = cqs_[p.cq_id];
    if (slot.in_use && slot.cq.push(p.wc)) {
      ++cqes_pushed_;
      continue;
    }
    ++counters_.cq_overflows;
    Qp& qp = qps_[p.qp_index];
    if (qp.in_use && qp.qpn == p.qpn && qp.state != QpState::kErr) enter_error(qp);
  }
  pending_.clear();
  flushing_ = false;
}

void Engine::complete_send_tail(Qp& qp, WcStatus status) {
  SendWqe& w = qp.sq.at(qp.sq.tail);
  if (status != WcStatus::kSuccess || w.signaled) {
    Wc wc;
    wc.wr_id = w.wr.wr_id;
    wc.status = status;
    wc.opcode = wc_opcode(w.wr.opcode);
    wc.byte_len = status == WcStatus::kSuccess ? w.length : 0;
    wc.qp_num = qp.qpn;
    emit_cqe(qp, true, wc);
  }
  if (w.assigned && w.rd_atomic && qp.req.rd_atomic_inflight > 0) --qp.req.rd_atomic_inflight;
  ++qp.sq.tail;
  if (static_cast<int32_t>(qp.sq.assigned - qp.sq.tail) < 0) qp.sq.assigned = qp.sq.tail;
  if (static_cast<int32_t>(qp.sq.cursor - qp.sq.tail) < 0) {
    qp.sq.cursor = qp.sq.tail;
    qp.sq.cursor_pkt = 0;
  }
}

void Engine::flush_sq(Qp& qp) {
  while (qp.sq.tail != qp.sq.head) complete_send_tail(qp, WcStatus::kWrFlushErr);
}

void Engine::flush_rq(Qp& qp) {
  while (!qp.rq.empty()) {
    const RecvWr& r = qp.rq.front();
    Wc wc;
    wc.wr_id = r.wr_id;
    wc.status = WcStatus::kWrFlushErr;
    wc.opcode = WcOpcode::kRecv;
    wc.qp_num = qp.qpn;
    emit_cqe(qp, false, wc);
    ++qp.rq.tail;
  }
  qp.resp.rwqe_held = false;
}

void Engine::enter_error(Qp& qp) {
  if (qp.state == QpState::kErr) return;
  qp.state = QpState::kErr;
  qp.attr.qp_state = QpState::kErr;
  qp.req.retx_deadline_ns = 0;
  qp.req.rnr_until_ns = 0;
  timer_unwatch(qp);
  flush_sq(qp);
  flush_rq(qp);  // on an SRQ: only the WQE this QP took (the SRQ's stay)
  if (qp.srq != 0) queue_last_wqe_event(qp);
  RespState& r = qp.resp;
  r.msg = RespState::kNone;
  r.ack_pending = false;
  if (!r.fatal) {
    // Nothing more leaves this QP. After a fatal responder error the queued READ
    // responses and the error NAK still go out, in PSN order.
    r.nak_pending = false;
    for (uint32_t i = 0; i < r.q_count; ++i)
      r.res[r.queue[(r.q_head + i) % kMaxRdAtomic]].queued = false;
    r.q_count = 0;
  } else {
    tx_schedule(qp);
  }
}

// ---------------------------------------------------------------------------
// Lists, copies, paths

void Engine::tx_schedule(Qp& qp) {
  if (qp.in_tx_list) return;
  qp.in_tx_list = true;
  tx_list_[(tx_head_ + tx_count_) % tx_list_.size()] = qp.index;
  ++tx_count_;
}

void Engine::timer_watch(Qp& qp) {
  uint64_t deadline = 0;
  if (qp.req.retx_deadline_ns != 0) deadline = qp.req.retx_deadline_ns;
  if (qp.req.rnr_until_ns != 0 && (deadline == 0 || qp.req.rnr_until_ns < deadline)) {
    deadline = qp.req.rnr_until_ns;
  }
  if (deadline == 0) return;
  if (next_timer_ns_ == 0 || deadline < next_timer_ns_) next_timer_ns_ = deadline;
  if (qp.in_timer_list) return;
  qp.in_timer_list = true;
  qp.timer_pos = static_cast<uint32_t>(timer_list_.size());
  timer_list_.push_back(qp.index);
}

void Engine::timer_unwatch(Qp& qp) {
  if (!qp.in_timer_list) return;
  const uint32_t pos = qp.timer_pos;
  const uint32_t last = timer_list_.back();
  timer_list_[pos] = last;
  qps_[last].timer_pos = pos;
  timer_list_.pop_back();
  qp.in_timer_list = false;
}

bool Engine::space_read(uint32_t space, void* dst, const void* src, uint32_t len,
                        uint64_t avail) {
  const uint8_t* s = static_cast<const uint8_t*>(src);
  TxStage& st = tx_stage_;
  if (st.space == space && s >= st.begin && s + len <= st.end) [[likely]] {
    std::memcpy(dst, st.buf.get() + (s - st.begin), len);
    return true;
  }
  const uint64_t want = std::min<uint64_t>({avail, uint64_t{tx_stage_cap_}, kTxStageBytes});
  if (want > len) {
    if (!st.buf) st.buf = std::make_unique<uint8_t[]>(kTxStageBytes);
    if (mrs_.spaces().read(space, st.buf.get(), src, want)) {
      ++counters_.mem_space_read_ahead;
      st.space = space;
      st.begin = s;
      st.end = s + want;
      std::memcpy(dst, st.buf.get(), len);
      return true;
    }
    st.end = st.begin = nullptr;  // fall back to the exact read (it reports)
  }
  if (mrs_.spaces().read(space, dst, src, len)) return true;
  ++counters_.mem_space_read_errors;
  return false;
}

bool Engine::path_ok(const Address& ah) const {
  if (ah.sgid_index >= config_.port.gids.size()) return false;
  return v4_mapped(config_.port.gids[ah.sgid_index]) == v4_mapped(ah.dgid);
}

bool Engine::make_path(const Address& ah, uint32_t src_qpn, uint32_t dest_qpn,
                       wire::PathHeaders* path) const {
  if (!path_ok(ah)) return false;
  wire::PathHeaders& p = *path;
  p.smac = config_.port.mac;
  p.dmac = ah.dmac;
  p.has_vlan = ah.vlan_id != 0xffff;
  p.vlan_tci = p.has_vlan ? static_cast<uint16_t>(ah.vlan_id & 0x0fff) : 0;
  p.sgid = config_.port.gids[ah.sgid_index];
  p.dgid = ah.dgid;
  p.ipv6 = !v4_mapped(p.sgid);
  p.traffic_class = ah.traffic_class;
  p.hop_limit = ah.hop_limit;
  p.flow_label = ah.flow_label & 0xFFFFF;
  p.udp_sport = udp_sport_for(src_qpn, dest_qpn);
  return true;
}

uint16_t Engine::udp_sport_for(uint32_t src_qpn, uint32_t dest_qpn) {
  // Flow entropy for ECMP: a hash of the QP pair in the dynamic port range.
  uint32_t h = (src_qpn * 0x9E3779B1u) ^ (dest_qpn * 0x85EBCA6Bu);
  h ^= h >> 15;
  return static_cast<uint16_t>(0xC000 | (h & 0x3FFF));
}

}  // namespace burst::core
