/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IbCm's insides (cm/ib_cm.h), shared by its files: ib_cm.cc (ids, listens, the
// user's calls), ib_cm_tx.cc (building and sending MADs), ib_cm_rx.cc and
// ib_cm_rx_disc.cc (received MADs), ib_cm_timers.cc (retries, timeouts, timewait).
// The states and transitions are the kernel's ib_cm (drivers/infiniband/core/cm.c).
// Threading: burstd's control thread only (as IbCm).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cm/ib_cm.h"
#include "cm/mad.h"

namespace burst::cm {

// Live ids at most (connections, timewaits, listens, SIDR): a REQ or SIDR_REQ
// beyond it is refused (REJ no resources / SIDR_REP reject) and counted. A
// closed connection keeps its id for its timewait (~9 s with rdma_cm's
// response timeout 20), so the bound caps the sustained connection rate at
// about kMaxPassiveIds / 9 s (~5,400/s); 4096 refused connections after ~3,000
// in a burst (docs/cm.md "Connection rate"). A Conn is ~1.1 KB (the MAD it may
// retry): ~80 MB at most with the tables; the kernel bounds its ids by memory only.
inline constexpr size_t kMaxCmIds = 65536;
// Ids a peer can make us create (REQ, SIDR_REQ) stop here, so that a flood
// leaves room for the local users' create_id.
inline constexpr size_t kMaxPassiveIds = kMaxCmIds * 3 / 4;
// Local CA ACK delay of a burst port (the provider reports the same, 15 as rxe):
// the REQ's local ACK timeout is computed from it as cm.c's cm_ack_timeout.
inline constexpr uint8_t kCaAckDelay = 15;
// Service timeout of the MRA IbCm sends by itself for a REQ or REP retransmitted
// while its user has not answered yet (cma's CMA_CM_MRA_SETTING: 24, ~69 s).
inline constexpr uint8_t kAutoMraServiceTimeout = 24;
// The wait for a SIDR_REP (cma asks 4096 ms; 4.096 us * 2^20 ~ 4.3 s).
inline constexpr uint8_t kSidrResponseTimeout = 20;

enum class CmState : uint8_t {
  kIdle, kListen,
  kReqSent, kReqRcvd, kMraReqSent, kMraReqRcvd,
  kRepSent, kRepRcvd, kMraRepSent, kMraRepRcvd,
  kEstablished, kDreqSent, kDreqRcvd, kTimewait,
  kSidrReqSent, kSidrReqRcvd,
};

// One cm id (the kernel's cm_id_private with its timewait_info).
struct Conn {
  CmHandle handle = kNoCmHandle;  // kNoCmHandle: destroyed by its user, timewait runs on
  uint64_t context = 0;
  CmState state = CmState::kIdle;
  uint32_t local_id = 0;          // our communication ID (SIDR: the request ID)
  uint32_t remote_id = 0;         // the peer's (0 until known)
  uint64_t remote_ca_guid = 0;
  uint32_t local_qpn = 0;
  uint32_t remote_qpn = 0;
  uint64_t service_id = 0;        // listen: masked; connection / SIDR: the REQ's
  uint64_t service_mask = 0;      // listen only
  CmPath path;                    // where MADs go (dgid, dmac, sgid_index...)
  Gid peer_gid{};                 // MADs of this connection must come from here
  MadPeer reply_peer;             // SIDR passive: the SIDR_REQ's source
  uint64_t tid = 0;               // TID of the exchange in progress (kernel rules)
  uint8_t max_cm_retries = 15;
  uint64_t peer_timeout_ns = 0;   // how long the peer may take to answer us (retry period)
  uint64_t timewait_ns = 0;
  // The MAD the retry timer resends (REQ, REP, DREQ, SIDR_REQ) and its budget.
  Mad retry_mad;
  uint8_t retries_left = 0;
  uint64_t retry_period_ns = 0;
  // What a duplicate gets again: the MRA we sent, the RTU we sent.
  Mad mra_mad;
  bool mra_sent = false;
  Mad rtu_mad;
  bool rtu_sent = false;          // active side: a duplicate REP gets rtu_mad again
  uint64_t deadline = UINT64_MAX; // in Impl::timers while not UINT64_MAX
  bool in_remote_ids = false;     // Impl::remote_ids / remote_qpns / remote_sidr hold it
  bool in_remote_qpns = false;
  bool in_remote_sidr = false;
};

using RemoteKey = std::pair<uint64_t, uint32_t>;  // (remote CA GUID, remote comm ID or QPN)

struct IbCm::Impl {
  Impl(IbCmHost& h, uint64_t guid, uint64_t seed);

