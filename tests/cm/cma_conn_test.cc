/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// RC connections between two Cma over two IbCm: the UCMA command sequences of
// rping (client and server, librdmacm 44 with AF_IB support as on a 6.1
// kernel), reject, a connect nobody listens for, lost MADs, and the ends of a
// connection (DISCONNECT, DESTROY_ID, close_channel).
#include <rdma/ib_user_sa.h>

#include "tests/cm/cma_harness.h"

namespace burst::cm::test {
namespace {

constexpr ChannelId kServerCh = 1, kClientCh = 2;
constexpr ClientId kServerClient = 100, kClientClient = 200;
constexpr uint32_t kClientQpn = 0x11, kServerQpn = 0x22;
constexpr uint32_t kInit = 1, kRtr = 2, kRts = 3;

class RcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w.a->cma->open_channel(kServerCh, kServerClient);
    w.b->cma->open_channel(kClientCh, kClientClient);
    w.a->qps[kServerClient][kServerQpn] = 2;
    w.b->qps[kClientClient][kClientQpn] = 2;
  }
  Cma& server() { return *w.a->cma; }
  Cma& client() { return *w.b->cma; }

  // rping server: bind, listen (BIND + QUERY ADDR/GID, LISTEN + QUERY ADDR).
  uint32_t listen_on(uint16_t port) {
    uint32_t id = create_id(server(), kServerCh, 0x1000);
    EXPECT_EQ(bind_addr(server(), kServerCh, id, v4("10.99.0.11", port)), 0);
    rdma_ucm_query_addr_resp addr{};
    EXPECT_EQ(query(server(), kServerCh, id, RDMA_USER_CM_QUERY_ADDR, &addr, sizeof(addr)),
              static_cast<int>(sizeof(addr)));
    EXPECT_EQ(addr.node_guid, w.a->guid);
    EXPECT_EQ(listen(server(), kServerCh, id, 3), 0);
    return id;
  }

  // rping client up to CONNECT: resolve addr and route with their queries.
  uint32_t resolve(uint16_t port) {
    uint32_t id = create_id(client(), kClientCh, 0x2000);
    EXPECT_EQ(resolve_addr(client(), kClientCh, id, v4("10.99.0.11", port)), 0);
    auto ev = get_event(client(), kClientCh);
    EXPECT_TRUE(ev && ev->event == kEvAddrResolved && ev->status == 0 && ev->uid == 0x2000);
    rdma_ucm_query_addr_resp addr{};
    EXPECT_EQ(query(client(), kClientCh, id, RDMA_USER_CM_QUERY_ADDR, &addr, sizeof(addr)),
              static_cast<int>(sizeof(addr)));
    auto* src = reinterpret_cast<sockaddr_in*>(&addr.src_addr);
    EXPECT_EQ(addr.src_size, sizeof(sockaddr_in));
    EXPECT_EQ(src->sin_addr.s_addr, w.b->ip.sin_addr.s_addr);
    EXPECT_GE(ntohs(src->sin_port), 32768);
    EXPECT_EQ(resolve_route(client(), kClientCh, id), 0);
    ev = get_event(client(), kClientCh);
    EXPECT_TRUE(ev && ev->event == kEvRouteResolved && ev->status == 0);
    ib_uverbs_qp_attr a;
    EXPECT_EQ(init_qp_attr(client(), kClientCh, id, kInit, &a), static_cast<int>(sizeof(a)));
    EXPECT_EQ(a.qp_access_flags, 0u);  // before CONNECT: cma_ib_init_qp_attr
    return id;
  }

  // Up to ESTABLISHED on both sides; returns {client id, server's new id}.
  std::pair<uint32_t, uint32_t> establish(uint16_t port) {
    listen_on(port);
    uint32_t cid = resolve(port);
    EXPECT_EQ(connect(client(), kClientCh, cid, conn_param(kClientQpn)), 0);
    w.pump();
    auto req = get_event(server(), kServerCh);
    EXPECT_TRUE(req && req->event == kEvConnectRequest);
    uint32_t sid = req ? req->id : 0;
    auto p = conn_param(kServerQpn);
    EXPECT_EQ(accept(server(), kServerCh, sid, 0x3000, &p), 0);
    w.pump();
    auto resp = get_event(client(), kClientCh);
    EXPECT_TRUE(resp && resp->event == kEvConnectResponse);
    EXPECT_EQ(accept(client(), kClientCh, cid, 0, nullptr), 0);
    w.pump();
    auto est = get_event(server(), kServerCh);
    EXPECT_TRUE(est && est->event == kEvEstablished && est->uid == 0x3000);
    return {cid, sid};
  }

