// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Requester + completer driven with crafted responses from a fake peer (node 2)
// into an engine (node 1): coalesced and implicit ACKs, READ response
// placement and re-requests, atomic results, every NAK, RNR waits (driven by
// now_ns), transport timeouts and retry exhaustion, fence, max_rd_atomic, the
// window, signaled/unsignaled completions and local errors.
#include <gtest/gtest.h>

#include "tests/unit/transport/transport_test_util.h"

namespace burst::core::test {
namespace {

using namespace wire::op;  // NOLINT(build/namespaces)

constexpr uint32_t kPeerQpn = 0x99;
constexpr uint32_t kPsn = 0x100;
constexpr uint64_t kMs = 1'000'000;

class CompleterTest : public ::testing::Test {
 protected:
  void SetUp() override {}
  void setup(RcOpts o = {}, bool sig_all = true) {
    o.sq_psn = kPsn;
    if (o.timeout == 14) o.timeout = 10;  // 4.194 ms
    qa = a.create_qp(QpType::kRc, QpCap{64, 64, 4, 4, 0}, sig_all);
    bring_up_rc(a, qa, 2, kPeerQpn, o);
    buf = pattern(16384, 0x21);
    key = a.reg(buf);
  }
  Bytes ack(uint32_t psn, uint8_t syndrome = 0x1f) { return ack_frame(2, 1, qa, psn, syndrome); }
  Bytes read_resp(uint8_t op, uint32_t psn, const Bytes& payload) {
    return craft(2, 1, op, qa, psn, payload, [&](wire::FrameWriter& fw) {
      if (op != kRcRdmaReadResponseMiddle) fw.aeth().set_syndrome(0x1f);
    });
  }
  void send(uint64_t id, uint32_t len, uint32_t flags = 0) {
    SendWr w = make_wr(WrOpcode::kSend, id, buf, key, len);
    w.send_flags = flags;
    ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  }
  void write(uint64_t id, uint32_t len) {
    SendWr w = make_wr(WrOpcode::kRdmaWrite, id, buf, key, len);
    w.rdma = {0x7000, 0x1234};
    ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  }
  void read(uint64_t id, uint32_t len, uint32_t off = 8192, uint32_t flags = 0) {
    SendWr w = make_wr(WrOpcode::kRdmaRead, id, buf, key, len, off);
    w.rdma = {0x900000, 0x4321};
    w.send_flags = flags;
    ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  }
  std::vector<uint64_t> ids(const std::vector<Wc>& wcs) {
    std::vector<uint64_t> out;
    for (const Wc& w : wcs) out.push_back(w.wr_id);
    return out;
  }
  std::vector<uint32_t> psns(const Frames& f) {
    std::vector<uint32_t> out;
    for (const Bytes& b : f) out.push_back(psn_of(b));
    return out;
  }
  const Qp& qp() const { return EngineTestPeer::qp(a.eng, qa); }

