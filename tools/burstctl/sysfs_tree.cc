// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "tools/burstctl/sysfs_tree.h"

#include <fcntl.h>
#include <ftw.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "net/gid_table.h"
#include "abi/burst_device.h"
#include "abi/burst_shim.h"

namespace burst::tools {
namespace {

using net::Status;

Status make_dir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return Status::Ok();
  return Status::Error(errno, net::errno_message("mkdir " + path, errno));
}

// mkdir -p of path below root (root exists).
Status make_dirs(const std::string& root, const std::string& rel) {
  std::string path = root;
  size_t pos = 0;
  while (pos < rel.size()) {
    size_t next = rel.find('/', pos);
    if (next == std::string::npos) next = rel.size();
    path += "/" + rel.substr(pos, next - pos);
    if (Status s = make_dir(path); !s.ok()) return s;
    pos = next + 1;
  }
  return Status::Ok();
}

// Writes "value\n" to path, like a sysfs attribute reads.
Status write_attr(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(errno, net::errno_message("create " + path, errno));
  const std::string text = value + "\n";
  ssize_t n = write(fd, text.data(), text.size());
  int err = n < 0 ? errno : (static_cast<size_t>(n) == text.size() ? 0 : EIO);
  if (close(fd) != 0 && err == 0) err = errno;
  if (err != 0) return Status::Error(err, net::errno_message("write " + path, err));
  return Status::Ok();
}

// A symlink at path (replacing one that is there) to target.
Status make_link(const std::string& target, const std::string& path) {
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::Error(errno, net::errno_message("unlink " + path, errno));
  }
  if (symlink(target.c_str(), path.c_str()) != 0) {
    return Status::Error(errno, net::errno_message("symlink " + path, errno));
  }
  return Status::Ok();
}

int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  return (type == FTW_DP ? rmdir(path) : unlink(path)) == 0 || errno == ENOENT ? 0 : -1;
}

bool port_active(const net::NetdevInfo& nd) {
  constexpr uint32_t kUpRunning = IFF_UP | IFF_RUNNING;
  return (nd.flags & kUpRunning) == kUpRunning;
}

}  // namespace

std::string sysfs_gid(const net::Gid& gid) {
  char buf[40];
  char* p = buf;
  for (size_t i = 0; i < gid.size(); i += 2) {
    p += snprintf(p, buf + sizeof(buf) - p, "%s%02x%02x", i == 0 ? "" : ":", gid[i], gid[i + 1]);
  }
  return std::string(buf);
}

std::string sysfs_guid(uint64_t guid) {
  char buf[20];
  snprintf(buf, sizeof(buf), "%04x:%04x:%04x:%04x", static_cast<unsigned>(guid >> 48) & 0xffff,
           static_cast<unsigned>(guid >> 32) & 0xffff, static_cast<unsigned>(guid >> 16) & 0xffff,
           static_cast<unsigned>(guid) & 0xffff);
  return std::string(buf);
}

uint64_t node_guid_from_mac(const net::MacAddr& mac) {
  // The interface identifier of the default GID (fe80::/64 + modified EUI-64).
  const net::Gid ll = net::gid_link_local_from_mac(mac);
  uint64_t guid = 0;
  for (size_t i = 8; i < 16; ++i) guid = (guid << 8) | ll[i];
  return guid;
}

std::string sysfs_nic_dir(const std::string& root, const std::string& ibdev) {
  return root + "/devices/" + ibdev;
}

std::string sysfs_ib_dir(const std::string& root, const std::string& ibdev) {
  return sysfs_nic_dir(root, ibdev) + "/infiniband/" + ibdev;
}

SysfsDevice describe_device(const net::NetdevInfo& netdev, const std::string& ibdev,
                            const std::string& uverbs, const std::string& sys_root) {
  SysfsDevice d;
  d.nic = describe_nic(netdev, sys_root);
  d.ibdev = ibdev;
  d.uverbs = uverbs;
  d.netdev = netdev;
  d.gids = net::build_gid_table(netdev, BURST_GID_TABLE_LEN);
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  d.node_desc = host;
  return d;
}

Status remove_tree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::Ok()
                           : Status::Error(errno, net::errno_message("stat " + path, errno));
  }
  if (nftw(path.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
    return Status::Error(errno, net::errno_message("remove " + path, errno));
  }
  return Status::Ok();
}

