// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Header structs: layout, byte positions and set/get round trips of every field.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <type_traits>

#include "core/wire/aeth.h"
#include "core/wire/atomic_eth.h"
#include "core/wire/be.h"
#include "core/wire/bth.h"
#include "core/wire/deth.h"
#include "core/wire/eth.h"
#include "core/wire/ieth.h"
#include "core/wire/immdt.h"
#include "core/wire/ipv4.h"
#include "core/wire/ipv6.h"
#include "core/wire/reth.h"
#include "core/wire/udp.h"

namespace burst::wire {
namespace {

// Header H placed in the middle of a zeroed buffer; the guard bytes around it
// must stay zero whatever the setters do.
template <class H>
struct Placed {
  alignas(8) uint8_t buf[sizeof(H) + 16] = {};
  H& h() { return *reinterpret_cast<H*>(buf + 8); }
  const uint8_t* raw() const { return buf + 8; }
  bool guards_clean() const {
    for (int i = 0; i < 8; ++i) {
      if (buf[i] != 0 || buf[8 + sizeof(H) + i] != 0) return false;
    }
    return true;
  }
};

template <class H>
constexpr bool kOverlayable = std::is_standard_layout_v<H>&& std::is_trivially_copyable_v<H>&&
                                  std::is_trivially_default_constructible_v<H> &&
                              alignof(H) == 1;

static_assert(kOverlayable<EthHdr> && kOverlayable<VlanHdr> && kOverlayable<Ipv4Hdr> &&
              kOverlayable<Ipv6Hdr> && kOverlayable<UdpHdr> && kOverlayable<Bth> &&
              kOverlayable<Reth> && kOverlayable<Aeth> && kOverlayable<AtomicEth> &&
              kOverlayable<AtomicAckEth> && kOverlayable<ImmDt> && kOverlayable<Ieth> &&
              kOverlayable<Deth>);
static_assert(sizeof(EthHdr) == 14 && sizeof(VlanHdr) == 4 && sizeof(Ipv4Hdr) == 20 &&
              sizeof(Ipv6Hdr) == 40 && sizeof(UdpHdr) == 8 && sizeof(Bth) == 12 &&
              sizeof(Reth) == 16 && sizeof(Aeth) == 4 && sizeof(AtomicEth) == 28 &&
              sizeof(AtomicAckEth) == 8 && sizeof(ImmDt) == 4 && sizeof(Ieth) == 4 &&
              sizeof(Deth) == 8);

constexpr uint32_t k24Edges[] = {0, 1, 0x7FFFFF, 0x800000, 0xFFFFFE, 0xFFFFFF};

TEST(BeTypes, ByteOrderAndEdges) {
  Be16 a{};
  a.set(0x1234);
  EXPECT_EQ(a.raw[0], 0x12);
  EXPECT_EQ(a.raw[1], 0x34);
  EXPECT_EQ(a.get(), 0x1234);
  a.set(0xFFFF);
  EXPECT_EQ(a.get(), 0xFFFF);

  Be32 b{};
  b.set(0xDEADBEEF);
  EXPECT_EQ(b.raw[0], 0xDE);
  EXPECT_EQ(b.raw[3], 0xEF);
  EXPECT_EQ(b.get(), 0xDEADBEEFu);

  Be64 c{};
  c.set(0x0102030405060708ull);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(c.raw[i], i + 1);
  EXPECT_EQ(c.get(), 0x0102030405060708ull);
  c.set(~0ull);
  EXPECT_EQ(c.get(), ~0ull);

  for (uint32_t v : k24Edges) {
    Be24 d{};
    d.set(v);
    EXPECT_EQ(d.get(), v);
  }
  Be24 d{};
  d.set(0xAB123456);  // bits above 24 are dropped
  EXPECT_EQ(d.get(), 0x123456u);
  EXPECT_EQ(d.raw[0], 0x12);
  EXPECT_EQ(d.raw[2], 0x56);

  EXPECT_EQ(load_be24(d.raw), 0x123456u);
  uint8_t x[8];
  store_be64(x, 0x1122334455667788ull);
  EXPECT_EQ(load_be64(x), 0x1122334455667788ull);
  EXPECT_EQ(load_be32(x + 4), 0x55667788u);
  EXPECT_EQ(load_be16(x + 6), 0x7788);
}

TEST(Headers, Eth) {
  Placed<EthHdr> p;
  const MacAddr d = {0x52, 0x54, 0x00, 0x99, 0x00, 0x01};
  const MacAddr s = {0xFF, 0xFE, 0xFD, 0xFC, 0xFB, 0xFA};
  p.h().set_dmac(d);
  p.h().set_smac(s);
  p.h().set_ethertype(kEtherTypeIpv6);
  EXPECT_EQ(p.h().dmac(), d);
  EXPECT_EQ(p.h().smac(), s);
  EXPECT_EQ(p.h().ethertype(), 0x86DD);
  EXPECT_EQ(std::memcmp(p.raw(), d.data(), 6), 0);
  EXPECT_EQ(std::memcmp(p.raw() + 6, s.data(), 6), 0);
  EXPECT_EQ(p.raw()[12], 0x86);
  EXPECT_EQ(p.raw()[13], 0xDD);
  EXPECT_TRUE(p.guards_clean());

  Placed<VlanHdr> v;
  v.h().set_tci(0xE00A);  // PCP 7, DEI 0, VID 10
  v.h().set_ethertype(kEtherTypeIpv4);
  EXPECT_EQ(v.h().tci(), 0xE00A);
  EXPECT_EQ(v.h().vid(), 10);
  EXPECT_EQ(v.h().pcp(), 7);
  EXPECT_EQ(v.h().ethertype(), 0x0800);
  EXPECT_EQ(v.raw()[0], 0xE0);
  EXPECT_EQ(v.raw()[3], 0x00);
  v.h().set_tci(0xFFFF);
  EXPECT_EQ(v.h().vid(), 0xFFF);
  EXPECT_TRUE(v.guards_clean());
}

TEST(Headers, Ipv4) {
  Placed<Ipv4Hdr> p;
  auto& ip = p.h();
  ip.set_version_ihl(4, 15);
  ip.set_tos(0xB9);  // DSCP 46, ECN 1
  ip.set_total_len(0xFFFF);
  ip.set_id(0xBEEF);
  ip.set_frag(kIpv4FlagDf);
  ip.set_ttl(255);
  ip.set_protocol(kIpProtoUdp);
  ip.set_checksum(0x1234);
  ip.set_saddr(0x0A63000B);
  ip.set_daddr(0xFFFFFFFF);
  EXPECT_EQ(ip.version(), 4);
  EXPECT_EQ(ip.ihl(), 15);
  EXPECT_EQ(ip.header_bytes(), 60u);
  EXPECT_EQ(ip.tos(), 0xB9);
  EXPECT_EQ(ip.dscp(), 46);
  EXPECT_EQ(ip.ecn(), 1);
  EXPECT_EQ(ip.total_len(), 0xFFFF);
  EXPECT_EQ(ip.id(), 0xBEEF);
  EXPECT_TRUE(ip.df());
  EXPECT_FALSE(ip.mf());
  EXPECT_FALSE(ip.is_fragment());
  EXPECT_EQ(ip.ttl(), 255);
  EXPECT_EQ(ip.protocol(), 17);
  EXPECT_EQ(ip.checksum(), 0x1234);
  EXPECT_EQ(ip.saddr(), 0x0A63000Bu);
  EXPECT_EQ(ip.daddr(), 0xFFFFFFFFu);
  const uint8_t* r = p.raw();
  EXPECT_EQ(r[0], 0x4F);
  EXPECT_EQ(r[1], 0xB9);
  EXPECT_EQ(r[4], 0xBE);
  EXPECT_EQ(r[6], 0x40);
  EXPECT_EQ(r[8], 255);
  EXPECT_EQ(r[9], 17);
  EXPECT_EQ(r[10], 0x12);
  EXPECT_EQ(r[12], 10);
  EXPECT_EQ(r[15], 11);
  EXPECT_EQ(ip.saddr_bytes(), r + 12);
  EXPECT_EQ(ip.daddr_bytes(), r + 16);
  ip.set_frag(kIpv4FlagMf);
  EXPECT_TRUE(ip.mf());
  EXPECT_TRUE(ip.is_fragment());
  ip.set_frag(0x1FFF);
  EXPECT_EQ(ip.frag_offset(), 0x1FFF);
  EXPECT_FALSE(ip.df());
  EXPECT_TRUE(ip.is_fragment());
  EXPECT_TRUE(p.guards_clean());
}

TEST(Headers, Ipv4Checksum) {
  // RFC 1071 example header (from Wikipedia's IPv4 checksum example): checksum 0xB861.
  uint8_t h[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
                   0x00, 0x00, 0xC0, 0xA8, 0x00, 0x01, 0xC0, 0xA8, 0x00, 0xC7};
  EXPECT_EQ(ipv4_checksum(h, 20), 0xB861);
  h[10] = 0xB8;
  h[11] = 0x61;
  EXPECT_EQ(ipv4_checksum(h, 20), 0);
}

TEST(Headers, Ipv4ChecksumMatchesPlainRfc1071) {
  // The 16-bit-word sum of RFC 1071, written out, against the 32-bit-word version.
  auto rfc1071 = [](const uint8_t* p, uint32_t n) {
    uint32_t sum = 0;
    for (uint32_t i = 0; i + 1 < n; i += 2) sum += (uint32_t{p[i]} << 8) | p[i + 1];
    if (n & 1) sum += uint32_t{p[n - 1]} << 8;
    while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
    return static_cast<uint16_t>(~sum);
  };
  uint32_t x = 7;
  std::array<uint8_t, 64> buf{};
  for (int iter = 0; iter < 2000; ++iter) {
    for (auto& b : buf) {
      x = x * 1103515245u + 12345u;
      b = static_cast<uint8_t>(iter % 3 == 0 ? 0xFF : x >> 16);  // all-ones stresses the carries
    }
    const uint32_t n = static_cast<uint32_t>(iter % 65);
    ASSERT_EQ(ipv4_checksum(buf.data(), n), rfc1071(buf.data(), n)) << n;
  }
}

TEST(Headers, Ipv6) {
  Placed<Ipv6Hdr> p;
  auto& ip = p.h();
  uint8_t s[16], d[16];
  for (int i = 0; i < 16; ++i) {
    s[i] = static_cast<uint8_t>(i);
    d[i] = static_cast<uint8_t>(0xF0 + i);
  }
  ip.set_vtf(6, 0xAB, 0xFFFFF);
  ip.set_payload_len(0xFFFF);
  ip.set_next_header(17);
  ip.set_hop_limit(1);
  ip.set_saddr(s);
  ip.set_daddr(d);
  EXPECT_EQ(ip.version(), 6);
  EXPECT_EQ(ip.traffic_class(), 0xAB);
  EXPECT_EQ(ip.ecn(), 3);
  EXPECT_EQ(ip.flow_label(), 0xFFFFFu);
  EXPECT_EQ(ip.payload_len(), 0xFFFF);
  EXPECT_EQ(ip.next_header(), 17);
  EXPECT_EQ(ip.hop_limit(), 1);
  EXPECT_EQ(std::memcmp(ip.saddr(), s, 16), 0);
  EXPECT_EQ(std::memcmp(ip.daddr(), d, 16), 0);
  EXPECT_EQ(p.raw()[0], 0x6A);
  EXPECT_EQ(p.raw()[1], 0xBF);
  EXPECT_EQ(p.raw()[3], 0xFF);
  EXPECT_EQ(p.raw()[8], 0);
  EXPECT_EQ(p.raw()[39], 0xFF);
  ip.set_vtf(6, 0, 0x1FFFFF);  // flow label keeps 20 bits, traffic class untouched
  EXPECT_EQ(ip.flow_label(), 0xFFFFFu);
  EXPECT_EQ(ip.traffic_class(), 0);
  EXPECT_TRUE(p.guards_clean());
}

TEST(Headers, Udp) {
  Placed<UdpHdr> p;
  p.h().set_sport(0xC000);
  p.h().set_dport(kRoceV2Port);
  p.h().set_len(0xFFFF);
  p.h().set_checksum(0xABCD);
  EXPECT_EQ(p.h().sport(), 0xC000);
  EXPECT_EQ(p.h().dport(), 4791);
  EXPECT_EQ(p.h().len(), 0xFFFF);
  EXPECT_EQ(p.h().checksum(), 0xABCD);
  EXPECT_EQ(p.raw()[2], 0x12);
  EXPECT_EQ(p.raw()[3], 0xB7);
  EXPECT_TRUE(p.guards_clean());
}

TEST(Headers, BthFieldsAreIndependent) {
  Placed<Bth> p;
  auto& b = p.h();
  b.set_opcode(0xFF);
  b.set_se(true);
  b.set_mig_req(true);
  b.set_pad_count(3);
  b.set_tver(0xF);
  b.set_pkey(0xFFFF);
  b.set_fecn(true);
  b.set_becn(true);
  b.set_dest_qpn(0xFFFFFF);
  b.set_ack_req(true);
  b.set_psn(Psn(0xFFFFFF));
  EXPECT_EQ(b.opcode(), 0xFF);
  EXPECT_TRUE(b.se());
  EXPECT_TRUE(b.mig_req());
  EXPECT_EQ(b.pad_count(), 3);
  EXPECT_EQ(b.tver(), 0xF);
  EXPECT_EQ(b.pkey(), 0xFFFF);
  EXPECT_TRUE(b.fecn());
  EXPECT_TRUE(b.becn());
  EXPECT_EQ(b.dest_qpn(), 0xFFFFFFu);
  EXPECT_TRUE(b.ack_req());
  EXPECT_EQ(b.psn().value(), 0xFFFFFFu);
  EXPECT_EQ(p.raw()[1], 0xFF);
  EXPECT_EQ(p.raw()[4], 0xC0);  // only FECN/BECN, reserved bits stay 0
  EXPECT_EQ(p.raw()[8], 0x80);  // only AckReq

  // Clearing one field leaves every other one alone.
  b.set_se(false);
  EXPECT_EQ(p.raw()[1], 0x7F);
  b.set_mig_req(false);
  EXPECT_EQ(p.raw()[1], 0x3F);
  b.set_pad_count(0);
  EXPECT_EQ(p.raw()[1], 0x0F);
  b.set_pad_count(2);
  EXPECT_EQ(b.pad_count(), 2);
  b.set_tver(0);
  EXPECT_EQ(p.raw()[1], 0x20);
  b.set_fecn(false);
  EXPECT_FALSE(b.fecn());
  EXPECT_TRUE(b.becn());
  b.set_becn(false);
  EXPECT_EQ(p.raw()[4], 0);
  b.set_ack_req(false);
  EXPECT_EQ(p.raw()[8], 0);
  EXPECT_EQ(b.psn().value(), 0xFFFFFFu);
  EXPECT_EQ(b.dest_qpn(), 0xFFFFFFu);

  for (uint32_t v : k24Edges) {
    b.set_dest_qpn(v);
    b.set_psn(Psn(v ^ kPsnMask));
    EXPECT_EQ(b.dest_qpn(), v);
    EXPECT_EQ(b.psn().value(), v ^ kPsnMask);
    EXPECT_EQ(p.raw()[4], 0);  // the byte in front of the QPN
    EXPECT_EQ(p.raw()[8], 0);  // the byte in front of the PSN
  }
  b.set_dest_qpn(0x1000001);  // 25 bits: the top bit is dropped
  EXPECT_EQ(b.dest_qpn(), 1u);
  b.set_psn(Psn(0x123456));
  EXPECT_EQ(p.raw()[9], 0x12);
  EXPECT_EQ(p.raw()[11], 0x56);
  EXPECT_TRUE(p.guards_clean());
}

TEST(Headers, Reth) {
  Placed<Reth> p;
  p.h().set_va(0xFEDCBA9876543210ull);
  p.h().set_rkey(0xFFFFFFFF);
  p.h().set_dma_len(0x80000000);
  EXPECT_EQ(p.h().va(), 0xFEDCBA9876543210ull);
  EXPECT_EQ(p.h().rkey(), 0xFFFFFFFFu);
  EXPECT_EQ(p.h().dma_len(), 0x80000000u);
  EXPECT_EQ(p.raw()[0], 0xFE);
  EXPECT_EQ(p.raw()[7], 0x10);
  EXPECT_EQ(p.raw()[12], 0x80);
  EXPECT_TRUE(p.guards_clean());
}

TEST(Headers, AethAndSyndromes) {
  Placed<Aeth> p;
  p.h().set_syndrome(AethSyndrome::nak(NakCode::kRemoteAccessError));
  for (uint32_t v : k24Edges) {
    p.h().set_msn(v);
    EXPECT_EQ(p.h().msn(), v);
    EXPECT_EQ(p.h().syndrome(), 0x62);
  }
  EXPECT_EQ(p.raw()[0], 0x62);
  EXPECT_TRUE(p.h().syn().is_nak());
  EXPECT_EQ(p.h().syn().nak_code(), NakCode::kRemoteAccessError);
  p.h().set_syndrome(uint8_t{0x1F});
  EXPECT_EQ(p.h().syndrome(), 0x1F);
  EXPECT_TRUE(p.guards_clean());

  // The syndromes rxe sends (fixtures README): ACK 0x1f, RNR NAK 0x3a, NAKs 0x60..0x63.
  EXPECT_EQ(AethSyndrome::ack().raw(), 0x1F);
  EXPECT_EQ(AethSyndrome::ack(0).raw(), 0x00);
  EXPECT_EQ(AethSyndrome::rnr_nak(26).raw(), 0x3A);
  EXPECT_EQ(AethSyndrome::nak(NakCode::kPsnSeqError).raw(), 0x60);
  EXPECT_EQ(AethSyndrome::nak(NakCode::kInvalidRequest).raw(), 0x61);
  EXPECT_EQ(AethSyndrome::nak(NakCode::kRemoteAccessError).raw(), 0x62);
  EXPECT_EQ(AethSyndrome::nak(NakCode::kRemoteOpError).raw(), 0x63);
  EXPECT_EQ(AethSyndrome::nak(NakCode::kInvalidRdRequest).raw(), 0x64);
  for (int v = 0; v < 32; ++v) {
    const auto credit = static_cast<uint8_t>(v);
    EXPECT_EQ(AethSyndrome::ack(credit).type(), AethType::kAck);
    EXPECT_EQ(AethSyndrome::ack(credit).credit(), credit);
    EXPECT_EQ(AethSyndrome::rnr_nak(credit).type(), AethType::kRnrNak);
    EXPECT_EQ(AethSyndrome::rnr_nak(credit).rnr_timer(), credit);
    EXPECT_EQ(AethSyndrome(static_cast<uint8_t>(0x60 | v)).type(), AethType::kNak);
    EXPECT_EQ(AethSyndrome(static_cast<uint8_t>(0x40 | v)).type(), AethType::kReserved);
  }
  EXPECT_EQ(AethSyndrome::rnr_nak(0xFF).raw(), 0x3F);  // value keeps 5 bits
  EXPECT_TRUE(AethSyndrome(0x3A).is_rnr_nak());
  EXPECT_FALSE(AethSyndrome(0x3A).is_ack());
  EXPECT_TRUE(AethSyndrome(0x1F).is_ack());
}

TEST(Headers, AtomicEthAndAck) {
  Placed<AtomicEth> p;
  p.h().set_va(0x0000560012345678ull);
  p.h().set_rkey(0x12345678);
  p.h().set_swap_add(~0ull);
  p.h().set_compare(0x8000000000000001ull);
  EXPECT_EQ(p.h().va(), 0x0000560012345678ull);
  EXPECT_EQ(p.h().rkey(), 0x12345678u);
  EXPECT_EQ(p.h().swap_add(), ~0ull);
  EXPECT_EQ(p.h().compare(), 0x8000000000000001ull);
  EXPECT_EQ(p.raw()[8], 0x12);   // rkey at offset 8
  EXPECT_EQ(p.raw()[12], 0xFF);  // swap/add at offset 12
  EXPECT_EQ(p.raw()[20], 0x80);  // compare at offset 20
  EXPECT_EQ(p.raw()[27], 0x01);
  EXPECT_TRUE(p.guards_clean());

  Placed<AtomicAckEth> a;
  a.h().set_orig(0x8100000000000081ull);
  EXPECT_EQ(a.h().orig(), 0x8100000000000081ull);
  EXPECT_EQ(a.raw()[0], 0x81);
  EXPECT_EQ(a.raw()[7], 0x81);
  EXPECT_TRUE(a.guards_clean());
}

TEST(Headers, ImmDtIethDeth) {
  Placed<ImmDt> i;
  i.h().set_imm(0x00001000);
  EXPECT_EQ(i.h().imm(), 0x1000u);
  EXPECT_EQ(i.raw()[2], 0x10);
  EXPECT_TRUE(i.guards_clean());

  Placed<Ieth> e;
  e.h().set_rkey(0x08000164);
  EXPECT_EQ(e.h().rkey(), 0x08000164u);
  EXPECT_EQ(e.raw()[0], 0x08);
  EXPECT_TRUE(e.guards_clean());

  Placed<Deth> d;
  d.h().set_qkey(kQp1Qkey);
  for (uint32_t v : k24Edges) {
    d.h().set_src_qpn(v);
    EXPECT_EQ(d.h().src_qpn(), v);
    EXPECT_EQ(d.h().qkey(), 0x80010000u);
    EXPECT_EQ(d.raw()[4], 0);  // reserved byte untouched
  }
  EXPECT_EQ(d.raw()[0], 0x80);
  EXPECT_EQ(d.raw()[2], 0x00);
  EXPECT_TRUE(d.guards_clean());
}

}  // namespace
}  // namespace burst::wire
