/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The UCMA commands one by one: queries (ADDR, PATH bytes, GID, QUERY_ROUTE of
// librdmacm without AF_IB), librdmacm's AF_IB probe, port spaces, options,
// MIGRATE_ID, NOTIFY, and an application sending garbage (sizes, commands,
// handles of others, QPs of others) without affecting anyone else.
#include <rdma/ib_user_sa.h>

#include "tests/cm/cma_harness.h"

namespace burst::cm::test {
namespace {

constexpr ChannelId kServerCh = 1, kClientCh = 2, kOtherCh = 3, kClientCh2 = 4;
constexpr ClientId kServerClient = 100, kClientClient = 200, kOtherClient = 300;

class CmdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w.a->cma->open_channel(kServerCh, kServerClient);
    w.b->cma->open_channel(kClientCh, kClientClient);
    w.b->cma->open_channel(kClientCh2, kClientClient);
    w.b->cma->open_channel(kOtherCh, kOtherClient);
    w.a->qps[kServerClient][0x22] = 2;
    w.b->qps[kClientClient][0x11] = 2;
    w.b->qps[kOtherClient][0x99] = 2;
  }
  Cma& server() { return *w.a->cma; }
  Cma& client() { return *w.b->cma; }
  uint32_t routed(ChannelId ch = kClientCh) {
    uint32_t id = create_id(client(), ch, 0x2000);
    EXPECT_EQ(resolve_addr(client(), ch, id, v4("10.99.0.11", 7174)), 0);
    EXPECT_EQ(resolve_route(client(), ch, id), 0);
    while (get_event(client(), ch)) {
    }
    return id;
  }
  World w;
};

TEST_F(CmdTest, QueryPathIsTheKernelsRocePathRecord) {
  uint32_t id = routed();
  // As librdmacm's ucma_query_path: room for six records.
  alignas(8) uint8_t resp[sizeof(rdma_ucm_query_path_resp) + 6 * sizeof(ib_path_rec_data)] = {};
  ASSERT_EQ(query(client(), kClientCh, id, RDMA_USER_CM_QUERY_PATH, resp, sizeof(resp)),
            static_cast<int>(sizeof(rdma_ucm_query_path_resp) + sizeof(ib_path_rec_data)));
  rdma_ucm_query_path_resp head;
  ib_path_rec_data rec;
  std::memcpy(&head, resp, sizeof(head));
  std::memcpy(&rec, resp + sizeof(head), sizeof(rec));
  EXPECT_EQ(head.num_paths, 1u);
  EXPECT_EQ(rec.flags, uint32_t{IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL});
  const uint8_t* r = reinterpret_cast<const uint8_t*>(rec.path_rec);
  EXPECT_EQ(std::memcmp(r + 8, w.a->gid.data(), 16), 0);   // DGID
  EXPECT_EQ(std::memcmp(r + 24, w.b->gid.data(), 16), 0);  // SGID
  EXPECT_EQ(r[40], 1);  // where an IB path has its DLID: RoCE's route_resolved, the DMAC
  EXPECT_EQ(r[41], w.a->mac[0]);
  EXPECT_EQ(r[47], 64);    // hop limit
  EXPECT_EQ(r[49], 0x80);  // reversible
  EXPECT_EQ(r[50], 0xFF);  // P_Key
  EXPECT_EQ(r[51], 0xFF);
  EXPECT_EQ(r[54], 0x80 | 3);   // MTU selector "exactly", 1024
  EXPECT_EQ(r[55], 0x80);       // rate: port current
  EXPECT_EQ(r[56], 0x80 | 18);  // packet life time
  rdma_ucm_query_path_resp small{};
  EXPECT_EQ(query(client(), kClientCh, id, RDMA_USER_CM_QUERY_PATH, &small, sizeof(small)),
            static_cast<int>(sizeof(small)));  // no room for a record: the count alone
  EXPECT_EQ(small.num_paths, 1u);
  EXPECT_EQ(query(client(), kClientCh, id, RDMA_USER_CM_QUERY_PATH, &small, 4), -ENOSPC);
  EXPECT_EQ(query(client(), kClientCh, id, 7, resp, sizeof(resp)), -ENOSYS);
}

TEST_F(CmdTest, QueryGidGivesSockaddrIb) {
  uint32_t id = routed();
  rdma_ucm_query_addr_resp resp{};
  ASSERT_EQ(query(client(), kClientCh, id, RDMA_USER_CM_QUERY_GID, &resp, sizeof(resp)),
            static_cast<int>(sizeof(resp)));
  const uint8_t* s = reinterpret_cast<const uint8_t*>(&resp.src_addr);
  const uint8_t* d = reinterpret_cast<const uint8_t*>(&resp.dst_addr);
  EXPECT_EQ(resp.src_size, 48);
  EXPECT_EQ(s[0] | s[1] << 8, 27);  // AF_IB
  EXPECT_EQ(std::memcmp(s + 8, w.b->gid.data(), 16), 0);
  EXPECT_EQ(std::memcmp(d + 8, w.a->gid.data(), 16), 0);
  uint64_t sid;
  std::memcpy(&sid, d + 24, 8);
  EXPECT_EQ(be64toh(sid), 0x0000000001060000ULL | 7174);
  EXPECT_EQ(resp.node_guid, w.b->guid);
}

// librdmacm without AF_IB support: BIND_IP, RESOLVE_IP, QUERY_ROUTE.
TEST_F(CmdTest, QueryRouteBeforeAndAfterTheRoute) {
  uint32_t id = create_id(client(), kClientCh, 0x2000);
  rdma_ucm_bind_ip b{};
  b.id = id;
  sockaddr_in src = v4("10.99.0.12", 0);
  std::memcpy(&b.addr, &src, sizeof(src));
  ASSERT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_BIND_IP, b), 0);
  rdma_ucm_query q{};
  q.id = id;
  rdma_ucm_query_route_resp r{};
  ASSERT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_QUERY_ROUTE, q, &r, sizeof(r)),
            static_cast<int>(sizeof(r)));
  EXPECT_EQ(r.node_guid, w.b->guid);
  EXPECT_EQ(r.num_paths, 0u);
  EXPECT_EQ(std::memcmp(r.ib_route[0].sgid, w.b->gid.data(), 16), 0);
  EXPECT_EQ(r.ib_route[0].pkey, htons(0xFFFF));
  rdma_ucm_resolve_ip ri{};
  ri.id = id;
  sockaddr_in dst = v4("10.99.0.11", 7174);
  std::memcpy(&ri.dst_addr, &dst, sizeof(dst));
  ASSERT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_RESOLVE_IP, ri), 0);
  ASSERT_EQ(resolve_route(client(), kClientCh, id), 0);
  ASSERT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_QUERY_ROUTE, q, &r, sizeof(r)),
            static_cast<int>(sizeof(r)));
  EXPECT_EQ(r.num_paths, 1u);
  EXPECT_EQ(r.ib_route[0].mtu, 3u);
  EXPECT_EQ(r.ib_route[0].packet_life_time, 18);
  EXPECT_EQ(std::memcmp(r.ib_route[0].dgid, w.a->gid.data(), 16), 0);
  auto* d = reinterpret_cast<sockaddr_in*>(&r.dst_addr);
  EXPECT_EQ(ntohs(d->sin_port), 7174);
  EXPECT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_QUERY_ROUTE, q, &r, sizeof(r) - 1),
            -ENOSPC);
}

