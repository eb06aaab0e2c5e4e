/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The port assembly that burstd and burst-xfer share: one port of one backend
// opened from a small config, every queue of it opened, worker w handed its
// queues (w, w+N, ...: datapath/queue_set.h) with the core::Worker over them,
// and the counters of the port and of each worker's queues named.
//
//   open_port(config)    Port (control plane): the identity the engines use
//                        (MAC, MTU, GIDs), link state, next-hop resolution,
//                        port counters, the Handoff rings between the workers;
//   Port::make_loop(w)   WorkerLoop for worker w's thread: its queues and the
//                        core::Worker<B> over them, B the backend's queue type.
//
// One file per backend, compiled under its option: loopback.cc (a ReflectPort
// per worker), xdp.cc (BURST_WITH_XDP: XdpPort, one XdpQueue per RX queue),
// dpdk.cc (BURST_WITH_DPDK: DpdkPort, queue pair w for worker w, an ArpAgent
// when no kernel netdev stands behind the port). A backend the build left out
// is refused in one place, open_port() (port.cc), naming the option.
//
// The data path stays compile-time: each backend file instantiates
// core::Worker<B> once; the one virtual call on the data path is
// WorkerLoop::poll_once, once per loop iteration (a burst), never per packet.
//
// Threading: a Port is control plane (open, query and destroy on one thread at
// a time). A WorkerLoop is used by its worker thread only (queue_stats() inside
// that worker's commands) and is destroyed before its Port.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/engine.h"
#include "core/worker.h"
#include "datapath/dpdk/dpdk_port.h"
#include "datapath/xdp/xdp_config.h"
#include "net/addr.h"
#include "net/gid_table.h"
#include "net/netdev.h"

namespace burst::port {

enum class Kind : uint8_t { kLoopback, kXdp, kDpdk };
const char* kind_name(Kind kind);

// "" when this build has the backend, else why not and which option builds it.
std::string missing_backend(Kind kind);
inline bool have_backend(Kind kind) { return missing_backend(kind).empty(); }

struct PortConfig {
  Kind kind = Kind::kLoopback;
  // The kernel netdev behind the port, "" for none. xdp needs one; dpdk runs
  // net_af_packet on it unless dpdk.devargs names the port; loopback borrows
  // its identity (MAC, MTU, addresses).
  std::string netdev;
  uint32_t workers = 1;
  // A port without a netdev: its L3 MTU; a DPDK port's IPv4 addresses (its
  // GIDs; it answers ARP for them). Loopback without a netdev is 127.0.0.1/8.
  uint32_t mtu = 1500;
  std::vector<net::IfAddress> addresses;
  size_t max_gids = net::kDefaultMaxGids;
  struct Xdp {
    datapath::XdpAttachMode mode = datapath::XdpAttachMode::kAuto;
    datapath::ZeroCopyMode zero_copy = datapath::ZeroCopyMode::kAuto;
    uint32_t frames = 8192;  // UMEM frames per queue, half of them for receive
  } xdp;
  struct Dpdk {
    std::string devargs;  // vdev spec or PCI address; "" with a netdev: net_af_packet on it
    std::string eal;      // extra EAL arguments, one line
    datapath::DpdkHugepages hugepages = datapath::DpdkHugepages::kAuto;
    bool flow_steering = true;  // rte_flow rules for UDP 4791 where the PMD has them
  } dpdk;
};

using Counters = std::vector<std::pair<std::string, uint64_t>>;

struct PortInfo {
  Kind kind = Kind::kLoopback;
  std::string netdev;  // the kernel netdev behind the port, "" if none
  uint32_t ifindex = 0;
  net::MacAddr mac{};  // the port's own (the netdev's, the DPDK port's, or 02:00:00:00:00:01)
  uint32_t mtu = 0;    // L3
  std::vector<net::Gid> gids;
  uint32_t queues = 0;                               // queues of the port
  std::vector<std::vector<uint32_t>> worker_queues;  // queue ids per worker
  std::string notes;                  // what the backend chose or fell back to, "" if nothing
  std::vector<std::string> warnings;  // worth a warning in the log (one sentence each)
  // xdp
  bool xdp_native = false;  // false: generic (skb) XDP
  uint32_t xdp_prog_id = 0;
  bool xdp_dispatcher = false;  // in libxdp's dispatcher (false: attached alone, legacy)
  bool zero_copy = false;
  // dpdk
  std::string dpdk_port;    // the port's name ("net_af_packet0", "0000:3b:00.0")
  std::string dpdk_driver;  // the PMD ("net_af_packet", "net_memif", ...)
};

// Worker w's queues and the core::Worker over them (port/backend_loop.h).
class WorkerLoop {
 public:
  virtual ~WorkerLoop() = default;
  // Worker thread, before its first poll (DPDK registers the thread).
  virtual void on_thread_start() = 0;
  // Worker thread: one iteration of core::Worker::poll_once.
  virtual bool poll_once(uint64_t now_ns) = 0;
  virtual const core::WorkerCounters& counters() const = 0;
  // Worker thread: the queue ids served and the queues' counters by name.
  virtual void queue_stats(std::vector<uint32_t>* queue_ids, Counters* counters) = 0;
  // Descriptors that become readable when a frame arrives (AF_XDP sockets),
  // for an idle worker's sleep; none on other backends.
  virtual std::vector<int> wait_fds() = 0;
};

class Port {
 public:
  virtual ~Port();
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  const PortInfo& info() const { return info_; }
  core::Handoff* handoff() const { return handoff_.get(); }
  // Worker w's engine configuration: the port's identity, QPNs striped over
  // the workers (qpn_stride = workers, qpn_offset = w). Callers add limits
  // and the window.
  core::EngineConfig engine_config(uint32_t w) const;
  // Worker w's queues and loop; `engine` is worker w's (engine_config(w)).
  virtual std::unique_ptr<WorkerLoop> make_loop(uint32_t w, core::Engine& engine) = 0;

