/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstctl run: the burst sysfs tree at the standard path, for consumers that
// read /sys/class/infiniband/<dev>/... by absolute path and ignore SYSFS_PATH
// (UCX, NCCL, Open MPI, Mooncake; docs/sysfs.md).
//
// Called in the command's process between fork and exec (single-threaded):
//   1. a private mount namespace: unshare(CLONE_NEWNS) (needs CAP_SYS_ADMIN);
//      without it, a user namespace that maps only the caller's own uid and gid
//      (CLONE_NEWUSER | CLONE_NEWNS). Mount propagation from / is made slave:
//      nothing mounted here leaks out, mounts made outside later still show;
//   2. a tmpfs over /sys/class whose entries are recursive bind mounts of the
//      original class directories (so every relative symlink, such as
//      class/net/eth0 -> ../../devices/..., resolves as before and devices
//      that come and go still show), except infiniband and infiniband_verbs:
//      directories of symlinks, burst's (absolute links into the tree) plus
//      the original entries (a kernel with RDMA, an enclosing burstctl run);
//      the tmpfs is then made read-only;
//   3. on any failure in 2 the tmpfs is detached again, so the command sees
//      /sys/class exactly as before.
// Nothing is ever unmounted outside: the mounts die with the namespace.
#pragma once

#include <string>

#include "net/net_status.h"

namespace burst::tools {

enum class SysfsMountMode { kPrivateNs, kUserNs };

// Shows root/class/infiniband{,_verbs} at /sys/class/infiniband{,_verbs} in
// this process's own mount namespace. On error the process may be in a new
// (unchanged) namespace; the status says what failed.
net::Status show_tree_at_sys_class(const std::string& root, SysfsMountMode* mode);

}  // namespace burst::tools