// ucma_set_af_ib_support: an RDMA_PS_IB id bound to AF_IB any-address.
TEST_F(CmdTest, AfIbProbeSucceeds) {
  uint32_t id = create_id(client(), kClientCh, 0x2000, RDMA_PS_IB, 2);
  rdma_ucm_bind b{};
  b.id = id;
  b.addr_size = 48;
  uint8_t* sib = reinterpret_cast<uint8_t*>(&b.addr);
  uint16_t family = 27;
  std::memcpy(sib, &family, 2);
  uint64_t sid = htobe64(0x0000000001060000ULL), mask = htobe64(0xFFFFFFFFFFFF0000ULL);
  std::memcpy(sib + 24, &sid, 8);
  std::memcpy(sib + 32, &mask, 8);
  ASSERT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_BIND, b), 0);
  rdma_ucm_query_addr_resp resp{};
  ASSERT_EQ(query(client(), kClientCh, id, RDMA_USER_CM_QUERY_ADDR, &resp, sizeof(resp)),
            static_cast<int>(sizeof(resp)));
  EXPECT_EQ(resp.src_size, 48);
  EXPECT_EQ(resp.node_guid, 0u);  // no device: any-address
  ASSERT_EQ(query(client(), kClientCh, id, RDMA_USER_CM_QUERY_GID, &resp, sizeof(resp)),
            static_cast<int>(sizeof(resp)));
  EXPECT_EQ(destroy_id(client(), kClientCh, id), 4);
}

