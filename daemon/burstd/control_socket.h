/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstd's control socket: a unix SOCK_SEQPACKET socket at a path, so several
// burstd can run on one machine (one per network namespace, each with its own
// --socket). Bind() refuses a path that a live daemon answers on, replaces a
// stale socket file left by a daemon that died (also one that still answers for
// a moment: a dead daemon's io_uring is torn down after the process), and never
// removes anything that is not a socket. The destructor removes the file if it
// is still the one bound.
//
// Access policy (burstd.conf socket_owner, socket_group, socket_mode): the file
// gets its owner, group and mode after bind() and before listen(), so nobody can
// connect before the policy is in place. The default, root:root 0666 with burstd
// as root, is as open as /dev/infiniband/uverbs* on Debian: burstd reaches only
// what a client hands over (docs/security.md).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

namespace burst::burstd {

// Who may connect: the socket file's owner, group and mode.
struct SocketAccess {
  unsigned mode = 0666;
  uid_t owner = static_cast<uid_t>(-1);  // -1: as created (burstd's own uid)
  gid_t group = static_cast<gid_t>(-1);  // -1: as created
  std::string owner_name;                // as configured, for messages
  std::string group_name;
};

class ControlSocket {
 public:
  static std::unique_ptr<ControlSocket> Bind(const std::string& path, const SocketAccess& access,
                                             std::string* error);
  ~ControlSocket();
  ControlSocket(const ControlSocket&) = delete;
  ControlSocket& operator=(const ControlSocket&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  bool replaced_stale() const { return replaced_stale_; }

 private:
  ControlSocket() = default;

  int fd_ = -1;
  std::string path_;
  dev_t dev_ = 0;  // identity of the socket file we created
  ino_t ino_ = 0;
  bool replaced_stale_ = false;
};

}  // namespace burst::burstd
