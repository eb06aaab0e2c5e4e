// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/notify.h"

#ifdef BURST_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#else
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#endif

namespace burst::burstd {

#ifdef BURST_HAVE_LIBSYSTEMD

void notify(const std::string& state) { sd_notify(0, state.c_str()); }

uint64_t watchdog_interval_us() {
  uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
}

#else

void notify(const std::string& state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || (path[0] != '/' && path[0] != '@')) return;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const size_t len = std::strlen(path);
  if (len >= sizeof sa.sun_path) return;
  std::memcpy(sa.sun_path, path, len);
  if (sa.sun_path[0] == '@') sa.sun_path[0] = '\0';  // abstract namespace
  const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  const socklen_t sl = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
  (void)sendto(fd, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&sa), sl);
  close(fd);
}

uint64_t watchdog_interval_us() {
  const char* usec = std::getenv("WATCHDOG_USEC");
  const char* pid = std::getenv("WATCHDOG_PID");
  if (usec == nullptr) return 0;
  if (pid != nullptr && std::strtol(pid, nullptr, 10) != getpid()) return 0;
  return std::strtoull(usec, nullptr, 10);
}

#endif

}  // namespace burst::burstd
