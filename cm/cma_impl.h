/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Private to cm/cma*.cc: the rdma_cm id, the channels and their event queues,
// and the helpers the command files share (the roles of the kernel's
// rdma_id_private / ucma_context / ucma_file). Threading: burstd's control
// thread only, like everything of Cma.
#pragma once

#include <rdma/rdma_user_cm.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <unordered_map>
#include <vector>

#include "cm/cma.h"

namespace burst::cm::cma {

// enum rdma_cm_event_type (librdmacm's <rdma/rdma_cma.h>, the kernel's rdma_cm.h).
enum EventType : uint32_t {
  kAddrResolved = 0, kAddrError = 1, kRouteResolved = 2, kRouteError = 3,
  kConnectRequest = 4, kConnectResponse = 5, kConnectError = 6, kUnreachable = 7,
  kRejected = 8, kEstablished = 9, kDisconnected = 10, kDeviceRemoval = 11,
  kMulticastJoin = 12, kMulticastError = 13, kAddrChange = 14, kTimewaitExit = 15,
};

// The kernel's enum rdma_cm_state, as far as burst uses it.
enum class State : uint8_t {
  kIdle, kAddrQuery, kAddrResolved, kRouteQuery, kRouteResolved, kConnect,
  kDisconnect, kAddrBound, kListen,
};

inline constexpr uint8_t kQptRc = 2;  // IB_QPT_RC / IBV_QPT_RC
inline constexpr uint8_t kQptUc = 3;
inline constexpr uint8_t kQptUd = 4;
inline constexpr uint32_t kUdpQkey = 0x01234567;  // RDMA_UDP_QKEY
inline constexpr uint8_t kCmResponseTimeout = 20;  // CMA_CM_RESPONSE_TIMEOUT
inline constexpr uint8_t kMaxCmRetries = 15;       // CMA_MAX_CM_RETRIES
inline constexpr uint8_t kIboePacketLifetime = 18;  // CMA_IBOE_PACKET_LIFETIME (6.1)
inline constexpr uint8_t kCaAckDelay = 15;         // as rxe's local_ca_ack_delay
inline constexpr uint8_t kCmaVersion = 0;          // cma_hdr.cma_version
inline constexpr size_t kCmaHdrSize = 36;          // struct cma_hdr
inline constexpr uint16_t kAfIb = 27;              // AF_IB
inline constexpr size_t kSockaddrIbSize = 48;      // struct sockaddr_ib
inline constexpr uint32_t kMaxBacklog = 1024;      // ucma's max_backlog default
inline constexpr size_t kChannelQueueLimit = 4096;  // events one channel may hold
inline constexpr int kCommEst = 4;                 // IB_EVENT_COMM_EST

// One rdma_cm id (rdma_id_private + ucma_context).
struct Id {
  uint32_t handle = 0;  // the UCMA id number the application names it by
  ChannelId channel = 0;
  ClientId client = 0;
  uint64_t uid = 0;  // the application's context (0 for a new connection until ACCEPT)
  uint16_t ps = 0;
  uint8_t qp_type = kQptRc;
  State state = State::kIdle;
  bool reported = true;  // false: a new id whose CONNECT_REQUEST is still queued
  uint32_t listener = 0;  // a new id: the listen id it came from
  uint32_t events_reported = 0;

  sockaddr_storage src{};  // family 0: unset
  sockaddr_storage dst{};
  bool has_device = false;  // bound to an address of this port, or resolved
  bool port_bound = false;  // holds a port of its port space
  uint8_t sgid_index = 0;
  Gid sgid{};
  CmaRoute route{};
  bool route_resolved = false;  // a path (num_paths = 1)
  CmPath path{};

  uint8_t tos = 0;
  bool tos_set = false;
  bool reuseaddr = false;
  bool afonly = false;
  bool afonly_set = false;  // RDMA_OPTION_ID_AFONLY given (else IPv4 binds are AF-only)
  uint8_t ack_timeout = 0;
  bool ack_timeout_set = false;
  uint32_t backlog = 0;  // listen: CONNECT_REQUESTs it may still have queued