  World w;
};

TEST_F(RcTest, RpingConnectRequestCarriesTheRequest) {
  uint32_t lid = listen_on(7174);
  uint32_t cid = resolve(7174);
  EXPECT_EQ(connect(client(), kClientCh, cid, conn_param(kClientQpn, "hello")), 0);
  EXPECT_TRUE(w.b->pending[kClientCh] == false);
  w.pump();
  EXPECT_TRUE(w.a->pending[kServerCh]);
  auto req = get_event(server(), kServerCh);
  ASSERT_TRUE(req);
  EXPECT_FALSE(w.a->pending[kServerCh]);
  EXPECT_EQ(req->event, kEvConnectRequest);
  EXPECT_EQ(req->uid, 0x1000u);  // the listener's context, a new id
  EXPECT_NE(req->id, lid);
  const rdma_ucm_conn_param& c = req->param.conn;
  EXPECT_EQ(c.qp_num, kClientQpn);
  EXPECT_EQ(c.private_data_len, 56);  // REQ private data without the cma_hdr
  EXPECT_EQ(std::memcmp(c.private_data, "hello", 5), 0);
  EXPECT_EQ(c.responder_resources, 1);
  EXPECT_EQ(c.initiator_depth, 1);
  EXPECT_EQ(c.retry_count, 7);
  EXPECT_EQ(c.rnr_retry_count, 7);

  // The new id's addresses come from the cma_hdr.
  rdma_ucm_query_addr_resp addr{};
  ASSERT_EQ(query(server(), kServerCh, req->id, RDMA_USER_CM_QUERY_ADDR, &addr, sizeof(addr)),
            static_cast<int>(sizeof(addr)));
  auto* src = reinterpret_cast<sockaddr_in*>(&addr.src_addr);
  auto* dst = reinterpret_cast<sockaddr_in*>(&addr.dst_addr);
  EXPECT_EQ(src->sin_addr.s_addr, w.a->ip.sin_addr.s_addr);
  EXPECT_EQ(ntohs(src->sin_port), 7174);
  EXPECT_EQ(dst->sin_addr.s_addr, w.b->ip.sin_addr.s_addr);
  EXPECT_GE(ntohs(dst->sin_port), 32768);

  // Its path is the REQ's (cma_ib_new_conn_id), seen from this side.
  alignas(8) uint8_t path[sizeof(rdma_ucm_query_path_resp) + 6 * sizeof(ib_path_rec_data)] = {};
  ASSERT_EQ(query(server(), kServerCh, req->id, RDMA_USER_CM_QUERY_PATH, path, sizeof(path)),
            static_cast<int>(sizeof(rdma_ucm_query_path_resp) + sizeof(ib_path_rec_data)));
  const uint8_t* rec = path + sizeof(rdma_ucm_query_path_resp) + 8;
  EXPECT_EQ(std::memcmp(rec + 8, w.b->gid.data(), 16), 0);   // DGID: the client
  EXPECT_EQ(std::memcmp(rec + 24, w.a->gid.data(), 16), 0);  // SGID: us
  EXPECT_EQ(rec[40], 0);                                     // not a resolved route
  EXPECT_EQ(rec[54] & 0x3F, 3);
  EXPECT_EQ(rec[56] & 0x3F, 18);  // the REQ's ACK timeout 19, less one
}

