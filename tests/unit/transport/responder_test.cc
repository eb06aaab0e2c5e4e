// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Responder driven directly with crafted request frames (wire builders) from a
// fake peer (node 1) into an engine (node 2); assertions on the frames captured
// from tx_build, on completions and on QP state. Cases: in-order, past
// (duplicate), future, every NAK code, RNR NAK, and malformed input.
#include <gtest/gtest.h>

#include "tests/unit/transport/transport_test_util.h"

namespace burst::core::test {
namespace {

using namespace wire::op;  // NOLINT(build/namespaces)

constexpr uint32_t kPeerQpn = 0x77;
constexpr uint32_t kEpsn = 0x200;

class ResponderTest : public ::testing::Test {
 protected:
  void SetUp() override { setup(); }
  void setup(uint32_t access = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic,
             uint8_t max_dest_rd_atomic = 4) {
    qb = b.create_qp();
    RcOpts o;
    o.rq_psn = kEpsn;
    o.min_rnr_timer = 14;
    o.access = access;
    o.max_dest_rd_atomic = max_dest_rd_atomic;
    bring_up_rc(b, qb, 1, kPeerQpn, o);
    mem = pattern(8192, 0x40);
    key = b.reg(mem);
  }
  Bytes req(uint8_t op, uint32_t psn, const Bytes& payload = {},
            const std::function<void(wire::FrameWriter&)>& ext = {}, bool ack_req = true) {
    return craft(1, 2, op, qb, psn, payload, ext, ack_req);
  }
  Bytes write_req(uint8_t op, uint32_t psn, uint64_t va, uint32_t rkey, uint32_t dma_len,
                  const Bytes& payload) {
    return req(op, psn, payload, [=](wire::FrameWriter& fw) {
      fw.reth().set_va(va);
      fw.reth().set_rkey(rkey);
      fw.reth().set_dma_len(dma_len);
    });
  }
  Bytes read_req(uint32_t psn, uint64_t va, uint32_t len, uint32_t rkey) {
    return write_req(kRcRdmaReadRequest, psn, va, rkey, len, {});
  }
  Bytes atomic_req(uint8_t op, uint32_t psn, uint64_t va, uint64_t swap_add, uint64_t compare,
                   uint32_t rkey) {
    return req(op, psn, {}, [=](wire::FrameWriter& fw) {
      fw.atomic_eth().set_va(va);
      fw.atomic_eth().set_rkey(rkey);
      fw.atomic_eth().set_swap_add(swap_add);
      fw.atomic_eth().set_compare(compare);
    });
  }
  void post_rwqe(uint64_t id, uint32_t len, uint32_t off = 0) {
    ASSERT_TRUE(b.eng.post_recv(qb, make_recv(id, mem, key, len, off)).ok());
  }
  // Exactly one frame out: an ACKNOWLEDGE with this syndrome and PSN.
  void expect_one_ack(uint8_t syndrome, uint32_t psn) {
    Frames f = capture(b.eng, 0);
    ASSERT_EQ(f.size(), 1u);
    wire::PacketView pv = parse(f[0]);
    EXPECT_EQ(pv.opcode, kRcAcknowledge);
    EXPECT_EQ(pv.aeth()->syndrome(), syndrome);
    EXPECT_EQ(pv.bth().psn().value(), psn);
    EXPECT_EQ(pv.bth().dest_qpn(), kPeerQpn);
  }
  uint64_t drops(Drop d) const { return b.eng.counters().rx_drop[static_cast<size_t>(d)]; }
  const Qp& qp() const { return EngineTestPeer::qp(b.eng, qb); }

  Node b{2};
  uint32_t qb = 0;
  Bytes mem;
  uint32_t key = 0;
};

TEST_F(ResponderTest, InOrderSendIsAcked) {
  post_rwqe(11, 64);
  const Bytes data = pattern(8, 1);
  deliver(b.eng, req(kRcSendOnly, kEpsn, data), 0);
  Frames f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  wire::PacketView pv = parse(f[0]);
  EXPECT_EQ(pv.opcode, kRcAcknowledge);
  EXPECT_EQ(pv.aeth()->syndrome(), 0x1f);  // ACK, credit field invalid (as rxe)
  EXPECT_EQ(pv.aeth()->msn(), 1u);
  EXPECT_EQ(pv.bth().psn().value(), kEpsn);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 11u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecv);
  EXPECT_EQ(wc[0].byte_len, 8u);
  EXPECT_EQ(wc[0].src_qp, kPeerQpn);
  EXPECT_EQ(wc[0].wc_flags, 0u);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), mem.begin()));
  EXPECT_EQ(qp().resp.epsn.value(), kEpsn + 1);
}

