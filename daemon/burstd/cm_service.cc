// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// CmService: the IB CM and the rdma_cm layer of burstd's port, wired to QP1
// (Gsi), the event loop and the applications' channels (cm_service.h).
#include "daemon/burstd/cm_service.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "abi/burst_device.h"
#include "daemon/burstd/device.h"
#include "daemon/burstd/event_loop.h"
#include "daemon/burstd/gsi.h"
#include "daemon/burstd/log.h"
#include "daemon/burstd/resources.h"
#include "net/addr.h"
#include "net/neigh.h"

namespace burst::burstd {
namespace {

constexpr size_t kMadsPerWakeup = 32;  // then the loop serves the others; level-triggered

// The GID of an IPv4 / IPv6 socket address (its port ignored). False for
// another family.
bool gid_of(const sockaddr* sa, net::Gid* gid) {
  if (sa == nullptr) return false;
  if (sa->sa_family == AF_INET) {
    *gid = net::gid_from_ipv4(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr);
    return true;
  }
  if (sa->sa_family == AF_INET6) {
    *gid = net::gid_from_ipv6(reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
    return true;
  }
  return false;
}

bool is_any(const sockaddr* sa) {
  net::Gid g{};
  if (sa->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr == htonl(INADDR_ANY);
  }
  return gid_of(sa, &g) && net::gid_is_zero(g);
}

// A GID as the socket address rdma_cm reports (port 0; IPv4-mapped: AF_INET).
sockaddr_storage sockaddr_of(const net::Gid& gid, uint32_t ifindex) {
  sockaddr_storage ss{};
  if (net::gid_is_ipv4_mapped(gid)) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    in->sin_family = AF_INET;
    in->sin_addr = net::gid_to_ipv4(gid);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&ss);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = net::gid_to_ipv6(gid);
    if (net::gid_is_link_local(gid)) in6->sin6_scope_id = ifindex;
  }
  return ss;
}

// The first GID of the port in `family` (any-address binds and the loopback
// backend, which has no routes): its index, or -1.
int first_gid_of_family(const std::vector<net::Gid>& gids, int family) {
  for (size_t i = 0; i < gids.size(); ++i) {
    if (!net::gid_is_zero(gids[i]) && net::gid_family(gids[i]) == family) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

int index_of(const std::vector<net::Gid>& gids, const net::Gid& g) {
  for (size_t i = 0; i < gids.size(); ++i) {
    if (gids[i] == g) return static_cast<int>(i);
  }
  return -1;
}

// Whether fd is an eventfd (the shim's channel fd), from its /proc link.
bool is_eventfd(int fd) {
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  char target[64] = {};
  const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
  return n > 0 && std::strcmp(target, "anon_inode:[eventfd]") == 0;
}

uint64_t random_seed() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed)) {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = static_cast<uint64_t>(ts.tv_nsec) ^ (static_cast<uint64_t>(ts.tv_sec) << 30) ^
           static_cast<uint64_t>(getpid());
  }
  return seed;
}

}  // namespace

CmService::CmService(Device& device, Gsi& gsi, Resources& resources, EventLoop& loop)
    : device_(device), gsi_(gsi), res_(resources), loop_(loop) {
  // The EUI-64 of the MAC (burstctl's node_guid file), its bytes in network order.
  const net::Gid ll = net::gid_link_local_from_mac(device_.info().mac);
  std::memcpy(&guid_, ll.data() + 8, sizeof(guid_));
  ib_cm_ = std::make_unique<cm::IbCm>(*this, guid_, random_seed());
  cma_ = std::make_unique<cm::Cma>(*this, *ib_cm_);
  loop_.watch_readable(gsi_.event_fd(), [this] { on_gsi_readable(); });
}

CmService::~CmService() {
  loop_.unwatch(gsi_.event_fd());
  loop_.set_deadline(UINT64_MAX, nullptr);
  while (!channels_.empty()) close_channel(channels_.begin()->first);
  cma_.reset();
  ib_cm_.reset();
}

int CmService::open_channel(uint32_t channel, pid_t pid, int event_fd) {
  if (channels_.count(channel) != 0) {
    close(event_fd);
    return EALREADY;
  }
  if (event_fd < 0 || !is_eventfd(event_fd)) {
    if (event_fd >= 0) close(event_fd);
    return EBADF;
  }
  channels_[channel] = Channel{event_fd, false};
  cma_->open_channel(channel, static_cast<cm::ClientId>(pid));
  return 0;
}