  // Whether the link is up now: the netdev's IFF_UP and IFF_RUNNING, a DPDK
  // port's own link without a netdev; loopback without a netdev always.
  virtual bool link_up() const;
  // Port-level counters by name (steering program, DPDK port, ARP agent).
  virtual Counters counters() const { return {}; }
  // The MAC of the next hop towards `dgid`, the workers running: the port's
  // own for one of its GIDs (the workers deliver such frames to their own
  // receive path: one-host loopback) and on loopback, the ARP agent on a port
  // without a netdev (fed by the workers), else the kernel's neighbour table
  // (an address of another local netdev: that netdev's MAC). 0, or an errno
  // value with *message.
  virtual int resolve(const net::Gid& dgid, int timeout_ms, net::MacAddr* mac,
                      std::string* message) const;
  // The same before any worker runs: a port without a netdev polls its own
  // queues for the answer (other frames are dropped: nothing else flows before
  // the QPs connect). `cancel` (may be empty) ends the wait early.
  virtual int resolve_unstarted(const net::Gid& dgid, int timeout_ms,
                                const std::function<bool()>& cancel, net::MacAddr* mac,
                                std::string* message);
  // " backend=xdp xdp=native/copy queues=4 ..." for a summary line.
  virtual std::string summary() const = 0;

 protected:
  Port() = default;
  // True (and *mac = the port's MAC) when dgid is one of the port's own GIDs.
  bool resolve_own(const net::Gid& dgid, net::MacAddr* mac) const;
  // Fills the identity (MAC replaced by the port's), GIDs and the Handoff.
  void set_identity(const PortConfig& config, net::NetdevInfo identity, const net::MacAddr& mac,
                    uint32_t mtu);

  PortInfo info_;
  std::unique_ptr<core::Handoff> handoff_;
};

// Opens the port; nullptr and one line naming the fix in *error.
std::unique_ptr<Port> open_port(const PortConfig& config, std::string* error);

// "a.b.c.d/len" (or "a.b.c.d": /32) as an address of PortConfig::addresses.
bool parse_ipv4_prefix(const std::string& text, net::IfAddress* out);

}  // namespace burst::port
