/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// CM MAD codec: the field table of IBA vol. 1 ch. 12.6 (tables 106-120) and the
// encoders/decoders over it (cm/mad.h).
#include "cm/mad.h"

#include <cstring>

namespace burst::cm {
namespace {

constexpr uint16_t kData = kMadHeaderSize;  // CM attribute data starts after the MAD header

// The high `bits` of a `size`-byte container at data offset `off`.
constexpr MadField hi(uint16_t off, uint8_t size, uint8_t bits) {
  return MadField{static_cast<uint16_t>(kData + off), size, static_cast<uint8_t>(size * 8 - bits), bits};
}
constexpr MadField u64(uint16_t off) { return hi(off, 8, 64); }
constexpr MadField u32(uint16_t off) { return hi(off, 4, 32); }
constexpr MadField u24(uint16_t off) { return hi(off, 4, 24); }  // 24 bits, then a byte of their own
constexpr MadField u16(uint16_t off) { return hi(off, 2, 16); }
// `bits` bits of the byte at data offset `off`, starting `msb` bits below its MSB.
constexpr MadField b8(uint16_t off, uint8_t msb, uint8_t bits) {
  return MadField{static_cast<uint16_t>(kData + off), 1, static_cast<uint8_t>(8 - msb - bits), bits};
}
constexpr uint16_t at(uint16_t off) { return static_cast<uint16_t>(kData + off); }

// MAD common header (IBA 13.4.3).
constexpr MadField kBaseVersion{0, 1, 0, 8}, kMgmtClass{1, 1, 0, 8}, kClassVersion{2, 1, 0, 8},
    kMethod{3, 1, 0, 8}, kStatus{4, 2, 0, 16}, kClassSpecific{6, 2, 0, 16}, kTid{8, 8, 0, 64},
    kAttrId{16, 2, 0, 16}, kAttrMod{20, 4, 0, 32};

// Table 106 REQ.
constexpr MadField kReqLocalCommId = u32(0), kReqServiceId = u64(8), kReqLocalCaGuid = u64(16),
    kReqLocalQkey = u32(28), kReqLocalQpn = u24(32), kReqResponderResources = b8(35, 0, 8),
    kReqLocalEecn = u24(36), kReqInitiatorDepth = b8(39, 0, 8), kReqRemoteEecn = u24(40),
    kReqRemoteCmTimeout = b8(43, 0, 5), kReqTransport = b8(43, 5, 2), kReqFlowControl = b8(43, 7, 1),
    kReqStartingPsn = u24(44), kReqLocalCmTimeout = b8(47, 0, 5), kReqRetryCount = b8(47, 5, 3),
    kReqPkey = u16(48), kReqMtu = b8(50, 0, 4), kReqRdcExists = b8(50, 4, 1),
    kReqRnrRetry = b8(50, 5, 3), kReqMaxCmRetries = b8(51, 0, 4), kReqSrq = b8(51, 4, 1),
    kReqExtTransport = b8(51, 5, 3), kReqSap = b8(139, 5, 1);
constexpr uint16_t kReqPrimaryPath = 52, kReqAlternatePath = 96, kReqPathSize = 44;
constexpr uint16_t kReqPrivate = at(140);
// Fields of one path, relative to its start.
constexpr MadField path_field(uint16_t base, MadField f) {
  return MadField{static_cast<uint16_t>(f.offset + base), f.size, f.shift, f.bits};
}
constexpr MadField kPathLocalLid = u16(0), kPathRemoteLid = u16(2), kPathFlowLabel = hi(36, 4, 20),
    kPathRate = b8(39, 2, 6), kPathTrafficClass = b8(40, 0, 8), kPathHopLimit = b8(41, 0, 8),
    kPathSl = b8(42, 0, 4), kPathSubnetLocal = b8(42, 4, 1), kPathAckTimeout = b8(43, 0, 5);
constexpr uint16_t kPathLocalGid = 4, kPathRemoteGid = 20;

// Table 107 MRA, 108 REJ.
constexpr MadField kMraLocalCommId = u32(0), kMraRemoteCommId = u32(4), kMraMessage = b8(8, 0, 2),
    kMraServiceTimeout = b8(9, 0, 5);
constexpr uint16_t kMraPrivate = at(10);
constexpr MadField kRejLocalCommId = u32(0), kRejRemoteCommId = u32(4), kRejMessage = b8(8, 0, 2),
    kRejAriLenF = b8(9, 0, 7), kRejReason = u16(10);
constexpr uint16_t kRejAri = at(12), kRejPrivate = at(84);

// Table 110 REP, 111 RTU, 112 DREQ, 113 DREP.
constexpr MadField kRepLocalCommId = u32(0), kRepRemoteCommId = u32(4), kRepLocalQkey = u32(8),
    kRepLocalQpn = u24(12), kRepLocalEecn = u24(16), kRepStartingPsn = u24(20),
    kRepResponderResources = b8(24, 0, 8), kRepInitiatorDepth = b8(25, 0, 8),
    kRepTargetAckDelay = b8(26, 0, 5), kRepFailover = b8(26, 5, 2), kRepFlowControl = b8(26, 7, 1),
    kRepRnrRetry = b8(27, 0, 3), kRepSrq = b8(27, 3, 1), kRepLocalCaGuid = u64(28);
constexpr uint16_t kRepPrivate = at(36);
constexpr MadField kRtuLocalCommId = u32(0), kRtuRemoteCommId = u32(4);
constexpr uint16_t kRtuPrivate = at(8);
constexpr MadField kDreqRemoteQpn = u24(8);
constexpr uint16_t kDreqPrivate = at(12);

// Table 119 SIDR_REQ, 120 SIDR_REP.
constexpr MadField kSidrReqRequestId = u32(0), kSidrReqPkey = u16(4), kSidrReqServiceId = u64(8);
constexpr uint16_t kSidrReqPrivate = at(16);
constexpr MadField kSidrRepRequestId = u32(0), kSidrRepStatus = b8(4, 0, 8),
    kSidrRepInfoLenF = b8(5, 0, 8), kSidrRepQpn = u24(8), kSidrRepServiceId = u64(12),
    kSidrRepQkey = u32(20);
constexpr uint16_t kSidrRepInfo = at(24), kSidrRepPrivate = at(96);

// Every private data area runs to the end of the MAD (IBA table 99).
static_assert(kReqPrivate + kReqPrivateData == kMadSize);
static_assert(kMraPrivate + kMraPrivateData == kMadSize);
static_assert(kRejPrivate + kRejPrivateData == kMadSize && kRejAri + kRejAriLength == kRejPrivate);
static_assert(kRepPrivate + kRepPrivateData == kMadSize);
static_assert(kRtuPrivate + kRtuPrivateData == kMadSize);
static_assert(kDreqPrivate + kDreqPrivateData == kMadSize);
static_assert(kSidrReqPrivate + kSidrReqPrivateData == kMadSize);
static_assert(kSidrRepPrivate + kSidrRepPrivateData == kMadSize &&
              kSidrRepInfo + kSidrRepInfoLength == kSidrRepPrivate);
static_assert(kReqPrimaryPath + kReqPathSize == kReqAlternatePath &&
              at(kReqAlternatePath + kReqPathSize) == kReqPrivate);
static_assert(kReqSap.offset == path_field(kReqAlternatePath, kPathAckTimeout).offset);

constexpr MadField kFieldsInRange[] = {kReqSap, kSidrRepQkey, kRepLocalCaGuid, kRejReason};
constexpr bool fields_in_mad() {
  for (const MadField& f : kFieldsInRange)
    if (f.offset + f.size > kMadSize || f.shift + f.bits > f.size * 8) return false;
  return true;
}
static_assert(fields_in_mad());

uint64_t load_be(const uint8_t* p, uint8_t size) {
  uint64_t v = 0;
  for (uint8_t i = 0; i < size; ++i) v = (v << 8) | p[i];
  return v;
}
void store_be(uint8_t* p, uint8_t size, uint64_t v) {
  for (int i = size - 1; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}
uint64_t mask_of(uint8_t bits) { return bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1; }

template <size_t N>
void get_bytes(const uint8_t* mad, uint16_t off, std::array<uint8_t, N>* out) {
  std::memcpy(out->data(), mad + off, N);
}
template <size_t N>
void put_bytes(uint8_t* mad, uint16_t off, const std::array<uint8_t, N>& in) {
  std::memcpy(mad + off, in.data(), N);
}

void get_path(const uint8_t* mad, uint16_t base, ReqPathFields* p) {
  auto g = [&](MadField f) { return mad_get(mad, path_field(base, f)); };
  p->local_lid = static_cast<uint16_t>(g(kPathLocalLid));
  p->remote_lid = static_cast<uint16_t>(g(kPathRemoteLid));
  std::memcpy(p->local_gid.data(), mad + at(base + kPathLocalGid), 16);
  std::memcpy(p->remote_gid.data(), mad + at(base + kPathRemoteGid), 16);
  p->flow_label = static_cast<uint32_t>(g(kPathFlowLabel));
  p->packet_rate = static_cast<uint8_t>(g(kPathRate));
  p->traffic_class = static_cast<uint8_t>(g(kPathTrafficClass));
  p->hop_limit = static_cast<uint8_t>(g(kPathHopLimit));
  p->sl = static_cast<uint8_t>(g(kPathSl));
  p->subnet_local = g(kPathSubnetLocal) != 0;
  p->local_ack_timeout = static_cast<uint8_t>(g(kPathAckTimeout));
}

void put_path(uint8_t* mad, uint16_t base, const ReqPathFields& p) {
  auto s = [&](MadField f, uint64_t v) { mad_put(mad, path_field(base, f), v); };
  s(kPathLocalLid, p.local_lid);
  s(kPathRemoteLid, p.remote_lid);
  std::memcpy(mad + at(base + kPathLocalGid), p.local_gid.data(), 16);
  std::memcpy(mad + at(base + kPathRemoteGid), p.remote_gid.data(), 16);
  s(kPathFlowLabel, p.flow_label);
  s(kPathRate, p.packet_rate);
  s(kPathTrafficClass, p.traffic_class);
  s(kPathHopLimit, p.hop_limit);
  s(kPathSl, p.sl);
  s(kPathSubnetLocal, p.subnet_local);
  s(kPathAckTimeout, p.local_ack_timeout);
}

bool is_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != 0) return false;
  return true;
}

}  // namespace

