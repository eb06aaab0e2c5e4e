// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The fast paths of core/wire. Receive: parse_frame's inline path for untagged
// IPv4 must accept exactly what the general parser accepts and describe it the
// same way; same_ipv4_flow (header prediction) must compare every byte that
// parsing or dispatch depends on; PacketView's address accessors and sgid_is.
// Transmit: frames started from a HeaderTemplate or a FrameTemplate are byte
// for byte the frames built from the PathHeaders.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/wire/frame.h"

namespace burst::wire {
namespace {

using Bytes = std::vector<uint8_t>;

Gid v4_gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, a, b, c, d};
}

PathHeaders path(bool ipv6, bool vlan) {
  PathHeaders p{};
  p.smac = {0x02, 0, 0, 0, 0, 0x01};
  p.dmac = {0x02, 0, 0, 0, 0, 0x02};
  p.has_vlan = vlan;
  p.vlan_tci = 0x0123;
  p.ipv6 = ipv6;
  if (ipv6) {
    p.sgid = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x11, 0x22, 0xFF, 0xFE, 0x33, 0x44, 0x55};
    p.dgid = {0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
  } else {
    p.sgid = v4_gid(10, 0, 0, 1);
    p.dgid = v4_gid(10, 0, 0, 2);
  }
  p.traffic_class = 0x02;
  p.hop_limit = 64;
  p.udp_sport = 0xC001;
  return p;
}

Bytes build(const PathHeaders& p, uint8_t opcode, uint32_t payload_len, uint32_t psn = 0x10) {
  Bytes f(frame_bytes(p, opcode, payload_len));
  FrameWriter w(f.data(), static_cast<uint32_t>(f.size()), p, opcode, payload_len);
  EXPECT_TRUE(w.ok());
  w.bth().set_dest_qpn(0x123456);
  w.bth().set_psn(Psn(psn));
  for (uint32_t i = 0; i < payload_len; ++i) w.payload()[i] = static_cast<uint8_t>(i * 13);
  f.resize(w.finish());
  return f;
}

void expect_same_view(const PacketView& a, const PacketView& b) {
  EXPECT_EQ(a.frame, b.frame);
  EXPECT_EQ(a.frame_len, b.frame_len);
  EXPECT_EQ(a.vlan_tci, b.vlan_tci);
  EXPECT_EQ(a.has_vlan, b.has_vlan);
  EXPECT_EQ(a.ipv6, b.ipv6);
  EXPECT_EQ(a.l3_off, b.l3_off);
  EXPECT_EQ(a.udp_off, b.udp_off);
  EXPECT_EQ(a.bth_off, b.bth_off);
  EXPECT_EQ(a.payload_off, b.payload_off);
  EXPECT_EQ(a.payload_len, b.payload_len);
  EXPECT_EQ(a.opcode, b.opcode);
  EXPECT_EQ(a.ecn, b.ecn);
  EXPECT_EQ(a.info, b.info);
}

// parse_frame (inline fast path + general) against the general parser alone.
void expect_parsers_agree(const Bytes& f, bool verify) {
  PacketView fast{}, general{};
  const auto len = static_cast<uint32_t>(f.size());
  const RxDrop a = parse_frame(f.data(), len, &fast, verify);
  const RxDrop b = detail::parse_frame_general(f.data(), len, &general, verify);
  ASSERT_EQ(a, b);
  if (a == RxDrop::kNone) expect_same_view(fast, general);
}

TEST(RxFast, ParseAgreesWithGeneralParserEveryOpcodeAndPath) {
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      for (int op = 0; op < 256; ++op) {
        const OpcodeInfo& info = opcode_info(static_cast<uint8_t>(op));
        if (!info.valid()) continue;
        for (uint32_t len : {0u, 1u, 3u, 256u, 1024u}) {
          if (len != 0 && !(info.flags & kHasPayload)) continue;
          const Bytes f = build(path(ipv6, vlan), static_cast<uint8_t>(op), len);
          expect_parsers_agree(f, true);
          expect_parsers_agree(f, false);
        }
      }
    }
  }
}

