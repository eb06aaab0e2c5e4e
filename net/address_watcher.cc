// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "net/address_watcher.h"

#include <linux/rtnetlink.h>

namespace burst::net {

Status AddressWatcher::open(const std::string& ifname) {
  if (events_.is_open()) return Status::Error(EBUSY, "address watcher already open");
  Status st = events_.open(RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR, true);
  if (!st.ok()) return st;
  st = rtnl_.open(0, false);
  if (!st.ok()) return st;
  st = query_netdev(rtnl_, ifname, &info_);
  if (!st.ok()) return st;
  gids_.update(info_);
  return Status::Ok();
}

Status AddressWatcher::poll_changes(bool* gids_changed, bool* link_changed) {
  *gids_changed = false;
  if (link_changed != nullptr) *link_changed = false;
  if (!events_.is_open()) return Status::Error(EBADF, "address watcher not open");
  bool relevant = false;
  bool overrun = false;
  const uint32_t ifindex = info_.ifindex;
  Status st = events_.drain(
      [&](const nlmsghdr* nlh) {
        if (relevant) return;
        AddrRecord a;
        LinkRecord l;
        if (parse_addr(nlh, &a)) {
          relevant = a.ifindex == ifindex;
        } else if (parse_link(nlh, &l)) {
          relevant = l.ifindex == ifindex;
        }
      },
      &overrun);
  if (!st.ok()) return st;
  if (!relevant && !overrun) return Status::Ok();

  NetdevInfo now;
  st = query_netdev(rtnl_, ifindex, &now);
  if (st.code() == ENODEV) {
    return Status::Error(ENODEV, "netdev '" + info_.name + "' (ifindex " + std::to_string(ifindex) +
                                     ") was removed");
  }
  if (!st.ok()) return st;
  if (link_changed != nullptr) {
    *link_changed = now.mac != info_.mac || now.mtu != info_.mtu ||
                    now.operstate != info_.operstate || now.flags != info_.flags ||
                    now.rx_queues != info_.rx_queues || now.tx_queues != info_.tx_queues ||
                    now.name != info_.name;
  }
  info_ = std::move(now);
  *gids_changed = gids_.update(info_);
  return Status::Ok();
}

}  // namespace burst::net