const char* mad_error_name(MadError e) {
  switch (e) {
    case MadError::kOk: return "ok";
    case MadError::kBadBaseVersion: return "bad base version";
    case MadError::kBadClass: return "not the CM class";
    case MadError::kBadClassVersion: return "bad CM class version";
    case MadError::kBadMethod: return "bad method for the attribute";
    case MadError::kUnknownAttr: return "unknown attribute";
    case MadError::kBadField: return "field out of range";
  }
  return "?";
}

uint64_t mad_get(const uint8_t* mad, MadField f) {
  return (load_be(mad + f.offset, f.size) >> f.shift) & mask_of(f.bits);
}

void mad_put(uint8_t* mad, MadField f, uint64_t value) {
  const uint64_t mask = mask_of(f.bits) << f.shift;
  const uint64_t old = load_be(mad + f.offset, f.size);
  store_be(mad + f.offset, f.size, (old & ~mask) | ((value << f.shift) & mask));
}

uint64_t iba_time_ns(uint8_t code) {
  return uint64_t{4096} << (code > 31 ? 31 : code);
}

MadError decode_header(const uint8_t* mad, MadHeader* out) {
  out->base_version = static_cast<uint8_t>(mad_get(mad, kBaseVersion));
  out->mgmt_class = static_cast<uint8_t>(mad_get(mad, kMgmtClass));
  out->class_version = static_cast<uint8_t>(mad_get(mad, kClassVersion));
  out->method = static_cast<uint8_t>(mad_get(mad, kMethod));
  out->status = static_cast<uint16_t>(mad_get(mad, kStatus));
  out->class_specific = static_cast<uint16_t>(mad_get(mad, kClassSpecific));
  out->tid = mad_get(mad, kTid);
  out->attr_id = static_cast<uint16_t>(mad_get(mad, kAttrId));
  out->attr_mod = static_cast<uint32_t>(mad_get(mad, kAttrMod));
  if (out->base_version != kMadBaseVersion) return MadError::kBadBaseVersion;
  if (out->mgmt_class != kMgmtClassCm) return MadError::kBadClass;
  if (out->class_version != kCmClassVersion) return MadError::kBadClassVersion;
  const auto attr = static_cast<CmAttr>(out->attr_id);
  const auto method = static_cast<MadMethod>(out->method);
  if (attr == CmAttr::kClassPortInfo)
    return method == MadMethod::kGet || method == MadMethod::kSet || method == MadMethod::kGetResp
               ? MadError::kOk : MadError::kBadMethod;
  if (out->attr_id < static_cast<uint16_t>(CmAttr::kReq) ||
      out->attr_id > static_cast<uint16_t>(CmAttr::kApr))
    return MadError::kUnknownAttr;
  return method == MadMethod::kSend ? MadError::kOk : MadError::kBadMethod;
}

