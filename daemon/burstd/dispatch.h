/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The control protocol, server side: one Session per connection, one request in,
// one response out. Generic over the op table (daemon/ctl/ctl_ops.h, handlers in ctl_handlers.h): framing (ctl_codec),
// the op's row (size, descriptors, HELLO-first, version, revocation), its
// handler (queries: dispatch_query.cc; objects: resources_*.cc), the framed
// reply. Never trusts a request: a malformed one gets an error response; one
// that does not speak the protocol at all (bad magic) also closes the
// connection. Protocol errors are logged for the first few requests of a
// session only (a hostile client cannot flood the log).
//
// Threading: control thread only.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "abi/burst_ctl_proto.h"
#include "daemon/burstd/config.h"
#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/device.h"
#include "daemon/burstd/resources.h"
#include "daemon/ctl/ctl_codec.h"

namespace burst::burstd {

class CmChannels;

struct Session {
  uint32_t id = 0;
  pid_t pid = 0;  // SO_PEERCRED at accept
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // SO_PEERGROUPS at accept (supplementary groups)
  std::string name;           // from HELLO
  bool hello = false;
  uint16_t version = 0;  // negotiated
  uint32_t requests = 0;
  uint32_t errors_logged = 0;
  // Region descriptors (QP, CQ, SRQ rings) sent with the last response, no
  // longer held by their region: closed at this session's next request (the
  // client has that response, so the kernel holds its own reference) or when
  // the session closes.
  std::vector<int> sent_fds;
};

class Dispatcher {
 public:
  Dispatcher(const Config& config, Device& device, Resources& resources);

  // A new connection (credentials filled in) / a closed one (its objects released).
  void open_session(Session& s);
  void close_session(Session& s, const char* why);
  void close_sent_fds(Session& s);  // Session::sent_fds

  // Handles one received message; `out` gets the response. *close: the peer
  // does not speak this protocol, close after sending the response.
  void handle(Session& s, const uint8_t* msg, size_t len, std::vector<uint8_t>* out, bool* close) {
    std::vector<int> fds;
    handle(s, msg, len, nullptr, 0, out, &fds, close);
  }
  // The same with file descriptors: in_fds[0, n_in) are the ones the request
  // carried (n_in <= kMaxFdsIn); the dispatcher keeps or closes every one
  // (n_in > kMaxFdsIn: all closed, the request refused with EBADF). *out_fds
  // are sent with the response; they stay owned by burstd (the event loop does
  // not close them).
  static constexpr size_t kMaxFdsIn = 2;
  void handle(Session& s, const uint8_t* msg, size_t len, const int* in_fds, size_t n_in,
              std::vector<uint8_t>* out, std::vector<int>* out_fds, bool* close);

  uint32_t sessions() const { return sessions_; }
  // Periodic (client_check_ms): revokes clients that exec'd or changed
  // credentials (Resources::check_clients).
  void check_clients() { (void)res_.check_clients(); }

  // The connection manager (rdma_cm channels: resources_cm.cc), nullptr when
  // the device has none. A closed session's channel is closed there too.
  void set_cm(CmChannels* cm) { cm_ = cm; }
  CmChannels* cm() { return cm_; }

  // For the handlers (ctl_handlers.h).
  const Config& config() const { return config_; }
  Device& device() { return device_; }
  uint64_t uptime_ms() const;
  // Root, or a member of admin_group: sees every client's resources.
  bool privileged(const Session& s) const;
  // Logs a refused request (the first few of a session only).
  void protocol_error(Session& s, const char* what, uint16_t op, int err);

 private:
  // The request's row checked against the session: 0 or an errno value.
  int check_call(Session& s, const ctl::OpSpec& spec, const burst_ctl_hdr& h, size_t n_fds,
                 bool too_many_fds);

  const Config& config_;
  Device& device_;
  Resources& res_;
  CmChannels* cm_ = nullptr;
  uint64_t start_ns_;
  uint32_t sessions_ = 0;
  int64_t admin_gid_ = -1;  // admin_group resolved at construction (-1: none)
};

// The counters of one worker's snapshot, by name (engine, loop, backend).
// HELLO's device limits (abi/burst_limits.h, sized by the device's workers and
// burstd.conf): also what burstd registers with the kernel (kmod_device.h).
void fill_hello_limits(const Device& device, burst_ctl_hello_resp* r);

void append_counters(const WorkerStats& st, std::vector<std::pair<std::string, uint64_t>>* out);

}  // namespace burst::burstd
