/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Two Cma, each over its own IbCm, wired by an in-memory link (CM MADs as
// QP1 would carry them), a fake CmaHost per side (one IPv4 address, a route
// to the other side, a QP ownership table) and one fake clock. The helpers
// write the UCMA commands as librdmacm 44 does (struct, sizes).
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <rdma/rdma_user_cm.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "cm/cma.h"
#include "cm/ib_cm.h"

namespace burst::cm::test {

inline constexpr uint32_t kEvAddrResolved = 0, kEvRouteResolved = 2, kEvConnectRequest = 4,
                          kEvConnectResponse = 5, kEvUnreachable = 7, kEvRejected = 8,
                          kEvEstablished = 9, kEvDisconnected = 10, kEvTimewaitExit = 15,
                          kEvAddrError = 1;

struct World;

struct Side : IbCmHost, CmaHost {
  Side(World& w, int index);
  World& world;
  int index;
  sockaddr_in ip{};
  Gid gid{};
  sockaddr_in6 ip6{};  // 2001:db8::b / 2001:db8::c, its own GID (index 2)
  Gid gid6{};
  Mac mac{};
  uint64_t guid = 0;
  std::deque<Mad> outbox;
  std::vector<Mad> sent;  // every MAD this side's IbCm sent
  std::map<ChannelId, bool> pending;
  std::map<ClientId, std::map<uint32_t, uint8_t>> qps;  // client -> QPN -> IBV_QPT_*
  std::unique_ptr<IbCm> ib;
  std::unique_ptr<Cma> cma;

  // IbCmHost
  bool send_mad(const Mad& mad) override;
  void cm_event(CmHandle handle, const CmEvent& event) override { cma->cm_event(handle, event); }
  uint64_t now_ns() override;
  // CmaHost
  void event_pending(ChannelId channel, bool p) override { pending[channel] = p; }
  int local_address(const sockaddr* addr, uint8_t* sgid_index, Gid* sgid) override;
  int resolve_route(const sockaddr* src, const sockaddr* dst, uint32_t timeout_ms,
                    CmaRoute* out) override;
  uint64_t node_guid() override { return guid; }
  bool qp_of_client(ClientId client, uint32_t qpn, uint8_t* qp_type) override {
    auto c = qps.find(client);
    if (c == qps.end()) return false;
    auto q = c->second.find(qpn);
    if (q == c->second.end()) return false;
    *qp_type = q->second;
    return true;
  }
};

struct World {
  uint64_t now = 1'000'000'000;
  bool link_up = true;
  std::unique_ptr<Side> a, b;
  World() {
    a = std::make_unique<Side>(*this, 0);
    b = std::make_unique<Side>(*this, 1);
  }
  Side* other(const Side* s) { return s == a.get() ? b.get() : a.get(); }
  Side* by_ip(in_addr_t ip) {
    if (a->ip.sin_addr.s_addr == ip) return a.get();
    if (b->ip.sin_addr.s_addr == ip) return b.get();
    return nullptr;
  }
  Side* by_ip6(const in6_addr& ip) {
    if (!std::memcmp(&a->ip6.sin6_addr, &ip, 16)) return a.get();
    if (!std::memcmp(&b->ip6.sin6_addr, &ip, 16)) return b.get();
    return nullptr;
  }
  // Delivers every queued MAD (and the MADs they cause) to its peer.
  void pump() {
    for (int rounds = 0; rounds < 1000; ++rounds) {
      bool moved = false;
      for (Side* s : {a.get(), b.get()}) {
        while (!s->outbox.empty()) {
          Mad m = s->outbox.front();
          s->outbox.pop_front();
          const bool v6 = m.peer.gid == s->gid6 || m.peer.gid == other(s)->gid6;
          Side* to = (m.peer.gid == s->gid || m.peer.gid == s->gid6) ? s : other(s);
          m.peer.gid = v6 ? s->gid6 : s->gid;  // receive side: the frame's source
          m.peer.mac = s->mac;
          m.peer.remote_qpn = kGsiQpn;
          m.peer.sgid_index = v6 ? 2 : 1;
          to->ib->receive(m);
          moved = true;
        }
      }
      if (!moved) return;
    }
    ADD_FAILURE() << "MADs ping-pong without end";
  }
  // Runs the clock to the next CM deadline of either side (false: none).
  bool advance() {
    uint64_t next = std::min(a->ib->next_deadline(), b->ib->next_deadline());
    if (next == UINT64_MAX) return false;
    if (next > now) now = next;
    a->ib->tick();
    b->ib->tick();
    pump();
    return true;
  }
};

inline Side::Side(World& w, int i) : world(w), index(i) {
  ip.sin_family = AF_INET;
  ip.sin_addr.s_addr = htonl(0x0A63000B + i);  // 10.99.0.11 / 10.99.0.12
  gid[10] = gid[11] = 0xFF;
  std::memcpy(&gid[12], &ip.sin_addr, 4);
  mac = {0x52, 0x54, 0x00, 0x99, 0x00, static_cast<uint8_t>(1 + i)};
  guid = 0x505400fffe990001ULL + i;
  ip6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, i ? "2001:db8::c" : "2001:db8::b", &ip6.sin6_addr);
  std::memcpy(gid6.data(), &ip6.sin6_addr, 16);
  ib = std::make_unique<IbCm>(*this, guid, 7 + i);
  cma = std::make_unique<Cma>(*this, *ib);
}

inline bool Side::send_mad(const Mad& mad) {
  sent.push_back(mad);
  if (world.link_up) outbox.push_back(mad);
  return true;
}

inline uint64_t Side::now_ns() { return world.now; }

inline int Side::local_address(const sockaddr* addr, uint8_t* sgid_index, Gid* sgid) {
  if (addr->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(addr);
    if (std::memcmp(&in6->sin6_addr, &ip6.sin6_addr, 16)) return EADDRNOTAVAIL;
    *sgid_index = 2;
    *sgid = gid6;
    return 0;
  }
  if (addr->sa_family != AF_INET) return EADDRNOTAVAIL;
  auto* in = reinterpret_cast<const sockaddr_in*>(addr);
  if (in->sin_addr.s_addr != ip.sin_addr.s_addr) return EADDRNOTAVAIL;
  *sgid_index = 1;
  *sgid = gid;
  return 0;
}

inline int Side::resolve_route(const sockaddr*, const sockaddr* dst, uint32_t, CmaRoute* out) {
  if (dst->sa_family == AF_INET6) {
    Side* peer = world.by_ip6(reinterpret_cast<const sockaddr_in6*>(dst)->sin6_addr);
    if (!peer) return EHOSTUNREACH;
    *out = CmaRoute{};
    std::memcpy(&out->src, &ip6, sizeof(ip6));
    out->sgid_index = 2;
    out->sgid = gid6;
    out->dgid = peer->gid6;
    out->smac = mac;
    out->dmac = peer->mac;
    out->hop_limit = 64;
    out->mtu = 3;
    return 0;
  }
  if (dst->sa_family != AF_INET) return EHOSTUNREACH;
  if (reinterpret_cast<const sockaddr_in*>(dst)->sin_addr.s_addr == htonl(0x0A630062))
    return ETIMEDOUT;  // 10.99.0.98: on the link, never answers ARP
  Side* peer = world.by_ip(reinterpret_cast<const sockaddr_in*>(dst)->sin_addr.s_addr);
  if (!peer) return EHOSTUNREACH;
  *out = CmaRoute{};
  std::memcpy(&out->src, &ip, sizeof(ip));
  out->sgid_index = 1;
  out->sgid = gid;
  out->dgid = peer->gid;
  out->smac = mac;
  out->dmac = peer->mac;
  out->ifindex = 2;
  out->hop_limit = 64;
  out->mtu = 3;
  return 0;
}

// --- UCMA commands as librdmacm writes them ---------------------------------

template <typename T>
int ucma(Cma& c, ChannelId ch, uint32_t op, const T& in, void* out = nullptr, size_t out_len = 0) {
  return c.command(ch, op, &in, sizeof(in), out, out_len);
}

inline sockaddr_in v4(const char* ip, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, ip, &a.sin_addr);
  return a;
}