TEST_F(ResponderTest, InOrderAcksCoalescedToOnePerBurst) {
  for (int i = 0; i < 3; ++i) post_rwqe(i, 64, 64 * i);
  deliver(b.eng,
          Frames{req(kRcSendOnly, kEpsn, pattern(4, 1)), req(kRcSendOnly, kEpsn + 1, pattern(4, 2)),
                 req(kRcSendOnly, kEpsn + 2, pattern(4, 3))},
          0);
  Frames f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(psn_of(f[0]), kEpsn + 2);
  EXPECT_EQ(parse(f[0]).aeth()->msn(), 3u);
  EXPECT_EQ(b.poll().size(), 3u);
}

TEST_F(ResponderTest, MultiPacketSendWithoutAckReqAckedAtLast) {
  post_rwqe(1, 4096);
  const Bytes d = pattern(2500, 5);
  Frames in = {req(kRcSendFirst, kEpsn, Bytes(d.begin(), d.begin() + 1024), {}, false),
               req(kRcSendMiddle, kEpsn + 1, Bytes(d.begin() + 1024, d.begin() + 2048), {}, false)};
  deliver(b.eng, in, 0);
  EXPECT_TRUE(capture(b.eng, 0).empty());  // no AckReq, message not finished
  deliver(b.eng, req(kRcSendLast, kEpsn + 2, Bytes(d.begin() + 2048, d.end()), {}, false), 0);
  expect_one_ack(0x1f, kEpsn + 2);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].byte_len, 2500u);
  EXPECT_TRUE(std::equal(d.begin(), d.end(), mem.begin()));
}

// rx_burst may not touch a frame after it returns: every copy out of it is done
// by then, even for a WRITE, which posts no completion.
TEST_F(ResponderTest, PayloadPlacedBeforeRxBurstReturns) {
  const Bytes d = pattern(600, 9);
  Bytes frame = write_req(kRcRdmaWriteOnly, kEpsn, Node::addr(mem) + 1000, key, 600, d);
  deliver(b.eng, frame, 0);
  std::fill(frame.begin(), frame.end(), 0);  // the datapath reuses the buffer
  EXPECT_TRUE(std::equal(d.begin(), d.end(), mem.begin() + 1000));
  EXPECT_TRUE(b.copier.idle());
}

TEST_F(ResponderTest, DuplicateSendIsReAckedNotRedelivered) {
  post_rwqe(1, 64);
  post_rwqe(2, 64, 64);
  const Bytes f0 = req(kRcSendOnly, kEpsn, pattern(8, 1));
  deliver(b.eng, f0, 0);
  expect_one_ack(0x1f, kEpsn);
  deliver(b.eng, f0, 0);  // past: the same packet again
  expect_one_ack(0x1f, kEpsn);
  deliver(b.eng, req(kRcSendOnly, kEpsn - 5, pattern(8, 1)), 0);  // older still
  expect_one_ack(0x1f, kEpsn);
  EXPECT_EQ(b.poll().size(), 1u);
  EXPECT_EQ(qp().rq.count(), 1u);  // the second receive WQE is untouched
  EXPECT_EQ(b.eng.counters().rx_duplicate, 2u);
  EXPECT_EQ(qp().resp.epsn.value(), kEpsn + 1);
}

TEST_F(ResponderTest, FuturePsnGetsExactlyOneSequenceNak) {
  post_rwqe(1, 64);
  post_rwqe(2, 64, 64);
  post_rwqe(3, 64, 128);
  deliver(b.eng, req(kRcSendOnly, kEpsn + 2, pattern(8, 1)), 0);
  expect_one_ack(0x60, kEpsn);  // NAK PSN sequence error names the expected PSN
  deliver(b.eng, req(kRcSendOnly, kEpsn + 3, pattern(8, 1)), 0);
  deliver(b.eng, req(kRcSendOnly, kEpsn + 5, pattern(8, 1)), 0);
  EXPECT_TRUE(capture(b.eng, 0).empty());  // silence until ePSN arrives
  EXPECT_EQ(b.eng.counters().rx_out_of_sequence, 3u);
  EXPECT_EQ(drops(Drop::kOutOfSequence), 2u);
  EXPECT_TRUE(b.poll().empty());
  // In order again, then a new gap gets a new NAK.
  deliver(
      b.eng,
      Frames{req(kRcSendOnly, kEpsn, pattern(8, 1)), req(kRcSendOnly, kEpsn + 1, pattern(8, 1))},
      0);
  expect_one_ack(0x1f, kEpsn + 1);
  deliver(b.eng, req(kRcSendOnly, kEpsn + 4, pattern(8, 1)), 0);
  expect_one_ack(0x60, kEpsn + 2);
  EXPECT_EQ(b.eng.counters().naks_sent[0], 2u);
  EXPECT_EQ(b.poll().size(), 2u);
  EXPECT_EQ(b.state(qb), QpState::kRts);
}

