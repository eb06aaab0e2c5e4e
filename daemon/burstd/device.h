/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The burst device that burstd serves: one port on one backend, its workers and
// the device-wide tables. The port comes from the assembly burst-xfer uses too
// (port/port.h: xdp, dpdk or loopback, one file per backend there), opened from
// burstd's configuration; this file is backend-agnostic.
//
// Every worker has its own Engine; QPNs are striped over the workers
// (EngineConfig qpn_stride = workers, qpn_offset = w), so the worker owning a
// packet is arithmetic on its destination QPN. The MrTable is device-wide.
//
// QP1 (the GSI QP: CM MADs) is in the datapath: gsi() is the control
// thread's side (daemon/burstd/gsi.h), its channel attached to worker 0's
// Engine, which owns QPN 1 (core/gsi_channel.h).
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
#include "daemon/burstd/config.h"
#include "daemon/burstd/gsi.h"
#include "daemon/burstd/kmod_device.h"
#include "daemon/burstd/port_worker.h"
#include "net/addr.h"
#include "port/port.h"

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
  bool xdp_dispatcher = false;  // xdp: in libxdp's dispatcher (false: attached alone, legacy)
  uint8_t memory_mode = BURST_CTL_MEM_CMA;
  uint32_t workers = 0;
  std::string dpdk_port;    // dpdk: the port's name ("net_af_packet0", "0000:3b:00.0")
  std::string dpdk_driver;  // dpdk: the PMD ("net_af_packet", "net_memif", ...)
  std::string notes;        // fallbacks the backend chose at open, "" if none
  std::vector<std::vector<uint32_t>> worker_queues;  // queue ids per worker
  // The device limits are abi/burst_limits.h.
};

class Device {
 public:
  // Opens the port (XDP attach, sockets, DPDK port) and builds the workers,
  // not yet started. Errors are one line naming the fix (from port/, net/).
  static std::unique_ptr<Device> Open(const Config& config, std::string* error);
  ~Device();  // stops the workers; destroys them, then the port (queues, XDP detach)
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  void start();
  void stop();

  const DeviceInfo& info() const { return info_; }
  uint32_t workers() const { return static_cast<uint32_t>(workers_.size()); }
  uint32_t qps_per_worker() const { return qps_per_worker_; }  // config qps_per_worker
  uint32_t cqs_per_worker() const { return cqs_per_worker_; }
  WorkerBase& worker(uint32_t i) { return *workers_[i]; }
  core::MrTable& mrs() { return *mrs_; }
  // QP1's MADs (control thread).
  Gsi& gsi() { return *gsi_; }

  // Port state now (the netdev's carrier for XDP; always active for loopback).
  uint8_t port_state() const;
  // Device-level counters read by the control plane (XDP steering program,
  // DPDK port statistics, ARP agent, QP1's gsi.*).
  std::vector<std::pair<std::string, uint64_t>> port_counters() const;
  // The destination MAC of a path to `dgid` (control thread): the port's own
  // MAC on loopback, the kernel's neighbour table on a netdev, the ARP agent
  // on a DPDK port without one. 0 or an errno value with *message.
  int resolve_dmac(const net::Gid& dgid, int timeout_ms, net::MacAddr* mac,
                   std::string* message) const;
  // Whether worker w has a QP attached to a multicast group: the workers copy
  // multicast frames to it (core::Handoff). Control thread.
  void set_mcast_member(uint32_t w, bool member);

  // The registration with the kernel's RDMA core (kmod_device.h): nullptr when
  // burst0 is not a kernel device (kmod = off, no module, refused). Its name()
  // is the kernel's (HELLO reports it), its raise() delivers CQ and async
  // events of the provider's shadow objects (native mode).
  const KmodDevice* kmod() const { return kmod_.get(); }
  bool kernel_registered() const { return kmod_ != nullptr; }
  // main.cc, before the workers start and before privileges are dropped.
  void set_kmod(std::unique_ptr<KmodDevice> kmod);

 private:
  Device() = default;
  // Open(): QP1's channel on worker 0's Engine, before the workers start.
  bool attach_gsi(std::string* error);

  DeviceInfo info_;
  std::unique_ptr<core::MrTable> mrs_;
  uint32_t qps_per_worker_ = BURST_MAX_QP_PER_WORKER;
  uint32_t cqs_per_worker_ = BURST_MAX_CQ_PER_WORKER;
  std::unique_ptr<port::Port> port_;
  std::vector<std::unique_ptr<WorkerBase>> workers_;  // destroyed before port_
  std::unique_ptr<Gsi> gsi_;  // destroyed after the workers and the port (~Device)
  std::unique_ptr<KmodDevice> kmod_;  // unregistered first (~Device), applications get DEVICE_FATAL
};

}  // namespace burst::burstd
