// The port under burst-xfer's network mode, whichever backend carries it:
// AF_XDP on a netdev (net_xdp.cc) or a DPDK ethdev (net_dpdk.cc). Node (net.cc)
// sees only this interface; each worker gets a WorkerLoop, which owns that
// worker's queues as one QueueSet and the core::Worker over it. The one
// virtual call is per loop iteration (a burst of frames), not per packet.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/engine.h"
#include "core/worker.h"
#include "daemon/net/addr.h"
#include "datapath/queue_set.h"
#include "tools/burst-xfer/xfer.h"

namespace burst::tools {

class WorkerLoop {
 public:
  virtual ~WorkerLoop() = default;
  virtual void on_thread_start() {}  // the worker thread, before its first poll
  virtual bool poll_once(uint64_t now) = 0;
  virtual uint64_t handoff_out() const = 0;
};

class NetPort {
 public:
  virtual ~NetPort() = default;
  virtual uint32_t queue_count() const = 0;
  virtual net::MacAddr mac() const = 0;
  virtual uint32_t mtu() const = 0;  // L3
  // Worker w of `workers`: its queues and loop (queues w, w + workers, ...).
  virtual std::unique_ptr<WorkerLoop> make_loop(uint32_t w, uint32_t workers,
                                                core::Engine& engine, core::Handoff* handoff) = 0;
  // " backend=xdp xdp=native/copy queues=2 ..." for the summary line.
  virtual std::string describe() const = 0;
  // A port with no kernel netdev resolves IPv4 peers itself (ARP). False with
  // *error when it cannot (or has no resolver: the kernel's table applies).
  virtual bool resolve(const net::Gid& dgid, net::MacAddr* mac, std::string* error) {
    (void)dgid;
    (void)mac;
    *error = "this port has no resolver of its own";
    return false;
  }
};

// Both throw std::runtime_error with a message that names the fix. For DPDK,
// `netdev` is the kernel netdev behind the port ("" when there is none: then
// the port answers ARP for --address itself) and `mtu` its L3 MTU.
std::unique_ptr<NetPort> open_xdp_port(const Options& o, uint32_t netdev_rx_queues);
std::unique_ptr<NetPort> open_dpdk_port(const Options& o, const std::string& netdev,
                                        uint32_t mtu);

// A QueueSet of Q and the Worker over it.
template <class Q>
class QueueLoop final : public WorkerLoop {
 public:
  QueueLoop(std::vector<Q*> queues, core::Engine& engine, core::Handoff* handoff, uint32_t w)
      : set_(std::move(queues)), worker_(engine, set_, handoff, w) {}
  void on_thread_start() override {
    if constexpr (requires(Q& q) { q.on_thread_start(); })
      for (size_t i = 0; i < set_.size(); ++i) set_.queue(i).on_thread_start();
  }
  bool poll_once(uint64_t now) override { return worker_.poll_once(now); }
  uint64_t handoff_out() const override { return worker_.counters().handoff_out; }
  datapath::QueueSet<Q>& set() { return set_; }

 private:
  datapath::QueueSet<Q> set_;
  core::Worker<datapath::QueueSet<Q>> worker_;
};

}  // namespace burst::tools
