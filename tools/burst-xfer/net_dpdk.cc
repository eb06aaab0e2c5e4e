// burst-xfer's DPDK port: one ethdev (--dpdk-port devargs, or net_af_packet on
// --netdev), worker w on RX/TX queue pair w. Without a kernel netdev (memif,
// tap user side, PCI) the ArpAgent answers ARP for --address; Node exchanges
// GIDs and MACs over the side channel, so burst-xfer itself never resolves.
#include <arpa/inet.h>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include "datapath/arp_agent.h"
#include "datapath/dpdk/dpdk_port.h"
#include "datapath/dpdk/dpdk_queue.h"
#include "tools/burst-xfer/net_port.h"

namespace burst::tools {
namespace {

class DpdkNetPort final : public NetPort {
 public:
  DpdkNetPort(const Options& o, const std::string& netdev, uint32_t mtu) {
    datapath::DpdkConfig cfg;
    cfg.port = o.dpdk_port;
    if (cfg.port.empty() && !netdev.empty())
      cfg.port = datapath::AfPacketDevargs(netdev, o.workers, mtu);
    cfg.eal_args = datapath::SplitEalArgs(o.eal);
    cfg.queues = o.workers;
    cfg.mtu = mtu;
    datapath::DpdkError err;
    port_ = datapath::DpdkPort::Open(cfg, &err);
    if (!port_) throw std::runtime_error(err.message);
    if (!port_->notes().empty()) std::fprintf(stderr, "burst-xfer: %s\n", port_->notes().c_str());
    if (netdev.empty()) {
      // Nobody else answers ARP on this port: the peer (or anything else on
      // the wire) may still ask.
      std::vector<datapath::ArpAgent::Address> addrs;
      const size_t slash = o.address.find('/');
      in_addr ip{};
      if (inet_pton(AF_INET, o.address.substr(0, slash).c_str(), &ip) == 1)
        addrs.push_back({ip.s_addr, static_cast<uint8_t>(
                                        slash == std::string::npos
                                            ? 32
                                            : std::stoul(o.address.substr(slash + 1)))});
      datapath::DpdkPort* p = port_.get();
      arp_ = std::make_unique<datapath::ArpAgent>(
          port_->mac(), std::move(addrs),
          [p](const uint8_t* f, uint32_t len) { return p->control_tx(f, len); });
      port_->set_arp_agent(arp_.get());
    }
  }

  uint32_t queue_count() const override { return port_->queue_count(); }
  net::MacAddr mac() const override {
    net::MacAddr m{};
    std::copy(port_->mac().begin(), port_->mac().end(), m.begin());
    return m;
  }
  uint32_t mtu() const override { return port_->mtu(); }

  std::unique_ptr<WorkerLoop> make_loop(uint32_t w, uint32_t, core::Engine& engine,
                                        core::Handoff* handoff) override {
    return std::make_unique<QueueLoop<datapath::DpdkQueue>>(
        std::vector<datapath::DpdkQueue*>{&port_->queue(w)}, engine, handoff, w);
  }

  bool resolve(const net::Gid& dgid, net::MacAddr* mac, std::string* error) override {
    if (!arp_) return NetPort::resolve(dgid, mac, error);
    if (!net::gid_is_ipv4_mapped(dgid)) {
      *error = "the ARP agent resolves IPv4 peers only";
      return false;
    }
    // The workers do not run yet: poll the queues here so that replies (and
    // the peer's own requests) reach the agent. Other frames are dropped:
    // nothing else flows before the QPs connect.
    const uint32_t ip = net::gid_to_ipv4(dgid).s_addr;
    datapath::ArpAgent::Mac m{};
    const uint64_t deadline = now_ns() + 5'000'000'000ull;
    uint64_t next_request = 0;
    datapath::Frame f[datapath::DpdkQueue::kMaxBurst];
    while (!arp_->lookup(ip, &m)) {
      const uint64_t now = now_ns();
      if (now > deadline || interrupted()) {
        *error = "no ARP answer within 5 s (is the peer up and on this port's subnet?)";
        return false;
      }
      if (now >= next_request) {
        arp_->request(ip);
        next_request = now + 200'000'000;
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
    return true;
  }

  std::string describe() const override {
    const datapath::DpdkPortStats s = port_->stats();
    return " backend=dpdk pmd=" + port_->driver() + (port_->hugepages() ? "/huge" : "/nohuge") +
           " queues=" + std::to_string(port_->queue_count()) +
           (arp_ ? " arp_answered=" + std::to_string(arp_->counters().requests_answered) +
                       " arp_learned=" + std::to_string(arp_->counters().learned)
                 : std::string()) +
           " imissed=" + std::to_string(s.imissed) + " rx_nombuf=" + std::to_string(s.rx_nombuf);
  }

 private:
  std::unique_ptr<datapath::DpdkPort> port_;
  // Destroyed before the port, after the workers (the only callers of on_frame).
  std::unique_ptr<datapath::ArpAgent> arp_;
};

}  // namespace

std::unique_ptr<NetPort> open_dpdk_port(const Options& o, const std::string& netdev,
                                        uint32_t mtu) {
  return std::make_unique<DpdkNetPort>(o, netdev, mtu);
}

}  // namespace burst::tools
