// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The burst-owned sysfs tree (tools/burstctl/sysfs_tree) and the shared device
// constants (abi/burst_device.h), without root or RDMA packages.
#include "tools/burstctl/sysfs_tree.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <limits.h>
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

bool is_link(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

std::string real(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? buf : "";
}

std::string link_target(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = readlink(path.c_str(), buf, sizeof(buf) - 1);
  return n < 0 ? "" : std::string(buf, n);
}

void put(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
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
  EXPECT_FALSE(exists(root_ + "/class/infiniband_verbs/uverbs3/device/modalias"));
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

// The shape of a PCI RoCE NIC: what UCX, NCCL, Open MPI and Mooncake resolve.
TEST_F(SysfsTree, DeviceLooksLikeAPciRoceNic) {
  SysfsDevice d = describe_device(veth({"10.44.0.1"}, {}), "burst0", "uverbs3", root_ + "/nosys");
  ASSERT_TRUE(write_sysfs_tree(root_, d).ok());
  const std::string nic = root_ + "/devices/burst0";
  EXPECT_EQ(sysfs_nic_dir(root_, "burst0"), nic);
  EXPECT_EQ(sysfs_ib_dir(root_, "burst0"), nic + "/infiniband/burst0");
  // class/infiniband/burst0 is a symlink into the device, as the kernel makes it.
  EXPECT_TRUE(is_link(ib_));
  EXPECT_EQ(link_target(ib_), nic + "/infiniband/burst0");
  EXPECT_EQ(real(ib_ + "/device"), nic);         // NCCL: realpath(.../device)
  EXPECT_EQ(real(ib_ + "/../.."), nic);          // Mooncake: realpath(.../../..)
  EXPECT_EQ(real(root_ + "/class/infiniband_verbs/uverbs3/device"), nic);
  // Open MPI fnmatches the basename of readlink(device/driver).
  EXPECT_EQ(link_target(ib_ + "/device/driver"), "../../bus/burst/drivers/burst");
  EXPECT_EQ(real(ib_ + "/device/driver"), root_ + "/bus/burst/drivers/burst");
  EXPECT_EQ(real(root_ + "/bus/burst/drivers/burst/burst0"), nic);
  // UCX: numa_node, local_cpus; realpath(ibdev)/../.. holds "device", vendor.
  EXPECT_EQ(slurp(ib_ + "/device/numa_node"), "-1\n");
  EXPECT_FALSE(slurp(ib_ + "/device/local_cpus").empty());
  EXPECT_FALSE(slurp(ib_ + "/device/local_cpulist").empty());
  EXPECT_EQ(slurp(ib_ + "/device/vendor"), "0x627374\n");
  EXPECT_EQ(slurp(ib_ + "/device/device"), "0x0001\n");
  EXPECT_FALSE(exists(ib_ + "/device/modalias"));  // libibverbs matches burst0 by name
  EXPECT_FALSE(exists(ib_ + "/device/subsystem"));  // not a PCI function
  // The netdev this /sys does not show: its name, index and MAC.
  EXPECT_FALSE(is_link(ib_ + "/device/net/v0"));
  EXPECT_EQ(slurp(ib_ + "/device/net/v0/ifindex"), "7\n");
  EXPECT_EQ(slurp(ib_ + "/device/net/v0/address"), "02:00:00:00:00:01\n");
  EXPECT_EQ(slurp(port_ + "/rate"), "2.5 Gb/sec (1X SDR)\n");  // no ethtool speed
  EXPECT_EQ(slurp(port_ + "/gid_attrs/types/1"), "RoCE v2\n");
  EXPECT_EQ(slurp(port_ + "/gid_attrs/ndevs/1"), "v0\n");
  EXPECT_FALSE(exists(ib_ + "/tc"));  // as upstream kernels: no tc/ unless configured
}

TEST_F(SysfsTree, TrafficClassWhenConfigured) {
  SysfsDevice d = describe_device(veth({}, {}), "burst0", "uverbs0", root_ + "/nosys");
  d.nic.traffic_class = 106;
  ASSERT_TRUE(write_sysfs_tree(root_, d).ok());
  EXPECT_EQ(slurp(ib_ + "/tc/1/traffic_class"), "Global tclass=106\n");  // UCX master's sscanf
}

// Several devices in one tree (one burstd each, docs/devices.md): each its own
// uverbs node and burst_socket, the first one untouched by the second.
TEST_F(SysfsTree, SeveralDevicesEachWithItsBurstd) {
  SysfsDevice a = describe_device(veth({"10.0.0.1"}, {}), "burst0", "uverbs0", root_ + "/nosys");
  a.socket = "/run/burst/eth0.sock";
  net::NetdevInfo nb = veth({"10.0.1.1"}, {});
  nb.name = "eth1";
  nb.ifindex = 8;
  nb.mac[5] = 0x02;
  SysfsDevice b = describe_device(nb, "burst1", "uverbs1", root_ + "/nosys");
  b.socket = "/run/burst/eth1.sock";
  ASSERT_TRUE(write_sysfs_tree(root_, a).ok());
  ASSERT_TRUE(write_sysfs_tree(root_, b).ok());
  EXPECT_EQ(slurp(ib_ + "/" BURST_SOCKET_FILE), "/run/burst/eth0.sock\n");
  EXPECT_EQ(slurp(root_ + "/class/infiniband/burst1/" BURST_SOCKET_FILE), "/run/burst/eth1.sock\n");
  EXPECT_EQ(slurp(root_ + "/class/infiniband_verbs/uverbs0/ibdev"), "burst0\n");
  EXPECT_EQ(slurp(root_ + "/class/infiniband_verbs/uverbs1/ibdev"), "burst1\n");
  EXPECT_EQ(slurp(root_ + "/class/infiniband/burst1/ports/1/gid_attrs/ndevs/0"), "eth1\n");
  EXPECT_EQ(slurp(port_ + "/gid_attrs/ndevs/0"), a.netdev.name + "\n");
  // No socket: no file (the provider then uses $BURST_SOCKET or the default).
  a.socket.clear();
  ASSERT_TRUE(write_sysfs_tree(root_, a).ok());
  EXPECT_NE(access((ib_ + "/" BURST_SOCKET_FILE).c_str(), F_OK), 0);
}

TEST_F(SysfsTree, RootMustBeAbsolute) {
  SysfsDevice d = describe_device(veth({}, {}), "burst0", "uverbs0", root_ + "/nosys");
  EXPECT_EQ(write_sysfs_tree("relative/dir", d).code(), EINVAL);
}

// A fake /sys: class/net/v0 -> a virtio NIC whose PCI function has the locality.
class FakeSys : public SysfsTree {
 protected:
  void SetUp() override {
    SysfsTree::SetUp();
    sys_ = root_ + "/sys";
    pci_ = sys_ + "/devices/pci0000:00/0000:00:03.0";
    netdev_ = pci_ + "/virtio2/net/v0";
    ASSERT_EQ(system(("mkdir -p " + netdev_ + " " + sys_ + "/class/net " + sys_ +
                      "/devices/system/cpu")
                         .c_str()),
              0);
    ASSERT_EQ(symlink("../../devices/pci0000:00/0000:00:03.0/virtio2/net/v0",
                      (sys_ + "/class/net/v0").c_str()),
              0);
    ASSERT_EQ(symlink("../../../virtio2", (netdev_ + "/device").c_str()), 0);
    put(netdev_ + "/ifindex", "7\n");
    put(netdev_ + "/address", "02:00:00:00:00:01\n");
    put(pci_ + "/numa_node", "1\n");
    put(pci_ + "/local_cpus", "00000000,000000f0\n");
    put(sys_ + "/devices/system/cpu/possible", "0-5\n");
  }
  std::string sys_, pci_, netdev_;
};

TEST_F(FakeSys, LocalityFromTheNetdevsDevice) {
  const SysfsNic nic = describe_nic(veth({}, {}), sys_);
  EXPECT_EQ(nic.netdev_dir, real(netdev_));
  EXPECT_EQ(nic.numa_node, 1);                      // from the virtio device's PCI parent
  EXPECT_EQ(nic.local_cpus, "00000000,000000f0");  // as the kernel printed it
  EXPECT_EQ(nic.local_cpulist, "4-7");

  SysfsDevice d = describe_device(veth({}, {}), "burst0", "uverbs0", sys_);
  ASSERT_TRUE(write_sysfs_tree(root_, d).ok());
  EXPECT_EQ(link_target(ib_ + "/device/net/v0"), real(netdev_));
  EXPECT_EQ(slurp(ib_ + "/device/net/v0/ifindex"), "7\n");  // through the link
  EXPECT_EQ(slurp(ib_ + "/device/numa_node"), "1\n");
  EXPECT_EQ(slurp(ib_ + "/device/local_cpus"), "00000000,000000f0\n");
  EXPECT_EQ(slurp(ib_ + "/device/local_cpulist"), "4-7\n");
}

TEST_F(FakeSys, AnotherNetdevUnderTheNameIsNotOurs) {
  net::NetdevInfo nd = veth({}, {});
  nd.ifindex = 8;  // a /sys of another network namespace
  const SysfsNic nic = describe_nic(nd, sys_);
  EXPECT_EQ(nic.netdev_dir, "");
  EXPECT_EQ(nic.numa_node, -1);
  EXPECT_EQ(nic.local_cpus, "3f");  // every possible CPU
  EXPECT_EQ(nic.local_cpulist, "0-5");
  nd.ifindex = 7;
  nd.mac[5] = 2;
  EXPECT_EQ(describe_nic(nd, sys_).netdev_dir, "");
}

TEST_F(FakeSys, NoNumaNodeAnywhereGivesEveryPossibleCpu) {
  ASSERT_EQ(unlink((pci_ + "/numa_node").c_str()), 0);
  const SysfsNic nic = describe_nic(veth({}, {}), sys_);
  EXPECT_EQ(nic.netdev_dir, real(netdev_));
  EXPECT_EQ(nic.numa_node, -1);
  EXPECT_EQ(nic.local_cpulist, "0-5");
}

TEST(SysfsFormat, CpuSetsAsTheKernelPrintsThem) {
  std::vector<bool> cpus;
  ASSERT_TRUE(parse_cpu_list("0-1", &cpus));
  EXPECT_EQ(cpu_bitmap_text(cpus), "3");  // 2 possible CPUs
  ASSERT_TRUE(parse_cpu_list("0-35", &cpus));
  EXPECT_EQ(cpu_bitmap_text(cpus), "f,ffffffff");
  ASSERT_TRUE(parse_cpu_list("0-63\n", &cpus));
  EXPECT_EQ(cpu_bitmap_text(cpus), "ffffffff,ffffffff");
  ASSERT_TRUE(parse_cpu_list("0-3,8", &cpus));
  EXPECT_EQ(cpu_bitmap_text(cpus), "10f");  // 9 bits: 3 digits
  EXPECT_EQ(cpu_list_text(cpus), "0-3,8");
  ASSERT_TRUE(parse_cpu_bitmap("00000000,0000000f", &cpus));
  EXPECT_EQ(cpu_list_text(cpus), "0-3");
  ASSERT_TRUE(parse_cpu_bitmap("ff,00000001", &cpus));
  EXPECT_EQ(cpu_list_text(cpus), "0,32-39");
  EXPECT_FALSE(parse_cpu_list("3-1", &cpus));
  EXPECT_FALSE(parse_cpu_list("x", &cpus));
  EXPECT_FALSE(parse_cpu_bitmap("", &cpus));
  EXPECT_FALSE(parse_cpu_bitmap("0g", &cpus));
}

TEST(SysfsFormat, RateAsTheKernelPrintsIt) {
  EXPECT_EQ(sysfs_rate(0), "2.5 Gb/sec (1X SDR)");
  EXPECT_EQ(sysfs_rate(5000), "5 Gb/sec (1X DDR)");
  EXPECT_EQ(sysfs_rate(10000), "10 Gb/sec (1X QDR)");
  EXPECT_EQ(sysfs_rate(25000), "25 Gb/sec (1X EDR)");
  EXPECT_EQ(sysfs_rate(40000), "40 Gb/sec (4X QDR)");
  EXPECT_EQ(sysfs_rate(56000), "56 Gb/sec (4X FDR)");
  EXPECT_EQ(sysfs_rate(100000), "100 Gb/sec (4X EDR)");
  EXPECT_EQ(sysfs_rate(400000), "400 Gb/sec (4X NDR)");
}

}  // namespace
}  // namespace burst::tools