// Every single-byte change in the headers, and every truncation, takes both
// parsers to the same answer.
TEST(RxFast, ParseAgreesWithGeneralParserOnMutations) {
  for (uint8_t op : {op::kRcRdmaWriteMiddle, op::kRcRdmaWriteFirst, op::kRcAcknowledge,
                     op::kRcSendLastWithImmediate}) {
    const bool payload = opcode_info(op).flags & kHasPayload;
    const Bytes good = build(path(false, false), op, payload ? 64 : 0);
    for (uint32_t i = 0; i < 80 && i < good.size(); ++i) {
      for (uint8_t x : {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xFF}) {
        Bytes f = good;
        f[i] ^= x;
        expect_parsers_agree(f, true);
        expect_parsers_agree(f, false);
      }
    }
    for (size_t cut = 0; cut <= good.size(); ++cut) {
      expect_parsers_agree(Bytes(good.begin(), good.begin() + cut), false);
    }
    Bytes padded = good;  // Ethernet padding past the IP datagram
    padded.resize(good.size() + 7, 0);
    expect_parsers_agree(padded, true);
  }
}

// Header prediction: exactly the variant bytes may differ.
TEST(RxFast, SameFlowComparesEveryByteButTheVariantFields) {
  const Bytes a = build(path(false, false), op::kRcRdmaWriteMiddle, 256);
  PacketView va{};
  ASSERT_EQ(parse_frame(a.data(), static_cast<uint32_t>(a.size()), &va, true), RxDrop::kNone);
  ASSERT_TRUE(va.plain_ipv4());
  ASSERT_LT(kSameFlowBytes, a.size());
  EXPECT_TRUE(same_ipv4_flow(a.data(), a.data()));
  for (uint32_t i = 0; i < 80; ++i) {
    Bytes b = a;
    b[i] ^= 0x5A;
    const bool varies = i == 18 || i == 19 || i == 24 || i == 25 || i == 46 || (i >= 50);
    EXPECT_EQ(same_ipv4_flow(a.data(), b.data()), varies) << "byte " << i;
    if (!varies) continue;
    // What may vary does not change how the frame parses (the ICRC aside).
    PacketView vb{};
    ASSERT_EQ(parse_frame(b.data(), static_cast<uint32_t>(b.size()), &vb, false), RxDrop::kNone);
    PacketView expect = va;
    expect.frame = b.data();
    expect_same_view(vb, expect);
  }
  // A later packet of the same flow: other PSN, AckReq, IPv4 id.
  PathHeaders p = path(false, false);
  Bytes c(frame_bytes(p, op::kRcRdmaWriteMiddle, 256));
  FrameWriter w(c.data(), static_cast<uint32_t>(c.size()), p, op::kRcRdmaWriteMiddle, 256);
  w.bth().set_dest_qpn(0x123456);
  w.bth().set_psn(Psn(0x11));
  w.bth().set_ack_req(true);
  w.set_ipv4_id(77);
  c.resize(w.finish());
  EXPECT_TRUE(same_ipv4_flow(a.data(), c.data()));
}

TEST(RxFast, AddressAccessorsAndSgidIs) {
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      const PathHeaders p = path(ipv6, vlan);
      const Bytes f = build(p, op::kRcSendOnly, 8);
      PacketView v{};
      ASSERT_EQ(parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v, true), RxDrop::kNone);
      EXPECT_EQ(v.sgid(), p.sgid);
      EXPECT_EQ(v.dgid(), p.dgid);
      EXPECT_EQ(v.smac(), p.smac);
      EXPECT_EQ(v.dmac(), p.dmac);
      EXPECT_EQ(v.udp_sport(), p.udp_sport);
      EXPECT_EQ(v.plain_ipv4(), !ipv6 && !vlan);
      EXPECT_TRUE(v.sgid_is(p.sgid));
      EXPECT_FALSE(v.sgid_is(p.dgid));
      for (int i = 0; i < 16; ++i) {
        Gid g = p.sgid;
        g[i] ^= 0x01;
        EXPECT_FALSE(v.sgid_is(g)) << "byte " << i;
      }
      if (!ipv6) {
        // An IPv6 GID whose low 4 bytes are the IPv4 address is another address.
        Gid g{};
        std::memcpy(g.data() + 12, p.sgid.data() + 12, 4);
        EXPECT_FALSE(v.sgid_is(g));
      }
    }
  }
}