  Node a{1};
  uint32_t qa = 0;
  Bytes buf;
  uint32_t key = 0;
};

TEST_F(CompleterTest, CoalescedAckCompletesSeveralInOrder) {
  setup();
  send(1, 8);
  write(2, 8);
  send(3, 8);
  ASSERT_EQ(psns(capture(a.eng, 0)), (std::vector<uint32_t>{kPsn, kPsn + 1, kPsn + 2}));
  deliver(a.eng, ack(kPsn + 1), 0);
  auto wc = a.poll();
  ASSERT_EQ(ids(wc), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(wc[0].opcode, WcOpcode::kSend);
  EXPECT_EQ(wc[1].opcode, WcOpcode::kRdmaWrite);
  EXPECT_EQ(wc[1].status, WcStatus::kSuccess);
  deliver(a.eng, ack(kPsn + 2), 0);
  EXPECT_EQ(ids(a.poll()), (std::vector<uint64_t>{3}));
  EXPECT_EQ(qp().req.una.value(), kPsn + 3);
  EXPECT_EQ(qp().req.retx_deadline_ns, 0u);  // nothing outstanding: timer stopped
}

TEST_F(CompleterTest, AckInsideAMessageAdvancesWithoutCompleting) {
  setup();
  send(1, 3000);
  ASSERT_EQ(capture(a.eng, 0).size(), 3u);
  deliver(a.eng, ack(kPsn), 0);
  EXPECT_TRUE(a.poll().empty());
  EXPECT_EQ(qp().req.una.value(), kPsn + 1);
  deliver(a.eng, ack(kPsn + 2), 0);
  EXPECT_EQ(ids(a.poll()), (std::vector<uint64_t>{1}));
}

TEST_F(CompleterTest, StaleAndBogusAcksIgnored) {
  setup();
  send(1, 8);
  send(2, 8);
  capture(a.eng, 0);
  deliver(a.eng, ack(kPsn), 0);
  EXPECT_EQ(a.poll().size(), 1u);
  deliver(a.eng, ack(kPsn), 0);       // past: duplicate ACK
  deliver(a.eng, ack(kPsn - 10), 0);  // older
  deliver(a.eng, ack(kPsn + 5), 0);   // future: never sent
  EXPECT_TRUE(a.poll().empty());
  const auto& c = a.eng.counters();
  EXPECT_EQ(c.rx_drop[static_cast<size_t>(Drop::kStaleResponse)], 2u);
  EXPECT_EQ(c.rx_drop[static_cast<size_t>(Drop::kAckBadPsn)], 1u);
  EXPECT_EQ(qp().req.una.value(), kPsn + 1);
  deliver(a.eng, ack(kPsn + 1), 0);
  EXPECT_EQ(ids(a.poll()), (std::vector<uint64_t>{2}));
}

TEST_F(CompleterTest, NakSequenceErrorGoesBackToThatPsn) {
  setup();
  for (uint64_t i = 1; i <= 4; ++i) send(i, 8);
  ASSERT_EQ(capture(a.eng, 0).size(), 4u);
  deliver(a.eng, ack(kPsn + 2, 0x60), 0);
  EXPECT_EQ(ids(a.poll()), (std::vector<uint64_t>{1, 2}));  // the NAK acknowledges before it
  Frames again = capture(a.eng, 0);
  EXPECT_EQ(psns(again), (std::vector<uint32_t>{kPsn + 2, kPsn + 3}));
  EXPECT_EQ(opcode_of(again[0]), kRcSendOnly);
  EXPECT_EQ(a.eng.counters().retransmit_events, 1u);
  EXPECT_EQ(a.eng.counters().retransmitted_packets, 2u);
  EXPECT_EQ(a.eng.counters().naks_received[0], 1u);
  deliver(a.eng, ack(kPsn + 3), 0);
  EXPECT_EQ(ids(a.poll()), (std::vector<uint64_t>{3, 4}));
}

TEST_F(CompleterTest, NakSequenceErrorInsideAWrite) {
  setup();
  write(1, 3000);
  ASSERT_EQ(capture(a.eng, 0).size(), 3u);
  deliver(a.eng, ack(kPsn + 1, 0x60), 0);
  Frames again = capture(a.eng, 0);
  ASSERT_EQ(again.size(), 2u);
  EXPECT_EQ(opcode_of(again[0]), kRcRdmaWriteMiddle);  // no RETH: the responder has it
  EXPECT_EQ(psn_of(again[0]), kPsn + 1);
  EXPECT_EQ(opcode_of(again[1]), kRcRdmaWriteLast);
  EXPECT_EQ(0, std::memcmp(parse(again[0]).payload(), buf.data() + 1024, 1024));
}

TEST_F(CompleterTest, RnrNakWaitsTheEncodedTimeThenResends) {
  RcOpts o;
  o.rnr_retry = 3;
  setup(o);
  send(1, 8);
  const uint64_t t0 = 5 * kMs;
  ASSERT_EQ(capture(a.eng, t0).size(), 1u);
  deliver(a.eng, ack(kPsn, 0x20 | 14), t0);  // RNR NAK, timer 14 = 1.28 ms
  EXPECT_TRUE(capture(a.eng, t0).empty());
  a.eng.tick(t0 + 1'279'000);
  EXPECT_TRUE(capture(a.eng, t0 + 1'279'000).empty());
  a.eng.tick(t0 + 1'280'000);
  Frames f = capture(a.eng, t0 + 1'280'000);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(psn_of(f[0]), kPsn);
  // Timer code 0 is the longest wait: 655.36 ms.
  const uint64_t t1 = t0 + 2 * kMs;
  deliver(a.eng, ack(kPsn, 0x20 | 0), t1);
  a.eng.tick(t1 + 655'359'000);
  EXPECT_TRUE(capture(a.eng, t1 + 655'359'000).empty());
  a.eng.tick(t1 + 655'360'000);
  EXPECT_EQ(capture(a.eng, t1 + 655'360'000).size(), 1u);
  EXPECT_EQ(a.eng.counters().rnr_naks_received, 2u);
  deliver(a.eng, ack(kPsn), t1 + 656 * kMs);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
}

TEST_F(CompleterTest, RnrRetryExhausted) {
  RcOpts o;
  o.rnr_retry = 2;
  setup(o);
  send(1, 8);
  send(2, 8);
  uint64_t now = 0;
  ASSERT_EQ(capture(a.eng, now).size(), 2u);
  for (int i = 0; i < 2; ++i) {
    deliver(a.eng, ack(kPsn, 0x20 | 1), now);  // 10 us
    now += 20'000;
    a.eng.tick(now);
    ASSERT_EQ(psns(capture(a.eng, now)), (std::vector<uint32_t>{kPsn, kPsn + 1})) << i;
  }
  deliver(a.eng, ack(kPsn, 0x20 | 1), now);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kRnrRetryExcErr);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(a.state(qa), QpState::kErr);
  now += 20'000;
  a.eng.tick(now);
  EXPECT_TRUE(capture(a.eng, now).empty());
}

TEST_F(CompleterTest, RnrRetrySevenNeverGivesUp) {
  RcOpts o;
  o.rnr_retry = 7;
  setup(o);
  send(1, 8);
  uint64_t now = 0;
  ASSERT_EQ(capture(a.eng, now).size(), 1u);
  for (int i = 0; i < 200; ++i) {
    deliver(a.eng, ack(kPsn, 0x20 | 1), now);
    now += 20'000;
    a.eng.tick(now);
    ASSERT_EQ(capture(a.eng, now).size(), 1u) << i;
  }
  EXPECT_EQ(a.state(qa), QpState::kRts);
  EXPECT_TRUE(a.poll().empty());
  deliver(a.eng, ack(kPsn), now);
  EXPECT_EQ(ids(a.poll()), (std::vector<uint64_t>{1}));
}

TEST_F(CompleterTest, TransportTimeoutRetransmitsThenGivesUp) {
  RcOpts o;
  o.timeout = 10;  // 4.096 us * 2^10 = 4.194304 ms
  o.retry_cnt = 3;
  setup(o);
  send(1, 8);
  send(2, 3000);
  uint64_t now = 0;
  ASSERT_EQ(capture(a.eng, now).size(), 4u);
  const uint64_t t = 4'194'304;
  for (int i = 0; i < 3; ++i) {
    a.eng.tick(now + t - 1);
    EXPECT_TRUE(capture(a.eng, now + t - 1).empty()) << i;
    now += t;
    a.eng.tick(now);
    ASSERT_EQ(psns(capture(a.eng, now)),
              (std::vector<uint32_t>{kPsn, kPsn + 1, kPsn + 2, kPsn + 3}))
        << i;
  }
  EXPECT_TRUE(a.poll().empty());
  now += t;
  a.eng.tick(now);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kRetryExcErr);
  EXPECT_EQ(wc[1].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(a.state(qa), QpState::kErr);
  EXPECT_EQ(a.eng.counters().timeouts, 4u);
}

TEST_F(CompleterTest, TimerRestartsOnProgress) {
  setup();
  send(1, 8);
  send(2, 8);
  ASSERT_EQ(capture(a.eng, 0).size(), 2u);
  deliver(a.eng, ack(kPsn), 3 * kMs);  // progress at 3 ms restarts the 4.19 ms timer
  a.eng.tick(5 * kMs);
  EXPECT_TRUE(capture(a.eng, 5 * kMs).empty());
  a.eng.tick(3 * kMs + 4'194'304);
  EXPECT_EQ(psns(capture(a.eng, 3 * kMs + 4'194'304)), (std::vector<uint32_t>{kPsn + 1}));
}

TEST_F(CompleterTest, TimeoutZeroWaitsForever) {
  RcOpts o;
  o.timeout = 0;
  o.sq_psn = kPsn;
  qa = a.create_qp();
  bring_up_rc(a, qa, 2, kPeerQpn, o);
  buf = pattern(64, 1);
  key = a.reg(buf);
  send(1, 8);
  ASSERT_EQ(capture(a.eng, 0).size(), 1u);
  a.eng.tick(uint64_t{1} << 50);
  EXPECT_TRUE(capture(a.eng, uint64_t{1} << 50).empty());
  EXPECT_EQ(a.state(qa), QpState::kRts);
}

struct NakCase {
  uint8_t syndrome;
  WcStatus status;
};

class CompleterNakTest : public CompleterTest, public ::testing::WithParamInterface<NakCase> {};

TEST_P(CompleterNakTest, ErrorNakCompletesInErrorAndFlushes) {
  setup();
  send(1, 8);
  write(2, 8);
  send(3, 8);
  capture(a.eng, 0);
  deliver(a.eng, ack(kPsn + 1, GetParam().syndrome), 0);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 3u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);  // before the NAK'd PSN: acknowledged
  EXPECT_EQ(wc[1].status, GetParam().status);
  EXPECT_EQ(wc[1].wr_id, 2u);
  EXPECT_EQ(wc[2].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(a.state(qa), QpState::kErr);
  EXPECT_TRUE(capture(a.eng, 0).empty());
}

INSTANTIATE_TEST_SUITE_P(Codes, CompleterNakTest,
                         ::testing::Values(NakCase{0x61, WcStatus::kRemInvReqErr},
                                           NakCase{0x62, WcStatus::kRemAccessErr},
                                           NakCase{0x63, WcStatus::kRemOpErr}));

TEST_F(CompleterTest, ReadResponsesPlacedAndGapReRequested) {
  setup();
  read(1, 3000);
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(opcode_of(f[0]), kRcRdmaReadRequest);
  const Bytes remote = pattern(3000, 0x99);
  auto part = [&](uint32_t off, uint32_t n) {
    return Bytes(remote.begin() + off, remote.begin() + off + n);
  };
  // In order: FIRST. Future: LAST while MIDDLE is missing -> one re-request.
  deliver(a.eng,
          Frames{read_resp(kRcRdmaReadResponseFirst, kPsn, part(0, 1024)),
                 read_resp(kRcRdmaReadResponseLast, kPsn + 2, part(2048, 952))},
          0);
  f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  wire::PacketView rr = parse(f[0]);
  EXPECT_EQ(rr.opcode, kRcRdmaReadRequest);
  EXPECT_EQ(rr.bth().psn().value(), kPsn + 1);
  EXPECT_EQ(rr.reth()->va(), 0x900000u + 1024);
  EXPECT_EQ(rr.reth()->dma_len(), 3000u - 1024);
  EXPECT_EQ(a.eng.counters().read_out_of_sequence, 1u);
  // Past: FIRST again is ignored; the rest arrives as the responder replays it.
  deliver(a.eng,
          Frames{read_resp(kRcRdmaReadResponseFirst, kPsn, part(0, 1024)),
                 read_resp(kRcRdmaReadResponseFirst, kPsn + 1, part(1024, 1024)),
                 read_resp(kRcRdmaReadResponseLast, kPsn + 2, part(2048, 952))},
          0);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRdmaRead);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[0].byte_len, 3000u);
  EXPECT_TRUE(std::equal(remote.begin(), remote.end(), buf.begin() + 8192));
}