inline uint32_t create_id(Cma& c, ChannelId ch, uint64_t uid, uint16_t ps = RDMA_PS_TCP,
                          uint8_t qp_type = 0) {
  rdma_ucm_create_id cmd{};
  cmd.uid = uid;
  cmd.ps = ps;
  cmd.qp_type = qp_type;
  rdma_ucm_create_id_resp resp{};
  EXPECT_EQ(ucma(c, ch, RDMA_USER_CM_CMD_CREATE_ID, cmd, &resp, sizeof(resp)),
            static_cast<int>(sizeof(resp)));
  return resp.id;
}

inline int bind_addr(Cma& c, ChannelId ch, uint32_t id, const sockaddr_in& a) {
  rdma_ucm_bind cmd{};
  cmd.id = id;
  cmd.addr_size = sizeof(sockaddr_in);
  std::memcpy(&cmd.addr, &a, sizeof(a));
  return ucma(c, ch, RDMA_USER_CM_CMD_BIND, cmd);
}

inline int resolve_addr(Cma& c, ChannelId ch, uint32_t id, const sockaddr_in& dst) {
  rdma_ucm_resolve_addr cmd{};
  cmd.id = id;
  cmd.timeout_ms = 2000;
  cmd.dst_size = sizeof(sockaddr_in);
  std::memcpy(&cmd.dst_addr, &dst, sizeof(dst));
  return ucma(c, ch, RDMA_USER_CM_CMD_RESOLVE_ADDR, cmd);
}

