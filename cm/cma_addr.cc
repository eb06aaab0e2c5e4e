/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Addresses and routes: RESOLVE_IP / RESOLVE_ADDR (ADDR_RESOLVED, ADDR_ERROR),
// RESOLVE_ROUTE (the RoCE path as cma.c's cma_resolve_iboe_route builds it),
// QUERY_ROUTE and QUERY (ADDR, PATH, GID as ucma.c answers them), the RDMA-CM
// IP service IDs and the cma_hdr private-data prefix.
#include <arpa/inet.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cm/cma_impl.h"

namespace burst::cm {

using cma::State;

namespace cma {

namespace {

const uint8_t* ib_raw(const sockaddr_storage& a) {  // sockaddr_ib.sib_addr
  return reinterpret_cast<const uint8_t*>(&a) + 8;
}

void put_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

void put_be32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

}  // namespace

socklen_t addr_size(const sockaddr* a) {
  switch (a->sa_family) {
    case AF_INET: return sizeof(sockaddr_in);
    case AF_INET6: return sizeof(sockaddr_in6);
    case kAfIb: return kSockaddrIbSize;
    default: return 0;
  }
}

uint16_t addr_port(const sockaddr_storage& a) {
  switch (a.ss_family) {
    case AF_INET: return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
    case AF_INET6: return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
    case kAfIb: {
      uint64_t sid;
      std::memcpy(&sid, reinterpret_cast<const uint8_t*>(&a) + 24, 8);
      return static_cast<uint16_t>(be64toh(sid));
    }
    default: return 0;
  }
}

void set_port(sockaddr_storage* a, uint16_t port) {
  switch (a->ss_family) {
    case AF_INET: reinterpret_cast<sockaddr_in*>(a)->sin_port = htons(port); break;
    case AF_INET6: reinterpret_cast<sockaddr_in6*>(a)->sin6_port = htons(port); break;
    case kAfIb: {  // cma_bind_port: sid = (sid & mask) | port, mask all ones
      uint8_t* p = reinterpret_cast<uint8_t*>(a);
      uint64_t sid, mask;
      std::memcpy(&sid, p + 24, 8);
      std::memcpy(&mask, p + 32, 8);
      sid = htobe64((be64toh(sid) & be64toh(mask) & ~0xFFFFULL) | port);
      mask = ~0ULL;
      std::memcpy(p + 24, &sid, 8);
      std::memcpy(p + 32, &mask, 8);
      break;
    }
    default: break;
  }
}

bool addr_any(const sockaddr_storage& a) {
  switch (a.ss_family) {
    case AF_INET:  // ipv4_is_zeronet
      return (ntohl(reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr) >> 24) == 0;
    case AF_INET6: {
      static const in6_addr any = IN6ADDR_ANY_INIT;
      return !std::memcmp(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, &any, 16);
    }
    case kAfIb: {
      const uint8_t* r = ib_raw(a);
      return std::all_of(r, r + 16, [](uint8_t b) { return b == 0; });
    }
    default: return true;
  }
}

bool addr_equal(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  switch (a.ss_family) {
    case AF_INET:
      return reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr ==
             reinterpret_cast<const sockaddr_in&>(b).sin_addr.s_addr;
    case AF_INET6:
      return !std::memcmp(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr,
                          &reinterpret_cast<const sockaddr_in6&>(b).sin6_addr, 16);
    case kAfIb: return !std::memcmp(ib_raw(a), ib_raw(b), 16);
    default: return true;
  }
}

Gid ip_to_gid(const sockaddr_storage& a) {
  Gid g{};
  if (a.ss_family == AF_INET) {  // IPv4-mapped
    g[10] = g[11] = 0xFF;
    std::memcpy(&g[12], &reinterpret_cast<const sockaddr_in&>(a).sin_addr, 4);
  } else if (a.ss_family == AF_INET6) {
    std::memcpy(g.data(), &reinterpret_cast<const sockaddr_in6&>(a).sin6_addr, 16);
  } else if (a.ss_family == kAfIb) {
    std::memcpy(g.data(), ib_raw(a), 16);
  }
  return g;
}

sockaddr_storage gid_to_ip(const Gid& g) {
  sockaddr_storage a{};
  static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
  if (!std::memcmp(g.data(), v4mapped, 12)) {
    auto* in = reinterpret_cast<sockaddr_in*>(&a);
    in->sin_family = AF_INET;
    std::memcpy(&in->sin_addr, &g[12], 4);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&a);
    in6->sin6_family = AF_INET6;
    std::memcpy(&in6->sin6_addr, g.data(), 16);
  }
  return a;
}

bool addr_loopback(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET)
    return (ntohl(reinterpret_cast<const sockaddr_in&>(a).sin_addr.s_addr) >> 24) == 127;
  if (a.ss_family == AF_INET6)
    return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(a).sin6_addr);
  return false;
}