TEST_F(CmdTest, PortSpaces) {
  uint32_t a = create_id(server(), kServerCh, 1), b = create_id(server(), kServerCh, 2);
  uint32_t u = create_id(server(), kServerCh, 3, RDMA_PS_UDP);
  ASSERT_EQ(bind_addr(server(), kServerCh, a, v4("10.99.0.11", 7174)), 0);
  EXPECT_EQ(bind_addr(server(), kServerCh, b, v4("10.99.0.11", 7174)), -EADDRINUSE);
  EXPECT_EQ(bind_addr(server(), kServerCh, b, v4("0.0.0.0", 7174)), -EADDRNOTAVAIL);
  EXPECT_EQ(bind_addr(server(), kServerCh, b, v4("10.99.0.77", 7175)), -EADDRNOTAVAIL);
  // A loopback address binds with no device (libfabric's fi_getinfo binds 127.0.0.1).
  uint32_t l = create_id(server(), kServerCh, 5);
  EXPECT_EQ(bind_addr(server(), kServerCh, l, v4("127.0.0.1", 7175)), 0);
  rdma_ucm_query_addr_resp lo{};
  ASSERT_GT(query(server(), kServerCh, l, RDMA_USER_CM_QUERY_ADDR, &lo, sizeof(lo)), 0);
  EXPECT_EQ(lo.node_guid, 0u);  // librdmacm leaves id->verbs NULL
  EXPECT_EQ(bind_addr(server(), kServerCh, u, v4("10.99.0.11", 7174)), 0);  // another space
  EXPECT_EQ(bind_addr(server(), kServerCh, a, v4("10.99.0.11", 7176)), -EINVAL);  // bound
  ASSERT_EQ(destroy_id(server(), kServerCh, a), 4);
  EXPECT_EQ(bind_addr(server(), kServerCh, b, v4("10.99.0.11", 7174)), 0);  // free again
  uint32_t c = create_id(server(), kServerCh, 4);
  ASSERT_EQ(bind_addr(server(), kServerCh, c, v4("10.99.0.11", 0)), 0);
  rdma_ucm_query_addr_resp resp{};
  ASSERT_GT(query(server(), kServerCh, c, RDMA_USER_CM_QUERY_ADDR, &resp, sizeof(resp)), 0);
  uint16_t port = ntohs(reinterpret_cast<sockaddr_in*>(&resp.src_addr)->sin_port);
  EXPECT_GE(port, 32768);
  EXPECT_LE(port, 60999);
}

// An IPv4 bind is AF-only; an IPv6 any-address also covers IPv4 unless AFONLY.
TEST_F(CmdTest, AfOnlyDecidesWhetherV4AndV6AnyShareAPort) {
  uint32_t v4id = create_id(server(), kServerCh, 1), v6id = create_id(server(), kServerCh, 2);
  ASSERT_EQ(bind_addr(server(), kServerCh, v4id, v4("0.0.0.0", 7174)), 0);
  rdma_ucm_bind b{};
  b.id = v6id;
  b.addr_size = sizeof(sockaddr_in6);
  sockaddr_in6 any6{};
  any6.sin6_family = AF_INET6;
  any6.sin6_port = htons(7174);
  std::memcpy(&b.addr, &any6, sizeof(any6));
  EXPECT_EQ(ucma(server(), kServerCh, RDMA_USER_CM_CMD_BIND, b), -EADDRNOTAVAIL);
  struct {
    rdma_ucm_set_option cmd;
    int value;
  } req{};
  req.cmd.id = v6id;
  req.cmd.level = RDMA_OPTION_ID;
  req.cmd.optname = RDMA_OPTION_ID_AFONLY;
  req.cmd.optlen = sizeof(int);
  req.value = 1;
  ASSERT_EQ(server().command(kServerCh, RDMA_USER_CM_CMD_SET_OPTION, &req, sizeof(req), nullptr, 0), 0);
  EXPECT_EQ(ucma(server(), kServerCh, RDMA_USER_CM_CMD_BIND, b), 0);
}