void encode_header(const MadHeader& h, uint8_t* mad) {
  std::memset(mad, 0, kMadSize);
  mad_put(mad, kBaseVersion, h.base_version);
  mad_put(mad, kMgmtClass, h.mgmt_class);
  mad_put(mad, kClassVersion, h.class_version);
  mad_put(mad, kMethod, h.method);
  mad_put(mad, kStatus, h.status);
  mad_put(mad, kClassSpecific, h.class_specific);
  mad_put(mad, kTid, h.tid);
  mad_put(mad, kAttrId, h.attr_id);
  mad_put(mad, kAttrMod, h.attr_mod);
}

MadError decode_req(const uint8_t* mad, ReqMsg* m) {
  auto g = [&](MadField f) { return mad_get(mad, f); };
  m->local_comm_id = static_cast<uint32_t>(g(kReqLocalCommId));
  m->service_id = g(kReqServiceId);
  m->local_ca_guid = g(kReqLocalCaGuid);
  m->local_qkey = static_cast<uint32_t>(g(kReqLocalQkey));
  m->local_qpn = static_cast<uint32_t>(g(kReqLocalQpn));
  m->responder_resources = static_cast<uint8_t>(g(kReqResponderResources));
  m->local_eecn = static_cast<uint32_t>(g(kReqLocalEecn));
  m->initiator_depth = static_cast<uint8_t>(g(kReqInitiatorDepth));
  m->remote_eecn = static_cast<uint32_t>(g(kReqRemoteEecn));
  m->remote_cm_response_timeout = static_cast<uint8_t>(g(kReqRemoteCmTimeout));
  m->transport_type = static_cast<uint8_t>(g(kReqTransport));
  m->flow_control = g(kReqFlowControl) != 0;
  m->starting_psn = static_cast<uint32_t>(g(kReqStartingPsn));
  m->local_cm_response_timeout = static_cast<uint8_t>(g(kReqLocalCmTimeout));
  m->retry_count = static_cast<uint8_t>(g(kReqRetryCount));
  m->pkey = static_cast<uint16_t>(g(kReqPkey));
  m->path_mtu = static_cast<uint8_t>(g(kReqMtu));
  m->rdc_exists = g(kReqRdcExists) != 0;
  m->rnr_retry_count = static_cast<uint8_t>(g(kReqRnrRetry));
  m->max_cm_retries = static_cast<uint8_t>(g(kReqMaxCmRetries));
  m->srq = g(kReqSrq) != 0;
  m->extended_transport = static_cast<uint8_t>(g(kReqExtTransport));
  get_path(mad, kReqPrimaryPath, &m->primary);
  get_path(mad, kReqAlternatePath, &m->alternate);
  m->has_alternate = !is_zero(mad + at(kReqAlternatePath), kReqPathSize);
  m->sap_supported = g(kReqSap) != 0;
  get_bytes(mad, kReqPrivate, &m->private_data);
  if (m->local_comm_id == 0) return MadError::kBadField;
  if (m->path_mtu < 1 || m->path_mtu > 5) return MadError::kBadField;  // IBA 256..4096
  return MadError::kOk;
}