TEST_F(RcTest, RpingQpAttributesMatchAcrossTheConnection) {
  listen_on(7174);
  uint32_t cid = resolve(7174);
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(kClientQpn)), 0);
  w.pump();
  auto req = get_event(server(), kServerCh);
  ASSERT_TRUE(req);
  uint32_t sid = req->id;
  ib_uverbs_qp_attr s_init, s_rtr, s_rts, c_init, c_rtr, c_rts;
  ASSERT_EQ(init_qp_attr(server(), kServerCh, sid, kInit, &s_init), static_cast<int>(sizeof(s_init)));
  EXPECT_EQ(s_init.qp_access_flags, 2u | 4u | 8u);  // REMOTE_WRITE | READ | ATOMIC
  EXPECT_EQ(s_init.port_num, 1);
  ASSERT_GT(init_qp_attr(server(), kServerCh, sid, kRtr, &s_rtr), 0);
  ASSERT_GT(init_qp_attr(server(), kServerCh, sid, kRts, &s_rts), 0);
  EXPECT_EQ(s_rtr.dest_qp_num, kClientQpn);
  EXPECT_EQ(s_rtr.path_mtu, 3u);
  EXPECT_EQ(s_rtr.ah_attr.is_global, 1);
  EXPECT_EQ(std::memcmp(s_rtr.ah_attr.grh.dgid, w.b->gid.data(), 16), 0);
  EXPECT_EQ(s_rtr.ah_attr.grh.hop_limit, 64);
  EXPECT_EQ(s_rtr.ah_attr.grh.sgid_index, 1);
  EXPECT_EQ(s_rts.timeout, 19);  // CMA_IBOE_PACKET_LIFETIME 18 + 1, as rxe's REQ
  EXPECT_EQ(s_rts.retry_cnt, 7);
  EXPECT_EQ(s_rts.rnr_retry, 7);
  auto p = conn_param(kServerQpn);
  ASSERT_EQ(accept(server(), kServerCh, sid, 0x3000, &p), 0);
  w.pump();
  auto resp = get_event(client(), kClientCh);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->event, kEvConnectResponse);
  EXPECT_EQ(resp->param.conn.qp_num, kServerQpn);
  EXPECT_EQ(resp->param.conn.private_data_len, kRepPrivateData);
  ASSERT_GT(init_qp_attr(client(), kClientCh, cid, kInit, &c_init), 0);
  ASSERT_GT(init_qp_attr(client(), kClientCh, cid, kRtr, &c_rtr), 0);
  ASSERT_GT(init_qp_attr(client(), kClientCh, cid, kRts, &c_rts), 0);
  EXPECT_EQ(c_init.qp_access_flags, 2u | 4u | 8u);
  EXPECT_EQ(c_rtr.dest_qp_num, kServerQpn);
  // Each side receives from the PSN the other sends with.
  EXPECT_EQ(c_rtr.rq_psn, s_rts.sq_psn);
  EXPECT_EQ(s_rtr.rq_psn, c_rts.sq_psn);
  EXPECT_LT(c_rtr.rq_psn, 1u << 24);
  EXPECT_EQ(std::memcmp(c_rtr.ah_attr.grh.dgid, w.a->gid.data(), 16), 0);
  EXPECT_EQ(c_rtr.max_dest_rd_atomic, 1);
  EXPECT_EQ(c_rts.max_rd_atomic, 1);
  EXPECT_EQ(c_rts.timeout, 19);
  EXPECT_EQ(accept(client(), kClientCh, cid, 0, nullptr), 0);  // the RTU
  w.pump();
  auto est = get_event(server(), kServerCh);
  ASSERT_TRUE(est);
  EXPECT_EQ(est->event, kEvEstablished);
  EXPECT_EQ(est->id, sid);
  EXPECT_EQ(server().counters().connections_established, 1u);
  EXPECT_EQ(client().counters().connections_established, 1u);
}

TEST_F(RcTest, RpingDisconnectAndTimewait) {
  auto [cid, sid] = establish(7174);
  EXPECT_EQ(disconnect(client(), kClientCh, cid), 0);  // DREQ
  w.pump();
  auto ev = get_event(server(), kServerCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvDisconnected);
  EXPECT_EQ(disconnect(server(), kServerCh, sid), 0);  // DREP
  w.pump();
  ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvDisconnected);
  bool s_tw = false, c_tw = false;
  for (int i = 0; i < 100 && !(s_tw && c_tw) && w.advance(); ++i) {
    while (auto e = get_event(server(), kServerCh)) s_tw |= e->event == kEvTimewaitExit;
    while (auto e = get_event(client(), kClientCh)) c_tw |= e->event == kEvTimewaitExit;
  }
  EXPECT_TRUE(s_tw);
  EXPECT_TRUE(c_tw);
  uint32_t reported = 0;
  EXPECT_EQ(destroy_id(client(), kClientCh, cid, &reported), 4);
  EXPECT_EQ(reported, 5u);  // ADDR, ROUTE, CONNECT_RESPONSE, DISCONNECTED, TIMEWAIT_EXIT
  EXPECT_EQ(destroy_id(server(), kServerCh, sid, &reported), 4);
  EXPECT_EQ(reported, 3u);  // ESTABLISHED, DISCONNECTED, TIMEWAIT_EXIT
  w.a->cma->close_channel(kServerCh);
  EXPECT_EQ(server().id_count(), 0u);
  EXPECT_EQ(client().id_count(), 0u);
  while (w.advance()) {
  }
  EXPECT_EQ(w.a->ib->id_count(), 0u);
  EXPECT_EQ(w.b->ib->id_count(), 0u);
}