TEST_F(CmdTest, ReuseAddrLetsTwoIdsShareAPort) {
  uint32_t a = create_id(server(), kServerCh, 1), b = create_id(server(), kServerCh, 2);
  rdma_ucm_set_option opt{};
  struct {
    rdma_ucm_set_option cmd;
    int value;
  } req{};
  req.cmd.level = RDMA_OPTION_ID;
  req.cmd.optname = RDMA_OPTION_ID_REUSEADDR;
  req.cmd.optlen = sizeof(int);
  req.value = 1;
  for (uint32_t id : {a, b}) {
    req.cmd.id = id;
    ASSERT_EQ(server().command(kServerCh, RDMA_USER_CM_CMD_SET_OPTION, &req, sizeof(req), nullptr, 0), 0);
  }
  ASSERT_EQ(bind_addr(server(), kServerCh, a, v4("10.99.0.11", 7174)), 0);
  EXPECT_EQ(bind_addr(server(), kServerCh, b, v4("10.99.0.11", 7174)), 0);
  EXPECT_EQ(listen(server(), kServerCh, a), -EADDRINUSE);  // listening needs the port alone
  opt.id = a;
  opt.level = RDMA_OPTION_ID;
  opt.optname = RDMA_OPTION_ID_REUSEADDR;
  opt.optlen = sizeof(int);  // the value is missing from the request
  EXPECT_EQ(ucma(server(), kServerCh, RDMA_USER_CM_CMD_SET_OPTION, opt), -EINVAL);
}

TEST_F(CmdTest, TosOptionSetsTheTrafficClass) {
  uint32_t id = create_id(client(), kClientCh, 0x2000);
  struct {
    rdma_ucm_set_option cmd;
    uint8_t tos;
  } req{};
  req.cmd.id = id;
  req.cmd.level = RDMA_OPTION_ID;
  req.cmd.optname = RDMA_OPTION_ID_TOS;
  req.cmd.optlen = 1;
  req.tos = 0x68;
  ASSERT_EQ(client().command(kClientCh, RDMA_USER_CM_CMD_SET_OPTION, &req, sizeof(req), nullptr, 0), 0);
  req.cmd.optlen = 0;
  EXPECT_EQ(client().command(kClientCh, RDMA_USER_CM_CMD_SET_OPTION, &req, sizeof(req), nullptr, 0), -EINVAL);
  req.cmd.optname = 77;
  req.cmd.optlen = 1;
  EXPECT_EQ(client().command(kClientCh, RDMA_USER_CM_CMD_SET_OPTION, &req, sizeof(req), nullptr, 0), -ENOSYS);
  req.cmd.optname = RDMA_OPTION_ID_ACK_TIMEOUT;
  req.tos = 14;
  ASSERT_EQ(client().command(kClientCh, RDMA_USER_CM_CMD_SET_OPTION, &req, sizeof(req), nullptr, 0), 0);
  ASSERT_EQ(resolve_addr(client(), kClientCh, id, v4("10.99.0.11", 7174)), 0);
  ASSERT_EQ(resolve_route(client(), kClientCh, id), 0);
  rdma_ucm_query q{};
  q.id = id;
  rdma_ucm_query_route_resp r{};
  ASSERT_GT(ucma(client(), kClientCh, RDMA_USER_CM_CMD_QUERY_ROUTE, q, &r, sizeof(r)), 0);
  EXPECT_EQ(r.ib_route[0].traffic_class, 0x68);
}

