/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// DpdkPort: one DPDK ethdev port that burst owns (control plane), and the
// process-wide EAL it needs.
//
// Open():
//   1. EAL, once per process: `--in-memory` on 2 MB hugepages when enough are
//      free, else `--no-huge --no-shconf` with a logged note; `-l` the first CPU
//      this process may use (the calling thread's affinity is restored after
//      rte_eal_init, so burst's own threads are never pinned by the EAL);
//      `--no-pci` unless the port is a PCI address, which is allow-listed
//      (`-a`); `--no-telemetry`; then DpdkConfig::eal_args.
//   2. The device: a vdev (`net_af_packet0,iface=eth1`, `net_memif0,...`,
//      `net_tap0,...`, `net_af_xdp0,...`) is hot-plugged with rte_dev_probe; a PCI
//      device was probed by the EAL. The port is found by name.
//   3. Configuration: `queues` RX/TX queue pairs (control frames, ARP, ride on
//      queue 0 and are sent by its worker's flush()); RSS on the UDP ports (RoCE's
//      source port carries the flow entropy) when there are several queues and
//      the PMD hashes UDP; the MTU; a mempool per direction and queue whose data
//      room holds a whole frame (4096-byte RoCE MTU needs a jumbo netdev MTU);
//      RX scatter is enabled when the PMD needs it, and multi-segment frames are
//      linearised by DpdkQueue.
//   4. rte_flow: `eth / ipv4 / udp dst is 4791 -> rss(burst's queues)` (and the
//      IPv6 twin) when the PMD supports flows. Without flow support every frame
//      of the port reaches burst's queues: non-RoCE frames are dropped and
//      counted by the transport, ARP is answered by the ArpAgent when no kernel
//      stands behind the port (notes() says which).
//
// Every failure is one message naming the fix (no hugepages and no fallback,
// a port name no PMD knows, EAL arguments the EAL refuses, an MTU the port
// cannot take). The destructor stops and closes the port; the EAL stays for
// the life of the process (it cannot be initialised twice).
//
// Threading: control plane. The DpdkQueues belong to the port (one per worker,
// each then used only by its worker thread) and die with it.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "datapath/error.h"

struct rte_mempool;
struct rte_flow;

namespace burst::datapath {

class DpdkQueue;
class ArpAgent;
using DpdkError = Error;

enum class DpdkHugepages : uint8_t {
  kAuto,     // hugepages when enough 2 MB pages are free, normal pages otherwise
  kOff,      // --no-huge
  kRequire,  // fail without hugepages
};

struct DpdkConfig {
  std::string port;                   // devargs: vdev spec or PCI address
  std::vector<std::string> eal_args;  // appended to burst's EAL arguments
  uint32_t queues = 1;                // RX/TX queue pairs (one per worker)
  uint32_t mtu = 0;                   // L3 MTU to set; 0 keeps the port's
  uint32_t rx_desc = 1024;
  uint32_t tx_desc = 1024;
  uint32_t mbufs = 2048;  // per pool (one RX and one TX pool per queue), at least rx+tx desc
  DpdkHugepages hugepages = DpdkHugepages::kAuto;
  bool flow_steering = true;  // try rte_flow rules for UDP 4791
};

struct DpdkPortStats {
  uint64_t ipackets = 0, opackets = 0, ibytes = 0, obytes = 0;
  uint64_t imissed = 0, ierrors = 0, oerrors = 0, rx_nombuf = 0;
};

// The vdev burst uses on a kernel netdev when no dpdk_port is configured:
// net_af_packet with one queue pair per worker and ring frames large enough
// for the netdev's MTU (the PMD's default 2048-byte frames would cut jumbo
// frames).
std::string AfPacketDevargs(const std::string& netdev, uint32_t queues, uint32_t mtu);

// "--a b  -c" -> {"--a", "b", "-c"}: the one-line dpdk_eal / --eal settings.
std::vector<std::string> SplitEalArgs(const std::string& line);

class DpdkPort {
 public:
  static std::unique_ptr<DpdkPort> Open(const DpdkConfig& config, DpdkError* error);
  ~DpdkPort();
  DpdkPort(const DpdkPort&) = delete;
  DpdkPort& operator=(const DpdkPort&) = delete;

  uint16_t port_id() const { return port_id_; }
  const std::string& name() const { return name_; }
  const std::string& driver() const { return driver_; }  // "net_af_packet", "net_memif", ...
  const std::array<uint8_t, 6>& mac() const { return mac_; }
  uint32_t mtu() const { return mtu_; }  // L3
  uint32_t queue_count() const { return static_cast<uint32_t>(queues_.size()); }
  DpdkQueue& queue(uint32_t i) { return *queues_[i]; }
  bool rss() const { return rss_; }
  bool flow_rules() const { return !flows_.empty(); }
  bool hugepages() const;  // whether the EAL runs on hugepages
  bool link_up() const;
  // What Open() chose or fell back to, one sentence each ("" if nothing).
  const std::string& notes() const { return notes_; }

  // Attaches an ARP agent to every queue (ports with no kernel behind them).
  // Call before the workers start; the agent must outlive the port's use.
  void set_arp_agent(ArpAgent* agent);
  // Any thread: one frame (copied) for queue 0's next flush(). False if it
  // cannot be queued (pool empty, 64 pending).
  bool control_tx(const uint8_t* frame, uint32_t len);

  DpdkPortStats stats() const;

 private:
  DpdkPort() = default;
  DpdkError Configure(const DpdkConfig& config);
  void InstallFlows(const DpdkConfig& config);

  uint16_t port_id_ = 0;
  bool have_port_ = false;
  int prog_fd_ = -1;  // memfd holding the steering program net_af_xdp loads
  bool probed_vdev_ = false;  // hot-plugged by us: removed by the destructor
  bool started_ = false;
  std::string devargs_;
  std::string name_;
  std::string driver_;
  std::array<uint8_t, 6> mac_{};
  uint32_t mtu_ = 0;
  bool rss_ = false;
  std::string notes_;
  std::vector<rte_mempool*> pools_;
  rte_mempool* control_pool_ = nullptr;
  std::vector<rte_flow*> flows_;
  std::vector<std::unique_ptr<DpdkQueue>> queues_;
};

}  // namespace burst::datapath
