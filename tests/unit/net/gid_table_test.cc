// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "net/gid_table.h"

#include <gtest/gtest.h>
#include <linux/if_addr.h>
#include <linux/rtnetlink.h>

#include <string>
#include <vector>

namespace burst::net {
namespace {

Gid G(const char* text) {
  Gid g{};
  EXPECT_TRUE(parse_gid(text, &g)) << text;
  return g;
}

IfAddress A(const char* text, uint8_t prefix, uint8_t scope = RT_SCOPE_UNIVERSE) {
  return IfAddress{G(text), prefix, scope, IFA_F_PERMANENT};
}

std::vector<std::string> texts(const std::vector<Gid>& table) {
  std::vector<std::string> out;
  for (const Gid& g : table) out.push_back(gid_is_zero(g) ? "-" : format_gid(g));
  return out;
}

// A netdev as the kernel reports it: MAC 02:00:00:00:00:01, link-local from
// the MAC, IPv6 list global first.
NetdevInfo netdev() {
  NetdevInfo n;
  n.name = "va";
  n.ifindex = 5;
  n.mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  n.ipv4 = {A("10.77.0.1", 24)};
  n.ipv6 = {A("fd77::1", 64), A("fe80::ff:fe00:1", 64, RT_SCOPE_LINK)};
  return n;
}

TEST(GidTable, RxeOrderDefaultThenIpv4ThenIpv6) {
  EXPECT_EQ(texts(build_gid_table(netdev())),
            (std::vector<std::string>{"fe80::ff:fe00:1", "10.77.0.1", "fd77::1"}));
}

TEST(GidTable, DefaultGidPresentWithoutAnyAddress) {
  NetdevInfo n = netdev();
  n.ipv4.clear();
  n.ipv6.clear();
  EXPECT_EQ(texts(build_gid_table(n)), (std::vector<std::string>{"fe80::ff:fe00:1"}));
}

TEST(GidTable, SeveralAddressesKeepKernelOrder) {
  NetdevInfo n = netdev();
  n.ipv4 = {A("10.77.0.1", 24), A("10.77.0.9", 24), A("192.168.5.1", 16)};
  n.ipv6 = {A("2001:db8::2", 64), A("fd77::1", 64), A("fe80::ff:fe00:1", 64, RT_SCOPE_LINK)};
  EXPECT_EQ(texts(build_gid_table(n)),
            (std::vector<std::string>{"fe80::ff:fe00:1", "10.77.0.1", "10.77.0.9", "192.168.5.1",
                                      "2001:db8::2", "fd77::1"}));
}

TEST(GidTable, NonEui64LinkLocalGetsItsOwnEntry) {
  // addr_gen_mode stable_secret/random: the link-local differs from the default GID.
  NetdevInfo n = netdev();
  n.ipv6 = {A("fe80::1234:5678:9abc:def0", 64, RT_SCOPE_LINK)};
  EXPECT_EQ(texts(build_gid_table(n)), (std::vector<std::string>{"fe80::ff:fe00:1", "10.77.0.1",
                                                                 "fe80::1234:5678:9abc:def0"}));
}

TEST(GidTable, DuplicateAddressesCollapse) {
  NetdevInfo n = netdev();
  n.ipv6 = {A("fd77::1", 64), A("fd77::1", 128)};
  EXPECT_EQ(texts(build_gid_table(n)),
            (std::vector<std::string>{"fe80::ff:fe00:1", "10.77.0.1", "fd77::1"}));
}

TEST(GidTable, RemovedAddressLeavesHoleAndNewOneFillsIt) {
  GidTable t;
  NetdevInfo n = netdev();
  EXPECT_TRUE(t.update(n));
  EXPECT_FALSE(t.update(n));  // no change

  n.ipv4.clear();  // 10.77.0.1 goes: slot 1 empties, fd77::1 keeps slot 2
  EXPECT_TRUE(t.update(n));
  EXPECT_EQ(texts(t.entries()), (std::vector<std::string>{"fe80::ff:fe00:1", "-", "fd77::1"}));
  EXPECT_EQ(t.find(G("fd77::1")), 2);
  EXPECT_EQ(t.find(G("10.77.0.1")), -1);
  EXPECT_EQ(t.find(kZeroGid), -1);  // an empty slot is not a match

  n.ipv6.insert(n.ipv6.begin(), A("2001:db8::5", 64));  // takes the lowest free slot
  EXPECT_TRUE(t.update(n));
  EXPECT_EQ(texts(t.entries()),
            (std::vector<std::string>{"fe80::ff:fe00:1", "2001:db8::5", "fd77::1"}));

  n.ipv4 = {A("10.77.0.1", 24)};  // appended after the last slot
  EXPECT_TRUE(t.update(n));
  EXPECT_EQ(t.find(G("10.77.0.1")), 3);
}

TEST(GidTable, TrailingHolesAreTrimmed) {
  GidTable t;
  NetdevInfo n = netdev();
  t.update(n);
  n.ipv6.clear();
  EXPECT_TRUE(t.update(n));
  EXPECT_EQ(texts(t.entries()), (std::vector<std::string>{"fe80::ff:fe00:1", "10.77.0.1"}));
}

TEST(GidTable, MacChangeRebuildsWithoutHoles) {
  GidTable t;
  NetdevInfo n = netdev();
  n.ipv4 = {A("10.77.0.1", 24), A("10.77.0.2", 24)};
  t.update(n);
  n.ipv4 = {A("10.77.0.2", 24)};
  t.update(n);
  ASSERT_EQ(texts(t.entries()),
            (std::vector<std::string>{"fe80::ff:fe00:1", "-", "10.77.0.2", "fd77::1"}));
  n.mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  n.ipv6 = {A("fd77::1", 64), A("fe80::ff:fe00:2", 64, RT_SCOPE_LINK)};
  EXPECT_TRUE(t.update(n));
  EXPECT_EQ(texts(t.entries()),
            (std::vector<std::string>{"fe80::ff:fe00:2", "10.77.0.2", "fd77::1"}));
}

TEST(GidTable, CapacityLimit) {
  NetdevInfo n = netdev();
  GidTable t(2);
  t.update(n);
  EXPECT_EQ(texts(t.entries()), (std::vector<std::string>{"fe80::ff:fe00:1", "10.77.0.1"}));
  EXPECT_EQ(t.dropped(), 1u);
  EXPECT_EQ(build_gid_table(n, 1).size(), 1u);
}

}  // namespace
}  // namespace burst::net
