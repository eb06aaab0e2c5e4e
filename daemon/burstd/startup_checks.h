/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// What burstd checks before it touches the port, so that a bad configuration
// fails with "WHERE: what (fix: how)" and nothing attached: the netdev exists,
// no other burstd serves it (a lock), and the fix for a refusal of the port
// (DPDK without hugepages) in the words an operator needs.
#pragma once

#include <string>

#include "daemon/burstd/config.h"

namespace burst::burstd {

// The netdev named by the config exists in burstd's network namespace (xdp;
// dpdk with a kernel netdev). Loopback and netdev-less DPDK ports pass.
bool check_netdev(const Config& c, std::string* error);

// One burstd per netdev: a write lock on LOCK_DIR/NETDEV.lock (one byte per
// network namespace, so equal names in two namespaces do not collide), held
// until the returned descriptor is closed (at exit). -1 and *error when another burstd
// holds it or the lock cannot be taken. Returns -2 (no lock needed) for a port
// without a netdev.
int lock_netdev(const Config& c, const std::string& lock_dir, std::string* error);
inline constexpr char kLockDir[] = "/run/burst";

// The port's start-up error with the fix an operator needs appended where the
// port's own message lacks it (DPDK hugepages: how to reserve them for good).
std::string explain_port_error(const Config& c, const std::string& error);

}  // namespace burst::burstd
