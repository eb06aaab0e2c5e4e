#include "daemon/burstd/device.h"

#include <arpa/inet.h>
#include <net/if.h>

#include <algorithm>

#include "daemon/burstd/log.h"
#include "daemon/burstd/reflect_port.h"
#include "daemon/net/gid_table.h"
#include "daemon/net/netdev.h"
#include "daemon/net/neigh.h"
#include "datapath/arp_agent.h"
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

#ifdef BURSTD_WITH_DPDK
#include "datapath/dpdk/dpdk_port.h"
#include "datapath/dpdk/dpdk_queue.h"
#else
namespace burst::datapath {
class DpdkPort {};
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
  d->window_pkts_ = config.window_pkts;
  d->info_.workers = config.workers;
  d->info_.max_qp_per_worker = kMaxQpsPerWorker;
  d->info_.max_cq_per_worker = kMaxCqsPerWorker;
  d->info_.max_pd = kMaxPds - 1;  // entry 0 is never a PD
  d->mrs_ = std::make_unique<core::MrTable>(1u << 16, kMaxPds);
  const bool ok = config.backend == BackendKind::kXdp    ? d->open_xdp(config, error)
                  : config.backend == BackendKind::kDpdk ? d->open_dpdk(config, error)
                                                         : d->open_loopback(config, error);
  if (!ok) return nullptr;
  return d;
}