TEST_F(ResponderTest, DuplicateReadIsReplayedFromMemory) {
  const uint64_t va = Node::addr(mem) + 100;
  deliver(b.eng, read_req(kEpsn, va, 3000, key), 0);
  Frames f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(opcode_of(f[0]), kRcRdmaReadResponseFirst);
  EXPECT_EQ(opcode_of(f[1]), kRcRdmaReadResponseMiddle);
  EXPECT_EQ(opcode_of(f[2]), kRcRdmaReadResponseLast);
  EXPECT_EQ(0, std::memcmp(parse(f[1]).payload(), mem.data() + 100 + 1024, 1024));
  EXPECT_EQ(qp().resp.epsn.value(), kEpsn + 3);
  // Past: the whole request again. The memory changed meanwhile: a replay reads
  // it again.
  mem[100] = 0xEE;
  deliver(b.eng, read_req(kEpsn, va, 3000, key), 0);
  f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(psn_of(f[0]), kEpsn);
  EXPECT_EQ(parse(f[0]).payload()[0], 0xEE);
  EXPECT_EQ(psn_of(f[2]), kEpsn + 2);
  // Past, from the middle (a requester retrying after a lost response).
  deliver(b.eng, read_req(kEpsn + 1, va + 1024, 3000 - 1024, key), 0);
  f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(opcode_of(f[0]), kRcRdmaReadResponseFirst);
  EXPECT_EQ(psn_of(f[0]), kEpsn + 1);
  EXPECT_EQ(opcode_of(f[1]), kRcRdmaReadResponseLast);
  EXPECT_EQ(psn_of(f[1]), kEpsn + 2);
  EXPECT_EQ(parse(f[1]).payload_len, 3000u - 2048);
  EXPECT_EQ(0, std::memcmp(parse(f[1]).payload(), mem.data() + 100 + 2048, 952));
  EXPECT_EQ(b.eng.counters().read_replays, 2u);
  EXPECT_EQ(qp().resp.epsn.value(), kEpsn + 3);
  // A duplicate asking for more than the original range is not served.
  deliver(b.eng, read_req(kEpsn + 2, va + 2048, 3000, key), 0);
  EXPECT_TRUE(capture(b.eng, 0).empty());
  EXPECT_EQ(drops(Drop::kDupUnmatched), 1u);
}

TEST_F(ResponderTest, DuplicateAtomicIsReplayedNotReExecuted) {
  uint64_t v = 10;
  std::memcpy(mem.data() + 64, &v, 8);
  const uint64_t va = Node::addr(mem) + 64;
  const Bytes fa = atomic_req(kRcFetchAdd, kEpsn, va, 5, 0, key);
  deliver(b.eng, fa, 0);
  Frames f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  wire::PacketView pv = parse(f[0]);
  EXPECT_EQ(pv.opcode, kRcAtomicAcknowledge);
  EXPECT_EQ(pv.atomic_ack()->orig(), 10u);
  EXPECT_EQ(pv.aeth()->syndrome(), 0x1f);
  std::memcpy(&v, mem.data() + 64, 8);
  EXPECT_EQ(v, 15u);
  deliver(b.eng, fa, 0);  // past
  f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(parse(f[0]).atomic_ack()->orig(), 10u);
  std::memcpy(&v, mem.data() + 64, 8);
  EXPECT_EQ(v, 15u);  // not added twice
  const Bytes cs = atomic_req(kRcCompareSwap, kEpsn + 1, va, 99, 15, key);
  deliver(b.eng, cs, 0);
  f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(parse(f[0]).atomic_ack()->orig(), 15u);
  std::memcpy(&v, mem.data() + 64, 8);
  EXPECT_EQ(v, 99u);
  v = 15;  // make a re-execution visible: it would swap again
  std::memcpy(mem.data() + 64, &v, 8);
  deliver(b.eng, cs, 0);
  f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(parse(f[0]).atomic_ack()->orig(), 15u);
  std::memcpy(&v, mem.data() + 64, 8);
  EXPECT_EQ(v, 15u);
  EXPECT_EQ(b.eng.counters().atomic_replays, 2u);
  deliver(b.eng, atomic_req(kRcFetchAdd, kEpsn - 7, va, 1, 0, key), 0);  // no saved result
  EXPECT_TRUE(capture(b.eng, 0).empty());
  EXPECT_EQ(drops(Drop::kDupUnmatched), 1u);
}

TEST_F(ResponderTest, ResponsesLeaveInPsnOrder) {
  post_rwqe(1, 64);
  // READ then SEND in one burst: the ACK of the SEND follows the READ responses.
  deliver(b.eng,
          Frames{read_req(kEpsn, Node::addr(mem), 2048, key),
                 req(kRcSendOnly, kEpsn + 2, pattern(8, 1))},
          0);
  Frames f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(opcode_of(f[0]), kRcRdmaReadResponseFirst);
  EXPECT_EQ(opcode_of(f[1]), kRcRdmaReadResponseLast);
  EXPECT_EQ(opcode_of(f[2]), kRcAcknowledge);
  EXPECT_EQ(psn_of(f[2]), kEpsn + 2);
}