TEST_F(CmdTest, MigrateIdMovesItsEvents) {
  uint32_t id = create_id(client(), kClientCh, 0x2000);
  ASSERT_EQ(resolve_addr(client(), kClientCh, id, v4("10.99.0.11", 7174)), 0);
  EXPECT_TRUE(w.b->pending[kClientCh]);
  rdma_ucm_migrate_id m{};
  m.id = id;
  m.fd = kClientCh;  // the channel it is on (the shim's translation of the fd)
  rdma_ucm_migrate_resp resp{};
  ASSERT_EQ(ucma(client(), kClientCh2, RDMA_USER_CM_CMD_MIGRATE_ID, m, &resp, sizeof(resp)),
            static_cast<int>(sizeof(resp)));
  EXPECT_EQ(resp.events_reported, 0u);
  EXPECT_FALSE(w.b->pending[kClientCh]);
  EXPECT_TRUE(w.b->pending[kClientCh2]);
  EXPECT_FALSE(get_event(client(), kClientCh));
  auto ev = get_event(client(), kClientCh2);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvAddrResolved);
  EXPECT_EQ(resolve_route(client(), kClientCh, id), -EINVAL);  // no longer on that channel
  EXPECT_EQ(resolve_route(client(), kClientCh2, id), 0);
  m.fd = kClientCh2;  // another process's channel may not take it
  EXPECT_EQ(ucma(client(), kOtherCh, RDMA_USER_CM_CMD_MIGRATE_ID, m, &resp, sizeof(resp)), -EPERM);
  m.fd = 4242;
  EXPECT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_MIGRATE_ID, m, &resp, sizeof(resp)), -ENOENT);
}

TEST_F(CmdTest, NotifyEstablishesWhenTheRtuIsLost) {
  uint32_t lid = create_id(server(), kServerCh, 0x1000);
  ASSERT_EQ(bind_addr(server(), kServerCh, lid, v4("10.99.0.11", 7174)), 0);
  ASSERT_EQ(listen(server(), kServerCh, lid), 0);
  uint32_t cid = routed();
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(0x11)), 0);
  w.pump();
  auto req = get_event(server(), kServerCh);
  ASSERT_TRUE(req);
  auto p = conn_param(0x22);
  ASSERT_EQ(accept(server(), kServerCh, req->id, 0x3000, &p), 0);
  w.pump();
  ASSERT_TRUE(get_event(client(), kClientCh));
  w.link_up = false;  // the RTU is lost
  ASSERT_EQ(accept(client(), kClientCh, cid, 0, nullptr), 0);
  EXPECT_FALSE(get_event(server(), kServerCh));
  rdma_ucm_notify n{};
  n.id = req->id;
  n.event = 4;  // IBV_EVENT_COMM_EST: the first packet arrived
  ASSERT_EQ(ucma(server(), kServerCh, RDMA_USER_CM_CMD_NOTIFY, n), 0);
  auto ev = get_event(server(), kServerCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvEstablished);
  n.event = 99;
  EXPECT_EQ(ucma(server(), kServerCh, RDMA_USER_CM_CMD_NOTIFY, n), -EINVAL);
}

// A channel whose application never reads its events holds at most 4096;
// what does not fit is counted, the queue stays as it was.
TEST_F(CmdTest, FullQueueDropsAndCounts) {
  for (int i = 0; i < 4097; ++i) {
    uint32_t id = create_id(client(), kClientCh, 0x2000 + i);
    ASSERT_EQ(resolve_addr(client(), kClientCh, id, v4("10.99.0.11", 7174)), 0);
  }
  EXPECT_EQ(client().counters().events_queued, 4096u);
  EXPECT_EQ(client().counters().events_dropped_queue_full, 1u);
  size_t n = 0;
  while (get_event(client(), kClientCh)) ++n;
  EXPECT_EQ(n, 4096u);
  EXPECT_FALSE(w.b->pending[kClientCh]);
  client().close_channel(kClientCh);
  EXPECT_EQ(client().id_count(), 0u);
}