Device::~Device() {
  stop();
  workers_.clear();     // engines and QueueSets first,
  xdp_queues_.clear();  // then the AF_XDP sockets,
  xdp_port_.reset();    // then the program (detached if still ours)
  dpdk_port_.reset();   // the DPDK port and its queues,
  arp_.reset();         // then the ARP agent its queues fed
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
  ec.window_pkts = window_pkts_;
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
  xc.num_frames = config.xdp_frames;
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

std::vector<std::pair<std::string, uint64_t>> Device::xdp_counters() const {
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

std::vector<std::pair<std::string, uint64_t>> Device::xdp_counters() const { return {}; }

#endif

#ifdef BURSTD_WITH_DPDK

namespace {
using DpdkQueues = datapath::QueueSet<datapath::DpdkQueue>;
}  // namespace

bool Device::open_dpdk(const Config& config, std::string* error) {
  info_.backend = BURST_CTL_BACKEND_DPDK;
  net::NetdevInfo nd;
  datapath::DpdkConfig dc;
  dc.port = config.dpdk_port;
  if (!config.netdev.empty()) {
    // A kernel netdev stands behind the port (net_af_packet / net_af_xdp on
    // it): addresses, neighbours and ARP stay the kernel's.
    net::Status s = net::query_netdev(config.netdev, &nd);
    if (!s.ok()) {
      *error = s.message();
      return false;
    }
    info_.netdev = nd.name;
    info_.ifindex = nd.ifindex;
    if (dc.port.empty())
      dc.port = datapath::AfPacketDevargs(nd.name, config.workers, nd.mtu);
    dc.mtu = nd.mtu;
  } else {
    nd.mtu = config.mtu;
    for (const std::string& a : config.addresses) {
      const size_t slash = a.find('/');
      in_addr ip{};
      inet_pton(AF_INET, a.substr(0, slash).c_str(), &ip);  // validated by the config
      nd.ipv4.push_back(net::IfAddress{net::gid_from_ipv4(ip),
                                       static_cast<uint8_t>(std::stoul(a.substr(slash + 1))), 0, 0});
    }
    dc.mtu = config.mtu;
  }
  dc.eal_args = datapath::SplitEalArgs(config.dpdk_eal);
  dc.queues = config.workers;
  dc.hugepages = config.dpdk_hugepages == Hugepages::kOn    ? datapath::DpdkHugepages::kRequire
                 : config.dpdk_hugepages == Hugepages::kOff ? datapath::DpdkHugepages::kOff
                                                            : datapath::DpdkHugepages::kAuto;
  dc.flow_steering = config.dpdk_flow;
  datapath::DpdkError err;
  dpdk_port_ = datapath::DpdkPort::Open(dc, &err);
  if (!dpdk_port_) {
    *error = err.message;
    return false;
  }
  info_.dpdk_port = dpdk_port_->name();
  info_.dpdk_driver = dpdk_port_->driver();
  info_.notes = dpdk_port_->notes();
  std::copy(dpdk_port_->mac().begin(), dpdk_port_->mac().end(), info_.mac.begin());
  if (!config.netdev.empty() && info_.mac != nd.mac)
    BURSTD_WARN("DPDK port %s has MAC %s, netdev %s has %s: peers resolve the netdev's",
                info_.dpdk_port.c_str(), net::format_mac(info_.mac).c_str(), nd.name.c_str(),
                net::format_mac(nd.mac).c_str());
  info_.mtu = dpdk_port_->mtu();
  nd.mac = info_.mac;
  info_.gids = net::build_gid_table(nd, BURST_CTL_MAX_GIDS);
  info_.queues = dpdk_port_->queue_count();
  if (config.netdev.empty()) {
    std::vector<datapath::ArpAgent::Address> addrs;
    for (const net::IfAddress& a : nd.ipv4)
      addrs.push_back({net::gid_to_ipv4(a.addr).s_addr, a.prefix_len});
    datapath::DpdkPort* port = dpdk_port_.get();
    arp_ = std::make_unique<datapath::ArpAgent>(
        dpdk_port_->mac(), std::move(addrs),
        [port](const uint8_t* f, uint32_t len) { return port->control_tx(f, len); });
    dpdk_port_->set_arp_agent(arp_.get());
  }
  handoff_ = std::make_unique<core::Handoff>(config.workers, kHandoffSlots, info_.mtu + 64);
  info_.worker_queues.assign(config.workers, {});
  for (uint32_t w = 0; w < config.workers; ++w) {
    info_.worker_queues[w].push_back(w);
    auto set = std::make_unique<DpdkQueues>(std::vector<datapath::DpdkQueue*>{&dpdk_port_->queue(w)});
    auto hook = [](DpdkQueues& qs, WorkerStats* out) {
      const datapath::DpdkQueueCounters& c = qs.queue(0).counters();
      out->queue_ids.push_back(qs.queue(0).queue_id());
      out->backend = {{"dpdk.rx_frames", c.rx_frames},     {"dpdk.tx_frames", c.tx_frames},
                      {"dpdk.rx_multiseg", c.rx_multiseg}, {"dpdk.rx_arp", c.rx_arp},
                      {"dpdk.tx_full", c.tx_full},         {"dpdk.tx_alloc_fail", c.tx_alloc_fail},
                      {"dpdk.rx_oversize", c.rx_oversize}, {"dpdk.tx_invalid", c.tx_invalid}};
    };
    workers_.push_back(std::make_unique<BackendWorker<DpdkQueues>>(
        w, worker_options_, engine_config(w), *mrs_, std::move(set), handoff_.get(), hook));
  }
  if (arp_) arp_->announce();
  return true;
}

std::vector<std::pair<std::string, uint64_t>> Device::dpdk_counters() const {
  std::vector<std::pair<std::string, uint64_t>> out;
  if (!dpdk_port_) return out;
  const datapath::DpdkPortStats s = dpdk_port_->stats();
  out = {{"dpdk.ipackets", s.ipackets}, {"dpdk.opackets", s.opackets},
         {"dpdk.imissed", s.imissed},   {"dpdk.ierrors", s.ierrors},
         {"dpdk.oerrors", s.oerrors},   {"dpdk.rx_nombuf", s.rx_nombuf}};
  if (arp_) {
    const datapath::ArpAgent::Counters a = arp_->counters();
    out.insert(out.end(), {{"arp.requests_answered", a.requests_answered},
                           {"arp.requests_sent", a.requests_sent},
                           {"arp.learned", a.learned},
                           {"arp.ignored", a.ignored},
                           {"arp.tx_failures", a.tx_failures}});
  }
  return out;
}

#else  // !BURSTD_WITH_DPDK

bool Device::open_dpdk(const Config&, std::string* error) {
  *error =
      "this burstd was built without the DPDK backend (configure with -DBURST_WITH_DPDK=ON and "
      "dpdk-dev); use backend xdp";
  return false;
}

std::vector<std::pair<std::string, uint64_t>> Device::dpdk_counters() const { return {}; }

#endif

std::vector<std::pair<std::string, uint64_t>> Device::port_counters() const {
  return info_.backend == BURST_CTL_BACKEND_DPDK ? dpdk_counters() : xdp_counters();
}

int Device::resolve_dmac(const net::Gid& dgid, int timeout_ms, net::MacAddr* mac,
                         std::string* message) const {
  if (info_.backend == BURST_CTL_BACKEND_LOOPBACK) {
    *mac = info_.mac;
    return 0;
  }
  if (arp_) {
    if (!net::gid_is_ipv4_mapped(dgid)) {
      *message = "DPDK port " + info_.dpdk_port + " resolves IPv4 peers only (ARP); " +
                 net::format_gid(dgid) + " needs neighbour discovery";
      return EHOSTUNREACH;
    }
    datapath::ArpAgent::Mac m{};
    if (!arp_->resolve(net::gid_to_ipv4(dgid).s_addr, &m, timeout_ms, message)) return EHOSTUNREACH;
    std::copy(m.begin(), m.end(), mac->begin());
    return 0;
  }
  net::ResolveOptions opts;
  opts.timeout_ms = timeout_ms;
  net::ResolveInfo ri;
  net::Status s = net::resolve_neighbour(info_.ifindex, dgid, mac, opts, &ri);
  if (!s.ok()) {
    *message = s.message();
    return s.code() != 0 ? s.code() : EHOSTUNREACH;
  }
  return 0;
}

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
#ifdef BURSTD_WITH_DPDK
  if (dpdk_port_ && info_.netdev.empty())
    return dpdk_port_->link_up() ? BURST_CTL_PORT_ACTIVE : BURST_CTL_PORT_DOWN;
#endif
  net::NetdevInfo nd;
  if (!net::query_netdev(info_.ifindex, &nd).ok()) return BURST_CTL_PORT_DOWN;
  return (nd.flags & IFF_UP) && (nd.flags & IFF_RUNNING) ? BURST_CTL_PORT_ACTIVE
                                                         : BURST_CTL_PORT_DOWN;
}

}  // namespace burst::burstd
