/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The wire codec of CM MADs (IBA vol. 1 ch. 13.4 MAD header, ch. 12.6 CM
// messages): one decoded struct per attribute with every field of the IBA table,
// decode (validates what a peer could get wrong, returns a reason) and encode
// (the exact bytes the Linux CM writes: reserved bits zero).
//
// Field positions are a table (kReq*, kRep*...: offset from the MAD start of a
// big-endian container of 1/2/4/8 bytes, and the bits of the value in it),
// written from the IBA tables; the model is the kernel's ibta_vol1_c12.h.
// Reserved *bits* are ignored on receive (IBA: receivers ignore reserved
// fields); reserved *values* of enumerated fields are a decode error.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "cm/ib_cm.h"

namespace burst::cm {

inline constexpr uint8_t kMadBaseVersion = 1;
inline constexpr uint8_t kMgmtClassCm = 0x07;
inline constexpr uint8_t kCmClassVersion = 2;
inline constexpr size_t kMadHeaderSize = 24;

enum class MadMethod : uint8_t {
  kGet = 0x01, kSet = 0x02, kSend = 0x03, kGetResp = 0x81,
};

enum class CmAttr : uint16_t {
  kClassPortInfo = 0x0001,
  kReq = 0x0010, kMra = 0x0011, kRej = 0x0012, kRep = 0x0013, kRtu = 0x0014,
  kDreq = 0x0015, kDrep = 0x0016, kSidrReq = 0x0017, kSidrRep = 0x0018,
  kLap = 0x0019, kApr = 0x001A,
};

// "Message MRAed" / "message rejected" (IBA tables 107, 108).
enum class CmMsgKind : uint8_t { kReq = 0, kRep = 1, kOther = 2 };

// Why decode refused a MAD (each maps to one CmCounters field in IbCm).
enum class MadError : uint8_t {
  kOk,
  kBadBaseVersion,   // not 1
  kBadClass,         // not class 0x07
  kBadClassVersion,  // not 2
  kBadMethod,        // CM messages are SEND; ClassPortInfo GET/SET/GetResp
  kUnknownAttr,      // not a CM attribute
  kBadField,         // a field out of range (reserved value, length over its maximum)
};
const char* mad_error_name(MadError e);

// One field: a big-endian container of `size` bytes at `offset` (from the MAD
// start); the value is `bits` wide, `shift` bits above the container's LSB.
struct MadField {
  uint16_t offset;
  uint8_t size;
  uint8_t shift;
  uint8_t bits;
};
uint64_t mad_get(const uint8_t* mad, MadField f);
void mad_put(uint8_t* mad, MadField f, uint64_t value);

struct MadHeader {
  uint8_t base_version = kMadBaseVersion;
  uint8_t mgmt_class = kMgmtClassCm;
  uint8_t class_version = kCmClassVersion;
  uint8_t method = static_cast<uint8_t>(MadMethod::kSend);
  uint16_t status = 0;
  uint16_t class_specific = 0;
  uint64_t tid = 0;
  uint16_t attr_id = 0;
  uint32_t attr_mod = 0;
};

// One path of a REQ (primary or alternate).
struct ReqPathFields {
  uint16_t local_lid = 0xFFFF;   // RoCE: permissive LID, as the kernel writes
  uint16_t remote_lid = 0xFFFF;
  Gid local_gid{};
  Gid remote_gid{};
  uint32_t flow_label = 0;       // 20 bits
  uint8_t packet_rate = 0;       // 6 bits
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 0;
  uint8_t sl = 0;                // 4 bits
  bool subnet_local = false;
  uint8_t local_ack_timeout = 0; // 5 bits
};

struct ReqMsg {
  uint32_t local_comm_id = 0;
  uint64_t service_id = 0;
  uint64_t local_ca_guid = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;
  uint8_t responder_resources = 0;
  uint32_t local_eecn = 0;
  uint8_t initiator_depth = 0;
  uint32_t remote_eecn = 0;
  uint8_t remote_cm_response_timeout = 0;
  uint8_t transport_type = 0;    // 2 bits: 0 RC, 1 UC, 2 RD (unsupported), 3 extended (XRC)
  bool flow_control = false;
  uint32_t starting_psn = 0;
  uint8_t local_cm_response_timeout = 0;
  uint8_t retry_count = 0;
  uint16_t pkey = 0xFFFF;
  uint8_t path_mtu = 0;          // 4 bits, 1..5
  bool rdc_exists = false;
  uint8_t rnr_retry_count = 0;
  uint8_t max_cm_retries = 0;
  bool srq = false;
  uint8_t extended_transport = 0;
  ReqPathFields primary;
  ReqPathFields alternate;       // all zero when there is none (the kernel's RoCE REQ)
  bool has_alternate = false;    // derived: alternate local LID non-zero or GID non-zero
  bool sap_supported = false;
  std::array<uint8_t, kReqPrivateData> private_data{};
};

struct MraMsg {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  CmMsgKind message_mraed = CmMsgKind::kReq;
  uint8_t service_timeout = 0;
  std::array<uint8_t, kMraPrivateData> private_data{};
};

struct RejMsg {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  CmMsgKind message_rejected = CmMsgKind::kReq;
  uint8_t ari_length = 0;        // 7 bits, <= 72
  uint16_t reason = 0;
  std::array<uint8_t, kRejAriLength> ari{};
  std::array<uint8_t, kRejPrivateData> private_data{};
};

struct RepMsg {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t local_qkey = 0;
  uint32_t local_qpn = 0;
  uint32_t local_eecn = 0;
  uint32_t starting_psn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t target_ack_delay = 0;
  uint8_t failover_accepted = 0;  // 2 bits: 0..2 (3 reserved)
  bool flow_control = false;
  uint8_t rnr_retry_count = 0;
  bool srq = false;
  uint64_t local_ca_guid = 0;
  std::array<uint8_t, kRepPrivateData> private_data{};
};

// RTU and DREP have the same shape; DREQ adds the remote QPN.
struct RtuMsg {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  std::array<uint8_t, kRtuPrivateData> private_data{};
};
struct DreqMsg {
  uint32_t local_comm_id = 0;
  uint32_t remote_comm_id = 0;
  uint32_t remote_qpn = 0;
  std::array<uint8_t, kDreqPrivateData> private_data{};
};
using DrepMsg = RtuMsg;
static_assert(kDrepPrivateData == kRtuPrivateData);

struct SidrReqMsg {
  uint32_t request_id = 0;
  uint16_t pkey = 0xFFFF;
  uint64_t service_id = 0;
  std::array<uint8_t, kSidrReqPrivateData> private_data{};
};

struct SidrRepMsg {
  uint32_t request_id = 0;
  uint8_t status = 0;            // SidrStatus, 0..5
  uint8_t info_length = 0;       // <= 72
  uint32_t qpn = 0;
  uint64_t service_id = 0;
  uint32_t qkey = 0;
  std::array<uint8_t, kSidrRepInfoLength> info{};
  std::array<uint8_t, kSidrRepPrivateData> private_data{};
};

// Header: checks versions, class and that the attribute is one of CmAttr with
// a method that fits it. kUnknownAttr leaves *out filled (the caller counts it).
MadError decode_header(const uint8_t* mad, MadHeader* out);
MadError decode_req(const uint8_t* mad, ReqMsg* out);
MadError decode_mra(const uint8_t* mad, MraMsg* out);
MadError decode_rej(const uint8_t* mad, RejMsg* out);
MadError decode_rep(const uint8_t* mad, RepMsg* out);
MadError decode_rtu(const uint8_t* mad, RtuMsg* out);  // also DREP
MadError decode_dreq(const uint8_t* mad, DreqMsg* out);
MadError decode_sidr_req(const uint8_t* mad, SidrReqMsg* out);
MadError decode_sidr_rep(const uint8_t* mad, SidrRepMsg* out);

// Encoders write all 256 bytes (header included, everything else zero first).
void encode_header(const MadHeader& h, uint8_t* mad);
void encode_req(const MadHeader& h, const ReqMsg& m, uint8_t* mad);
void encode_mra(const MadHeader& h, const MraMsg& m, uint8_t* mad);
void encode_rej(const MadHeader& h, const RejMsg& m, uint8_t* mad);
void encode_rep(const MadHeader& h, const RepMsg& m, uint8_t* mad);
void encode_rtu(const MadHeader& h, const RtuMsg& m, uint8_t* mad);  // h.attr_id says RTU or DREP
void encode_dreq(const MadHeader& h, const DreqMsg& m, uint8_t* mad);
void encode_sidr_req(const MadHeader& h, const SidrReqMsg& m, uint8_t* mad);
void encode_sidr_rep(const MadHeader& h, const SidrRepMsg& m, uint8_t* mad);

// IBA time codes: 4.096 us * 2^code, in nanoseconds (code clamped to 31).
uint64_t iba_time_ns(uint8_t code);

}  // namespace burst::cm