bool addr_multicast(const sockaddr* a) {
  if (a->sa_family == AF_INET)
    return IN_MULTICAST(ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr));
  if (a->sa_family == AF_INET6)
    return IN6_IS_ADDR_MULTICAST(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
  return false;
}

uint64_t service_id(uint16_t ps, uint16_t port) { return uint64_t{ps} << 16 | port; }

// struct cma_hdr: cma_version, ip_version << 4, the source port, source and
// destination addresses (IPv4 in the last 4 bytes of 16), network order.
void write_cma_hdr(const Id& id, uint8_t* out) {
  std::memset(out, 0, kCmaHdrSize);
  out[0] = kCmaVersion;
  put_be16(out + 2, addr_port(id.src));
  if (id.src.ss_family == AF_INET) {
    out[1] = 4 << 4;
    std::memcpy(out + 4 + 12, &reinterpret_cast<const sockaddr_in&>(id.src).sin_addr, 4);
    std::memcpy(out + 20 + 12, &reinterpret_cast<const sockaddr_in&>(id.dst).sin_addr, 4);
  } else {
    out[1] = 6 << 4;
    std::memcpy(out + 4, &reinterpret_cast<const sockaddr_in6&>(id.src).sin6_addr, 16);
    std::memcpy(out + 20, &reinterpret_cast<const sockaddr_in6&>(id.dst).sin6_addr, 16);
  }
}

uint8_t write_request_private(const Id& id, const uint8_t* user, uint8_t len, uint8_t* out) {
  write_cma_hdr(id, out);
  std::memcpy(out + kCmaHdrSize, user, len);
  return static_cast<uint8_t>(kCmaHdrSize + len);
}

bool read_cma_hdr(const uint8_t* in, sockaddr_storage* src, sockaddr_storage* dst) {
  *src = sockaddr_storage{};
  *dst = sockaddr_storage{};
  if (in[0] != kCmaVersion) return false;
  uint16_t port = static_cast<uint16_t>(in[2] << 8 | in[3]);
  if ((in[1] >> 4) == 4) {
    auto* s = reinterpret_cast<sockaddr_in*>(src);
    auto* d = reinterpret_cast<sockaddr_in*>(dst);
    s->sin_family = d->sin_family = AF_INET;
    std::memcpy(&s->sin_addr, in + 16, 4);
    std::memcpy(&d->sin_addr, in + 32, 4);
    s->sin_port = htons(port);
    return true;
  }
  if ((in[1] >> 4) == 6) {
    auto* s = reinterpret_cast<sockaddr_in6*>(src);
    auto* d = reinterpret_cast<sockaddr_in6*>(dst);
    s->sin6_family = d->sin6_family = AF_INET6;
    std::memcpy(&s->sin6_addr, in + 4, 16);
    std::memcpy(&d->sin6_addr, in + 20, 16);
    s->sin6_port = htons(port);
    return true;
  }
  return false;
}

uint32_t roce_flow_label(const Id& id) {
  if (id.src.ss_family == AF_INET6) {
    uint32_t fl = ntohl(reinterpret_cast<const sockaddr_in6&>(id.src).sin6_flowinfo) & 0xFFFFF;
    if (fl) return fl;
  }
  uint32_t hash = uint32_t{addr_port(id.src)} * 31 + addr_port(id.dst);
  return hash & 0xFFFFF;
}

