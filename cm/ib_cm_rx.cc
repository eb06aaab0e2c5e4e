/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IbCm: received MADs of connection establishment — REQ, MRA, REJ, REP, RTU —
// and the dispatch of every received MAD (a table by attribute). The model is
// cm.c's cm_req_handler, cm_rep_handler... (read, not copied).
#include <cstring>

#include "cm/ib_cm_impl.h"

namespace burst::cm {
namespace {


// The path of a received REQ: its primary path fields, and the MAD's source
// for what RoCE has no REQ field for (the MAC, our GID index).
CmPath path_from_req(const ReqMsg& r, const MadPeer& src) {
  CmPath p;
  p.sgid = r.primary.remote_gid;
  p.dgid = r.primary.local_gid;
  p.dmac = src.mac;
  p.sgid_index = src.sgid_index;
  p.traffic_class = r.primary.traffic_class;
  p.hop_limit = r.primary.hop_limit;
  p.flow_label = r.primary.flow_label;
  p.sl = r.primary.sl;
  p.mtu = r.path_mtu;
  p.rate = r.primary.packet_rate;
  // As cm_format_paths_from_req: the REQ carries the ACK timeout, one more than the life time.
  p.packet_life_time = r.primary.local_ack_timeout ? r.primary.local_ack_timeout - 1 : 0;
  p.pkey = r.pkey;
  return p;
}

void req_params(const ReqMsg& r, const CmPath& path, CmReqParams* q) {
  q->path = path;
  q->service_id = r.service_id;
  q->qpn = r.local_qpn;
  q->qp_type = r.transport_type == 3 ? CmQpType::kXrc : static_cast<CmQpType>(r.transport_type);
  q->starting_psn = r.starting_psn;
  q->qkey = r.local_qkey;
  q->responder_resources = r.responder_resources;
  q->initiator_depth = r.initiator_depth;
  q->remote_cm_response_timeout = r.remote_cm_response_timeout;
  q->local_cm_response_timeout = r.local_cm_response_timeout;
  q->max_cm_retries = r.max_cm_retries;
  q->retry_count = r.retry_count;
  q->rnr_retry_count = r.rnr_retry_count;
  q->flow_control = r.flow_control;
  q->srq = r.srq;
  q->private_data_len = kReqPrivateData;
  q->private_data = r.private_data;
}

template <size_t N>
void event_pd(CmEvent* ev, const std::array<uint8_t, N>& pd) {
  static_assert(N <= kRtuPrivateData);
  std::memcpy(ev->private_data.data(), pd.data(), N);
  ev->private_data_len = N;
}

}  // namespace

void IbCm::receive(const Mad& mad) {
  CmCounters& n = impl_->counters;
  ++n.mads_received;
  MadHeader h;
  switch (decode_header(mad.bytes.data(), &h)) {
    case MadError::kOk: break;
    case MadError::kUnknownAttr: ++n.dropped_unknown_attr; return;
    case MadError::kBadMethod:
    case MadError::kBadField: ++n.dropped_bad_length; return;
    default: ++n.dropped_bad_class; return;
  }
  if (!impl_->dispatch(mad, h)) ++n.dropped_unknown_attr;
}

// The handler of each attribute, a table.
bool IbCm::Impl::dispatch(const Mad& mad, const MadHeader& h) {
  using RxFn = void (Impl::*)(const Mad&, const MadHeader&);
  struct RxEntry {
    CmAttr attr;
    RxFn fn;
  };
  static constexpr RxEntry kRx[] = {
      {CmAttr::kReq, &Impl::rx_req},         {CmAttr::kMra, &Impl::rx_mra},
      {CmAttr::kRej, &Impl::rx_rej},         {CmAttr::kRep, &Impl::rx_rep},
      {CmAttr::kRtu, &Impl::rx_rtu},         {CmAttr::kDreq, &Impl::rx_dreq},
      {CmAttr::kDrep, &Impl::rx_drep},       {CmAttr::kSidrReq, &Impl::rx_sidr_req},
      {CmAttr::kSidrRep, &Impl::rx_sidr_rep}, {CmAttr::kClassPortInfo, &Impl::rx_unsupported},
      {CmAttr::kLap, &Impl::rx_unsupported}, {CmAttr::kApr, &Impl::rx_unsupported},
  };
  for (const RxEntry& e : kRx) {
    if (static_cast<uint16_t>(e.attr) == h.attr_id) {
      (this->*e.fn)(mad, h);
      return true;
    }
  }
  return false;
}

Conn* IbCm::Impl::match(const Mad& mad, uint32_t our_id, uint32_t their_id, bool check_their_id) {
  Conn* c = by_local_id(our_id);
  if (!c || c->state == CmState::kListen || c->peer_gid != mad.peer.gid ||
      (check_their_id && c->remote_id != their_id)) {
    ++counters.dropped_no_match;
    return nullptr;
  }
  return c;
}

void IbCm::Impl::rx_unsupported(const Mad&, const MadHeader&) { ++counters.unsupported_attr; }

// cma's delayed MRA (6.1: CMA_CM_MRA_SETTING is IB_CM_MRA_FLAG_DELAY | 24):
// rdma_cm marks every REQ / REP its application has not answered yet as MRAed
// without sending anything; cm_dup_req_handler / cm_dup_rep_handler send the
// MRA when the peer retransmits, i.e. when the application is slower than the
// peer's CM response timeout. Here the same happens at the duplicate: the MRA
// (service timeout 24, ~69 s) is sent and kept for further duplicates.
void IbCm::Impl::hold_off(Conn* c, CmMsgKind kind) {
  c->mra_mad = build_mra(*c, kind, kAutoMraServiceTimeout, nullptr, 0);
  c->mra_sent = true;
  c->state = kind == CmMsgKind::kReq ? CmState::kMraReqSent : CmState::kMraRepSent;
  ++counters.mra_sent_delayed;
  send(c->mra_mad);
}

// A REQ we already hold an id for (cm_dup_req_handler, with the REP resent).
void IbCm::Impl::dup_req(Conn* c, const Mad& mad) {
  if (c->peer_gid != mad.peer.gid) {
    ++counters.dropped_no_match;
    return;
  }
  ++counters.duplicate_req;
  switch (c->state) {
    case CmState::kReqRcvd:  // its user has not answered yet: hold the peer off
      hold_off(c, CmMsgKind::kReq);
      break;
    case CmState::kMraReqSent:
      send(c->mra_mad);
      break;
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      send(c->retry_mad);  // the REP
      break;
    case CmState::kTimewait:
      send(build_rej(*c, CmMsgKind::kReq, RejReason::kStaleConn, nullptr, 0, nullptr, 0));
      break;
    default:
      break;
  }
}

void IbCm::Impl::rx_req(const Mad& mad, const MadHeader& h) {
  ReqMsg r;
  if (decode_req(mad.bytes.data(), &r) != MadError::kOk) {
    ++counters.dropped_bad_length;
    return;
  }
  if (auto it = remote_ids.find({r.local_ca_guid, r.local_comm_id}); it != remote_ids.end()) {
    dup_req(it->second, mad);
    return;
  }
  if (remote_qpns.count({r.local_ca_guid, r.local_qpn})) {  // cm_insert_remote_qpn
    reject_unconnected(mad, r, h.tid, RejReason::kStaleConn);
    return;
  }
  Conn* l = find_listen(r.service_id);
  if (!l) {
    ++counters.rej_sent_no_listener;
    reject_unconnected(mad, r, h.tid, RejReason::kInvalidServiceId);
    return;
  }
  if (r.transport_type == 2 || (r.transport_type == 3 && r.extended_transport != 1)) {
    reject_unconnected(mad, r, h.tid, RejReason::kInvalidTransportType);
    return;
  }
  Conn* c = conns.size() < kMaxPassiveIds ? new_conn(l->context, true) : nullptr;
  if (!c) {
    ++counters.rej_sent_no_resources;
    reject_unconnected(mad, r, h.tid, RejReason::kNoResources);
    return;
  }
  c->state = CmState::kReqRcvd;
  c->remote_id = r.local_comm_id;
  c->remote_ca_guid = r.local_ca_guid;
  c->remote_qpn = r.local_qpn;
  c->service_id = r.service_id;
  c->path = path_from_req(r, mad.peer);
  c->peer_gid = mad.peer.gid;
  c->tid = h.tid;
  c->max_cm_retries = r.max_cm_retries;
  c->peer_timeout_ns = response_period_ns(r.local_cm_response_timeout, c->path.packet_life_time);
  c->timewait_ns = timewait_period_ns(r.remote_cm_response_timeout, c->path.packet_life_time);
  insert_remote(c);
  CmEvent ev;
  ev.type = CmEventType::kReqReceived;
  ev.listen_handle = l->handle;
  ev.peer = mad.peer;
  req_params(r, c->path, &ev.req);
  emit(c, ev);
}

void IbCm::Impl::rx_mra(const Mad& mad, const MadHeader&) {
  MraMsg m;
  if (decode_mra(mad.bytes.data(), &m) != MadError::kOk) {
    ++counters.dropped_bad_length;
    return;
  }
  Conn* c = by_local_id(m.remote_comm_id);
  const bool waits_rep = c && (c->state == CmState::kReqSent || c->state == CmState::kMraReqRcvd) &&
                         m.message_mraed == CmMsgKind::kReq;
  const bool waits_rtu = c && (c->state == CmState::kRepSent || c->state == CmState::kMraRepRcvd) &&
                         m.message_mraed == CmMsgKind::kRep;
  if (!c || c->peer_gid != mad.peer.gid || (!waits_rep && !waits_rtu) ||
      (c->remote_id != 0 && c->remote_id != m.local_comm_id)) {
    ++counters.dropped_no_match;
    return;
  }
  c->remote_id = m.local_comm_id;
  c->state = waits_rep ? CmState::kMraReqRcvd : CmState::kMraRepRcvd;
  // cm_mra_handler: the wait becomes the peer's service timeout (+ the round trip).
  c->retry_period_ns = response_period_ns(m.service_timeout, c->path.packet_life_time);
  arm(c, host.now_ns() + c->retry_period_ns);
  CmEvent ev;
  ev.type = CmEventType::kMraReceived;
  ev.peer = mad.peer;
  event_pd(&ev, m.private_data);
  emit(c, ev);
}

void IbCm::Impl::rx_rej(const Mad& mad, const MadHeader&) {
  RejMsg m;
  if (decode_rej(mad.bytes.data(), &m) != MadError::kOk) {
    ++counters.dropped_bad_length;
    return;
  }
  Conn* c = nullptr;
  if (m.reason == static_cast<uint16_t>(RejReason::kTimeout) && m.ari_length >= 8) {
    uint64_t guid = 0;  // cm_acquire_rejected_id: the ARI names the peer's CA
    for (int i = 0; i < 8; ++i) guid = (guid << 8) | m.ari[i];
    if (auto it = remote_ids.find({guid, m.local_comm_id}); it != remote_ids.end()) c = it->second;
  }
  if (!c) {
    // A REJ of our REQ may not know the peer's ID yet (0, or a new one); any
    // other REJ must name both IDs of the connection.
    c = by_local_id(m.remote_comm_id);
    const bool req_pending = c && (c->state == CmState::kReqSent || c->state == CmState::kMraReqRcvd);
    const bool ids_ok = c && (c->remote_id == m.local_comm_id ||
                              (req_pending && m.message_rejected == CmMsgKind::kReq &&
                               (c->remote_id == 0 || m.local_comm_id == 0)));
    if (!ids_ok) c = nullptr;
  }
  if (!c || c->peer_gid != mad.peer.gid || c->state == CmState::kListen) {
    ++counters.dropped_no_match;
    return;
  }
  const bool stale = m.reason == static_cast<uint16_t>(RejReason::kStaleConn);
  switch (c->state) {
    case CmState::kReqSent: case CmState::kMraReqRcvd:
    case CmState::kRepSent: case CmState::kMraRepRcvd:
    case CmState::kReqRcvd: case CmState::kMraReqSent:
      if (stale) {
        enter_timewait(c);
      } else {
        reset_to_idle(c);
      }
      break;
    case CmState::kDreqSent: case CmState::kRepRcvd:
    case CmState::kMraRepSent: case CmState::kEstablished:
      enter_timewait(c);
      break;
    default:
      return;  // a late REJ (timewait, idle): nothing left to tear down
  }
  CmEvent ev;
  ev.type = CmEventType::kRejReceived;
  ev.peer = mad.peer;
  ev.rej_reason = static_cast<RejReason>(m.reason);
  ev.ari_len = m.ari_length;
  ev.ari = m.ari;
  event_pd(&ev, m.private_data);
  emit(c, ev);
}

void IbCm::Impl::rx_rep(const Mad& mad, const MadHeader&) {
  RepMsg r;
  if (decode_rep(mad.bytes.data(), &r) != MadError::kOk) {
    ++counters.dropped_bad_length;
    return;
  }
  Conn* c = match(mad, r.remote_comm_id, 0, false);
  if (!c) return;
  const bool same_peer = c->remote_id == r.local_comm_id;
  switch (c->state) {
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:
      break;
    case CmState::kEstablished:  // our RTU was lost: again (cm_dup_rep_handler)
      if (same_peer && c->rtu_sent) send(c->rtu_mad);
      return;
    case CmState::kMraRepSent:
      if (same_peer && c->mra_sent) send(c->mra_mad);
      return;
    case CmState::kRepRcvd:  // its user has not answered yet: hold the peer off
      if (same_peer) hold_off(c, CmMsgKind::kRep);
      return;
    default:
      ++counters.dropped_no_match;
      return;
  }
  if (c->remote_id != 0 && !same_peer) {  // an MRA named another peer ID
    ++counters.dropped_no_match;
    return;
  }
  disarm(c);
  c->remote_id = r.local_comm_id;
  c->remote_ca_guid = r.local_ca_guid;
  c->remote_qpn = r.local_qpn;
  insert_remote(c);
  c->state = CmState::kRepRcvd;
  CmEvent ev;
  ev.type = CmEventType::kRepReceived;
  ev.peer = mad.peer;
  CmRepParams& p = ev.rep;
  p.qpn = r.local_qpn;
  p.starting_psn = r.starting_psn;
  p.responder_resources = r.responder_resources;
  p.initiator_depth = r.initiator_depth;
  p.target_ack_delay = r.target_ack_delay;
  p.failover_accepted = r.failover_accepted;
  p.rnr_retry_count = r.rnr_retry_count;
  p.flow_control = r.flow_control;
  p.srq = r.srq;
  p.private_data_len = kRepPrivateData;
  p.private_data = r.private_data;
  emit(c, ev);
}

void IbCm::Impl::rx_rtu(const Mad& mad, const MadHeader&) {
  RtuMsg r;
  decode_rtu(mad.bytes.data(), &r);
  Conn* c = match(mad, r.remote_comm_id, r.local_comm_id, true);
  if (!c) return;
  if (c->state != CmState::kRepSent && c->state != CmState::kMraRepRcvd) return;  // duplicate
  disarm(c);
  c->state = CmState::kEstablished;
  CmEvent ev;
  ev.type = CmEventType::kRtuReceived;
  ev.peer = mad.peer;
  event_pd(&ev, r.private_data);
  emit(c, ev);
}

}  // namespace burst::cm
