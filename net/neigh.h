/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Destination MAC and source GID for a remote GID, from the kernel's route and
// neighbour tables (what rdma_cm's address resolution does inside the kernel).
//
// resolve_neighbour:
//   1. Multicast GIDs map to their multicast MAC directly (RFC 1112 / 2464).
//   2. Route lookup (RTM_GETROUTE, as `ip route get`): IPv4-mapped GIDs are
//      looked up as IPv4, others as IPv6 (link-local ones scoped to ifindex).
//      The route must be unicast and leave through ifindex; its next hop is
//      the gateway, or the destination itself when it is on-link.
//   3. The next hop's entry in the neighbour table (RTM_GETNEIGH). A usable
//      entry (REACHABLE, STALE, DELAY, PROBE, PERMANENT, with a MAC) answers
//      at once; a STALE one is also kicked so the kernel re-confirms it, since
//      burst's traffic bypasses the kernel and never confirms it by itself.
//      A local route (the destination is an address of this host) answers
//      with the MAC of the Ethernet netdev holding the address: this netdev's
//      own (burst loops such frames to its own receive path), or another
//      netdev's of this namespace (the frames leave through ifindex; the L2
//      segment carries them to it), as the kernel's RDMA address resolution
//      does. An address on a netdev without a MAC (lo) stays EHOSTUNREACH.
//   4. Otherwise resolution is triggered and the table is watched (RTMGRP_NEIGH
//      notifications plus a re-read every 50 ms) until the entry is usable,
//      FAILED, or the timeout expires.
//
// How resolution is triggered (Trigger):
//   kNetlink: RTM_NEWNEIGH with NTF_USE (+NLM_F_CREATE). The kernel creates the
//     entry if needed and runs neigh_event_send() on it, exactly as if a packet
//     were queued: ARP request / neighbour solicitation on that interface for
//     that next hop, no packet to the peer. Needs CAP_NET_ADMIN.
//   kUdp: a zero-length UDP datagram to the next hop's discard port (9), pinned
//     to ifindex with IP_UNICAST_IF / IPV6_UNICAST_IF. Needs no privilege; the
//     datagram itself reaches the peer (which drops it, or answers ICMP).
//   kAuto (default): kNetlink, falling back to kUdp when not permitted.
//   burstd holds CAP_NET_ADMIN (it attaches XDP programs), so it gets the clean
//   path; unprivileged tools still resolve.
//
// Errors: EHOSTUNREACH for everything that means "cannot reach this GID through
// this netdev" (no route, route through another netdev, non-unicast route,
// an address of this host on a netdev without a MAC, no answer within the
// timeout, FAILED entry), with a message naming the destination, the next hop
// and the netdev. EPERM only for kNetlink without CAP_NET_ADMIN. Blocking,
// bounded by timeout_ms (+ at most 2 s per kernel request, which the kernel
// answers at once in practice).
#pragma once

#include <cstdint>

#include "net/addr.h"
#include "net/net_status.h"

namespace burst::net {

enum class Trigger : uint8_t { kAuto, kNetlink, kUdp };

struct ResolveOptions {
  int timeout_ms = 1000;
  Trigger trigger = Trigger::kAuto;
};

struct ResolveInfo {  // how the answer was obtained (diagnostics, tests)
  Gid next_hop{};
  bool triggered = false;         // the table had no usable entry: resolution was triggered
  Trigger used = Trigger::kAuto;  // the trigger used when triggered
  uint16_t state = 0;             // NUD_* of the entry that answered
  int elapsed_ms = 0;
  uint32_t local_ifindex = 0;  // dst is an address of this host: the netdev holding it
};

Status resolve_neighbour(uint32_t ifindex, const Gid& dst, MacAddr* out);
Status resolve_neighbour(uint32_t ifindex, const Gid& dst, MacAddr* out,
                         const ResolveOptions& options, ResolveInfo* info);

// The source address the kernel would use toward dst (RTA_PREFSRC of the route),
// as a GID. The route must leave through ifindex (EHOSTUNREACH otherwise);
// EADDRNOTAVAIL when the kernel has no source address for it.
Status local_gid_for(uint32_t ifindex, const Gid& dst, Gid* src);

const char* nud_state_name(uint16_t state);  // "reachable", "stale", ... ("none" for 0)

}  // namespace burst::net
