// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/control_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

namespace burst::burstd {
namespace {

constexpr int kBacklog = 128;

std::string errno_text(const std::string& what, int e) { return what + ": " + std::strerror(e); }

// Makes the directory of the socket (one level, like /run/burst) if missing.
bool ensure_parent(const std::string& path, std::string* error) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return true;
  const std::string dir = path.substr(0, slash);
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return true;
    *error = "cannot create the control socket " + path + ": " + dir + " is not a directory";
    return false;
  }
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    *error = errno_text("cannot create the directory " + dir + " for the control socket", errno);
    if (errno == EACCES) *error += " (run as root, or choose a writable path with --socket)";
    return false;
  }
  return true;
}

// What answers at `path`: 0 and *pid when a daemon accepted a connection,
// ECONNREFUSED for a stale socket, another errno otherwise.
int probe(const sockaddr_un& sa, pid_t* pid) {
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int e = 0;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&sa), sizeof(sa)) != 0) {
    e = errno;
  } else {
    ucred cred{};
    socklen_t len = sizeof(cred);
    *pid = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 ? cred.pid : 0;
  }
  close(fd);
  return e;
}

// Whether the process that answered a probe still runs. A daemon killed with
// SIGKILL while its io_uring held the listening socket (a multishot accept)
// leaves that socket accepting until the kernel has torn the ring down, after
// the process is gone: its pid is then dead, or a zombie not reaped yet. Pid 0
// (a daemon in another pid namespace) counts as alive.
bool alive(pid_t pid) {
  if (pid <= 0) return true;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return errno != ENOENT;
  char line[512];
  const bool got = std::fgets(line, sizeof(line), f) != nullptr;
  std::fclose(f);
  const char* close_paren = got ? std::strrchr(line, ')') : nullptr;  // "pid (comm) S ..."
  return close_paren == nullptr || close_paren[1] != ' ' || close_paren[2] != 'Z';
}

// Owner and group first (chown may clear mode bits), then the mode; lchown
// never follows a link that replaced the socket.
bool apply_access(const std::string& path, const SocketAccess& a, std::string* error) {
  if ((a.owner != static_cast<uid_t>(-1) || a.group != static_cast<gid_t>(-1)) &&
      lchown(path.c_str(), a.owner, a.group) != 0) {
    const int e = errno;
    std::string who;
    if (a.owner != static_cast<uid_t>(-1))
      who = "socket_owner = " + a.owner_name + " (uid " + std::to_string(a.owner) + ")";
    if (a.group != static_cast<gid_t>(-1))
      who += (who.empty() ? "" : ", ") + std::string("socket_group = ") + a.group_name + " (gid " +
             std::to_string(a.group) + ")";
    *error = errno_text("cannot give the control socket " + path + " to " + who, e);
    if (e == EPERM)
      *error +=
          " (changing the owner needs root or CAP_CHOWN; a group needs burstd to be a member)";
    return false;
  }
  if (chmod(path.c_str(), a.mode) != 0) {
    *error = errno_text("chmod " + path + " (socket_mode)", errno);
    return false;
  }
  return true;
}

}  // namespace

std::unique_ptr<ControlSocket> ControlSocket::Bind(const std::string& path,
                                                   const SocketAccess& access, std::string* error) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(sa.sun_path)) {
    *error = "control socket path must be 1.." + std::to_string(sizeof(sa.sun_path) - 1) +
             " bytes: '" + path + "'";
    return nullptr;
  }
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  if (!ensure_parent(path, error)) return nullptr;

  std::unique_ptr<ControlSocket> s(new ControlSocket());
  s->path_ = path;
  struct stat st;
  if (lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      *error = "control socket path " + path +
               " exists and is not a socket: remove it or choose another --socket PATH";
      return nullptr;
    }
    pid_t pid = 0;
    const int e = probe(sa, &pid);
    if (e == 0 && alive(pid)) {
      *error = "control socket " + path + " is in use by a running burstd" +
               (pid > 0 ? " (pid " + std::to_string(pid) + ")" : std::string()) +
               ": stop it, or give this one another --socket PATH";
      return nullptr;
    }
    if (e != 0 && e != ECONNREFUSED) {
      *error = errno_text("cannot check the existing control socket " + path, e);
      return nullptr;
    }
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      *error = errno_text("cannot remove the stale control socket " + path, errno);
      return nullptr;
    }
    s->replaced_stale_ = true;
  }

  s->fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd_ < 0) {
    *error = errno_text("socket(AF_UNIX, SOCK_SEQPACKET)", errno);
    return nullptr;
  }
  if (bind(s->fd_, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    const int e = errno;
    *error = errno_text("cannot bind the control socket " + path, e);
    if (e == EADDRINUSE) *error += " (another burstd started at the same time?)";
    if (e == EACCES) *error += " (run as root, or choose a writable path with --socket)";
    return nullptr;
  }
  if (lstat(path.c_str(), &st) == 0) {
    s->dev_ = st.st_dev;
    s->ino_ = st.st_ino;
  }
  if (!apply_access(path, access, error)) return nullptr;
  if (listen(s->fd_, kBacklog) != 0) {
    *error = errno_text("listen on " + path, errno);
    return nullptr;
  }
  return s;
}

ControlSocket::~ControlSocket() {
  if (fd_ >= 0) close(fd_);
  // Remove the file only if it is still ours (not one a later daemon bound).
  struct stat st;
  if (ino_ != 0 && lstat(path_.c_str(), &st) == 0 && st.st_dev == dev_ && st.st_ino == ino_) {
    unlink(path_.c_str());
  }
}

}  // namespace burst::burstd
