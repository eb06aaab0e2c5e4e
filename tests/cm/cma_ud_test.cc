/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// UD ids over SIDR (udaddy's UCMA sequence), and the bytes the rdma_cm layer
// puts on the wire checked against the MADs Linux rxe sent
// (tests/fixtures/rxe/cm_rping_mtu1024.pcap, cm_udaddy_mtu1024.pcap).
#include "cm/mad.h"
#include "tests/cm/cm_fixture_mads.h"
#include "tests/cm/cma_harness.h"

namespace burst::cm::test {
namespace {

constexpr ChannelId kServerCh = 1, kClientCh = 2;
constexpr ClientId kServerClient = 100, kClientClient = 200;
constexpr uint8_t kQptRc = 2, kQptUd = 4;

class UdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w.a->cma->open_channel(kServerCh, kServerClient);
    w.b->cma->open_channel(kClientCh, kClientClient);
    w.a->qps[kServerClient][0x27] = kQptUd;
    w.b->qps[kClientClient][0x26] = kQptUd;
    w.b->qps[kClientClient][0x11] = kQptRc;
  }
  Cma& server() { return *w.a->cma; }
  Cma& client() { return *w.b->cma; }

  // The client bound to the port of the capture, resolved to the server.
  uint32_t client_at(uint16_t ps, uint16_t src_port, uint16_t dst_port) {
    uint32_t id = create_id(client(), kClientCh, 0x2000, ps);
    EXPECT_EQ(bind_addr(client(), kClientCh, id, v4("10.99.0.12", src_port)), 0);
    EXPECT_EQ(resolve_addr(client(), kClientCh, id, v4("10.99.0.11", dst_port)), 0);
    EXPECT_EQ(resolve_route(client(), kClientCh, id), 0);
    while (get_event(client(), kClientCh)) {
    }
    return id;
  }

  World w;
};

const FixtureMad* first_with_attr(const std::vector<FixtureMad>& mads, uint16_t attr) {
  for (const auto& m : mads)
    if ((m.mad.bytes[16] << 8 | m.mad.bytes[17]) == attr) return &m;
  return nullptr;
}

TEST_F(UdTest, UdaddySidrExchange) {
  uint32_t lid = create_id(server(), kServerCh, 0x1000, RDMA_PS_UDP);
  ASSERT_EQ(bind_addr(server(), kServerCh, lid, v4("10.99.0.11", 7174)), 0);
  ASSERT_EQ(listen(server(), kServerCh, lid), 0);
  uint32_t cid = client_at(RDMA_PS_UDP, 0, 7174);
  ib_uverbs_qp_attr a;
  ASSERT_GT(init_qp_attr(client(), kClientCh, cid, 1, &a), 0);
  EXPECT_EQ(a.qkey, 0x01234567u);  // RDMA_UDP_QKEY
  EXPECT_TRUE(a.qp_attr_mask & (1u << 6));
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(0x26, "ud")), 0);
  w.pump();
  auto req = get_event(server(), kServerCh);
  ASSERT_TRUE(req);
  EXPECT_EQ(req->event, kEvConnectRequest);
  EXPECT_EQ(req->param.ud.private_data_len, kSidrReqPrivateData - 36);
  EXPECT_EQ(std::memcmp(req->param.ud.private_data, "ud", 2), 0);
  ASSERT_GT(init_qp_attr(server(), kServerCh, req->id, 1, &a), 0);
  EXPECT_EQ(a.qkey, 0x01234567u);
  auto p = conn_param(0x27);
  ASSERT_EQ(accept(server(), kServerCh, req->id, 0x3000, &p), 0);
  w.pump();
  auto est = get_event(client(), kClientCh);
  ASSERT_TRUE(est);
  EXPECT_EQ(est->event, kEvEstablished);
  EXPECT_EQ(est->status, 0u);
  EXPECT_EQ(est->param.ud.qp_num, 0x27u);
  EXPECT_EQ(est->param.ud.qkey, 0x01234567u);
  EXPECT_EQ(est->param.ud.ah_attr.is_global, 1);
  EXPECT_EQ(est->param.ud.ah_attr.port_num, 1);
  EXPECT_EQ(est->param.ud.ah_attr.grh.sgid_index, 1);
  EXPECT_EQ(std::memcmp(est->param.ud.ah_attr.grh.dgid, w.a->gid.data(), 16), 0);
  EXPECT_FALSE(get_event(server(), kServerCh));  // UD accept: nothing more on the server
}

