/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IbCm under loss, duplicates, forgeries and floods (tests/cm/cm_pair.h):
// each CM MAD lost once in each direction, a duplicated REQ, forged REJ / DREQ,
// a stale connection, a REQ flood, retries running out, and random mutations
// of the rxe capture MADs.
#include <gtest/gtest.h>

#include <random>

#include "cm/ib_cm_impl.h"
#include "tests/cm/cm_fixture_mads.h"
#include "tests/cm/cm_pair.h"

namespace burst::cm::test {
namespace {

struct LossCase {
  const char* name;
  int from;       // 0: A (active side), 1: B
  CmAttr attr;
  int closer;     // the side that sends the DREQ
};

void PrintTo(const LossCase& c, std::ostream* os) { *os << c.name; }

class LostOnce : public ::testing::TestWithParam<LossCase> {};

TEST_P(LostOnce, ConnectionStillFormsAndCloses) {
  const LossCase& lc = GetParam();
  CmPair p;
  p.drop_first[{lc.from, static_cast<uint16_t>(lc.attr)}] = 1;
  CmHandle a = p.connect();
  p.settle(p.clock_ns + 120ull * 1000 * 1000 * 1000);  // retries run
  CmHandle b = p.b->handle_of(CmEventType::kReqReceived);
  ASSERT_NE(b, kNoCmHandle);
  EXPECT_EQ(p.b->count(CmEventType::kReqReceived), 1);
  EXPECT_EQ(p.a->count(CmEventType::kRepReceived), 1);
  EXPECT_EQ(p.b->count(CmEventType::kRtuReceived), 1);
  Side& closer = p.side(lc.closer);
  Side& other = p.side(1 - lc.closer);
  ASSERT_EQ(closer.cm.send_dreq(lc.closer == 0 ? a : b, nullptr, 0), 0);
  p.settle();
  EXPECT_EQ(other.count(CmEventType::kDreqReceived), 1);
  EXPECT_EQ(closer.count(CmEventType::kDrepReceived), 1);
  EXPECT_EQ(p.a->count(CmEventType::kTimewaitExit), 1);
  EXPECT_EQ(p.b->count(CmEventType::kTimewaitExit), 1);
  for (auto t : {CmEventType::kReqError, CmEventType::kRepError, CmEventType::kDreqError}) {
    EXPECT_EQ(p.a->count(t), 0);
    EXPECT_EQ(p.b->count(t), 0);
  }
  EXPECT_GE(p.a->cm.counters().retransmits + p.b->cm.counters().retransmits, 1u);
  p.a->cm.destroy_id(a);
  p.b->cm.destroy_id(b);
  EXPECT_EQ(p.a->cm.id_count(), 0u);
  EXPECT_EQ(p.b->cm.id_count(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    EachMad, LostOnce,
    ::testing::Values(LossCase{"Req", 0, CmAttr::kReq, 0}, LossCase{"Rep", 1, CmAttr::kRep, 0},
                      LossCase{"Rtu", 0, CmAttr::kRtu, 0},
                      LossCase{"DreqFromActive", 0, CmAttr::kDreq, 0},
                      LossCase{"DrepFromPassive", 1, CmAttr::kDrep, 0},
                      LossCase{"DreqFromPassive", 1, CmAttr::kDreq, 1},
                      LossCase{"DrepFromActive", 0, CmAttr::kDrep, 1}),
    [](const auto& tp) { return std::string(tp.param.name); });

TEST(IbCmFault, DuplicateReqMakesOneConnection) {
  CmPair p;
  p.dup_k.insert(0);  // the REQ arrives twice
  CmHandle a = p.connect();
  EXPECT_EQ(p.b->count(CmEventType::kReqReceived), 1);
  EXPECT_EQ(p.b->cm.counters().duplicate_req, 1u);
  EXPECT_EQ(p.b->cm.id_count(), 2u);  // the listen and one connection
  EXPECT_EQ(p.a->count(CmEventType::kRepReceived), 1);
  EXPECT_EQ(p.b->count(CmEventType::kRtuReceived), 1);
  EXPECT_EQ(p.sent_of(1, CmAttr::kRep), 2);  // the duplicate got the REP again
  EXPECT_EQ(p.sent_of(0, CmAttr::kRtu), 2);  // and its duplicate REP the RTU again
  p.a->cm.destroy_id(a);
}

TEST(IbCmFault, DuplicateReqBeforeTheAnswerGetsMra) {
  CmPair p;
  p.b->auto_answer = false;
  p.dup_k.insert(0);
  p.connect();
  EXPECT_EQ(p.b->count(CmEventType::kReqReceived), 1);
  EXPECT_EQ(p.sent_of(1, CmAttr::kMra), 1);
  EXPECT_EQ(p.a->count(CmEventType::kMraReceived), 1);
}

TEST(IbCmFault, ForgedRejAndDreqAreIgnored) {
  CmPair p;
  CmHandle a = p.connect();
  RepMsg rep;  // B's REP: the IDs of the connection
  for (const auto& s : p.sent)
    if (s.attr == static_cast<uint16_t>(CmAttr::kRep)) decode_rep(s.mad.bytes.data(), &rep);
  const uint32_t a_id = rep.remote_comm_id, b_id = rep.local_comm_id;
  auto inject = [&](Side& to, const Gid& from, auto encode) {
    Mad m;
    m.peer.gid = from;
    encode(m.bytes.data());
    to.cm.receive(m);
  };
  MadHeader h;
  h.attr_id = static_cast<uint16_t>(CmAttr::kRej);
  RejMsg rej;
  rej.reason = static_cast<uint16_t>(RejReason::kConsumerReject);
  rej.message_rejected = CmMsgKind::kOther;
  rej.local_comm_id = b_id + 1;  // wrong peer ID
  rej.remote_comm_id = a_id;
  inject(*p.a, p.b->gid, [&](uint8_t* b) { encode_rej(h, rej, b); });
  rej.local_comm_id = 0;  // "of the REQ", but this connection has no REQ pending
  rej.message_rejected = CmMsgKind::kReq;
  inject(*p.a, p.b->gid, [&](uint8_t* b) { encode_rej(h, rej, b); });
  rej.message_rejected = CmMsgKind::kOther;
  rej.local_comm_id = b_id;  // right IDs, wrong GID
  Gid evil = p.b->gid;
  evil[15] = 66;
  inject(*p.a, evil, [&](uint8_t* b) { encode_rej(h, rej, b); });
  h.attr_id = static_cast<uint16_t>(CmAttr::kDreq);
  DreqMsg dreq;
  dreq.local_comm_id = b_id;
  dreq.remote_comm_id = a_id ^ 0x5A5A;  // wrong local ID
  dreq.remote_qpn = p.a->qpn;
  inject(*p.a, p.b->gid, [&](uint8_t* b) { encode_dreq(h, dreq, b); });
  dreq.remote_comm_id = a_id;
  dreq.remote_qpn = 0x999;  // wrong QPN
  inject(*p.a, p.b->gid, [&](uint8_t* b) { encode_dreq(h, dreq, b); });
  EXPECT_EQ(p.a->cm.counters().dropped_no_match, 5u);
  EXPECT_EQ(p.a->count(CmEventType::kRejReceived), 0);
  EXPECT_EQ(p.a->count(CmEventType::kDreqReceived), 0);
  EXPECT_EQ(p.sent_of(0, CmAttr::kDrep), 0);  // no DREP for a forged DREQ
  // The connection is intact: it closes normally.
  ASSERT_EQ(p.a->cm.send_dreq(a, nullptr, 0), 0);
  p.settle();
  EXPECT_EQ(p.a->count(CmEventType::kDrepReceived), 1);
}

TEST(IbCmFault, LostRejIsSentAgainForTheRetransmittedReq) {
  CmPair p;
  p.drop_first[{1, static_cast<uint16_t>(CmAttr::kRej)}] = 1;
  p.b->on_event = [](Side& s, CmHandle h, const CmEvent& e) {
    if (e.type != CmEventType::kReqReceived) return;
    s.cm.send_rej(h, RejReason::kConsumerReject, nullptr, 0, nullptr, 0);
    s.cm.destroy_id(h);
  };
  CmHandle a = p.connect();
  p.settle();
  EXPECT_EQ(p.a->count(CmEventType::kRejReceived), 1);
  EXPECT_EQ(p.a->count(CmEventType::kReqError), 0);
  EXPECT_EQ(p.b->count(CmEventType::kReqReceived), 2);  // as the kernel: a new REQ to reject again
  EXPECT_EQ(p.b->cm.id_count(), 1u);
  p.a->cm.destroy_id(a);
}

TEST(IbCmFault, LostMraIsSentAgain) {
  CmPair p;
  CmHandle pending = kNoCmHandle;
  p.drop_first[{1, static_cast<uint16_t>(CmAttr::kMra)}] = 1;
  p.b->on_event = [&](Side& s, CmHandle h, const CmEvent& e) {
    if (e.type != CmEventType::kReqReceived) return;
    pending = h;
    s.cm.send_mra(h, 24, nullptr, 0);
  };
  CmHandle a = p.connect();
  EXPECT_EQ(p.a->count(CmEventType::kMraReceived), 0);
  p.settle(p.clock_ns + 10ull * 1000 * 1000 * 1000);  // the REQ's first retry
  EXPECT_EQ(p.a->count(CmEventType::kMraReceived), 1);
  EXPECT_EQ(p.sent_of(1, CmAttr::kMra), 2);
  p.b->on_event = nullptr;
  CmRepParams rep;
  rep.qpn = 0x22;
  ASSERT_EQ(p.b->cm.send_rep(pending, rep), 0);
  p.settle(p.clock_ns + 1);
  EXPECT_EQ(p.b->count(CmEventType::kRtuReceived), 1);
  p.a->cm.destroy_id(a);
}

TEST(IbCmFault, LostSidrRepIsAnsweredAgain) {
  CmPair p;
  CmHandle l = p.b->cm.create_id(0);
  p.b->cm.listen(l, kPsUdpService, 0);
  p.drop_first[{1, static_cast<uint16_t>(CmAttr::kSidrRep)}] = 1;
  CmHandle a = p.a->cm.create_id(0);
  CmSidrReqParams r;
  r.path.dgid = p.b->gid;
  r.service_id = kPsUdpService;
  ASSERT_EQ(p.a->cm.send_sidr_req(a, r), 0);
  p.settle();
  EXPECT_EQ(p.a->count(CmEventType::kSidrRepReceived), 1);
  EXPECT_EQ(p.a->count(CmEventType::kSidrReqError), 0);
  EXPECT_EQ(p.a->cm.counters().retransmits, 1u);
}

TEST(IbCmFault, DestroyWhileReqPendingTellsThePeer) {
  CmPair p;
  p.b->auto_answer = false;
  CmHandle a = p.connect();
  ASSERT_EQ(p.b->count(CmEventType::kReqReceived), 1);
  p.a->cm.destroy_id(a);  // REJ timeout, our CA GUID as ARI (cm_destroy_id)
  p.settle(p.clock_ns + 1);
  ASSERT_EQ(p.b->count(CmEventType::kRejReceived), 1);
  EXPECT_EQ(p.b->last(CmEventType::kRejReceived)->rej_reason, RejReason::kTimeout);
  EXPECT_EQ(p.b->last(CmEventType::kRejReceived)->ari_len, 8);
  EXPECT_EQ(p.a->cm.id_count(), 0u);
  EXPECT_EQ(p.a->cm.next_deadline(), UINT64_MAX);
}

TEST(IbCmFault, StaleConnectionRejected) {
  CmPair p;
  p.connect();
  // A second REQ from the same CA and QPN with a new comm ID: REJ stale connection.
  CmHandle a2 = p.a->cm.create_id(2);
  ASSERT_EQ(p.a->cm.send_req(a2, p.req_params(*p.a, *p.b)), 0);
  p.settle(p.clock_ns + 1);
  ASSERT_EQ(p.a->count(CmEventType::kRejReceived), 1);
  EXPECT_EQ(p.a->last(CmEventType::kRejReceived)->rej_reason, RejReason::kStaleConn);
  EXPECT_EQ(p.b->count(CmEventType::kReqReceived), 1);
}

TEST(IbCmFault, RetriesRunOut) {
  CmPair p;
  p.cut = true;
  CmHandle l = p.b->cm.create_id(0);
  p.b->cm.listen(l, kPsTcpService, 0);
  CmHandle a = p.a->cm.create_id(0);
  CmReqParams r = p.req_params(*p.a, *p.b);
  r.max_cm_retries = 3;
  ASSERT_EQ(p.a->cm.send_req(a, r), 0);
  p.settle();
  EXPECT_EQ(p.a->count(CmEventType::kReqError), 1);
  EXPECT_EQ(p.a->last(CmEventType::kReqError)->rej_reason, RejReason::kTimeout);
  EXPECT_EQ(p.sent_of(0, CmAttr::kReq), 4);  // 1 + max_cm_retries
  EXPECT_EQ(p.sent_of(0, CmAttr::kRej), 1);  // REJ timeout, as cm.c
  EXPECT_EQ(p.a->cm.counters().timeouts, 1u);
  // The passive side: RTU never arrives, REP_ERROR, back to idle.
  CmPair q;
  q.drop_first[{0, static_cast<uint16_t>(CmAttr::kRtu)}] = 1000;
  q.drop_first[{0, static_cast<uint16_t>(CmAttr::kRej)}] = 1000;
  q.connect();
  q.settle();
  EXPECT_EQ(q.b->count(CmEventType::kRepError), 1);
  EXPECT_EQ(q.sent_of(1, CmAttr::kRep), 16);  // 1 + the REQ's 15 retries
  p.a->cm.destroy_id(a);
  EXPECT_EQ(p.a->cm.id_count(), 0u);
}

TEST(IbCmFault, ReqFloodIsBounded) {
  CmPair p;
  p.b->auto_answer = false;
  p.cut = true;  // B's answers go nowhere
  CmHandle l = p.b->cm.create_id(0);
  p.b->cm.listen(l, kPsTcpService, 0);
  const size_t n = kMaxPassiveIds + 500;
  for (size_t i = 0; i < n; ++i) {
    ReqMsg r;
    r.local_comm_id = static_cast<uint32_t>(i + 1);
    r.service_id = kPsTcpService;
    r.local_ca_guid = 0xBAD;
    r.local_qpn = static_cast<uint32_t>(i + 100);
    r.path_mtu = 3;
    MadHeader h;
    h.attr_id = static_cast<uint16_t>(CmAttr::kReq);
    Mad m;
    m.peer.gid = p.a->gid;
    encode_req(h, r, m.bytes.data());
    p.b->cm.receive(m);
  }
  EXPECT_EQ(p.b->cm.id_count(), kMaxPassiveIds);
  EXPECT_EQ(p.b->count(CmEventType::kReqReceived), static_cast<int>(kMaxPassiveIds - 1));
  EXPECT_EQ(p.b->cm.counters().rej_sent_no_resources, n - (kMaxPassiveIds - 1));
  RejMsg rej;
  decode_rej(p.sent.back().mad.bytes.data(), &rej);
  EXPECT_EQ(rej.reason, static_cast<uint16_t>(RejReason::kNoResources));
  EXPECT_NE(p.b->cm.create_id(1), kNoCmHandle);  // local users still get ids
  for (const auto& [h, e] : p.b->events) p.b->cm.destroy_id(h);
  EXPECT_EQ(p.b->cm.id_count(), 2u);  // the listen and the id created above
}

TEST(IbCmFault, MutatedCaptureMadsAreCountedNeverFatal) {
  std::vector<Mad> seeds;
  for (const char* f : {"cm_rping_mtu1024.pcap", "cm_perftest_mtu1024.pcap", "cm_udaddy_mtu1024.pcap"})
    for (const auto& fm : fixture_mads(f)) seeds.push_back(fm.mad);
  ASSERT_EQ(seeds.size(), 17u);
  CmPair p;
  p.connect();  // something to match against, and listens on both services
  CmHandle l = p.b->cm.create_id(0);
  p.b->cm.listen(l, kPsUdpService, 0);
  std::mt19937 rng(15);
  const CmCounters before = p.b->cm.counters();
  const int kRounds = 20000;
  for (int i = 0; i < kRounds; ++i) {
    Mad m = seeds[rng() % seeds.size()];
    const int flips = 1 + rng() % 4;
    for (int f = 0; f < flips; ++f) {
      const size_t at = rng() % 2 ? rng() % 64 : rng() % kMadSize;  // headers more often
      m.bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8));
    }
    m.peer.gid = rng() % 2 ? p.a->gid : p.b->gid;
    p.b->cm.receive(m);
    p.deliver();
  }
  p.settle();
  const CmCounters& c = p.b->cm.counters();
  EXPECT_GE(c.mads_received - before.mads_received, static_cast<uint64_t>(kRounds));
  EXPECT_GT(c.dropped_bad_class + c.dropped_unknown_attr + c.dropped_bad_length, 0u);
  EXPECT_GT(c.dropped_no_match, 0u);
  EXPECT_LE(p.b->cm.id_count(), kMaxPassiveIds);
}

}  // namespace
}  // namespace burst::cm::test
