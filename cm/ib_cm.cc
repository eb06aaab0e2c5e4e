/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IbCm: ids, listens and the user's calls (cm/ib_cm.h). The transitions follow
// the kernel's ib_send_cm_* (drivers/infiniband/core/cm.c).
#include <cerrno>
#include <cstring>

#include "cm/ib_cm_impl.h"

namespace burst::cm {
namespace {

uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

bool pd_ok(const uint8_t* pd, uint8_t len, size_t max) { return len <= max && (len == 0 || pd); }

}  // namespace

IbCm::Impl::Impl(IbCmHost& h, uint64_t guid, uint64_t seed) : host(h), local_ca_guid(guid) {
  uint64_t s = seed;
  id_operand = static_cast<uint32_t>(splitmix64(&s));
  id_counter = static_cast<uint32_t>(splitmix64(&s));
}

Conn* IbCm::Impl::by_handle(CmHandle h) {
  auto it = handles.find(h);
  return it == handles.end() ? nullptr : it->second;
}

Conn* IbCm::Impl::by_local_id(uint32_t id) {
  auto it = conns.find(id);
  return it == conns.end() ? nullptr : it->second.get();
}

Conn* IbCm::Impl::new_conn(uint64_t context, bool with_handle) {
  if (conns.size() >= kMaxCmIds) return nullptr;
  auto c = std::make_unique<Conn>();
  do {  // never 0, never one still in use (timewaits included)
    c->local_id = ++id_counter ^ id_operand;
  } while (c->local_id == 0 || conns.count(c->local_id));
  c->context = context;
  if (with_handle) {
    while (next_handle == kNoCmHandle || handles.count(next_handle)) ++next_handle;
    c->handle = next_handle++;
    handles[c->handle] = c.get();
  }
  Conn* raw = c.get();
  conns[raw->local_id] = std::move(c);
  return raw;
}

void IbCm::Impl::unlink_remote(Conn* c) {
  if (c->in_remote_ids) remote_ids.erase({c->remote_ca_guid, c->remote_id});
  if (c->in_remote_qpns) remote_qpns.erase({c->remote_ca_guid, c->remote_qpn});
  if (c->in_remote_sidr) remote_sidr.erase({c->reply_peer.gid, c->remote_id});
  c->in_remote_ids = c->in_remote_qpns = c->in_remote_sidr = false;
}

void IbCm::Impl::insert_remote(Conn* c) {
  c->in_remote_ids = remote_ids.emplace(RemoteKey{c->remote_ca_guid, c->remote_id}, c).second;
  c->in_remote_qpns = remote_qpns.emplace(RemoteKey{c->remote_ca_guid, c->remote_qpn}, c).second;
}

void IbCm::Impl::forget(Conn* c) {
  disarm(c);
  unlink_remote(c);
  if (c->state == CmState::kListen) std::erase(listens, c);
  if (c->handle != kNoCmHandle) handles.erase(c->handle);
  conns.erase(c->local_id);
}

Conn* IbCm::Impl::find_listen(uint64_t service_id) {
  for (Conn* l : listens)
    if ((service_id & l->service_mask) == l->service_id) return l;
  return nullptr;
}

// As cm_destroy_id: what the state owes the peer, then the id is gone for its
// user; a connection that reaches timewait keeps its IDs until it ends. The
// MAD goes out last, when the tables are consistent again.
void IbCm::Impl::destroy(Conn* c) {
  Mad out;
  bool has_out = true;
  switch (c->state) {
    case CmState::kSidrReqRcvd: {
      SidrRepMsg m;
      m.request_id = c->remote_id;
      m.status = static_cast<uint8_t>(SidrStatus::kReject);
      m.service_id = c->service_id;
      MadHeader h;
      h.attr_id = static_cast<uint16_t>(CmAttr::kSidrRep);
      h.tid = c->tid;
      out = make(c->reply_peer);
      encode_sidr_rep(h, m, out.bytes.data());
      break;
    }
    case CmState::kReqSent:
    case CmState::kMraReqRcvd: {  // REJ timeout with our CA GUID as ARI (cm.c)
      uint8_t guid_be[8];
      for (int i = 0; i < 8; ++i) guid_be[i] = static_cast<uint8_t>(local_ca_guid >> (56 - 8 * i));
      out = build_rej(*c, CmMsgKind::kOther, RejReason::kTimeout, guid_be, 8, nullptr, 0);
      break;
    }
    case CmState::kReqRcvd:
    case CmState::kMraReqSent:
      out = build_rej(*c, CmMsgKind::kReq, RejReason::kConsumerReject, nullptr, 0, nullptr, 0);
      break;
    case CmState::kRepRcvd:
    case CmState::kMraRepSent:
      out = build_rej(*c, CmMsgKind::kRep, RejReason::kConsumerReject, nullptr, 0, nullptr, 0);
      break;
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      out = build_rej(*c, CmMsgKind::kOther, RejReason::kConsumerReject, nullptr, 0, nullptr, 0);
      enter_timewait(c);
      break;
    case CmState::kEstablished:  // the DREQ, retried as send_dreq's (below)
      c->tid = own_tid(*c);
      out = build_dreq(*c, nullptr, 0);
      c->state = CmState::kDreqSent;
      start_retry(c, out, c->peer_timeout_ns, c->max_cm_retries);
      break;
    case CmState::kDreqRcvd:
      out = build_rtu_drep(*c, CmAttr::kDrep, nullptr, 0);
      enter_timewait(c);
      break;
    case CmState::kDreqSent:
      // cm.c cancels the DREQ here and enters timewait: a lost DREQ then leaves
      // the peer connected for good (rping's server waits for DISCONNECTED
      // forever). Its retries go on instead until the DREP (or a DREQ, REJ, or
      // the retries' end) brings the id to its timewait.
      has_out = false;
      break;
    default:
      has_out = false;
      break;
  }
  handles.erase(c->handle);
  c->handle = kNoCmHandle;
  if (c->state != CmState::kTimewait && c->state != CmState::kDreqSent) forget(c);
  if (has_out) send(out);
}

IbCm::IbCm(IbCmHost& host, uint64_t local_ca_guid, uint64_t seed)
    : impl_(new Impl(host, local_ca_guid, seed)) {}
IbCm::~IbCm() { delete impl_; }

CmHandle IbCm::create_id(uint64_t context) {
  Conn* c = impl_->new_conn(context, true);
  return c ? c->handle : kNoCmHandle;
}

void IbCm::destroy_id(CmHandle handle) {
  if (Conn* c = impl_->by_handle(handle)) impl_->destroy(c);
}

void IbCm::drop_request(CmHandle handle) {
  Conn* c = impl_->by_handle(handle);
  if (!c) return;
  if (c->state != CmState::kReqRcvd && c->state != CmState::kMraReqSent) {
    impl_->destroy(c);
    return;
  }
  impl_->forget(c);  // its remote IDs go too: the retry is not a duplicate
}

int IbCm::listen(CmHandle handle, uint64_t service_id, uint64_t service_mask) {
  Conn* c = impl_->by_handle(handle);
  if (!c || c->state != CmState::kIdle) return EINVAL;
  if (service_mask == 0) service_mask = ~uint64_t{0};  // as ib_cm_listen
  service_id &= service_mask;
  for (Conn* l : impl_->listens)
    if (((l->service_id ^ service_id) & l->service_mask & service_mask) == 0) return EBUSY;
  c->state = CmState::kListen;
  c->service_id = service_id;
  c->service_mask = service_mask;
  impl_->listens.push_back(c);
  return 0;
}

int IbCm::send_req(CmHandle handle, const CmReqParams& p) {
  Conn* c = impl_->by_handle(handle);
  if (!c || c->state != CmState::kIdle) return EINVAL;
  if (p.private_data_len > kReqPrivateData || p.path.mtu < 1 || p.path.mtu > 5) return EINVAL;
  if (p.qp_type != CmQpType::kRc && p.qp_type != CmQpType::kUc && p.qp_type != CmQpType::kXrc)
    return EINVAL;
  c->path = p.path;
  c->peer_gid = p.path.dgid;
  c->service_id = p.service_id;
  c->local_qpn = p.qpn;
  c->max_cm_retries = p.max_cm_retries & 0x0F;
  c->peer_timeout_ns = response_period_ns(p.remote_cm_response_timeout, p.path.packet_life_time);
  c->timewait_ns = timewait_period_ns(p.local_cm_response_timeout, p.path.packet_life_time);
  c->tid = impl_->own_tid(*c);
  Mad m = impl_->build_req(c, p);
  c->state = CmState::kReqSent;
  impl_->start_retry(c, m, c->peer_timeout_ns, c->max_cm_retries);
  impl_->send(m);
  return 0;
}

int IbCm::send_rep(CmHandle handle, const CmRepParams& p) {
  Conn* c = impl_->by_handle(handle);
  if (!c || (c->state != CmState::kReqRcvd && c->state != CmState::kMraReqSent)) return EINVAL;
  if (p.private_data_len > kRepPrivateData) return EINVAL;
  c->local_qpn = p.qpn;
  Mad m = impl_->build_rep(*c, p);
  c->state = CmState::kRepSent;
  impl_->start_retry(c, m, c->peer_timeout_ns, c->max_cm_retries);
  impl_->send(m);
  return 0;
}

int IbCm::send_rtu(CmHandle handle, const uint8_t* pd, uint8_t len) {
  Conn* c = impl_->by_handle(handle);
  if (!c || (c->state != CmState::kRepRcvd && c->state != CmState::kMraRepSent)) return EINVAL;
  if (!pd_ok(pd, len, kRtuPrivateData)) return EINVAL;
  c->rtu_mad = impl_->build_rtu_drep(*c, CmAttr::kRtu, pd, len);
  c->rtu_sent = true;
  c->state = CmState::kEstablished;
  impl_->send(c->rtu_mad);
  return 0;
}

int IbCm::send_rej(CmHandle handle, RejReason reason, const uint8_t* ari, uint8_t ari_len,
                   const uint8_t* pd, uint8_t len) {
  Conn* c = impl_->by_handle(handle);
  if (!c || !pd_ok(pd, len, kRejPrivateData) || !pd_ok(ari, ari_len, kRejAriLength)) return EINVAL;
  CmMsgKind kind = CmMsgKind::kOther;
  bool timewait = false;
  switch (c->state) {  // as cm_send_rej_locked
    case CmState::kReqRcvd: case CmState::kMraReqSent: kind = CmMsgKind::kReq; break;
    case CmState::kRepRcvd: case CmState::kMraRepSent: kind = CmMsgKind::kRep; break;
    case CmState::kReqSent: case CmState::kMraReqRcvd: break;
    case CmState::kRepSent: case CmState::kMraRepRcvd: timewait = true; break;
    default: return EINVAL;
  }
  Mad m = impl_->build_rej(*c, kind, reason, ari, ari_len, pd, len);
  if (timewait) {
    impl_->enter_timewait(c);
  } else {
    impl_->reset_to_idle(c);
  }
  impl_->send(m);
  return 0;
}

int IbCm::send_mra(CmHandle handle, uint8_t service_timeout, const uint8_t* pd, uint8_t len) {
  Conn* c = impl_->by_handle(handle);
  if (!c || !pd_ok(pd, len, kMraPrivateData)) return EINVAL;
  CmMsgKind kind;
  if (c->state == CmState::kReqRcvd) {
    kind = CmMsgKind::kReq;
    c->state = CmState::kMraReqSent;
  } else if (c->state == CmState::kRepRcvd) {
    kind = CmMsgKind::kRep;
    c->state = CmState::kMraRepSent;
  } else {
    return EINVAL;
  }
  c->mra_mad = impl_->build_mra(*c, kind, service_timeout & 0x1F, pd, len);
  c->mra_sent = true;
  impl_->send(c->mra_mad);
  return 0;
}

int IbCm::send_dreq(CmHandle handle, const uint8_t* pd, uint8_t len) {
  Conn* c = impl_->by_handle(handle);
  if (!c || c->state != CmState::kEstablished) return EINVAL;
  if (!pd_ok(pd, len, kDreqPrivateData)) return EINVAL;
  c->tid = impl_->own_tid(*c);
  Mad m = impl_->build_dreq(*c, pd, len);
  c->state = CmState::kDreqSent;
  impl_->start_retry(c, m, c->peer_timeout_ns, c->max_cm_retries);
  impl_->send(m);
  return 0;
}

int IbCm::send_drep(CmHandle handle, const uint8_t* pd, uint8_t len) {
  Conn* c = impl_->by_handle(handle);
  if (!c || c->state != CmState::kDreqRcvd) return EINVAL;
  if (!pd_ok(pd, len, kDrepPrivateData)) return EINVAL;
  Mad m = impl_->build_rtu_drep(*c, CmAttr::kDrep, pd, len);
  impl_->enter_timewait(c);
  impl_->send(m);
  return 0;
}

// Delivers kUserEstablished at once (from inside this call).
int IbCm::establish(CmHandle handle) {
  Conn* c = impl_->by_handle(handle);
  if (!c) return EINVAL;
  if (c->state == CmState::kEstablished) return EISCONN;
  if (c->state != CmState::kRepSent && c->state != CmState::kMraRepRcvd) return EINVAL;
  impl_->disarm(c);
  c->state = CmState::kEstablished;
  CmEvent ev;
  ev.type = CmEventType::kUserEstablished;
  ev.peer = impl_->peer_of(*c);
  impl_->emit(c, ev);
  return 0;
}

int IbCm::send_sidr_req(CmHandle handle, const CmSidrReqParams& p) {
  Conn* c = impl_->by_handle(handle);
  if (!c || c->state != CmState::kIdle || p.private_data_len > kSidrReqPrivateData) return EINVAL;
  c->path = p.path;
  c->peer_gid = p.path.dgid;
  c->service_id = p.service_id;
  c->tid = impl_->own_tid(*c);
  SidrReqMsg m;
  m.request_id = c->local_id;
  m.pkey = p.path.pkey;
  m.service_id = p.service_id;
  std::memcpy(m.private_data.data(), p.private_data.data(), p.private_data_len);
  MadHeader h;
  h.attr_id = static_cast<uint16_t>(CmAttr::kSidrReq);
  h.tid = c->tid;
  Mad mad = impl_->make(impl_->peer_of(*c));
  encode_sidr_req(h, m, mad.bytes.data());
  c->state = CmState::kSidrReqSent;
  impl_->start_retry(c, mad, response_period_ns(kSidrResponseTimeout, p.path.packet_life_time),
                     p.max_cm_retries);
  impl_->send(mad);
  return 0;
}

int IbCm::send_sidr_rep(CmHandle handle, const CmSidrRepParams& p) {
  Conn* c = impl_->by_handle(handle);
  if (!c || c->state != CmState::kSidrReqRcvd) return EINVAL;
  if (p.private_data_len > kSidrRepPrivateData || p.info_len > kSidrRepInfoLength) return EINVAL;
  SidrRepMsg m;
  m.request_id = c->remote_id;
  m.status = static_cast<uint8_t>(p.status);
  m.info_length = p.info_len;
  m.qpn = p.qpn;
  m.service_id = c->service_id;
  m.qkey = p.qkey;
  std::memcpy(m.info.data(), p.info.data(), p.info_len);
  std::memcpy(m.private_data.data(), p.private_data.data(), p.private_data_len);
  MadHeader h;
  h.attr_id = static_cast<uint16_t>(CmAttr::kSidrRep);
  h.tid = c->tid;
  Mad mad = impl_->make(c->reply_peer);
  encode_sidr_rep(h, m, mad.bytes.data());
  impl_->reset_to_idle(c);
  impl_->send(mad);
  return 0;
}

const CmCounters& IbCm::counters() const { return impl_->counters; }
size_t IbCm::id_count() const { return impl_->conns.size(); }

}  // namespace burst::cm
