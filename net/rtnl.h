/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// rtnetlink through libmnl: a request/reply socket, request builders and
// parsers of the replies. The builders and parsers are pure (no socket) so the
// unit tests drive them with hand-made buffers.
//
// Threading: an RtnlSocket belongs to one thread at a time. Control plane only.
#pragma once

#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "net/addr.h"
#include "net/net_status.h"

struct mnl_socket;

namespace burst::net {

// ---- Parsed records ------------------------------------------------------

struct LinkRecord {  // RTM_NEWLINK
  uint32_t ifindex = 0;
  uint16_t type = 0;   // ARPHRD_*
  uint32_t flags = 0;  // IFF_*
  std::string name;
  bool has_mac = false;
  MacAddr mac{};
  uint32_t mtu = 0;
  uint8_t operstate = 0;       // IF_OPER_*
  uint32_t num_rx_queues = 0;  // allocated queues (IFLA_NUM_RX_QUEUES), 0 if absent
  uint32_t num_tx_queues = 0;
};

struct AddrRecord {  // RTM_NEWADDR / RTM_DELADDR
  int family = 0;    // AF_INET or AF_INET6
  uint32_t ifindex = 0;
  uint8_t prefix_len = 0;
  uint8_t scope = 0;   // RT_SCOPE_*
  uint32_t flags = 0;  // IFA_F_* (IFA_FLAGS when present, else ifa_flags)
  Gid addr{};          // IPv4 as ::ffff:a.b.c.d
};

struct RouteRecord {  // RTM_NEWROUTE (reply to RTM_GETROUTE)
  int family = 0;
  uint8_t type = 0;  // RTN_*
  uint32_t table = 0;
  uint32_t oif = 0;
  bool has_gateway = false;  // RTA_GATEWAY or RTA_VIA (an IPv4 route may have an IPv6 next hop)
  Gid gateway{};
  bool has_prefsrc = false;
  Gid prefsrc{};
  Gid dst{};
  uint8_t dst_len = 0;
};

struct NeighRecord {  // RTM_NEWNEIGH / RTM_DELNEIGH
  int family = 0;
  uint32_t ifindex = 0;
  uint16_t state = 0;  // NUD_*
  uint8_t flags = 0;   // NTF_*
  bool has_dst = false;
  Gid dst{};
  bool has_lladdr = false;
  MacAddr lladdr{};
};

// Each returns false when the message is not of its kind or is malformed
// (short header, attribute of the wrong size). Unknown attributes are ignored.
bool parse_link(const nlmsghdr* nlh, LinkRecord* out);
bool parse_addr(const nlmsghdr* nlh, AddrRecord* out);
bool parse_route(const nlmsghdr* nlh, RouteRecord* out);
bool parse_neigh(const nlmsghdr* nlh, NeighRecord* out);
// NLMSG_ERROR: *err = positive errno (0 for an ACK); *extack = the kernel's
// NLMSGERR_ATTR_MSG when it sent one (else empty). False when malformed.
bool parse_error(const nlmsghdr* nlh, int* err, std::string* extack);
// NLMSG_DONE of a dump: *err = positive errno carried by the message (0 = ok).
bool parse_done(const nlmsghdr* nlh, int* err, std::string* extack);

// ---- Request builders ----------------------------------------------------
// Write one request at the start of buf (kRequestBufSize bytes, aligned for
// nlmsghdr) and return it; sequence number and port are set by RtnlSocket.

inline constexpr size_t kRequestBufSize = 512;

nlmsghdr* build_getlink_by_name(void* buf, const std::string& ifname);
nlmsghdr* build_getlink_by_index(void* buf, uint32_t ifindex);
nlmsghdr* build_getaddr_dump(void* buf, int family, uint32_t ifindex);
// Route lookup as `ip route get DST [oif OIF]` (oif 0: let the kernel choose).
nlmsghdr* build_getroute(void* buf, const Gid& dst, uint32_t oif);
// One neighbour entry (RTM_GETNEIGH without NLM_F_DUMP, kernel >= 5.0).
nlmsghdr* build_getneigh(void* buf, uint32_t ifindex, const Gid& dst);
// RTM_NEWNEIGH with NTF_USE: creates the entry if missing and makes the kernel
// send a solicitation as if a packet were queued to it (needs CAP_NET_ADMIN).
nlmsghdr* build_neigh_use(void* buf, uint32_t ifindex, const Gid& dst);

// ---- Socket --------------------------------------------------------------

class RtnlSocket {
 public:
  RtnlSocket() = default;
  ~RtnlSocket();
  RtnlSocket(const RtnlSocket&) = delete;
  RtnlSocket& operator=(const RtnlSocket&) = delete;

  // groups: RTMGRP_* bit mask to subscribe to (0 for a request socket).
  // nonblocking: for notification sockets driven by poll().
  Status open(uint32_t groups, bool nonblocking);
  bool is_open() const { return nl_ != nullptr; }
  int fd() const;

  // Sends req and hands every reply message to on_msg until the ACK (requests)
  // or NLMSG_DONE (dumps, NLM_F_DUMP set in req). Kernel errors come back as
  // the errno with `what` and the kernel's extended ack in the message. A dump
  // that the kernel marks inconsistent (NLM_F_DUMP_INTR) returns EAGAIN: the
  // caller retries. Bounded: every receive waits at most 2 s.
  using MsgFn = std::function<void(const nlmsghdr*)>;
  Status transact(nlmsghdr* req, const MsgFn& on_msg, const std::string& what);

  // Notification sockets: reads everything queued without blocking and hands
  // each message to on_msg. *overrun is set when the kernel dropped
  // notifications (ENOBUFS): the caller must re-read the state it tracks.
  Status drain(const MsgFn& on_msg, bool* overrun);

 private:
  mnl_socket* nl_ = nullptr;
  uint32_t portid_ = 0;
  uint32_t seq_ = 0;
  std::vector<char> rx_;
};

}  // namespace burst::net