TEST_F(UdTest, SidrRejectIsUnreachable) {
  uint32_t lid = create_id(server(), kServerCh, 0x1000, RDMA_PS_UDP);
  ASSERT_EQ(bind_addr(server(), kServerCh, lid, v4("10.99.0.11", 7174)), 0);
  ASSERT_EQ(listen(server(), kServerCh, lid), 0);
  uint32_t cid = client_at(RDMA_PS_UDP, 0, 7174);
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(0x26)), 0);
  w.pump();
  auto req = get_event(server(), kServerCh);
  ASSERT_TRUE(req);
  rdma_ucm_reject rej{};
  rej.id = req->id;
  ASSERT_EQ(ucma(server(), kServerCh, RDMA_USER_CM_CMD_REJECT, rej), 0);
  w.pump();
  auto ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvUnreachable);
  EXPECT_EQ(ev->status, 2u);  // IB_SIDR_REJECT
}

TEST_F(UdTest, LostSidrRequestsEndUnreachable) {
  uint32_t cid = client_at(RDMA_PS_UDP, 0, 7174);
  w.link_up = false;
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(0x26)), 0);
  std::optional<rdma_ucm_event_resp> ev;
  for (int i = 0; i < 100 && !ev && w.advance(); ++i) ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvUnreachable);
  EXPECT_EQ(static_cast<int32_t>(ev->status), -ETIMEDOUT);
}

TEST_F(UdTest, NoUdListenerIsUnreachable) {
  uint32_t cid = client_at(RDMA_PS_UDP, 0, 7174);
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(0x26)), 0);
  w.pump();
  auto ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvUnreachable);
  EXPECT_NE(ev->status, 0u);  // the SIDR_REP's status (no listener)
}

TEST_F(UdTest, RcOverUdIdIsRefused) {
  uint32_t cid = client_at(RDMA_PS_UDP, 0, 7174);
  EXPECT_EQ(connect(client(), kClientCh, cid, conn_param(0x11)), -EINVAL);  // an RC QP
}

// mckey: a UD id resolved to a group address, joined, left.
TEST_F(UdTest, MckeyJoinAndLeave) {
  uint32_t id = create_id(client(), kClientCh, 0x2000, RDMA_PS_UDP);
  ASSERT_EQ(bind_addr(client(), kClientCh, id, v4("10.99.0.12", 0)), 0);
  ASSERT_EQ(resolve_addr(client(), kClientCh, id, v4("239.1.2.3", 0)), 0);
  auto ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, kEvAddrResolved);
  rdma_ucm_join_mcast j{};
  j.id = id;
  j.uid = 0x7777;
  j.addr_size = sizeof(sockaddr_in);
  sockaddr_in group = v4("239.1.2.3", 0);
  std::memcpy(&j.addr, &group, sizeof(group));
  rdma_ucm_create_id_resp jr{};
  ASSERT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_JOIN_MCAST, j, &jr, sizeof(jr)),
            static_cast<int>(sizeof(jr)));
  ev = get_event(client(), kClientCh);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->event, 12u);  // RDMA_CM_EVENT_MULTICAST_JOIN
  EXPECT_EQ(ev->uid, 0x7777u);
  EXPECT_EQ(ev->id, jr.id);
  EXPECT_EQ(ev->param.ud.qp_num, 0xFFFFFFu);
  EXPECT_EQ(ev->param.ud.qkey, 0x01234567u);
  const uint8_t mgid[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 239, 1, 2, 3};
  EXPECT_EQ(std::memcmp(ev->param.ud.ah_attr.grh.dgid, mgid, 16), 0);
  EXPECT_EQ(ev->param.ud.ah_attr.grh.sgid_index, 1);
  EXPECT_EQ(ev->param.ud.ah_attr.is_global, 1);
  rdma_ucm_join_ip_mcast ji{};
  ji.id = id;
  ji.uid = 0x8888;
  sockaddr_in6 g6{};
  g6.sin6_family = AF_INET6;
  g6.sin6_addr.s6_addr[0] = 0xFF;
  g6.sin6_addr.s6_addr[1] = 0x0E;
  std::memcpy(&ji.addr, &g6, sizeof(g6));
  EXPECT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_JOIN_IP_MCAST, ji, &jr, sizeof(jr)),
            -EOPNOTSUPP);  // RoCE v2: IPv4 groups only, as the kernel
  rdma_ucm_destroy_id leave{};
  leave.id = 0x12345;
  rdma_ucm_destroy_id_resp lr{};
  EXPECT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_LEAVE_MCAST, leave, &lr, sizeof(lr)), -ENOENT);
  leave.id = ev->id;
  EXPECT_EQ(ucma(server(), kServerCh, RDMA_USER_CM_CMD_LEAVE_MCAST, leave, &lr, sizeof(lr)),
            -ENOENT);  // another host's table
  ASSERT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_LEAVE_MCAST, leave, &lr, sizeof(lr)),
            static_cast<int>(sizeof(lr)));
  EXPECT_EQ(lr.events_reported, 1u);
  uint32_t rc = create_id(client(), kClientCh, 0x2001);
  ASSERT_EQ(bind_addr(client(), kClientCh, rc, v4("10.99.0.12", 0)), 0);
  j.id = rc;
  EXPECT_EQ(ucma(client(), kClientCh, RDMA_USER_CM_CMD_JOIN_MCAST, j, &jr, sizeof(jr)), -EINVAL);
  uint32_t reported = 0;
  ASSERT_EQ(destroy_id(client(), kClientCh, id, &reported), 4);
  EXPECT_EQ(reported, 2u);  // ADDR_RESOLVED and MULTICAST_JOIN
}

