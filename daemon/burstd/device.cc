#include "daemon/burstd/device.h"

#include <net/if.h>

#include <algorithm>

#include "daemon/burstd/log.h"
#include "daemon/burstd/reflect_port.h"
#include "daemon/net/gid_table.h"
#include "daemon/net/netdev.h"
#include "datapath/queue_set.h"

#ifdef BURSTD_WITH_XDP
#include "datapath/xdp/xdp_port.h"
#include "datapath/xdp/xdp_queue.h"
#else
namespace burst::datapath {
// Only destroyed through unique_ptr (always empty without the backend).
class XdpPort {};
class XdpQueue {};
}  // namespace burst::datapath
#endif

namespace burst::burstd {
namespace {

constexpr uint32_t kMaxQpsPerWorker = 1024;
constexpr uint32_t kMaxCqsPerWorker = 1024;
constexpr uint32_t kMaxPds = 1u << 12;
constexpr uint32_t kHandoffSlots = 1024;
constexpr uint32_t kEthHeader = 14;

}  // namespace

bool have_xdp_backend() {
#ifdef BURSTD_WITH_XDP
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Device> Device::Open(const Config& config, std::string* error) {
  std::unique_ptr<Device> d(new Device());
  d->worker_options_.idle_sleep_max_us = config.idle_sleep_max_us;
  d->info_.memory_mode = config.memory_mode;
  d->info_.workers = config.workers;
  d->info_.max_qp_per_worker = kMaxQpsPerWorker;
  d->info_.max_cq_per_worker = kMaxCqsPerWorker;
  d->info_.max_pd = kMaxPds - 1;  // entry 0 is never a PD
  d->mrs_ = std::make_unique<core::MrTable>(1u << 16, kMaxPds);
  const bool ok = config.backend == BackendKind::kXdp ? d->open_xdp(config, error)
                                                      : d->open_loopback(config, error);
  if (!ok) return nullptr;
  return d;
}

Device::~Device() {
  stop();
  workers_.clear();     // engines and QueueSets first,
  xdp_queues_.clear();  // then the AF_XDP sockets,
  xdp_port_.reset();    // then the program (detached if still ours)
}

core::EngineConfig Device::engine_config(uint32_t w) const {
  core::EngineConfig ec;
  ec.port.mac = info_.mac;
  ec.port.gids.assign(info_.gids.begin(), info_.gids.end());
  ec.port.l2_mtu = info_.mtu + kEthHeader;
  ec.max_qps = kMaxQpsPerWorker;
  ec.max_cqs = kMaxCqsPerWorker;
  ec.qpn_stride = info_.workers;
  ec.qpn_offset = w;
  return ec;
}

bool Device::open_loopback(const Config& config, std::string* error) {
  info_.backend = BURST_CTL_BACKEND_LOOPBACK;
  net::NetdevInfo nd;
  if (!config.netdev.empty()) {
    // A loopback device may borrow a netdev's identity (MAC, MTU, GIDs).
    net::Status s = net::query_netdev(config.netdev, &nd);
    if (!s.ok()) {
      *error = s.message();
      return false;
    }
    info_.netdev = nd.name;
    info_.ifindex = nd.ifindex;
  } else {
    nd.mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};  // locally administered
    nd.mtu = config.mtu;
    in_addr lo{htonl(INADDR_LOOPBACK)};
    nd.ipv4.push_back(net::IfAddress{net::gid_from_ipv4(lo), 8, 254, 0});
  }
  info_.mac = nd.mac;
  info_.mtu = config.netdev.empty() ? config.mtu : nd.mtu;
  info_.gids = net::build_gid_table(nd, BURST_CTL_MAX_GIDS);
  info_.queues = config.workers;
  handoff_ = std::make_unique<core::Handoff>(config.workers, kHandoffSlots, info_.mtu + 64);
  for (uint32_t w = 0; w < config.workers; ++w) {
    info_.worker_queues.push_back({w});
    auto port = std::make_unique<ReflectPort>(info_.mtu + kEthHeader);
    auto hook = [w](ReflectPort& p, WorkerStats* out) {
      out->queue_ids = {w};
      out->backend = {{"loopback.reflected", p.reflected()},
                      {"loopback.reflect_drops", p.reflect_drops()},
                      {"loopback.tx_full", p.counters().tx_full}};
    };
    workers_.push_back(std::make_unique<BackendWorker<ReflectPort>>(
        w, worker_options_, engine_config(w), *mrs_, std::move(port), handoff_.get(), hook));
  }
  return true;
}

#ifdef BURSTD_WITH_XDP

namespace {
using Queues = datapath::QueueSet<datapath::XdpQueue>;
}  // namespace

bool Device::open_xdp(const Config& config, std::string* error) {
  info_.backend = BURST_CTL_BACKEND_XDP;
  net::NetdevInfo nd;
  net::Status s = net::query_netdev(config.netdev, &nd);
  if (!s.ok()) {
    *error = s.message();
    return false;
  }
  info_.netdev = nd.name;
  info_.ifindex = nd.ifindex;
  info_.mac = nd.mac;
  info_.mtu = nd.mtu;
  info_.gids = net::build_gid_table(nd, BURST_CTL_MAX_GIDS);

  datapath::XdpConfig xc;
  xc.netdev = config.netdev;
  xc.xdp_mode = config.xdp_mode == XdpMode::kNative    ? datapath::XdpAttachMode::kNative
                : config.xdp_mode == XdpMode::kGeneric ? datapath::XdpAttachMode::kGeneric
                                                       : datapath::XdpAttachMode::kAuto;
  xc.zero_copy = config.zero_copy == ZeroCopy::kOn    ? datapath::ZeroCopyMode::kRequire
                 : config.zero_copy == ZeroCopy::kOff ? datapath::ZeroCopyMode::kOff
                                                      : datapath::ZeroCopyMode::kAuto;
  // RSS spreads received frames over every queue: all of them get a socket.
  const uint32_t nq = std::max<uint32_t>(nd.rx_queues, 1);
  for (uint32_t q = 0; q < nq; ++q) xc.queues.push_back(q);
  datapath::XdpError err;
  xdp_port_ = datapath::XdpPort::Open(xc, &err);
  if (!xdp_port_) {
    *error = err.message;
    return false;
  }
  if (!xdp_port_->notes().empty())
    BURSTD_INFO("%s: %s", config.netdev.c_str(), xdp_port_->notes().c_str());
  if (xdp_port_->queue_count() < config.workers) {
    *error = "netdev " + config.netdev + " has " + std::to_string(xdp_port_->queue_count()) +
             " queues; workers = " + std::to_string(config.workers) +
             " needs at least one each (lower --workers, or raise the queues with `ethtool -L " +
             config.netdev + " combined N`)";
    return false;
  }
  info_.xdp_mode = xdp_port_->native() ? BURST_CTL_XDP_NATIVE : BURST_CTL_XDP_GENERIC;
  info_.xdp_prog_id = xdp_port_->prog_id();
  info_.queues = xdp_port_->queue_count();
  handoff_ = std::make_unique<core::Handoff>(config.workers, kHandoffSlots, info_.mtu + 64);

  std::vector<std::vector<datapath::XdpQueue*>> per_worker(config.workers);
  info_.worker_queues.assign(config.workers, {});
  for (uint32_t q = 0; q < xdp_port_->queue_count(); ++q) {
    auto queue = datapath::XdpQueue::Open(*xdp_port_, q, &err);
    if (!queue) {
      *error = err.message;
      return false;
    }
    per_worker[q % config.workers].push_back(queue.get());
    info_.worker_queues[q % config.workers].push_back(q);
    xdp_queues_.push_back(std::move(queue));
  }
  info_.zero_copy = xdp_queues_.front()->zero_copy();
  for (uint32_t w = 0; w < config.workers; ++w) {
    auto set = std::make_unique<Queues>(per_worker[w]);
    auto hook = [](Queues& qs, WorkerStats* out) {
      uint64_t sock_drops = 0, ring_full = 0, rx = 0, tx = 0, kicks = 0, multibuf = 0;
      for (size_t i = 0; i < qs.size(); ++i) {
        datapath::XdpQueue& q = qs.queue(i);
        out->queue_ids.push_back(q.queue_id());
        const datapath::XdpQueueCounters& c = q.counters();
        rx += c.rx_frames;
        tx += c.tx_frames;
        kicks += c.tx_kicks;
        multibuf += c.rx_multibuf;
        xdp_statistics st{};
        if (q.KernelStats(&st)) {
          sock_drops += st.rx_dropped + st.rx_invalid_descs;
          ring_full += st.rx_ring_full + st.rx_fill_ring_empty_descs;
        }
      }
      out->backend = {{"xsk.rx_frames", rx},     {"xsk.tx_frames", tx},
                      {"xsk.tx_kicks", kicks},   {"xsk.rx_multibuf", multibuf},
                      {"xsk.drops", sock_drops}, {"xsk.ring_full", ring_full}};
    };
    workers_.push_back(std::make_unique<BackendWorker<Queues>>(
        w, worker_options_, engine_config(w), *mrs_, std::move(set), handoff_.get(), hook));
  }
  return true;
}

std::vector<std::pair<std::string, uint64_t>> Device::port_counters() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  datapath::XdpSteerCounters c{};
  if (xdp_port_ && xdp_port_->ReadCounters(&c)) {
    for (uint32_t i = 0; i < c.size(); ++i) {
      out.emplace_back(std::string("xdp.") + datapath::SteerCounterName(i), c[i]);
    }
  }
  return out;
}

#else  // !BURSTD_WITH_XDP

bool Device::open_xdp(const Config&, std::string* error) {
  *error =
      "this burstd was built without the AF_XDP backend (configure with -DBURST_WITH_XDP=ON and "
      "libxdp-dev, libbpf-dev); use --backend loopback";
  return false;
}

std::vector<std::pair<std::string, uint64_t>> Device::port_counters() const { return {}; }

#endif

void Device::start() {
  for (auto& w : workers_) w->start();
}

void Device::stop() {
  for (auto& w : workers_) w->stop();
}

uint8_t Device::port_state() const {
  if (info_.backend == BURST_CTL_BACKEND_LOOPBACK && info_.netdev.empty()) {
    return BURST_CTL_PORT_ACTIVE;
  }
  net::NetdevInfo nd;
  if (!net::query_netdev(info_.ifindex, &nd).ok()) return BURST_CTL_PORT_DOWN;
  return (nd.flags & IFF_UP) && (nd.flags & IFF_RUNNING) ? BURST_CTL_PORT_ACTIVE
                                                         : BURST_CTL_PORT_DOWN;
}

}  // namespace burst::burstd
