/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The CM MAD codec against the MADs Linux 6.1's CM sent (rping, perftest -R,
// udaddy between two rxe guests: tests/fixtures/rxe/README.md): every MAD
// decodes, its fields are what the tools used, and encoding the decoded struct
// gives the captured bytes back.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "cm/mad.h"
#include "tests/cm/cm_fixture_mads.h"

namespace burst::cm {
namespace {

const uint8_t kVm1Ip[4] = {10, 99, 0, 11};  // server
const uint8_t kVm2Ip[4] = {10, 99, 0, 12};  // client
constexpr uint64_t kVm1Guid = 0x505400fffe990001, kVm2Guid = 0x505400fffe990002;
constexpr uint64_t kPsTcp = 0x0000000001060000, kPsUdp = 0x0000000001110000;

// Decodes a MAD as its attribute and re-encodes it; returns the attribute.
CmAttr roundtrip(const Mad& mad) {
  const uint8_t* b = mad.bytes.data();
  MadHeader h;
  EXPECT_EQ(decode_header(b, &h), MadError::kOk);
  std::array<uint8_t, kMadSize> again{};
  auto attr = static_cast<CmAttr>(h.attr_id);
  switch (attr) {
    case CmAttr::kReq: { ReqMsg m; EXPECT_EQ(decode_req(b, &m), MadError::kOk); encode_req(h, m, again.data()); break; }
    case CmAttr::kRep: { RepMsg m; EXPECT_EQ(decode_rep(b, &m), MadError::kOk); encode_rep(h, m, again.data()); break; }
    case CmAttr::kRtu:
    case CmAttr::kDrep: { RtuMsg m; EXPECT_EQ(decode_rtu(b, &m), MadError::kOk); encode_rtu(h, m, again.data()); break; }
    case CmAttr::kDreq: { DreqMsg m; EXPECT_EQ(decode_dreq(b, &m), MadError::kOk); encode_dreq(h, m, again.data()); break; }
    case CmAttr::kSidrReq: { SidrReqMsg m; EXPECT_EQ(decode_sidr_req(b, &m), MadError::kOk); encode_sidr_req(h, m, again.data()); break; }
    case CmAttr::kSidrRep: { SidrRepMsg m; EXPECT_EQ(decode_sidr_rep(b, &m), MadError::kOk); encode_sidr_rep(h, m, again.data()); break; }
    default: ADD_FAILURE() << "unexpected attribute " << h.attr_id; return attr;
  }
  EXPECT_EQ(again, mad.bytes) << "attribute 0x" << std::hex << h.attr_id;
  return attr;
}

TEST(MadGolden, EveryCaptureMadRoundTrips) {
  std::map<CmAttr, int> seen;
  for (const char* file : {"cm_rping_mtu1024.pcap", "cm_perftest_mtu1024.pcap", "cm_udaddy_mtu1024.pcap"}) {
    auto mads = test::fixture_mads(file);
    ASSERT_FALSE(mads.empty()) << file;
    for (const auto& fm : mads) {
      EXPECT_EQ(fm.mad.peer.remote_qpn, kGsiQpn);
      ++seen[roundtrip(fm.mad)];
    }
  }
  EXPECT_EQ(seen[CmAttr::kReq], 3);
  EXPECT_EQ(seen[CmAttr::kRep], 3);
  EXPECT_EQ(seen[CmAttr::kRtu], 3);
  EXPECT_EQ(seen[CmAttr::kDreq], 3);
  EXPECT_EQ(seen[CmAttr::kDrep], 3);
  EXPECT_EQ(seen[CmAttr::kSidrReq], 1);
  EXPECT_EQ(seen[CmAttr::kSidrRep], 1);
}

TEST(MadGolden, RpingConnectionFields) {
  auto mads = test::fixture_mads("cm_rping_mtu1024.pcap");
  ASSERT_EQ(mads.size(), 5u);
  MadHeader h;
  ReqMsg req;
  ASSERT_EQ(decode_header(mads[0].mad.bytes.data(), &h), MadError::kOk);
  EXPECT_EQ(h.method, static_cast<uint8_t>(MadMethod::kSend));
  EXPECT_EQ(h.attr_id, static_cast<uint16_t>(CmAttr::kReq));
  ASSERT_EQ(decode_req(mads[0].mad.bytes.data(), &req), MadError::kOk);
  EXPECT_EQ(mads[0].mad.peer.gid, test::v4_gid(kVm2Ip));  // the client sends the REQ
  EXPECT_EQ(req.service_id, kPsTcp | 7174);               // rping's default port
  EXPECT_EQ(req.local_ca_guid, kVm2Guid);
  EXPECT_EQ(req.local_qpn, 0x11u);
  EXPECT_EQ(req.starting_psn, 0xbdf10eu);
  EXPECT_EQ(req.transport_type, 0);  // RC
  EXPECT_EQ(req.path_mtu, 3);        // IBV_MTU_1024
  EXPECT_EQ(req.remote_cm_response_timeout, 20);
  EXPECT_EQ(req.local_cm_response_timeout, 20);
  EXPECT_EQ(req.max_cm_retries, 15);
  EXPECT_EQ(req.retry_count, 7);
  EXPECT_EQ(req.rnr_retry_count, 7);
  EXPECT_EQ(req.pkey, 0xFFFF);
  EXPECT_EQ(req.primary.local_gid, test::v4_gid(kVm2Ip));
  EXPECT_EQ(req.primary.remote_gid, test::v4_gid(kVm1Ip));
  EXPECT_EQ(req.primary.local_lid, 0xFFFF);
  EXPECT_EQ(req.primary.hop_limit, 64);
  EXPECT_EQ(req.primary.local_ack_timeout, 19);  // cm_ack_timeout(rxe ack delay 15, packet life 18)
  EXPECT_FALSE(req.primary.subnet_local);
  EXPECT_FALSE(req.has_alternate);
  // The rdma_cm header in the private data: version 0, IPv4, the client's port and addresses.
  EXPECT_EQ(req.private_data[1], 0x40);
  EXPECT_EQ(std::memcmp(req.private_data.data() + 16, kVm2Ip, 4), 0);
  EXPECT_EQ(std::memcmp(req.private_data.data() + 32, kVm1Ip, 4), 0);
  // The TID: the MAD agent's high half, the local comm ID's bytes as the kernel stores them.
  EXPECT_EQ(h.tid & 0xFFFFFFFF, __builtin_bswap32(req.local_comm_id));

  RepMsg rep;
  ASSERT_EQ(decode_rep(mads[1].mad.bytes.data(), &rep), MadError::kOk);
  EXPECT_EQ(rep.remote_comm_id, req.local_comm_id);
  EXPECT_EQ(rep.local_qpn, 0x11u);
  EXPECT_EQ(rep.starting_psn, 0x219679u);
  EXPECT_EQ(rep.target_ack_delay, 15);
  EXPECT_EQ(rep.rnr_retry_count, 7);
  EXPECT_EQ(rep.local_ca_guid, kVm1Guid);
  EXPECT_EQ(rep.responder_resources, 1);
  EXPECT_EQ(rep.initiator_depth, 1);
  MadHeader rh;
  ASSERT_EQ(decode_header(mads[1].mad.bytes.data(), &rh), MadError::kOk);
  EXPECT_EQ(rh.tid, h.tid);  // the REP answers with the REQ's TID

  RtuMsg rtu;
  ASSERT_EQ(decode_rtu(mads[2].mad.bytes.data(), &rtu), MadError::kOk);
  EXPECT_EQ(rtu.local_comm_id, req.local_comm_id);
  EXPECT_EQ(rtu.remote_comm_id, rep.local_comm_id);
  DreqMsg dreq;
  ASSERT_EQ(decode_dreq(mads[3].mad.bytes.data(), &dreq), MadError::kOk);
  EXPECT_EQ(dreq.local_comm_id, req.local_comm_id);
  EXPECT_EQ(dreq.remote_comm_id, rep.local_comm_id);
  EXPECT_EQ(dreq.remote_qpn, 0x11u);
  DrepMsg drep;
  ASSERT_EQ(decode_rtu(mads[4].mad.bytes.data(), &drep), MadError::kOk);
  EXPECT_EQ(drep.local_comm_id, rep.local_comm_id);
  EXPECT_EQ(drep.remote_comm_id, req.local_comm_id);
}

TEST(MadGolden, PerftestTwoConnections) {
  auto mads = test::fixture_mads("cm_perftest_mtu1024.pcap");
  std::vector<ReqMsg> reqs;
  for (const auto& fm : mads) {
    MadHeader h;
    ASSERT_EQ(decode_header(fm.mad.bytes.data(), &h), MadError::kOk);
    if (h.attr_id != static_cast<uint16_t>(CmAttr::kReq)) continue;
    ReqMsg r;
    ASSERT_EQ(decode_req(fm.mad.bytes.data(), &r), MadError::kOk);
    reqs.push_back(r);
  }
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].service_id, kPsTcp | 18515);  // perftest's default port
  EXPECT_EQ(reqs[1].service_id, kPsTcp | 18515);
  EXPECT_EQ(reqs[1].local_qpn, 0x29u);             // logs/cm_perftest_mtu1024.log
  EXPECT_NE(reqs[0].local_comm_id, reqs[1].local_comm_id);
}