TEST_F(ResponderTest, ReadResponseReplacesAnOwedAck) {
  // WRITE with AckReq then READ in one burst: the READ response acknowledges
  // the WRITE (its AETH); no ACK with an older PSN may follow it.
  deliver(b.eng,
          Frames{write_req(kRcRdmaWriteOnly, kEpsn, Node::addr(mem), key, 16, pattern(16, 1)),
                 read_req(kEpsn + 1, Node::addr(mem), 16, key)},
          0);
  Frames f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(opcode_of(f[0]), kRcRdmaReadResponseOnly);
  EXPECT_EQ(psn_of(f[0]), kEpsn + 1);
  EXPECT_EQ(parse(f[0]).aeth()->msn(), 2u);
}

TEST_F(ResponderTest, NakInvalidRequestOnOpcodeSequence) {
  post_rwqe(1, 64);
  post_rwqe(2, 64, 64);
  deliver(b.eng, req(kRcSendMiddle, kEpsn, pattern(1024, 1)), 0);  // MIDDLE without FIRST
  expect_one_ack(0x61, kEpsn);
  EXPECT_EQ(b.state(qb), QpState::kErr);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 2u);
  EXPECT_EQ(wc[0].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(b.eng.counters().naks_sent[1], 1u);
  deliver(b.eng, req(kRcSendOnly, kEpsn, pattern(8, 1)), 0);  // after the error: dropped
  EXPECT_TRUE(capture(b.eng, 0).empty());
  EXPECT_EQ(drops(Drop::kAfterError), 1u);
}

TEST_F(ResponderTest, NakInvalidRequestOnWrongKindMidMessage) {
  post_rwqe(1, 4096);
  deliver(b.eng, req(kRcSendFirst, kEpsn, pattern(1024, 1), {}, false), 0);
  deliver(b.eng, req(kRcRdmaWriteMiddle, kEpsn + 1, pattern(1024, 1)), 0);
  expect_one_ack(0x61, kEpsn + 1);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kRemInvReqErr);  // the receive in progress
  EXPECT_EQ(b.state(qb), QpState::kErr);
}

TEST_F(ResponderTest, NakInvalidRequestOnBadPacketLength) {
  deliver(b.eng, write_req(kRcRdmaWriteFirst, kEpsn, Node::addr(mem), key, 3000, pattern(1000, 1)),
          0);
  expect_one_ack(0x61, kEpsn);  // FIRST must carry a full path MTU
}

TEST_F(ResponderTest, NakInvalidRequestOnWriteBeyondRethLength) {
  const uint64_t va = Node::addr(mem);
  deliver(b.eng, write_req(kRcRdmaWriteFirst, kEpsn, va, key, 1500, pattern(1024, 1)), 0);
  expect_one_ack(0x1f, kEpsn);  // the crafted FIRST asked for an ACK
  deliver(b.eng, req(kRcRdmaWriteLast, kEpsn + 1, pattern(1024, 2)), 0);  // 476 expected
  expect_one_ack(0x61, kEpsn + 1);
  EXPECT_EQ(b.state(qb), QpState::kErr);
}

TEST_F(ResponderTest, NakRemoteAccessOnBadRkey) {
  post_rwqe(1, 64);
  deliver(b.eng, write_req(kRcRdmaWriteOnly, kEpsn, Node::addr(mem), key + 1, 8, pattern(8, 1)), 0);
  expect_one_ack(0x62, kEpsn);
  EXPECT_EQ(b.state(qb), QpState::kErr);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kWrFlushErr);
  EXPECT_EQ(b.eng.counters().naks_sent[2], 1u);
}

TEST_F(ResponderTest, NakRemoteAccessOnReadOutOfBounds) {
  deliver(b.eng, read_req(kEpsn, Node::addr(mem) + 8000, 200, key), 0);
  expect_one_ack(0x62, kEpsn);
}

TEST_F(ResponderTest, NakRemoteOperationalErrorOnUnusableReceiveWqe) {
  // The receive WQE names a key that does not exist: the responder cannot place
  // the data (IBA class A: remote operational error to the peer, local
  // protection error on the receive completion).
  ASSERT_TRUE(b.eng.post_recv(qb, make_recv(5, mem, key + 0x100, 64)).ok());
  deliver(b.eng, req(kRcSendOnly, kEpsn, pattern(8, 1)), 0);
  expect_one_ack(0x63, kEpsn);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].wr_id, 5u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocProtErr);
  EXPECT_EQ(b.state(qb), QpState::kErr);
}

TEST_F(ResponderTest, SendLongerThanReceiveBuffer) {
  post_rwqe(5, 16);
  deliver(b.eng, req(kRcSendOnly, kEpsn, pattern(100, 1)), 0);
  expect_one_ack(0x61, kEpsn);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, WcStatus::kLocLenErr);
  EXPECT_EQ(b.state(qb), QpState::kErr);
}

