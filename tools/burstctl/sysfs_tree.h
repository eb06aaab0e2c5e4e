/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// A burst-owned sysfs tree: what libibverbs reads (through SYSFS_PATH) to find
// a burst device on a kernel without RDMA support, and what UCX, NCCL, Open MPI
// and Mooncake read at /sys/class/infiniband (burstctl run shows it there in a
// private mount namespace: sysfs_mount.h). The layout is described in
// abi/burst_device.h; this writes it from a netdev's state, with the GID table
// built the way Linux builds it for a RoCE device (net/) and the NIC's locality
// taken from the netdev's own device in /sys (sysfs_nic.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/addr.h"
#include "net/netdev.h"
#include "net/net_status.h"

namespace burst::tools {

// The NIC behind the port, as a PCI RoCE NIC's device/ directory shows it.
struct SysfsNic {
  std::string netdev_dir;     // the netdev's /sys/devices/... directory, when the /sys
                              // read shows this very netdev (same ifindex and MAC); else ""
  int numa_node = -1;         // the netdev's device's (or its nearest parent's), else -1
  std::string local_cpus;     // kernel bitmap text ("ff,ffffffff"): the device's, else
                              // every possible CPU
  std::string local_cpulist;  // the same set as a list ("0-39")
  uint32_t speed_mbps = 0;    // the link speed (ethtool), 0 when unknown
  int traffic_class = -1;     // tc/1/traffic_class "Global tclass=N" when >= 0, else no tc/
};

struct SysfsDevice {
  std::string ibdev = "burst0";    // class/infiniband/<ibdev>, devices/<ibdev>
  std::string uverbs = "uverbs0";  // class/infiniband_verbs/<uverbs>, /dev/infiniband/<uverbs>
  net::NetdevInfo netdev;          // the port's netdev (name, MAC, flags, operstate)
  std::vector<net::Gid> gids;      // sgid_index -> GID; a zero GID is an empty slot
  std::string node_desc;           // the host name, as the kernel sets it
  SysfsNic nic;
  std::string socket;              // its burstd's control socket (BURST_SOCKET_FILE), "" = none
};

// Builds the device description for a netdev: GID table (net::build_gid_table,
// BURST_GID_TABLE_LEN entries at most), the host name, and the NIC's facts
// (describe_nic over sys_root, the link speed from ethtool).
SysfsDevice describe_device(const net::NetdevInfo& netdev, const std::string& ibdev,
                            const std::string& uverbs, const std::string& sys_root = "/sys");

// The NIC's locality as sys_root (normally /sys) shows it: numa_node and
// local_cpus of the netdev's device or of its nearest parent under
// sys_root/devices that has them (a virtio NIC's PCI function), else -1 and the
// possible CPUs (sys_root/devices/system/cpu/possible). sysfs_nic.cc.
SysfsNic describe_nic(const net::NetdevInfo& netdev, const std::string& sys_root);

// Writes the tree under root (absolute; must exist): class/infiniband_verbs/...,
// class/infiniband/<ibdev> (a symlink), devices/<ibdev>/... and
// bus/burst/drivers/burst. A previous tree of the same device under root is
// replaced (so no stale GID slot survives); nothing else is touched.
net::Status write_sysfs_tree(const std::string& root, const SysfsDevice& dev);

// Where the tree puts the IB device directory and the NIC directory (absolute).
std::string sysfs_ib_dir(const std::string& root, const std::string& ibdev);
std::string sysfs_nic_dir(const std::string& root, const std::string& ibdev);

// Text forms of sysfs files.
std::string sysfs_gid(const net::Gid& gid);            // "fe80:0000:0000:0000:0211:22ff:fe33:4455"
std::string sysfs_guid(uint64_t guid);                 // "0211:22ff:fe33:4455"
uint64_t node_guid_from_mac(const net::MacAddr& mac);  // modified EUI-64 (host order)
std::string sysfs_rate(uint32_t speed_mbps);           // ports/N/rate: "10 Gb/sec (1X QDR)"
// CPU sets: the kernel's list ("0-3,8") and bitmap ("10f": 32-bit words,
// most significant first, separated by ',', as wide as the set's size needs).
bool parse_cpu_list(const std::string& text, std::vector<bool>* cpus);
bool parse_cpu_bitmap(const std::string& text, std::vector<bool>* cpus);
std::string cpu_list_text(const std::vector<bool>& cpus);
std::string cpu_bitmap_text(const std::vector<bool>& cpus);

// Removes a directory tree (nftw, no symlink following). Missing is fine.
net::Status remove_tree(const std::string& path);

}  // namespace burst::tools
