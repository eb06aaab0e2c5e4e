// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The AF_XDP port (BURST_WITH_XDP): the roce_steer program on the netdev and
// one XdpQueue per RX queue (RSS spreads received frames over all of them, so
// every queue gets a socket), worker w serving queues w, w+N, ... as one
// QueueSet. The kernel stays the netdev's owner: addresses, neighbours and ARP
// are its.
#include <algorithm>
#include <string>
#include <vector>

#include "datapath/queue_set.h"
#include "datapath/xdp/xdp_port.h"
#include "datapath/xdp/xdp_queue.h"
#include "port/backend_loop.h"
#include "port/backends.h"

namespace burst::port {
namespace {

using Queues = datapath::QueueSet<datapath::XdpQueue>;

class XdpPortAssembly final : public Port {
 public:
  ~XdpPortAssembly() override {
    queues_.clear();  // the AF_XDP sockets before the program (detached if still ours)
    port_.reset();
  }

  bool open(const PortConfig& config, std::string* error) {
    info_.kind = Kind::kXdp;
    if (config.netdev.empty()) {
      *error = "backend xdp needs a netdev (the interface that carries RoCE)";
      return false;
    }
    net::NetdevInfo nd;
    if (!query_netdev(config.netdev, &nd, error)) return false;
    set_identity(config, nd, nd.mac, nd.mtu);

    datapath::XdpConfig xc;
    xc.netdev = config.netdev;
    xc.netdev_info = {static_cast<int>(nd.ifindex), nd.mtu, nd.rx_queues, nd.max_queues};
    xc.num_frames = config.xdp.frames;
    xc.xdp_mode = config.xdp.mode;
    xc.zero_copy = config.xdp.zero_copy;
    const uint32_t nq = std::max<uint32_t>(nd.rx_queues, 1);
    for (uint32_t q = 0; q < nq; ++q) xc.queues.push_back(q);
    datapath::XdpError err;
    port_ = datapath::XdpPort::Open(xc, &err);
    if (!port_) {
      *error = err.message;
      return false;
    }
    if (!port_->notes().empty()) info_.notes = config.netdev + ": " + port_->notes();
    if (port_->queue_count() < config.workers) {
      *error = "netdev " + config.netdev + " has " + std::to_string(port_->queue_count()) +
               " queues; " + std::to_string(config.workers) +
               " workers need at least one each (lower the workers, or raise the queues with "
               "`ethtool -L " +
               config.netdev + " combined N`)";
      return false;
    }
    info_.xdp_native = port_->native();
    info_.xdp_prog_id = port_->prog_id();
    info_.xdp_dispatcher = port_->dispatcher();
    info_.queues = port_->queue_count();
    info_.worker_queues.assign(config.workers, {});
    for (uint32_t q = 0; q < port_->queue_count(); ++q) {
      auto queue = datapath::XdpQueue::Open(*port_, q, &err);
      if (!queue) {
        *error = err.message;
        return false;
      }
      info_.worker_queues[q % config.workers].push_back(q);
      queues_.push_back(std::move(queue));
    }
    info_.zero_copy = queues_.front()->zero_copy();
    return true;
  }

  std::unique_ptr<WorkerLoop> make_loop(uint32_t w, core::Engine& engine) override {
    std::vector<datapath::XdpQueue*> mine;
    for (uint32_t q : info_.worker_queues[w]) mine.push_back(queues_[q].get());
    return std::make_unique<BackendLoop<Queues>>(std::make_unique<Queues>(std::move(mine)), engine,
                                                 handoff(), w, queue_stats, true);
  }

  Counters counters() const override {
    Counters out;
    datapath::XdpSteerCounters c{};
    if (port_->ReadCounters(&c)) {
      for (uint32_t i = 0; i < c.size(); ++i)
        out.emplace_back(std::string("xdp.") + datapath::SteerCounterName(i), c[i]);
    }
    return out;
  }

  std::string summary() const override {
    uint64_t sock_drops = 0, ring_full = 0;
    for (const auto& q : queues_) kernel_drops(*q, &sock_drops, &ring_full);
    return std::string(" backend=xdp xdp=") + port_->attach_mode_name() +
           (info_.zero_copy ? "/zc" : "/copy") + " queues=" + std::to_string(info_.queues) +
           " xsk_drops=" + std::to_string(sock_drops) +
           " xsk_ring_full=" + std::to_string(ring_full);
  }

 private:
  static void kernel_drops(const datapath::XdpQueue& q, uint64_t* sock_drops, uint64_t* ring_full) {
    xdp_statistics st{};
    if (q.KernelStats(&st)) {
      *sock_drops += st.rx_dropped + st.rx_invalid_descs;
      *ring_full += st.rx_ring_full + st.rx_fill_ring_empty_descs;
    }
  }

  static void queue_stats(Queues& qs, uint32_t, std::vector<uint32_t>* ids, Counters* out) {
    uint64_t sock_drops = 0, ring_full = 0, rx = 0, tx = 0, kicks = 0, multibuf = 0;
    for (size_t i = 0; i < qs.size(); ++i) {
      datapath::XdpQueue& q = qs.queue(i);
      ids->push_back(q.queue_id());
      const datapath::XdpQueueCounters& c = q.counters();
      rx += c.rx_frames;
      tx += c.tx_frames;
      kicks += c.tx_kicks;
      multibuf += c.rx_multibuf;
      kernel_drops(q, &sock_drops, &ring_full);
    }
    *out = {{"xsk.rx_frames", rx},         {"xsk.tx_frames", tx},     {"xsk.tx_kicks", kicks},
            {"xsk.rx_multibuf", multibuf}, {"xsk.drops", sock_drops}, {"xsk.ring_full", ring_full}};
  }

  std::unique_ptr<datapath::XdpPort> port_;
  std::vector<std::unique_ptr<datapath::XdpQueue>> queues_;
};

}  // namespace

std::unique_ptr<Port> open_xdp(const PortConfig& config, std::string* error) {
  return open_assembly<XdpPortAssembly>(config, error);
}

}  // namespace burst::port
