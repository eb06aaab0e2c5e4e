// The burst device that burstd serves: one port on one backend, its workers and
// the device-wide tables. Built like burst-xfer's network node, long-lived:
//
//   xdp:      XdpPort (the roce_steer program on the netdev), one XdpQueue per RX
//             queue (RSS spreads frames over all of them), worker w serving queues
//             w, w+N, ... as one QueueSet; Handoff rings between the workers.
//   dpdk:     DpdkPort (one ethdev: a vdev on a kernel netdev, memif, tap, or a
//             PCI device), worker w serving RX/TX queue pair w; an ArpAgent
//             answers ARP when no kernel netdev stands behind the port.
//   loopback: one ReflectPort per worker (the port hears its own frames).
//
// Every worker has its own Engine; QPNs are striped over the workers
// (EngineConfig qpn_stride = workers, qpn_offset = w), so the worker owning a
// packet is arithmetic on its destination QPN. The MrTable is device-wide.
//
// Threading: control thread, except what runs inside worker commands.
// MrTable PD calls are made by the control thread, or by one worker inside a
// command while the control thread waits for it: never by two threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/mr.h"
#include "core/worker.h"
#include "daemon/burstd/config.h"
#include "daemon/burstd/worker.h"
#include "daemon/net/addr.h"

namespace burst::datapath {
class XdpPort;
class XdpQueue;
class DpdkPort;
class ArpAgent;
}  // namespace burst::datapath

namespace burst::burstd {

struct DeviceInfo {
  uint16_t backend = BURST_CTL_BACKEND_LOOPBACK;
  std::string ibdev = "burst0";
  std::string netdev;  // "" for a loopback device without a netdev
  uint32_t ifindex = 0;
  net::MacAddr mac{};
  uint32_t mtu = 0;  // L3
  std::vector<net::Gid> gids;
  uint8_t xdp_mode = BURST_CTL_XDP_NONE;
  bool zero_copy = false;
  uint32_t queues = 0;
  uint32_t xdp_prog_id = 0;
  uint8_t memory_mode = BURST_CTL_MEM_CMA;
  uint32_t workers = 0;
  std::string dpdk_port;    // dpdk: the port's name ("net_af_packet0", "0000:3b:00.0")
  std::string dpdk_driver;  // dpdk: the PMD ("net_af_packet", "net_memif", ...)
  std::string notes;        // fallbacks the backend chose at open, "" if none
  std::vector<std::vector<uint32_t>> worker_queues;  // queue ids per worker
  // Limits.
  uint32_t max_qp_per_worker = 0;
  uint32_t max_cq_per_worker = 0;
  uint32_t max_pd = 0;
};

class Device {
 public:
  // Opens the backend (XDP attach, sockets) and builds the workers, not yet
  // started. Errors are one line naming the fix (from XdpPort / burst_net).
  static std::unique_ptr<Device> Open(const Config& config, std::string* error);
  ~Device();  // stops the workers; destroys them, then the queues, then detaches XDP
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  void start();
  void stop();

  const DeviceInfo& info() const { return info_; }
  uint32_t workers() const { return static_cast<uint32_t>(workers_.size()); }
  WorkerBase& worker(uint32_t i) { return *workers_[i]; }
  core::MrTable& mrs() { return *mrs_; }

  // Port state now (the netdev's carrier for XDP; always active for loopback).
  uint8_t port_state() const;
  // Device-level counters read by the control plane (XDP steering program,
  // DPDK port statistics, ARP agent).
  std::vector<std::pair<std::string, uint64_t>> port_counters() const;
  // The destination MAC of a path to `dgid` (control thread): the port's own
  // MAC on loopback, the kernel's neighbour table on a netdev, the ARP agent
  // on a DPDK port without one. 0 or an errno value with *message.
  int resolve_dmac(const net::Gid& dgid, int timeout_ms, net::MacAddr* mac,
                   std::string* message) const;

 private:
  Device() = default;
  bool open_xdp(const Config& config, std::string* error);
  bool open_loopback(const Config& config, std::string* error);
  bool open_dpdk(const Config& config, std::string* error);
  core::EngineConfig engine_config(uint32_t w) const;
  std::vector<std::pair<std::string, uint64_t>> xdp_counters() const;
  std::vector<std::pair<std::string, uint64_t>> dpdk_counters() const;

  DeviceInfo info_;
  WorkerOptions worker_options_;
  uint32_t window_pkts_ = 256;
  std::unique_ptr<core::MrTable> mrs_;
  std::unique_ptr<core::Handoff> handoff_;
  std::unique_ptr<datapath::XdpPort> xdp_port_;
  std::vector<std::unique_ptr<datapath::XdpQueue>> xdp_queues_;
  std::unique_ptr<datapath::ArpAgent> arp_;
  std::unique_ptr<datapath::DpdkPort> dpdk_port_;
  std::vector<std::unique_ptr<WorkerBase>> workers_;
};

// Whether this burstd was built with the AF_XDP backend.
bool have_xdp_backend();

}  // namespace burst::burstd