void fill_path_from_route(Id* id) {
  CmPath& p = id->path;
  p = CmPath{};
  p.sgid = id->route.sgid;
  p.dgid = id->route.dgid;
  p.dmac = id->route.dmac;
  p.sgid_index = id->route.sgid_index;
  p.traffic_class = id->tos_set ? id->tos : id->route.traffic_class;
  p.hop_limit = id->route.hop_limit;
  p.flow_label = roce_flow_label(*id);
  p.sl = 0;
  p.mtu = id->route.mtu;
  p.rate = 0;  // IB_RATE_PORT_CURRENT, as rxe's REQ
  p.packet_life_time = kIboePacketLifetime;
  p.pkey = 0xFFFF;
}

uint8_t ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life_time) {
  int t = packet_life_time + 1;
  if (t >= ca_ack_delay) t += (ca_ack_delay >= t - 1);
  else t = ca_ack_delay + (t >= ca_ack_delay - 1);
  return static_cast<uint8_t>(std::min(31, t));
}

// The 64-byte SA PathRecord (ib_sa_pack_path) of a RoCE path. The kernel's
// sa_path_rec keeps the RoCE route_resolved flag and destination MAC where an
// IB path has its LIDs (a union), so those words carry them, as ucma sends them.
void pack_path_record(const Id& id, uint8_t* out) {
  const CmPath& p = id.path;
  std::memset(out, 0, 64);
  std::memcpy(out + 8, p.dgid.data(), 16);
  std::memcpy(out + 24, p.sgid.data(), 16);
  out[40] = id.path_from_req ? 0 : 1;  // roce.route_resolved (a REQ's path: not resolved)
  std::memcpy(out + 41, p.dmac.data(), 3);
  put_be32(out + 44, uint32_t{p.dmac[3] & 1u} << 31 | (p.flow_label & 0xFFFFF) << 8 | p.hop_limit);
  out[48] = p.traffic_class;
  out[49] = 1 << 7;  // reversible, numb_path 0
  put_be16(out + 50, p.pkey);
  put_be16(out + 52, p.sl & 0xF);
  out[54] = 2 << 6 | (p.mtu & 0x3F);  // IB_SA_EQ
  out[55] = 2 << 6 | (p.rate & 0x3F);
  out[56] = 2 << 6 | (p.packet_life_time & 0x3F);
}

}  // namespace cma

int Cma::Impl::resolve_addr(Id* id, const sockaddr* src, const sockaddr* dst, uint32_t timeout_ms) {
  if (!cma::addr_size(dst)) return -EAFNOSUPPORT;
  if (dst->sa_family == cma::kAfIb) return -EAFNOSUPPORT;  // AF_IB resolution: not in burst
  if (id->state == State::kIdle) {  // cma_bind_addr: the source given, or any of dst's family
    sockaddr_storage any{};
    if (src && src->sa_family) std::memcpy(&any, src, cma::addr_size(src));
    else any.ss_family = dst->sa_family;
    if (int r = bind(id, reinterpret_cast<const sockaddr*>(&any))) return r;
  } else if (id->state != State::kAddrBound) {
    return -EINVAL;
  }
  if (id->src.ss_family != dst->sa_family) return -EINVAL;
  std::memcpy(&id->dst, dst, cma::addr_size(dst));
  CmaRoute route{};
  int r = 0;
  if (cma::addr_loopback(id->dst)) {  // cma_resolve_loopback: to the id's own GID
    if (!id->has_device && (r = bind_loopback(&id->sgid_index, &id->sgid))) return -r;
    sockaddr_storage self = cma::gid_to_ip(id->sgid);
    const sockaddr* s = reinterpret_cast<const sockaddr*>(&self);
    r = host.resolve_route(s, s, timeout_ms, &route);
    if (!r) route.src = id->src;  // the id keeps its loopback addresses
  } else {
    r = host.resolve_route(reinterpret_cast<const sockaddr*>(&id->src), dst, timeout_ms, &route);
  }
  if (r && cma::addr_multicast(dst)) r = mcast_route(id, dst, &route);  // mckey's destination
  if (r < 0) r = -r;
  if (r == ETIMEDOUT) {  // the neighbour never answered: addr_handler's ADDR_ERROR
    queue(id, cma::kAddrError, -ETIMEDOUT);
    return 0;
  }
  if (r) return -r;  // no route: rdma_resolve_ip fails at once, the id stays bound
  uint16_t port = cma::addr_port(id->src);
  if (route.src.ss_family == id->src.ss_family) {
    id->src = route.src;
    cma::set_port(&id->src, port);
  }
  id->route = route;
  id->sgid_index = route.sgid_index;
  id->sgid = route.sgid;
  id->has_device = true;
  id->state = State::kAddrResolved;
  queue(id, cma::kAddrResolved, 0);
  return 0;
}