TEST_F(ResponderTest, RnrNakCarriesMinRnrTimer) {
  deliver(b.eng, req(kRcSendOnly, kEpsn, pattern(8, 1)), 0);
  expect_one_ack(0x20 | 14, kEpsn);
  EXPECT_EQ(b.eng.counters().rnr_naks_sent, 1u);
  deliver(b.eng, req(kRcSendOnly, kEpsn + 1, pattern(8, 2)), 0);  // behind the RNR'd one
  EXPECT_TRUE(capture(b.eng, 0).empty());
  EXPECT_EQ(qp().resp.epsn.value(), kEpsn);
  post_rwqe(1, 64);
  post_rwqe(2, 64, 64);
  deliver(
      b.eng,
      Frames{req(kRcSendOnly, kEpsn, pattern(8, 1)), req(kRcSendOnly, kEpsn + 1, pattern(8, 2))},
      0);
  expect_one_ack(0x1f, kEpsn + 1);
  EXPECT_EQ(b.poll().size(), 2u);
  EXPECT_EQ(b.state(qb), QpState::kRts);
}

TEST_F(ResponderTest, WriteWithImmediateNeedsReceiveWqe) {
  const Bytes d = pattern(8, 3);
  deliver(b.eng, write_req(kRcRdmaWriteOnlyWithImmediate, kEpsn, Node::addr(mem) + 512, key, 8, d),
          0);
  expect_one_ack(0x20 | 14, kEpsn);
  EXPECT_NE(mem[512], d[0]);  // nothing written before the receive WQE exists
  post_rwqe(9, 0);
  Bytes f = req(kRcRdmaWriteOnlyWithImmediate, kEpsn, d, [&](wire::FrameWriter& fw) {
    fw.reth().set_va(Node::addr(mem) + 512);
    fw.reth().set_rkey(key);
    fw.reth().set_dma_len(8);
    fw.immdt().set_imm(0xfeedf00d);
  });
  deliver(b.eng, f, 0);
  expect_one_ack(0x1f, kEpsn);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].opcode, WcOpcode::kRecvRdmaWithImm);
  EXPECT_EQ(wc[0].imm_data, 0xfeedf00du);
  EXPECT_EQ(wc[0].byte_len, 8u);
  EXPECT_TRUE(std::equal(d.begin(), d.end(), mem.begin() + 512));
}

TEST_F(ResponderTest, AtomicChecks) {
  deliver(b.eng, atomic_req(kRcFetchAdd, kEpsn, Node::addr(mem) + 4, 1, 0, key), 0);
  expect_one_ack(0x61, kEpsn);  // misaligned
}

TEST_F(ResponderTest, AtomicWithoutMrAtomicAccess) {
  Bytes ro(64);
  const uint32_t k = b.reg(ro, kAccessLocalWrite | kAccessRemoteWrite);
  deliver(b.eng, atomic_req(kRcFetchAdd, kEpsn, Node::addr(ro), 1, 0, k), 0);
  expect_one_ack(0x62, kEpsn);
}

TEST_F(ResponderTest, SendWithInvalidate) {
  Bytes target(64);
  const uint32_t tk = b.reg(target);
  post_rwqe(3, 64);
  deliver(b.eng,
          req(kRcSendOnlyWithInvalidate, kEpsn, pattern(8, 1),
              [&](wire::FrameWriter& fw) { fw.ieth().set_rkey(tk); }),
          0);
  expect_one_ack(0x1f, kEpsn);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_TRUE(wc[0].wc_flags & kWcWithInv);
  EXPECT_EQ(wc[0].imm_data, tk);
  EXPECT_EQ(b.mrs.remote(b.pd, tk, Node::addr(target), 8, kAccessRemoteWrite), nullptr);
  // Now a WRITE through the invalidated key is a remote access error.
  deliver(b.eng, write_req(kRcRdmaWriteOnly, kEpsn + 1, Node::addr(target), tk, 8, pattern(8, 1)),
          0);
  expect_one_ack(0x62, kEpsn + 1);
}

TEST_F(ResponderTest, ZeroLengthMessages) {
  post_rwqe(1, 64);
  deliver(b.eng,
          Frames{req(kRcSendOnly, kEpsn, {}),
                 // a zero-length WRITE does not check its rkey (IBA 9.7.4.1.4)
                 write_req(kRcRdmaWriteOnly, kEpsn + 1, 0, 0xdeadbeef, 0, {})},
          0);
  expect_one_ack(0x1f, kEpsn + 1);
  auto wc = b.poll();
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].byte_len, 0u);
  deliver(b.eng, read_req(kEpsn + 2, 0, 0, 0), 0);
  Frames f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(opcode_of(f[0]), kRcRdmaReadResponseOnly);
  EXPECT_EQ(parse(f[0]).payload_len, 0u);
}

