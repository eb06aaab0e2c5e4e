/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// A blocking client of burstd's control socket: connect, HELLO, one request at a
// time. Used by burstctl and the tests. (The verbs provider, which must not
// depend on libstdc++, speaks the same protocol with provider/ctl_conn.cc.)
//
// Threading: one thread at a time per Client.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "abi/burst_ctl_proto.h"

namespace burst::ctl {

// $BURST_SOCKET when set and not empty, else BURST_CTL_DEFAULT_SOCKET.
std::string default_socket_path();

class Client {
 public:
  static constexpr int kDefaultTimeoutMs = 10'000;

  // Connects to the control socket at `path` ("" = default_socket_path()).
  // nullptr with *error set ("cannot connect to burstd at PATH: ...").
  static std::unique_ptr<Client> Connect(const std::string& path, std::string* error);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // HELLO with the versions this header describes; fills *resp (also on error).
  int hello(const std::string& client_name, burst_ctl_hello_resp* resp);

  // Sends `req` (req_len bytes, its header filled in here: magic, negotiated
  // version, op, length, a new request id) and waits for the response, which is
  // checked (ctl_codec check_response) and copied to resp (at most resp_cap
  // bytes; *resp_len gets its length). Returns 0, the errno value burstd
  // answered, or a transport errno (ECONNRESET, ETIMEDOUT, EPROTO, EBADMSG,
  // EMSGSIZE for a response larger than resp_cap) with broken() set: the
  // connection is then unusable. error() describes the last failure.
  int call(uint16_t op, void* req, size_t req_len, void* resp, size_t resp_cap,
           size_t* resp_len = nullptr, int timeout_ms = kDefaultTimeoutMs);

  // Sends raw bytes as one message and receives one message (no checks): for
  // tests of the daemon's validation. Returns 0 or a transport errno.
  int raw(const void* msg, size_t len, void* resp, size_t resp_cap, size_t* resp_len,
          int timeout_ms = kDefaultTimeoutMs);

  int fd() const { return fd_; }
  uint16_t version() const { return version_; }
  bool broken() const { return broken_; }
  const std::string& error() const { return error_; }
  const std::string& path() const { return path_; }

 private:
  Client(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fail(int err, const std::string& what);
  int receive(void* buf, size_t cap, size_t* len, int timeout_ms);

  int fd_ = -1;
  std::string path_;
  uint16_t version_ = BURST_CTL_VERSION;
  uint64_t next_id_ = 1;
  bool broken_ = false;
  std::string error_;
};

}  // namespace burst::ctl