int Cma::Impl::cmd_resolve_ip(ChannelId ch, const void* in, size_t, void*, size_t) {
  rdma_ucm_resolve_ip cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  return resolve_addr(id, reinterpret_cast<const sockaddr*>(&cmd.src_addr),
                      reinterpret_cast<const sockaddr*>(&cmd.dst_addr), cmd.timeout_ms);
}

int Cma::Impl::cmd_resolve_addr(ChannelId ch, const void* in, size_t, void*, size_t) {
  rdma_ucm_resolve_addr cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  const sockaddr* src = reinterpret_cast<const sockaddr*>(&cmd.src_addr);
  const sockaddr* dst = reinterpret_cast<const sockaddr*>(&cmd.dst_addr);
  if (cmd.reserved || (cmd.src_size && cmd.src_size != cma::addr_size(src)) || !cmd.dst_size ||
      cmd.dst_size != cma::addr_size(dst))
    return -EINVAL;
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  return resolve_addr(id, cmd.src_size ? src : nullptr, dst, cmd.timeout_ms);
}

int Cma::Impl::cmd_resolve_route(ChannelId ch, const void* in, size_t, void*, size_t) {
  rdma_ucm_resolve_route cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  if (id->state != State::kAddrResolved) return -EINVAL;
  if (!id->route.mtu) return -EINVAL;
  cma::fill_path_from_route(id);
  id->route_resolved = true;
  id->state = State::kRouteResolved;
  queue(id, cma::kRouteResolved, 0);
  return 0;
}

namespace {

void copy_user_path(const Id& id, ib_user_path_rec* dst) {
  const CmPath& p = id.path;
  std::memcpy(dst->dgid, p.dgid.data(), 16);
  std::memcpy(dst->sgid, p.sgid.data(), 16);
  dst->flow_label = htonl(p.flow_label);
  dst->hop_limit = p.hop_limit;
  dst->traffic_class = p.traffic_class;
  dst->reversible = 1;
  dst->pkey = htons(p.pkey);
  dst->sl = p.sl;
  dst->mtu_selector = 2;
  dst->mtu = p.mtu;
  dst->rate_selector = 2;
  dst->rate = p.rate;
  dst->packet_life_time_selector = 2;
  dst->packet_life_time = p.packet_life_time;
}

size_t ip_size(const sockaddr_storage& a) {
  return a.ss_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
}

}  // namespace

int Cma::Impl::cmd_query_route(ChannelId ch, const void* in, size_t, void* out, size_t) {
  rdma_ucm_query cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  rdma_ucm_query_route_resp resp{};
  std::memcpy(&resp.src_addr, &id->src, ip_size(id->src));
  std::memcpy(&resp.dst_addr, &id->dst, ip_size(id->dst));
  if (id->has_device) {
    resp.node_guid = host.node_guid();
    resp.port_num = 1;
    resp.ibdev_index = 0;
    resp.num_paths = id->route_resolved ? 1 : 0;
    if (id->route_resolved) {
      copy_user_path(*id, &resp.ib_route[0]);
    } else {  // ucma_copy_iboe_route with no path yet
      Gid d = cma::ip_to_gid(id->dst), s = cma::ip_to_gid(id->src);
      std::memcpy(resp.ib_route[0].dgid, d.data(), 16);
      std::memcpy(resp.ib_route[0].sgid, s.data(), 16);
      resp.ib_route[0].pkey = htons(0xFFFF);
    }
  }
  std::memcpy(out, &resp, sizeof(resp));
  return sizeof(resp);
}

