// WQE and CQE encoding, and burstd's validation of entries written by the
// application: every malformed field is rejected, random entries never make
// the decoder read outside the entry (exact-size heap buffer under ASan).
#include "shm/wqe.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "shm/layout.h"
#include "shm_test_util.h"

namespace burst::shm {
namespace {

using core::WrOpcode;

const WqeLimits kLimits{SendEntrySize(4, 128), 4, 128};  // 256-byte entries

core::SendWr SendWithSges(WrOpcode op, uint32_t n) {
  core::SendWr wr;
  wr.wr_id = 0x1122334455667788ull;
  wr.opcode = op;
  wr.send_flags = core::kSendSignaled | core::kSendSolicited;
  wr.num_sge = n;
  for (uint32_t i = 0; i < n; ++i) wr.sg_list[i] = core::Sge{0x1000u * (i + 1), 100 + i, 40 + i};
  return wr;
}

TEST(ShmWqe, SendRoundTrip) {
  std::vector<uint8_t> entry(kLimits.entry_size);
  core::SendWr wr = SendWithSges(WrOpcode::kSendWithImm, 3);
  wr.imm_data = 0xdeadbeef;
  ASSERT_TRUE(EncodeSendWqe(wr, 0, {}, kLimits, entry.data()).ok());
  DecodedSendWqe d;
  ASSERT_TRUE(DecodeSendWqe(entry.data(), kLimits, &d).ok());
  EXPECT_EQ(d.wr.wr_id, wr.wr_id);
  EXPECT_EQ(d.wr.opcode, WrOpcode::kSendWithImm);
  EXPECT_EQ(d.wr.send_flags, wr.send_flags);
  EXPECT_EQ(d.wr.imm_data, 0xdeadbeefu);
  ASSERT_EQ(d.wr.num_sge, 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(d.wr.sg_list[i].addr, wr.sg_list[i].addr);
    EXPECT_EQ(d.wr.sg_list[i].length, wr.sg_list[i].length);
    EXPECT_EQ(d.wr.sg_list[i].lkey, wr.sg_list[i].lkey);
  }
}

TEST(ShmWqe, RdmaAtomicUdAndInvalidateRoundTrip) {
  std::vector<uint8_t> entry(kLimits.entry_size);
  DecodedSendWqe d;

  core::SendWr write = SendWithSges(WrOpcode::kRdmaWriteWithImm, 1);
  write.rdma = {0xabcdef000ull, 0x77};
  write.imm_data = 5;
  ASSERT_TRUE(EncodeSendWqe(write, 0, {}, kLimits, entry.data()).ok());
  ASSERT_TRUE(DecodeSendWqe(entry.data(), kLimits, &d).ok());
  EXPECT_EQ(d.wr.rdma.remote_addr, 0xabcdef000ull);
  EXPECT_EQ(d.wr.rdma.rkey, 0x77u);
  EXPECT_EQ(d.wr.imm_data, 5u);

  core::SendWr cas = SendWithSges(WrOpcode::kAtomicCmpAndSwp, 1);
  cas.atomic.remote_addr = 0x8000;
  cas.atomic.rkey = 9;
  cas.atomic.compare_add = 11;
  cas.atomic.swap = 22;
  ASSERT_TRUE(EncodeSendWqe(cas, 0, {}, kLimits, entry.data()).ok());
  ASSERT_TRUE(DecodeSendWqe(entry.data(), kLimits, &d).ok());
  EXPECT_EQ(d.wr.opcode, WrOpcode::kAtomicCmpAndSwp);
  EXPECT_EQ(d.wr.atomic.remote_addr, 0x8000u);
  EXPECT_EQ(d.wr.atomic.rkey, 9u);
  EXPECT_EQ(d.wr.atomic.compare_add, 11u);
  EXPECT_EQ(d.wr.atomic.swap, 22u);

  core::SendWr ud = SendWithSges(WrOpcode::kSend, 2);
  ud.ud.remote_qpn = 0xabcde;
  ud.ud.remote_qkey = 0x80010000u;
  ASSERT_TRUE(EncodeSendWqe(ud, 42, {}, kLimits, entry.data()).ok());
  ASSERT_TRUE(DecodeSendWqe(entry.data(), kLimits, &d).ok());
  EXPECT_EQ(d.ah_handle, 42u);
  EXPECT_EQ(d.wr.ud.remote_qpn, 0xabcdeu);
  EXPECT_EQ(d.wr.ud.remote_qkey, 0x80010000u);

  core::SendWr inv = SendWithSges(WrOpcode::kSendWithInv, 1);
  inv.invalidate_rkey = 0x4321;
  ASSERT_TRUE(EncodeSendWqe(inv, 0, {}, kLimits, entry.data()).ok());
  ASSERT_TRUE(DecodeSendWqe(entry.data(), kLimits, &d).ok());
  EXPECT_EQ(d.wr.invalidate_rkey, 0x4321u);
}

TEST(ShmWqe, InlineRoundTrip) {
  std::vector<uint8_t> entry(kLimits.entry_size);
  std::vector<uint8_t> data(128);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  core::SendWr wr = SendWithSges(WrOpcode::kSend, 0);
  wr.send_flags |= core::kSendInline;
  ASSERT_TRUE(EncodeSendWqe(wr, 0, data, kLimits, entry.data()).ok());
  DecodedSendWqe d;
  ASSERT_TRUE(DecodeSendWqe(entry.data(), kLimits, &d).ok());
  ASSERT_EQ(d.inline_len, 128u);
  EXPECT_EQ(d.inline_data, entry.data() + BURST_SHM_SEND_WQE_PAYLOAD);
  EXPECT_EQ(std::memcmp(d.inline_data, data.data(), 128), 0);
  EXPECT_EQ(d.wr.num_sge, 0u);
  // One byte more than the queue allows.
  data.push_back(0);
  EXPECT_FALSE(EncodeSendWqe(wr, 0, data, kLimits, entry.data()).ok());
}

// Starts from a valid entry, breaks one field, expects a rejection.
TEST(ShmWqe, DecodeRejectsEachMalformedField) {
  std::vector<uint8_t> good(kLimits.entry_size);
  ASSERT_TRUE(EncodeSendWqe(SendWithSges(WrOpcode::kSend, 2), 0, {}, kLimits, good.data()).ok());
  auto rejected = [&](const char* what, auto mutate, WqeLimits lim = kLimits) {
    std::vector<uint8_t> e = good;
    burst_shm_send_wqe w;
    std::memcpy(&w, e.data(), sizeof(w));
    mutate(&w, e.data());
    std::memcpy(e.data(), &w, sizeof(w));
    DecodedSendWqe d;
    EXPECT_FALSE(DecodeSendWqe(e.data(), lim, &d).ok()) << what;
  };
  rejected("unknown opcode", [](burst_shm_send_wqe* w, uint8_t*) { w->opcode = 10; });
  rejected("opcode 255", [](burst_shm_send_wqe* w, uint8_t*) { w->opcode = 255; });
  rejected("unknown flag", [](burst_shm_send_wqe* w, uint8_t*) { w->send_flags |= 1u << 4; });
  rejected("num_sge above max_sge", [](burst_shm_send_wqe* w, uint8_t*) { w->num_sge = 5; });
  rejected("num_sge huge", [](burst_shm_send_wqe* w, uint8_t*) { w->num_sge = 0xffff; });
  rejected(
      "num_sge beyond the entry", [](burst_shm_send_wqe* w, uint8_t*) { w->num_sge = 5; },
      WqeLimits{128, 16, 0});  // 128-byte entry holds 4 SGEs whatever max_sge says
  rejected("inline_len without inline", [](burst_shm_send_wqe* w, uint8_t*) { w->inline_len = 4; });
  rejected("inline with SGEs", [](burst_shm_send_wqe* w, uint8_t*) {
    w->send_flags |= core::kSendInline;
    w->inline_len = 8;
  });
  rejected("inline too long", [](burst_shm_send_wqe* w, uint8_t*) {
    w->send_flags |= core::kSendInline;
    w->num_sge = 0;
    w->inline_len = 129;
  });
  rejected(
      "inline longer than the entry",
      [](burst_shm_send_wqe* w, uint8_t*) {
        w->send_flags |= core::kSendInline;
        w->num_sge = 0;
        w->inline_len = 200;
      },
      WqeLimits{128, 4, 960});
  rejected("inline with READ", [](burst_shm_send_wqe* w, uint8_t*) {
    w->opcode = static_cast<uint8_t>(WrOpcode::kRdmaRead);
    w->send_flags |= core::kSendInline;
    w->num_sge = 0;
    w->inline_len = 8;
  });
  rejected("inline with atomic", [](burst_shm_send_wqe* w, uint8_t*) {
    w->opcode = static_cast<uint8_t>(WrOpcode::kAtomicFetchAndAdd);
    w->send_flags |= core::kSendInline;
    w->num_sge = 0;
    w->inline_len = 8;
  });
  rejected("total length above 2^31", [](burst_shm_send_wqe*, uint8_t* e) {
    burst_shm_sge s{0, 0x80000000u, 1};
    std::memcpy(e + BURST_SHM_SEND_WQE_PAYLOAD + 16, &s, sizeof(s));
  });
  rejected(
      "entry smaller than a header", [](burst_shm_send_wqe*, uint8_t*) {}, WqeLimits{32, 4, 0});
  DecodedSendWqe d;
  EXPECT_TRUE(DecodeSendWqe(good.data(), kLimits, &d).ok()) << "the base entry is valid";
}

TEST(ShmWqe, RecvRoundTripAndRejects) {
  const WqeLimits lim{RecvEntrySize(4), 4, 0};
  std::vector<uint8_t> entry(lim.entry_size);
  core::RecvWr wr;
  wr.wr_id = 77;
  wr.num_sge = 4;
  for (uint32_t i = 0; i < 4; ++i) wr.sg_list[i] = core::Sge{i * 0x100u, 64, 3};
  ASSERT_TRUE(EncodeRecvWqe(wr, lim, entry.data()).ok());
  core::RecvWr out;
  ASSERT_TRUE(DecodeRecvWqe(entry.data(), lim, &out).ok());
  EXPECT_EQ(out.wr_id, 77u);
  ASSERT_EQ(out.num_sge, 4u);
  EXPECT_EQ(out.sg_list[3].addr, 0x300u);

  wr.num_sge = 5;
  EXPECT_FALSE(EncodeRecvWqe(wr, lim, entry.data()).ok());
  burst_shm_recv_wqe h;
  std::memcpy(&h, entry.data(), sizeof(h));
  h.num_sge = 5;
  std::memcpy(entry.data(), &h, sizeof(h));
  EXPECT_FALSE(DecodeRecvWqe(entry.data(), lim, &out).ok());
  h.num_sge = 2;
  std::memcpy(entry.data(), &h, sizeof(h));
  burst_shm_sge big{0, 0xffffffffu, 3};
  std::memcpy(entry.data() + BURST_SHM_RECV_WQE_PAYLOAD, &big, sizeof(big));
  EXPECT_FALSE(DecodeRecvWqe(entry.data(), lim, &out).ok()) << "length above 2^31";
}

TEST(ShmWqe, CqeRoundTrip) {
  core::Wc wc;
  wc.wr_id = 99;
  wc.status = core::WcStatus::kRemAccessErr;
  wc.opcode = core::WcOpcode::kRecvRdmaWithImm;
  wc.vendor_err = 3;
  wc.byte_len = 4096;
  wc.imm_data = 0x01020304;
  wc.qp_num = 0x11;
  wc.src_qp = 0x22;
  wc.wc_flags = core::kWcWithImm | core::kWcGrh;
  wc.pkey_index = 1;
  wc.slid = 2;
  wc.sl = 3;
  wc.dlid_path_bits = 4;
  burst_shm_cqe cqe;
  EncodeCqe(wc, &cqe);
  const core::Wc back = DecodeCqe(cqe);
  EXPECT_EQ(back.wr_id, wc.wr_id);
  EXPECT_EQ(back.status, wc.status);
  EXPECT_EQ(back.opcode, wc.opcode);
  EXPECT_EQ(back.vendor_err, wc.vendor_err);
  EXPECT_EQ(back.byte_len, wc.byte_len);
  EXPECT_EQ(back.imm_data, wc.imm_data);
  EXPECT_EQ(back.qp_num, wc.qp_num);
  EXPECT_EQ(back.src_qp, wc.src_qp);
  EXPECT_EQ(back.wc_flags, wc.wc_flags);
  EXPECT_EQ(back.pkey_index, wc.pkey_index);
  EXPECT_EQ(back.slid, wc.slid);
  EXPECT_EQ(back.sl, wc.sl);
  EXPECT_EQ(back.dlid_path_bits, wc.dlid_path_bits);
}

// Random entries of every size: decoding reads only inside the entry
// (exact-size heap buffer, ASan) and whatever it accepts respects the limits.
TEST(ShmWqe, RandomEntriesStayInsideTheEntry) {
  std::mt19937_64 rng(99);
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    const uint32_t entry_size = 16u << (rng() % 7);  // 16 .. 1024
    const WqeLimits lim{entry_size, static_cast<uint32_t>(rng() % 20),
                        static_cast<uint32_t>(rng() % 1100)};
    testing::HeapRegion e(entry_size);
    for (uint32_t b = 0; b < entry_size; ++b) e.data()[b] = static_cast<uint8_t>(rng());
    if (entry_size >= BURST_SHM_SEND_WQE_PAYLOAD && rng() % 2) {  // plausible headers, often
      e.data()[8] = static_cast<uint8_t>(rng() % 11);
      e.data()[10] = static_cast<uint8_t>(rng() % 6);
      e.data()[11] = 0;
      std::memset(e.data() + 12, 0, 8);
      e.data()[12] = static_cast<uint8_t>(rng() % 16);
      if (e.data()[12] & core::kSendInline) {
        e.data()[10] = 0;
        e.data()[16] = static_cast<uint8_t>(rng());
      }
    }
    DecodedSendWqe d;
    if (DecodeSendWqe(e.data(), lim, &d).ok()) {
      ++accepted;
      ASSERT_LE(d.wr.num_sge, lim.max_sge);
      ASSERT_LE(uint64_t{BURST_SHM_SEND_WQE_PAYLOAD} + d.wr.num_sge * 16u, entry_size);
      ASSERT_LE(d.inline_len, lim.max_inline);
      ASSERT_LE(uint64_t{BURST_SHM_SEND_WQE_PAYLOAD} + d.inline_len, entry_size);
    }
    core::RecvWr r;
    if (DecodeRecvWqe(e.data(), lim, &r).ok()) {
      ASSERT_LE(r.num_sge, lim.max_sge);
      ASSERT_LE(uint64_t{BURST_SHM_RECV_WQE_PAYLOAD} + r.num_sge * 16u, entry_size);
    }
  }
  EXPECT_GT(accepted, 1000) << "the generator should produce valid entries too";
}

}  // namespace
}  // namespace burst::shm
