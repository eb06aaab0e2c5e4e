/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The GID table of a burst port, filled the way Linux fills it for a RoCE
// device (drivers/infiniband/core/roce_gid_mgmt.c + cache.c). burst speaks
// RoCEv2 only, like rxe, so every address gets one entry (a device with RoCE v1
// as well holds a v1 and a v2 entry per address):
//
//   [0]   the default GID: fe80::/64 + modified EUI-64 of the MAC. The kernel
//         reserves this slot at registration, whether or not the netdev has
//         IPv6; it equals the netdev's own link-local address under the default
//         addr_gen_mode (eui64).
//   then  one ::ffff:a.b.c.d entry per IPv4 address, in the kernel's list order
//         (enum_netdev_ipv4_ips runs before enum_netdev_ipv6_ips),
//   then  one entry per IPv6 address in the kernel's list order (global scope
//         before link-local), skipping those already in the table (the EUI-64
//         link-local is the default GID); a stable-privacy or manually added
//         link-local address that differs gets its own entry, as in the kernel.
//
// So with one IPv4 address, index 1 is the IPv4-mapped GID, as on rxe. Later
// changes behave like the kernel's GID cache: an entry keeps its index while its
// address exists, a removed address leaves an empty (zero) slot, and a new one
// takes the lowest free slot; a MAC change rebuilds the table (the kernel
// deletes and re-adds every GID of the netdev on NETDEV_CHANGEADDR). An
// sgid_index held by a QP therefore stays valid across unrelated changes.
#pragma once

#include <cstddef>
#include <vector>

#include "net/addr.h"
#include "net/netdev.h"

namespace burst::net {

inline constexpr size_t kDefaultMaxGids = 256;

// The table of a freshly registered port (no holes).
std::vector<Gid> build_gid_table(const NetdevInfo& info, size_t max_entries = kDefaultMaxGids);

class GidTable {
 public:
  explicit GidTable(size_t max_entries = kDefaultMaxGids) : max_entries_(max_entries) {}

  // Applies the netdev's current addresses; true when any slot changed.
  // Addresses beyond max_entries are left out (counted in dropped()).
  bool update(const NetdevInfo& info);

  // sgid_index -> GID; a zero GID is an empty slot. No trailing empty slots.
  const std::vector<Gid>& entries() const { return entries_; }
  int find(const Gid& gid) const;  // index, or -1 (never matches an empty slot)
  size_t dropped() const { return dropped_; }

 private:
  void rebuild(const NetdevInfo& info);
  bool add(const Gid& gid);  // lowest free slot; false when present or full

  size_t max_entries_;
  std::vector<Gid> entries_;
  MacAddr mac_{};
  bool has_default_ = false;
  size_t dropped_ = 0;
};

}  // namespace burst::net
