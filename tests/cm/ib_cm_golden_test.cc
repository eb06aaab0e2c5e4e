/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IbCm's MADs against the kernel's: an IbCm plays one side of the rxe captures
// (rping: REQ/REP/RTU/DREQ/DREP; udaddy: SIDR_REQ/SIDR_REP) with the values the
// tools used, receives the other side's captured MADs, and what it sends must
// be the captured bytes — except our own communication ID and the TID built
// from it, which are random (as the kernel's).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "cm/mad.h"
#include "tests/cm/cm_fixture_mads.h"

namespace burst::cm {
namespace {

constexpr uint64_t kVm1Guid = 0x505400fffe990001, kVm2Guid = 0x505400fffe990002;

struct Host : IbCmHost {
  bool send_mad(const Mad& m) override {
    sent.push_back(m);
    return true;
  }
  void cm_event(CmHandle h, const CmEvent& e) override { events.emplace_back(h, e); }
  uint64_t now_ns() override { return 1000; }
  std::vector<Mad> sent;
  std::vector<std::pair<CmHandle, CmEvent>> events;
};

// Equal but for the bytes that carry our random ID: the TID (8..15) and one
// 4-byte ID field at `id_at` (-1: none).
void expect_kernel_bytes(const Mad& ours, const Mad& theirs, int id_at, const char* what) {
  for (size_t i = 0; i < kMadSize; ++i) {
    if (i >= 8 && i < 16) continue;
    if (id_at >= 0 && i >= static_cast<size_t>(id_at) && i < static_cast<size_t>(id_at) + 4) continue;
    EXPECT_EQ(ours.bytes[i], theirs.bytes[i]) << what << " byte " << i;
  }
}

uint32_t be32_at(const Mad& m, size_t at) {
  return (uint32_t{m.bytes[at]} << 24) | (m.bytes[at + 1] << 16) | (m.bytes[at + 2] << 8) | m.bytes[at + 3];
}
void put_be32(Mad* m, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) m->bytes[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
}

TEST(IbCmGolden, ActiveSideSendsRpingsReqRtuDreq) {
  auto cap = test::fixture_mads("cm_rping_mtu1024.pcap");  // REQ REP RTU DREQ DREP
  ASSERT_EQ(cap.size(), 5u);
  ReqMsg creq;
  ASSERT_EQ(decode_req(cap[0].mad.bytes.data(), &creq), MadError::kOk);
  Host host;
  IbCm cm(host, kVm2Guid, 7);
  CmHandle h = cm.create_id(1);
  CmReqParams p;
  p.path.sgid = creq.primary.local_gid;
  p.path.dgid = creq.primary.remote_gid;
  p.path.dmac = cap[1].mad.peer.mac;
  p.path.mtu = 3;
  p.path.packet_life_time = 18;  // rdma_cm's RoCE path (ACK timeout 19 on the wire)
  p.path.flow_label = creq.primary.flow_label;
  p.path.hop_limit = 64;
  p.service_id = creq.service_id;
  p.qpn = 0x11;
  p.starting_psn = 0xbdf10e;
  p.responder_resources = 1;
  p.initiator_depth = 1;
  p.flow_control = false;
  p.private_data_len = kReqPrivateData;
  p.private_data = creq.private_data;
  ASSERT_EQ(cm.send_req(h, p), 0);
  ASSERT_EQ(host.sent.size(), 1u);
  expect_kernel_bytes(host.sent[0], cap[0].mad, 24, "REQ");
  EXPECT_EQ(host.sent[0].peer.gid, cap[0].dst_gid);
  const uint32_t our_id = be32_at(host.sent[0], 24);

  Mad rep = cap[1].mad;  // the server's REP, addressed to our ID
  put_be32(&rep, 28, our_id);
  cm.receive(rep);
  ASSERT_EQ(host.events.size(), 1u);
  ASSERT_EQ(host.events[0].second.type, CmEventType::kRepReceived);
  EXPECT_EQ(host.events[0].second.rep.qpn, 0x11u);
  ASSERT_EQ(cm.send_rtu(h, nullptr, 0), 0);
  expect_kernel_bytes(host.sent[1], cap[2].mad, 24, "RTU");
  ASSERT_EQ(cm.send_dreq(h, nullptr, 0), 0);
  expect_kernel_bytes(host.sent[2], cap[3].mad, 24, "DREQ");
  MadHeader h_req, h_dreq;
  decode_header(host.sent[0].bytes.data(), &h_req);
  decode_header(host.sent[2].bytes.data(), &h_dreq);
  EXPECT_EQ(h_req.tid, h_dreq.tid);  // as the capture: the DREQ's TID is formed again, the same

  Mad drep = cap[4].mad;
  put_be32(&drep, 28, our_id);
  cm.receive(drep);
  EXPECT_EQ(host.events.back().second.type, CmEventType::kDrepReceived);
  EXPECT_EQ(cm.counters().dropped_no_match, 0u);
}

TEST(IbCmGolden, PassiveSideSendsRpingsRepAndDrep) {
  auto cap = test::fixture_mads("cm_rping_mtu1024.pcap");
  ASSERT_EQ(cap.size(), 5u);
  Host host;
  IbCm cm(host, kVm1Guid, 9);
  CmHandle l = cm.create_id(0);
  ASSERT_EQ(cm.listen(l, 0x0000000001061c06, 0), 0);
  cm.receive(cap[0].mad);
  ASSERT_EQ(host.events.size(), 1u);
  const auto [h, ev] = host.events[0];
  ASSERT_EQ(ev.type, CmEventType::kReqReceived);
  EXPECT_EQ(ev.req.path.packet_life_time, 18);
  EXPECT_EQ(ev.req.path.dgid, cap[0].mad.peer.gid);
  EXPECT_EQ(ev.req.path.dmac, cap[0].mad.peer.mac);
  CmRepParams rep;
  rep.qpn = 0x11;
  rep.starting_psn = 0x219679;
  rep.responder_resources = 1;
  rep.initiator_depth = 1;
  rep.target_ack_delay = 15;
  rep.flow_control = false;
  ASSERT_EQ(cm.send_rep(h, rep), 0);
  ASSERT_EQ(host.sent.size(), 1u);
  expect_kernel_bytes(host.sent[0], cap[1].mad, 24, "REP");
  EXPECT_EQ(std::memcmp(host.sent[0].bytes.data() + 8, cap[1].mad.bytes.data() + 8, 8), 0)
      << "the REP carries the REQ's TID";
  EXPECT_EQ(host.sent[0].peer.gid, cap[0].mad.peer.gid);
  EXPECT_EQ(host.sent[0].peer.mac, cap[0].mad.peer.mac);
  const uint32_t our_id = be32_at(host.sent[0], 24);

  Mad rtu = cap[2].mad;
  put_be32(&rtu, 28, our_id);
  cm.receive(rtu);
  EXPECT_EQ(host.events.back().second.type, CmEventType::kRtuReceived);
  Mad dreq = cap[3].mad;
  put_be32(&dreq, 28, our_id);
  cm.receive(dreq);
  ASSERT_EQ(host.events.back().second.type, CmEventType::kDreqReceived);
  ASSERT_EQ(cm.send_drep(h, nullptr, 0), 0);
  expect_kernel_bytes(host.sent[1], cap[4].mad, 24, "DREP");
  EXPECT_EQ(std::memcmp(host.sent[1].bytes.data() + 8, cap[4].mad.bytes.data() + 8, 8), 0)
      << "the DREP carries the DREQ's TID";
}

TEST(IbCmGolden, UdaddySidrBothSides) {
  auto cap = test::fixture_mads("cm_udaddy_mtu1024.pcap");  // SIDR_REQ SIDR_REP
  ASSERT_EQ(cap.size(), 2u);
  SidrReqMsg creq;
  ASSERT_EQ(decode_sidr_req(cap[0].mad.bytes.data(), &creq), MadError::kOk);
  // Passive: the captured SIDR_REQ in, the captured SIDR_REP out, byte for byte.
  Host server;
  IbCm scm(server, kVm1Guid, 3);
  CmHandle l = scm.create_id(0);
  ASSERT_EQ(scm.listen(l, creq.service_id, 0), 0);
  scm.receive(cap[0].mad);
  ASSERT_EQ(server.events.size(), 1u);
  ASSERT_EQ(server.events[0].second.type, CmEventType::kSidrReqReceived);
  CmSidrRepParams rep;
  rep.qpn = 0x27;
  rep.qkey = 0x01234567;
  ASSERT_EQ(scm.send_sidr_rep(server.events[0].first, rep), 0);
  ASSERT_EQ(server.sent.size(), 1u);
  EXPECT_EQ(server.sent[0].bytes, cap[1].mad.bytes);
  EXPECT_EQ(server.sent[0].peer.gid, cap[0].mad.peer.gid);
  // Active: our SIDR_REQ is the captured one but for the request ID (and TID).
  Host client;
  IbCm ccm(client, kVm2Guid, 4);
  CmHandle h = ccm.create_id(0);
  CmSidrReqParams p;
  p.path.dgid = cap[0].dst_gid;
  p.service_id = creq.service_id;
  p.private_data_len = kSidrReqPrivateData;
  p.private_data = creq.private_data;
  ASSERT_EQ(ccm.send_sidr_req(h, p), 0);
  expect_kernel_bytes(client.sent[0], cap[0].mad, 24, "SIDR_REQ");
  Mad srep = cap[1].mad;
  put_be32(&srep, 24, be32_at(client.sent[0], 24));
  ccm.receive(srep);
  ASSERT_EQ(client.events.size(), 1u);
  EXPECT_EQ(client.events[0].second.type, CmEventType::kSidrRepReceived);
  EXPECT_EQ(client.events[0].second.sidr_rep.qpn, 0x27u);
}

}  // namespace
}  // namespace burst::cm
