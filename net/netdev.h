/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// What burst needs to know about the netdev it serves: identity, MTU, queue
// counts, link state and IP addresses (the input of the GID table).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/addr.h"
#include "net/net_status.h"

namespace burst::net {

class RtnlSocket;

struct IfAddress {
  Gid addr{};  // IPv4 as ::ffff:a.b.c.d
  uint8_t prefix_len = 0;
  uint8_t scope = 0;   // RT_SCOPE_UNIVERSE (0) global, RT_SCOPE_LINK (253) link-local, ...
  uint32_t flags = 0;  // IFA_F_* (secondary, tentative, deprecated, nodad, permanent ...)

  bool operator==(const IfAddress&) const = default;
};

struct NetdevInfo {
  std::string name;
  uint32_t ifindex = 0;
  uint16_t link_type = 0;  // ARPHRD_* (ARPHRD_ETHER = 1 for Ethernet)
  MacAddr mac{};
  uint32_t mtu = 0;        // L3 MTU (IFLA_MTU)
  uint32_t flags = 0;      // IFF_*
  uint8_t operstate = 0;   // IF_OPER_* (RFC 2863)
  uint32_t rx_queues = 0;  // active queues: ethtool channels (rx + combined) when the
  uint32_t tx_queues = 0;  // driver reports them, else the allocated count from rtnetlink
  // The most RX queues the device can be configured to (what an XSKMAP indexed
  // by rx_queue_index must hold): ethtool's largest maximum channel count, else
  // the allocated count from rtnetlink; never below rx_queues.
  uint32_t max_queues = 0;
  bool queues_from_ethtool = false;
  // In the kernel's order (the order of its address lists, as rtnetlink dumps them):
  // IPv4 primary addresses before their secondaries; IPv6 global scope before
  // link-local, newest first within a scope.
  std::vector<IfAddress> ipv4;
  std::vector<IfAddress> ipv6;
};

// "up", "down", "lowerlayerdown", "dormant", "unknown", ... (IF_OPER_* names).
const char* operstate_name(uint8_t operstate);

// Reads the netdev in the caller's network namespace. Errors: ENODEV
// ("netdev 'NAME' not found in this network namespace: ..." with the fix), EINVAL (empty or
// over-long name), and the socket's errno otherwise (EPERM/EACCES when a
// seccomp or LSM policy forbids netlink). Needs no privilege.
Status query_netdev(const std::string& ifname, NetdevInfo* out);
Status query_netdev(uint32_t ifindex, NetdevInfo* out);
// Same over an open request socket (RtnlSocket::open(0, false)).
Status query_netdev(RtnlSocket& rtnl, const std::string& ifname, NetdevInfo* out);
Status query_netdev(RtnlSocket& rtnl, uint32_t ifindex, NetdevInfo* out);

}  // namespace burst::net
