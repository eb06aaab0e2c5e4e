// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The loopback port: one ReflectPort per worker (the port hears its own
// frames), no privilege, no netdev. With `netdev` it borrows that netdev's
// identity (MAC, MTU, addresses, so its GIDs) and reports its link state.
#include <arpa/inet.h>

#include "port/backend_loop.h"
#include "port/backends.h"
#include "port/reflect_port.h"

namespace burst::port {
namespace {

class LoopbackPort final : public Port {
 public:
  bool open(const PortConfig& config, std::string* error) {
    info_.kind = Kind::kLoopback;
    net::NetdevInfo nd;
    if (!config.netdev.empty()) {
      if (!query_netdev(config.netdev, &nd, error)) return false;
    } else {
      nd.mac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};  // locally administered
      nd.mtu = config.mtu;
      in_addr lo{htonl(INADDR_LOOPBACK)};
      nd.ipv4.push_back(net::IfAddress{net::gid_from_ipv4(lo), 8, 254, 0});  // host scope
    }
    set_identity(config, nd, nd.mac, nd.mtu);
    info_.queues = config.workers;
    for (uint32_t w = 0; w < config.workers; ++w) info_.worker_queues.push_back({w});
    return true;
  }

  std::unique_ptr<WorkerLoop> make_loop(uint32_t w, core::Engine& engine) override {
    auto stats = [](ReflectPort& p, uint32_t worker, std::vector<uint32_t>* ids, Counters* out) {
      *ids = {worker};
      *out = {{"loopback.reflected", p.reflected()},
              {"loopback.reflect_drops", p.reflect_drops()},
              {"loopback.tx_full", p.counters().tx_full}};
    };
    return std::make_unique<BackendLoop<ReflectPort>>(
        std::make_unique<ReflectPort>(info_.mtu + kEthHeader), engine, handoff(), w, stats,
        false);  // the ReflectPort is the wire: it hears every frame, faults included
  }

  int resolve(const net::Gid&, int, net::MacAddr* mac, std::string*) const override {
    *mac = info_.mac;  // every path leads back to this port
    return 0;
  }

  std::string summary() const override {
    return " backend=loopback queues=" + std::to_string(info_.queues);
  }
};

}  // namespace

std::unique_ptr<Port> open_loopback(const PortConfig& config, std::string* error) {
  return open_assembly<LoopbackPort>(config, error);
}

}  // namespace burst::port
