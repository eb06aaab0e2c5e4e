// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/dispatch.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/qp.h"
#include "daemon/burstd/log.h"
#include "daemon/ctl/ctl_codec.h"
#include "daemon/burstd/access.h"
#include "abi/burst_device.h"
#include "abi/burst_limits.h"

namespace burst::burstd {
namespace {

constexpr uint32_t kLoggedErrorsPerSession = 5;

// The device limits (abi/burst_limits.h) as HELLO reports them.
void fill_limits(uint32_t workers, burst_ctl_hello_resp* r) {
  r->max_qp = BURST_MAX_QP_PER_WORKER * workers;
  r->max_qp_wr = BURST_MAX_QP_WR;
  r->max_sge = BURST_MAX_SGE;
  r->max_cq = BURST_MAX_CQ_PER_WORKER;
  r->max_cqe = BURST_MAX_CQE;
  r->max_pd = BURST_MAX_PD;
  r->max_inline_data = BURST_MAX_INLINE_DATA;
  r->max_qp_rd_atom = BURST_MAX_RD_ATOMIC;
  r->max_mr = BURST_MAX_MR;
  r->max_ah = BURST_MAX_AH;
  r->max_srq = BURST_MAX_SRQ_PER_WORKER * workers;
  r->max_srq_wr = BURST_MAX_SRQ_WR;
  r->max_srq_sge = BURST_MAX_SRQ_SGE;
  r->max_res_rd_atom = r->max_qp * BURST_MAX_RD_ATOMIC;
  r->max_msg_sz = BURST_MAX_MSG_SIZE;
  r->max_mr_size = BURST_MAX_MR_SIZE;
}

std::string printable(std::string s) {
  for (char& ch : s) {
    if (!std::isprint(static_cast<unsigned char>(ch))) ch = '?';
  }
  return s;
}

template <class T>
T read_as(const uint8_t* msg) {
  T t;
  std::memcpy(&t, msg, sizeof(T));
  return t;
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

void Dispatcher::error_response(std::vector<uint8_t>* out, const burst_ctl_hdr& req, int err) {
  out->assign(sizeof(burst_ctl_hdr), 0);
  auto* h = reinterpret_cast<burst_ctl_hdr*>(out->data());
  ctl::init_response(h, req, sizeof(burst_ctl_hdr), err);
}

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

void Dispatcher::close_session(Session& s, const char* why) {
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

namespace {
// How many descriptors an op's request may carry (CREATE_CQ only with
// BURST_CTL_CQ_F_CHANNEL, REG_MR only with BURST_CTL_MR_F_FILE, ATTACH_MEMORY
// one or two); the handlers check the exact combination.
size_t max_fds_in(uint16_t op) {
  switch (op) {
    case BURST_CTL_OP_CREATE_CQ:
    case BURST_CTL_OP_SET_ASYNC_FD:
    case BURST_CTL_OP_REG_MR:
      return 1;
    case BURST_CTL_OP_ATTACH_MEMORY:
      return 2;
    default:
      return 0;
  }
}
// What a revoked client may still do: tear down and look.
bool allowed_when_revoked(uint16_t op) {
  switch (op) {
    case BURST_CTL_OP_DEALLOC_PD:
    case BURST_CTL_OP_DESTROY_CQ:
    case BURST_CTL_OP_DESTROY_QP:
    case BURST_CTL_OP_DEREG_MR:
    case BURST_CTL_OP_DESTROY_AH:
    case BURST_CTL_OP_DESTROY_SRQ:
    case BURST_CTL_OP_QUERY_QP:
    case BURST_CTL_OP_QUERY_SRQ:
    case BURST_CTL_OP_QUERY_STATUS:
    case BURST_CTL_OP_QUERY_WORKERS:
    case BURST_CTL_OP_QUERY_COUNTERS:
    case BURST_CTL_OP_QUERY_QPS:
      return true;
    default:
      return false;
  }
}
}  // namespace

void Dispatcher::handle(Session& s, const uint8_t* msg, size_t len, const int* in_fds, size_t n_in,
                        std::vector<uint8_t>* out, std::vector<int>* out_fds, bool* close) {
  *close = false;
  out_fds->clear();
  // Every descriptor the request carried is closed at the end unless a handler
  // took it (set to -1).
  struct FdGuard {
    int fd[kMaxFdsIn] = {-1, -1};
    size_t n = 0;
    bool too_many = false;
    ~FdGuard() {
      for (int f : fd) {
        if (f >= 0) ::close(f);
      }
    }
  } guard;
  for (size_t i = 0; i < n_in; ++i) {
    if (i < kMaxFdsIn) {
      guard.fd[i] = in_fds[i];
      if (in_fds[i] >= 0) guard.n = i + 1;
    } else {
      if (in_fds[i] >= 0) ::close(in_fds[i]);
      guard.too_many = true;  // also a truncated set (the event loop passes -1s)
    }
  }
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
  if (h.op == BURST_CTL_OP_HELLO) {
    if (guard.n != 0 || guard.too_many) {
      protocol_error(s, "unexpected file descriptors with the request", h.op, EBADF);
      error_response(out, h, EBADF);
      return;
    }
    hello(s, h, msg, out);
    return;
  }
  if (!s.hello) {
    protocol_error(s, "request before HELLO", h.op, EPROTO);
    error_response(out, h, EPROTO);
    return;
  }
  if (h.version != s.version) {
    protocol_error(s, "request with another protocol version than negotiated", h.op,
                   EPROTONOSUPPORT);
    error_response(out, h, EPROTONOSUPPORT);
    return;
  }
  if (guard.too_many || guard.n > max_fds_in(h.op)) {
    protocol_error(s, "unexpected file descriptors with the request", h.op, EBADF);
    error_response(out, h, EBADF);
    return;
  }
  if (!allowed_when_revoked(h.op) && res_.revoked(s.id)) {
    error_response(out, h, EACCES);
    return;
  }
  switch (h.op) {
    case BURST_CTL_OP_QUERY_STATUS:
      query_status(h, out);
      break;
    case BURST_CTL_OP_QUERY_WORKERS:
      query_workers(h, out);
      break;
    case BURST_CTL_OP_QUERY_COUNTERS:
      query_counters(h, msg, out);
      break;
    case BURST_CTL_OP_QUERY_QPS:
      query_qps(s, h, msg, out);
      break;
    default:
      resource_op(s, h, msg, guard.fd, out, out_fds);
      break;
  }
}

void Dispatcher::hello(Session& s, const burst_ctl_hdr& h, const uint8_t* msg,
                       std::vector<uint8_t>* out) {
  const auto req = read_as<burst_ctl_hello_req>(msg);
  auto* r = start_response<burst_ctl_hello_resp>(out, h, sizeof(burst_ctl_hello_resp));
  r->server_version_min = BURST_CTL_VERSION_MIN;
  r->server_version_max = BURST_CTL_VERSION;
  const uint16_t v = ctl::negotiate_version(req.version_min, req.version_max);
  int err = 0;
  if (v == 0) {
    err = EPROTONOSUPPORT;
  } else if (req.flags != 0) {
    err = EINVAL;
  }
  if (err != 0) {
    protocol_error(s, "HELLO refused", h.op, err);
    r->hdr.status = err;
    return;
  }
  s.hello = true;
  s.version = v;
  s.name = printable(ctl::get_str(req.client_name));
  r->hdr.version = v;
  r->version = v;
  const DeviceInfo& info = device_.info();
  r->backend = info.backend;
  r->client_id = s.id;
  r->workers = device_.workers();
  ctl::set_str(r->ibdev, info.ibdev);
  ctl::set_str(r->netdev, info.netdev);
  r->ifindex = info.ifindex;
  r->mtu = info.mtu;
  std::memcpy(r->mac, info.mac.data(), 6);
  r->active_mtu = burst_ib_mtu_for_netdev(info.mtu);
  r->port_state = device_.port_state();
  r->xdp_mode = info.xdp_mode;
  r->memory_mode = info.memory_mode;
  const size_t ngids = std::min<size_t>(info.gids.size(), BURST_CTL_MAX_GIDS);
  r->gid_count = static_cast<uint16_t>(ngids);
  for (size_t i = 0; i < ngids; ++i) std::memcpy(r->gids[i], info.gids[i].data(), 16);
  fill_limits(device_.workers(), r);
  BURSTD_INFO("client %u: '%s' pid %d uid %u gid %u, protocol version %u", s.id, s.name.c_str(),
              static_cast<int>(s.pid), static_cast<unsigned>(s.uid), static_cast<unsigned>(s.gid),
              v);
}

void Dispatcher::resource_op(Session& s, const burst_ctl_hdr& h, const uint8_t* msg, int* in_fds,
                             std::vector<uint8_t>* out, std::vector<int>* out_fds) {
  // Takes the request's descriptor i (the callee adopts it, also on failure).
  auto take_fd = [in_fds](int i = 0) {
    const int fd = in_fds[i];
    in_fds[i] = -1;
    return fd;
  };
  int err = 0;
  std::string what;  // for the debug log
  switch (h.op) {
    case BURST_CTL_OP_ALLOC_PD: {
      uint32_t handle = 0;
      err = res_.alloc_pd(s.id, &handle);
      if (err == 0) {
        start_response<burst_ctl_alloc_pd_resp>(out, h, sizeof(burst_ctl_alloc_pd_resp))
            ->pd_handle = handle;
        what = "pd " + std::to_string(handle);
      }
      break;
    }
    case BURST_CTL_OP_DEALLOC_PD:
    case BURST_CTL_OP_DESTROY_CQ:
    case BURST_CTL_OP_DESTROY_QP:
    case BURST_CTL_OP_DEREG_MR:
    case BURST_CTL_OP_DESTROY_AH:
    case BURST_CTL_OP_DESTROY_SRQ: {
      const auto req = read_as<burst_ctl_handle_req>(msg);
      err = h.op == BURST_CTL_OP_DEALLOC_PD   ? res_.dealloc_pd(s.id, req.handle)
            : h.op == BURST_CTL_OP_DESTROY_CQ ? res_.destroy_cq(s.id, req.handle)
            : h.op == BURST_CTL_OP_DEREG_MR   ? res_.dereg_mr(s.id, req.handle)
            : h.op == BURST_CTL_OP_DESTROY_AH ? res_.destroy_ah(s.id, req.handle)
            : h.op == BURST_CTL_OP_DESTROY_SRQ ? res_.destroy_srq(s.id, req.handle)
                                              : res_.destroy_qp(s.id, req.handle);
      if (err == 0) start_response<burst_ctl_empty_resp>(out, h, sizeof(burst_ctl_empty_resp));
      what = "handle " + std::to_string(req.handle);
      break;
    }
    case BURST_CTL_OP_CREATE_CQ: {
      const auto req = read_as<burst_ctl_create_cq_req>(msg);
      burst_ctl_create_cq_resp body{};
      int fd = -1;
      err = res_.create_cq(s.id, req, take_fd(), &body, &fd);
      if (err == 0) {
        auto* r = start_response<burst_ctl_create_cq_resp>(out, h, sizeof(body));
        body.hdr = r->hdr;
        *r = body;
        out_fds->push_back(fd);
        what = "cq " + std::to_string(body.cq_handle) + " (" + std::to_string(body.cqe) +
               " entries" + ((req.flags & BURST_CTL_CQ_F_CHANNEL) ? ", channel)" : ")");
      }
      break;
    }
    case BURST_CTL_OP_CREATE_QP: {
      const auto req = read_as<burst_ctl_create_qp_req>(msg);
      burst_ctl_create_qp_resp body{};
      int fd = -1;
      err = res_.create_qp(s.id, req, &body, &fd);
      if (err == 0) {
        auto* r = start_response<burst_ctl_create_qp_resp>(out, h, sizeof(body));
        body.hdr = r->hdr;
        *r = body;
        if (fd >= 0) out_fds->push_back(fd);
        what = std::string(ctl::qp_type_name(req.qp_type)) + " qp " +
               std::to_string(body.qp_handle) + " qpn " + std::to_string(body.qpn) + " on worker " +
               std::to_string(body.worker);
      }
      break;
    }
    case BURST_CTL_OP_MODIFY_QP: {
      const auto req = read_as<burst_ctl_modify_qp_req>(msg);
      err = res_.modify_qp(s.id, req.qp_handle, req.attr_mask, req.attr);
      if (err == 0) start_response<burst_ctl_empty_resp>(out, h, sizeof(burst_ctl_empty_resp));
      char mask[16];
      std::snprintf(mask, sizeof(mask), "0x%x", req.attr_mask);
      what = "qp " + std::to_string(req.qp_handle) + " mask " + mask;
      if (req.attr_mask & core::kQpState) {
        what += std::string(" -> ") + ctl::qp_state_name(req.attr.qp_state);
      }
      break;
    }
    case BURST_CTL_OP_QUERY_QP: {
      const auto req = read_as<burst_ctl_query_qp_req>(msg);
      burst_ctl_query_qp_resp body{};
      err = res_.query_qp(s.id, req.qp_handle, &body);
      if (err == 0) {
        auto* r = start_response<burst_ctl_query_qp_resp>(out, h, sizeof(body));
        body.hdr = r->hdr;
        *r = body;
      }
      what = "qp " + std::to_string(req.qp_handle);
      break;
    }
    case BURST_CTL_OP_REG_MR: {
      const auto req = read_as<burst_ctl_reg_mr_req>(msg);
      burst_ctl_reg_mr_resp body{};
      err = res_.reg_mr(s.id, req, in_fds[0], &body);  // the file stays with the guard
      if (err == 0) {
        auto* r = start_response<burst_ctl_reg_mr_resp>(out, h, sizeof(body));
        body.hdr = r->hdr;
        *r = body;
      }
      what = "mr " + std::to_string(body.mr_handle) + " len " + std::to_string(req.length) +
             (body.memory_mode == BURST_CTL_MEM_SHM ? " zero-copy" : " cross-memory");
      break;
    }
    case BURST_CTL_OP_MAP_DOORBELL: {
      const auto req = read_as<burst_ctl_map_doorbell_req>(msg);
      burst_ctl_map_doorbell_resp body{};
      int fd = -1, wake = -1;
      err = res_.map_doorbell(s.id, req.worker, &body, &fd, &wake);
      if (err == 0) {
        auto* r = start_response<burst_ctl_map_doorbell_resp>(out, h, sizeof(body));
        body.hdr = r->hdr;
        *r = body;
        out_fds->push_back(fd);
        out_fds->push_back(wake);
      }
      what = "worker " + std::to_string(req.worker);
      break;
    }
    case BURST_CTL_OP_CREATE_AH: {
      const auto req = read_as<burst_ctl_create_ah_req>(msg);
      uint32_t handle = 0;
      err = res_.create_ah(s.id, req, &handle);
      if (err == 0) {
        start_response<burst_ctl_create_ah_resp>(out, h, sizeof(burst_ctl_create_ah_resp))
            ->ah_handle = handle;
      }
      what = "ah " + std::to_string(handle);
      break;
    }
    case BURST_CTL_OP_CREATE_SRQ: {
      const auto req = read_as<burst_ctl_create_srq_req>(msg);
      burst_ctl_create_srq_resp body{};
      int fd = -1;
      err = res_.create_srq(s.id, req, &body, &fd);
      if (err == 0) {
        auto* r = start_response<burst_ctl_create_srq_resp>(out, h, sizeof(body));
        body.hdr = r->hdr;
        *r = body;
        out_fds->push_back(fd);
      }
      what = "srq " + std::to_string(body.srq_handle) + " srqn " + std::to_string(body.srqn);
      break;
    }
    case BURST_CTL_OP_MODIFY_SRQ: {
      const auto req = read_as<burst_ctl_modify_srq_req>(msg);
      err = res_.modify_srq(s.id, req);
      if (err == 0) start_response<burst_ctl_empty_resp>(out, h, sizeof(burst_ctl_empty_resp));
      what = "srq " + std::to_string(req.srq_handle);
      break;
    }
    case BURST_CTL_OP_QUERY_SRQ: {
      const auto req = read_as<burst_ctl_handle_req>(msg);
      burst_ctl_srq_attr a{};
      err = res_.query_srq(s.id, req.handle, &a);
      if (err == 0) {
        start_response<burst_ctl_query_srq_resp>(out, h, sizeof(burst_ctl_query_srq_resp))->attr = a;
      }
      what = "srq " + std::to_string(req.handle);
      break;
    }
    case BURST_CTL_OP_ATTACH_MEMORY: {
      const auto req = read_as<burst_ctl_attach_memory_req>(msg);
      const bool with_mem = (req.flags & BURST_CTL_ATTACH_F_MEM) != 0;
      if ((req.flags & ~BURST_CTL_ATTACH_F_MEM) != 0 || req.reserved != 0) {
        err = EINVAL;
      } else if (in_fds[0] < 0 || (in_fds[1] >= 0) != with_mem) {
        err = EBADF;
      } else {
        const int maps = take_fd(0);
        err = res_.attach_memory(s.id, maps, with_mem ? take_fd(1) : -1);
      }
      if (err == 0) start_response<burst_ctl_empty_resp>(out, h, sizeof(burst_ctl_empty_resp));
      what = with_mem ? "maps + mem" : "maps only";
      break;
    }
    case BURST_CTL_OP_SET_ASYNC_FD: {
      const int fd = take_fd();
      err = fd < 0 ? EBADF : res_.set_async_fd(s.id, fd);
      if (err == 0) start_response<burst_ctl_empty_resp>(out, h, sizeof(burst_ctl_empty_resp));
      break;
    }
    default:
      err = EOPNOTSUPP;  // check_request knows only ops handled above
      break;
  }
  if (err != 0) {
    error_response(out, h, err);
    BURSTD_DEBUG("client %u: %s %s: %s", s.id, ctl::op_name(h.op), what.c_str(),
                 std::strerror(err));
  } else {
    BURSTD_DEBUG("client %u: %s %s", s.id, ctl::op_name(h.op), what.c_str());
  }
}

}  // namespace burst::burstd
