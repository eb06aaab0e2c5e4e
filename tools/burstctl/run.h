/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstctl run: makes the burst devices visible to an unmodified verbs
// application on a kernel without RDMA support, then runs the application.
//
//   0. finds its devices (discover.h, docs/devices.md): every burstd whose
//      socket is in the socket directory (--socket-dir, $BURST_SOCKET_DIR,
//      /run/burst) and whose netdev this network namespace shows, named burst0,
//      burst1, ... in netdev name order; --socket or $BURST_SOCKET: that burstd
//      only (its netdev from HELLO unless --netdev names it); --netdev: that
//      netdev's burstd only. No burstd found: as before, --netdev or the only
//      Ethernet interface up, on $BURST_SOCKET or the default socket;
//   1. describes each device's port in a burst-owned sysfs tree (a private
//      temporary directory, removed when the command exits, or --root DIR,
//      kept), with the GID table a RoCE device on that netdev would have;
//   2. makes sure /dev/infiniband/uverbsN exists as a character device 1:7
//      (/dev/full): libibverbs only lists a device whose node exists there
//      (the directory is fixed in libibverbs), and opens it. An existing 1:7
//      node is reused; a node that is anything else is never replaced (the
//      next N is used). A node burstctl creates is left in place: it is as
//      harmless as /dev/full and other runs may be using it. One node per
//      device; each device's directory names its burstd's socket
//      (burst_socket), which the provider connects to;
//   3. shows the tree at /sys/class/infiniband and /sys/class/infiniband_verbs
//      to COMMAND, for the consumers that read those paths directly and ignore
//      SYSFS_PATH (UCX, NCCL, Open MPI, Mooncake): COMMAND runs in a private
//      mount namespace (a user namespace when burstctl lacks CAP_SYS_ADMIN)
//      where a tmpfs over /sys/class binds every other class as it was
//      (sysfs_mount.h, docs/sysfs.md). When neither namespace can be made, or
//      with --no-sysfs-mount, COMMAND sees /sys unchanged (one warning line
//      in the first case) and only SYSFS_PATH readers find the device;
//   4. runs COMMAND with SYSFS_PATH=<tree> and RDMAV_DRIVERS=<provider> (the
//      provider's absolute path without "-rdmav34.so"), BURST_SOCKET=<burst0's
//      socket> when it has one (made absolute; the shim's rdma_cm channels use
//      it), LD_PRELOAD=<shim>[:<LD_PRELOAD as inherited>], and exits
//      with its status (128 + N when it dies of signal N).
//      The shim (libburst-shim.so, abi/burst_shim.h) answers the
//      completion-channel command libibverbs writes to the uverbs node; it is
//      found like the provider: $BURST_SHIM when set (set and empty: no shim),
//      else libburst-shim.so in the provider's directory (the build directory
//      of burst_provider, or where --provider / $BURST_PROVIDER point). A
//      missing shim is a warning, not a failure: only completion channels
//      need it. It is not added twice when LD_PRELOAD already has it (a
//      nested `burstctl run`), and it is a no-op in processes that do not
//      use verbs (every process the command starts inherits LD_PRELOAD).
// Exit status of burstctl's own failures: 125 (setup), 126 (COMMAND not
// executable), 127 (COMMAND not found), as env(1) does.
#pragma once

#include <string>
#include <vector>

namespace burst::tools {

struct RunOptions {
  std::string netdev;    // the burstd of this netdev only; empty: every burstd found
                         // (with none found: the only Ethernet interface that is up)
  std::string root;      // empty: a private temporary directory
  std::string provider;  // empty: $BURST_PROVIDER, else the provider of this build
  std::string socket;    // burstd's control socket; empty: $BURST_SOCKET as inherited, else
                         // every burstd of the socket directory (discover.h)
  std::string socket_dir;  // where to look for them; empty: $BURST_SOCKET_DIR, else /run/burst
  bool no_sysfs_mount = false;  // only SYSFS_PATH, /sys left as it is
  int traffic_class = -1;       // >= 0: tc/1/traffic_class "Global tclass=N" (UCX's default DSCP)
  std::vector<std::string> command;
};

inline constexpr int kExitSetupFailed = 125;
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitNotFound = 127;

int run_command(const RunOptions& o);

}  // namespace burst::tools
