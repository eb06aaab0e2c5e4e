// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/startup_checks.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace burst::burstd {
namespace {

bool has_netdev(const Config& c) {
  return !c.netdev.empty() && (c.backend == BackendKind::kXdp || c.backend == BackendKind::kDpdk);
}

// The interfaces of this network namespace, "a, b, c" (for the fix).
std::string interface_names() {
  std::string s;
  struct if_nameindex* list = if_nameindex();
  if (list == nullptr) return s;
  for (struct if_nameindex* i = list; i->if_index != 0; ++i) {
    if (std::strcmp(i->if_name, "lo") == 0) continue;
    s += (s.empty() ? "" : ", ") + std::string(i->if_name);
  }
  if_freenameindex(list);
  return s.empty() ? "none but lo" : s;
}

// The lock's file name: NETDEV.lock in PID 1's network namespace, else one per namespace.
std::string lock_name(const std::string& netdev) {
  struct stat self{}, init{};
  if (stat("/proc/self/ns/net", &self) != 0) return netdev + ".lock";
  if (stat("/proc/1/ns/net", &init) == 0 && init.st_ino == self.st_ino) return netdev + ".lock";
  return netdev + ".netns-" + std::to_string(self.st_ino) + ".lock";
}

}  // namespace

bool check_netdev(const Config& c, std::string* error) {
  if (!has_netdev(c) || if_nametoindex(c.netdev.c_str()) != 0) return true;
  const std::string where = origin_prefix(c, "netdev");
  *error = (where.empty() ? std::string() : where) + "netdev '" + c.netdev +
           "' does not exist (fix: name an interface of this host in 'netdev =' or --netdev, or "
           "start burstd@IF for one of: " +
           interface_names() + ")";
  return false;
}

int lock_netdev(const Config& c, const std::string& lock_dir, std::string* error) {
  if (!has_netdev(c)) return -2;
  if (mkdir(lock_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    *error = "cannot create " + lock_dir + ": " + std::strerror(errno) +
             " (fix: run burstd as root, or create " + lock_dir + " for it)";
    return -1;
  }
  const std::string path = lock_dir + "/" + lock_name(c.netdev);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    *error = "cannot open the lock " + path + ": " + std::strerror(errno);
    return -1;
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    char pid[32] = {};
    const ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
    close(fd);
    std::string holder = n > 0 ? std::string(pid, static_cast<size_t>(n)) : "";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    *error = e == EWOULDBLOCK
                 ? "netdev '" + c.netdev + "' is served by another burstd" +
                       (holder.empty() ? "" : " (pid " + holder + ")") + ", which holds " + path +
                       " (fix: stop it first, e.g. systemctl stop burstd@" + c.netdev +
                       "; one burstd per netdev)"
                 : "cannot lock " + path + ": " + std::strerror(e);
    return -1;
  }
  const std::string me = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, me.data(), me.size(), 0) < 0) {
    // The pid is only a hint in the next instance's message.
  }
  return fd;
}

std::string explain_port_error(const Config& c, const std::string& error) {
  if (c.backend != BackendKind::kDpdk || error.find("hugepages") == std::string::npos ||
      error.find("(fix:") != std::string::npos)
    return error;
  // "DPDK needs N free 2 MB hugepages, M are free: `echo N > ...` (...)": keep the
  // facts, give the fix for now and for every boot.
  std::string facts = error.substr(0, error.find(": `"));
  std::string n = "N";
  if (const size_t at = error.find("needs "); at != std::string::npos) {
    n = error.substr(at + 6, error.find(' ', at + 6) - at - 6);
  }
  const std::string where = origin_prefix(c, "dpdk_hugepages");
  return (where.empty() ? std::string() : where + "dpdk_hugepages = on: ") + facts +
         " (fix: `sysctl -w vm.nr_hugepages=" + n + "` now, and for every boot a drop-in " +
         "/etc/sysctl.d/90-burst-hugepages.conf holding `vm.nr_hugepages = " + n +
         "`; or dpdk_hugepages = auto to run on normal pages)";
}

}  // namespace burst::burstd
