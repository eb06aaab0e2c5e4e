// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/startup_checks.h"

#include <fcntl.h>
#include <net/if.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
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

// This process's network namespace (its inode), 0 if unknown.
uint64_t netns_id() {
  struct stat self{};
  return stat("/proc/self/ns/net", &self) == 0 ? static_cast<uint64_t>(self.st_ino) : 0;
}

}  // namespace

bool check_netdev(const Config& c, std::string* error) {
  if (!has_netdev(c) || if_nametoindex(c.netdev.c_str()) != 0) return true;
  const std::string where = origin_prefix(c, "netdev");
  *error = where + "netdev '" + c.netdev +
           "' not found in this network namespace: it does not exist (fix: name an interface "
           "of this host in 'netdev =' or --netdev, or start burstd@IF for one of: " +
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
  const std::string path = lock_dir + "/" + c.netdev + ".lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) {
    *error = "cannot open the lock " + path + ": " + std::strerror(errno);
    return -1;
  }
  // One byte per network namespace (at the namespace's inode): equal netdev
  // names in two namespaces do not collide. A record lock (not flock) so that
  // F_GETLK names the holder.
  struct flock fl{};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = static_cast<off_t>(netns_id() & 0x7FFFFFFFFFFFull);
  fl.l_len = 1;
  if (fcntl(fd, F_SETLK, &fl) == 0) return fd;
  const int e = errno;
  struct flock who = fl;
  const bool known = fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK && who.l_pid > 0;
  close(fd);
  if (e != EAGAIN && e != EACCES) {
    *error = "cannot lock " + path + ": " + std::strerror(e);
    return -1;
  }
  *error = "netdev '" + c.netdev + "' is served by another burstd" +
           (known ? " (pid " + std::to_string(who.l_pid) + ")" : std::string()) + ", which holds " +
           path + " (fix: stop it first, e.g. systemctl stop burstd@" + c.netdev +
           "; one burstd per netdev)";
  return -1;
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
