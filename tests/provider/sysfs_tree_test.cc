// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The burst-owned sysfs tree (tools/burstctl/sysfs_tree) and the shared device
// constants (abi/burst_device.h), without root or RDMA packages.
#include "tools/burstctl/sysfs_tree.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "abi/burst_device.h"

namespace burst::tools {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

net::NetdevInfo veth(std::initializer_list<const char*> v4, std::initializer_list<const char*> v6) {
  net::NetdevInfo nd;
  nd.name = "v0";
  nd.ifindex = 7;
  nd.link_type = ARPHRD_ETHER;
  nd.mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  nd.mtu = 1500;
  nd.flags = IFF_UP | IFF_RUNNING;
  for (const char* a : v4) {
    in_addr x{};
    inet_pton(AF_INET, a, &x);
    nd.ipv4.push_back({net::gid_from_ipv4(x), 24, 0, 0});
  }
  for (const char* a : v6) {
    in6_addr x{};
    inet_pton(AF_INET6, a, &x);
    nd.ipv6.push_back({net::gid_from_ipv6(x), 64, 0, 0});
  }
  return nd;
}

class SysfsTree : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/burst-sysfs-test.XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    root_ = templ;
    ib_ = root_ + "/class/infiniband/burst0";
    port_ = ib_ + "/ports/1";
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(root_).ok()); }

  std::string root_, ib_, port_;
};

TEST(SysfsFormat, GidAndGuidText) {
  net::Gid g{};
  in_addr a{};
  inet_pton(AF_INET, "10.44.0.1", &a);
  g = net::gid_from_ipv4(a);
  EXPECT_EQ(sysfs_gid(g), "0000:0000:0000:0000:0000:ffff:0a2c:0001");
  EXPECT_EQ(sysfs_guid(0x021122fffe334455ull), "0211:22ff:fe33:4455");
  // Modified EUI-64: universal/local bit flipped, ff:fe in the middle.
  EXPECT_EQ(node_guid_from_mac({0x00, 0x11, 0x22, 0x33, 0x44, 0x55}), 0x021122fffe334455ull);
}

TEST(BurstDevice, IbMtuForNetdevMtu) {
  EXPECT_EQ(burst_ib_mtu_for_netdev(0), 0);
  EXPECT_EQ(burst_ib_mtu_for_netdev(BURST_ROCE_MAX_HDR_BYTES + 255), 0);
  EXPECT_EQ(burst_ib_mtu_for_netdev(BURST_ROCE_MAX_HDR_BYTES + 256), 1);  // IBV_MTU_256
  EXPECT_EQ(burst_ib_mtu_for_netdev(1500), 3);                            // 1024
  EXPECT_EQ(burst_ib_mtu_for_netdev(4064), 4);                            // 2048
  EXPECT_EQ(burst_ib_mtu_for_netdev(BURST_ROCE_MAX_HDR_BYTES + 4095), 4);
  EXPECT_EQ(burst_ib_mtu_for_netdev(BURST_ROCE_MAX_HDR_BYTES + 4096), 5);  // 4096
  EXPECT_EQ(burst_ib_mtu_for_netdev(9000), 5);
  EXPECT_EQ(burst_ib_mtu_for_netdev(65535), 5);
}

TEST_F(SysfsTree, LayoutLibibverbsReads) {
  SysfsDevice d = describe_device(veth({"10.44.0.1"}, {"fd44::1"}), "burst0", "uverbs3");
  ASSERT_EQ(d.gids.size(), 3u);
  ASSERT_TRUE(write_sysfs_tree(root_, d).ok());

  EXPECT_EQ(slurp(root_ + "/class/infiniband_verbs/abi_version"), "6\n");
  EXPECT_EQ(slurp(root_ + "/class/infiniband_verbs/uverbs3/ibdev"), "burst0\n");
  EXPECT_EQ(slurp(root_ + "/class/infiniband_verbs/uverbs3/abi_version"), "1\n");
  EXPECT_EQ(slurp(root_ + "/class/infiniband_verbs/uverbs3/dev"), "1:7\n");
  EXPECT_EQ(slurp(ib_ + "/node_type"), "1: CA\n");
  EXPECT_EQ(slurp(ib_ + "/node_guid"), "0000:00ff:fe00:0001\n");
  EXPECT_EQ(slurp(port_ + "/state"), "4: ACTIVE\n");
  EXPECT_EQ(slurp(port_ + "/link_layer"), "Ethernet\n");
  EXPECT_EQ(slurp(port_ + "/pkeys/0"), "0xffff\n");
  EXPECT_EQ(slurp(port_ + "/gids/0"), "fe80:0000:0000:0000:0000:00ff:fe00:0001\n");
  EXPECT_EQ(slurp(port_ + "/gids/1"), "0000:0000:0000:0000:0000:ffff:0a2c:0001\n");
  EXPECT_EQ(slurp(port_ + "/gids/2"), "fd44:0000:0000:0000:0000:0000:0000:0001\n");
  EXPECT_EQ(slurp(port_ + "/gid_attrs/ndevs/0"), "v0\n");
  EXPECT_EQ(slurp(port_ + "/gid_attrs/ndevs/2"), "v0\n");
  // Every slot answers; only used ones name a netdev.
  EXPECT_EQ(slurp(port_ + "/gids/255"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
  EXPECT_EQ(slurp(port_ + "/gid_attrs/types/255"), "RoCE v2\n");
  EXPECT_FALSE(exists(port_ + "/gid_attrs/ndevs/3"));
  EXPECT_FALSE(exists(port_ + "/gids/256"));
}

TEST_F(SysfsTree, RewriteLeavesNoStaleSlot) {
  ASSERT_TRUE(write_sysfs_tree(
                  root_, describe_device(veth({"10.0.0.1", "10.0.0.2"}, {}), "burst0", "uverbs0"))
                  .ok());
  EXPECT_TRUE(exists(port_ + "/gid_attrs/ndevs/2"));
  ASSERT_TRUE(
      write_sysfs_tree(root_, describe_device(veth({"10.0.0.1"}, {}), "burst0", "uverbs0")).ok());
  EXPECT_FALSE(exists(port_ + "/gid_attrs/ndevs/2"));
  EXPECT_EQ(slurp(port_ + "/gids/2"), "0000:0000:0000:0000:0000:0000:0000:0000\n");
}

TEST_F(SysfsTree, DownNetdevGivesDownPort) {
  net::NetdevInfo nd = veth({}, {});
  nd.flags = IFF_UP;  // no carrier
  ASSERT_TRUE(write_sysfs_tree(root_, describe_device(nd, "burst0", "uverbs0")).ok());
  EXPECT_EQ(slurp(port_ + "/state"), "1: DOWN\n");
  EXPECT_EQ(slurp(port_ + "/phys_state"), "3: Disabled\n");
}

}  // namespace
}  // namespace burst::tools