void encode_req(const MadHeader& h, const ReqMsg& m, uint8_t* mad) {
  encode_header(h, mad);
  auto s = [&](MadField f, uint64_t v) { mad_put(mad, f, v); };
  s(kReqLocalCommId, m.local_comm_id);
  s(kReqServiceId, m.service_id);
  s(kReqLocalCaGuid, m.local_ca_guid);
  s(kReqLocalQkey, m.local_qkey);
  s(kReqLocalQpn, m.local_qpn);
  s(kReqResponderResources, m.responder_resources);
  s(kReqLocalEecn, m.local_eecn);
  s(kReqInitiatorDepth, m.initiator_depth);
  s(kReqRemoteEecn, m.remote_eecn);
  s(kReqRemoteCmTimeout, m.remote_cm_response_timeout);
  s(kReqTransport, m.transport_type);
  s(kReqFlowControl, m.flow_control);
  s(kReqStartingPsn, m.starting_psn);
  s(kReqLocalCmTimeout, m.local_cm_response_timeout);
  s(kReqRetryCount, m.retry_count);
  s(kReqPkey, m.pkey);
  s(kReqMtu, m.path_mtu);
  s(kReqRdcExists, m.rdc_exists);
  s(kReqRnrRetry, m.rnr_retry_count);
  s(kReqMaxCmRetries, m.max_cm_retries);
  s(kReqSrq, m.srq);
  s(kReqExtTransport, m.extended_transport);
  put_path(mad, kReqPrimaryPath, m.primary);
  if (m.has_alternate) put_path(mad, kReqAlternatePath, m.alternate);
  s(kReqSap, m.sap_supported);
  put_bytes(mad, kReqPrivate, m.private_data);
}

