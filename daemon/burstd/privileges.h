/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstd's privileges (issue 12; the threat model is docs/security.md).
//
// burstd starts as root, or with the capabilities its backend's start-up needs
// (XDP load/attach, AF_XDP sockets and UMEM, the DPDK EAL and port). Once the
// backend is open and the control socket bound, drop_privileges() keeps only
// what the run time still needs, in every thread of the process: permitted =
// effective = the kept set, inheritable and ambient empty, the bounding set the
// kept set (when burstd holds CAP_SETPCAP to change it), and no_new_privs, so no
// exec can give anything back. A capability burstd did not start with is not
// kept (burstd as an ordinary user keeps none and works with the loopback
// backend). `drop_caps = off` keeps everything.
//
// What is kept after start-up, per backend (measured: tests/burstd/
// burstd_caps_test.sh, burstd_xdp_test.sh, burstd_dpdk_test.sh and the
// provider/security suites with the drop in place):
//
// | backend                  | kept          | why it is still needed after start-up         |
// |--------------------------|---------------|-----------------------------------------------|
// | xdp                      | CAP_NET_ADMIN | detaching burst's XDP program at shutdown     |
// |                          |               | (RTM_SETLINK IFLA_XDP; without it the program |
// |                          |               | stays attached); also lets neighbour          |
// |                          |               | resolution use RTM_NEWNEIGH NTF_USE and       |
// |                          |               | re-confirm STALE entries                      |
// | xdp, in libxdp's         | + CAP_SYS_ADMIN | detaching burst's program from the          |
// | dispatcher (shared NIC)  |               | dispatcher loads a new dispatcher with the    |
// |                          |               | other programs re-linked as freplace (bpf     |
// |                          |               | load of EXT programs: CAP_BPF + CAP_PERFMON,  |
// |                          |               | both implied; BPF_PROG_GET_FD_BY_ID); without |
// |                          |               | it a stopped burstd's program stays behind    |
// |                          |               | until the next burstd replaces it             |
// | dpdk, net_af_xdp port    | CAP_NET_ADMIN | the PMD detaches its XDP program when the     |
// |                          |               | port closes (RTM_SETLINK)                     |
// | dpdk, other ports        | none          | net_af_packet (the default on a netdev),      |
// | (net_af_packet, memif,   |               | memif, ring: sockets, memfds and mempools are |
// | ring; PCI not measured)  |               | set up at start-up; a peer's MAC comes from   |
// |                          |               | burst's ARP agent (no netdev) or neigh.cc's   |
// |                          |               | UDP trigger (netdev; no RTM_NEWNEIGH)         |
// | loopback                 | none          | the port is in-process                        |
// | every backend            | none for      | memory is reached only through descriptors    |
// |                          | client memory | the client sent (its /proc/self/mem, a file)  |
//
// Dropped although start-up needed them: CAP_BPF and CAP_SYS_ADMIN (program
// load, BPF_PROG_GET_FD_BY_ID of a stale program; the steering counters are
// read through map descriptors burstd holds, which needs no capability since
// Linux 5.19), CAP_NET_RAW (AF_XDP and packet sockets are created at
// start-up), CAP_IPC_LOCK and CAP_SYS_RESOURCE (UMEM and mempools are
// registered at start-up; burstd locks no memory later), CAP_CHOWN (the
// socket's owner is set before the drop) and the DPDK EAL's needs (hugepage
// files, /proc/self/pagemap, /dev/vfio: all at rte_eal_init). Not measured: a
// PCI port (no NIC here), and growing DPDK memory at run time in IOVA-as-PA
// mode (hugepages without an IOMMU): a new hugepage's physical address comes
// from /proc/self/pagemap, which shows it only with CAP_SYS_ADMIN.
//
// Threading: call once, from the control thread, before the workers start.
// Threads that already exist (the DPDK EAL's) are made to apply the same sets
// themselves (capabilities are per thread); the result is checked for every
// thread in /proc/self/task/*/status.
#pragma once

#include <string>
#include <vector>

#include "daemon/burstd/config.h"

namespace burst::burstd {

struct RuntimeCapability {
  unsigned cap;        // CAP_*
  const char* reason;  // one line, for the log and docs/security.md
};

// The capabilities burstd needs after start-up with `config` (the table above);
// `xdp_dispatcher`: the xdp port's program went into libxdp's dispatcher.
std::vector<RuntimeCapability> runtime_capabilities(const Config& config,
                                                    bool xdp_dispatcher = false);

// Applies the policy of the table above (or nothing with drop_caps = off).
// *summary is the line to log ("capabilities after start-up: cap_net_admin").
// False (and *error) when a thread could not be brought to the reduced sets.
bool drop_privileges(const Config& config, bool xdp_dispatcher, std::string* summary,
                     std::string* error);

}  // namespace burst::burstd
