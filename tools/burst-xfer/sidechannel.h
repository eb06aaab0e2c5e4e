/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The TCP side channel of burst-xfer (perftest style): the server listens, the
// client connects; both exchange one-line text messages ("KEY k=v k=v\n").
// Every wait is bounded by a timeout; errors throw std::runtime_error with a
// message that names the peer and what was expected.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace burst::tools {

class SideChannel {
 public:
  // Server: waits up to timeout_ms for one client on `port` (all addresses).
  static SideChannel accept_one(uint16_t port, int timeout_ms);
  // Client: connects to host:port, retrying until timeout_ms (the server may
  // still be starting).
  static SideChannel connect_to(const std::string& host, uint16_t port, int timeout_ms);

  SideChannel(SideChannel&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  SideChannel& operator=(SideChannel&&) = delete;
  ~SideChannel();

  void send_line(const std::string& key, const std::map<std::string, std::string>& kv);
  // Receives the next line, which must start with `key`; returns its fields.
  std::map<std::string, std::string> recv_line(const std::string& key, int timeout_ms);
  // Local and peer IP address of the connection (numeric text).
  std::string local_address() const;
  std::string peer_address() const;

 private:
  explicit SideChannel(int fd) : fd_(fd) {}
  int fd_ = -1;
  std::string buffered_;
};

// Field helpers: throw when the field is missing or malformed.
uint64_t field_u64(const std::map<std::string, std::string>& kv, const std::string& k);
const std::string& field_str(const std::map<std::string, std::string>& kv, const std::string& k);

}  // namespace burst::tools
