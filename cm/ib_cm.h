/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The IB communication manager of one burst port (IBA vol. 1 ch. 12; the role of
// Linux drivers/infiniband/core/cm.c): CM MADs on QP1 over RoCEv2, the
// connection state machines, retries of lost MADs, MRA, timewait, SIDR.
//
// Pure protocol logic: no I/O, no threads, no clock of its own. burstd's control
// thread owns one IbCm per port, feeds it the MADs QP1 received (receive), calls
// tick() when next_deadline() passes, and gets MADs to send and events through
// IbCmHost. The rdma_cm layer (cm/cma.h) is its one user; its API follows the
// kernel's ib_cm API so that cma.c's use of it is the model.
//
// Threading: one thread (burstd's control thread) calls every member and gets
// every IbCmHost callback; callbacks may call back into IbCm (e.g. send_rep from
// the REQ_RECEIVED event, destroy_id from any event).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace burst::cm {

using Gid = std::array<uint8_t, 16>;  // as core/wire/frame.h
using Mac = std::array<uint8_t, 6>;

inline constexpr size_t kMadSize = 256;
inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiQkey = 0x80010000;

// The far end of one MAD on QP1 (RoCEv2: UD SEND_ONLY to DQPN 1 with Q_Key
// 0x80010000, BTH P_Key 0xFFFF).
struct MadPeer {
  Gid gid{};               // receive: the IP source as a GID (IPv4-mapped or IPv6); send: the destination
  Mac mac{};               // receive: the Ethernet source; send: the destination (all zero: the host resolves it)
  uint32_t remote_qpn = kGsiQpn;  // receive: DETH source QP; send: DQPN (always 1 for CM)
  uint8_t sgid_index = 0;  // receive: the local GID the frame was addressed to; send: the source GID
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
  uint16_t pkey_index = 0;
};

struct Mad {
  MadPeer peer;
  std::array<uint8_t, kMadSize> bytes{};  // the whole MAD, network byte order
};

// The primary path of a connection or SIDR exchange, as RoCE uses it (no LIDs).
struct CmPath {
  Gid sgid{};
  Gid dgid{};
  Mac dmac{};
  uint8_t sgid_index = 0;
  uint8_t traffic_class = 0;
  uint8_t hop_limit = 64;
  uint32_t flow_label = 0;
  uint8_t sl = 0;
  uint8_t mtu = 3;               // enum ibv_mtu: 1 = 256 ... 5 = 4096
  uint8_t rate = 0;              // IBA static rate code (0: port rate)
  uint8_t packet_life_time = 0;  // IBA encoded: 4.096 us * 2^n
  uint16_t pkey = 0xFFFF;
};

using CmHandle = uint32_t;  // 0 is never a valid handle
inline constexpr CmHandle kNoCmHandle = 0;

// Private data sizes of IBA table 99 (ch. 12.6).
inline constexpr size_t kReqPrivateData = 92;
inline constexpr size_t kRepPrivateData = 196;
inline constexpr size_t kRtuPrivateData = 224;
inline constexpr size_t kRejPrivateData = 148;
inline constexpr size_t kRejAriLength = 72;
inline constexpr size_t kMraPrivateData = 222;
inline constexpr size_t kDreqPrivateData = 220;
inline constexpr size_t kDrepPrivateData = 224;
inline constexpr size_t kSidrReqPrivateData = 216;
inline constexpr size_t kSidrRepPrivateData = 136;
inline constexpr size_t kSidrRepInfoLength = 72;

// QP transport service type of a REQ (IBA table 100).
enum class CmQpType : uint8_t { kRc = 0, kUc = 1, kXrc = 3 };

struct CmReqParams {
  CmPath path;
  uint64_t service_id = 0;  // network order value as a host integer (e.g. 0x0000000001060000 | port)
  uint32_t qpn = 0;
  CmQpType qp_type = CmQpType::kRc;
  uint32_t starting_psn = 0;
  uint32_t qkey = 0;  // unused for RC
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t remote_cm_response_timeout = 20;  // IBA encoded 4.096 us * 2^n (cma: 20)
  uint8_t local_cm_response_timeout = 20;
  uint8_t max_cm_retries = 15;              // cma: 15
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  bool flow_control = true;
  bool srq = false;
  uint8_t private_data_len = 0;
  std::array<uint8_t, kReqPrivateData> private_data{};
};

struct CmRepParams {
  uint32_t qpn = 0;
  uint32_t starting_psn = 0;
  uint8_t responder_resources = 0;
  uint8_t initiator_depth = 0;
  uint8_t target_ack_delay = 0;
  uint8_t failover_accepted = 0;
  uint8_t rnr_retry_count = 7;
  bool flow_control = true;
  bool srq = false;
  uint8_t private_data_len = 0;
  std::array<uint8_t, kRepPrivateData> private_data{};
};

struct CmSidrReqParams {
  CmPath path;  // where to send it (the REQ-less UD "connection")
  uint64_t service_id = 0;
  uint8_t timeout_ms_log2 = 0;  // unused on the wire; retry timing comes from CmPath/defaults
  uint8_t max_cm_retries = 15;
  uint8_t private_data_len = 0;
  std::array<uint8_t, kSidrReqPrivateData> private_data{};
};

enum class SidrStatus : uint8_t {
  kSuccess = 0, kUnsupported = 1, kReject = 2, kNoQp = 3, kRedirect = 4, kUnsupportedVersion = 5
};

struct CmSidrRepParams {
  SidrStatus status = SidrStatus::kSuccess;
  uint32_t qpn = 0;
  uint32_t qkey = 0;
  uint8_t info_len = 0;
  std::array<uint8_t, kSidrRepInfoLength> info{};
  uint8_t private_data_len = 0;
  std::array<uint8_t, kSidrRepPrivateData> private_data{};
};

// REJ reasons used by the rdma_cm layer and the CM itself (IBA table 112).
enum class RejReason : uint16_t {
  kNoQp = 1, kNoEec = 2, kNoResources = 3, kTimeout = 4, kUnsupportedReq = 5,
  kInvalidCommId = 6, kInvalidCommInstance = 7, kInvalidServiceId = 8,
  kInvalidTransportType = 9, kStaleConn = 10, kRdcNotExist = 11, kInvalidGid = 12,
  kInvalidLid = 13, kInvalidSl = 14, kInvalidTrafficClass = 15, kInvalidHopLimit = 16,
  kInvalidPacketRate = 17, kInvalidAltGid = 18, kInvalidAltLid = 19, kInvalidAltSl = 20,
  kInvalidAltTrafficClass = 21, kInvalidAltHopLimit = 22, kInvalidAltPacketRate = 23,
  kPortCmRedirect = 24, kPortRedirect = 25, kInvalidMtu = 26, kInsufficientRespResources = 27,
  kConsumerReject = 28, kRnrRetryCountReject = 29, kDuplicateLocalCommId = 30,
  kUnsupportedClassVersion = 31, kInvalidFlowLabel = 32, kInvalidAltFlowLabel = 33,
  kVendorOptionNotSupported = 35,
};

// What the CM tells its user; the names are the kernel's ib_cm_event_type.
enum class CmEventType : uint8_t {
  kReqError,         // our REQ got no REP/REJ/MRA within the retries
  kReqReceived,      // a REQ matched a listen: handle is a new passive id (listen_handle says whose)
  kRepError,         // our REP got no RTU within the retries
  kRepReceived,
  kRtuReceived,      // also: the passive side saw the first data (establish())
  kUserEstablished,
  kDreqError,        // our DREQ got no DREP within the retries
  kDreqReceived,
  kDrepReceived,
  kTimewaitExit,
  kMraReceived,
  kRejReceived,
  kSidrReqError,
  kSidrReqReceived,  // handle is a new passive id
  kSidrRepReceived,
};

// One event. Only the member that goes with `type` is meaningful; private
// data is what the MAD carried (its full IBA length).
struct CmEvent {
  CmEventType type{};
  uint64_t context = 0;           // what the user gave create_id (for new ids: the listener's)
  CmHandle listen_handle = kNoCmHandle;  // kReqReceived / kSidrReqReceived: the listen that matched
  MadPeer peer;                   // where the MAD came from
  CmReqParams req;                // kReqReceived (path built from the REQ and the MAD's source)
  CmRepParams rep;                // kRepReceived
  CmSidrReqParams sidr_req;       // kSidrReqReceived
  CmSidrRepParams sidr_rep;       // kSidrRepReceived
  RejReason rej_reason{};         // kRejReceived (kTimeout also for the *_ERROR events)
  uint8_t ari_len = 0;
  std::array<uint8_t, kRejAriLength> ari{};
  uint8_t private_data_len = 0;   // kRtu/kRej/kDreq/kDrep/kMra: the MAD's private data
  std::array<uint8_t, kRtuPrivateData> private_data{};
};

// The CM's counters (burstctl counters; every drop has a reason).
struct CmCounters {
  uint64_t mads_received = 0;
  uint64_t mads_sent = 0;
  uint64_t retransmits = 0;
  uint64_t dropped_bad_length = 0;   // not 256 bytes, or a field out of range
  uint64_t dropped_bad_class = 0;    // not the CM class 0x07 / version 2
  uint64_t dropped_unknown_attr = 0;
  uint64_t dropped_no_match = 0;     // REP/RTU/REJ/DREQ/... naming no connection of ours (forged or stale)
  uint64_t duplicate_req = 0;        // answered with the REP (or MRA) again
  uint64_t rej_sent_no_listener = 0; // REQ for a service nobody listens on
  uint64_t timeouts = 0;
  uint64_t unsupported_attr = 0;     // ClassPortInfo, LAP, APR: recognised, not served
  uint64_t rej_sent_no_resources = 0; // REQ / SIDR_REQ beyond the id table's bound
  uint64_t mra_sent_delayed = 0;     // a REQ / REP retransmitted before its user answered
};

class IbCmHost {
 public:
  virtual ~IbCmHost() = default;
  // Queue one MAD for QP1's send queue. False: it could not be queued (counted,
  // the retry timer covers it).
  virtual bool send_mad(const Mad& mad) = 0;
  // One event of id `handle` (see CmEventType). May call back into IbCm.
  virtual void cm_event(CmHandle handle, const CmEvent& event) = 0;
  // Monotonic nanoseconds.
  virtual uint64_t now_ns() = 0;
};

class IbCm {
 public:
  // local_ca_guid: the port's node GUID (network order as a host integer), the
  // REQ's Local CA GUID. seed: initial communication IDs are random, as the kernel's.
  IbCm(IbCmHost& host, uint64_t local_ca_guid, uint64_t seed);
  ~IbCm();
  IbCm(const IbCm&) = delete;
  IbCm& operator=(const IbCm&) = delete;

  CmHandle create_id(uint64_t context);
  // As ib_destroy_cm_id: sends what the state requires (REJ for a pending REQ,
  // DREQ for an established connection...), then forgets the id (its timewait
  // runs on without it; no event is delivered for it afterwards). Unlike cm.c,
  // a DREQ in flight keeps its retries until answered (a lost one would leave
  // the peer connected), then the timewait.
  void destroy_id(CmHandle handle);
  // As cm_destroy_id(-ENOMEM) after a REQ_RECEIVED handler failed (cm.c: "do
  // not reject to allow future retries"): a received REQ its user cannot take
  // now (rdma_cm: the listen's backlog is full) is forgotten without a REJ, so
  // the peer's retransmitted REQ is a new request. Other states: destroy_id.
  void drop_request(CmHandle handle);

  // 0 or an errno value (EBUSY: the service ID is taken, EINVAL: bad state).
  int listen(CmHandle handle, uint64_t service_id, uint64_t service_mask);
  int send_req(CmHandle handle, const CmReqParams& params);
  int send_rep(CmHandle handle, const CmRepParams& params);
  int send_rtu(CmHandle handle, const uint8_t* private_data, uint8_t len);
  int send_rej(CmHandle handle, RejReason reason, const uint8_t* ari, uint8_t ari_len,
               const uint8_t* private_data, uint8_t len);
  int send_mra(CmHandle handle, uint8_t service_timeout, const uint8_t* private_data,
               uint8_t len);
  int send_dreq(CmHandle handle, const uint8_t* private_data, uint8_t len);
  int send_drep(CmHandle handle, const uint8_t* private_data, uint8_t len);
  // The passive side saw traffic before the RTU (ib_cm_notify IB_EVENT_COMM_EST).
  int establish(CmHandle handle);
  int send_sidr_req(CmHandle handle, const CmSidrReqParams& params);
  int send_sidr_rep(CmHandle handle, const CmSidrRepParams& params);

  // One MAD QP1 received (any content: validated here, bad ones counted).
  void receive(const Mad& mad);
  // Runs retransmits, timeouts and timewait expiry due at host.now_ns().
  void tick();
  // When tick() next has work (UINT64_MAX: none).
  uint64_t next_deadline() const;

  const CmCounters& counters() const;
  size_t id_count() const;  // live ids (tests: nothing left behind)

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace burst::cm