TEST_F(CmdTest, GarbageFromOneApplicationAffectsNoOther) {
  uint32_t mine = create_id(client(), kClientCh, 0x2000);
  ASSERT_EQ(resolve_addr(client(), kClientCh, mine, v4("10.99.0.11", 7174)), 0);
  uint32_t theirs = create_id(client(), kOtherCh, 0x9000);
  uint8_t junk[512];
  std::memset(junk, 0xA5, sizeof(junk));
  Cma& c = client();
  EXPECT_EQ(c.command(kOtherCh, 99, junk, 8, junk, 8), -ENOSYS);
  EXPECT_EQ(c.command(kOtherCh, RDMA_USER_CM_CMD_GET_OPTION, junk, 64, junk, 64), -ENOSYS);
  EXPECT_EQ(c.command(kOtherCh, RDMA_USER_CM_CMD_JOIN_MCAST, junk, 200, junk, 64), -EINVAL);
  EXPECT_EQ(c.command(kOtherCh, RDMA_USER_CM_CMD_CREATE_ID, junk, 4, junk, 4), -EINVAL);
  EXPECT_EQ(c.command(kOtherCh, RDMA_USER_CM_CMD_CREATE_ID, junk, 24, junk, 2), -ENOSPC);
  EXPECT_EQ(c.command(kOtherCh, RDMA_USER_CM_CMD_CREATE_ID, junk, 24, junk, 4), -EINVAL);  // ps
  EXPECT_EQ(c.command(kOtherCh, RDMA_USER_CM_CMD_GET_EVENT, junk, 8, junk, 16), -ENOSPC);
  EXPECT_EQ(c.command(77, RDMA_USER_CM_CMD_GET_EVENT, junk, 8, junk, 512), -EBADF);
  EXPECT_EQ(c.command(kOtherCh, RDMA_USER_CM_CMD_GET_EVENT, junk, 8, junk, 512), -EAGAIN);
  // Every command with every handle that is not the channel's own.
  for (uint32_t op = 0; op <= RDMA_USER_CM_CMD_JOIN_MCAST; ++op) {
    for (uint32_t h : {mine, 0u, 0xFFFFFFFFu, 12345u}) {
      std::memset(junk, 0xA5, sizeof(junk));
      std::memcpy(junk, &h, 4);       // id first (bind, resolve, connect, listen, ...)
      std::memcpy(junk + 8, &h, 4);   // id after a response pointer (destroy, query, ...)
      if (op == RDMA_USER_CM_CMD_GET_EVENT || op == RDMA_USER_CM_CMD_CREATE_ID) continue;
      int r = c.command(kOtherCh, op, junk, sizeof(junk), junk, sizeof(junk));
      EXPECT_LT(r, 0) << "op " << op << " handle " << h;
    }
  }
  rdma_ucm_destroy_id d{};
  d.id = mine;
  rdma_ucm_destroy_id_resp dr{};
  EXPECT_EQ(ucma(c, kOtherCh, RDMA_USER_CM_CMD_DESTROY_ID, d, &dr, sizeof(dr)), -EINVAL);
  d.id = 4242;
  EXPECT_EQ(ucma(c, kOtherCh, RDMA_USER_CM_CMD_DESTROY_ID, d, &dr, sizeof(dr)), -ENOENT);
  // A QP of another process.
  ASSERT_EQ(resolve_addr(c, kOtherCh, theirs, v4("10.99.0.11", 7174)), 0);
  ASSERT_EQ(resolve_route(c, kOtherCh, theirs), 0);
  EXPECT_EQ(connect(c, kOtherCh, theirs, conn_param(0x11)), -EPERM);
  EXPECT_GT(c.counters().commands_refused, 10u);
  // The well-behaved application's id and event are untouched.
  auto ev = get_event(c, kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvAddrResolved);
  EXPECT_EQ(ev->id, mine);
  EXPECT_EQ(resolve_route(c, kClientCh, mine), 0);
  c.close_channel(kOtherCh);
  EXPECT_EQ(c.id_count(), 1u);
}

}  // namespace
}  // namespace burst::cm::test

