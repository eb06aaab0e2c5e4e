// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// UD multicast: ATTACH_MCAST / DETACH_MCAST. Semantics as uverbs + rxe: only UD
// QPs and multicast GIDs (EINVAL), attaching twice succeeds once, detaching what
// is not attached is EINVAL, a QP with attachments cannot be destroyed (EBUSY),
// a client that goes away loses them. The QP's engine delivers the group's
// datagrams (core/mcast.cc); the workers copy multicast frames to the workers
// with attachments (core::Handoff member bits, set here). For the first
// attachment to a group burstd joins it on the netdev (a UDP socket with
// IP_ADD_MEMBERSHIP / IPV6_JOIN_GROUP on the ifindex: the kernel programs the
// NIC's multicast filter and speaks IGMP / MLD for the switch); after the last,
// closing that socket leaves. Loopback: burst does not deliver a datagram to
// QPs of the same burstd (the wire does not bring it back and burstd does not
// copy it). A ConnectX may (rdma-core's IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, mlx5
// cap block_lb_mc, exists to stop it; its default on RoCE is unverified): not
// done. Control thread only.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "abi/burst_limits.h"
#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/log.h"
#include "daemon/burstd/resources.h"
#include "net/addr.h"

namespace burst::burstd {
namespace {

constexpr uint8_t kIbvQptUd = 4;  // IBV_QPT_UD

using Gid = std::array<uint8_t, 16>;

// The kernel's membership of `g` on `ifindex`: a socket whose close leaves the
// group. 0 with *fd, or an errno value.
int join_on_netdev(uint32_t ifindex, const Gid& g, int* fd) {
  const bool v4 = net::gid_is_ipv4_mapped(g);
  const int s = ::socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return errno;
  int rc;
  if (v4) {
    ip_mreqn m{};
    std::memcpy(&m.imr_multiaddr.s_addr, g.data() + 12, 4);
    m.imr_ifindex = static_cast<int>(ifindex);
    rc = ::setsockopt(s, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof(m));
  } else {
    ipv6_mreq m{};
    std::memcpy(m.ipv6mr_multiaddr.s6_addr, g.data(), 16);
    m.ipv6mr_interface = ifindex;
    rc = ::setsockopt(s, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m, sizeof(m));
  }
  if (rc != 0) {
    const int e = errno;
    ::close(s);
    return e;
  }
  *fd = s;
  return 0;
}

Gid gid_of(const burst_ctl_mcast_req& req) {
  Gid g;
  std::memcpy(g.data(), req.gid, g.size());
  return g;
}

}  // namespace

bool Resources::qp_in_mcast(uint32_t client, uint32_t handle) const {
  for (const auto& [g, group] : mcast_) {
    for (const McastMember& m : group.members) {
      if (m.client == client && m.qp_handle == handle) return true;
    }
  }
  return false;
}

int Resources::attach_mcast(uint32_t client, const burst_ctl_mcast_req& req) {
  const Qp* qp = find_object(client, &Client::qps, req.qp_handle);
  if (qp == nullptr) return ENOENT;
  const Gid g = gid_of(req);
  if (qp->type != kIbvQptUd || !net::gid_is_multicast(g)) return EINVAL;
  auto it = mcast_.find(g);
  if (it != mcast_.end()) {
    for (const McastMember& m : it->second.members) {
      if (m.client == client && m.qp_handle == req.qp_handle) return 0;  // attached already
    }
    if (it->second.members.size() >= BURST_MAX_MCAST_QP_ATTACH) return ENOMEM;
  } else if (mcast_.size() >= BURST_MAX_MCAST_GRP) {
    return ENOMEM;
  }
  if (mcast_members_ >= BURST_MAX_TOTAL_MCAST_QP_ATTACH) return ENOMEM;
  const bool new_group = it == mcast_.end();
  int join_fd = -1;
  const uint32_t ifindex = device_.info().ifindex;
  if (new_group && ifindex != 0) {
    if (int e = join_on_netdev(ifindex, g, &join_fd); e != 0) {
      BURSTD_WARN("ATTACH_MCAST: joining %s on %s: %s", net::format_gid(g).c_str(),
                  device_.info().netdev.c_str(), strerror(e));
      return e;
    }
  }
  const uint32_t qpn = qp->qpn, w = qp->worker;
  if (int e = on_worker_status(w, [&](WorkerBase& wk) { return wk.engine().attach_mcast(qpn, g); });
      e != 0) {
    if (join_fd >= 0) ::close(join_fd);
    return e;
  }
  if (new_group) it = mcast_.emplace(g, McastGroup{{}, join_fd}).first;
  it->second.members.push_back(McastMember{client, req.qp_handle, qpn, w});
  ++mcast_members_;
  if (mcast_per_worker_.size() < device_.workers()) mcast_per_worker_.resize(device_.workers());
  if (mcast_per_worker_[w]++ == 0) device_.set_mcast_member(w, true);
  return 0;
}

// Member `member` of `group` (key g) leaves: the engine already let it go (or
// the QP is being destroyed). The last member leaves the netdev's group.
void Resources::mcast_remove(const Gid& g, McastGroup& group, size_t member) {
  const uint32_t w = group.members[member].worker;
  group.members.erase(group.members.begin() + static_cast<ptrdiff_t>(member));
  --mcast_members_;
  if (w < mcast_per_worker_.size() && --mcast_per_worker_[w] == 0)
    device_.set_mcast_member(w, false);
  if (!group.members.empty()) return;
  if (group.join_fd >= 0) ::close(group.join_fd);
  mcast_.erase(g);
}

int Resources::detach_mcast(uint32_t client, const burst_ctl_mcast_req& req) {
  if (find_object(client, &Client::qps, req.qp_handle) == nullptr) return ENOENT;
  const Gid g = gid_of(req);
  auto it = mcast_.find(g);
  if (it == mcast_.end()) return EINVAL;
  auto& members = it->second.members;
  auto m = std::find_if(members.begin(), members.end(), [&](const McastMember& x) {
    return x.client == client && x.qp_handle == req.qp_handle;
  });
  if (m == members.end()) return EINVAL;
  const uint32_t qpn = m->qpn;
  if (int e = on_worker_status(m->worker,
                               [&](WorkerBase& wk) { return wk.engine().detach_mcast(qpn, g); });
      e != 0 && e != EINVAL) {
    return e;  // the worker did not answer: keep the record (destroy stays EBUSY)
  }
  mcast_remove(g, it->second, static_cast<size_t>(m - members.begin()));
  return 0;
}

// The client's QPs are about to be destroyed (their engines detach them).
void Resources::mcast_release_client(uint32_t client) {
  for (auto it = mcast_.begin(); it != mcast_.end();) {
    auto next = std::next(it);
    const Gid g = it->first;
    McastGroup& group = it->second;
    for (size_t i = group.members.size(); i-- > 0;) {
      if (group.members[i].client != client) continue;
      const bool last = group.members.size() == 1;
      mcast_remove(g, group, i);
      if (last) break;  // the group is gone
    }
    it = next;
  }
}

int op_attach_mcast(Call& c) {
  const auto req = c.request<burst_ctl_mcast_req>();
  c.what = "qp " + std::to_string(req.qp_handle) + " group " + net::format_gid(gid_of(req));
  return c.res.attach_mcast(c.s.id, req);
}

int op_detach_mcast(Call& c) {
  const auto req = c.request<burst_ctl_mcast_req>();
  c.what = "qp " + std::to_string(req.qp_handle) + " group " + net::format_gid(gid_of(req));
  return c.res.detach_mcast(c.s.id, req);
}

}  // namespace burst::burstd
