// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The NIC behind a burst port as a PCI RoCE NIC's device/ directory shows it:
// the netdev's /sys directory, its NUMA node and local CPUs, its link rate;
// and the text forms of those files.
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "abi/burst_device.h"
#include "tools/burstctl/sysfs_tree.h"

namespace burst::tools {
namespace {

constexpr int kMaxCpus = 1 << 16;  // bounds what a list or bitmap may name
constexpr int kParentLevels = 4;   // how far above the netdev's device to look

// The first line of a file, without its newline; false when unreadable.
bool read_line(const std::string& path, std::string* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  ssize_t n;
  do {
    n = read(fd, buf, sizeof(buf) - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n < 0) return false;
  buf[n] = '\0';
  char* nl = strchr(buf, '\n');
  if (nl != nullptr) *nl = '\0';
  *out = buf;
  return true;
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

// sys_root/class/net/<name> when it is this netdev (a /sys mounted in another
// network namespace may show a different device under the same name).
std::string netdev_dir(const net::NetdevInfo& nd, const std::string& sys_root) {
  const std::string dir = real_path(sys_root + "/class/net/" + nd.name);
  if (dir.empty()) return "";
  std::string ifindex, address;
  if (!read_line(dir + "/ifindex", &ifindex) || !read_line(dir + "/address", &address)) return "";
  if (ifindex != std::to_string(nd.ifindex) || address != net::format_mac(nd.mac)) return "";
  return dir;
}

uint32_t link_speed_mbps(const std::string& ifname) {
  if (ifname.empty() || ifname.size() >= IFNAMSIZ) return 0;
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  ifreq ifr{};
  memcpy(ifr.ifr_name, ifname.data(), ifname.size());
  ethtool_cmd ecmd{};
  ecmd.cmd = ETHTOOL_GSET;
  ifr.ifr_data = reinterpret_cast<char*>(&ecmd);
  uint32_t mbps = 0;
  if (ioctl(fd, SIOCETHTOOL, &ifr) == 0) {
    const uint32_t speed = ethtool_cmd_speed(&ecmd);
    if (speed != static_cast<uint32_t>(SPEED_UNKNOWN)) mbps = speed;
  }
  close(fd);
  return mbps;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

bool parse_cpu_list(const std::string& text, std::vector<bool>* cpus) {
  cpus->clear();
  const char* p = text.c_str();
  while (*p != '\0' && *p != '\n') {
    char* end;
    errno = 0;
    long lo = strtol(p, &end, 10);
    if (end == p || errno != 0 || lo < 0 || lo >= kMaxCpus) return false;
    long hi = lo;
    p = end;
    if (*p == '-') {
      hi = strtol(p + 1, &end, 10);
      if (end == p + 1 || errno != 0 || hi < lo || hi >= kMaxCpus) return false;
      p = end;
    }
    if (cpus->size() < static_cast<size_t>(hi) + 1) cpus->resize(hi + 1, false);
    for (long c = lo; c <= hi; ++c) (*cpus)[c] = true;
    if (*p == ',')
      ++p;
    else if (*p != '\0' && *p != '\n')
      return false;
  }
  return true;
}

bool parse_cpu_bitmap(const std::string& text, std::vector<bool>* cpus) {
  cpus->clear();
  std::vector<int> digits;  // most significant first, commas dropped
  for (char c : text) {
    if (c == ',' || c == '\n') continue;
    const int d = hex_digit(c);
    if (d < 0) return false;
    digits.push_back(d);
  }
  if (digits.empty() || digits.size() * 4 > static_cast<size_t>(kMaxCpus)) return false;
  cpus->assign(digits.size() * 4, false);
  for (size_t i = 0; i < digits.size(); ++i) {
    const size_t base = (digits.size() - 1 - i) * 4;
    for (int b = 0; b < 4; ++b) (*cpus)[base + b] = (digits[i] >> b) & 1;
  }
  return true;
}

std::string cpu_list_text(const std::vector<bool>& cpus) {
  std::string out;
  for (size_t c = 0; c < cpus.size(); ++c) {
    if (!cpus[c]) continue;
    size_t hi = c;
    while (hi + 1 < cpus.size() && cpus[hi + 1]) ++hi;
    if (!out.empty()) out += ",";
    out += std::to_string(c);
    if (hi > c) out += "-" + std::to_string(hi);
    c = hi;
  }
  return out;
}

// As the kernel's bitmap_print_to_pagebuf ("%*pb"): 32-bit chunks, the first
// one only as many hex digits as the bits above the last full chunk need.
std::string cpu_bitmap_text(const std::vector<bool>& cpus) {
  const size_t nbits = cpus.empty() ? 1 : cpus.size();
  std::string out;
  size_t chunk_bits = nbits % 32 == 0 ? 32 : nbits % 32;
  for (size_t top = nbits; top > 0; top -= chunk_bits, chunk_bits = 32) {
    const size_t base = top - chunk_bits;
    uint32_t word = 0;
    for (size_t b = 0; b < chunk_bits; ++b) {
      if (base + b < cpus.size() && cpus[base + b]) word |= 1u << b;
    }
    char buf[16];
    snprintf(buf, sizeof(buf), "%0*x", static_cast<int>((chunk_bits + 3) / 4), word);
    if (!out.empty()) out += ",";
    out += buf;
  }
  return out;
}

std::string sysfs_rate(uint32_t speed_mbps) {
  const burst_ib_width_speed ws = burst_eth_width_speed(speed_mbps);
  int lanes = 1;
  if (ws.width == BURST_IB_WIDTH_4X) lanes = 4;
  struct Speed {
    uint8_t code;
    const char* name;
    int deci_gbps;  // per lane
  };
  static constexpr Speed kSpeeds[] = {
      {BURST_IB_SPEED_SDR, "SDR", 25},   {BURST_IB_SPEED_DDR, "DDR", 50},
      {BURST_IB_SPEED_QDR, "QDR", 100},  {BURST_IB_SPEED_FDR, "FDR", 140},
      {BURST_IB_SPEED_EDR, "EDR", 250},  {BURST_IB_SPEED_HDR, "HDR", 500},
      {BURST_IB_SPEED_NDR, "NDR", 1000},
  };
  Speed s = kSpeeds[0];
  for (const Speed& k : kSpeeds) {
    if (k.code == ws.speed) s = k;
  }
  const int rate = s.deci_gbps * lanes;  // the kernel's rate_show()
  char buf[48];
  snprintf(buf, sizeof(buf), "%d%s Gb/sec (%dX %s)", rate / 10, rate % 10 != 0 ? ".5" : "", lanes,
           s.name);
  return buf;
}

SysfsNic describe_nic(const net::NetdevInfo& netdev, const std::string& sys_root) {
  SysfsNic nic;
  nic.netdev_dir = netdev_dir(netdev, sys_root);
  const std::string devices = real_path(sys_root + "/devices") + "/";
  std::string cpus_text;
  std::string dev = nic.netdev_dir.empty() ? std::string() : real_path(nic.netdev_dir + "/device");
  for (int level = 0; level < kParentLevels && dev.size() > devices.size() &&
                      dev.compare(0, devices.size(), devices) == 0;
       ++level) {
    std::string numa;
    if (read_line(dev + "/numa_node", &numa)) {
      nic.numa_node = atoi(numa.c_str());
      read_line(dev + "/local_cpus", &cpus_text);
      break;
    }
    dev.resize(dev.rfind('/'));
  }
  std::vector<bool> cpus;
  if (!cpus_text.empty() && parse_cpu_bitmap(cpus_text, &cpus)) {
    nic.local_cpus = cpus_text;
  } else {
    std::string possible;
    if (!read_line(sys_root + "/devices/system/cpu/possible", &possible) ||
        !parse_cpu_list(possible, &cpus) || cpus.empty()) {
      const long n = sysconf(_SC_NPROCESSORS_CONF);
      cpus.assign(n > 0 ? n : 1, true);
    }
    nic.local_cpus = cpu_bitmap_text(cpus);
  }
  nic.local_cpulist = cpu_list_text(cpus);
  nic.speed_mbps = link_speed_mbps(netdev.name);
  return nic;
}

}  // namespace burst::tools
