/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IbCm: building the MADs it sends (the kernel's cm_format_req / rep / rtu /
// rej / mra / dreq / drep, read as the model) and handing them to the host.
#include <cstring>

#include "cm/ib_cm_impl.h"

namespace burst::cm {
namespace {

MadHeader header(CmAttr attr, uint64_t tid) {
  MadHeader h;
  h.attr_id = static_cast<uint16_t>(attr);
  h.tid = tid;
  return h;
}

template <size_t N>
void copy_pd(std::array<uint8_t, N>* to, const uint8_t* pd, size_t len) {
  if (len) std::memcpy(to->data(), pd, len < N ? len : N);
}

}  // namespace

uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time) {
  int ack = packet_life_time + 1;  // a round trip
  if (ack >= ca_ack_delay) {
    ack += (ca_ack_delay >= ack - 1);
  } else {
    ack = ca_ack_delay + (ack >= ca_ack_delay - 1);
  }
  return static_cast<uint8_t>(ack < 31 ? ack : 31);
}

uint64_t response_period_ns(uint8_t response_timeout, uint8_t packet_life_time) {
  return iba_time_ns(response_timeout) + 2 * iba_time_ns(packet_life_time);
}

uint64_t timewait_period_ns(uint8_t our_response_timeout, uint8_t packet_life_time) {
  return iba_time_ns(cm_ack_timeout(kCaAckDelay, packet_life_time)) +
         2 * response_period_ns(our_response_timeout, packet_life_time);
}

// As cm_form_tid: the agent's half, then the local ID's bytes as the kernel
// (little-endian) reads its __be32 into a u64.
uint64_t IbCm::Impl::own_tid(const Conn& c) const {
  return (uint64_t{hi_tid} << 32) | __builtin_bswap32(c.local_id);
}

MadPeer IbCm::Impl::peer_of(const Conn& c) const {
  MadPeer p;
  p.gid = c.path.dgid;
  p.mac = c.path.dmac;
  p.remote_qpn = kGsiQpn;
  p.sgid_index = c.path.sgid_index;
  p.traffic_class = c.path.traffic_class;
  p.hop_limit = c.path.hop_limit;
  return p;
}

Mad IbCm::Impl::make(const MadPeer& peer) const {
  Mad m;
  m.peer = peer;
  m.peer.remote_qpn = kGsiQpn;
  return m;
}

// Where a reply to a MAD without a connection goes: its source, with a fresh
// hop limit (the received one is what was left of the sender's).
MadPeer IbCm::Impl::reply_to(const MadPeer& src) const {
  MadPeer p = src;
  p.remote_qpn = kGsiQpn;
  p.hop_limit = CmPath{}.hop_limit;
  return p;
}

void IbCm::Impl::send(const Mad& m) {
  if (host.send_mad(m)) ++counters.mads_sent;
}

void IbCm::Impl::emit(Conn* c, CmEvent& ev) {
  if (c->handle == kNoCmHandle) return;
  ev.context = c->context;
  host.cm_event(c->handle, ev);
}

Mad IbCm::Impl::build_req(Conn* c, const CmReqParams& p) {
  ReqMsg m;
  m.local_comm_id = c->local_id;
  m.service_id = p.service_id;
  m.local_ca_guid = local_ca_guid;
  m.local_qkey = p.qp_type == CmQpType::kXrc ? 0 : p.qkey;
  m.local_qpn = p.qpn & 0xFFFFFF;
  m.responder_resources = p.responder_resources;
  m.initiator_depth = p.initiator_depth;
  m.remote_cm_response_timeout = p.remote_cm_response_timeout & 0x1F;
  m.transport_type = p.qp_type == CmQpType::kXrc ? 3 : static_cast<uint8_t>(p.qp_type);
  m.extended_transport = p.qp_type == CmQpType::kXrc ? 1 : 0;
  m.flow_control = p.flow_control;
  m.starting_psn = p.starting_psn & 0xFFFFFF;
  m.local_cm_response_timeout = p.local_cm_response_timeout & 0x1F;
  m.retry_count = p.retry_count & 7;
  m.pkey = p.path.pkey;
  m.path_mtu = p.path.mtu;
  m.rnr_retry_count = p.rnr_retry_count & 7;
  m.max_cm_retries = p.max_cm_retries & 0x0F;
  m.srq = p.srq;
  m.primary.local_gid = p.path.sgid;
  m.primary.remote_gid = p.path.dgid;
  m.primary.flow_label = p.path.flow_label & 0xFFFFF;
  m.primary.packet_rate = p.path.rate & 0x3F;
  m.primary.traffic_class = p.path.traffic_class;
  m.primary.hop_limit = p.path.hop_limit;
  m.primary.sl = p.path.sl & 0x0F;
  m.primary.subnet_local = p.path.hop_limit <= 1;
  m.primary.local_ack_timeout = cm_ack_timeout(kCaAckDelay, p.path.packet_life_time);
  copy_pd(&m.private_data, p.private_data.data(), p.private_data_len);
  Mad mad = make(peer_of(*c));
  encode_req(header(CmAttr::kReq, c->tid), m, mad.bytes.data());
  return mad;
}

Mad IbCm::Impl::build_rep(const Conn& c, const CmRepParams& p) {
  RepMsg m;
  m.local_comm_id = c.local_id;
  m.remote_comm_id = c.remote_id;
  m.local_qpn = p.qpn & 0xFFFFFF;
  m.starting_psn = p.starting_psn & 0xFFFFFF;
  m.responder_resources = p.responder_resources;
  m.initiator_depth = p.initiator_depth;
  m.target_ack_delay = p.target_ack_delay & 0x1F;
  m.failover_accepted = p.failover_accepted & 3;
  m.flow_control = p.flow_control;
  m.rnr_retry_count = p.rnr_retry_count & 7;
  m.srq = p.srq;
  m.local_ca_guid = local_ca_guid;
  copy_pd(&m.private_data, p.private_data.data(), p.private_data_len);
  Mad mad = make(peer_of(c));
  encode_rep(header(CmAttr::kRep, c.tid), m, mad.bytes.data());
  return mad;
}

Mad IbCm::Impl::build_rtu_drep(const Conn& c, CmAttr attr, const uint8_t* pd, uint8_t len) {
  RtuMsg m;
  m.local_comm_id = c.local_id;
  m.remote_comm_id = c.remote_id;
  copy_pd(&m.private_data, pd, len);
  Mad mad = make(peer_of(c));
  encode_rtu(header(attr, c.tid), m, mad.bytes.data());
  return mad;
}

Mad IbCm::Impl::build_dreq(const Conn& c, const uint8_t* pd, uint8_t len) {
  DreqMsg m;
  m.local_comm_id = c.local_id;
  m.remote_comm_id = c.remote_id;
  m.remote_qpn = c.remote_qpn;
  copy_pd(&m.private_data, pd, len);
  Mad mad = make(peer_of(c));
  encode_dreq(header(CmAttr::kDreq, c.tid), m, mad.bytes.data());
  return mad;
}

Mad IbCm::Impl::build_mra(const Conn& c, CmMsgKind kind, uint8_t service_timeout,
                          const uint8_t* pd, uint8_t len) {
  MraMsg m;
  m.local_comm_id = c.local_id;
  m.remote_comm_id = c.remote_id;
  m.message_mraed = kind;
  m.service_timeout = service_timeout;
  copy_pd(&m.private_data, pd, len);
  Mad mad = make(peer_of(c));
  encode_mra(header(CmAttr::kMra, c.tid), m, mad.bytes.data());
  return mad;
}

// As cm_format_rej: a REQ not yet answered is rejected with local ID 0.
Mad IbCm::Impl::build_rej(const Conn& c, CmMsgKind kind, RejReason reason, const uint8_t* ari,
                          uint8_t ari_len, const uint8_t* pd, uint8_t len) {
  RejMsg m;
  m.local_comm_id = c.state == CmState::kReqRcvd ? 0 : c.local_id;
  m.remote_comm_id = c.remote_id;
  m.message_rejected = kind;
  m.reason = static_cast<uint16_t>(reason);
  m.ari_length = ari_len;
  copy_pd(&m.ari, ari, ari_len);
  copy_pd(&m.private_data, pd, len);
  Mad mad = make(peer_of(c));
  encode_rej(header(CmAttr::kRej, c.tid), m, mad.bytes.data());
  return mad;
}

// A REQ refused before any id exists for it (cm_issue_rej): to the MAD's source.
void IbCm::Impl::reject_unconnected(const Mad& req, const ReqMsg& r, uint64_t tid,
                                    RejReason reason) {
  RejMsg m;
  m.local_comm_id = 0;
  m.remote_comm_id = r.local_comm_id;
  m.message_rejected = CmMsgKind::kReq;
  m.reason = static_cast<uint16_t>(reason);
  Mad mad = make(reply_to(req.peer));
  encode_rej(header(CmAttr::kRej, tid), m, mad.bytes.data());
  send(mad);
}

void IbCm::Impl::answer_sidr(const Mad& req, const SidrReqMsg& r, uint64_t tid,
                             SidrStatus status) {
  SidrRepMsg m;
  m.request_id = r.request_id;
  m.status = static_cast<uint8_t>(status);
  m.service_id = r.service_id;
  Mad mad = make(reply_to(req.peer));
  encode_sidr_rep(header(CmAttr::kSidrRep, tid), m, mad.bytes.data());
  send(mad);
}

}  // namespace burst::cm