MadError decode_mra(const uint8_t* mad, MraMsg* m) {
  m->local_comm_id = static_cast<uint32_t>(mad_get(mad, kMraLocalCommId));
  m->remote_comm_id = static_cast<uint32_t>(mad_get(mad, kMraRemoteCommId));
  const uint64_t kind = mad_get(mad, kMraMessage);
  m->message_mraed = static_cast<CmMsgKind>(kind);
  m->service_timeout = static_cast<uint8_t>(mad_get(mad, kMraServiceTimeout));
  get_bytes(mad, kMraPrivate, &m->private_data);
  return kind > 2 ? MadError::kBadField : MadError::kOk;
}

void encode_mra(const MadHeader& h, const MraMsg& m, uint8_t* mad) {
  encode_header(h, mad);
  mad_put(mad, kMraLocalCommId, m.local_comm_id);
  mad_put(mad, kMraRemoteCommId, m.remote_comm_id);
  mad_put(mad, kMraMessage, static_cast<uint8_t>(m.message_mraed));
  mad_put(mad, kMraServiceTimeout, m.service_timeout);
  put_bytes(mad, kMraPrivate, m.private_data);
}

MadError decode_rej(const uint8_t* mad, RejMsg* m) {
  m->local_comm_id = static_cast<uint32_t>(mad_get(mad, kRejLocalCommId));
  m->remote_comm_id = static_cast<uint32_t>(mad_get(mad, kRejRemoteCommId));
  const uint64_t kind = mad_get(mad, kRejMessage);
  m->message_rejected = static_cast<CmMsgKind>(kind);
  m->ari_length = static_cast<uint8_t>(mad_get(mad, kRejAriLenF));
  m->reason = static_cast<uint16_t>(mad_get(mad, kRejReason));
  std::memcpy(m->ari.data(), mad + kRejAri, kRejAriLength);
  get_bytes(mad, kRejPrivate, &m->private_data);
  if (kind > 2 || m->ari_length > kRejAriLength || m->reason == 0) return MadError::kBadField;
  return MadError::kOk;
}

