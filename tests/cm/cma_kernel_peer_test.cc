/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// A kernel rdma_cm peer, replayed: the MADs Linux rxe sent (the rping and
// udaddy captures) are fed to one side, and what the rdma_cm layer reports
// and answers is checked against the capture (the other end of the same
// exchange, as the kernel answered it).
#include "cm/mad.h"
#include "tests/cm/cm_fixture_mads.h"
#include "tests/cm/cma_harness.h"

namespace burst::cm::test {
namespace {

constexpr ChannelId kCh = 1;
constexpr ClientId kClient = 100;

uint16_t attr_of(const Mad& m) { return static_cast<uint16_t>(m.bytes[16] << 8 | m.bytes[17]); }

const FixtureMad* first_with_attr(const std::vector<FixtureMad>& mads, uint16_t attr) {
  for (const auto& m : mads)
    if (attr_of(m.mad) == attr) return &m;
  return nullptr;
}

const Mad* sent_with_attr(const Side& s, uint16_t attr) {
  for (const Mad& m : s.sent)
    if (attr_of(m) == attr) return &m;
  return nullptr;
}

class KernelPeerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    w.link_up = false;  // the kernel's MADs come from the capture
    w.a->cma->open_channel(kCh, kClient);
    w.a->qps[kClient][0x11] = 2;
    w.a->qps[kClient][0x27] = 4;
  }
  Cma& server() { return *w.a->cma; }
  void feed(const FixtureMad& f) {
    Mad m = f.mad;
    m.peer.sgid_index = 1;
    w.a->ib->receive(m);
  }
  World w;
};

// The kernel's REQ (rping client, 10.99.0.12 port 0xd357) to our rping server;
// our REP as the kernel's rping server answered (QPN 0x11, 1/1, ACK delay 15).
TEST_F(KernelPeerTest, RpingServerAnswersTheKernelsReq) {
  auto mads = fixture_mads("cm_rping_mtu1024.pcap");
  const FixtureMad* req = first_with_attr(mads, 0x0010);
  const FixtureMad* rep = first_with_attr(mads, 0x0013);
  if (!req || !rep) GTEST_SKIP() << "cm_rping_mtu1024.pcap not readable";
  uint32_t lid = create_id(server(), kCh, 0x1000);
  ASSERT_EQ(bind_addr(server(), kCh, lid, v4("10.99.0.11", 7174)), 0);
  ASSERT_EQ(listen(server(), kCh, lid), 0);
  feed(*req);
  auto ev = get_event(server(), kCh);
  ASSERT_TRUE(ev);
  ASSERT_EQ(ev->event, kEvConnectRequest);
  EXPECT_EQ(ev->param.conn.qp_num, 0x11u);
  EXPECT_EQ(ev->param.conn.responder_resources, 1);
  EXPECT_EQ(ev->param.conn.initiator_depth, 1);
  rdma_ucm_query_addr_resp addr{};
  ASSERT_GT(query(server(), kCh, ev->id, RDMA_USER_CM_QUERY_ADDR, &addr, sizeof(addr)), 0);
  auto* dst = reinterpret_cast<sockaddr_in*>(&addr.dst_addr);
  EXPECT_EQ(ntohs(dst->sin_port), 0xd357);
  EXPECT_EQ(ntohl(dst->sin_addr.s_addr), 0x0A63000Cu);
  ib_uverbs_qp_attr rtr, rts;
  ASSERT_GT(init_qp_attr(server(), kCh, ev->id, 2, &rtr), 0);
  ASSERT_GT(init_qp_attr(server(), kCh, ev->id, 3, &rts), 0);
  ReqMsg r;
  ASSERT_EQ(decode_req(req->mad.bytes.data(), &r), MadError::kOk);
  EXPECT_EQ(rts.sq_psn, r.starting_psn);  // we send from the PSN the REQ asked for
  EXPECT_EQ(rtr.ah_attr.grh.flow_label, r.primary.flow_label);
  EXPECT_EQ(rtr.path_mtu, r.path_mtu);
  EXPECT_EQ(rts.timeout, r.primary.local_ack_timeout);
  auto p = conn_param(0x11);
  ASSERT_EQ(accept(server(), kCh, ev->id, 0x3000, &p), 0);
  const Mad* ours = sent_with_attr(*w.a, 0x0013);
  ASSERT_TRUE(ours);
  RepMsg want, got;
  ASSERT_EQ(decode_rep(rep->mad.bytes.data(), &want), MadError::kOk);
  ASSERT_EQ(decode_rep(ours->bytes.data(), &got), MadError::kOk);
  EXPECT_EQ(got.remote_comm_id, r.local_comm_id);
  EXPECT_EQ(got.local_qpn, want.local_qpn);
  EXPECT_EQ(got.local_qkey, want.local_qkey);
  EXPECT_EQ(got.responder_resources, want.responder_resources);
  EXPECT_EQ(got.initiator_depth, want.initiator_depth);
  EXPECT_EQ(got.target_ack_delay, want.target_ack_delay);
  EXPECT_EQ(got.failover_accepted, want.failover_accepted);
  EXPECT_EQ(got.flow_control, want.flow_control);
  EXPECT_EQ(got.rnr_retry_count, want.rnr_retry_count);
  EXPECT_EQ(got.srq, want.srq);
  EXPECT_EQ(got.starting_psn, rtr.rq_psn);
  EXPECT_EQ(got.private_data, want.private_data);
}

