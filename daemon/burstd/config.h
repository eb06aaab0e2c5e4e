/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstd's configuration: /etc/burst/burstd.conf (INI, keys outside any section)
// with command-line overrides. Example:
//
//   # burstd.conf
//   netdev = eth0            # the netdev that carries RoCE (xdp; dpdk on a kernel netdev)
//   backend = xdp            # xdp | dpdk | loopback
//   workers = 2              # worker threads (1..64)
//   qps_per_worker = 1024    # QPs (and CQs) a worker holds, 1..65536: the table is
//   cqs_per_worker = 1024    # allocated at start, ~1.9 KB per QP slot (docs/cm.md "Scale")
//   socket = /run/burst/burstd.sock
//   socket_mode = 0666       # who may connect (like /dev/infiniband/uverbs*: every local
//                            # user; burstd reaches only memory a client handed over)
//   socket_owner = root      # owner of the socket file (user name or uid)
//   socket_group = root      # group of the socket file (group name or gid)
//   admin_group =            # members see every client's QPs in burstctl (root always does)
//   max_qps_per_user = 0     # per-user caps for non-root users (0: only the device limit)
//   max_cqs_per_user = 0
//   max_mrs_per_user = 0
//   max_pds_per_user = 0
//   client_check_ms = 200    # how often burstd checks that clients did not exec or
//                            # change credentials (docs/security.md)
//   drop_caps = on           # on: after start-up keep only the capabilities the backend
//                            # needs (docs/security.md); off: keep what burstd started with
//   xdp_mode = auto          # auto | native | generic
//   zero_copy = auto         # auto | on | off
//   memory = cma             # cma | shm | kmod: how application memory is reached
//   mtu = 1500               # loopback backend: L3 MTU of the simulated port
//   idle_sleep_max_us = 1000 # longest sleep of an idle worker (0: never sleep, only yield)
//   window = 256             # unacknowledged packets per QP (requester window)
//   xdp_frames = 8192        # UMEM frames per AF_XDP queue, half of them for receive
//   command_timeout_ms = 2000
//   max_clients = 1024
//   log_level = info         # error | warning | info | debug
//   event_loop = auto        # auto | uring | epoll: the control thread's loop (auto:
//                            # io_uring, epoll where io_uring cannot be set up)
//   kmod = auto              # auto | on | off: register the device with the kernel's RDMA
//                            # core through /dev/burst (module burst, docs/kmod.md); auto:
//                            # when /dev/burst exists; on: refuse to start without it
//   # backend = dpdk (datapath/dpdk/dpdk_port.h):
//   dpdk_port = net_af_packet0,iface=eth0,qpairs=2   # vdev devargs or a PCI address;
//                            # default with a netdev: net_af_packet on it, one qpair per worker
//   dpdk_eal = --log-level=pmd.net.memif:debug        # extra EAL arguments
//   dpdk_hugepages = auto    # auto | on | off (normal pages: --no-huge)
//   dpdk_flow = on           # rte_flow rules steering UDP 4791 where the PMD has them
//   address = 10.0.0.1/24    # a port with no kernel netdev (PCI, memif, tap user side):
//                            # its IPv4 addresses (comma-separated); burst answers ARP
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "abi/burst_ctl_proto.h"
#include "abi/burst_limits.h"