namespace {

// ucma_query_device_addr: the device fields (the RoCE P_Key reads 0: the
// kernel takes it from bytes 8-9 of the Ethernet broadcast address).
void device_addr(CmaHost& host, const Id& id, rdma_ucm_query_addr_resp* resp) {
  if (!id.has_device) return;
  resp->node_guid = host.node_guid();
  resp->port_num = 1;
  resp->pkey = 0;
  resp->ibdev_index = 0;
}

// rdma_get_service_id
uint64_t sid_of(const Id& id, const sockaddr_storage& a) {
  if (a.ss_family == cma::kAfIb) {
    uint64_t sid;
    std::memcpy(&sid, reinterpret_cast<const uint8_t*>(&a) + 24, 8);
    return be64toh(sid);
  }
  return cma::service_id(id.ps, cma::addr_port(a));
}

void write_sib(const Id& id, const sockaddr_storage& a, uint16_t pkey, const Gid& gid,
               sockaddr_storage* out) {
  if (a.ss_family == cma::kAfIb) {
    std::memcpy(out, &a, cma::kSockaddrIbSize);
    return;
  }
  uint8_t* p = reinterpret_cast<uint8_t*>(out);
  uint16_t family = cma::kAfIb;
  std::memcpy(p, &family, 2);
  std::memcpy(p + 2, &pkey, 2);
  std::memcpy(p + 8, gid.data(), 16);
  uint64_t sid = htobe64(sid_of(id, a));
  std::memcpy(p + 24, &sid, 8);
}

}  // namespace

int Cma::Impl::cmd_query(ChannelId ch, const void* in, size_t, void* out, size_t out_len) {
  rdma_ucm_query cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  if (cmd.option == RDMA_USER_CM_QUERY_ADDR || cmd.option == RDMA_USER_CM_QUERY_GID) {
    rdma_ucm_query_addr_resp resp{};
    if (out_len < sizeof(resp)) return -ENOSPC;
    device_addr(host, *id, &resp);
    if (cmd.option == RDMA_USER_CM_QUERY_ADDR) {
      resp.src_size = cma::addr_size(reinterpret_cast<const sockaddr*>(&id->src));
      resp.dst_size = cma::addr_size(reinterpret_cast<const sockaddr*>(&id->dst));
      std::memcpy(&resp.src_addr, &id->src, resp.src_size);
      std::memcpy(&resp.dst_addr, &id->dst, resp.dst_size);
    } else {  // rdma_read_gids: RoCE GIDs are the IP addresses
      resp.src_size = resp.dst_size = cma::kSockaddrIbSize;
      Gid none{};
      write_sib(*id, id->src, resp.pkey, id->has_device ? cma::ip_to_gid(id->src) : none,
                reinterpret_cast<sockaddr_storage*>(&resp.src_addr));
      write_sib(*id, id->dst, resp.pkey, id->has_device ? cma::ip_to_gid(id->dst) : none,
                reinterpret_cast<sockaddr_storage*>(&resp.dst_addr));
    }
    std::memcpy(out, &resp, sizeof(resp));
    return sizeof(resp);
  }
  if (cmd.option != RDMA_USER_CM_QUERY_PATH) return -ENOSYS;
  rdma_ucm_query_path_resp head{};
  if (out_len < sizeof(head)) return -ENOSPC;
  head.num_paths = id->route_resolved ? 1 : 0;
  size_t n = 0;
  uint8_t* o = static_cast<uint8_t*>(out);
  // ucma_query_path writes a record while more than one record's room is left.
  if (head.num_paths && out_len - sizeof(head) > sizeof(ib_path_rec_data)) {
    ib_path_rec_data rec{};
    rec.flags = IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL;
    cma::pack_path_record(*id, reinterpret_cast<uint8_t*>(rec.path_rec));
    std::memcpy(o + sizeof(head), &rec, sizeof(rec));
    n = 1;
  }
  std::memcpy(o, &head, sizeof(head));
  return static_cast<int>(sizeof(head) + n * sizeof(ib_path_rec_data));
}

}  // namespace burst::cm
