/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Follows one netdev's addresses and link state through rtnetlink notifications
// (RTMGRP_LINK, RTMGRP_IPV4_IFADDR, RTMGRP_IPV6_IFADDR) and keeps its GID table
// current with kernel semantics (see gid_table.h).
//
// Use: open(), add fd() to the caller's poll set / event loop (it is
// non-blocking), and call poll_changes() when it is readable (calling it at
// any other time is harmless). Threading: one thread at a time.
#pragma once

#include <cstdint>
#include <string>

#include "net/gid_table.h"
#include "net/netdev.h"
#include "net/rtnl.h"
#include "net/net_status.h"

namespace burst::net {

class AddressWatcher {
 public:
  explicit AddressWatcher(size_t max_gids = kDefaultMaxGids) : gids_(max_gids) {}

  // Subscribes first, then reads the netdev: a change between the two is seen
  // by the first poll_changes(). Errors as query_netdev().
  Status open(const std::string& ifname);

  int fd() const { return events_.fd(); }

  // Reads every queued notification; when one concerns the netdev (or the kernel
  // dropped notifications), re-reads the netdev and updates the GID table.
  // *gids_changed: a GID slot changed. *link_changed (optional): MAC, MTU,
  // operstate, flags or queue counts changed. A netdev that disappeared returns
  // ENODEV; netdev() and gids() then keep their last values.
  Status poll_changes(bool* gids_changed, bool* link_changed = nullptr);

  const NetdevInfo& netdev() const { return info_; }
  const GidTable& gids() const { return gids_; }

 private:
  RtnlSocket events_;  // notifications, non-blocking
  RtnlSocket rtnl_;    // requests
  NetdevInfo info_;
  GidTable gids_;
};

}  // namespace burst::net
