/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The backend files' entry points, for open_port() (port.cc). A file exists in
// the build only with its backend's option (port/CMakeLists.txt).
#pragma once

#include <memory>
#include <string>

#include "port/port.h"

namespace burst::port {

std::unique_ptr<Port> open_loopback(const PortConfig& config,
                                    std::string* error);                        // port_loopback.cc
std::unique_ptr<Port> open_xdp(const PortConfig& config, std::string* error);   // port_xdp.cc
std::unique_ptr<Port> open_dpdk(const PortConfig& config, std::string* error);  // port_dpdk.cc

// A port of assembly P (a backend file's Port) opened with `config`, or
// nullptr with *error set: the body of each backend's open_*().
template <typename P>
std::unique_ptr<Port> open_assembly(const PortConfig& config, std::string* error) {
  auto port = std::make_unique<P>();
  if (!port->open(config, error)) return nullptr;
  return port;
}

// The netdev `name` in *out, or false with net's message (names the fix).
bool query_netdev(const std::string& name, net::NetdevInfo* out, std::string* error);

constexpr uint32_t kEthHeader = 14;

}  // namespace burst::port
