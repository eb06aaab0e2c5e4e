/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IbCm: received MADs of disconnection (DREQ, DREP) and of SIDR (SIDR_REQ,
// SIDR_REP). The model is cm.c's cm_dreq_handler, cm_sidr_req_handler...
#include <cstring>

#include "cm/ib_cm_impl.h"

namespace burst::cm {

void IbCm::Impl::rx_dreq(const Mad& mad, const MadHeader& h) {
  DreqMsg d;
  decode_dreq(mad.bytes.data(), &d);
  Conn* c = by_local_id(d.remote_comm_id);
  if (!c || c->state == CmState::kListen || c->remote_id != d.local_comm_id ||
      c->peer_gid != mad.peer.gid || d.remote_qpn != c->local_qpn) {
    ++counters.dropped_no_match;  // forged or long gone: no DREP, nothing torn down
    return;
  }
  switch (c->state) {
    case CmState::kRepSent:     // our REP's RTU was lost, the peer is done already
    case CmState::kMraRepRcvd:
    case CmState::kEstablished:
    case CmState::kDreqSent:    // DREQs crossed: both answer, both reach timewait
      break;
    case CmState::kTimewait: {  // our DREP was lost: again, with this DREQ's TID
      c->tid = h.tid;
      send(build_rtu_drep(*c, CmAttr::kDrep, nullptr, 0));
      return;
    }
    default:
      return;  // duplicate (kDreqRcvd) or not connected yet
  }
  disarm(c);
  c->state = CmState::kDreqRcvd;
  c->tid = h.tid;
  if (c->handle == kNoCmHandle) {  // destroyed while its DREQ is retried: nobody else answers
    send(build_rtu_drep(*c, CmAttr::kDrep, nullptr, 0));
    enter_timewait(c);
    return;
  }
  CmEvent ev;
  ev.type = CmEventType::kDreqReceived;
  ev.peer = mad.peer;
  std::memcpy(ev.private_data.data(), d.private_data.data(), kDreqPrivateData);
  ev.private_data_len = kDreqPrivateData;
  emit(c, ev);
}

void IbCm::Impl::rx_drep(const Mad& mad, const MadHeader&) {
  DrepMsg d;
  decode_rtu(mad.bytes.data(), &d);
  Conn* c = match(mad, d.remote_comm_id, d.local_comm_id, true);
  if (!c) return;
  if (c->state != CmState::kDreqSent && c->state != CmState::kDreqRcvd) return;  // duplicate
  disarm(c);
  enter_timewait(c);
  CmEvent ev;
  ev.type = CmEventType::kDrepReceived;
  ev.peer = mad.peer;
  ev.private_data = d.private_data;
  ev.private_data_len = kDrepPrivateData;
  emit(c, ev);
}

void IbCm::Impl::rx_sidr_req(const Mad& mad, const MadHeader& h) {
  SidrReqMsg r;
  decode_sidr_req(mad.bytes.data(), &r);
  const std::pair<Gid, uint32_t> key{mad.peer.gid, r.request_id};
  if (remote_sidr.count(key)) {  // retransmitted while its user decides
    ++counters.duplicate_req;
    return;
  }
  Conn* l = find_listen(r.service_id);
  if (!l) {  // cm_sidr_req_handler: IB_SIDR_UNSUPPORTED
    ++counters.rej_sent_no_listener;
    answer_sidr(mad, r, h.tid, SidrStatus::kUnsupported);
    return;
  }
  Conn* c = conns.size() < kMaxPassiveIds ? new_conn(l->context, true) : nullptr;
  if (!c) {
    ++counters.rej_sent_no_resources;
    answer_sidr(mad, r, h.tid, SidrStatus::kReject);
    return;
  }
  c->state = CmState::kSidrReqRcvd;
  c->remote_id = r.request_id;
  c->service_id = r.service_id;
  c->tid = h.tid;
  c->reply_peer = reply_to(mad.peer);
  c->peer_gid = mad.peer.gid;
  c->path.dgid = mad.peer.gid;
  c->path.dmac = mad.peer.mac;
  c->path.sgid_index = mad.peer.sgid_index;
  c->path.traffic_class = mad.peer.traffic_class;
  c->path.hop_limit = c->reply_peer.hop_limit;
  c->path.pkey = r.pkey;
  c->in_remote_sidr = remote_sidr.emplace(key, c).second;
  CmEvent ev;
  ev.type = CmEventType::kSidrReqReceived;
  ev.listen_handle = l->handle;
  ev.peer = mad.peer;
  ev.sidr_req.path = c->path;
  ev.sidr_req.service_id = r.service_id;
  ev.sidr_req.private_data_len = kSidrReqPrivateData;
  ev.sidr_req.private_data = r.private_data;
  emit(c, ev);
}

void IbCm::Impl::rx_sidr_rep(const Mad& mad, const MadHeader&) {
  SidrRepMsg r;
  if (decode_sidr_rep(mad.bytes.data(), &r) != MadError::kOk) {
    ++counters.dropped_bad_length;
    return;
  }
  Conn* c = match(mad, r.request_id, 0, false);
  if (!c) return;
  if (c->state != CmState::kSidrReqSent) return;  // duplicate
  reset_to_idle(c);
  CmEvent ev;
  ev.type = CmEventType::kSidrRepReceived;
  ev.peer = mad.peer;
  CmSidrRepParams& p = ev.sidr_rep;
  p.status = static_cast<SidrStatus>(r.status);
  p.qpn = r.qpn;
  p.qkey = r.qkey;
  p.info_len = r.info_length;
  p.info = r.info;
  p.private_data_len = kSidrRepPrivateData;
  p.private_data = r.private_data;
  emit(c, ev);
}

}  // namespace burst::cm
