// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "net/neigh.h"

#include <arpa/inet.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>

#include "core/enum_names.h"
#include "net/netdev.h"
#include "net/rtnl.h"

namespace burst::net {
namespace {

constexpr int kRecheckMs = 50;        // re-read the entry at least this often while waiting
constexpr uint16_t kDiscardPort = 9;  // RFC 863

int64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

std::string netdev_label(uint32_t ifindex) {
  char name[IF_NAMESIZE];
  if (if_indextoname(ifindex, name) != nullptr) return std::string("'") + name + "'";
  return "ifindex " + std::to_string(ifindex);
}

// RTN_* in value order, from RTN_UNSPEC (0); RTN_XRESOLVE and later are "unknown".
constexpr const char* kRouteTypeNames[] = {"unknown",  "unicast",   "local",     "broadcast",
                                           "anycast",  "multicast", "blackhole", "unreachable",
                                           "prohibit", "throw",     "nat"};
static_assert(RTN_UNICAST == 1 && RTN_NAT == 10 && std::size(kRouteTypeNames) == RTN_NAT + 1);

const char* route_type_name(uint8_t type) { return enum_name(kRouteTypeNames, type, "unknown"); }

bool usable(const NeighRecord& n) {
  constexpr uint16_t kValid =
      NUD_PERMANENT | NUD_NOARP | NUD_REACHABLE | NUD_PROBE | NUD_STALE | NUD_DELAY;
  return (n.state & kValid) != 0 && n.has_lladdr;
}

// The route the kernel takes to dst; it must be unicast and leave through
// ifindex, or (allow_local) be the local route of an address of this host.
Status lookup_route(RtnlSocket& rtnl, uint32_t ifindex, const Gid& dst, bool allow_local,
                    RouteRecord* out) {
  const std::string d = format_gid(dst);
  alignas(nlmsghdr) char buf[kRequestBufSize];
  // A link-local destination only means something on one link: scope the lookup.
  const uint32_t oif = gid_is_link_local(dst) ? ifindex : 0;
  bool found = false;
  Status st = rtnl.transact(
      build_getroute(buf, dst, oif),
      [&](const nlmsghdr* nlh) {
        if (!found && parse_route(nlh, out)) found = true;
      },
      "route lookup for " + d);
  if (!st.ok()) {
    switch (st.code()) {
      case ENETUNREACH:
      case EHOSTUNREACH:
      case EACCES:  // prohibit route
      case EINVAL:  // blackhole route
      case ENETDOWN:
        return Status::Error(EHOSTUNREACH, "no route to " + d + " (" + st.message() + ")");
      default:
        return st;
    }
  }
  if (!found) return Status::Error(EPROTO, "route lookup for " + d + ": no route in the reply");
  if (out->type == RTN_LOCAL && allow_local) return Status::Ok();
  if (out->type == RTN_LOCAL) {
    return Status::Error(EHOSTUNREACH, d + " is an address of this host: loopback through " +
                                           netdev_label(ifindex) + " is not supported");
  }
  if (out->type != RTN_UNICAST) {
    return Status::Error(EHOSTUNREACH, "route to " + d + " is of type " +
                                           route_type_name(out->type) + ", not unicast");
  }
  if (out->oif != ifindex) {
    return Status::Error(EHOSTUNREACH, "route to " + d + " leaves through " +
                                           netdev_label(out->oif) + ", not " +
                                           netdev_label(ifindex));
  }
  return Status::Ok();
}

// Opens *rtnl (no multicast groups) and looks up the route to dst with it.
Status route_toward(RtnlSocket* rtnl, uint32_t ifindex, const Gid& dst, bool allow_local,
                    RouteRecord* out) {
  Status st = rtnl->open(0, false);
  if (!st.ok()) return st;
  return lookup_route(*rtnl, ifindex, dst, allow_local, out);
}

// dst is an address of this host (RTN_LOCAL): the MAC of the Ethernet netdev
// that holds it, as the kernel's address resolution does for a local
// destination (rdma_translate_ip). Our own netdev: its own MAC (the frames loop
// inside burst); another netdev of this namespace: its MAC, reached over the
// wire out of ifindex as an RNIC would. An address of a netdev without an
// Ethernet address (lo) is EHOSTUNREACH.
Status resolve_local(RtnlSocket& rtnl, uint32_t ifindex, const Gid& dst, MacAddr* out,
                     uint32_t* owner) {
  const std::string d = format_gid(dst);
  alignas(nlmsghdr) char buf[kRequestBufSize];
  *owner = 0;
  Status st = rtnl.transact(
      build_getaddr_dump(buf, gid_family(dst), 0),
      [&](const nlmsghdr* nlh) {
        AddrRecord a;
        // Ours first when several netdevs hold the address.
        if (*owner != ifindex && parse_addr(nlh, &a) && a.addr == dst &&
            (*owner == 0 || a.ifindex == ifindex))
          *owner = a.ifindex;
      },
      "address dump for " + d);
  if (!st.ok()) return st;
  if (*owner == 0) {
    return Status::Error(EHOSTUNREACH, d + " is an address of this host that no netdev holds");
  }
  NetdevInfo nd;
  st = query_netdev(rtnl, *owner, &nd);
  if (!st.ok()) return st;
  if (nd.link_type != ARPHRD_ETHER || (nd.flags & IFF_LOOPBACK) || nd.mac == MacAddr{}) {
    return Status::Error(EHOSTUNREACH, d + " is an address of this host on " +
                                           netdev_label(*owner) + ", which " +
                                           netdev_label(ifindex) + " cannot reach");
  }
  *out = nd.mac;
  return Status::Ok();
}

// *found = false when the kernel has no entry (ENOENT).
Status get_neigh(RtnlSocket& rtnl, uint32_t ifindex, const Gid& nh, NeighRecord* out, bool* found) {
  alignas(nlmsghdr) char buf[kRequestBufSize];
  *found = false;
  Status st = rtnl.transact(
      build_getneigh(buf, ifindex, nh),
      [&](const nlmsghdr* nlh) {
        NeighRecord n;
        if (!*found && parse_neigh(nlh, &n) && n.ifindex == ifindex && n.has_dst && n.dst == nh) {
          *out = n;
          *found = true;
        }
      },
      "neighbour lookup for " + format_gid(nh));
  if (st.code() == ENOENT) return Status::Ok();
  return st;
}

Status trigger_netlink(RtnlSocket& rtnl, uint32_t ifindex, const Gid& nh) {
  alignas(nlmsghdr) char buf[kRequestBufSize];
  Status st = rtnl.transact(
      build_neigh_use(buf, ifindex, nh), [](const nlmsghdr*) {},
      "trigger resolution of " + format_gid(nh) + " (RTM_NEWNEIGH NTF_USE)");
  if (st.code() == EPERM || st.code() == EACCES) {
    return Status::Error(st.code(), st.message() + ": needs CAP_NET_ADMIN");
  }
  return st;
}

Status trigger_udp(uint32_t ifindex, const Gid& nh) {
  const int family = gid_family(nh);
  const std::string what = "trigger resolution of " + format_gid(nh) + " (UDP to port 9)";
  int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return Status::Error(errno, errno_message(what + ": socket", errno));
  // Both options take the ifindex in network byte order.
  const uint32_t idx = htonl(ifindex);
  int rc = family == AF_INET ? setsockopt(fd, IPPROTO_IP, IP_UNICAST_IF, &idx, sizeof(idx))
                             : setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_IF, &idx, sizeof(idx));
  if (rc < 0) {
    int err = errno;
    close(fd);
    return Status::Error(err, errno_message(what + ": pin to " + netdev_label(ifindex), err));
  }
  ssize_t n;
  if (family == AF_INET) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(kDiscardPort);
    sa.sin_addr = gid_to_ipv4(nh);
    n = sendto(fd, "", 0, 0, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  } else {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(kDiscardPort);
    sa.sin6_addr = gid_to_ipv6(nh);
    if (gid_is_link_local(nh)) sa.sin6_scope_id = ifindex;
    n = sendto(fd, "", 0, 0, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa));
  }
  int err = errno;
  close(fd);
  // EAGAIN/ENOBUFS: the datagram was not queued, but the lookup that triggers
  // resolution has already happened in the send path.
  if (n < 0 && err != EAGAIN && err != ENOBUFS) {
    int code = (err == ENETUNREACH || err == EHOSTUNREACH) ? EHOSTUNREACH : err;
    return Status::Error(code, errno_message(what, err));
  }
  return Status::Ok();
}

}  // namespace

