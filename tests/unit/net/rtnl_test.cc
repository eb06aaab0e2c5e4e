// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Request builders and reply parsers of net/rtnl against hand-made
// netlink buffers (nl_test_util.h), plus read-only queries of the test's own
// network namespace (no privilege, nothing configured).
#include "net/rtnl.h"

#include <gtest/gtest.h>
#include <linux/if_addr.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>
#include <net/if.h>  // glibc's, with <net/if_arp.h>: no <linux/if.h> (they clash)
#include <net/if_arp.h>

#include <cerrno>
#include <cstring>

#include "net/netdev.h"
#include "tests/unit/net/nl_test_util.h"

namespace burst::net {
namespace {

using testing::decode_attrs;
using testing::NlMsg;

constexpr uint8_t kOperUp = 6;  // IF_OPER_UP, from <linux/if.h> (which clashes with <net/if.h>)

Gid G(const char* text) {
  Gid g{};
  EXPECT_TRUE(parse_gid(text, &g)) << text;
  return g;
}

std::vector<uint8_t> v4(const char* text) {
  Gid g = G(text);
  return {g[12], g[13], g[14], g[15]};
}

std::vector<uint8_t> v6(const char* text) {
  Gid g = G(text);
  return std::vector<uint8_t>(g.begin(), g.end());
}

// ---- Parsers -------------------------------------------------------------

TEST(RtnlParse, Link) {
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_type = ARPHRD_ETHER;
  ifi.ifi_index = 7;
  ifi.ifi_flags = IFF_UP | IFF_RUNNING;
  NlMsg m(RTM_NEWLINK, 0, ifi);
  m.str(IFLA_IFNAME, "va")
      .bytes(IFLA_ADDRESS, {0x02, 0, 0, 0, 0, 0x01})
      .bytes(IFLA_BROADCAST, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
      .u32(IFLA_MTU, 9000)
      .u8(IFLA_OPERSTATE, kOperUp)
      .u32(IFLA_NUM_RX_QUEUES, 4)
      .u32(IFLA_NUM_TX_QUEUES, 3)
      .u32(999, 1);  // unknown attribute: ignored
  LinkRecord r;
  ASSERT_TRUE(parse_link(m.hdr(), &r));
  EXPECT_EQ(r.ifindex, 7u);
  EXPECT_EQ(r.type, ARPHRD_ETHER);
  EXPECT_EQ(r.flags, static_cast<uint32_t>(IFF_UP | IFF_RUNNING));
  EXPECT_EQ(r.name, "va");
  EXPECT_TRUE(r.has_mac);
  EXPECT_EQ(r.mac, (MacAddr{0x02, 0, 0, 0, 0, 0x01}));
  EXPECT_EQ(r.mtu, 9000u);
  EXPECT_EQ(r.operstate, kOperUp);
  EXPECT_EQ(r.num_rx_queues, 4u);
  EXPECT_EQ(r.num_tx_queues, 3u);
}

TEST(RtnlParse, LinkWithoutEthernetAddress) {
  ifinfomsg ifi{};
  ifi.ifi_type = ARPHRD_NONE;
  ifi.ifi_index = 3;
  NlMsg m(RTM_NEWLINK, 0, ifi);
  m.str(IFLA_IFNAME, "tun0").u32(IFLA_MTU, 1400);
  LinkRecord r;
  ASSERT_TRUE(parse_link(m.hdr(), &r));
  EXPECT_FALSE(r.has_mac);
  EXPECT_EQ(r.num_rx_queues, 0u);
}

TEST(RtnlParse, LinkRejectsMalformed) {
  ifinfomsg ifi{};
  LinkRecord r;
  {
    NlMsg m(RTM_NEWLINK, 0, ifi);
    m.bytes(IFLA_MTU, {1, 2});  // short u32
    EXPECT_FALSE(parse_link(m.hdr(), &r));
  }
  {
    NlMsg m(RTM_NEWLINK, 0, ifi);
    m.bytes(IFLA_IFNAME, {'v', 'a'});  // not NUL-terminated
    EXPECT_FALSE(parse_link(m.hdr(), &r));
  }
  {
    NlMsg m(RTM_NEWADDR, 0, ifi);  // wrong message type
    EXPECT_FALSE(parse_link(m.hdr(), &r));
  }
  {
    NlMsg m(RTM_NEWLINK, 0, ifi);
    m.u32(IFLA_MTU, 1500);
    // An attribute whose length runs past the message.
    uint16_t len = 64;
    auto* attr = reinterpret_cast<uint8_t*>(m.mutable_hdr()) + 16 + sizeof(ifinfomsg);
    std::memcpy(attr, &len, 2);
    EXPECT_FALSE(parse_link(m.hdr(), &r));
  }
  {
    NlMsg m(RTM_NEWLINK, 0, ifi);
    m.mutable_hdr()->nlmsg_len = 20;  // shorter than the family header
    EXPECT_FALSE(parse_link(m.hdr(), &r));
  }
}

TEST(RtnlParse, Ipv4AddrPrefersLocal) {
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_INET;
  ifa.ifa_prefixlen = 24;
  ifa.ifa_scope = RT_SCOPE_UNIVERSE;
  ifa.ifa_flags = IFA_F_PERMANENT;
  ifa.ifa_index = 7;
  // Point-to-point style: IFA_ADDRESS is the peer, IFA_LOCAL ours.
  NlMsg m(RTM_NEWADDR, 0, ifa);
  m.bytes(IFA_ADDRESS, v4("10.77.0.2")).bytes(IFA_LOCAL, v4("10.77.0.1"));
  AddrRecord r;
  ASSERT_TRUE(parse_addr(m.hdr(), &r));
  EXPECT_EQ(r.family, AF_INET);
  EXPECT_EQ(r.ifindex, 7u);
  EXPECT_EQ(r.prefix_len, 24);
  EXPECT_EQ(r.addr, G("10.77.0.1"));
  EXPECT_TRUE(gid_is_ipv4_mapped(r.addr));
  EXPECT_EQ(r.flags, static_cast<uint32_t>(IFA_F_PERMANENT));
}

TEST(RtnlParse, Ipv6AddrWithExtendedFlags) {
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_INET6;
  ifa.ifa_prefixlen = 64;
  ifa.ifa_scope = RT_SCOPE_LINK;
  ifa.ifa_flags = IFA_F_PERMANENT;
  ifa.ifa_index = 9;
  NlMsg m(RTM_DELADDR, 0, ifa);
  m.bytes(IFA_ADDRESS, v6("fe80::1")).u32(IFA_FLAGS, IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE);
  AddrRecord r;
  ASSERT_TRUE(parse_addr(m.hdr(), &r));
  EXPECT_EQ(r.family, AF_INET6);
  EXPECT_EQ(r.scope, RT_SCOPE_LINK);
  EXPECT_EQ(r.addr, G("fe80::1"));
  EXPECT_EQ(r.flags, static_cast<uint32_t>(IFA_F_PERMANENT | IFA_F_NOPREFIXROUTE));
}

TEST(RtnlParse, AddrRejectsWrongSizeOrFamily) {
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_INET;
  AddrRecord r;
  NlMsg a(RTM_NEWADDR, 0, ifa);
  a.bytes(IFA_ADDRESS, v6("fd77::1"));  // 16 bytes in an IPv4 message
  EXPECT_FALSE(parse_addr(a.hdr(), &r));
  NlMsg b(RTM_NEWADDR, 0, ifa);  // no address at all
  EXPECT_FALSE(parse_addr(b.hdr(), &r));
  ifa.ifa_family = AF_PACKET;
  NlMsg c(RTM_NEWADDR, 0, ifa);
  c.bytes(IFA_ADDRESS, v4("10.0.0.1"));
  EXPECT_FALSE(parse_addr(c.hdr(), &r));
}

TEST(RtnlParse, RouteViaGateway) {
  rtmsg rtm{};
  rtm.rtm_family = AF_INET;
  rtm.rtm_dst_len = 32;
  rtm.rtm_table = RT_TABLE_MAIN;
  rtm.rtm_type = RTN_UNICAST;
  NlMsg m(RTM_NEWROUTE, 0, rtm);
  m.bytes(RTA_DST, v4("192.0.2.9"))
      .u32(RTA_OIF, 7)
      .bytes(RTA_GATEWAY, v4("10.77.0.254"))
      .bytes(RTA_PREFSRC, v4("10.77.0.1"))
      .u32(RTA_TABLE, 254);
  RouteRecord r;
  ASSERT_TRUE(parse_route(m.hdr(), &r));
  EXPECT_EQ(r.type, RTN_UNICAST);
  EXPECT_EQ(r.oif, 7u);
  EXPECT_TRUE(r.has_gateway);
  EXPECT_EQ(r.gateway, G("10.77.0.254"));
  EXPECT_TRUE(r.has_prefsrc);
  EXPECT_EQ(r.prefsrc, G("10.77.0.1"));
  EXPECT_EQ(r.dst, G("192.0.2.9"));
  EXPECT_EQ(r.table, 254u);
}

TEST(RtnlParse, RouteOnLinkIpv6) {
  rtmsg rtm{};
  rtm.rtm_family = AF_INET6;
  rtm.rtm_dst_len = 128;
  rtm.rtm_type = RTN_UNICAST;
  NlMsg m(RTM_NEWROUTE, 0, rtm);
  m.bytes(RTA_DST, v6("fd77::2")).u32(RTA_OIF, 7).bytes(RTA_PREFSRC, v6("fd77::1"));
  RouteRecord r;
  ASSERT_TRUE(parse_route(m.hdr(), &r));
  EXPECT_FALSE(r.has_gateway);
  EXPECT_EQ(r.prefsrc, G("fd77::1"));
}

TEST(RtnlParse, RouteIpv4WithIpv6NextHop) {
  rtmsg rtm{};
  rtm.rtm_family = AF_INET;
  rtm.rtm_type = RTN_UNICAST;
  NlMsg m(RTM_NEWROUTE, 0, rtm);
  std::vector<uint8_t> via = {AF_INET6 & 0xff, AF_INET6 >> 8};  // rtvia_family (host order)
  std::vector<uint8_t> a = v6("fe80::1");
  via.insert(via.end(), a.begin(), a.end());
  m.bytes(RTA_VIA, via).u32(RTA_OIF, 2);
  RouteRecord r;
  ASSERT_TRUE(parse_route(m.hdr(), &r));
  ASSERT_TRUE(r.has_gateway);
  EXPECT_EQ(r.gateway, G("fe80::1"));
  EXPECT_EQ(gid_family(r.gateway), AF_INET6);
}

TEST(RtnlParse, NeighWithAndWithoutLladdr) {
  ndmsg ndm{};
  ndm.ndm_family = AF_INET;
  ndm.ndm_ifindex = 7;
  ndm.ndm_state = NUD_REACHABLE;
  NlMsg m(RTM_NEWNEIGH, 0, ndm);
  m.bytes(NDA_DST, v4("10.77.0.2")).bytes(NDA_LLADDR, {0x02, 0, 0, 0, 0, 0x02});
  NeighRecord r;
  ASSERT_TRUE(parse_neigh(m.hdr(), &r));
  EXPECT_EQ(r.ifindex, 7u);
  EXPECT_EQ(r.state, NUD_REACHABLE);
  EXPECT_TRUE(r.has_dst);
  EXPECT_EQ(r.dst, G("10.77.0.2"));
  EXPECT_TRUE(r.has_lladdr);
  EXPECT_EQ(r.lladdr, (MacAddr{0x02, 0, 0, 0, 0, 0x02}));

  ndm.ndm_family = AF_INET6;
  ndm.ndm_state = NUD_INCOMPLETE;
  NlMsg n(RTM_NEWNEIGH, 0, ndm);
  n.bytes(NDA_DST, v6("fd77::2"));
  ASSERT_TRUE(parse_neigh(n.hdr(), &r));
  EXPECT_EQ(r.state, NUD_INCOMPLETE);
  EXPECT_FALSE(r.has_lladdr);
  EXPECT_EQ(r.dst, G("fd77::2"));
}

// ---- Errors --------------------------------------------------------------

TEST(RtnlParse, AckAndErrorWithExtack) {
  nlmsghdr orig{};
  orig.nlmsg_len = 40;  // the echoed request, uncapped: 40 bytes of it follow
  orig.nlmsg_type = RTM_GETLINK;
  {
    nlmsgerr e{};
    e.error = 0;
    e.msg = orig;
    NlMsg m(NLMSG_ERROR, 0, e);
    int err = -1;
    std::string ext = "stale";
    ASSERT_TRUE(parse_error(m.hdr(), &err, &ext));
    EXPECT_EQ(err, 0);
    EXPECT_TRUE(ext.empty());
  }
  {
    // Uncapped: nlmsgerr.error, the whole 40-byte request, then TLVs.
    std::vector<uint8_t> payload(4 + 40, 0);
    int32_t error = -ENODEV;
    std::memcpy(payload.data(), &error, 4);
    std::memcpy(payload.data() + 4, &orig, sizeof(orig));
    NlMsg m(NLMSG_ERROR, NLM_F_ACK_TLVS, payload.data(), payload.size());
    m.str(NLMSGERR_ATTR_MSG, "Device not found").u32(NLMSGERR_ATTR_OFFS, 20);
    int err = 0;
    std::string ext;
    ASSERT_TRUE(parse_error(m.hdr(), &err, &ext));
    EXPECT_EQ(err, ENODEV);
    EXPECT_EQ(ext, "Device not found");
  }
  {
    // Capped (NETLINK_CAP_ACK): only the request's header is echoed.
    nlmsgerr e{};
    e.error = -EPERM;
    e.msg = orig;
    NlMsg m(NLMSG_ERROR, NLM_F_CAPPED | NLM_F_ACK_TLVS, e);
    m.str(NLMSGERR_ATTR_MSG, "nope");
    int err = 0;
    std::string ext;
    ASSERT_TRUE(parse_error(m.hdr(), &err, &ext));
    EXPECT_EQ(err, EPERM);
    EXPECT_EQ(ext, "nope");
  }
  {
    uint16_t shorty = 0;
    NlMsg m(NLMSG_ERROR, 0, shorty);  // too short for nlmsgerr
    int err = 0;
    std::string ext;
    EXPECT_FALSE(parse_error(m.hdr(), &err, &ext));
  }
}

TEST(RtnlParse, DoneCarriesDumpError) {
  int32_t ok = 0;
  NlMsg a(NLMSG_DONE, NLM_F_MULTI, ok);
  int err = -1;
  std::string ext;
  ASSERT_TRUE(parse_done(a.hdr(), &err, &ext));
  EXPECT_EQ(err, 0);
  int32_t bad = -EINVAL;
  NlMsg b(NLMSG_DONE, NLM_F_MULTI | NLM_F_ACK_TLVS, bad);
  b.str(NLMSGERR_ATTR_MSG, "Invalid header for address dump request");
  ASSERT_TRUE(parse_done(b.hdr(), &err, &ext));
  EXPECT_EQ(err, EINVAL);
  EXPECT_EQ(ext, "Invalid header for address dump request");
}

// ---- Builders ------------------------------------------------------------

template <typename T>
const T* family_hdr(const nlmsghdr* nlh) {
  return reinterpret_cast<const T*>(reinterpret_cast<const uint8_t*>(nlh) + 16);
}

TEST(RtnlBuild, GetLinkByName) {
  alignas(nlmsghdr) char buf[kRequestBufSize];
  const nlmsghdr* nlh = build_getlink_by_name(buf, "va");
  EXPECT_EQ(nlh->nlmsg_type, RTM_GETLINK);
  EXPECT_EQ(nlh->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(family_hdr<ifinfomsg>(nlh)->ifi_index, 0);
  std::map<uint16_t, std::vector<uint8_t>> at;
  ASSERT_TRUE(decode_attrs(nlh, sizeof(ifinfomsg), &at));
  EXPECT_EQ(at[IFLA_IFNAME], (std::vector<uint8_t>{'v', 'a', 0}));
  ASSERT_EQ(at[IFLA_EXT_MASK].size(), 4u);
}

TEST(RtnlBuild, GetAddrDump) {
  alignas(nlmsghdr) char buf[kRequestBufSize];
  const nlmsghdr* nlh = build_getaddr_dump(buf, AF_INET6, 7);
  EXPECT_EQ(nlh->nlmsg_type, RTM_GETADDR);
  EXPECT_EQ(nlh->nlmsg_flags & NLM_F_DUMP, NLM_F_DUMP);
  EXPECT_EQ(family_hdr<ifaddrmsg>(nlh)->ifa_family, AF_INET6);
  EXPECT_EQ(family_hdr<ifaddrmsg>(nlh)->ifa_index, 7u);
  EXPECT_EQ(nlh->nlmsg_len, 16 + sizeof(ifaddrmsg));
}

TEST(RtnlBuild, GetRouteIpv4AndIpv6) {
  alignas(nlmsghdr) char buf[kRequestBufSize];
  const nlmsghdr* nlh = build_getroute(buf, G("10.77.0.2"), 0);
  const rtmsg* rtm = family_hdr<rtmsg>(nlh);
  EXPECT_EQ(nlh->nlmsg_type, RTM_GETROUTE);
  EXPECT_EQ(rtm->rtm_family, AF_INET);
  EXPECT_EQ(rtm->rtm_dst_len, 32);
  std::map<uint16_t, std::vector<uint8_t>> at;
  ASSERT_TRUE(decode_attrs(nlh, sizeof(rtmsg), &at));
  EXPECT_EQ(at[RTA_DST], v4("10.77.0.2"));
  EXPECT_EQ(at.count(RTA_OIF), 0u);

  nlh = build_getroute(buf, G("fe80::2"), 7);
  rtm = family_hdr<rtmsg>(nlh);
  EXPECT_EQ(rtm->rtm_family, AF_INET6);
  EXPECT_EQ(rtm->rtm_dst_len, 128);
  at.clear();
  ASSERT_TRUE(decode_attrs(nlh, sizeof(rtmsg), &at));
  EXPECT_EQ(at[RTA_DST], v6("fe80::2"));
  uint32_t oif = 0;
  ASSERT_EQ(at[RTA_OIF].size(), 4u);
  std::memcpy(&oif, at[RTA_OIF].data(), 4);
  EXPECT_EQ(oif, 7u);
}

TEST(RtnlBuild, NeighGetAndUse) {
  alignas(nlmsghdr) char buf[kRequestBufSize];
  const nlmsghdr* nlh = build_getneigh(buf, 7, G("10.77.0.2"));
  const ndmsg* ndm = family_hdr<ndmsg>(nlh);
  EXPECT_EQ(nlh->nlmsg_type, RTM_GETNEIGH);
  EXPECT_EQ(nlh->nlmsg_flags & NLM_F_DUMP, 0);
  EXPECT_EQ(ndm->ndm_family, AF_INET);
  EXPECT_EQ(ndm->ndm_ifindex, 7);
  EXPECT_EQ(ndm->ndm_state, 0);  // strict checking refuses anything else
  EXPECT_EQ(ndm->ndm_flags, 0);
  std::map<uint16_t, std::vector<uint8_t>> at;
  ASSERT_TRUE(decode_attrs(nlh, sizeof(ndmsg), &at));
  EXPECT_EQ(at[NDA_DST], v4("10.77.0.2"));

  nlh = build_neigh_use(buf, 7, G("fd77::2"));
  ndm = family_hdr<ndmsg>(nlh);
  EXPECT_EQ(nlh->nlmsg_type, RTM_NEWNEIGH);
  EXPECT_EQ(nlh->nlmsg_flags & (NLM_F_CREATE | NLM_F_EXCL | NLM_F_REPLACE), NLM_F_CREATE);
  EXPECT_EQ(ndm->ndm_family, AF_INET6);
  EXPECT_EQ(ndm->ndm_flags, NTF_USE);
  at.clear();
  ASSERT_TRUE(decode_attrs(nlh, sizeof(ndmsg), &at));
  EXPECT_EQ(at[NDA_DST], v6("fd77::2"));
  EXPECT_EQ(at.count(NDA_LLADDR), 0u);
}

// ---- Against the kernel, read-only, in the test's own namespace -----------

TEST(RtnlKernel, QueryLoopback) {
  NetdevInfo info;
  Status st = query_netdev("lo", &info);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(info.name, "lo");
  EXPECT_EQ(info.ifindex, if_nametoindex("lo"));
  EXPECT_EQ(info.link_type, ARPHRD_LOOPBACK);
  EXPECT_GT(info.mtu, 0u);
  EXPECT_GE(info.rx_queues, 1u);
  NetdevInfo by_index;
  st = query_netdev(info.ifindex, &by_index);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(by_index.name, "lo");
  EXPECT_EQ(by_index.ipv4, info.ipv4);
}

TEST(RtnlKernel, MissingNetdevIsEnodevWithName) {
  NetdevInfo info;
  Status st = query_netdev("burst-nope0", &info);
  EXPECT_EQ(st.code(), ENODEV);
  EXPECT_NE(st.message().find("'burst-nope0'"), std::string::npos) << st.message();
  st = query_netdev("a-name-longer-than-15", &info);
  EXPECT_EQ(st.code(), EINVAL);
  st = query_netdev("", &info);
  EXPECT_EQ(st.code(), EINVAL);
  st = query_netdev(0x7ffffff0u, &info);
  EXPECT_EQ(st.code(), ENODEV);
}

}  // namespace
}  // namespace burst::net