// Client and server on one burstd: one Cma holds both ends.
TEST_F(RcTest, BothEndsOnOneHost) {
  constexpr ChannelId kLocalCh = 5;
  server().open_channel(kLocalCh, kClientClient);
  w.a->qps[kClientClient][kClientQpn] = 2;
  listen_on(7174);
  uint32_t cid = create_id(server(), kLocalCh, 0x2000);
  ASSERT_EQ(resolve_addr(server(), kLocalCh, cid, v4("10.99.0.11", 7174)), 0);
  ASSERT_EQ(resolve_route(server(), kLocalCh, cid), 0);
  while (get_event(server(), kLocalCh)) {
  }
  ASSERT_EQ(connect(server(), kLocalCh, cid, conn_param(kClientQpn)), 0);
  w.pump();
  auto req = get_event(server(), kServerCh);
  ASSERT_TRUE(req);
  auto p = conn_param(kServerQpn);
  ASSERT_EQ(accept(server(), kServerCh, req->id, 0x3000, &p), 0);
  w.pump();
  auto resp = get_event(server(), kLocalCh);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->event, kEvConnectResponse);
  ASSERT_EQ(accept(server(), kLocalCh, cid, 0, nullptr), 0);
  w.pump();
  auto est = get_event(server(), kServerCh);
  ASSERT_TRUE(est);
  EXPECT_EQ(est->event, kEvEstablished);
  ASSERT_EQ(disconnect(server(), kLocalCh, cid), 0);
  w.pump();
  auto d = get_event(server(), kServerCh);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->event, kEvDisconnected);
  EXPECT_EQ(w.b->ib->counters().mads_received, 0u);  // nothing reached the other host
}

TEST_F(RcTest, RpingOverIpv6) {
  sockaddr_in6 listen_addr = w.a->ip6;
  listen_addr.sin6_port = htons(7174);
  uint32_t lid = create_id(server(), kServerCh, 0x1000);
  rdma_ucm_bind b{};
  b.id = lid;
  b.addr_size = sizeof(sockaddr_in6);
  std::memcpy(&b.addr, &listen_addr, sizeof(listen_addr));
  ASSERT_EQ(ucma(server(), kServerCh, RDMA_USER_CM_CMD_BIND, b), 0);
  ASSERT_EQ(listen(server(), kServerCh, lid), 0);
  uint32_t cid = create_id(client(), kClientCh, 0x2000);
  rdma_ucm_resolve_addr r{};
  r.id = cid;
  r.dst_size = sizeof(sockaddr_in6);
  std::memcpy(&r.dst_addr, &listen_addr, sizeof(listen_addr));
  ASSERT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_RESOLVE_ADDR, r), 0);
  ASSERT_EQ(resolve_route(client(), kClientCh, cid), 0);
  while (get_event(client(), kClientCh)) {
  }
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(kClientQpn)), 0);
  w.pump();
  auto req = get_event(server(), kServerCh);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->event, kEvConnectRequest);
  rdma_ucm_query_addr_resp addr{};
  ASSERT_GT(query(server(), kServerCh, req->id, RDMA_USER_CM_QUERY_ADDR, &addr, sizeof(addr)), 0);
  EXPECT_EQ(addr.src_size, sizeof(sockaddr_in6));
  auto* dst = reinterpret_cast<sockaddr_in6*>(&addr.dst_addr);
  EXPECT_EQ(dst->sin6_family, AF_INET6);
  EXPECT_EQ(std::memcmp(&dst->sin6_addr, &w.b->ip6.sin6_addr, 16), 0);
  ib_uverbs_qp_attr rtr;
  ASSERT_GT(init_qp_attr(server(), kServerCh, req->id, kRtr, &rtr), 0);
  EXPECT_EQ(rtr.ah_attr.grh.sgid_index, 2);
  EXPECT_EQ(std::memcmp(rtr.ah_attr.grh.dgid, w.b->gid6.data(), 16), 0);
  auto p = conn_param(kServerQpn);
  ASSERT_EQ(accept(server(), kServerCh, req->id, 0x3000, &p), 0);
  w.pump();
  auto resp = get_event(client(), kClientCh);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->event, kEvConnectResponse);
}

