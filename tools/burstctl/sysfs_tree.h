/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// A burst-owned sysfs tree: what libibverbs reads (through SYSFS_PATH) to find
// a burst device on a kernel without RDMA support. The layout is described in
// abi/burst_device.h; this writes it from a netdev's state, with the GID
// table built the way Linux builds it for a RoCE device (net/).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/addr.h"
#include "net/netdev.h"
#include "net/net_status.h"

namespace burst::tools {

struct SysfsDevice {
  std::string ibdev = "burst0";    // class/infiniband/<ibdev>
  std::string uverbs = "uverbs0";  // class/infiniband_verbs/<uverbs>, /dev/infiniband/<uverbs>
  net::NetdevInfo netdev;          // the port's netdev (name, MAC, flags, operstate)
  std::vector<net::Gid> gids;      // sgid_index -> GID; a zero GID is an empty slot
  std::string node_desc;           // the host name, as the kernel sets it
};

// Builds the device description for a netdev: GID table (net::build_gid_table,
// BURST_GID_TABLE_LEN entries at most) and the host name.
SysfsDevice describe_device(const net::NetdevInfo& netdev, const std::string& ibdev,
                            const std::string& uverbs);

// Writes the tree under root (which must exist): class/infiniband_verbs/... and
// class/infiniband/<ibdev>/... . A previous tree of the same device under root
// is replaced (so no stale GID slot survives); nothing else is touched.
net::Status write_sysfs_tree(const std::string& root, const SysfsDevice& dev);

// Text forms of sysfs files.
std::string sysfs_gid(const net::Gid& gid);            // "fe80:0000:0000:0000:0211:22ff:fe33:4455"
std::string sysfs_guid(uint64_t guid);                 // "0211:22ff:fe33:4455"
uint64_t node_guid_from_mac(const net::MacAddr& mac);  // modified EUI-64 (host order)

// Removes a directory tree (nftw, no symlink following). Missing is fine.
net::Status remove_tree(const std::string& path);

}  // namespace burst::tools