void encode_rej(const MadHeader& h, const RejMsg& m, uint8_t* mad) {
  encode_header(h, mad);
  mad_put(mad, kRejLocalCommId, m.local_comm_id);
  mad_put(mad, kRejRemoteCommId, m.remote_comm_id);
  mad_put(mad, kRejMessage, static_cast<uint8_t>(m.message_rejected));
  mad_put(mad, kRejAriLenF, m.ari_length);
  mad_put(mad, kRejReason, m.reason);
  std::memcpy(mad + kRejAri, m.ari.data(), kRejAriLength);
  put_bytes(mad, kRejPrivate, m.private_data);
}

MadError decode_rep(const uint8_t* mad, RepMsg* m) {
  auto g = [&](MadField f) { return mad_get(mad, f); };
  m->local_comm_id = static_cast<uint32_t>(g(kRepLocalCommId));
  m->remote_comm_id = static_cast<uint32_t>(g(kRepRemoteCommId));
  m->local_qkey = static_cast<uint32_t>(g(kRepLocalQkey));
  m->local_qpn = static_cast<uint32_t>(g(kRepLocalQpn));
  m->local_eecn = static_cast<uint32_t>(g(kRepLocalEecn));
  m->starting_psn = static_cast<uint32_t>(g(kRepStartingPsn));
  m->responder_resources = static_cast<uint8_t>(g(kRepResponderResources));
  m->initiator_depth = static_cast<uint8_t>(g(kRepInitiatorDepth));
  m->target_ack_delay = static_cast<uint8_t>(g(kRepTargetAckDelay));
  m->failover_accepted = static_cast<uint8_t>(g(kRepFailover));
  m->flow_control = g(kRepFlowControl) != 0;
  m->rnr_retry_count = static_cast<uint8_t>(g(kRepRnrRetry));
  m->srq = g(kRepSrq) != 0;
  m->local_ca_guid = g(kRepLocalCaGuid);
  get_bytes(mad, kRepPrivate, &m->private_data);
  if (m->local_comm_id == 0 || m->failover_accepted == 3) return MadError::kBadField;
  return MadError::kOk;
}

void encode_rep(const MadHeader& h, const RepMsg& m, uint8_t* mad) {
  encode_header(h, mad);
  auto s = [&](MadField f, uint64_t v) { mad_put(mad, f, v); };
  s(kRepLocalCommId, m.local_comm_id);
  s(kRepRemoteCommId, m.remote_comm_id);
  s(kRepLocalQkey, m.local_qkey);
  s(kRepLocalQpn, m.local_qpn);
  s(kRepLocalEecn, m.local_eecn);
  s(kRepStartingPsn, m.starting_psn);
  s(kRepResponderResources, m.responder_resources);
  s(kRepInitiatorDepth, m.initiator_depth);
  s(kRepTargetAckDelay, m.target_ack_delay);
  s(kRepFailover, m.failover_accepted);
  s(kRepFlowControl, m.flow_control);
  s(kRepRnrRetry, m.rnr_retry_count);
  s(kRepSrq, m.srq);
  s(kRepLocalCaGuid, m.local_ca_guid);
  put_bytes(mad, kRepPrivate, m.private_data);
}

MadError decode_rtu(const uint8_t* mad, RtuMsg* m) {
  m->local_comm_id = static_cast<uint32_t>(mad_get(mad, kRtuLocalCommId));
  m->remote_comm_id = static_cast<uint32_t>(mad_get(mad, kRtuRemoteCommId));
  get_bytes(mad, kRtuPrivate, &m->private_data);
  return MadError::kOk;
}