namespace {

struct File {
  std::string path;
  std::string value;
};

struct Link {
  std::string target;
  std::string at;
};

// The IB device's files: node, port, GID table (class/infiniband/<ibdev> resolves here).
void ib_device_files(const std::string& ib_dir, const SysfsDevice& dev, std::vector<File>* files) {
  const std::string port_dir = ib_dir + "/ports/" + std::to_string(BURST_PORT_NUM);
  const uint64_t guid = node_guid_from_mac(dev.netdev.mac);
  const bool active = port_active(dev.netdev);
  const std::vector<File> fixed = {
      {ib_dir + "/node_type", "1: CA"},
      {ib_dir + "/node_guid", sysfs_guid(guid)},
      {ib_dir + "/sys_image_guid", sysfs_guid(guid)},
      {ib_dir + "/fw_ver", BURST_FW_VER},
      {ib_dir + "/hca_type", BURST_HCA_TYPE},
      {ib_dir + "/hw_rev", "0"},
      {ib_dir + "/board_id", BURST_BOARD_ID},
      {ib_dir + "/node_desc", dev.node_desc},
      {port_dir + "/state", active ? "4: ACTIVE" : "1: DOWN"},
      {port_dir + "/phys_state", active ? "5: LinkUp" : "3: Disabled"},
      {port_dir + "/link_layer", dev.netdev.link_type == ARPHRD_ETHER ? "Ethernet" : "Unknown"},
      {port_dir + "/rate", sysfs_rate(dev.nic.speed_mbps)},
      {port_dir + "/lid", "0x0"},
      {port_dir + "/sm_lid", "0x0"},
      {port_dir + "/lid_mask_count", "0"},
      {port_dir + "/sm_sl", "0"},
      {port_dir + "/cap_mask", "0x00010000"},  // IB_PORT_CM_SUP
  };
  files->insert(files->end(), fixed.begin(), fixed.end());
  char pkey[8];
  snprintf(pkey, sizeof(pkey), "0x%04x", BURST_DEFAULT_PKEY);
  files->push_back({port_dir + "/pkeys/0", pkey});
  // Every slot up to the table length answers (ibv_devinfo -v queries them all);
  // a used slot also names its netdev. Every GID is RoCE v2, as on rxe (a v2-only port).
  for (size_t i = 0; i < BURST_GID_TABLE_LEN; ++i) {
    const net::Gid& g = i < dev.gids.size() ? dev.gids[i] : net::kZeroGid;
    const std::string idx = std::to_string(i);
    files->push_back({port_dir + "/gids/" + idx, sysfs_gid(g)});
    files->push_back({port_dir + "/gid_attrs/types/" + idx, BURST_GID_TYPE_ROCE_V2});
    if (!net::gid_is_zero(g)) {
      files->push_back({port_dir + "/gid_attrs/ndevs/" + idx, dev.netdev.name});
    }
  }
  if (!dev.socket.empty()) files->push_back({ib_dir + "/" BURST_SOCKET_FILE, dev.socket});
  if (dev.nic.traffic_class >= 0) {
    files->push_back({ib_dir + "/tc/" + std::to_string(BURST_PORT_NUM) + "/traffic_class",
                      "Global tclass=" + std::to_string(dev.nic.traffic_class)});
  }
}

// The NIC's files (what the IB device's "device" link resolves to).
void nic_files(const std::string& nic_dir, const SysfsDevice& dev, std::vector<File>* files) {
  char id[16];
  snprintf(id, sizeof(id), "0x%04x", BURST_VENDOR_ID);
  files->push_back({nic_dir + "/vendor", id});
  snprintf(id, sizeof(id), "0x%04x", BURST_VENDOR_PART_ID);
  files->push_back({nic_dir + "/device", id});
  files->push_back({nic_dir + "/numa_node", std::to_string(dev.nic.numa_node)});
  files->push_back({nic_dir + "/local_cpus", dev.nic.local_cpus});
  files->push_back({nic_dir + "/local_cpulist", dev.nic.local_cpulist});
  if (dev.nic.netdev_dir.empty()) {  // this /sys does not show the netdev: its identity
    const std::string net_dir = nic_dir + "/net/" + dev.netdev.name;
    files->push_back({net_dir + "/ifindex", std::to_string(dev.netdev.ifindex)});
    files->push_back({net_dir + "/address", net::format_mac(dev.netdev.mac)});
  }
}

// Removes what an earlier tree of this device left under root.
Status remove_device(const std::string& root, const SysfsDevice& dev) {
  for (const std::string& old :
       {root + "/class/infiniband_verbs/" + dev.uverbs, root + "/class/infiniband/" + dev.ibdev,
        sysfs_nic_dir(root, dev.ibdev),
        root + "/bus/burst/drivers/" BURST_DRIVER_NAME "/" + dev.ibdev}) {
    if (Status s = remove_tree(old); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace

Status write_sysfs_tree(const std::string& root, const SysfsDevice& dev) {
  if (dev.gids.size() > BURST_GID_TABLE_LEN) {
    return Status::Error(EINVAL, "GID table larger than the port's " +
                                     std::to_string(BURST_GID_TABLE_LEN) + " entries");
  }
  if (root.empty() || root[0] != '/') {
    return Status::Error(EINVAL, "sysfs tree root '" + root + "' is not an absolute path");
  }
  const std::string verbs_class = root + "/class/infiniband_verbs";
  const std::string uverbs_dir = verbs_class + "/" + dev.uverbs;
  const std::string nic_dir = sysfs_nic_dir(root, dev.ibdev);
  const std::string ib_dir = sysfs_ib_dir(root, dev.ibdev);
  const std::string drivers_rel = "bus/burst/drivers/" BURST_DRIVER_NAME;
  const std::string ib_rel = "devices/" + dev.ibdev + "/infiniband/" + dev.ibdev;
  const std::string port_rel = ib_rel + "/ports/" + std::to_string(BURST_PORT_NUM);

  if (Status s = remove_device(root, dev); !s.ok()) return s;
  std::vector<std::string> dirs = {"class/infiniband_verbs/" + dev.uverbs,
                                   "class/infiniband",
                                   "class/misc/rdma_cm",
                                   drivers_rel,
                                   "devices/" + dev.ibdev + "/net",
                                   port_rel + "/gids",
                                   port_rel + "/pkeys",
                                   port_rel + "/gid_attrs/types",
                                   port_rel + "/gid_attrs/ndevs"};
  if (dev.nic.netdev_dir.empty()) {
    dirs.push_back("devices/" + dev.ibdev + "/net/" + dev.netdev.name);
  }
  if (dev.nic.traffic_class >= 0) {
    dirs.push_back(ib_rel + "/tc/" + std::to_string(BURST_PORT_NUM));
  }
  for (const std::string& rel : dirs) {
    if (Status s = make_dirs(root, rel); !s.ok()) return s;
  }

  std::vector<File> files = {
      {verbs_class + "/abi_version", std::to_string(BURST_UVERBS_CLASS_ABI_VERSION)},
      {uverbs_dir + "/ibdev", dev.ibdev},
      {uverbs_dir + "/abi_version", std::to_string(BURST_UVERBS_ABI_VERSION)},
      {uverbs_dir + "/dev",
       std::to_string(BURST_UVERBS_CDEV_MAJOR) + ":" + std::to_string(BURST_UVERBS_CDEV_MINOR)},
      // librdmacm's check_abi_version (the shim serves the node: burst_shim.h).
      {root + "/class/misc/rdma_cm/abi_version", std::to_string(BURST_RDMA_CM_ABI_VERSION)},
      {root + "/class/misc/rdma_cm/dev", std::to_string(BURST_RDMA_CM_CDEV_MAJOR) + ":" +
                                             std::to_string(BURST_RDMA_CM_CDEV_MINOR)},
  };
  ib_device_files(ib_dir, dev, &files);
  nic_files(nic_dir, dev, &files);
  for (const File& f : files) {
    if (Status s = write_attr(f.path, f.value); !s.ok()) return s;
  }

  // As the kernel links them; the absolute ones resolve the same under
  // $SYSFS_PATH and where burstctl run shows the tree (/sys/class/...).
  std::vector<Link> links = {
      {ib_dir, root + "/class/infiniband/" + dev.ibdev},
      {"../..", ib_dir + "/device"},
      {nic_dir, uverbs_dir + "/device"},
      {"../../" + drivers_rel, nic_dir + "/driver"},
      {"../../../../devices/" + dev.ibdev, root + "/" + drivers_rel + "/" + dev.ibdev},
  };
  if (!dev.nic.netdev_dir.empty()) {
    links.push_back({dev.nic.netdev_dir, nic_dir + "/net/" + dev.netdev.name});
  }
  for (const Link& l : links) {
    if (Status s = make_link(l.target, l.at); !s.ok()) return s;
  }
  return Status::Ok();
}

}  // namespace burst::tools
