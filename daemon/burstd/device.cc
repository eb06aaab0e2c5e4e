// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/device.h"

#include "abi/burst_limits.h"
#include "core/worker.h"
#include "daemon/burstd/log.h"

namespace burst::burstd {
namespace {

// The longest send() waits on the control thread for a neighbour (the rdma_cm
// layer resolved the address before its first MAD: the entry is cached).
constexpr int kGsiResolveTimeoutMs = 100;

port::PortConfig port_config(const Config& config) {
  port::PortConfig pc;
  pc.kind = config.backend == BackendKind::kXdp    ? port::Kind::kXdp
            : config.backend == BackendKind::kDpdk ? port::Kind::kDpdk
                                                   : port::Kind::kLoopback;
  pc.netdev = config.netdev;
  pc.workers = config.workers;
  pc.mtu = config.mtu;
  for (const std::string& a : config.addresses) {
    net::IfAddress addr;
    if (port::parse_ipv4_prefix(a, &addr)) pc.addresses.push_back(addr);  // validated by the config
  }
  pc.max_gids = BURST_CTL_MAX_GIDS;
  pc.xdp.frames = config.xdp_frames;
  pc.xdp.mode = config.xdp_mode == XdpMode::kNative    ? datapath::XdpAttachMode::kNative
                : config.xdp_mode == XdpMode::kGeneric ? datapath::XdpAttachMode::kGeneric
                                                       : datapath::XdpAttachMode::kAuto;
  pc.xdp.zero_copy = config.zero_copy == ZeroCopy::kOn    ? datapath::ZeroCopyMode::kRequire
                     : config.zero_copy == ZeroCopy::kOff ? datapath::ZeroCopyMode::kOff
                                                          : datapath::ZeroCopyMode::kAuto;
  pc.dpdk.devargs = config.dpdk_port;
  pc.dpdk.eal = config.dpdk_eal;
  pc.dpdk.hugepages = config.dpdk_hugepages == Hugepages::kOn    ? datapath::DpdkHugepages::kRequire
                      : config.dpdk_hugepages == Hugepages::kOff ? datapath::DpdkHugepages::kOff
                                                                 : datapath::DpdkHugepages::kAuto;
  pc.dpdk.flow_steering = config.dpdk_flow;
  return pc;
}

uint16_t ctl_backend(port::Kind kind) {
  switch (kind) {
    case port::Kind::kXdp:
      return BURST_CTL_BACKEND_XDP;
    case port::Kind::kDpdk:
      return BURST_CTL_BACKEND_DPDK;
    case port::Kind::kLoopback:
      break;
  }
  return BURST_CTL_BACKEND_LOOPBACK;
}

}  // namespace

std::unique_ptr<Device> Device::Open(const Config& config, std::string* error) {
  std::unique_ptr<Device> d(new Device());
  d->port_ = port::open_port(port_config(config), error);
  if (!d->port_) return nullptr;
  const port::PortInfo& pi = d->port_->info();
  for (const std::string& w : pi.warnings) BURSTD_WARN("%s", w.c_str());

  DeviceInfo& info = d->info_;
  info.backend = ctl_backend(pi.kind);
  info.netdev = pi.netdev;
  info.ifindex = pi.ifindex;
  info.mac = pi.mac;
  info.mtu = pi.mtu;
  info.gids = pi.gids;
  if (pi.kind == port::Kind::kXdp)
    info.xdp_mode = pi.xdp_native ? BURST_CTL_XDP_NATIVE : BURST_CTL_XDP_GENERIC;
  info.zero_copy = pi.zero_copy;
  info.queues = pi.queues;
  info.xdp_prog_id = pi.xdp_prog_id;
  info.xdp_dispatcher = pi.xdp_dispatcher;
  info.memory_mode = config.memory_mode;
  info.workers = config.workers;
  info.dpdk_port = pi.dpdk_port;
  info.dpdk_driver = pi.dpdk_driver;
  info.notes = pi.notes;
  info.worker_queues = pi.worker_queues;

  d->mrs_ = std::make_unique<core::MrTable>(BURST_MAX_MR, BURST_MAX_PD);
  d->qps_per_worker_ = config.qps_per_worker;
  d->cqs_per_worker_ = config.cqs_per_worker;
  WorkerOptions options;
  options.idle_sleep_max_us = config.idle_sleep_max_us;
  for (uint32_t w = 0; w < config.workers; ++w) {
    core::EngineConfig ec = d->port_->engine_config(w);
    ec.max_qps = config.qps_per_worker;
    ec.max_cqs = config.cqs_per_worker;
    ec.max_srqs = BURST_MAX_SRQ_PER_WORKER;
    ec.window_pkts = config.window_pkts;
    d->workers_.push_back(std::make_unique<PortWorker>(w, options, ec, *d->mrs_, *d->port_));
  }
  if (!d->attach_gsi(error)) return nullptr;
  return d;
}

bool Device::attach_gsi(std::string* error) {
  const Device* self = this;
  auto resolve = [self](const net::Gid& dgid, net::MacAddr* mac) {
    std::string message;
    return self->resolve_dmac(dgid, kGsiResolveTimeoutMs, mac, &message);
  };
  gsi_ = std::make_unique<Gsi>(info_.gids, resolve, port_->handoff());
  if (core::Handoff* h = port_->handoff(); h != nullptr)
    h->add_inbound(core::kGsiOwner, &gsi_->channel().tx_ring());
  // The workers have not started: the command runs here, on this thread.
  core::Status s = core::Errc::kInvalid;
  core::GsiChannel* channel = &gsi_->channel();
  worker(core::kGsiOwner).run([&](WorkerBase& w) { s = w.engine().attach_gsi(channel); }, 0);
  if (!s.ok()) *error = "QP1: the datapath's GSI channel could not be attached to worker 0";
  return s.ok();
}

Device::~Device() {
  kmod_.reset();  // the kernel's burst0 goes first: its applications get IBV_EVENT_DEVICE_FATAL
  stop();
  workers_.clear();  // engines and their queue loops first,
  port_.reset();     // then the port: queues, sockets, XDP program or DPDK port, ARP agent
  gsi_.reset();      // then QP1's channel (the engine and the handoff pointed to it)
}

std::vector<std::pair<std::string, uint64_t>> Device::port_counters() const {
  std::vector<std::pair<std::string, uint64_t>> out = port_->counters();
  if (gsi_) {
    for (auto& c : gsi_->counters()) out.push_back(std::move(c));
  }
  return out;
}

void Device::start() {
  for (auto& w : workers_) w->start();
}

void Device::stop() {
  for (auto& w : workers_) w->stop();
}

void Device::set_kmod(std::unique_ptr<KmodDevice> kmod) {
  kmod_ = std::move(kmod);
  if (kmod_) info_.ibdev = kmod_->name();  // HELLO names the kernel's device
}

void Device::set_mcast_member(uint32_t w, bool member) {
  if (core::Handoff* h = port_->handoff(); h != nullptr) h->set_mcast_member(w, member);
}

uint8_t Device::port_state() const {
  return port_->link_up() ? BURST_CTL_PORT_ACTIVE : BURST_CTL_PORT_DOWN;
}

int Device::resolve_dmac(const net::Gid& dgid, int timeout_ms, net::MacAddr* mac,
                         std::string* message) const {
  return port_->resolve(dgid, timeout_ms, mac, message);
}

}  // namespace burst::burstd