void encode_rtu(const MadHeader& h, const RtuMsg& m, uint8_t* mad) {
  encode_header(h, mad);
  mad_put(mad, kRtuLocalCommId, m.local_comm_id);
  mad_put(mad, kRtuRemoteCommId, m.remote_comm_id);
  put_bytes(mad, kRtuPrivate, m.private_data);
}

MadError decode_dreq(const uint8_t* mad, DreqMsg* m) {
  m->local_comm_id = static_cast<uint32_t>(mad_get(mad, kRtuLocalCommId));
  m->remote_comm_id = static_cast<uint32_t>(mad_get(mad, kRtuRemoteCommId));
  m->remote_qpn = static_cast<uint32_t>(mad_get(mad, kDreqRemoteQpn));
  get_bytes(mad, kDreqPrivate, &m->private_data);
  return MadError::kOk;
}

void encode_dreq(const MadHeader& h, const DreqMsg& m, uint8_t* mad) {
  encode_header(h, mad);
  mad_put(mad, kRtuLocalCommId, m.local_comm_id);
  mad_put(mad, kRtuRemoteCommId, m.remote_comm_id);
  mad_put(mad, kDreqRemoteQpn, m.remote_qpn);
  put_bytes(mad, kDreqPrivate, m.private_data);
}

MadError decode_sidr_req(const uint8_t* mad, SidrReqMsg* m) {
  m->request_id = static_cast<uint32_t>(mad_get(mad, kSidrReqRequestId));
  m->pkey = static_cast<uint16_t>(mad_get(mad, kSidrReqPkey));
  m->service_id = mad_get(mad, kSidrReqServiceId);
  get_bytes(mad, kSidrReqPrivate, &m->private_data);
  return MadError::kOk;
}

void encode_sidr_req(const MadHeader& h, const SidrReqMsg& m, uint8_t* mad) {
  encode_header(h, mad);
  mad_put(mad, kSidrReqRequestId, m.request_id);
  mad_put(mad, kSidrReqPkey, m.pkey);
  mad_put(mad, kSidrReqServiceId, m.service_id);
  put_bytes(mad, kSidrReqPrivate, m.private_data);
}

MadError decode_sidr_rep(const uint8_t* mad, SidrRepMsg* m) {
  m->request_id = static_cast<uint32_t>(mad_get(mad, kSidrRepRequestId));
  m->status = static_cast<uint8_t>(mad_get(mad, kSidrRepStatus));
  m->info_length = static_cast<uint8_t>(mad_get(mad, kSidrRepInfoLenF));
  m->qpn = static_cast<uint32_t>(mad_get(mad, kSidrRepQpn));
  m->service_id = mad_get(mad, kSidrRepServiceId);
  m->qkey = static_cast<uint32_t>(mad_get(mad, kSidrRepQkey));
  std::memcpy(m->info.data(), mad + kSidrRepInfo, kSidrRepInfoLength);
  get_bytes(mad, kSidrRepPrivate, &m->private_data);
  if (m->status > static_cast<uint8_t>(SidrStatus::kUnsupportedVersion) ||
      m->info_length > kSidrRepInfoLength)
    return MadError::kBadField;
  return MadError::kOk;
}

void encode_sidr_rep(const MadHeader& h, const SidrRepMsg& m, uint8_t* mad) {
  encode_header(h, mad);
  mad_put(mad, kSidrRepRequestId, m.request_id);
  mad_put(mad, kSidrRepStatus, m.status);
  mad_put(mad, kSidrRepInfoLenF, m.info_length);
  mad_put(mad, kSidrRepQpn, m.qpn);
  mad_put(mad, kSidrRepServiceId, m.service_id);
  mad_put(mad, kSidrRepQkey, m.qkey);
  std::memcpy(mad + kSidrRepInfo, m.info.data(), kSidrRepInfoLength);
  put_bytes(mad, kSidrRepPrivate, m.private_data);
}

}  // namespace burst::cm