  CmHandle cm = kNoCmHandle;
  bool active = false;     // sent the REQ / SIDR_REQ
  uint32_t seq_num = 0;    // our starting PSN: the REQ's / REP's, and our rq_psn
  uint32_t qp_num = 0;     // the application's QP (CONNECT / ACCEPT)
  bool srq = false;
  uint32_t remote_qpn = 0;
  uint32_t sq_psn = 0;     // the peer's starting PSN
  uint8_t responder_resources = 0;  // max_dest_rd_atomic
  uint8_t initiator_depth = 0;      // max_rd_atomic
  uint8_t retry_count = 7;
  uint8_t rnr_retry_count = 7;
  uint8_t ack_timeout_qp = 0;       // the QP's local ACK timeout (IBA encoded)
  uint32_t qkey = 0;
  bool got_dreq = false;
  bool remote_known = false;  // the peer's QPN and PSN (the REQ, or the REP)
  bool path_from_req = false;  // passive: the path is the REQ's (no route resolution)
};

struct Event {
  uint32_t id = 0;     // the Id it counts against (the listener for CONNECT_REQUEST)
  uint32_t new_id = 0;  // CONNECT_REQUEST: the new Id
  uint32_t mc = 0;      // MULTICAST_JOIN: the Mcast
  rdma_ucm_event_resp resp{};
};

// One multicast join of an id (ucma_multicast).
struct Mcast {
  uint32_t handle = 0;  // the id the application names it by (LEAVE_MCAST)
  uint32_t id = 0;      // its Id
  uint64_t uid = 0;
  sockaddr_storage addr{};
  uint32_t events_reported = 0;
};

struct Channel {
  ClientId client = 0;
  std::deque<Event> events;
};

}  // namespace burst::cm::cma

namespace burst::cm {

using cma::Id;

struct Cma::Impl {
  Impl(CmaHost& h, IbCm& c);

  CmaHost& host;
  IbCm& ib;
  CmaCounters counters;
  std::map<uint32_t, std::unique_ptr<Id>> ids;
  std::unordered_map<CmHandle, uint32_t> by_cm;  // IbCm handle -> Id
  std::map<ChannelId, cma::Channel> channels;
  // (port space << 16 | port) -> ids holding that port
  std::map<uint32_t, std::vector<uint32_t>> ports;
  // service id -> IbCm listen handle and how many Ids listen through it
  std::map<uint64_t, std::pair<CmHandle, uint32_t>> listens;
  std::map<uint32_t, cma::Mcast> mcasts;
  uint32_t next_handle = 1;
  uint32_t next_mcast = 1;
  std::mt19937_64 rng;

  // cma.cc: one UCMA command through the command table
  int dispatch(ChannelId channel, uint32_t cmd, const void* in, size_t in_len, void* out,
               size_t out_len);

