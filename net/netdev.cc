// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "net/netdev.h"

#include <linux/ethtool.h>
#include <linux/if.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>

#include "core/enum_names.h"
#include "net/rtnl.h"

namespace burst::net {
namespace {

constexpr int kDumpAttempts = 5;

// Active channel counts through ETHTOOL_GCHANNELS (the ioctl works on any
// socket of the namespace). False when the driver does not report channels.
bool read_channels(int fd, const std::string& ifname, uint32_t* rx, uint32_t* tx, uint32_t* max) {
  struct ethtool_channels ch {};
  ch.cmd = ETHTOOL_GCHANNELS;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&ch);
  if (ioctl(fd, SIOCETHTOOL, &ifr) < 0) return false;
  uint32_t r = ch.rx_count + ch.combined_count;
  uint32_t t = ch.tx_count + ch.combined_count;
  if (r == 0 || t == 0) return false;
  *rx = r;
  *tx = t;
  *max = std::max({ch.max_rx, ch.max_tx, ch.max_combined, r});
  return true;
}

Status get_link(RtnlSocket& rtnl, nlmsghdr* req, const std::string& label, LinkRecord* link) {
  bool found = false;
  Status st = rtnl.transact(
      req,
      [&](const nlmsghdr* nlh) {
        if (!found && parse_link(nlh, link)) found = true;
      },
      "query netdev " + label);
  if (st.code() == ENODEV) {
    return Status::Error(ENODEV, "netdev " + label +
                                     " not found in this network namespace: it does not exist "
                                     "here (check `ip link`; to run inside a netns use "
                                     "`nsenter --net=/run/netns/NAME`)");
  }
  if (!st.ok()) return st;
  if (!found) return Status::Error(EPROTO, "query netdev " + label + ": no link in the reply");
  return Status::Ok();
}

Status dump_addrs(RtnlSocket& rtnl, int family, uint32_t ifindex, std::vector<IfAddress>* out) {
  Status st;
  for (int attempt = 0; attempt < kDumpAttempts; ++attempt) {
    out->clear();
    alignas(nlmsghdr) char buf[kRequestBufSize];
    st = rtnl.transact(
        build_getaddr_dump(buf, family, ifindex),
        [&](const nlmsghdr* nlh) {
          AddrRecord a;
          if (!parse_addr(nlh, &a) || a.ifindex != ifindex || a.family != family) return;
          out->push_back(IfAddress{a.addr, a.prefix_len, a.scope, a.flags});
        },
        family == AF_INET ? "dump IPv4 addresses" : "dump IPv6 addresses");
    if (st.code() != EAGAIN) break;
  }
  // A kernel without IPv6 (ipv6.disable=1) answers the IPv6 dump with EAFNOSUPPORT.
  if (st.code() == EAFNOSUPPORT) return Status::Ok();
  return st;
}

Status fill(RtnlSocket& rtnl, const LinkRecord& link, NetdevInfo* out) {
  NetdevInfo info;
  info.name = link.name;
  info.ifindex = link.ifindex;
  info.link_type = link.type;
  info.mac = link.mac;
  info.mtu = link.mtu;
  info.flags = link.flags;
  info.operstate = link.operstate;
  if (read_channels(rtnl.fd(), link.name, &info.rx_queues, &info.tx_queues, &info.max_queues)) {
    info.queues_from_ethtool = true;
  } else {
    info.rx_queues = link.num_rx_queues != 0 ? link.num_rx_queues : 1;
    info.tx_queues = link.num_tx_queues != 0 ? link.num_tx_queues : 1;
    info.max_queues = info.rx_queues;
  }
  Status st = dump_addrs(rtnl, AF_INET, link.ifindex, &info.ipv4);
  if (!st.ok()) return st;
  st = dump_addrs(rtnl, AF_INET6, link.ifindex, &info.ipv6);
  if (!st.ok()) return st;
  *out = std::move(info);
  return Status::Ok();
}

}  // namespace

const char* operstate_name(uint8_t operstate) {
  // IF_OPER_* (RFC 2863 operational states) in value order.
  constexpr const char* kNames[] = {"unknown", "notpresent", "down", "lowerlayerdown",
                                    "testing", "dormant",    "up"};
  static_assert(IF_OPER_UNKNOWN == 0 && IF_OPER_UP == 6 && std::size(kNames) == IF_OPER_UP + 1);
  return enum_name(kNames, operstate, "invalid");
}

Status query_netdev(RtnlSocket& rtnl, const std::string& ifname, NetdevInfo* out) {
  if (ifname.empty()) return Status::Error(EINVAL, "empty netdev name");
  if (ifname.size() >= IFNAMSIZ) {
    return Status::Error(EINVAL, "netdev name '" + ifname + "' is longer than " +
                                     std::to_string(IFNAMSIZ - 1) + " characters");
  }
  alignas(nlmsghdr) char buf[kRequestBufSize];
  LinkRecord link;
  Status st = get_link(rtnl, build_getlink_by_name(buf, ifname), "'" + ifname + "'", &link);
  if (!st.ok()) return st;
  return fill(rtnl, link, out);
}

Status query_netdev(RtnlSocket& rtnl, uint32_t ifindex, NetdevInfo* out) {
  if (ifindex == 0) return Status::Error(EINVAL, "ifindex 0 names no netdev");
  alignas(nlmsghdr) char buf[kRequestBufSize];
  LinkRecord link;
  Status st = get_link(rtnl, build_getlink_by_index(buf, ifindex),
                       "with ifindex " + std::to_string(ifindex), &link);
  if (!st.ok()) return st;
  return fill(rtnl, link, out);
}

Status query_netdev(const std::string& ifname, NetdevInfo* out) {
  RtnlSocket rtnl;
  Status st = rtnl.open(0, false);
  if (!st.ok()) return st;
  return query_netdev(rtnl, ifname, out);
}

Status query_netdev(uint32_t ifindex, NetdevInfo* out) {
  RtnlSocket rtnl;
  Status st = rtnl.open(0, false);
  if (!st.ok()) return st;
  return query_netdev(rtnl, ifindex, out);
}

}  // namespace burst::net
