/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Addresses as the transport sees them. A GID is 16 bytes in network order; an
// IPv4 address is carried as the IPv4-mapped IPv6 address ::ffff:a.b.c.d (the
// RoCEv2 convention, core::LocalPort::gids uses the same layout).
#pragma once

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace burst::net {

using Gid = std::array<uint8_t, 16>;
using MacAddr = std::array<uint8_t, 6>;

inline constexpr Gid kZeroGid{};

Gid gid_from_ipv4(const in_addr& a);
Gid gid_from_ipv6(const in6_addr& a);
bool gid_is_ipv4_mapped(const Gid& g);
in_addr gid_to_ipv4(const Gid& g);  // only meaningful when gid_is_ipv4_mapped(g)
in6_addr gid_to_ipv6(const Gid& g);
bool gid_is_zero(const Gid& g);
bool gid_is_link_local(const Gid& g);  // fe80::/10 (never true for an IPv4-mapped GID)
bool gid_is_multicast(const Gid& g);   // IPv6 ff00::/8 or mapped IPv4 224.0.0.0/4
int gid_family(const Gid& g);          // AF_INET for IPv4-mapped GIDs, else AF_INET6

// The RoCE default GID of a port: fe80::/64 with the modified EUI-64 interface
// identifier of the MAC (universal/local bit flipped, ff:fe in the middle), the
// address IPv6 autoconfiguration gives the netdev with addr_gen_mode eui64.
Gid gid_link_local_from_mac(const MacAddr& mac);

// Multicast MAC of a multicast GID (33:33:xx:xx:xx:xx for IPv6, 01:00:5e:... for IPv4).
MacAddr multicast_mac(const Gid& g);

// Text forms: IPv4-mapped GIDs print as dotted quads ("10.0.0.1"), others as
// IPv6 text ("fe80::1"). The parser accepts both, and "::ffff:10.0.0.1".
std::string format_gid(const Gid& g);
bool parse_gid(std::string_view text, Gid* out);
std::string format_mac(const MacAddr& m);  // "02:00:00:00:00:01"
bool parse_mac(std::string_view text, MacAddr* out);

}  // namespace burst::net
