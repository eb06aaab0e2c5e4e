/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IbCm between two instances over the in-memory link (tests/cm/cm_pair.h):
// the RC handshake and disconnect, REJ, DREQ crossing, timewait, SIDR, MRA.
// Time is the pair's fake clock: no test depends on how fast it runs.
#include <gtest/gtest.h>

#include <set>

#include "cm/ib_cm_impl.h"
#include "tests/cm/cm_pair.h"

namespace burst::cm::test {
namespace {

TEST(IbCm, HandshakeAndDisconnect) {
  CmPair p;
  CmHandle a = p.connect();
  ASSERT_EQ(p.b->count(CmEventType::kReqReceived), 1);
  const CmEvent& req = *p.b->last(CmEventType::kReqReceived);
  EXPECT_EQ(req.context, 0xB0u);
  EXPECT_EQ(req.listen_handle, p.listen_b);
  EXPECT_EQ(req.req.service_id, kPsTcpService);
  EXPECT_EQ(req.req.qpn, 0x11u);
  EXPECT_EQ(req.req.starting_psn, 0xbdf10eu);
  EXPECT_EQ(req.req.path.dgid, p.a->gid);
  EXPECT_EQ(req.req.path.sgid, p.b->gid);
  EXPECT_EQ(req.req.path.dmac, p.a->mac);
  EXPECT_EQ(req.req.path.sgid_index, 1);
  EXPECT_EQ(req.req.path.mtu, 3);
  EXPECT_EQ(req.req.path.packet_life_time, 18);
  EXPECT_EQ(req.req.path.flow_label, 0x9b38fu);
  EXPECT_EQ(req.req.private_data[1], 0x40);
  ASSERT_EQ(p.a->count(CmEventType::kRepReceived), 1);
  EXPECT_EQ(p.a->last(CmEventType::kRepReceived)->rep.qpn, 0x22u);
  EXPECT_EQ(p.a->last(CmEventType::kRepReceived)->context, 0xA0u);
  EXPECT_EQ(p.b->count(CmEventType::kRtuReceived), 1);

  // The MADs carry the kernel's TIDs: the REP and RTU reuse the REQ's.
  MadHeader hreq, hrep, hrtu;
  decode_header(p.sent[0].mad.bytes.data(), &hreq);
  decode_header(p.sent[1].mad.bytes.data(), &hrep);
  decode_header(p.sent[2].mad.bytes.data(), &hrtu);
  EXPECT_EQ(hreq.tid, hrep.tid);
  EXPECT_EQ(hreq.tid, hrtu.tid);
  EXPECT_EQ(p.sent[0].mad.peer.gid, p.b->gid);
  EXPECT_EQ(p.sent[0].mad.peer.mac, p.b->mac);
  EXPECT_EQ(p.sent[1].mad.peer.gid, p.a->gid);

  ASSERT_EQ(p.a->cm.send_dreq(a, nullptr, 0), 0);
  p.settle();
  EXPECT_EQ(p.b->count(CmEventType::kDreqReceived), 1);
  EXPECT_EQ(p.a->count(CmEventType::kDrepReceived), 1);
  EXPECT_EQ(p.a->count(CmEventType::kTimewaitExit), 1);
  EXPECT_EQ(p.b->count(CmEventType::kTimewaitExit), 1);
  EXPECT_EQ(p.a->cm.counters().retransmits + p.b->cm.counters().retransmits, 0u);
  p.a->cm.destroy_id(a);
  p.b->cm.destroy_id(p.b->handle_of(CmEventType::kReqReceived));
  EXPECT_EQ(p.a->cm.id_count(), 0u);
  EXPECT_EQ(p.b->cm.id_count(), 1u);  // the listen
  EXPECT_EQ(p.a->cm.next_deadline(), UINT64_MAX);
}

TEST(IbCm, ApiRefusesBadStates) {
  CmPair p;
  CmHandle h = p.a->cm.create_id(1);
  EXPECT_NE(h, kNoCmHandle);
  EXPECT_EQ(p.a->cm.send_rtu(h, nullptr, 0), EINVAL);
  EXPECT_EQ(p.a->cm.send_dreq(h, nullptr, 0), EINVAL);
  EXPECT_EQ(p.a->cm.send_rep(h, CmRepParams{}), EINVAL);
  EXPECT_EQ(p.a->cm.establish(h), EINVAL);
  EXPECT_EQ(p.a->cm.listen(h, kPsTcpService, 0), 0);
  CmHandle h2 = p.a->cm.create_id(2);
  EXPECT_EQ(p.a->cm.listen(h2, kPsTcpService, 0), EBUSY);
  EXPECT_EQ(p.a->cm.listen(h2, 0x0000000001060000, 0xFFFFFFFFFFFF0000), EBUSY);  // covers it
  EXPECT_EQ(p.a->cm.listen(h2, kPsUdpService, 0), 0);
  EXPECT_EQ(p.a->cm.send_rej(999, RejReason::kConsumerReject, nullptr, 0, nullptr, 0), EINVAL);
  p.a->cm.destroy_id(h);
  p.a->cm.destroy_id(h2);
  EXPECT_EQ(p.a->cm.id_count(), 0u);
}

TEST(IbCm, RejectNoListener) {
  CmPair p;
  CmHandle h = p.a->cm.create_id(1);
  ASSERT_EQ(p.a->cm.send_req(h, p.req_params(*p.a, *p.b)), 0);
  p.settle(p.clock_ns + 1);
  ASSERT_EQ(p.a->count(CmEventType::kRejReceived), 1);
  EXPECT_EQ(p.a->last(CmEventType::kRejReceived)->rej_reason, RejReason::kInvalidServiceId);
  EXPECT_EQ(p.b->cm.counters().rej_sent_no_listener, 1u);
  EXPECT_EQ(p.b->cm.id_count(), 0u);
  EXPECT_EQ(p.a->cm.next_deadline(), UINT64_MAX);  // no retry left running
  p.a->cm.destroy_id(h);
  EXPECT_EQ(p.a->cm.id_count(), 0u);
}

TEST(IbCm, RejectByUser) {
  CmPair p;
  p.b->on_event = [](Side& s, CmHandle h, const CmEvent& e) {
    if (e.type != CmEventType::kReqReceived) return;
    const uint8_t why[3] = {'n', 'o', '!'};
    s.cm.send_rej(h, RejReason::kConsumerReject, nullptr, 0, why, sizeof(why));
    s.cm.destroy_id(h);
  };
  CmHandle a = p.connect();
  ASSERT_EQ(p.a->count(CmEventType::kRejReceived), 1);
  const CmEvent& rej = *p.a->last(CmEventType::kRejReceived);
  EXPECT_EQ(rej.rej_reason, RejReason::kConsumerReject);
  EXPECT_EQ(rej.private_data_len, kRejPrivateData);
  EXPECT_EQ(rej.private_data[0], 'n');
  EXPECT_EQ(p.b->cm.id_count(), 1u);
  p.settle();
  EXPECT_EQ(p.a->count(CmEventType::kReqError), 0);
  p.a->cm.destroy_id(a);
  EXPECT_EQ(p.a->cm.id_count(), 0u);
}

TEST(IbCm, ActiveSideRejectsTheRep) {
  CmPair p;
  p.a->on_event = [](Side& s, CmHandle h, const CmEvent& e) {
    if (e.type == CmEventType::kRepReceived)
      s.cm.send_rej(h, RejReason::kConsumerReject, nullptr, 0, nullptr, 0);
  };
  CmHandle a = p.connect();
  CmHandle b = p.b->handle_of(CmEventType::kReqReceived);
  RejMsg rej;
  decode_rej(p.sent.back().mad.bytes.data(), &rej);
  EXPECT_EQ(rej.message_rejected, CmMsgKind::kRep);
  ASSERT_EQ(p.b->count(CmEventType::kRejReceived), 1);  // REJ the other way
  EXPECT_EQ(p.b->count(CmEventType::kRtuReceived), 0);
  p.settle();
  EXPECT_EQ(p.b->count(CmEventType::kRepError), 0);  // no REP retries after the REJ
  EXPECT_EQ(p.a->count(CmEventType::kTimewaitExit), 0);  // REP_RCVD -> REJ: idle (cm_send_rej_locked)
  EXPECT_EQ(p.a->cm.next_deadline(), UINT64_MAX);
  EXPECT_EQ(p.b->cm.next_deadline(), UINT64_MAX);
  p.a->cm.destroy_id(a);
  p.b->cm.destroy_id(b);
  EXPECT_EQ(p.a->cm.id_count(), 0u);
  EXPECT_EQ(p.b->cm.id_count(), 1u);
}

TEST(IbCm, CommIdsOfATimewaitAreNotReused) {
  CmPair p;
  CmHandle a = p.connect();
  ReqMsg first;
  decode_req(p.sent[0].mad.bytes.data(), &first);
  ASSERT_EQ(p.a->cm.send_dreq(a, nullptr, 0), 0);
  p.settle(p.clock_ns + 1);
  p.a->cm.destroy_id(a);  // in timewait
  ASSERT_EQ(p.a->cm.id_count(), 1u);
  p.cut = true;
  std::set<uint32_t> ids{first.local_comm_id};
  for (int i = 0; i < 200; ++i) {
    CmHandle h = p.a->cm.create_id(0);
    ASSERT_NE(h, kNoCmHandle);
    ASSERT_EQ(p.a->cm.send_req(h, p.req_params(*p.a, *p.b)), 0);
    ReqMsg r;
    decode_req(p.sent.back().mad.bytes.data(), &r);
    EXPECT_NE(r.local_comm_id, 0u);
    EXPECT_TRUE(ids.insert(r.local_comm_id).second) << "comm ID reused: " << r.local_comm_id;
    p.a->cm.destroy_id(h);  // REJ timeout goes out, the ID is free again
  }
  // Another seed gives other IDs (they are random, as the kernel's).
  CmPair q;
  CmHandle h = q.a->cm.create_id(0);
  IbCm other(*q.a, 0x1, 0x9999);
  CmHandle h2 = other.create_id(0);
  q.a->cm.send_req(h, q.req_params(*q.a, *q.b));
  other.send_req(h2, q.req_params(*q.a, *q.b));
  ReqMsg r1, r2;
  decode_req(q.sent[0].mad.bytes.data(), &r1);
  decode_req(q.sent[1].mad.bytes.data(), &r2);
  EXPECT_NE(r1.local_comm_id, r2.local_comm_id);
}

TEST(IbCm, DreqCrossingDreq) {
  CmPair p;
  CmHandle a = p.connect();
  CmHandle b = p.b->handle_of(CmEventType::kReqReceived);
  ASSERT_EQ(p.b->count(CmEventType::kRtuReceived), 1);
  ASSERT_EQ(p.a->cm.send_dreq(a, nullptr, 0), 0);
  ASSERT_EQ(p.b->cm.send_dreq(b, nullptr, 0), 0);  // before A's arrives
  p.settle();
  EXPECT_EQ(p.a->count(CmEventType::kDreqReceived), 1);
  EXPECT_EQ(p.b->count(CmEventType::kDreqReceived), 1);
  EXPECT_EQ(p.a->count(CmEventType::kDreqError), 0);
  EXPECT_EQ(p.b->count(CmEventType::kDreqError), 0);
  EXPECT_EQ(p.a->count(CmEventType::kTimewaitExit), 1);
  EXPECT_EQ(p.b->count(CmEventType::kTimewaitExit), 1);
  p.a->cm.destroy_id(a);
  p.b->cm.destroy_id(b);
  EXPECT_EQ(p.a->cm.id_count(), 0u);
  EXPECT_EQ(p.b->cm.id_count(), 1u);
}

TEST(IbCm, TimewaitOutlivesDestroyAndAnswersDreq) {
  CmPair p;
  CmHandle a = p.connect();
  ASSERT_EQ(p.a->cm.send_dreq(a, nullptr, 0), 0);
  p.settle(p.clock_ns + 1);
  CmHandle b = p.b->handle_of(CmEventType::kReqReceived);
  ASSERT_EQ(p.a->count(CmEventType::kDrepReceived), 1);
  p.a->cm.destroy_id(a);  // in timewait: its IDs stay taken until it ends
  EXPECT_EQ(p.a->cm.id_count(), 1u);
  EXPECT_NE(p.a->cm.next_deadline(), UINT64_MAX);
  // A DREQ for it (B's own, as if our DREP had been lost) still gets a DREP.
  MadHeader h;
  decode_header(p.sent.back().mad.bytes.data(), &h);
  ASSERT_EQ(h.attr_id, static_cast<uint16_t>(CmAttr::kDrep));
  Mad dreq = p.sent[p.sent.size() - 2].mad;  // A's DREQ, seen from A: turn it around
  DreqMsg d;
  decode_dreq(dreq.bytes.data(), &d);
  std::swap(d.local_comm_id, d.remote_comm_id);
  d.remote_qpn = p.a->qpn;
  MadHeader dh;
  dh.attr_id = static_cast<uint16_t>(CmAttr::kDreq);
  Mad m;
  m.peer.gid = p.b->gid;
  encode_dreq(dh, d, m.bytes.data());
  const int dreps = p.sent_of(0, CmAttr::kDrep);
  p.a->cm.receive(m);
  EXPECT_EQ(p.sent_of(0, CmAttr::kDrep), dreps + 1);
  EXPECT_EQ(p.a->count(CmEventType::kDreqReceived), 0);  // no event: the id is gone
  p.settle();
  EXPECT_EQ(p.a->cm.id_count(), 0u);
  EXPECT_EQ(p.a->count(CmEventType::kTimewaitExit), 0);
  p.b->cm.destroy_id(b);
}

TEST(IbCm, SidrRequestReply) {
  CmPair p;
  CmHandle l = p.b->cm.create_id(0xB1);
  ASSERT_EQ(p.b->cm.listen(l, kPsUdpService, 0), 0);
  CmHandle a = p.a->cm.create_id(0xA1);
  CmSidrReqParams r;
  r.path.sgid = p.a->gid;
  r.path.dgid = p.b->gid;
  r.path.dmac = p.b->mac;
  r.path.packet_life_time = 18;
  r.service_id = kPsUdpService;
  r.private_data_len = 8;
  r.private_data[1] = 0x40;
  ASSERT_EQ(p.a->cm.send_sidr_req(a, r), 0);
  p.settle(p.clock_ns + 1);
  ASSERT_EQ(p.b->count(CmEventType::kSidrReqReceived), 1);
  const CmEvent& q = *p.b->last(CmEventType::kSidrReqReceived);
  EXPECT_EQ(q.sidr_req.service_id, kPsUdpService);
  EXPECT_EQ(q.sidr_req.path.dgid, p.a->gid);
  EXPECT_EQ(q.sidr_req.path.dmac, p.a->mac);
  EXPECT_EQ(q.sidr_req.private_data[1], 0x40);
  EXPECT_EQ(q.listen_handle, l);
  ASSERT_EQ(p.a->count(CmEventType::kSidrRepReceived), 1);
  const CmEvent& rep = *p.a->last(CmEventType::kSidrRepReceived);
  EXPECT_EQ(rep.sidr_rep.status, SidrStatus::kSuccess);
  EXPECT_EQ(rep.sidr_rep.qpn, 0x22u);
  EXPECT_EQ(rep.sidr_rep.qkey, 0x01234567u);
  SidrRepMsg wire;  // the service ID goes back as the request had it
  decode_sidr_rep(p.sent.back().mad.bytes.data(), &wire);
  EXPECT_EQ(wire.service_id, kPsUdpService);
  EXPECT_EQ(p.a->cm.next_deadline(), UINT64_MAX);
  p.a->cm.destroy_id(a);
  p.b->cm.destroy_id(p.b->handle_of(CmEventType::kSidrReqReceived));
  p.b->cm.destroy_id(l);
  EXPECT_EQ(p.a->cm.id_count() + p.b->cm.id_count(), 0u);
}

TEST(IbCm, SidrNoListenerAndRetry) {
  CmPair p;
  CmHandle a = p.a->cm.create_id(1);
  CmSidrReqParams r;
  r.path.dgid = p.b->gid;
  r.service_id = kPsUdpService;
  r.max_cm_retries = 3;
  p.drop_first[{0, static_cast<uint16_t>(CmAttr::kSidrReq)}] = 1;  // the first one is lost
  ASSERT_EQ(p.a->cm.send_sidr_req(a, r), 0);
  p.settle();
  ASSERT_EQ(p.a->count(CmEventType::kSidrRepReceived), 1);
  EXPECT_EQ(p.a->last(CmEventType::kSidrRepReceived)->sidr_rep.status, SidrStatus::kUnsupported);
  EXPECT_EQ(p.b->cm.counters().rej_sent_no_listener, 1u);
  EXPECT_EQ(p.a->cm.counters().retransmits, 1u);
  // Nobody answers at all: SIDR_REQ_ERROR after the retries.
  p.cut = true;
  CmHandle a2 = p.a->cm.create_id(2);
  ASSERT_EQ(p.a->cm.send_sidr_req(a2, r), 0);
  p.settle();
  EXPECT_EQ(p.a->count(CmEventType::kSidrReqError), 1);
  EXPECT_EQ(p.a->cm.counters().timeouts, 1u);
  p.a->cm.destroy_id(a);
  p.a->cm.destroy_id(a2);
  EXPECT_EQ(p.a->cm.id_count(), 0u);
}

TEST(IbCm, MraExtendsTheWait) {
  CmPair p;
  CmHandle pending = kNoCmHandle;
  p.b->on_event = [&](Side& s, CmHandle h, const CmEvent& e) {
    if (e.type == CmEventType::kReqReceived) {
      pending = h;
      s.cm.send_mra(h, 24, nullptr, 0);  // ~69 s
    }
  };
  CmHandle l = p.b->cm.create_id(0);
  p.b->cm.listen(l, kPsTcpService, 0);
  CmHandle a = p.a->cm.create_id(0);
  CmReqParams r = p.req_params(*p.a, *p.b);
  r.max_cm_retries = 2;  // without the MRA: REQ_ERROR after 3 x (4.3 s + 2 x 1.07 s)
  ASSERT_EQ(p.a->cm.send_req(a, r), 0);
  p.settle(p.clock_ns + 1);
  ASSERT_EQ(p.a->count(CmEventType::kMraReceived), 1);
  p.settle(p.clock_ns + 30ull * 1000 * 1000 * 1000);
  EXPECT_EQ(p.a->count(CmEventType::kReqError), 0);
  EXPECT_EQ(p.a->cm.counters().retransmits, 0u);
  // The REQ is retransmitted when the longer wait ends; B answers it with its MRA again.
  p.settle(p.clock_ns + 80ull * 1000 * 1000 * 1000);
  EXPECT_EQ(p.a->count(CmEventType::kReqError), 0);
  EXPECT_GE(p.a->cm.counters().retransmits, 1u);
  EXPECT_GE(p.b->cm.counters().duplicate_req, 1u);
  CmRepParams rep;
  rep.qpn = 0x22;
  p.b->on_event = nullptr;
  ASSERT_EQ(p.b->cm.send_rep(pending, rep), 0);
  p.settle(p.clock_ns + 1);
  EXPECT_EQ(p.a->count(CmEventType::kRepReceived), 1);
  EXPECT_EQ(p.b->count(CmEventType::kRtuReceived), 1);
  p.a->cm.destroy_id(a);
  p.b->cm.destroy_id(pending);
  p.b->cm.destroy_id(l);
  p.settle();
  EXPECT_EQ(p.a->cm.id_count() + p.b->cm.id_count(), 0u);
}

// cma's delayed MRA, passive side: the application has not accepted when the
// peer's REQ timer fires; the retransmitted REQ gets an MRA (service timeout 24,
// ~69 s), so an accept a minute later still connects although the peer's REQ
// retries alone (2 here) would have run out after ~15 s.
TEST(IbCm, SlowAcceptorHoldsThePeerOffWithMra) {
  CmPair p;
  p.b->auto_answer = false;
  CmHandle l = p.b->cm.create_id(0);
  p.b->cm.listen(l, kPsTcpService, 0);
  CmHandle a = p.a->cm.create_id(0);
  CmReqParams r = p.req_params(*p.a, *p.b);
  r.max_cm_retries = 2;
  ASSERT_EQ(p.a->cm.send_req(a, r), 0);
  p.settle(p.clock_ns + 1);
  CmHandle b = p.b->handle_of(CmEventType::kReqReceived);
  ASSERT_NE(b, kNoCmHandle);
  EXPECT_EQ(p.sent_of(1, CmAttr::kMra), 0);  // delayed: nothing before a duplicate
  p.settle(p.clock_ns + 60ull * 1000 * 1000 * 1000);
  EXPECT_EQ(p.a->cm.counters().retransmits, 1u);
  EXPECT_EQ(p.sent_of(1, CmAttr::kMra), 1);
  EXPECT_EQ(p.b->cm.counters().mra_sent_delayed, 1u);
  EXPECT_EQ(p.a->count(CmEventType::kMraReceived), 1);
  EXPECT_EQ(p.a->count(CmEventType::kReqError), 0);
  CmRepParams rep;
  rep.qpn = 0x22;
  ASSERT_EQ(p.b->cm.send_rep(b, rep), 0);
  p.settle(p.clock_ns + 1);
  ASSERT_EQ(p.a->count(CmEventType::kRepReceived), 1);  // A answers it with the RTU
  EXPECT_EQ(p.b->count(CmEventType::kRtuReceived), 1);
  p.a->cm.destroy_id(a);
  p.b->cm.destroy_id(b);
  p.b->cm.destroy_id(l);
  p.settle();
  EXPECT_EQ(p.a->cm.id_count() + p.b->cm.id_count(), 0u);
}

// The same on the active side (cma_ib_handler's IB_CM_REP_RECEIVED): the
// application answers CONNECT_RESPONSE (the RTU) late; the passive side's
// retransmitted REP gets an MRA and its REP retries do not run out.
TEST(IbCm, SlowRtuHoldsThePeerOffWithMra) {
  CmPair p;
  p.a->auto_answer = false;
  CmHandle l = p.b->cm.create_id(0);
  p.b->cm.listen(l, kPsTcpService, 0);
  CmHandle a = p.a->cm.create_id(0);
  CmReqParams r = p.req_params(*p.a, *p.b);
  r.max_cm_retries = 2;  // B's REP retries too: REP_ERROR after ~15 s without the MRA
  ASSERT_EQ(p.a->cm.send_req(a, r), 0);
  p.settle(p.clock_ns + 1);
  ASSERT_EQ(p.a->count(CmEventType::kRepReceived), 1);
  p.settle(p.clock_ns + 60ull * 1000 * 1000 * 1000);
  EXPECT_EQ(p.b->cm.counters().retransmits, 1u);  // one REP retry, then the MRA's wait
  EXPECT_EQ(p.sent_of(0, CmAttr::kMra), 1);
  EXPECT_EQ(p.a->cm.counters().mra_sent_delayed, 1u);
  EXPECT_EQ(p.b->count(CmEventType::kMraReceived), 1);
  EXPECT_EQ(p.b->count(CmEventType::kRepError), 0);
  EXPECT_EQ(p.a->count(CmEventType::kRepReceived), 1);  // the duplicate is no new event
  ASSERT_EQ(p.a->cm.send_rtu(a, nullptr, 0), 0);
  p.settle(p.clock_ns + 1);
  EXPECT_EQ(p.b->count(CmEventType::kRtuReceived), 1);
  CmHandle b = p.b->handle_of(CmEventType::kReqReceived);
  p.a->cm.destroy_id(a);
  p.b->cm.destroy_id(b);
  p.b->cm.destroy_id(l);
  p.settle();
  EXPECT_EQ(p.a->cm.id_count() + p.b->cm.id_count(), 0u);
}

// An established id destroyed at once (rping's client: DISCONNECT, then
// DESTROY_ID) whose DREQ is lost: the DREQ is retried (cm.c would cancel it and
// leave the peer connected), the peer gets DISCONNECTED, its DREP ends the retries.
TEST(IbCm, DestroyedIdRetriesItsLostDreq) {
  CmPair p;
  p.drop_first[{0, static_cast<uint16_t>(CmAttr::kDreq)}] = 1;
  CmHandle a = p.connect();
  CmHandle b = p.b->handle_of(CmEventType::kReqReceived);
  ASSERT_EQ(p.b->count(CmEventType::kRtuReceived), 1);
  p.a->cm.destroy_id(a);
  p.settle(p.clock_ns + 1);
  EXPECT_EQ(p.b->count(CmEventType::kDreqReceived), 0);  // lost
  p.settle(p.clock_ns + 10ull * 1000 * 1000 * 1000);
  EXPECT_EQ(p.sent_of(0, CmAttr::kDreq), 2);
  EXPECT_EQ(p.b->count(CmEventType::kDreqReceived), 1);  // answered with the DREP (auto)
  EXPECT_EQ(p.a->cm.counters().timeouts, 0u);
  p.b->cm.destroy_id(b);
  p.b->cm.destroy_id(p.listen_b);
  p.settle();
  EXPECT_EQ(p.sent_of(0, CmAttr::kDreq), 2);  // the DREP stopped them
  EXPECT_EQ(p.a->cm.id_count() + p.b->cm.id_count(), 0u);
}

// DREQs crossing while one side's id is already destroyed: that side answers
// the peer's DREQ itself and both reach timewait.
TEST(IbCm, DestroyedIdAnswersACrossingDreq) {
  CmPair p;
  CmHandle a = p.connect();
  CmHandle b = p.b->handle_of(CmEventType::kReqReceived);
  p.cut = true;
  p.a->cm.destroy_id(a);  // its DREQ lost
  ASSERT_EQ(p.b->cm.send_dreq(b, nullptr, 0), 0);  // B's lost too
  p.cut = false;
  p.settle(p.clock_ns + 10ull * 1000 * 1000 * 1000);  // both retry
  EXPECT_GE(p.sent_of(0, CmAttr::kDrep), 1);
  EXPECT_GE(p.b->count(CmEventType::kDreqReceived) + p.b->count(CmEventType::kDrepReceived), 1);
  p.b->cm.destroy_id(b);
  p.b->cm.destroy_id(p.listen_b);
  p.settle();
  EXPECT_EQ(p.a->cm.id_count() + p.b->cm.id_count(), 0u);
}

TEST(IbCm, EstablishBeforeRtu) {
  CmPair p;
  p.drop_first[{0, static_cast<uint16_t>(CmAttr::kRtu)}] = 1;
  p.connect();
  CmHandle b = p.b->handle_of(CmEventType::kReqReceived);
  ASSERT_EQ(p.b->count(CmEventType::kRtuReceived), 0);
  EXPECT_EQ(p.b->cm.establish(b), 0);  // first data seen on the QP
  EXPECT_EQ(p.b->count(CmEventType::kUserEstablished), 1);
  EXPECT_EQ(p.b->cm.establish(b), EISCONN);
  p.settle(p.clock_ns + 60ull * 1000 * 1000 * 1000);
  EXPECT_EQ(p.b->count(CmEventType::kRepError), 0);  // no REP retries after establish
  EXPECT_EQ(p.b->cm.counters().retransmits, 0u);
}

// One port connecting to itself (client and server under the same burstd):
// every MAD comes back to the same IbCm.
struct SelfHost : IbCmHost {
  bool send_mad(const Mad& m) override {
    queue.push_back(m);
    return true;
  }
  void cm_event(CmHandle h, const CmEvent& e) override {
    events.emplace_back(h, e);
    if (e.type == CmEventType::kReqReceived) {
      CmRepParams rep;
      rep.qpn = 0x22;
      cm->send_rep(h, rep);
    } else if (e.type == CmEventType::kRepReceived) {
      cm->send_rtu(h, nullptr, 0);
    } else if (e.type == CmEventType::kDreqReceived) {
      cm->send_drep(h, nullptr, 0);
    }
  }
  uint64_t now_ns() override { return clock_ns; }
  void run() {
    for (;;) {
      while (!queue.empty()) {
        Mad m = queue.front();
        queue.erase(queue.begin());
        m.peer.gid = gid;
        cm->receive(m);
      }
      if (cm->next_deadline() == UINT64_MAX) return;
      clock_ns = cm->next_deadline();
      cm->tick();
    }
  }
  int count(CmEventType t) const {
    int n = 0;
    for (const auto& [h, e] : events) n += e.type == t;
    return n;
  }
  IbCm* cm = nullptr;
  Gid gid{};
  uint64_t clock_ns = 1;
  std::vector<Mad> queue;
  std::vector<std::pair<CmHandle, CmEvent>> events;
};

TEST(IbCm, ConnectsToItself) {
  SelfHost host;
  host.gid[15] = 7;
  IbCm cm(host, 0x77, 5);
  host.cm = &cm;
  CmHandle l = cm.create_id(1);
  ASSERT_EQ(cm.listen(l, kPsTcpService, 0), 0);
  CmHandle a = cm.create_id(2);
  CmReqParams r;
  r.path.sgid = r.path.dgid = host.gid;
  r.service_id = kPsTcpService;
  r.qpn = 0x11;
  ASSERT_EQ(cm.send_req(a, r), 0);
  host.run();
  EXPECT_EQ(host.count(CmEventType::kReqReceived), 1);
  EXPECT_EQ(host.count(CmEventType::kRepReceived), 1);
  EXPECT_EQ(host.count(CmEventType::kRtuReceived), 1);
  ASSERT_EQ(cm.send_dreq(a, nullptr, 0), 0);
  host.run();
  EXPECT_EQ(host.count(CmEventType::kDreqReceived), 1);
  EXPECT_EQ(host.count(CmEventType::kDrepReceived), 1);
  EXPECT_EQ(host.count(CmEventType::kTimewaitExit), 2);
  EXPECT_EQ(cm.counters().dropped_no_match, 0u);
  EXPECT_EQ(cm.counters().retransmits, 0u);
}

}  // namespace
}  // namespace burst::cm::test
