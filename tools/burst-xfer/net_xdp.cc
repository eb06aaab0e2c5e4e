// burst-xfer's AF_XDP port: the roce_steer program on --netdev and one
// XdpQueue per RX queue (RSS spreads frames over all of them), worker w
// serving queues w, w + N, ...
#include <stdexcept>
#include <vector>

#include "datapath/xdp/xdp_port.h"
#include "datapath/xdp/xdp_queue.h"
#include "tools/burst-xfer/net_port.h"

namespace burst::tools {
namespace {

class XdpNetPort final : public NetPort {
 public:
  explicit XdpNetPort(const Options& o, uint32_t rx_queues) {
    datapath::XdpConfig cfg;
    cfg.netdev = o.netdev;
    cfg.num_frames = o.frames;
    cfg.xdp_mode = o.xdp_mode == "native"    ? datapath::XdpAttachMode::kNative
                   : o.xdp_mode == "generic" ? datapath::XdpAttachMode::kGeneric
                                             : datapath::XdpAttachMode::kAuto;
    const uint32_t nq = std::max<uint32_t>(rx_queues, 1);
    for (uint32_t q = 0; q < nq; ++q) cfg.queues.push_back(q);
    datapath::XdpError err;
    port_ = datapath::XdpPort::Open(cfg, &err);
    if (!port_) throw std::runtime_error(err.message);
    if (port_->queue_count() < o.workers)
      throw std::runtime_error("netdev " + o.netdev + " has " +
                               std::to_string(port_->queue_count()) + " queues; --workers " +
                               std::to_string(o.workers) + " needs at least one each");
    for (uint32_t q = 0; q < port_->queue_count(); ++q) {
      auto queue = datapath::XdpQueue::Open(*port_, q, &err);
      if (!queue) throw std::runtime_error(err.message);
      queues_.push_back(std::move(queue));
    }
  }
  ~XdpNetPort() override { queues_.clear(); }  // sockets before the program

  uint32_t queue_count() const override { return port_->queue_count(); }
  net::MacAddr mac() const override { return {}; }  // the netdev's: Node reads it
  uint32_t mtu() const override { return port_->netdev_mtu(); }

  std::unique_ptr<WorkerLoop> make_loop(uint32_t w, uint32_t workers, core::Engine& engine,
                                        core::Handoff* handoff) override {
    std::vector<datapath::XdpQueue*> mine;
    for (uint32_t q = w; q < queues_.size(); q += workers) mine.push_back(queues_[q].get());
    return std::make_unique<QueueLoop<datapath::XdpQueue>>(std::move(mine), engine, handoff, w);
  }

  std::string describe() const override {
    uint64_t sock_drops = 0, ring_full = 0;
    for (const auto& q : queues_) {
      xdp_statistics st{};
      if (q->KernelStats(&st)) {
        sock_drops += st.rx_dropped + st.rx_invalid_descs;
        ring_full += st.rx_ring_full + st.rx_fill_ring_empty_descs;
      }
    }
    return std::string(" backend=xdp xdp=") + port_->attach_mode_name() +
           (queues_.front()->zero_copy() ? "/zc" : "/copy") +
           " queues=" + std::to_string(port_->queue_count()) +
           " xsk_drops=" + std::to_string(sock_drops) + " xsk_ring_full=" + std::to_string(ring_full);
  }

 private:
  std::unique_ptr<datapath::XdpPort> port_;
  std::vector<std::unique_ptr<datapath::XdpQueue>> queues_;
};

}  // namespace

std::unique_ptr<NetPort> open_xdp_port(const Options& o, uint32_t netdev_rx_queues) {
  return std::make_unique<XdpNetPort>(o, netdev_rx_queues);
}

}  // namespace burst::tools
