// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "port/port.h"

#include <arpa/inet.h>
#include <net/if.h>

#include <cerrno>
#include <cstdio>
#include <iterator>

#include "core/enum_names.h"
#include "net/neigh.h"
#include "port/backends.h"

namespace burst::port {
namespace {

constexpr uint32_t kHandoffSlots = 1024;

using OpenFn = std::unique_ptr<Port> (*)(const PortConfig&, std::string*);

struct Backend {
  Kind kind;
  OpenFn open;          // nullptr: not in this build
  const char* missing;  // then: why, and the option that builds it
};

// The one place that knows which backends this build has (port/CMakeLists.txt
// compiles a backend's file, and defines its BURST_PORT_WITH_*, only with its
// option).
constexpr Backend kBackends[] = {
    {Kind::kLoopback, open_loopback, nullptr},
#ifdef BURST_PORT_WITH_XDP
    {Kind::kXdp, open_xdp, nullptr},
#else
    {Kind::kXdp, nullptr,
     "this build has no AF_XDP backend (configure with -DBURST_WITH_XDP=ON and libxdp-dev, "
     "libbpf-dev)"},
#endif
#ifdef BURST_PORT_WITH_DPDK
    {Kind::kDpdk, open_dpdk, nullptr},
#else
    {Kind::kDpdk, nullptr,
     "this build has no DPDK backend (configure with -DBURST_WITH_DPDK=ON and dpdk-dev)"},
#endif
};

constexpr const char* kKindNames[] = {"loopback", "xdp", "dpdk"};
static_assert(std::size(kKindNames) == static_cast<size_t>(Kind::kDpdk) + 1);

const Backend& backend_of(Kind kind) {
  for (const Backend& b : kBackends) {
    if (b.kind == kind) return b;
  }
  return kBackends[0];
}

}  // namespace

const char* kind_name(Kind kind) { return enum_name(kKindNames, kind, "loopback"); }

std::string missing_backend(Kind kind) {
  const Backend& b = backend_of(kind);
  return b.open != nullptr ? std::string() : std::string(b.missing);
}

std::unique_ptr<Port> open_port(const PortConfig& config, std::string* error) {
  const Backend& b = backend_of(config.kind);
  if (b.open == nullptr) {
    *error = std::string("backend ") + kind_name(config.kind) + ": " + b.missing;
    return nullptr;
  }
  if (config.workers == 0) {
    *error = "a port needs at least one worker";
    return nullptr;
  }
  return b.open(config, error);
}

bool query_netdev(const std::string& name, net::NetdevInfo* out, std::string* error) {
  const net::Status s = net::query_netdev(name, out);
  if (!s.ok()) *error = s.message();
  return s.ok();
}

bool parse_ipv4_prefix(const std::string& text, net::IfAddress* out) {
  const size_t slash = text.find('/');
  in_addr ip{};
  unsigned len = 32;
  char tail = 0;
  if (inet_pton(AF_INET, text.substr(0, slash).c_str(), &ip) != 1) return false;
  if (slash != std::string::npos &&
      (std::sscanf(text.c_str() + slash + 1, "%u%c", &len, &tail) != 1 || len == 0 || len > 32))
    return false;
  *out = net::IfAddress{net::gid_from_ipv4(ip), static_cast<uint8_t>(len), 0, 0};
  return true;
}

Port::~Port() = default;

void Port::set_identity(const PortConfig& config, net::NetdevInfo identity, const net::MacAddr& mac,
                        uint32_t mtu) {
  info_.netdev = identity.name;
  info_.ifindex = identity.ifindex;
  info_.mac = mac;
  info_.mtu = mtu;
  identity.mac = mac;
  info_.gids = net::build_gid_table(identity, config.max_gids);
  handoff_ = std::make_unique<core::Handoff>(config.workers, kHandoffSlots, mtu + 64);
}

core::EngineConfig Port::engine_config(uint32_t w) const {
  core::EngineConfig ec;
  ec.port.mac = info_.mac;
  ec.port.gids.assign(info_.gids.begin(), info_.gids.end());
  ec.port.l2_mtu = info_.mtu + kEthHeader;
  ec.qpn_stride = static_cast<uint32_t>(info_.worker_queues.size());
  ec.qpn_offset = w;
  return ec;
}

bool Port::link_up() const {
  if (info_.ifindex == 0) return true;  // loopback without a netdev
  net::NetdevInfo nd;
  if (!net::query_netdev(info_.ifindex, &nd).ok()) return false;
  return (nd.flags & IFF_UP) && (nd.flags & IFF_RUNNING);
}

bool Port::resolve_own(const net::Gid& dgid, net::MacAddr* mac) const {
  if (net::gid_is_zero(dgid)) return false;
  for (const net::Gid& g : info_.gids) {
    if (g == dgid) {
      *mac = info_.mac;
      return true;
    }
  }
  return false;
}

int Port::resolve(const net::Gid& dgid, int timeout_ms, net::MacAddr* mac,
                  std::string* message) const {
  if (resolve_own(dgid, mac)) return 0;
  net::ResolveOptions opts;
  opts.timeout_ms = timeout_ms;
  net::ResolveInfo ri;
  const net::Status s = net::resolve_neighbour(info_.ifindex, dgid, mac, opts, &ri);
  if (!s.ok()) {
    *message = s.message();
    return s.code() != 0 ? s.code() : EHOSTUNREACH;
  }
  return 0;
}

int Port::resolve_unstarted(const net::Gid& dgid, int timeout_ms, const std::function<bool()>&,
                            net::MacAddr* mac, std::string* message) {
  return resolve(dgid, timeout_ms, mac, message);
}

}  // namespace burst::port
