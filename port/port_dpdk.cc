// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The DPDK port (BURST_WITH_DPDK): one ethdev (a vdev on a kernel netdev,
// memif, tap, or a PCI device), worker w on RX/TX queue pair w. With a kernel
// netdev behind the port (net_af_packet / net_af_xdp on it) addresses,
// neighbours and ARP stay the kernel's; without one an ArpAgent answers ARP
// for the configured addresses and resolves next hops.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "datapath/arp_agent.h"
#include "datapath/dpdk/dpdk_port.h"
#include "datapath/dpdk/dpdk_queue.h"
#include "datapath/queue_set.h"
#include "port/backend_loop.h"
#include "port/backends.h"

namespace burst::port {
namespace {

using Queues = datapath::QueueSet<datapath::DpdkQueue>;

uint64_t steady_ms() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

class DpdkPortAssembly final : public Port {
 public:
  ~DpdkPortAssembly() override {
    port_.reset();  // the port and its queues, then the ARP agent they fed
    arp_.reset();
  }

  bool open(const PortConfig& config, std::string* error) {
    info_.kind = Kind::kDpdk;
    net::NetdevInfo nd;
    datapath::DpdkConfig dc;
    dc.port = config.dpdk.devargs;
    if (!config.netdev.empty()) {
      if (!query_netdev(config.netdev, &nd, error)) return false;
      if (dc.port.empty()) dc.port = datapath::AfPacketDevargs(nd.name, config.workers, nd.mtu);
      dc.mtu = nd.mtu;
    } else {
      nd.mtu = config.mtu;
      nd.ipv4 = config.addresses;
      dc.mtu = config.mtu;
    }
    dc.eal_args = datapath::SplitEalArgs(config.dpdk.eal);
    dc.queues = config.workers;
    dc.hugepages = config.dpdk.hugepages;
    dc.flow_steering = config.dpdk.flow_steering;
    datapath::DpdkError err;
    port_ = datapath::DpdkPort::Open(dc, &err);
    if (!port_) {
      *error = err.message;
      return false;
    }
    info_.dpdk_port = port_->name();
    info_.dpdk_driver = port_->driver();
    info_.notes = port_->notes();
    net::MacAddr mac{};
    std::copy(port_->mac().begin(), port_->mac().end(), mac.begin());
    if (!config.netdev.empty() && mac != nd.mac)
      info_.warnings.push_back("DPDK port " + info_.dpdk_port + " has MAC " + net::format_mac(mac) +
                               ", netdev " + nd.name + " has " + net::format_mac(nd.mac) +
                               ": peers resolve the netdev's");
    set_identity(config, nd, mac, port_->mtu());
    info_.queues = port_->queue_count();
    for (uint32_t w = 0; w < config.workers; ++w) info_.worker_queues.push_back({w});
    if (config.netdev.empty()) {
      // Nobody else answers ARP on this port: the peer (or anything else on
      // the wire) may ask.
      std::vector<datapath::ArpAgent::Address> addrs;
      for (const net::IfAddress& a : nd.ipv4)
        addrs.push_back({net::gid_to_ipv4(a.addr).s_addr, a.prefix_len});
      datapath::DpdkPort* p = port_.get();
      arp_ = std::make_unique<datapath::ArpAgent>(
          port_->mac(), std::move(addrs),
          [p](const uint8_t* f, uint32_t len) { return p->control_tx(f, len); });
      port_->set_arp_agent(arp_.get());
      arp_->announce();  // queued on queue 0, sent by its first flush()
    }
    return true;
  }

  std::unique_ptr<WorkerLoop> make_loop(uint32_t w, core::Engine& engine) override {
    auto set = std::make_unique<Queues>(std::vector<datapath::DpdkQueue*>{&port_->queue(w)});
    return std::make_unique<BackendLoop<Queues>>(std::move(set), engine, handoff(), w, queue_stats,
                                                 true);
  }

  bool link_up() const override {
    return info_.netdev.empty() ? port_->link_up() : Port::link_up();
  }