TEST_F(RcTest, RejectCarriesReasonAndPrivateData) {
  listen_on(7174);
  uint32_t cid = resolve(7174);
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(kClientQpn)), 0);
  w.pump();
  auto req = get_event(server(), kServerCh);
  ASSERT_TRUE(req);
  rdma_ucm_reject rej{};
  rej.id = req->id;
  rej.private_data_len = 4;
  std::memcpy(rej.private_data, "nope", 4);
  ASSERT_EQ(ucma(server(), kServerCh, RDMA_USER_CM_CMD_REJECT, rej), 0);
  w.pump();
  auto ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvRejected);
  EXPECT_EQ(ev->status, 28u);  // IB_CM_REJ_CONSUMER_DEFINED
  EXPECT_EQ(ev->param.conn.private_data_len, kRejPrivateData);
  EXPECT_EQ(std::memcmp(ev->param.conn.private_data, "nope", 4), 0);
  rej.reason = 3;  // only 28 and 35 may be asked for
  EXPECT_EQ(ucma(server(), kServerCh, RDMA_USER_CM_CMD_REJECT, rej), -EINVAL);
}

TEST_F(RcTest, ConnectToAPortNobodyListensOnIsRejectedWithReason8) {
  listen_on(7174);
  uint32_t cid = resolve(7175);
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(kClientQpn)), 0);
  w.pump();
  auto ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvRejected);
  EXPECT_EQ(ev->status, 8u);  // IB_CM_REJ_INVALID_SERVICE_ID
  EXPECT_FALSE(get_event(server(), kServerCh));
}

TEST_F(RcTest, LostRequestsEndUnreachable) {
  uint32_t cid = resolve(7174);
  w.link_up = false;
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(kClientQpn)), 0);
  std::optional<rdma_ucm_event_resp> ev;
  for (int i = 0; i < 100 && !ev && w.advance(); ++i) ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvUnreachable);
  EXPECT_EQ(static_cast<int32_t>(ev->status), -ETIMEDOUT);
  size_t reqs = 0;
  for (const Mad& m : w.b->sent) reqs += m.bytes[16] == 0x00 && m.bytes[17] == 0x10;
  EXPECT_EQ(reqs, 16u);  // the REQ and CMA_MAX_CM_RETRIES retries
}

TEST_F(RcTest, CloseChannelDisconnectsThePeer) {
  auto [cid, sid] = establish(7174);
  (void)sid;
  w.a->cma->close_channel(kServerCh);  // the server process died
  EXPECT_EQ(server().id_count(), 0u);
  w.pump();
  auto ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvDisconnected);
  EXPECT_EQ(ev->id, cid);
  EXPECT_EQ(disconnect(client(), kClientCh, cid), 0);  // DREP for the DREQ
  EXPECT_EQ(destroy_id(client(), kClientCh, cid), 4);
}

TEST_F(RcTest, CloseChannelRejectsQueuedRequests) {
  listen_on(7174);
  uint32_t cid = resolve(7174);
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(kClientQpn)), 0);
  w.pump();
  EXPECT_TRUE(w.a->pending[kServerCh]);
  w.a->cma->close_channel(kServerCh);  // CONNECT_REQUEST never read
  EXPECT_EQ(server().id_count(), 0u);
  w.pump();
  auto ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvRejected);
  EXPECT_EQ(ev->status, 28u);
}

TEST_F(RcTest, DestroyListenerWithUnreportedRequest) {
  uint32_t lid = listen_on(7174);
  uint32_t cid = resolve(7174);
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(kClientQpn)), 0);
  w.pump();
  EXPECT_EQ(server().id_count(), 2u);  // the listener and the request's new id
  uint32_t reported = 99;
  ASSERT_EQ(destroy_id(server(), kServerCh, lid, &reported), 4);
  EXPECT_EQ(reported, 0u);
  EXPECT_FALSE(w.a->pending[kServerCh]);
  EXPECT_FALSE(get_event(server(), kServerCh));
  EXPECT_EQ(server().id_count(), 0u);
  w.pump();
  auto ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvRejected);
}