TEST(MadGolden, UdaddySidr) {
  auto mads = test::fixture_mads("cm_udaddy_mtu1024.pcap");
  ASSERT_EQ(mads.size(), 2u);
  SidrReqMsg sreq;
  SidrRepMsg srep;
  MadHeader h0, h1;
  ASSERT_EQ(decode_header(mads[0].mad.bytes.data(), &h0), MadError::kOk);
  ASSERT_EQ(decode_header(mads[1].mad.bytes.data(), &h1), MadError::kOk);
  ASSERT_EQ(decode_sidr_req(mads[0].mad.bytes.data(), &sreq), MadError::kOk);
  ASSERT_EQ(decode_sidr_rep(mads[1].mad.bytes.data(), &srep), MadError::kOk);
  EXPECT_EQ(sreq.service_id, kPsUdp | 7174);  // udaddy's default port
  EXPECT_EQ(sreq.pkey, 0xFFFF);
  EXPECT_EQ(srep.request_id, sreq.request_id);
  EXPECT_EQ(srep.service_id, sreq.service_id);
  EXPECT_EQ(srep.status, 0);
  EXPECT_EQ(srep.qkey, 0x01234567u);  // RDMA_UDP_QKEY
  EXPECT_EQ(srep.qpn, 0x27u);
  EXPECT_EQ(h1.tid, h0.tid);
  EXPECT_EQ(mads[1].mad.peer.gid, test::v4_gid(kVm1Ip));
}