// Fills the same fields through any writer, finishes, returns the frame.
Bytes finish_like(FrameWriter& w, Bytes& buf, uint8_t opcode, uint32_t seed) {
  EXPECT_TRUE(w.ok());
  const OpcodeInfo& info = opcode_info(opcode);
  w.bth().set_dest_qpn(0x0ABCDE ^ seed);
  w.bth().set_psn(Psn(0x800000 + seed));
  w.bth().set_ack_req(seed & 1);
  if (info.off_reth) {
    w.reth().set_va(0x1122334455667788ull + seed);
    w.reth().set_rkey(0xA0B0C0D0 + seed);
    w.reth().set_dma_len(0x10000 + seed);
  }
  if (info.off_aeth) w.aeth().set_msn(seed);
  if (info.off_immdt) w.immdt().set_imm(0xDEADBEEF ^ seed);
  if (info.off_ieth) w.ieth().set_rkey(0x0800 + seed);
  if (info.off_deth) w.deth().set_qkey(0x11 + seed);
  if (info.off_atomic_eth) w.atomic_eth().set_va(8 * seed);
  if (info.off_atomic_ack) w.atomic_ack().set_orig(seed);
  for (uint32_t i = 0; i < w.payload_len(); ++i) w.payload()[i] = static_cast<uint8_t>(i ^ seed);
  w.set_ipv4_id(static_cast<uint16_t>(seed * 7));
  const uint32_t n = w.finish();
  return Bytes(buf.begin(), buf.begin() + n);
}

TEST(TxFast, TemplatesBuildTheSameBytes) {
  for (bool ipv6 : {false, true}) {
    for (bool vlan : {false, true}) {
      const PathHeaders p = path(ipv6, vlan);
      HeaderTemplate ht;
      build_template(p, &ht);
      ASSERT_NE(ht.len, 0);
      for (int op = 0; op < 256; ++op) {
        const auto opcode = static_cast<uint8_t>(op);
        const OpcodeInfo& info = opcode_info(opcode);
        if (!info.valid()) continue;
        for (uint32_t len : {0u, 1u, 2u, 3u, 4u, 1024u}) {
          if (len != 0 && !(info.flags & kHasPayload)) continue;
          const uint32_t cap = frame_bytes(p, opcode, len);
          // Buffers full of garbage: a template must not depend on what was there.
          Bytes b1(cap, 0xA5), b2(cap, 0x5A), b3(cap, 0xC3), b4(cap, 0x3C);
          FrameWriter w1(b1.data(), cap, p, opcode, len);
          FrameWriter w2(b2.data(), cap, ht, opcode, len);
          FrameTemplate ft;
          w2.save(&ft);
          EXPECT_TRUE(ft.matches(opcode, len));
          FrameWriter w3(b3.data(), cap, ft);
          FrameWriter w4(b4.data(), cap, ft);  // and again: the template is unchanged
          for (uint32_t seed : {1u, 2u}) {
            const Bytes f1 = finish_like(w1, b1, opcode, seed);
            const Bytes f2 = finish_like(w2, b2, opcode, seed);
            const Bytes f3 = finish_like(w3, b3, opcode, seed);
            EXPECT_EQ(f1, f2) << "opcode " << op << " len " << len;
            EXPECT_EQ(f1, f3) << "opcode " << op << " len " << len;
          }
          EXPECT_EQ(finish_like(w4, b4, opcode, 3), finish_like(w1, b1, opcode, 3));
          PacketView v{};
          ASSERT_EQ(parse_frame(b3.data(), cap, &v, true), RxDrop::kNone);
          // Too small a buffer: not ok, nothing written.
          Bytes small(cap - 1, 0x77);
          EXPECT_FALSE(FrameWriter(small.data(), cap - 1, ht, opcode, len).ok());
          EXPECT_FALSE(FrameWriter(small.data(), cap - 1, ft).ok());
          EXPECT_EQ(small, Bytes(cap - 1, 0x77));
        }
      }
    }
  }
  // Empty templates never build.
  Bytes buf(256);
  EXPECT_FALSE(FrameWriter(buf.data(), 256, HeaderTemplate{}, op::kRcAcknowledge, 0).ok());
  EXPECT_FALSE(FrameWriter(buf.data(), 256, FrameTemplate{}).ok());
  EXPECT_FALSE(FrameTemplate{}.matches(0, 0));
}

}  // namespace
}  // namespace burst::wire