namespace burst::burstd {

inline constexpr char kDefaultConfigPath[] = "/etc/burst/burstd.conf";
// Without --config: DIR/burstd.conf (defaults for every NIC), then DIR/NETDEV.conf.
inline constexpr char kDefaultConfigDir[] = "/etc/burst";

enum class BackendKind : uint8_t { kXdp, kLoopback, kDpdk };
enum class Hugepages : uint8_t { kAuto, kOn, kOff };
enum class XdpMode : uint8_t { kAuto, kNative, kGeneric };
enum class ZeroCopy : uint8_t { kAuto, kOn, kOff };
enum class EventLoopKind : uint8_t { kAuto, kUring, kEpoll };
enum class KmodMode : uint8_t { kAuto, kOn, kOff };

struct Config {
  std::string netdev;
  BackendKind backend = BackendKind::kXdp;
  uint32_t workers = 1;
  uint32_t qps_per_worker = BURST_MAX_QP_PER_WORKER;  // HELLO's max_qp = this x workers
  uint32_t cqs_per_worker = BURST_MAX_CQ_PER_WORKER;
  std::string socket_path = BURST_CTL_DEFAULT_SOCKET;
  uint32_t socket_mode = 0666;
  std::string socket_owner;  // empty: leave as created (burstd's own uid)
  std::string socket_group;  // empty: leave as created
  std::string admin_group;   // empty: only root sees other users' resources
  // Per-user caps on objects, for clients whose uid is not 0 (0: no cap beyond
  // the device limits). Registered bytes are always charged against the
  // registering process's RLIMIT_MEMLOCK unless it holds CAP_IPC_LOCK.
  uint32_t max_qps_per_user = 0;
  uint32_t max_cqs_per_user = 0;
  uint32_t max_mrs_per_user = 0;
  uint32_t max_pds_per_user = 0;
  uint32_t client_check_ms = 200;
  bool drop_caps = true;
  XdpMode xdp_mode = XdpMode::kAuto;
  ZeroCopy zero_copy = ZeroCopy::kAuto;
  uint8_t memory_mode = BURST_CTL_MEM_CMA;  // reported; used once MRs arrive
  uint32_t mtu = 1500;
  uint32_t idle_sleep_max_us = 1000;
  // Unacknowledged packets per QP. Every QP of a peer shares that peer's receive
  // ring: 8 QPs x 1024 packets overran a 2048-frame AF_XDP ring and Go-Back-N
  // resent 40% of the packets (ib_write_bw -q 8).
  uint32_t window_pkts = 256;
  uint32_t xdp_frames = 8192;
  uint32_t command_timeout_ms = 2000;
  uint32_t max_clients = 1024;
  std::string log_level = "info";
  EventLoopKind event_loop = EventLoopKind::kAuto;
  KmodMode kmod = KmodMode::kAuto;  // registration with ib_core through /dev/burst
  // backend = dpdk
  std::string dpdk_port;
  std::string dpdk_eal;
  Hugepages dpdk_hugepages = Hugepages::kAuto;
  bool dpdk_flow = true;
  std::vector<std::string> addresses;  // "a.b.c.d/len", for a port without a netdev
  // Where each key set so far came from: "FILE:LINE" or "--flag" (error messages).
  std::map<std::string, std::string> origin;
};

// Where burstd reads its configuration (main.cc's flags).
struct ConfigSources {
  std::string file;        // --config FILE: that one file only (it must exist)
  std::string dir = kDefaultConfigDir;  // otherwise DIR/burstd.conf then DIR/NETDEV.conf
  std::string netdev;      // --netdev (picks DIR/NETDEV.conf; also overrides the files)
};

// Reads the files `src` names into *c, in order (later keys win); *read lists
// the files found. A per-NIC file may not name another netdev. Errors are
// "FILE:LINE: what (fix: how)".
bool load_layered_config(const ConfigSources& src, Config* c, std::vector<std::string>* read,
                         std::string* error);

// "ORIGIN: " for key (the file and line, or the flag, that set it), "" when defaulted.
std::string origin_prefix(const Config& c, const std::string& key);

// Reads `path` into *c (keys not in the file keep their value). `required`:
// a missing file is an error; otherwise it leaves *c unchanged and sets *missing.
// Errors name the file and line ("burstd.conf:7: unknown key 'foo'").
bool load_config(const std::string& path, bool required, Config* c, bool* missing,
                 std::string* error);

// Applies one key = value (from the file or the command line).
bool set_config_value(Config* c, const std::string& key, const std::string& value,
                      std::string* error);

// Checks the combination (xdp needs a netdev, dpdk a port or a netdev, workers range ...).
bool validate_config(const Config& c, std::string* error);

const char* backend_kind_name(BackendKind b);
const char* xdp_mode_name(XdpMode m);
const char* zero_copy_name(ZeroCopy z);
const char* event_loop_name(EventLoopKind k);
const char* kmod_mode_name(KmodMode k);
// Whether this burstd was built with the DPDK backend.
bool have_dpdk_backend();

}  // namespace burst::burstd
