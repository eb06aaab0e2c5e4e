/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Multicast joins of UD ids on RoCE v2 (cma.c's cma_iboe_join_multicast and
// ucma.c's ucma_process_join / ucma_leave_multicast): no SA, the group's GID is
// its IPv4-mapped address, and MULTICAST_JOIN carries the address handle and
// Q_Key the application attaches and sends with. Joining the group on the
// netdev is burstd's ATTACH_MCAST (when the QP attaches), not done here.
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cm/cma_impl.h"

namespace burst::cm {

using cma::State;

namespace {

constexpr uint16_t kJoinFullMember = 0, kJoinSendOnlyFullMember = 1;  // RDMA_MC_JOIN_FLAG_*
constexpr uint8_t kMcastHopLimit = 64;  // IPV6_DEFAULT_HOPLIMIT, as RoCE v2 IPv4 joins

}  // namespace

int Cma::Impl::mcast_route(Id* id, const sockaddr* dst, CmaRoute* route) {
  uint8_t index = 0;
  Gid gid{};
  if (int r = host.local_address(reinterpret_cast<const sockaddr*>(&id->src), &index, &gid))
    return r < 0 ? -r : r;
  *route = CmaRoute{};
  sockaddr_storage d{};
  std::memcpy(&d, dst, cma::addr_size(dst));
  route->src = cma::addr_any(id->src) ? cma::gid_to_ip(gid) : id->src;
  cma::set_port(&route->src, 0);
  route->sgid_index = index;
  route->sgid = gid;
  route->dgid = cma::ip_to_gid(d);
  if (d.ss_family == AF_INET) {  // ip_eth_mc_map
    route->dmac = {0x01, 0x00, 0x5E, static_cast<uint8_t>(route->dgid[13] & 0x7F), route->dgid[14],
                   route->dgid[15]};
  } else {  // ipv6_eth_mc_map
    route->dmac = {0x33, 0x33, route->dgid[12], route->dgid[13], route->dgid[14], route->dgid[15]};
  }
  route->hop_limit = kMcastHopLimit;
  return 0;
}

int Cma::Impl::join(ChannelId ch, uint32_t handle, uint64_t uid, const sockaddr* addr,
                    size_t addr_size, uint16_t flags, void* out) {
  if (!addr_size || addr_size != cma::addr_size(addr)) return -EINVAL;
  if (flags != kJoinFullMember && flags != kJoinSendOnlyFullMember) return -EINVAL;
  int err = 0;
  Id* id = find(ch, handle, &err);
  if (!id) return err;
  if (!id->has_device) return -EINVAL;  // ucma_get_ctx_dev
  if (id->state != State::kAddrBound && id->state != State::kAddrResolved) return -EINVAL;
  if (id->qp_type != cma::kQptUd) return -EINVAL;
  sockaddr_storage group{};
  std::memcpy(&group, addr, addr_size);
  if (cma::addr_any(group)) return -EINVAL;
  if (group.ss_family != AF_INET) return -EOPNOTSUPP;  // RoCE v2 joins are IPv4 only (cma.c)
  if (int r = set_qkey(id, 0)) return r;
  cma::Mcast mc;
  while (mcasts.count(next_mcast) || next_mcast == 0) next_mcast++;
  mc.handle = next_mcast++;
  mc.id = id->handle;
  mc.uid = uid;
  mc.addr = group;
  mcasts[mc.handle] = mc;

  cma::Event e = make_event(id, cma::kMulticastJoin, 0);
  e.mc = mc.handle;
  e.resp.uid = uid;
  e.resp.id = mc.handle;
  rdma_ucm_ud_param& u = e.resp.param.ud;  // ib_init_ah_from_mcmember
  Gid mgid = cma::ip_to_gid(group);
  std::memcpy(u.ah_attr.grh.dgid, mgid.data(), 16);
  u.ah_attr.grh.sgid_index = id->sgid_index;
  u.ah_attr.grh.hop_limit = kMcastHopLimit;
  u.ah_attr.is_global = 1;
  u.ah_attr.port_num = 1;
  u.qp_num = 0xFFFFFF;
  u.qkey = id->qkey;
  queue_event(e);

  rdma_ucm_create_id_resp resp{};
  resp.id = mc.handle;
  std::memcpy(out, &resp, sizeof(resp));
  return sizeof(resp);
}

int Cma::Impl::cmd_join_ip_mcast(ChannelId ch, const void* in, size_t, void* out, size_t) {
  rdma_ucm_join_ip_mcast cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  const sockaddr* addr = reinterpret_cast<const sockaddr*>(&cmd.addr);
  return join(ch, cmd.id, cmd.uid, addr, cma::addr_size(addr), kJoinFullMember, out);
}

int Cma::Impl::cmd_join_mcast(ChannelId ch, const void* in, size_t, void* out, size_t) {
  rdma_ucm_join_mcast cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  return join(ch, cmd.id, cmd.uid, reinterpret_cast<const sockaddr*>(&cmd.addr), cmd.addr_size,
              cmd.join_flags, out);
}

int Cma::Impl::cmd_leave_mcast(ChannelId ch, const void* in, size_t, void* out, size_t) {
  rdma_ucm_destroy_id cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  auto it = mcasts.find(cmd.id);
  if (it == mcasts.end()) return -ENOENT;
  auto owner = ids.find(it->second.id);
  if (owner == ids.end() || owner->second->channel != ch) return -EINVAL;
  auto& q = channels.at(ch).events;  // ucma_cleanup_mc_events
  bool had = !q.empty();
  std::erase_if(q, [&](const cma::Event& ev) { return ev.mc == cmd.id; });
  if (had && q.empty()) host.event_pending(ch, false);
  rdma_ucm_destroy_id_resp resp{};
  resp.events_reported = it->second.events_reported;
  mcasts.erase(it);
  std::memcpy(out, &resp, sizeof(resp));
  return sizeof(resp);
}

void Cma::Impl::drop_mcasts(Id* id) {
  std::erase_if(mcasts, [&](const auto& kv) { return kv.second.id == id->handle; });
}

}  // namespace burst::cm