void CmService::close_channel(uint32_t channel) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return;
  cma_->close_channel(channel);  // may call event_pending: the entry is still there
  close(it->second.event_fd);
  channels_.erase(channel);
  rearm();
}

int CmService::command(uint32_t channel, uint32_t cmd, const void* in, size_t in_len, void* out,
                       size_t out_len) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return -EBADF;
  if (it->second.push) {  // its commands keep the pushed events' owners: one path
    ExResult none{nullptr, 0};
    return command_ex(channel, cmd, 0, 0, in, in_len, out, out_len, &none);
  }
  const int r = cma_->command(channel, cmd, in, in_len, out, out_len);
  rearm();
  return r;
}

void CmService::counters(std::vector<std::pair<std::string, uint64_t>>* out) const {
  const cm::CmCounters& m = ib_cm_->counters();
  const cm::CmaCounters& a = cma_->counters();
  const std::pair<const char*, uint64_t> rows[] = {
      {"cm.mads_received", m.mads_received},
      {"cm.mads_sent", m.mads_sent},
      {"cm.retransmits", m.retransmits},
      {"cm.dropped_bad_length", m.dropped_bad_length},
      {"cm.dropped_bad_class", m.dropped_bad_class},
      {"cm.dropped_unknown_attr", m.dropped_unknown_attr},
      {"cm.dropped_no_match", m.dropped_no_match},
      {"cm.duplicate_req", m.duplicate_req},
      {"cm.rej_sent_no_listener", m.rej_sent_no_listener},
      {"cm.rej_sent_no_resources", m.rej_sent_no_resources},
      {"cm.unsupported_attr", m.unsupported_attr},
      {"cm.timeouts", m.timeouts},
      {"cm.mra_sent_delayed", m.mra_sent_delayed},
      {"cm.ids", ib_cm_->id_count()},
      {"cma.route_cache_hits", routes_.hits},
      {"cma.route_cache_misses", routes_.misses},
      {"cma.ids_created", a.ids_created},
      {"cma.ids_destroyed", a.ids_destroyed},
      {"cma.ids", cma_->id_count()},
      {"cma.connections_established", a.connections_established},
      {"cma.events_queued", a.events_queued},
      {"cma.events_dropped_queue_full", a.events_dropped_queue_full},
      {"cma.commands_refused", a.commands_refused},
      {"cma.requests_dropped_backlog", a.requests_dropped_backlog},
      {"cma.channels", channels_.size()},
  };
  for (const auto& [name, value] : rows) out->emplace_back(name, value);
}

void CmService::on_gsi_readable() {
  cm::Mad mads[kMadsPerWakeup];
  const size_t n = gsi_.receive(mads, kMadsPerWakeup);
  for (size_t i = 0; i < n; ++i) {
    ib_cm_->receive(mads[i]);
    // A push channel's events go out per MAD, not per batch: a listen's backlog
    // is given back as its CONNECT_REQUESTs are pushed (docs/cm.md).
    flush_pushes();
  }
  rearm();
}

void CmService::rearm() {
  flush_pushes();  // what the command, MADs or timers queued on push channels
  const uint64_t next = ib_cm_->next_deadline();
  if (next == armed_) return;
  armed_ = next;
  loop_.set_deadline(next, [this] { on_deadline(); });
}

void CmService::on_deadline() {
  armed_ = UINT64_MAX;  // the loop forgot it
  ib_cm_->tick();
  rearm();
}

bool CmService::send_mad(const cm::Mad& mad) { return gsi_.send(mad) == 0; }

void CmService::cm_event(cm::CmHandle handle, const cm::CmEvent& event) {
  cma_->cm_event(handle, event);
}

uint64_t CmService::now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void CmService::event_pending(cm::ChannelId channel, bool pending) {
  auto it = channels_.find(channel);
  if (it == channels_.end() || it->second.pending == pending) return;
  Channel& c = it->second;
  c.pending = pending;
  if (c.push) {  // taken off and sent by flush_pushes, after the current call
    if (pending) to_push_.push_back(channel);
    return;
  }
  if (pending) {
    const uint64_t one = 1;
    if (write(c.event_fd, &one, sizeof(one)) != sizeof(one)) {
      BURSTD_WARN("rdma_cm channel %u: cannot signal its eventfd: %s", channel,
                  std::strerror(errno));
    }
    return;
  }
  // Back to 0. The eventfd is the application's file (its O_NONBLOCK is the
  // application's to set): read only what poll says is there.
  pollfd p{c.event_fd, POLLIN, 0};
  uint64_t value;
  if (poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0) {
    if (read(c.event_fd, &value, sizeof(value)) < 0) {
      BURSTD_WARN("rdma_cm channel %u: cannot reset its eventfd: %s", channel,
                  std::strerror(errno));
    }
  }
}