inline int resolve_route(Cma& c, ChannelId ch, uint32_t id) {
  rdma_ucm_resolve_route cmd{};
  cmd.id = id;
  cmd.timeout_ms = 2000;
  return ucma(c, ch, RDMA_USER_CM_CMD_RESOLVE_ROUTE, cmd);
}

inline int listen(Cma& c, ChannelId ch, uint32_t id, uint32_t backlog = 10) {
  rdma_ucm_listen cmd{};
  cmd.id = id;
  cmd.backlog = backlog;
  return ucma(c, ch, RDMA_USER_CM_CMD_LISTEN, cmd);
}

inline std::optional<rdma_ucm_event_resp> get_event(Cma& c, ChannelId ch) {
  rdma_ucm_get_event cmd{};
  rdma_ucm_event_resp resp{};
  int r = ucma(c, ch, RDMA_USER_CM_CMD_GET_EVENT, cmd, &resp, sizeof(resp));
  if (r == -EAGAIN) return std::nullopt;
  EXPECT_EQ(r, static_cast<int>(sizeof(resp)));
  return resp;
}

inline rdma_ucm_conn_param conn_param(uint32_t qpn, const char* pd = nullptr) {
  rdma_ucm_conn_param p{};
  p.qp_num = qpn;
  p.responder_resources = 1;
  p.initiator_depth = 1;
  p.retry_count = 7;
  p.rnr_retry_count = 7;
  p.valid = 1;
  if (pd) {
    p.private_data_len = static_cast<uint8_t>(std::strlen(pd));
    std::memcpy(p.private_data, pd, p.private_data_len);
  }
  return p;
}

inline int connect(Cma& c, ChannelId ch, uint32_t id, const rdma_ucm_conn_param& p) {
  rdma_ucm_connect cmd{};
  cmd.id = id;
  cmd.conn_param = p;
  return ucma(c, ch, RDMA_USER_CM_CMD_CONNECT, cmd);
}

inline int accept(Cma& c, ChannelId ch, uint32_t id, uint64_t uid,
                  const rdma_ucm_conn_param* p) {
  rdma_ucm_accept cmd{};
  cmd.id = id;
  cmd.uid = uid;
  if (p) cmd.conn_param = *p;
  return ucma(c, ch, RDMA_USER_CM_CMD_ACCEPT, cmd);
}

inline int disconnect(Cma& c, ChannelId ch, uint32_t id) {
  rdma_ucm_disconnect cmd{};
  cmd.id = id;
  return ucma(c, ch, RDMA_USER_CM_CMD_DISCONNECT, cmd);
}

inline int init_qp_attr(Cma& c, ChannelId ch, uint32_t id, uint32_t state,
                        ib_uverbs_qp_attr* out) {
  rdma_ucm_init_qp_attr cmd{};
  cmd.id = id;
  cmd.qp_state = state;
  *out = ib_uverbs_qp_attr{};
  return ucma(c, ch, RDMA_USER_CM_CMD_INIT_QP_ATTR, cmd, out, sizeof(*out));
}

inline int destroy_id(Cma& c, ChannelId ch, uint32_t id, uint32_t* events_reported = nullptr) {
  rdma_ucm_destroy_id cmd{};
  cmd.id = id;
  rdma_ucm_destroy_id_resp resp{};
  int r = ucma(c, ch, RDMA_USER_CM_CMD_DESTROY_ID, cmd, &resp, sizeof(resp));
  if (events_reported) *events_reported = resp.events_reported;
  return r;
}

inline int query(Cma& c, ChannelId ch, uint32_t id, uint32_t option, void* out, size_t len) {
  rdma_ucm_query cmd{};
  cmd.id = id;
  cmd.option = option;
  return ucma(c, ch, RDMA_USER_CM_CMD_QUERY, cmd, out, len);
}

}  // namespace burst::cm::test
