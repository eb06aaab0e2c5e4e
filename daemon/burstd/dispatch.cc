// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/dispatch.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "abi/burst_device.h"
#include "abi/burst_limits.h"
#include "daemon/burstd/access.h"
#include "daemon/burstd/cm_service.h"
#include "daemon/burstd/log.h"
#include "daemon/ctl/ctl_codec.h"

namespace burst::burstd {
namespace {

constexpr uint32_t kLoggedErrorsPerSession = 5;

// The device limits (abi/burst_limits.h) as HELLO reports them: per device,
// or per worker (times the workers).
struct Limit {
  uint32_t burst_ctl_hello_resp::*field;
  uint32_t value;
  bool per_worker;
};
constexpr Limit kLimits[] = {
    {&burst_ctl_hello_resp::max_qp, BURST_MAX_QP_PER_WORKER, true},
    {&burst_ctl_hello_resp::max_qp_wr, BURST_MAX_QP_WR, false},
    {&burst_ctl_hello_resp::max_sge, BURST_MAX_SGE, false},
    {&burst_ctl_hello_resp::max_cq, BURST_MAX_CQ_PER_WORKER, false},
    {&burst_ctl_hello_resp::max_cqe, BURST_MAX_CQE, false},
    {&burst_ctl_hello_resp::max_pd, BURST_MAX_PD, false},
    {&burst_ctl_hello_resp::max_inline_data, BURST_MAX_INLINE_DATA, false},
    {&burst_ctl_hello_resp::max_qp_rd_atom, BURST_MAX_RD_ATOMIC, false},
    {&burst_ctl_hello_resp::max_mr, BURST_MAX_MR, false},
    {&burst_ctl_hello_resp::max_ah, BURST_MAX_AH, false},
    {&burst_ctl_hello_resp::max_srq, BURST_MAX_SRQ_PER_WORKER, true},
    {&burst_ctl_hello_resp::max_srq_wr, BURST_MAX_SRQ_WR, false},
    {&burst_ctl_hello_resp::max_srq_sge, BURST_MAX_SRQ_SGE, false},
    {&burst_ctl_hello_resp::max_msg_sz, BURST_MAX_MSG_SIZE, false},
    {&burst_ctl_hello_resp::max_mcast_grp, BURST_MAX_MCAST_GRP, false},
    {&burst_ctl_hello_resp::max_mcast_qp_attach, BURST_MAX_MCAST_QP_ATTACH, false},
    {&burst_ctl_hello_resp::max_total_mcast_qp_attach, BURST_MAX_TOTAL_MCAST_QP_ATTACH, false},
};

void fill_limits(uint32_t workers, burst_ctl_hello_resp* r) {
  for (const Limit& l : kLimits) r->*l.field = l.per_worker ? l.value * workers : l.value;
  r->max_res_rd_atom = r->max_qp * BURST_MAX_RD_ATOMIC;
  r->max_mr_size = BURST_MAX_MR_SIZE;
}

// The error response to `req`: the header alone.
void error_response(std::vector<uint8_t>* out, const burst_ctl_hdr& req, int err) {
  out->assign(sizeof(burst_ctl_hdr), 0);
  ctl::init_response(reinterpret_cast<burst_ctl_hdr*>(out->data()), req, sizeof(burst_ctl_hdr),
                     err);
}

// Every descriptor a request carried is closed at the end unless its handler
// took it (Call::take_fd).
struct FdGuard {
  int fd[Dispatcher::kMaxFdsIn] = {-1, -1};
  size_t n = 0;           // up to the last one received
  bool too_many = false;  // more than kMaxFdsIn, or a truncated set (the event loop passes -1s)
  FdGuard(const int* in_fds, size_t n_in) {
    for (size_t i = 0; i < n_in; ++i) {
      if (i < Dispatcher::kMaxFdsIn) {
        fd[i] = in_fds[i];
        if (in_fds[i] >= 0) n = i + 1;
      } else {
        if (in_fds[i] >= 0) ::close(in_fds[i]);
        too_many = true;
      }
    }
  }
  ~FdGuard() {
    for (int f : fd) {
      if (f >= 0) ::close(f);
    }
  }
};

std::string printable(std::string s) {
  for (char& ch : s) {
    if (!std::isprint(static_cast<unsigned char>(ch))) ch = '?';
  }
  return s;
}

}  // namespace

Dispatcher::Dispatcher(const Config& config, Device& device, Resources& resources)
    : config_(config), device_(device), res_(resources), start_ns_(monotonic_ns()) {
  if (!config.admin_group.empty()) {
    gid_t g = 0;
    if (resolve_group(config.admin_group, &g)) {
      admin_gid_ = g;
    } else {
      BURSTD_WARN("admin_group '%s' is not a group: only root sees other users' resources",
                  config.admin_group.c_str());
    }
  }
}

bool Dispatcher::privileged(const Session& s) const {
  if (s.uid == 0) return true;
  if (admin_gid_ < 0) return false;
  const auto g = static_cast<gid_t>(admin_gid_);
  return s.gid == g || std::find(s.groups.begin(), s.groups.end(), g) != s.groups.end();
}

uint64_t Dispatcher::uptime_ms() const { return (monotonic_ns() - start_ns_) / 1'000'000u; }

void Dispatcher::protocol_error(Session& s, const char* what, uint16_t op, int err) {
  if (s.errors_logged >= kLoggedErrorsPerSession) return;
  ++s.errors_logged;
  BURSTD_WARN("client %u (pid %d): %s (op %u %s): %s%s", s.id, static_cast<int>(s.pid), what, op,
              ctl::op_name(op), std::strerror(err),
              s.errors_logged == kLoggedErrorsPerSession
                  ? "; further errors of this client not logged"
                  : "");
}

void Dispatcher::open_session(Session& s) {
  ++sessions_;
  res_.add_client(s.id, s.pid, s.uid, s.gid);
  BURSTD_DEBUG("client %u connected: pid %d uid %u gid %u", s.id, static_cast<int>(s.pid),
               static_cast<unsigned>(s.uid), static_cast<unsigned>(s.gid));
}

void Dispatcher::close_sent_fds(Session& s) {
  for (int fd : s.sent_fds) ::close(fd);
  s.sent_fds.clear();
}

void Dispatcher::close_session(Session& s, const char* why) {
  close_sent_fds(s);
  if (cm_ != nullptr) cm_->close_channel(s.id);  // its rdma_cm ids, before its QPs
  const Resources::Released r = res_.release_client(s.id);
  --sessions_;
  if (r.qps + r.cqs + r.pds == 0 && r.leaked == 0) {
    // Without HELLO (a liveness probe) only at debug level.
    BURSTD_LOG(s.hello ? LogLevel::kInfo : LogLevel::kDebug, "client %u (pid %d%s%s) %s", s.id,
               static_cast<int>(s.pid), s.name.empty() ? "" : ", ", s.name.c_str(), why);
    return;
  }
  BURSTD_INFO(
      "client %u (pid %d%s%s) %s: released %u QPs (%llu completions flushed), %u CQs, %u PDs", s.id,
      static_cast<int>(s.pid), s.name.empty() ? "" : ", ", s.name.c_str(), why, r.qps,
      static_cast<unsigned long long>(r.flushed), r.cqs, r.pds);
  if (r.leaked != 0) {
    BURSTD_ERROR("client %u: %u objects could not be released (worker did not answer)", s.id,
                 r.leaked);
  }
}

int Dispatcher::check_call(Session& s, const ctl::OpSpec& spec, const burst_ctl_hdr& h,
                           size_t n_fds, bool too_many_fds) {
  struct Refusal {
    bool when;
    const char* what;  // logged (nullptr: not a protocol error)
    int err;
  };
  const bool session = spec.needs != ctl::Needs::kNothing;
  const Refusal checks[] = {
      {session && !s.hello, "request before HELLO", EPROTO},
      {session && h.version != s.version, "request with another protocol version than negotiated",
       EPROTONOSUPPORT},
      {too_many_fds || n_fds > spec.max_fds_in, "unexpected file descriptors with the request",
       EBADF},
      {spec.needs == ctl::Needs::kLive && res_.revoked(s.id), nullptr, EACCES},
  };
  for (const Refusal& r : checks) {
    if (!r.when) continue;
    if (r.what != nullptr) protocol_error(s, r.what, h.op, r.err);
    return r.err;
  }
  return 0;
}

void Dispatcher::handle(Session& s, const uint8_t* msg, size_t len, const int* in_fds, size_t n_in,
                        std::vector<uint8_t>* out, std::vector<int>* out_fds, bool* close) {
  *close = false;
  out->clear();
  out_fds->clear();
  FdGuard guard(in_fds, n_in);
  close_sent_fds(s);
  ++s.requests;
  burst_ctl_hdr h{};
  if (len >= sizeof(h)) std::memcpy(&h, msg, sizeof(h));
  const ctl::RequestCheck rc = ctl::check_request(msg, len);
  if (rc.error != 0) {
    const char* what = rc.close ? "not a burst control message, closing" : "malformed request";
    protocol_error(s, what, h.op, rc.error);
    error_response(out, h, rc.error);
    *close = rc.close;
    return;
  }
  const CtlOp row = find_ctl_op(h.op);  // known: check_request passed
  if (int e = check_call(s, *row.spec, h, guard.n, guard.too_many); e != 0) {
    error_response(out, h, e);
    return;
  }
  Call c{*this, res_, s, *row.spec, h, msg, guard.fd, out, out_fds, {}};
  const int err = row.handler(c);
  if (err != 0) {
    error_response(out, h, err);
    out_fds->clear();  // burstd's own descriptors, not sent
    BURSTD_DEBUG("client %u: %s %s: %s", s.id, row.spec->name, c.what.c_str(), std::strerror(err));
    return;
  }
  if (out->empty()) c.start_response(row.spec->response_size);
  BURSTD_DEBUG("client %u: %s %s", s.id, row.spec->name, c.what.c_str());
}

// HELLO: version negotiation and the device's facts. A refusal is a whole
// HELLO response with its status set (the client learns the versions).
int op_hello(Call& c) {
  const auto req = c.request<burst_ctl_hello_req>();
  Session& s = c.s;
  auto* r = c.response<burst_ctl_hello_resp>();
  r->server_version_min = BURST_CTL_VERSION_MIN;
  r->server_version_max = BURST_CTL_VERSION;
  const uint16_t v = ctl::negotiate_version(req.version_min, req.version_max);
  const int err = v == 0 ? EPROTONOSUPPORT : req.flags != 0 ? EINVAL : 0;
  if (err != 0) {
    c.d.protocol_error(s, "HELLO refused", c.h.op, err);
    r->hdr.status = err;
    c.what = "refused";
    return 0;
  }
  s.hello = true;
  s.version = v;
  s.name = printable(ctl::get_str(req.client_name));
  r->hdr.version = v;
  r->version = v;
  Device& device = c.d.device();
  const DeviceInfo& info = device.info();
  r->backend = info.backend;
  r->client_id = s.id;
  r->workers = device.workers();
  ctl::set_str(r->ibdev, info.ibdev);
  ctl::set_str(r->netdev, info.netdev);
  r->ifindex = info.ifindex;
  r->mtu = info.mtu;
  std::memcpy(r->mac, info.mac.data(), 6);
  r->active_mtu = burst_ib_mtu_for_netdev(info.mtu);
  r->port_state = device.port_state();
  r->xdp_mode = info.xdp_mode;
  r->memory_mode = info.memory_mode;
  const size_t ngids = std::min<size_t>(info.gids.size(), BURST_CTL_MAX_GIDS);
  r->gid_count = static_cast<uint16_t>(ngids);
  for (size_t i = 0; i < ngids; ++i) std::memcpy(r->gids[i], info.gids[i].data(), 16);
  fill_hello_limits(device, r);
  BURSTD_INFO("client %u: '%s' pid %d uid %u gid %u, protocol version %u", s.id, s.name.c_str(),
              static_cast<int>(s.pid), static_cast<unsigned>(s.uid), static_cast<unsigned>(s.gid),
              v);
  return 0;
}

void fill_hello_limits(const Device& device, burst_ctl_hello_resp* r) {
  fill_limits(device.workers(), r);
  r->max_qp = device.qps_per_worker() * device.workers();  // burstd.conf qps_per_worker
  r->max_res_rd_atom = r->max_qp * BURST_MAX_RD_ATOMIC;
  r->max_cq = device.cqs_per_worker();
}

}  // namespace burst::burstd