// The REQ of rping, as the capture's client: 10.99.0.12 port 0xd357 to
// 10.99.0.11:7174, QP 0x11, responder resources and initiator depth 1.
TEST_F(UdTest, ReqMatchesTheKernelsRpingReq) {
  auto mads = fixture_mads("cm_rping_mtu1024.pcap");
  const FixtureMad* golden = first_with_attr(mads, 0x0010);
  if (!golden) GTEST_SKIP() << "cm_rping_mtu1024.pcap not readable";
  ReqMsg want, got;
  ASSERT_EQ(decode_req(golden->mad.bytes.data(), &want), MadError::kOk);
  uint32_t cid = client_at(RDMA_PS_TCP, 0xd357, 7174);
  w.b->sent.clear();
  w.link_up = false;
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(0x11)), 0);
  ASSERT_FALSE(w.b->sent.empty());
  ASSERT_EQ(decode_req(w.b->sent[0].bytes.data(), &got), MadError::kOk);
  EXPECT_EQ(got.service_id, want.service_id);
  EXPECT_EQ(std::memcmp(got.private_data.data(), want.private_data.data(), kReqPrivateData), 0)
      << "the cma_hdr (and zeroed user data) differ";
  EXPECT_EQ(got.local_qpn, want.local_qpn);
  EXPECT_EQ(got.responder_resources, want.responder_resources);
  EXPECT_EQ(got.initiator_depth, want.initiator_depth);
  EXPECT_EQ(got.remote_cm_response_timeout, want.remote_cm_response_timeout);
  EXPECT_EQ(got.local_cm_response_timeout, want.local_cm_response_timeout);
  EXPECT_EQ(got.max_cm_retries, want.max_cm_retries);
  EXPECT_EQ(got.retry_count, want.retry_count);
  EXPECT_EQ(got.rnr_retry_count, want.rnr_retry_count);
  EXPECT_EQ(got.flow_control, want.flow_control);
  EXPECT_EQ(got.transport_type, want.transport_type);
  EXPECT_EQ(got.path_mtu, want.path_mtu);
  EXPECT_EQ(got.pkey, want.pkey);
  EXPECT_EQ(got.primary.local_gid, want.primary.local_gid);
  EXPECT_EQ(got.primary.remote_gid, want.primary.remote_gid);
  EXPECT_EQ(got.primary.flow_label, want.primary.flow_label);  // the ports' hash
  EXPECT_EQ(got.primary.traffic_class, want.primary.traffic_class);
  EXPECT_EQ(got.primary.hop_limit, want.primary.hop_limit);
  EXPECT_EQ(got.primary.local_ack_timeout, want.primary.local_ack_timeout);
  EXPECT_EQ(got.primary.packet_rate, want.primary.packet_rate);
  EXPECT_LT(got.starting_psn, 1u << 24);
}

TEST_F(UdTest, SidrReqMatchesTheKernelsUdaddySidrReq) {
  auto mads = fixture_mads("cm_udaddy_mtu1024.pcap");
  const FixtureMad* golden = first_with_attr(mads, 0x0017);
  if (!golden) GTEST_SKIP() << "cm_udaddy_mtu1024.pcap not readable";
  SidrReqMsg want, got;
  ASSERT_EQ(decode_sidr_req(golden->mad.bytes.data(), &want), MadError::kOk);
  uint32_t cid = client_at(RDMA_PS_UDP, 0xc43b, 7174);
  w.b->sent.clear();
  w.link_up = false;
  ASSERT_EQ(connect(client(), kClientCh, cid, conn_param(0x26)), 0);
  ASSERT_FALSE(w.b->sent.empty());
  ASSERT_EQ(decode_sidr_req(w.b->sent[0].bytes.data(), &got), MadError::kOk);
  EXPECT_EQ(got.service_id, want.service_id);
  EXPECT_EQ(got.pkey, want.pkey);
  EXPECT_EQ(std::memcmp(got.private_data.data(), want.private_data.data(), kSidrReqPrivateData),
            0);
}

}  // namespace
}  // namespace burst::cm::test