int CmService::local_address(const sockaddr* addr, uint8_t* sgid_index, cm::Gid* sgid) {
  const std::vector<net::Gid>& gids = device_.info().gids;
  net::Gid g{};
  if (!gid_of(addr, &g)) return EAFNOSUPPORT;
  const int i = is_any(addr) ? first_gid_of_family(gids, addr->sa_family) : index_of(gids, g);
  if (i < 0) return EADDRNOTAVAIL;
  *sgid_index = static_cast<uint8_t>(i);
  *sgid = gids[static_cast<size_t>(i)];
  return 0;
}

// The source GID index (when *index < 0: the kernel's choice toward dgid) and dgid's
// MAC, asked of the kernel (rtnetlink; may wait for a neighbour's answer).
int CmService::resolve_uncached(const net::Gid& dgid, int* index, net::MacAddr* dmac,
                                uint32_t timeout_ms) {
  const DeviceInfo& info = device_.info();
  if (*index < 0 && info.ifindex != 0) {
    net::Gid s{};  // the kernel's source address toward dst
    if (net::Status st = net::local_gid_for(info.ifindex, dgid, &s); !st.ok()) return st.code();
    *index = index_of(info.gids, s);
  }
  if (*index < 0) *index = first_gid_of_family(info.gids, net::gid_family(dgid));
  if (*index < 0) return EADDRNOTAVAIL;
  if (index_of(info.gids, dgid) >= 0) {
    *dmac = info.mac;  // one of the port's own GIDs (rdma_cm's loopback): no neighbour
    return 0;
  }
  std::string message;
  const int wait_ms = static_cast<int>(timeout_ms == 0 || timeout_ms > 5000 ? 5000 : timeout_ms);
  if (int e = device_.resolve_dmac(dgid, wait_ms, dmac, &message); e != 0) {
    BURSTD_DEBUG("rdma_cm: route to %s: %s", net::format_gid(dgid).c_str(), message.c_str());
    return e;
  }
  return 0;
}

int CmService::resolve_route(const sockaddr* src, const sockaddr* dst, uint32_t timeout_ms,
                             cm::CmaRoute* out) {
  const DeviceInfo& info = device_.info();
  net::Gid dgid{};
  if (!gid_of(dst, &dgid)) return EAFNOSUPPORT;
  int index = -1;
  if (src != nullptr && src->sa_family != AF_UNSPEC && !is_any(src)) {
    net::Gid s{};
    if (!gid_of(src, &s)) return EAFNOSUPPORT;
    index = index_of(info.gids, s);
    if (index < 0) return EADDRNOTAVAIL;
  }
  const int asked = index;
  net::MacAddr dmac{};
  const uint64_t now = now_ns();
  if (routes_.find(dgid, asked, now, &index, &dmac) && static_cast<size_t>(index) < info.gids.size()) {
    ++routes_.hits;
  } else {
    ++routes_.misses;
    if (int e = resolve_uncached(dgid, &index, &dmac, timeout_ms); e != 0) return e;
    routes_.insert(dgid, asked, now, index, dmac);
  }
  out->sgid_index = static_cast<uint8_t>(index);
  out->sgid = info.gids[static_cast<size_t>(index)];
  out->src = sockaddr_of(out->sgid, info.ifindex);
  out->dgid = dgid;
  out->smac = info.mac;
  out->dmac = dmac;
  out->ifindex = info.ifindex;
  out->hop_limit = 64;
  out->traffic_class = 0;
  out->mtu = burst_ib_mtu_for_netdev(info.mtu);
  return 0;
}

uint64_t CmService::node_guid() { return guid_; }

bool CmService::qp_of_client(cm::ClientId client, uint32_t qpn, uint8_t* qp_type) {
  return res_.qp_of_pid(static_cast<pid_t>(client), qpn, qp_type);
}

}  // namespace burst::burstd