TEST_F(ResponderTest, MalformedAndMisaddressedInputIsDroppedAndCounted) {
  post_rwqe(1, 64);
  Bytes good = req(kRcSendOnly, kEpsn, pattern(8, 1));
  deliver(b.eng, craft(1, 2, kRcSendOnly, 0x123456, kEpsn, pattern(8, 1)), 0);
  EXPECT_EQ(drops(Drop::kUnknownQp), 1u);
  deliver(b.eng, craft(3, 2, kRcSendOnly, qb, kEpsn, pattern(8, 1)), 0);  // not the peer
  EXPECT_EQ(drops(Drop::kBadSource), 1u);
  deliver(b.eng,
          req(kRcSendOnly, kEpsn, pattern(8, 1),
              [](wire::FrameWriter& fw) { fw.bth().set_pkey(0x1234); }),
          0);
  EXPECT_EQ(drops(Drop::kBadPkey), 1u);
  deliver(b.eng, req(kUdSendOnly, kEpsn, pattern(8, 1)), 0);
  EXPECT_EQ(drops(Drop::kOpcodeForQpType), 1u);
  Bytes bad = good;
  bad[bad.size() - 10] ^= 1;  // payload corrupted: ICRC mismatch
  deliver(b.eng, bad, 0);
  EXPECT_EQ(b.eng.counters().rx_parse_drop[static_cast<size_t>(wire::RxDrop::kBadIcrc)], 1u);
  Bytes truncated(good.begin(), good.begin() + 40);
  deliver(b.eng, truncated, 0);
  EXPECT_EQ(b.eng.counters().rx_parse_drop[static_cast<size_t>(wire::RxDrop::kTooShort)], 1u);
  // A response opcode for a QP with nothing outstanding.
  deliver(b.eng, ack_frame(1, 2, qb, 0x150), 0);  // the QP sent nothing from PSN 0x100 on
  EXPECT_EQ(drops(Drop::kAckBadPsn), 1u);
  deliver(b.eng, ack_frame(1, 2, qb, 0x5), 0);  // older than anything outstanding
  EXPECT_EQ(drops(Drop::kStaleResponse), 1u);
  EXPECT_TRUE(capture(b.eng, 0).empty());
  EXPECT_TRUE(b.poll().empty());
  EXPECT_EQ(b.state(qb), QpState::kRts);
  deliver(b.eng, good, 0);  // still works
  expect_one_ack(0x1f, kEpsn);
  // A QP not yet in RTR drops requests.
  const uint32_t idle = b.create_qp();
  deliver(b.eng, craft(1, 2, kRcSendOnly, idle, 0, pattern(8, 1)), 0);
  EXPECT_EQ(drops(Drop::kBadQpState), 1u);
}

TEST_F(ResponderTest, EcnCongestionExperiencedCounted) {
  post_rwqe(1, 64);
  wire::PathHeaders p = path_between(1, 2);
  p.traffic_class = 0x03;  // ECN CE
  Bytes buf(512);
  wire::FrameWriter fw(buf.data(), 512, p, kRcSendOnly, 8);
  fw.bth().set_dest_qpn(qb);
  fw.bth().set_psn(wire::Psn(kEpsn));
  fw.bth().set_ack_req(true);
  buf.resize(fw.finish());
  deliver(b.eng, buf, 0);
  EXPECT_EQ(b.eng.counters().rx_ecn_ce, 1u);
  expect_one_ack(0x1f, kEpsn);
}

class ResponderOneReadTest : public ResponderTest {
 protected:
  void SetUp() override { setup(kAccessRemoteRead, 1); }
};

TEST_F(ResponderOneReadTest, MoreReadsThanMaxDestRdAtomicRejected) {
  deliver(b.eng,
          Frames{read_req(kEpsn, Node::addr(mem), 2048, key),
                 read_req(kEpsn + 2, Node::addr(mem), 8, key)},
          0);
  Frames f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 3u);  // the first READ is still answered, then the NAK
  EXPECT_EQ(opcode_of(f[0]), kRcRdmaReadResponseFirst);
  EXPECT_EQ(opcode_of(f[1]), kRcRdmaReadResponseLast);
  EXPECT_EQ(syndrome_of(f[2]), 0x61);
  EXPECT_EQ(psn_of(f[2]), kEpsn + 2);
}

// Past then in-order: a duplicate READ queues a replay; the next READ reuses the
// only resource. The requester could not have sent it without completing the
// first one, so the replay gives way instead of being taken for a violation.
TEST_F(ResponderOneReadTest, NewReadDisplacesAQueuedReplay) {
  const Bytes first = read_req(kEpsn, Node::addr(mem), 8, key);
  deliver(b.eng, first, 0);
  ASSERT_EQ(capture(b.eng, 0).size(), 1u);
  deliver(b.eng, Frames{first, read_req(kEpsn + 1, Node::addr(mem) + 64, 8, key)}, 0);
  Frames f = capture(b.eng, 0);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(opcode_of(f[0]), kRcRdmaReadResponseOnly);
  EXPECT_EQ(psn_of(f[0]), kEpsn + 1);
  EXPECT_EQ(0, std::memcmp(parse(f[0]).payload(), mem.data() + 64, 8));
  EXPECT_EQ(b.state(qb), QpState::kRts);
}