const char* nud_state_name(uint16_t state) {
  if (state & NUD_PERMANENT) return "permanent";
  if (state & NUD_NOARP) return "noarp";
  if (state & NUD_REACHABLE) return "reachable";
  if (state & NUD_STALE) return "stale";
  if (state & NUD_DELAY) return "delay";
  if (state & NUD_PROBE) return "probe";
  if (state & NUD_INCOMPLETE) return "incomplete";
  if (state & NUD_FAILED) return "failed";
  return "none";
}

Status resolve_neighbour(uint32_t ifindex, const Gid& dst, MacAddr* out) {
  return resolve_neighbour(ifindex, dst, out, ResolveOptions{}, nullptr);
}

Status resolve_neighbour(uint32_t ifindex, const Gid& dst, MacAddr* out,
                         const ResolveOptions& options, ResolveInfo* info) {
  const int64_t start = now_ms();
  ResolveInfo ri;
  auto finish = [&](const NeighRecord* n) {
    if (n != nullptr) {
      *out = n->lladdr;
      ri.state = n->state;
    }
    ri.elapsed_ms = static_cast<int>(now_ms() - start);
    if (info != nullptr) *info = ri;
    return Status::Ok();
  };
  if (gid_is_zero(dst)) return Status::Error(EINVAL, "cannot resolve the zero GID");
  if (gid_is_multicast(dst)) {
    *out = multicast_mac(dst);
    ri.next_hop = dst;
    ri.state = NUD_NOARP;
    return finish(nullptr);
  }

  RtnlSocket rtnl;
  RouteRecord route;
  Status st = route_toward(&rtnl, ifindex, dst, true, &route);
  if (!st.ok()) return st;
  if (route.type == RTN_LOCAL) {
    ri.next_hop = dst;
    ri.state = NUD_NOARP;
    st = resolve_local(rtnl, ifindex, dst, out, &ri.local_ifindex);
    return st.ok() ? finish(nullptr) : st;
  }
  const Gid nh = route.has_gateway ? route.gateway : dst;
  ri.next_hop = nh;
  const std::string nh_text = format_gid(nh);
  const std::string via = nh == dst ? "" : " (next hop " + nh_text + ")";

  // Subscribe before the first read so no update between the two is lost.
  RtnlSocket events;
  st = events.open(RTMGRP_NEIGH, true);
  if (!st.ok()) return st;

  NeighRecord n;
  bool found = false;
  st = get_neigh(rtnl, ifindex, nh, &n, &found);
  if (!st.ok()) return st;
  if (found && usable(n)) {
    if (n.state & NUD_STALE) {
      // Best effort: STALE -> DELAY -> PROBE makes the kernel re-confirm the
      // entry. RTM_NEWNEIGH needs CAP_NET_ADMIN (burstd may have dropped it);
      // a datagram through the kernel to the neighbour does the same.
      const bool netlink_ok =
          options.trigger != Trigger::kUdp && trigger_netlink(rtnl, ifindex, nh).ok();
      if (!netlink_ok && options.trigger != Trigger::kNetlink) (void)trigger_udp(ifindex, nh);
    }
    return finish(&n);
  }

  ri.triggered = true;
  if (!(found && (n.state & NUD_INCOMPLETE))) {  // INCOMPLETE: resolution already under way
    Trigger t = options.trigger;
    if (t != Trigger::kUdp) {
      st = trigger_netlink(rtnl, ifindex, nh);
      if (st.ok()) {
        t = Trigger::kNetlink;
      } else if (t == Trigger::kAuto && (st.code() == EPERM || st.code() == EACCES)) {
        t = Trigger::kUdp;
      } else {
        return st;
      }
    }
    if (t == Trigger::kUdp) {
      st = trigger_udp(ifindex, nh);
      if (!st.ok()) return st;
    }
    ri.used = t;
  }

  const char* proto = gid_is_ipv4_mapped(nh) ? "ARP" : "neighbour discovery";
  const int64_t deadline = start + std::max(options.timeout_ms, 0);
  for (;;) {
    int64_t left = deadline - now_ms();
    if (left <= 0) break;
    pollfd pfd{events.fd(), POLLIN, 0};
    int pr = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left, kRecheckMs)));
    if (pr < 0 && errno != EINTR) {
      return Status::Error(errno, errno_message("wait for neighbour updates", errno));
    }
    bool done = false;
    if (pr > 0) {
      bool overrun = false;
      st = events.drain(
          [&](const nlmsghdr* nlh) {
            NeighRecord e;
            if (!done && parse_neigh(nlh, &e) && nlh->nlmsg_type == RTM_NEWNEIGH &&
                e.ifindex == ifindex && e.has_dst && e.dst == nh && usable(e)) {
              n = e;
              done = true;
            }
          },
          &overrun);
      if (!st.ok()) return st;
    }
    if (done) return finish(&n);
    st = get_neigh(rtnl, ifindex, nh, &n, &found);
    if (!st.ok()) return st;
    if (found && usable(n)) return finish(&n);
    if (found && (n.state & NUD_FAILED)) {
      return Status::Error(EHOSTUNREACH, "cannot resolve " + format_gid(dst) + via + " on " +
                                             netdev_label(ifindex) + ": " + proto +
                                             " failed (no answer)");
    }
  }
  return Status::Error(EHOSTUNREACH, "cannot resolve " + format_gid(dst) + via + " on " +
                                         netdev_label(ifindex) + ": no " + proto +
                                         " answer within " + std::to_string(options.timeout_ms) +
                                         " ms");
}

Status local_gid_for(uint32_t ifindex, const Gid& dst, Gid* src) {
  if (gid_is_zero(dst)) return Status::Error(EINVAL, "no source address for the zero GID");
  RtnlSocket rtnl;
  RouteRecord route;
  Status st = route_toward(&rtnl, ifindex, dst, false, &route);
  if (!st.ok()) return st;
  if (!route.has_prefsrc) {
    return Status::Error(EADDRNOTAVAIL, "no source address toward " + format_gid(dst) + " on " +
                                            netdev_label(ifindex));
  }
  *src = route.prefsrc;
  return Status::Ok();
}

}  // namespace burst::net