  // cma_ids.cc
  Id* find(ChannelId channel, uint32_t handle, int* err);
  Id* create(ChannelId channel, ClientId client, uint64_t uid, uint16_t ps, uint8_t qp_type);
  uint32_t destroy(Id* id);  // returns events_reported
  int bind(Id* id, const sockaddr* addr);
  int bind_loopback(uint8_t* sgid_index, Gid* sgid);
  void release_port(Id* id);
  int cmd_create_id(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_destroy_id(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_bind_ip(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_bind(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_set_option(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_migrate_id(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);

  // cma_addr.cc
  int resolve_addr(Id* id, const sockaddr* src, const sockaddr* dst, uint32_t timeout_ms);
  int cmd_resolve_ip(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_resolve_addr(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_resolve_route(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_query_route(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_query(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);

  // cma_conn.cc
  int cmd_connect(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_listen(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_accept(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_reject(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_disconnect(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_notify(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int connect_rc(Id* id, const rdma_ucm_conn_param& p);
  void stop_listen(Id* id);
  void on_cm_event(Id* id, const CmEvent& ev);
  void on_req(uint64_t sid, CmHandle handle, const CmEvent& ev);
  // The listen id of service `sid` for our address `local` (exact first, then any).
  Id* find_listener(uint64_t sid, const sockaddr_storage& local);
  void refuse_request(CmHandle handle);  // REJ (consumer defined) and forget it

  // cma_ud.cc
  int connect_ud(Id* id, const rdma_ucm_conn_param& p);
  // The active side of a REQ or SIDR_REQ: an IbCm id mapped to `id`, which is
  // connecting before the MAD goes out (IbCm may report from inside the send);
  // kNoCmHandle when IbCm has no id left. fail_active undoes it after a failed
  // send and returns the send's error as -errno.
  CmHandle start_active(Id* id, uint32_t qp_num);
  int fail_active(Id* id, CmHandle h, int rc);
  int accept_ud(Id* id, const rdma_ucm_conn_param* p);
  int reject_ud(Id* id, const uint8_t* data, uint8_t len);
  int set_qkey(Id* id, uint32_t qkey);  // cma_set_qkey
  // A new passive id for a request that matched `listener` (CONNECT_REQUEST not yet reported).
  Id* new_conn_id(Id* listener, CmHandle handle, const sockaddr_storage& local,
                  const sockaddr_storage& remote);
  void on_sidr_req(uint64_t sid, CmHandle handle, const CmEvent& ev);
  void on_sidr_rep(Id* id, const CmEvent& ev);

  // cma_mcast.cc
  int join(ChannelId ch, uint32_t id, uint64_t uid, const sockaddr* addr, size_t addr_size,
           uint16_t flags, void* out);
  void drop_mcasts(Id* id);
  // A route for a multicast destination: the source's own GID, no neighbour.
  int mcast_route(Id* id, const sockaddr* dst, CmaRoute* route);
  int cmd_join_ip_mcast(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_join_mcast(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);
  int cmd_leave_mcast(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);

  // cma_events.cc
  bool queue(Id* id, uint32_t type, int32_t status, uint32_t new_id = 0);
  bool queue_event(const cma::Event& ev);
  cma::Event make_event(Id* id, uint32_t type, int32_t status);
  void drop_events(Id* id);
  void move_events(Id* id, ChannelId to);
  int cmd_get_event(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);

  // cma_qp_attr.cc
  int cmd_init_qp_attr(ChannelId ch, const void* in, size_t in_len, void* out, size_t out_len);

  uint32_t random24() { return static_cast<uint32_t>(rng()) & 0xFFFFFF; }
};

namespace cma {

// cma_addr.cc: addresses and the rdma_cm IP header.
socklen_t addr_size(const sockaddr* a);  // rdma_addr_size: 16, 28, 48 or 0
uint16_t addr_port(const sockaddr_storage& a);  // host order
void set_port(sockaddr_storage* a, uint16_t port);
bool addr_any(const sockaddr_storage& a);
bool addr_equal(const sockaddr_storage& a, const sockaddr_storage& b);  // family and IP
Gid ip_to_gid(const sockaddr_storage& a);  // rdma_ip2gid (zero when neither IPv4 nor IPv6)
sockaddr_storage gid_to_ip(const Gid& g);  // IPv4-mapped: AF_INET, else AF_INET6 (port 0)
bool addr_multicast(const sockaddr* a);
bool addr_loopback(const sockaddr_storage& a);  // 127.0.0.0/8, ::1
uint64_t service_id(uint16_t ps, uint16_t port);  // RDMA_IB_IP_PS_* | port
void write_cma_hdr(const Id& id, uint8_t* out);  // the 36-byte cma_hdr
// The private data of a REQ / SIDR_REQ: the cma_hdr, then the user's len bytes
// (the caller checked len); returns the total length.
uint8_t write_request_private(const Id& id, const uint8_t* user, uint8_t len, uint8_t* out);
// Reads a cma_hdr: the peer's address (port from the header) into *src and
// ours into *dst (port left 0). False when it is not a valid header.
bool read_cma_hdr(const uint8_t* in, sockaddr_storage* src, sockaddr_storage* dst);
uint32_t roce_flow_label(const Id& id);  // cma_get_roce_udp_flow_label
void fill_path_from_route(Id* id);  // cma_resolve_iboe_route
uint8_t ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time);  // cm_ack_timeout

}  // namespace cma
}  // namespace burst::cm