namespace burst::cm::test {
namespace {

// Random commands (random bytes, sizes and sometimes a live id) from two
// applications on two hosts, with the CM running between them: nothing
// crashes (the asan preset runs this too) and closing the channels leaves
// no id behind.
class CmaRandom : public ::testing::TestWithParam<uint64_t> {};

TEST_P(CmaRandom, CommandsNeverBreakTheLayer) {
  World w;
  w.a->cma->open_channel(1, 10);
  w.b->cma->open_channel(2, 20);
  w.a->qps[10][0x22] = 2;
  w.b->qps[20][0x11] = 2;
  w.a->qps[10][0x11] = 2;
  w.b->qps[20][0x22] = 2;
  uint64_t x = GetParam();
  auto rnd = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  std::vector<uint32_t> live[2];
  uint8_t in[600], out[600];
  for (int i = 0; i < 50000; ++i) {
    const int side = static_cast<int>(rnd() % 2);
    Side& me = side ? *w.b : *w.a;
    Cma& c = *me.cma;
    const ChannelId ch = side ? 2 : 1;
    auto& ids = live[side];
    const uint32_t id = ids.empty() || rnd() % 16 == 0 ? static_cast<uint32_t>(rnd() % 64)
                                                       : ids[rnd() % ids.size()];
    const uint16_t port = static_cast<uint16_t>(7000 + rnd() % 3);
    const char* ip = rnd() % 4 ? (side ? "10.99.0.11" : "10.99.0.12")
                               : (side ? "10.99.0.12" : "10.99.0.11");
    switch (rnd() % 14) {
      case 0: {  // junk
        for (auto& b : in) b = static_cast<uint8_t>(rnd());
        std::memcpy(in, &id, 4);
        size_t in_len = rnd() % sizeof(in), out_len = rnd() % sizeof(out);
        int r = c.command(ch, static_cast<uint32_t>(rnd() % 25), in, in_len, out, out_len);
        ASSERT_LE(r, static_cast<int>(out_len));
        break;
      }
      case 1: {
        rdma_ucm_create_id cmd{};
        cmd.uid = 1 + rnd() % 1000;
        cmd.ps = rnd() % 4 ? RDMA_PS_TCP : RDMA_PS_UDP;
        rdma_ucm_create_id_resp resp{};
        if (ucma(c, ch, RDMA_USER_CM_CMD_CREATE_ID, cmd, &resp, sizeof(resp)) == 4)
          ids.push_back(resp.id);
        break;
      }
      case 2: bind_addr(c, ch, id, v4(rnd() % 2 ? ip : "0.0.0.0", rnd() % 4 ? port : 0)); break;
      case 3: resolve_addr(c, ch, id, v4(ip, port)); break;
      case 4: resolve_route(c, ch, id); break;
      case 5: listen(c, ch, id, static_cast<uint32_t>(rnd() % 3)); break;
      case 6: connect(c, ch, id, conn_param(rnd() % 2 ? 0x11 : 0x22)); break;
      case 7:
        if (auto ev = get_event(c, ch); ev && ev->event == kEvConnectRequest) ids.push_back(ev->id);
        break;
      case 8: {
        auto p = conn_param(rnd() % 2 ? 0x11 : 0x22);
        accept(c, ch, id, 1 + rnd() % 1000, rnd() % 2 ? &p : nullptr);
        break;
      }
      case 9: {
        rdma_ucm_reject rej{};
        rej.id = id;
        ucma(c, ch, RDMA_USER_CM_CMD_REJECT, rej);
        break;
      }
      case 10: disconnect(c, ch, id); break;
      case 11:
        if (destroy_id(c, ch, id) == 4) std::erase(ids, id);
        break;
      case 12: {
        ib_uverbs_qp_attr a;
        init_qp_attr(c, ch, id, static_cast<uint32_t>(rnd() % 5), &a);
        break;
      }
      default: query(c, ch, id, static_cast<uint32_t>(rnd() % 4), out, rnd() % sizeof(out)); break;
    }
    if (rnd() % 4 == 0) w.pump();
    if (rnd() % 128 == 0) w.advance();
  }
  const CmaCounters& ca = w.a->cma->counters();
  const CmaCounters& cb = w.b->cma->counters();
  EXPECT_GT(ca.ids_created + cb.ids_created, 100u);
  EXPECT_GT(ca.events_queued + cb.events_queued, 10u);
  w.a->cma->close_channel(1);
  w.b->cma->close_channel(2);
  EXPECT_EQ(w.a->cma->id_count(), 0u);
  EXPECT_EQ(w.b->cma->id_count(), 0u);
  w.pump();
  for (int i = 0; i < 1000 && w.advance(); ++i) {
  }
  EXPECT_EQ(w.a->ib->id_count(), 0u);
  EXPECT_EQ(w.b->ib->id_count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Seeds, CmaRandom,
                         ::testing::Values(0x9E3779B97F4A7C15ULL, 0x1234567ULL, 0xDEADBEEFCAFEULL));

}  // namespace
}  // namespace burst::cm::test