TEST(MadCodec, RejectsWhatAPeerCanGetWrong) {
  auto mads = test::fixture_mads("cm_rping_mtu1024.pcap");
  ASSERT_FALSE(mads.empty());
  MadHeader h;
  auto b = mads[0].mad.bytes;
  b[0] = 2;
  EXPECT_EQ(decode_header(b.data(), &h), MadError::kBadBaseVersion);
  b = mads[0].mad.bytes;
  b[1] = 0x04;
  EXPECT_EQ(decode_header(b.data(), &h), MadError::kBadClass);
  b = mads[0].mad.bytes;
  b[2] = 1;
  EXPECT_EQ(decode_header(b.data(), &h), MadError::kBadClassVersion);
  b = mads[0].mad.bytes;
  b[3] = 0x01;  // GET of a REQ
  EXPECT_EQ(decode_header(b.data(), &h), MadError::kBadMethod);
  b = mads[0].mad.bytes;
  b[17] = 0x30;
  EXPECT_EQ(decode_header(b.data(), &h), MadError::kUnknownAttr);
  b = mads[0].mad.bytes;
  b[17] = 0x01;  // ClassPortInfo is known, as a GET
  b[3] = 0x01;
  EXPECT_EQ(decode_header(b.data(), &h), MadError::kOk);
  ReqMsg req;
  b = mads[0].mad.bytes;
  b[24 + 50] = (b[24 + 50] & 0x0F) | 0x60;  // MTU code 6: reserved
  EXPECT_EQ(decode_req(b.data(), &req), MadError::kBadField);
  RejMsg rej{};
  rej.reason = 8;
  rej.ari_length = 72;
  std::array<uint8_t, kMadSize> m{};
  MadHeader rh;
  rh.attr_id = static_cast<uint16_t>(CmAttr::kRej);
  encode_rej(rh, rej, m.data());
  EXPECT_EQ(decode_rej(m.data(), &rej), MadError::kOk);
  m[24 + 9] = 73 << 1;  // ARI length over 72
  EXPECT_EQ(decode_rej(m.data(), &rej), MadError::kBadField);
  m[24 + 9] = 0;
  m[24 + 8] = 0xC0;     // message rejected 3: reserved
  EXPECT_EQ(decode_rej(m.data(), &rej), MadError::kBadField);
}

}  // namespace
}  // namespace burst::cm
