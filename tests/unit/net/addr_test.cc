// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "net/addr.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <sys/socket.h>

namespace burst::net {
namespace {

Gid G(const char* text) {
  Gid g{};
  EXPECT_TRUE(parse_gid(text, &g)) << text;
  return g;
}

TEST(Addr, Ipv4MappedLayout) {
  in_addr a;
  ASSERT_EQ(inet_pton(AF_INET, "10.77.0.1", &a), 1);
  Gid g = gid_from_ipv4(a);
  const Gid want = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 1};
  EXPECT_EQ(g, want);
  EXPECT_TRUE(gid_is_ipv4_mapped(g));
  EXPECT_EQ(gid_family(g), AF_INET);
  EXPECT_EQ(gid_to_ipv4(g).s_addr, a.s_addr);
  EXPECT_EQ(format_gid(g), "10.77.0.1");
}

TEST(Addr, Ipv6IsNotMapped) {
  Gid g = G("fd77::1");
  EXPECT_FALSE(gid_is_ipv4_mapped(g));
  EXPECT_EQ(gid_family(g), AF_INET6);
  EXPECT_EQ(format_gid(g), "fd77::1");
  // ::ffff:0:0/96 only: a v4-compatible (::a.b.c.d) or a near miss is IPv6.
  EXPECT_FALSE(gid_is_ipv4_mapped(G("::10.0.0.1")));
  EXPECT_FALSE(gid_is_ipv4_mapped(G("::fffe:10.0.0.1")));
  EXPECT_FALSE(gid_is_ipv4_mapped(G("1::ffff:10.0.0.1")));
}

TEST(Addr, ParseAcceptsAllForms) {
  EXPECT_EQ(G("::ffff:192.168.1.2"), G("192.168.1.2"));
  EXPECT_EQ(G("::ffff:c0a8:102"), G("192.168.1.2"));
  Gid g{};
  EXPECT_FALSE(parse_gid("", &g));
  EXPECT_FALSE(parse_gid("10.0.0.256", &g));
  EXPECT_FALSE(parse_gid("fe80::1%eth0", &g));
  EXPECT_FALSE(parse_gid(std::string(100, '1'), &g));
  EXPECT_EQ(g, kZeroGid);  // untouched on failure
}

TEST(Addr, LinkLocalFromMacIsModifiedEui64) {
  // 02:00:00:00:00:01 flips the U/L bit: 00:00:00:ff:fe:00:00:01.
  EXPECT_EQ(gid_link_local_from_mac({0x02, 0x00, 0x00, 0x00, 0x00, 0x01}), G("fe80::ff:fe00:1"));
  EXPECT_EQ(gid_link_local_from_mac({0x52, 0x54, 0x00, 0x12, 0x34, 0x56}),
            G("fe80::5054:ff:fe12:3456"));
  EXPECT_TRUE(gid_is_link_local(G("fe80::1")));
  EXPECT_TRUE(gid_is_link_local(G("febf::1")));
  EXPECT_FALSE(gid_is_link_local(G("fec0::1")));
  EXPECT_FALSE(gid_is_link_local(G("10.0.0.1")));
}

TEST(Addr, Multicast) {
  EXPECT_TRUE(gid_is_multicast(G("ff0e::1:2")));
  EXPECT_TRUE(gid_is_multicast(G("239.1.2.3")));
  EXPECT_FALSE(gid_is_multicast(G("10.1.2.3")));
  EXPECT_FALSE(gid_is_multicast(G("fd00::1")));
  EXPECT_EQ(multicast_mac(G("ff0e::1:2:3")), (MacAddr{0x33, 0x33, 0x00, 0x02, 0x00, 0x03}));
  // IPv4: only the low 23 bits go into 01:00:5e.
  EXPECT_EQ(multicast_mac(G("239.129.2.3")), (MacAddr{0x01, 0x00, 0x5e, 0x01, 0x02, 0x03}));
}

TEST(Addr, Mac) {
  MacAddr m{};
  ASSERT_TRUE(parse_mac("02:Ab:cd:EF:00:9f", &m));
  EXPECT_EQ(m, (MacAddr{0x02, 0xab, 0xcd, 0xef, 0x00, 0x9f}));
  EXPECT_EQ(format_mac(m), "02:ab:cd:ef:00:9f");
  EXPECT_FALSE(parse_mac("02:ab:cd:ef:00", &m));
  EXPECT_FALSE(parse_mac("02-ab-cd-ef-00-9f", &m));
  EXPECT_FALSE(parse_mac("02:ab:cd:ef:00:9g", &m));
}

}  // namespace
}  // namespace burst::net
