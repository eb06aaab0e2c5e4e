// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Work-queue entries: the encoder the provider posts with (shm/wqe_encode.h),
// burstd's decoder and validation of entries written by the application
// (shm/wqe.h), and burstd's CQE encoder. Every malformed field is rejected,
// whatever the encoder writes the decoder accepts, and random entries never
// make the decoder read outside the entry (exact-size heap buffer under ASan).
#include "shm/wqe.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "shm/layout.h"
#include "shm/wqe_encode.h"
#include "shm_test_util.h"

namespace burst::shm {
namespace {

using core::WrOpcode;

const WqeLimits kLimits{SendEntrySize(4, 128), 4, 128};  // 256-byte entries

// A send WQE header as the provider fills it from an ibv_send_wr.
burst_shm_send_wqe Header(WrOpcode op,
                          uint32_t flags = core::kSendSignaled | core::kSendSolicited) {
  burst_shm_send_wqe h{};
  h.wr_id = 0x1122334455667788ull;
  h.opcode = static_cast<uint8_t>(op);
  h.send_flags = flags;
  return h;
}

std::vector<core::Sge> Sges(uint32_t n) {
  std::vector<core::Sge> s(n);
  for (uint32_t i = 0; i < n; ++i) s[i] = core::Sge{0x1000u * (i + 1), 100 + i, 40 + i};
  return s;
}

// Encodes (must succeed) and decodes (must succeed).
DecodedSendWqe RoundTrip(const burst_shm_send_wqe& h, const std::vector<core::Sge>& sges,
                         std::vector<uint8_t>* entry, const WqeLimits& lim = kLimits) {
  entry->assign(lim.entry_size, 0);
  EXPECT_TRUE(
      EncodeSendWqe(h, sges.data(), static_cast<uint32_t>(sges.size()), lim, entry->data()));
  DecodedSendWqe d;
  EXPECT_TRUE(DecodeSendWqe(entry->data(), lim, &d).ok());
  return d;
}

TEST(ShmWqe, SendRoundTrip) {
  std::vector<uint8_t> entry;
  burst_shm_send_wqe h = Header(WrOpcode::kSendWithImm);
  h.imm_data = 0xdeadbeef;
  const std::vector<core::Sge> sges = Sges(3);
  const DecodedSendWqe d = RoundTrip(h, sges, &entry);
  EXPECT_EQ(d.wr.wr_id, h.wr_id);
  EXPECT_EQ(d.wr.opcode, WrOpcode::kSendWithImm);
  EXPECT_EQ(d.wr.send_flags, h.send_flags);
  EXPECT_EQ(d.wr.imm_data, 0xdeadbeefu);
  ASSERT_EQ(d.wr.num_sge, 3u);
  for (uint32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(d.wr.sg_list[i].addr, sges[i].addr);
    EXPECT_EQ(d.wr.sg_list[i].length, sges[i].length);
    EXPECT_EQ(d.wr.sg_list[i].lkey, sges[i].lkey);
  }
}

TEST(ShmWqe, RdmaAtomicUdAndInvalidateRoundTrip) {
  std::vector<uint8_t> entry;

  burst_shm_send_wqe write = Header(WrOpcode::kRdmaWriteWithImm);
  write.remote_addr = 0xabcdef000ull;
  write.rkey = 0x77;
  write.imm_data = 5;
  DecodedSendWqe d = RoundTrip(write, Sges(1), &entry);
  EXPECT_EQ(d.wr.rdma.remote_addr, 0xabcdef000ull);
  EXPECT_EQ(d.wr.rdma.rkey, 0x77u);
  EXPECT_EQ(d.wr.imm_data, 5u);

  burst_shm_send_wqe cas = Header(WrOpcode::kAtomicCmpAndSwp);
  cas.remote_addr = 0x8000;
  cas.rkey = 9;
  cas.compare_add = 11;
  cas.swap = 22;
  d = RoundTrip(cas, Sges(1), &entry);
  EXPECT_EQ(d.wr.opcode, WrOpcode::kAtomicCmpAndSwp);
  EXPECT_EQ(d.wr.atomic.remote_addr, 0x8000u);
  EXPECT_EQ(d.wr.atomic.rkey, 9u);
  EXPECT_EQ(d.wr.atomic.compare_add, 11u);
  EXPECT_EQ(d.wr.atomic.swap, 22u);

  burst_shm_send_wqe ud = Header(WrOpcode::kSend);
  ud.ah_handle = 42;
  ud.remote_qpn = 0xabcde;
  ud.remote_qkey = 0x80010000u;
  d = RoundTrip(ud, Sges(2), &entry);
  EXPECT_EQ(d.ah_handle, 42u);
  EXPECT_EQ(d.wr.ud.remote_qpn, 0xabcdeu);
  EXPECT_EQ(d.wr.ud.remote_qkey, 0x80010000u);

  burst_shm_send_wqe inv = Header(WrOpcode::kSendWithInv);
  inv.imm_data = 0x4321;  // SEND_WITH_INV carries the rkey to invalidate in imm_data
  d = RoundTrip(inv, Sges(1), &entry);
  EXPECT_EQ(d.wr.invalidate_rkey, 0x4321u);
}

// Local operations reuse header fields (abi/burst_shm_abi.h): LOCAL_INV the
// rkey in imm_data, BIND_MW the window's keys, range, MR and access.
TEST(ShmWqe, LocalInvalidateAndBindMwRoundTrip) {
  std::vector<uint8_t> entry;
  burst_shm_send_wqe inv = Header(WrOpcode::kLocalInv);
  inv.imm_data = 0x1234;
  DecodedSendWqe d = RoundTrip(inv, {}, &entry);
  EXPECT_EQ(d.wr.opcode, WrOpcode::kLocalInv);
  EXPECT_EQ(d.wr.invalidate_rkey, 0x1234u);

  burst_shm_send_wqe bind = Header(WrOpcode::kBindMw);
  bind.imm_data = 0x501;
  bind.rkey = 0x502;
  bind.remote_addr = 0x7f0000001000ull;
  bind.compare_add = 0x20000;
  bind.remote_qpn = 0x301;
  bind.remote_qkey = core::kAccessRemoteWrite | core::kAccessRemoteRead;
  d = RoundTrip(bind, {}, &entry);
  EXPECT_EQ(d.wr.opcode, WrOpcode::kBindMw);
  EXPECT_EQ(d.wr.bind.mw_rkey, 0x501u);
  EXPECT_EQ(d.wr.bind.new_rkey, 0x502u);
  EXPECT_EQ(d.wr.bind.addr, 0x7f0000001000ull);
  EXPECT_EQ(d.wr.bind.length, 0x20000u);
  EXPECT_EQ(d.wr.bind.mr_lkey, 0x301u);
  EXPECT_EQ(d.wr.bind.access, uint32_t{core::kAccessRemoteWrite | core::kAccessRemoteRead});
  bind.send_flags |= BURST_SHM_SEND_INLINE;  // no data: refused
  entry.assign(kLimits.entry_size, 0);
  ASSERT_TRUE(EncodeSendWqe(bind, static_cast<const core::Sge*>(nullptr), 0, kLimits,
                            entry.data()));
  EXPECT_FALSE(DecodeSendWqe(entry.data(), kLimits, &d).ok());
}

// Inline data is gathered from the SGEs' buffers (in this process) into the entry.
TEST(ShmWqe, InlineRoundTrip) {
  std::vector<uint8_t> data(128);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 7);
  const auto at = [&](size_t off) { return reinterpret_cast<uintptr_t>(data.data() + off); };
  const std::vector<core::Sge> pieces = {{at(0), 100, 0}, {at(100), 0, 0}, {at(100), 28, 0}};
  std::vector<uint8_t> entry;
  const DecodedSendWqe d = RoundTrip(Header(WrOpcode::kSend, core::kSendInline), pieces, &entry);
  ASSERT_EQ(d.inline_len, 128u);
  EXPECT_EQ(d.inline_data, entry.data() + BURST_SHM_SEND_WQE_PAYLOAD);
  EXPECT_EQ(std::memcmp(d.inline_data, data.data(), 128), 0);
  EXPECT_EQ(d.wr.num_sge, 0u);
  // One byte more than the queue allows.
  data.push_back(0);
  const core::Sge all{at(0), 129, 0};
  EXPECT_FALSE(
      EncodeSendWqe(Header(WrOpcode::kSend, core::kSendInline), &all, 1, kLimits, entry.data()));
}

// The encoder refuses what the queue cannot hold; the decoder would refuse it too.
TEST(ShmWqe, EncodeRefusesWhatDoesNotFit) {
  std::vector<uint8_t> entry(kLimits.entry_size);
  const std::vector<core::Sge> five = Sges(5);
  EXPECT_FALSE(EncodeSendWqe(Header(WrOpcode::kSend), five.data(), 5, kLimits, entry.data()))
      << "more SGEs than max_sge";
  const WqeLimits small{128, 16, 0};  // 128-byte entry: 4 SGEs whatever max_sge says
  EXPECT_FALSE(EncodeSendWqe(Header(WrOpcode::kSend), five.data(), 5, small, entry.data()));
  EXPECT_TRUE(EncodeSendWqe(Header(WrOpcode::kSend), five.data(), 4, small, entry.data()));
  const WqeLimits no_inline{256, 4, 0};
  const core::Sge one{reinterpret_cast<uintptr_t>(entry.data()), 1, 0};
  EXPECT_FALSE(
      EncodeSendWqe(Header(WrOpcode::kSend, core::kSendInline), &one, 1, no_inline, entry.data()))
      << "inline on a queue without inline room";
  EXPECT_FALSE(
      EncodeSendWqe(Header(WrOpcode::kSend), five.data(), 1, WqeLimits{32, 4, 0}, entry.data()))
      << "entry smaller than a header";
}

// Starts from a valid entry, breaks one field, expects a rejection.
TEST(ShmWqe, DecodeRejectsEachMalformedField) {
  std::vector<uint8_t> good(kLimits.entry_size);
  const std::vector<core::Sge> two = Sges(2);
  ASSERT_TRUE(EncodeSendWqe(Header(WrOpcode::kSend), two.data(), 2, kLimits, good.data()));
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
  std::vector<core::Sge> sges(5);
  for (uint32_t i = 0; i < 5; ++i) sges[i] = core::Sge{i * 0x100u, 64, 3};
  ASSERT_TRUE(EncodeRecvWqe(77, sges.data(), 4, lim, entry.data()));
  core::RecvWr out;
  ASSERT_TRUE(DecodeRecvWqe(entry.data(), lim, &out).ok());
  EXPECT_EQ(out.wr_id, 77u);
  ASSERT_EQ(out.num_sge, 4u);
  EXPECT_EQ(out.sg_list[3].addr, 0x300u);

  EXPECT_FALSE(EncodeRecvWqe(77, sges.data(), 5, lim, entry.data()));
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

// burstd's CQE encoder fills every field of struct burst_shm_cqe (what the
// provider copies into struct ibv_wc).
TEST(ShmWqe, CqeCarriesEveryField) {
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
  std::memset(&cqe, 0xee, sizeof(cqe));
  EncodeCqe(wc, &cqe);
  EXPECT_EQ(cqe.wr_id, wc.wr_id);
  EXPECT_EQ(cqe.status, static_cast<uint8_t>(wc.status));
  EXPECT_EQ(cqe.opcode, static_cast<uint8_t>(wc.opcode));
  EXPECT_EQ(cqe.vendor_err, wc.vendor_err);
  EXPECT_EQ(cqe.byte_len, wc.byte_len);
  EXPECT_EQ(cqe.imm_data, wc.imm_data);
  EXPECT_EQ(cqe.qp_num, wc.qp_num);
  EXPECT_EQ(cqe.src_qp, wc.src_qp);
  EXPECT_EQ(cqe.wc_flags, wc.wc_flags);
  EXPECT_EQ(cqe.pkey_index, wc.pkey_index);
  EXPECT_EQ(cqe.slid, wc.slid);
  EXPECT_EQ(cqe.sl, wc.sl);
  EXPECT_EQ(cqe.dlid_path_bits, wc.dlid_path_bits);
  for (uint8_t b : cqe.reserved0) EXPECT_EQ(b, 0) << "reserved bytes are zero";
}

// Whatever the encoder accepts, the decoder accepts and reads back unchanged.
TEST(ShmWqe, RandomEncodedEntriesDecode) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> src(BURST_MAX_INLINE_DATA);
  for (auto& b : src) b = static_cast<uint8_t>(rng());
  constexpr uint8_t kOps[] = {0, 1, 2, 3,
                              4, 5, 6, 9};  // every opcode burstd accepts but BIND_MW/LOCAL_INV
  int encoded = 0;
  for (int i = 0; i < 20000; ++i) {
    const WqeLimits lim{16u << (rng() % 7), static_cast<uint32_t>(rng() % 20),
                        static_cast<uint32_t>(rng() % 1100)};
    burst_shm_send_wqe h{};
    h.wr_id = rng();
    h.opcode = kOps[rng() % 8];
    const bool inl =
        rng() % 3 == 0 && (h.opcode <= 3 || h.opcode == 9);  // ops that may carry inline
    h.send_flags = static_cast<uint32_t>(rng() % 8) | (inl ? BURST_SHM_SEND_INLINE : 0u);
    h.imm_data = static_cast<uint32_t>(rng());
    h.remote_addr = rng();
    h.rkey = static_cast<uint32_t>(rng());
    const uint32_t n = static_cast<uint32_t>(rng() % 18);
    std::vector<core::Sge> sges(n);
    uint32_t off = 0;
    for (auto& s : sges) {
      const uint32_t len = inl ? static_cast<uint32_t>(rng() % 80) : static_cast<uint32_t>(rng());
      s = inl ? core::Sge{reinterpret_cast<uintptr_t>(src.data()) + (off % 512), len % 400, 0}
              : core::Sge{rng(), len & 0x07ffffffu, static_cast<uint32_t>(rng())};
      off += len;
    }
    testing::HeapRegion e(lim.entry_size);
    if (!EncodeSendWqe(h, sges.data(), n, lim, e.data())) continue;
    ++encoded;
    DecodedSendWqe d;
    ASSERT_TRUE(DecodeSendWqe(e.data(), lim, &d).ok()) << "entry " << i;
    EXPECT_EQ(d.wr.wr_id, h.wr_id);
    if (inl) {
      uint32_t pos = 0;
      for (const core::Sge& s : sges) {
        ASSERT_EQ(std::memcmp(d.inline_data + pos, reinterpret_cast<const void*>(s.addr), s.length),
                  0);
        pos += s.length;
      }
      ASSERT_EQ(d.inline_len, pos);
    } else {
      ASSERT_EQ(d.wr.num_sge, n);
      for (uint32_t k = 0; k < n; ++k) ASSERT_EQ(d.wr.sg_list[k].addr, sges[k].addr);
    }
  }
  EXPECT_GT(encoded, 1000);
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