TEST_F(CompleterTest, ReadResponseWithWrongLengthIsABadResponse) {
  setup();
  read(1, 3000);
  capture(a.eng, 0);
  deliver(a.eng, read_resp(kRcRdmaReadResponseFirst, kPsn, pattern(1000, 1)), 0);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kBadRespErr);
  EXPECT_EQ(a.state(qa), QpState::kErr);
}

TEST_F(CompleterTest, ReadResponseImplicitlyAcksEarlierSends) {
  setup();
  send(1, 8);
  read(2, 8);
  capture(a.eng, 0);
  deliver(a.eng, read_resp(kRcRdmaReadResponseOnly, kPsn + 1, pattern(8, 4)), 0);
  auto wc = a.poll();
  ASSERT_EQ(ids(wc), (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(wc[1].opcode, WcOpcode::kRdmaRead);
}

TEST_F(CompleterTest, LaterAckMeansLostReadResponses) {
  setup();
  send(1, 8);
  read(2, 8);
  send(3, 8);
  ASSERT_EQ(capture(a.eng, 0).size(), 3u);
  deliver(a.eng, ack(kPsn + 2), 0);  // acknowledges past the READ, whose response never came
  EXPECT_EQ(ids(a.poll()), (std::vector<uint64_t>{1}));
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(psns(f), (std::vector<uint32_t>{kPsn + 1, kPsn + 2}));
  EXPECT_EQ(opcode_of(f[0]), kRcRdmaReadRequest);
  deliver(a.eng, Frames{read_resp(kRcRdmaReadResponseOnly, kPsn + 1, pattern(8, 4)), ack(kPsn + 2)},
          0);
  EXPECT_EQ(ids(a.poll()), (std::vector<uint64_t>{2, 3}));
}

TEST_F(CompleterTest, AtomicAckWritesTheOriginalValue) {
  setup();
  SendWr w = make_wr(WrOpcode::kAtomicFetchAndAdd, 1, buf, key, 8, 64);
  w.atomic = {0x900008, 3, 0, 0x4321};
  ASSERT_TRUE(a.eng.post_send(qa, w).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  wire::PacketView pv = parse(f[0]);
  EXPECT_EQ(pv.opcode, kRcFetchAdd);
  EXPECT_EQ(pv.atomic_eth()->swap_add(), 3u);
  EXPECT_EQ(pv.atomic_eth()->va(), 0x900008u);
  deliver(a.eng,
          craft(2, 1, kRcAtomicAcknowledge, qa, kPsn, {},
                [](wire::FrameWriter& fw) {
                  fw.aeth().set_syndrome(0x1f);
                  fw.atomic_ack().set_orig(0x1122334455667788ull);
                }),
          0);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kFetchAdd);
  uint64_t v;
  std::memcpy(&v, buf.data() + 64, 8);
  EXPECT_EQ(v, 0x1122334455667788ull);
}

TEST_F(CompleterTest, FenceWaitsForOutstandingRead) {
  setup();
  read(1, 8);
  send(2, 8, kSendFence);
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(opcode_of(f[0]), kRcRdmaReadRequest);
  deliver(a.eng, read_resp(kRcRdmaReadResponseOnly, kPsn, pattern(8, 1)), 0);
  f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(opcode_of(f[0]), kRcSendOnly);
  EXPECT_EQ(psn_of(f[0]), kPsn + 1);
}

TEST_F(CompleterTest, MaxRdAtomicLimitsOutstandingReads) {
  RcOpts o;
  o.max_rd_atomic = 2;
  setup(o);
  read(1, 8, 8192);
  read(2, 8, 8200);
  read(3, 8, 8208);
  send(4, 8);
  EXPECT_EQ(psns(capture(a.eng, 0)), (std::vector<uint32_t>{kPsn, kPsn + 1}));
  deliver(a.eng, read_resp(kRcRdmaReadResponseOnly, kPsn, pattern(8, 1)), 0);
  EXPECT_EQ(psns(capture(a.eng, 0)), (std::vector<uint32_t>{kPsn + 2, kPsn + 3}));
}

TEST_F(CompleterTest, UnsignaledCompletions) {
  setup({}, /*sig_all=*/false);
  send(1, 8);
  send(2, 8, kSendSignaled);
  send(3, 8);
  capture(a.eng, 0);
  deliver(a.eng, ack(kPsn + 2), 0);
  EXPECT_EQ(ids(a.poll()), (std::vector<uint64_t>{2}));
  send(4, 8);  // unsignaled, but an error completion is always reported
  capture(a.eng, 0);
  deliver(a.eng, ack(kPsn + 3, 0x62), 0);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 4u);
  EXPECT_EQ(wc[0].status, WcStatus::kRemAccessErr);
}

TEST_F(CompleterTest, LocalProtectionErrorCompletesInOrder) {
  setup();
  send(1, 8);
  SendWr bad = make_wr(WrOpcode::kSend, 2, buf, key + 0x100, 8);  // no such key
  ASSERT_TRUE(a.eng.post_send(qa, bad).ok());
  send(3, 8);
  EXPECT_EQ(capture(a.eng, 0).size(), 1u);  // the bad WQE stops the queue
  EXPECT_TRUE(a.poll().empty());            // ... but completes only after the one before it
  EXPECT_EQ(a.state(qa), QpState::kRts);
  deliver(a.eng, ack(kPsn), 0);
  auto wc = a.poll();
  ASSERT_EQ(wc.size(), 3u);
  EXPECT_EQ(wc[0].status, WcStatus::kSuccess);
  EXPECT_EQ(wc[1].status, WcStatus::kLocProtErr);
  EXPECT_EQ(wc[2].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(a.state(qa), QpState::kErr);
}

TEST_F(CompleterTest, SqdStartsNothingNew) {
  setup();
  send(1, 8);
  QpAttr attr;
  attr.qp_state = QpState::kSqd;
  ASSERT_TRUE(a.eng.modify_qp(qa, attr, kQpState).ok());
  EXPECT_TRUE(capture(a.eng, 0).empty());
  attr.qp_state = QpState::kRts;
  ASSERT_TRUE(a.eng.modify_qp(qa, attr, kQpState).ok());
  EXPECT_EQ(capture(a.eng, 0).size(), 1u);
}

TEST(CompleterWindow, UnacknowledgedPacketsBounded) {
  EngineConfig cfg = node_config(1, 9014);
  cfg.window_pkts = 8;
  Node a{1, cfg};
  const uint32_t qa = a.create_qp();
  RcOpts o;
  o.mtu = Mtu::k256;
  o.sq_psn = kPsn;
  bring_up_rc(a, qa, 2, kPeerQpn, o);
  Bytes buf = pattern(256 * 20, 1);
  ASSERT_TRUE(a.eng.post_send(qa, make_wr(WrOpcode::kSend, 1, buf, a.reg(buf), 256 * 20)).ok());
  Frames f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 8u);
  EXPECT_FALSE(parse(f[6]).bth().ack_req());
  EXPECT_TRUE(parse(f[7]).bth().ack_req());          // fills the window: asks for an ACK
  deliver(a.eng, ack_frame(2, 1, qa, kPsn + 2), 0);  // 3 acknowledged: 3 more may go
  f = capture(a.eng, 0);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(psn_of(f[0]), kPsn + 8);
  EXPECT_EQ(psn_of(f[2]), kPsn + 10);
}

}  // namespace
}  // namespace burst::core::test