// The kernel's SIDR_REQ (udaddy client) to our udaddy server: the SIDR_REP
// the kernel's server sent (QPN 0x27, Q_Key 0x01234567, status 0).
TEST_F(KernelPeerTest, UdaddyServerAnswersTheKernelsSidrReq) {
  auto mads = fixture_mads("cm_udaddy_mtu1024.pcap");
  const FixtureMad* req = first_with_attr(mads, 0x0017);
  const FixtureMad* rep = first_with_attr(mads, 0x0018);
  if (!req || !rep) GTEST_SKIP() << "cm_udaddy_mtu1024.pcap not readable";
  uint32_t lid = create_id(server(), kCh, 0x1000, RDMA_PS_UDP);
  ASSERT_EQ(bind_addr(server(), kCh, lid, v4("10.99.0.11", 7174)), 0);
  ASSERT_EQ(listen(server(), kCh, lid), 0);
  feed(*req);
  auto ev = get_event(server(), kCh);
  ASSERT_TRUE(ev);
  ASSERT_EQ(ev->event, kEvConnectRequest);
  auto p = conn_param(0x27);
  ASSERT_EQ(accept(server(), kCh, ev->id, 0x3000, &p), 0);
  const Mad* ours = sent_with_attr(*w.a, 0x0018);
  ASSERT_TRUE(ours);
  SidrRepMsg want, got;
  ASSERT_EQ(decode_sidr_rep(rep->mad.bytes.data(), &want), MadError::kOk);
  ASSERT_EQ(decode_sidr_rep(ours->bytes.data(), &got), MadError::kOk);
  EXPECT_EQ(got.request_id, want.request_id);
  EXPECT_EQ(got.status, want.status);
  EXPECT_EQ(got.qpn, want.qpn);
  EXPECT_EQ(got.qkey, want.qkey);
  EXPECT_EQ(got.service_id, want.service_id);
  EXPECT_EQ(got.private_data, want.private_data);
}

// Our rping client against the kernel's server: its REP (our comm ID put in)
// is CONNECT_RESPONSE, and our ACCEPT sends the RTU.
TEST_F(KernelPeerTest, RpingClientTakesTheKernelsRep) {
  auto mads = fixture_mads("cm_rping_mtu1024.pcap");
  const FixtureMad* rep = first_with_attr(mads, 0x0013);
  if (!rep) GTEST_SKIP() << "cm_rping_mtu1024.pcap not readable";
  Cma& client = server();  // side a plays the client here, at the capture's server address
  uint32_t cid = create_id(client, kCh, 0x2000);
  ASSERT_EQ(resolve_addr(client, kCh, cid, v4("10.99.0.12", 7174)), 0);
  ASSERT_EQ(resolve_route(client, kCh, cid), 0);
  while (get_event(client, kCh)) {
  }
  ASSERT_EQ(connect(client, kCh, cid, conn_param(0x11)), 0);
  const Mad* req = sent_with_attr(*w.a, 0x0010);
  ASSERT_TRUE(req);
  ReqMsg r;
  ASSERT_EQ(decode_req(req->bytes.data(), &r), MadError::kOk);
  MadHeader h;
  ASSERT_EQ(decode_header(rep->mad.bytes.data(), &h), MadError::kOk);
  ASSERT_EQ(decode_header(req->bytes.data(), &h), MadError::kOk);  // the REP answers our TID
  RepMsg m;
  ASSERT_EQ(decode_rep(rep->mad.bytes.data(), &m), MadError::kOk);
  m.remote_comm_id = r.local_comm_id;
  h.attr_id = 0x0013;
  h.method = 0x03;  // Send
  FixtureMad f = *rep;
  encode_rep(h, m, f.mad.bytes.data());
  f.mad.peer.gid = w.b->gid;  // from the address we connected to
  feed(f);
  auto ev = get_event(client, kCh);
  ASSERT_TRUE(ev);
  ASSERT_EQ(ev->event, kEvConnectResponse);
  EXPECT_EQ(ev->param.conn.qp_num, m.local_qpn);
  ib_uverbs_qp_attr rtr, rts;
  ASSERT_GT(init_qp_attr(client, kCh, cid, 2, &rtr), 0);
  ASSERT_GT(init_qp_attr(client, kCh, cid, 3, &rts), 0);
  EXPECT_EQ(rtr.dest_qp_num, m.local_qpn);
  EXPECT_EQ(rts.sq_psn, m.starting_psn);
  EXPECT_EQ(rtr.rq_psn, r.starting_psn);
  EXPECT_EQ(rts.timeout, 19);  // cm_ack_timeout(15, 18)
  ASSERT_EQ(accept(client, kCh, cid, 0, nullptr), 0);
  const Mad* rtu = sent_with_attr(*w.a, 0x0014);
  ASSERT_TRUE(rtu);
  RtuMsg u;
  ASSERT_EQ(decode_rtu(rtu->bytes.data(), &u), MadError::kOk);
  EXPECT_EQ(u.local_comm_id, r.local_comm_id);
  EXPECT_EQ(u.remote_comm_id, m.local_comm_id);
}

}  // namespace
}  // namespace burst::cm::test