TEST_F(ResponderOneReadTest, WriteWithoutQpRemoteWriteAccess) {
  deliver(b.eng, write_req(kRcRdmaWriteOnly, kEpsn, Node::addr(mem), key, 8, pattern(8, 1)), 0);
  expect_one_ack(0x61, kEpsn);  // as rxe: the QP does not allow remote writes
}

// ---------------------------------------------------------------------------
// RDMA WRITE fast path (rx_dispatch.cc): the MR range is checked once at FIRST;
// a deregistration or invalidation before a later packet must still be caught.

namespace fastpath {

constexpr uint32_t kMtu = 1024;

class WriteFastPathTest : public ResponderTest {
 protected:
  Bytes write_pkt(uint8_t op, uint32_t k, const Bytes& data, uint32_t rkey, bool ack_req = false) {
    const Bytes part(data.begin() + k * kMtu,
                     data.begin() + std::min<size_t>(data.size(), (k + 1) * kMtu));
    if (op == kRcRdmaWriteFirst) {
      return req(
          op, kEpsn + k, part,
          [&](wire::FrameWriter& fw) {
            fw.reth().set_va(Node::addr(mem));
            fw.reth().set_rkey(rkey);
            fw.reth().set_dma_len(static_cast<uint32_t>(data.size()));
          },
          ack_req);
    }
    return req(op, kEpsn + k, part, {}, ack_req);
  }
};

TEST_F(WriteFastPathTest, MiddlesInOneBurstPlaceEveryByte) {
  const Bytes d = pattern(7 * kMtu, 3);
  Frames in = {write_pkt(kRcRdmaWriteFirst, 0, d, key)};
  for (uint32_t k = 1; k < 6; ++k) in.push_back(write_pkt(kRcRdmaWriteMiddle, k, d, key));
  in.push_back(write_pkt(kRcRdmaWriteLast, 6, d, key, true));
  deliver(b.eng, in, 0);
  expect_one_ack(0x1f, kEpsn + 6);
  EXPECT_TRUE(std::equal(d.begin(), d.end(), mem.begin()));
  EXPECT_EQ(qp().resp.msg, RespState::kNone);
}

TEST_F(WriteFastPathTest, DeregBetweenPacketsIsRemoteAccessError) {
  const Bytes d = pattern(4 * kMtu, 5);
  deliver(b.eng, Frames{write_pkt(kRcRdmaWriteFirst, 0, d, key)}, 0);
  ASSERT_TRUE(b.mrs.dereg_mr(key).ok());
  deliver(b.eng, Frames{write_pkt(kRcRdmaWriteMiddle, 1, d, key)}, 0);
  expect_one_ack(0x62, kEpsn + 1);
  EXPECT_EQ(b.state(qb), QpState::kErr);
  EXPECT_FALSE(std::equal(d.begin() + kMtu, d.begin() + 2 * kMtu, mem.begin() + kMtu));
}

TEST_F(WriteFastPathTest, ReregisteredMrDoesNotRevalidateTheMessage) {
  const Bytes d = pattern(4 * kMtu, 6);
  deliver(b.eng, Frames{write_pkt(kRcRdmaWriteFirst, 0, d, key)}, 0);
  ASSERT_TRUE(b.mrs.dereg_mr(key).ok());
  b.reg(mem);  // same entry, same memory, new generation
  deliver(b.eng, Frames{write_pkt(kRcRdmaWriteMiddle, 1, d, key)}, 0);
  expect_one_ack(0x62, kEpsn + 1);
  EXPECT_EQ(b.state(qb), QpState::kErr);
}

TEST_F(WriteFastPathTest, InvalidateBetweenPacketsIsRemoteAccessError) {
  const Bytes d = pattern(4 * kMtu, 7);
  deliver(b.eng, Frames{write_pkt(kRcRdmaWriteFirst, 0, d, key)}, 0);
  ASSERT_TRUE(b.mrs.invalidate_rkey(b.pd, key).ok());
  deliver(b.eng, Frames{write_pkt(kRcRdmaWriteMiddle, 1, d, key)}, 0);
  expect_one_ack(0x62, kEpsn + 1);
  EXPECT_EQ(b.state(qb), QpState::kErr);
}

TEST_F(WriteFastPathTest, AccessRevokedBetweenPacketsIsInvalidRequest) {
  const Bytes d = pattern(4 * kMtu, 8);
  deliver(b.eng, Frames{write_pkt(kRcRdmaWriteFirst, 0, d, key)}, 0);
  QpAttr a;
  a.qp_access_flags = kAccessRemoteRead;
  ASSERT_TRUE(b.eng.modify_qp(qb, a, kQpAccessFlags).ok());
  deliver(b.eng, Frames{write_pkt(kRcRdmaWriteMiddle, 1, d, key)}, 0);
  expect_one_ack(0x61, kEpsn + 1);
}

// The same frames delivered as one burst (fast path, header prediction) and one
// frame per rx_burst leave the same memory, counters, completions and output.
TEST(WriteFastPathBurst, BurstAndSingleFramesAgree) {
  const Bytes d = pattern(12 * kMtu, 9);
  struct Run {
    Node b{2};
    uint32_t qb = 0;
    Bytes mem = Bytes(16 * kMtu, 0);
    uint32_t key = 0;
    Run() {
      qb = b.create_qp();
      RcOpts o;
      o.rq_psn = kEpsn;
      bring_up_rc(b, qb, 1, kPeerQpn, o);
      key = b.reg(mem);
    }
    Bytes pkt(uint8_t op, uint32_t k, const Bytes& data, bool ack_req = false, uint8_t from = 1) {
      const Bytes part(data.begin() + k * kMtu, data.begin() + (k + 1) * kMtu);
      return craft(
          from, 2, op, qb, kEpsn + k, part,
          [&](wire::FrameWriter& fw) {
            if (op == kRcRdmaWriteFirst) {
              fw.reth().set_va(Node::addr(mem));
              fw.reth().set_rkey(key);
              fw.reth().set_dma_len(static_cast<uint32_t>(data.size()));
            }
          },
          ack_req);
    }
  };
  // Each anomaly follows a packet that took the fast path, so that in the burst
  // it meets the header prediction.
  auto make = [&](Run& r) {
    auto refresh = [](Bytes& f) {
      wire::icrc_store(
          f.data() + f.size() - 4,
          wire::icrc_compute(f.data() + 14, static_cast<uint32_t>(f.size() - 18), false));
    };
    Frames in;
    in.push_back(r.pkt(kRcRdmaWriteFirst, 0, d));
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 1, d));
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 2, d, true));
    Bytes pkey = r.pkt(kRcRdmaWriteMiddle, 3, d);
    pkey[44] = 0x00;  // P_Key 0x00FF: another partition
    refresh(pkey);
    in.push_back(pkey);
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 3, d));
    Bytes bad_icrc = r.pkt(kRcRdmaWriteMiddle, 4, d);
    bad_icrc[bad_icrc.size() - 1] ^= 1;
    in.push_back(bad_icrc);
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 4, d));
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 4, d));  // duplicate
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 5, d));
    Bytes ce = r.pkt(kRcRdmaWriteMiddle, 6, d);  // ECN CE: general path
    ce[15] |= 3;
    refresh(ce);
    in.push_back(ce);
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 7, d, false, 3));  // from another address
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 7, d));
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 9, d));   // future PSN: sequence NAK
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 10, d));  // silence behind the NAK
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 8, d));   // the expected one
    in.push_back(r.pkt(kRcRdmaWriteMiddle, 9, d));
    in.push_back(r.pkt(kRcRdmaWriteLast, 10, d));  // LAST, but the message has 12 packets
    return in;
  };
  Run burst, single;
  const Frames fb = make(burst);
  const Frames fs = make(single);
  deliver(burst.b.eng, fb, 0);
  for (const Bytes& f : fs) deliver(single.b.eng, f, 0);
  EXPECT_EQ(burst.mem, single.mem);
  const EngineCounters& cb = burst.b.eng.counters();
  const EngineCounters& cs = single.b.eng.counters();
  EXPECT_EQ(cb.rx_packets, cs.rx_packets);
  EXPECT_EQ(cb.rx_bytes, cs.rx_bytes);
  EXPECT_EQ(cb.rx_parse_drop, cs.rx_parse_drop);
  EXPECT_EQ(cb.rx_drop, cs.rx_drop);
  EXPECT_EQ(cb.rx_ecn_ce, cs.rx_ecn_ce);
  EXPECT_EQ(cb.rx_duplicate, cs.rx_duplicate);
  EXPECT_EQ(cb.rx_out_of_sequence, cs.rx_out_of_sequence);
  EXPECT_EQ(cb.rx_parse_drop[static_cast<size_t>(wire::RxDrop::kBadIcrc)], 1u);
  EXPECT_EQ(cb.rx_ecn_ce, 1u);
  EXPECT_EQ(cb.rx_drop[static_cast<size_t>(Drop::kBadSource)], 1u);
  EXPECT_EQ(cb.rx_drop[static_cast<size_t>(Drop::kBadPkey)], 1u);
  EXPECT_EQ(burst.b.state(burst.qb), single.b.state(single.qb));
  EXPECT_EQ(capture(burst.b.eng, 0), capture(single.b.eng, 0));
  EXPECT_EQ(burst.b.poll().size(), single.b.poll().size());
  EXPECT_EQ(cb.rx_duplicate, 1u);
  EXPECT_EQ(burst.b.state(burst.qb), QpState::kErr);  // the bad LAST
  // The packets before the bad LAST were placed.
  EXPECT_TRUE(std::equal(d.begin(), d.begin() + 10 * kMtu, burst.mem.begin()));
}

}  // namespace fastpath

}  // namespace
}  // namespace burst::core::test
