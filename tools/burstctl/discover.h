/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Which burstd a `burstctl run` or `burstctl devices` talks to, and the names
// their devices get (docs/devices.md).
//
// One burstd serves one netdev and says which in HELLO. Without --socket (and
// without $BURST_SOCKET) burstctl looks at every socket in the socket directory
// (--socket-dir, else $BURST_SOCKET_DIR, else /run/burst: the service's
// /run/burst/NETDEV.sock and the default /run/burst/burstd.sock alike), asks each
// one HELLO, and names the devices of those that answer burst0, burst1, ... in
// the order of their netdev names (C locale): the same set of netdevs gets the
// same names across restarts of burstd, of the host and of burstctl. --socket or
// $BURST_SOCKET restricts to that one burstd; --netdev to the burstd of that
// netdev. A restricted run names its one device burst0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "net/addr.h"
#include "net/net_status.h"

namespace burst::tools {

struct Burstd {
  std::string socket;          // absolute path of its control socket
  bool answered = false;       // HELLO answered; else `error` says why not
  std::string error;
  std::string netdev;          // HELLO: the port's netdev ("" for loopback without one)
  uint32_t ifindex = 0;
  net::MacAddr mac{};
  uint16_t backend = 0;        // enum burst_ctl_backend
  uint8_t port_state = 0;      // enum burst_ctl_port_state
  std::string ibdev;           // the name burstctl gives it (burst0, ...), "" when unnamed
  std::string pinned;          // HELLO's ibdev: device_name from burstd's config, "" when unset
};

// The socket directory: given (non-empty), else $BURST_SOCKET_DIR, else the
// directory of BURST_CTL_DEFAULT_SOCKET.
std::string socket_dir(const std::string& given);

// A path made absolute against the current directory.
net::Status absolute_path(const std::string& path, std::string* out);

// The sockets in dir (S_ISSOCK entries, sorted by name); a missing dir is empty.
std::vector<std::string> list_sockets(const std::string& dir);

// Connects to each socket and says HELLO (bounded by the control client's timeout).
Burstd probe_burstd(const std::string& socket);

// The burstd of sockets in dir that answered and serve a netdev this network
// namespace shows (same name and MAC; others are reported in *skipped, one line
// each). A burstd configured with a device_name is named so (a second one
// claiming the same name is skipped); the others get burst0, burst1, ... in
// netdev name order, skipping pinned names. Two sockets of one netdev (one
// burstd under two names): the first in name order is kept.
std::vector<Burstd> discover_burstd(const std::string& dir, std::vector<std::string>* skipped);

// The name of the device the burstd at socket serves, as `burstctl run` gives it: its
// device_name when burstd was configured with one (pinned), else the name discovery in dir
// gives that socket, else burst0 (the one device of a run restricted to that socket).
std::string device_name_of(const std::string& socket, const std::string& pinned,
                           const std::string& dir);

// Every socket in dir with what it answered, for `burstctl devices`: the named
// ones first (as discover_burstd), then those that did not answer or serve a
// netdev not in this namespace (ibdev "").
std::vector<Burstd> list_burstd(const std::string& dir);

}  // namespace burst::tools