  Counters counters() const override {
    const datapath::DpdkPortStats s = port_->stats();
    Counters out = {{"dpdk.ipackets", s.ipackets}, {"dpdk.opackets", s.opackets},
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

  int resolve(const net::Gid& dgid, int timeout_ms, net::MacAddr* mac,
              std::string* message) const override {
    if (!arp_ || resolve_own(dgid, mac)) return Port::resolve(dgid, timeout_ms, mac, message);
    if (int e = check_ipv4(dgid, message); e != 0) return e;
    datapath::ArpAgent::Mac m{};
    if (!arp_->resolve(net::gid_to_ipv4(dgid).s_addr, &m, timeout_ms, message)) return EHOSTUNREACH;
    std::copy(m.begin(), m.end(), mac->begin());
    return 0;
  }

  // No worker runs yet: poll the queues here so that replies (and the peer's
  // own requests) reach the agent, and send its requests every 200 ms.
  int resolve_unstarted(const net::Gid& dgid, int timeout_ms, const std::function<bool()>& cancel,
                        net::MacAddr* mac, std::string* message) override {
    if (!arp_ || resolve_own(dgid, mac)) return Port::resolve(dgid, timeout_ms, mac, message);
    if (int e = check_ipv4(dgid, message); e != 0) return e;
    const uint32_t ip = net::gid_to_ipv4(dgid).s_addr;
    datapath::ArpAgent::Mac m{};
    const uint64_t deadline = steady_ms() + static_cast<uint64_t>(std::max(timeout_ms, 0));
    uint64_t next_request = 0;
    datapath::Frame f[datapath::DpdkQueue::kMaxBurst];
    while (!arp_->lookup(ip, &m)) {
      const uint64_t now = steady_ms();
      if (now > deadline || (cancel && cancel())) {
        *message = "no ARP answer within " + std::to_string(timeout_ms) +
                   " ms (is the peer up and on this port's subnet?)";
        return EHOSTUNREACH;
      }
      if (now >= next_request) {
        arp_->request(ip);
        next_request = now + 200;
      }
      for (uint32_t q = 0; q < port_->queue_count(); ++q) {
        datapath::DpdkQueue& dq = port_->queue(q);
        const uint32_t n = dq.rx_burst(f, datapath::DpdkQueue::kMaxBurst);
        if (n) dq.rx_release(f, n);
        dq.flush();  // the agent's requests and replies
      }
      sched_yield();
    }
    std::copy(m.begin(), m.end(), mac->begin());
    return 0;
  }

  std::string summary() const override {
    const datapath::DpdkPortStats s = port_->stats();
    return " backend=dpdk pmd=" + port_->driver() + (port_->hugepages() ? "/huge" : "/nohuge") +
           " queues=" + std::to_string(port_->queue_count()) +
           (arp_ ? " arp_answered=" + std::to_string(arp_->counters().requests_answered) +
                       " arp_learned=" + std::to_string(arp_->counters().learned)
                 : std::string()) +
           " imissed=" + std::to_string(s.imissed) + " rx_nombuf=" + std::to_string(s.rx_nombuf);
  }

 private:
  int check_ipv4(const net::Gid& dgid, std::string* message) const {
    if (net::gid_is_ipv4_mapped(dgid)) return 0;
    *message = "DPDK port " + info_.dpdk_port + " resolves IPv4 peers only (ARP); " +
               net::format_gid(dgid) + " needs neighbour discovery";
    return EHOSTUNREACH;
  }

  static void queue_stats(Queues& qs, uint32_t, std::vector<uint32_t>* ids, Counters* out) {
    const datapath::DpdkQueueCounters& c = qs.queue(0).counters();
    ids->push_back(qs.queue(0).queue_id());
    *out = {{"dpdk.rx_frames", c.rx_frames},     {"dpdk.tx_frames", c.tx_frames},
            {"dpdk.rx_multiseg", c.rx_multiseg}, {"dpdk.rx_arp", c.rx_arp},
            {"dpdk.tx_full", c.tx_full},         {"dpdk.tx_alloc_fail", c.tx_alloc_fail},
            {"dpdk.rx_oversize", c.rx_oversize}, {"dpdk.tx_invalid", c.tx_invalid}};
  }

  std::unique_ptr<datapath::ArpAgent> arp_;  // outlives the port (its queues feed it)
  std::unique_ptr<datapath::DpdkPort> port_;
};

}  // namespace

std::unique_ptr<Port> open_dpdk(const PortConfig& config, std::string* error) {
  return open_assembly<DpdkPortAssembly>(config, error);
}

}  // namespace burst::port