TEST_F(RcTest, DestroyWithUnreportedEventsCountsOnlyReportedOnes) {
  uint32_t id = create_id(client(), kClientCh, 0x2000);
  ASSERT_EQ(resolve_addr(client(), kClientCh, id, v4("10.99.0.11", 7174)), 0);
  EXPECT_TRUE(w.b->pending[kClientCh]);
  uint32_t reported = 99;
  ASSERT_EQ(destroy_id(client(), kClientCh, id, &reported), 4);
  EXPECT_EQ(reported, 0u);
  EXPECT_FALSE(w.b->pending[kClientCh]);
  EXPECT_FALSE(get_event(client(), kClientCh));
}

// A full backlog (CONNECT_REQUESTs queued, not yet read) drops the next REQ
// without a REJ, as ucma's -ENOMEM and cm_destroy_id: the client hears nothing,
// its CM retries the REQ, and once the server has read an event the retry
// becomes a CONNECT_REQUEST.
TEST_F(RcTest, FullBacklogDropsTheRequestAndTheRetryIsServed) {
  constexpr uint32_t kSecondQpn = 0x13;
  w.b->qps[kClientClient][kSecondQpn] = 2;
  uint32_t lid = create_id(server(), kServerCh, 0x1000);
  ASSERT_EQ(bind_addr(server(), kServerCh, lid, v4("10.99.0.11", 7174)), 0);
  ASSERT_EQ(listen(server(), kServerCh, lid, 1), 0);
  uint32_t c1 = resolve(7174);
  ASSERT_EQ(connect(client(), kClientCh, c1, conn_param(kClientQpn)), 0);
  w.pump();
  uint32_t c2 = resolve(7174);
  ASSERT_EQ(connect(client(), kClientCh, c2, conn_param(kSecondQpn)), 0);
  w.pump();
  EXPECT_EQ(server().counters().requests_dropped_backlog, 1u);
  EXPECT_EQ(server().id_count(), 2u);  // the listener and the first request's id
  EXPECT_EQ(w.a->ib->counters().rej_sent_no_resources, 0u);
  EXPECT_FALSE(get_event(client(), kClientCh));  // no REJECTED
  size_t rejs = 0;
  for (const Mad& m : w.a->sent) rejs += m.bytes[16] == 0x00 && m.bytes[17] == 0x12;
  EXPECT_EQ(rejs, 0u);
  auto first = get_event(server(), kServerCh);  // the backlog has room again
  ASSERT_TRUE(first && first->event == kEvConnectRequest);
  std::optional<rdma_ucm_event_resp> second;
  for (int i = 0; i < 10 && !second && w.advance(); ++i) second = get_event(server(), kServerCh);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->event, kEvConnectRequest);
  EXPECT_NE(second->id, first->id);
  EXPECT_EQ(second->param.conn.qp_num, kSecondQpn);
  EXPECT_FALSE(get_event(client(), kClientCh));
  auto p = conn_param(kServerQpn);
  EXPECT_EQ(accept(server(), kServerCh, second->id, 0x3000, &p), 0);
  w.pump();
  auto resp = get_event(client(), kClientCh);
  ASSERT_TRUE(resp);
  EXPECT_EQ(resp->event, kEvConnectResponse);
  EXPECT_EQ(resp->id, c2);
}

// No route: RESOLVE_ADDR fails at once (rdma_resolve_ip); a neighbour that
// never answers: ADDR_ERROR with -ETIMEDOUT. Either way the id stays bound.
TEST_F(RcTest, UnreachableDestinations) {
  uint32_t id = create_id(client(), kClientCh, 0x2000);
  EXPECT_EQ(resolve_addr(client(), kClientCh, id, v4("10.99.0.99", 7174)), -EHOSTUNREACH);
  EXPECT_FALSE(get_event(client(), kClientCh));
  ASSERT_EQ(resolve_addr(client(), kClientCh, id, v4("10.99.0.98", 7174)), 0);
  auto ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvAddrError);
  EXPECT_EQ(static_cast<int32_t>(ev->status), -ETIMEDOUT);
  EXPECT_EQ(resolve_route(client(), kClientCh, id), -EINVAL);
  ASSERT_EQ(resolve_addr(client(), kClientCh, id, v4("10.99.0.11", 7174)), 0);  // again
  ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvAddrResolved);
}

}  // namespace
}  // namespace burst::cm::test