  IbCmHost& host;
  const uint64_t local_ca_guid;
  uint32_t hi_tid = 1;            // the high TID half (the kernel's MAD agent hi_tid)
  uint32_t id_operand = 0;        // local IDs: a counter XOR this (random, as cm.c)
  uint32_t id_counter = 0;
  CmHandle next_handle = 1;
  CmCounters counters;
  std::unordered_map<uint32_t, std::unique_ptr<Conn>> conns;  // by local ID (timewaits too)
  std::unordered_map<CmHandle, Conn*> handles;
  std::vector<Conn*> listens;
  std::map<RemoteKey, Conn*> remote_ids;   // duplicate REQ, REJ timeout
  std::map<RemoteKey, Conn*> remote_qpns;  // stale connection
  std::map<std::pair<Gid, uint32_t>, Conn*> remote_sidr;  // duplicate SIDR_REQ
  std::set<std::pair<uint64_t, uint32_t>> timers;          // (deadline, local ID)

  // ids (ib_cm.cc)
  Conn* by_handle(CmHandle h);
  Conn* by_local_id(uint32_t id);
  Conn* new_conn(uint64_t context, bool with_handle);  // nullptr: table full
  void forget(Conn* c);             // out of every table, freed
  void unlink_remote(Conn* c);
  void insert_remote(Conn* c);
  Conn* find_listen(uint64_t service_id);
  void destroy(Conn* c);

  // sending (ib_cm_tx.cc)
  uint64_t own_tid(const Conn& c) const;
  MadPeer peer_of(const Conn& c) const;
  void send(const Mad& m);
  Mad make(const MadPeer& peer) const;
  MadPeer reply_to(const MadPeer& src) const;
  Mad build_req(Conn* c, const CmReqParams& p);
  Mad build_rep(const Conn& c, const CmRepParams& p);
  Mad build_rtu_drep(const Conn& c, CmAttr attr, const uint8_t* pd, uint8_t len);
  Mad build_dreq(const Conn& c, const uint8_t* pd, uint8_t len);
  Mad build_mra(const Conn& c, CmMsgKind kind, uint8_t service_timeout, const uint8_t* pd,
                uint8_t len);
  Mad build_rej(const Conn& c, CmMsgKind kind, RejReason reason, const uint8_t* ari,
                uint8_t ari_len, const uint8_t* pd, uint8_t len);
  void reject_unconnected(const Mad& req, const ReqMsg& m, uint64_t tid, RejReason reason);
  void answer_sidr(const Mad& req, const SidrReqMsg& m, uint64_t tid, SidrStatus status);
  void emit(Conn* c, CmEvent& ev);  // to c's user, unless destroyed; last thing a path does

  // received MADs (ib_cm_rx.cc, ib_cm_rx_disc.cc)
  bool dispatch(const Mad& mad, const MadHeader& h);  // false: no handler for the attribute
  void rx_req(const Mad& mad, const MadHeader& h);
  void rx_mra(const Mad& mad, const MadHeader& h);
  void rx_rej(const Mad& mad, const MadHeader& h);
  void rx_rep(const Mad& mad, const MadHeader& h);
  void rx_rtu(const Mad& mad, const MadHeader& h);
  void rx_dreq(const Mad& mad, const MadHeader& h);
  void rx_drep(const Mad& mad, const MadHeader& h);
  void rx_sidr_req(const Mad& mad, const MadHeader& h);
  void rx_sidr_rep(const Mad& mad, const MadHeader& h);
  void rx_unsupported(const Mad& mad, const MadHeader& h);
  void dup_req(Conn* c, const Mad& mad);
  void hold_off(Conn* c, CmMsgKind kind);  // the delayed MRA of a REQ / REP not answered yet
  // The connection a MAD names by (our ID, the peer's ID), from its GID; counts a miss.
  Conn* match(const Mad& mad, uint32_t our_id, uint32_t their_id, bool check_their_id);

  // timers (ib_cm_timers.cc)
  void arm(Conn* c, uint64_t deadline);
  void disarm(Conn* c);
  void start_retry(Conn* c, const Mad& m, uint64_t period_ns, uint8_t retries);
  void enter_timewait(Conn* c);
  void reset_to_idle(Conn* c);      // may free c (destroyed ids)
  void on_timer(Conn* c);
  void on_retries_exhausted(Conn* c);
};

// 4.096 us * 2^n as cm.c's cm_ack_timeout (the REQ's local ACK timeout).
uint8_t cm_ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time);
// The retry period of a MAD the peer answers within 4.096 us * 2^response_timeout.
uint64_t response_period_ns(uint8_t response_timeout, uint8_t packet_life_time);
// Timewait: the packet life of the connection (cm.c: the ACK timeout) and two
// retry periods of the peer's DREQ (the peer retries it every
// response_period_ns(our CM response timeout)): a DREP lost twice is still
// answered. After timewait a DREQ no longer matches and is dropped (counted),
// where cm.c answers any unknown DREQ with a DREP.
uint64_t timewait_period_ns(uint8_t our_response_timeout, uint8_t packet_life_time);

}  // namespace burst::cm
