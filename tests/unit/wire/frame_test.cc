// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Frame build and parse on synthetic frames: every opcode, IPv4/IPv6, with and
// without 802.1Q, every drop reason, and the FrameWriter failure modes.
#include "core/wire/frame.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/wire/wire_test_util.h"

namespace burst::wire {
namespace {

Gid v4_gid(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, a, b, c, d};
}

PathHeaders make_path(bool ipv6, bool vlan) {
  PathHeaders p{};
  p.smac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
  p.dmac = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};
  p.has_vlan = vlan;
  p.vlan_tci = 0x6123;
  p.ipv6 = ipv6;
  if (ipv6) {
    p.sgid = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x11, 0x22, 0xFF, 0xFE, 0x33, 0x44, 0x55};
    p.dgid = {0x20, 0x01, 0x0D, 0xB8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02};
  } else {
    p.sgid = v4_gid(10, 99, 0, 11);
    p.dgid = v4_gid(10, 99, 0, 12);
  }
  p.traffic_class = 0x6A;  // DSCP 26, ECN 2 (ECT(0))
  p.hop_limit = 64;
  p.flow_label = 0xABCDE;
  p.udp_sport = 0xC123;
  return p;
}

// Recomputes the ICRC of a frame whose IP header starts at l3_off.
void refresh_icrc(std::vector<uint8_t>& f, uint32_t l3_off, bool ipv6) {
  uint8_t* l3 = f.data() + l3_off;
  const uint32_t ip_len = ipv6 ? 40u + load_be16(l3 + 4) : load_be16(l3 + 2);
  icrc_store(l3 + ip_len - 4, icrc_compute(l3, ip_len - 4, ipv6));
}

void fill_headers(FrameWriter& w, uint8_t opcode, uint32_t seed) {
  const OpcodeInfo& info = opcode_info(opcode);
  Bth& b = w.bth();
  b.set_dest_qpn(0xABCDEF ^ seed);
  b.set_psn(Psn(0xFFFFFF - seed));
  b.set_ack_req(seed & 1);
  b.set_se(seed & 2);
  b.set_mig_req(seed & 4);
  if (info.off_reth) {
    w.reth().set_va(0x1122334455667788ull + seed);
    w.reth().set_rkey(0xA0B0C0D0 + seed);
    w.reth().set_dma_len(0x10000 + seed);
  }
  if (info.off_aeth) {
    w.aeth().set_syndrome(AethSyndrome::rnr_nak(static_cast<uint8_t>(seed)));
    w.aeth().set_msn(0xFFFFFF - seed);
  }
  if (info.off_atomic_eth) {
    w.atomic_eth().set_va(0x8000000000000000ull | seed);
    w.atomic_eth().set_rkey(0x12345678);
    w.atomic_eth().set_swap_add(~0ull - seed);
    w.atomic_eth().set_compare(seed);
  }
  if (info.off_atomic_ack) w.atomic_ack().set_orig(0xFEEDFACECAFEBEEFull ^ seed);
  if (info.off_immdt) w.immdt().set_imm(0xDEADBEEF ^ seed);
  if (info.off_ieth) w.ieth().set_rkey(0x08000164 + seed);
  if (info.off_deth) {
    w.deth().set_qkey(kQp1Qkey + seed);
    w.deth().set_src_qpn(0x800000 | seed);
  }
}

void check_headers(const PacketView& v, uint8_t opcode, uint32_t seed) {
  const OpcodeInfo& info = opcode_info(opcode);
  const Bth& b = v.bth();
  EXPECT_EQ(b.opcode(), opcode);
  EXPECT_EQ(b.tver(), 0);
  EXPECT_EQ(b.pkey(), 0xFFFF);
  EXPECT_FALSE(b.fecn());
  EXPECT_FALSE(b.becn());
  EXPECT_EQ(b.dest_qpn(), (0xABCDEF ^ seed) & kQpnMask);
  EXPECT_EQ(b.psn(), Psn(0xFFFFFF - seed));
  EXPECT_EQ(b.ack_req(), (seed & 1) != 0);
  EXPECT_EQ(b.se(), (seed & 2) != 0);
  EXPECT_EQ(b.mig_req(), (seed & 4) != 0);
  ASSERT_EQ(v.reth() != nullptr, info.off_reth != 0);
  ASSERT_EQ(v.aeth() != nullptr, info.off_aeth != 0);
  ASSERT_EQ(v.atomic_eth() != nullptr, info.off_atomic_eth != 0);
  ASSERT_EQ(v.atomic_ack() != nullptr, info.off_atomic_ack != 0);
  ASSERT_EQ(v.immdt() != nullptr, info.off_immdt != 0);
  ASSERT_EQ(v.ieth() != nullptr, info.off_ieth != 0);
  ASSERT_EQ(v.deth() != nullptr, info.off_deth != 0);
  if (v.reth()) {
    EXPECT_EQ(v.reth()->va(), 0x1122334455667788ull + seed);
    EXPECT_EQ(v.reth()->rkey(), 0xA0B0C0D0 + seed);
    EXPECT_EQ(v.reth()->dma_len(), 0x10000 + seed);
  }
  if (v.aeth()) {
    EXPECT_EQ(v.aeth()->syn(), AethSyndrome::rnr_nak(static_cast<uint8_t>(seed)));
    EXPECT_EQ(v.aeth()->msn(), 0xFFFFFF - seed);
  }
  if (v.atomic_eth()) {
    EXPECT_EQ(v.atomic_eth()->va(), 0x8000000000000000ull | seed);
    EXPECT_EQ(v.atomic_eth()->rkey(), 0x12345678u);
    EXPECT_EQ(v.atomic_eth()->swap_add(), ~0ull - seed);
    EXPECT_EQ(v.atomic_eth()->compare(), seed);
  }
  if (v.atomic_ack()) {
    EXPECT_EQ(v.atomic_ack()->orig(), 0xFEEDFACECAFEBEEFull ^ seed);
  }
  if (v.immdt()) {
    EXPECT_EQ(v.immdt()->imm(), 0xDEADBEEF ^ seed);
  }
  if (v.ieth()) {
    EXPECT_EQ(v.ieth()->rkey(), 0x08000164 + seed);
  }
  if (v.deth()) {
    EXPECT_EQ(v.deth()->qkey(), kQp1Qkey + seed);
    EXPECT_EQ(v.deth()->src_qpn(), 0x800000 | seed);
  }
}

TEST(Frame, BuildParseEveryOpcodeAndPath) {
  int built = 0;
  for (int opcode = 0; opcode < 256; ++opcode) {
    const OpcodeInfo& info = opcode_info(static_cast<uint8_t>(opcode));
    if (!info.valid()) continue;
    std::vector<uint32_t> lens = {0};
    if (info.flags & kHasPayload) lens = {0, 1, 2, 3, 4, 5, 255, 1024, 4093, 4096};
    for (bool ipv6 : {false, true}) {
      for (bool vlan : {false, true}) {
        for (uint32_t len : lens) {
          SCOPED_TRACE(std::string(info.name) + " ipv6=" + std::to_string(ipv6) +
                       " vlan=" + std::to_string(vlan) + " len=" + std::to_string(len));
          const PathHeaders path = make_path(ipv6, vlan);
          const uint32_t seed = static_cast<uint32_t>(built % 31);
          const uint32_t total = frame_bytes(path, static_cast<uint8_t>(opcode), len);
          ASSERT_EQ(total, header_bytes(path, static_cast<uint8_t>(opcode)) + len +
                               ((4 - len % 4) % 4) + 4);
          std::vector<uint8_t> buf(total, 0xEE);  // exact size: no slack to hide overruns
          FrameWriter w(buf.data(), total, path, static_cast<uint8_t>(opcode), len);
          ASSERT_TRUE(w.ok());
          fill_headers(w, static_cast<uint8_t>(opcode), seed);
          for (uint32_t i = 0; i < len; ++i) w.payload()[i] = static_cast<uint8_t>(i * 7 + seed);
          ASSERT_EQ(w.finish(), total);
          ++built;

          PacketView v{};
          ASSERT_EQ(parse_frame(buf.data(), total, &v), RxDrop::kNone);
          EXPECT_EQ(v.frame, buf.data());
          EXPECT_EQ(v.frame_len, total);
          EXPECT_EQ(v.has_vlan, vlan);
          EXPECT_EQ(v.vlan_tci, vlan ? 0x6123 : 0);
          EXPECT_EQ(v.ipv6, ipv6);
          EXPECT_EQ(v.l3_off, vlan ? 18 : 14);
          EXPECT_EQ(v.udp_off, v.l3_off + (ipv6 ? 40 : 20));
          EXPECT_EQ(v.bth_off, v.udp_off + 8);
          EXPECT_EQ(v.payload_off, v.bth_off + info.hdr_len);
          EXPECT_EQ(v.payload_len, len);
          EXPECT_EQ(v.pad_count(), (4 - len % 4) % 4);
          EXPECT_EQ(v.opcode, opcode);
          EXPECT_EQ(v.info, &info);
          EXPECT_EQ(v.ecn, 2);
          EXPECT_EQ(v.sgid(), path.sgid);
          EXPECT_EQ(v.dgid(), path.dgid);
          EXPECT_EQ(v.smac(), path.smac);
          EXPECT_EQ(v.dmac(), path.dmac);
          EXPECT_EQ(v.udp_sport(), 0xC123);
          EXPECT_EQ(v.l3_len(), total - v.l3_off);
          check_headers(v, static_cast<uint8_t>(opcode), seed);
          for (uint32_t i = 0; i < len; ++i) {
            ASSERT_EQ(v.payload()[i], static_cast<uint8_t>(i * 7 + seed)) << i;
          }
          for (uint32_t i = 0; i < v.pad_count(); ++i) EXPECT_EQ(v.payload()[len + i], 0);

          // Fixed header values.
          const uint8_t* l3 = buf.data() + v.l3_off;
          EXPECT_EQ(load_be16(buf.data() + v.l3_off - 2), ipv6 ? 0x86DD : 0x0800);
          if (ipv6) {
            const auto& ip = *reinterpret_cast<const Ipv6Hdr*>(l3);
            EXPECT_EQ(ip.traffic_class(), 0x6A);
            EXPECT_EQ(ip.flow_label(), 0xABCDEu);
            EXPECT_EQ(ip.hop_limit(), 64);
            EXPECT_EQ(ip.payload_len(), total - v.l3_off - 40);
          } else {
            const auto& ip = *reinterpret_cast<const Ipv4Hdr*>(l3);
            EXPECT_EQ(ip.tos(), 0x6A);
            EXPECT_EQ(ip.ttl(), 64);
            EXPECT_TRUE(ip.df());
            EXPECT_FALSE(ip.is_fragment());
            EXPECT_EQ(ip.id(), 0);
            EXPECT_EQ(ip.total_len(), total - v.l3_off);
            EXPECT_EQ(ipv4_checksum(l3, 20), 0);  // the stored checksum is valid
          }
          const auto& udp = *reinterpret_cast<const UdpHdr*>(buf.data() + v.udp_off);
          EXPECT_EQ(udp.dport(), kRoceV2Port);
          EXPECT_EQ(udp.checksum(), 0);
          EXPECT_EQ(udp.len(), total - v.udp_off);
          // The stored ICRC equals the independent zlib reference.
          EXPECT_EQ(icrc_load(buf.data() + total - 4),
                    test::reference_icrc(l3, total - v.l3_off - 4, ipv6));
        }
      }
    }
  }
  EXPECT_GT(built, 500);
}

TEST(Frame, CnpIsBthPlusSixteenZeroBytes) {
  const PathHeaders path = make_path(false, false);
  std::vector<uint8_t> buf(256, 0xEE);
  FrameWriter w(buf.data(), 256, path, op::kCnp, 0);
  ASSERT_TRUE(w.ok());
  w.bth().set_dest_qpn(0x11);
  w.bth().set_becn(true);
  const uint32_t n = w.finish();
  EXPECT_EQ(n, 14u + 20 + 8 + 12 + 16 + 4);
  for (uint32_t i = 14 + 20 + 8 + 12; i < n - 4; ++i) EXPECT_EQ(buf[i], 0) << i;
  PacketView v{};
  ASSERT_EQ(parse_frame(buf.data(), n, &v), RxDrop::kNone);
  EXPECT_TRUE(v.bth().becn());
  EXPECT_EQ(v.payload_len, 0u);
  EXPECT_EQ(v.info->flags & kHasPayload, 0u);
}

// A valid RC WRITE_ONLY frame over IPv4 to mutate.
std::vector<uint8_t> sample_frame(uint32_t payload_len = 8, bool ipv6 = false) {
  const PathHeaders path = make_path(ipv6, false);
  std::vector<uint8_t> f(frame_bytes(path, op::kRcRdmaWriteOnly, payload_len));
  FrameWriter w(f.data(), static_cast<uint32_t>(f.size()), path, op::kRcRdmaWriteOnly, payload_len);
  w.bth().set_dest_qpn(0x13);
  w.reth().set_dma_len(payload_len);
  std::memset(w.payload(), 0x5A, payload_len);
  w.finish();
  return f;
}

RxDrop parse(const std::vector<uint8_t>& f, bool verify = true) {
  PacketView v{};
  return parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v, verify);
}

void set_ipv4_total_len(std::vector<uint8_t>& f, uint16_t v) {
  reinterpret_cast<Ipv4Hdr*>(f.data() + 14)->set_total_len(v);
}
void set_udp_len(std::vector<uint8_t>& f, uint16_t v) {
  reinterpret_cast<UdpHdr*>(f.data() + 34)->set_len(v);
}
Bth& bth_of(std::vector<uint8_t>& f) { return *reinterpret_cast<Bth*>(f.data() + 42); }

TEST(FrameDrop, EveryReason) {
  std::set<RxDrop> seen;
  auto expect = [&](const std::vector<uint8_t>& f, RxDrop want) {
    EXPECT_EQ(parse(f), want) << rx_drop_name(want);
    seen.insert(want);
  };
  const auto good = sample_frame();
  expect(good, RxDrop::kNone);
  expect(std::vector<uint8_t>(good.begin(), good.begin() + 13), RxDrop::kTooShort);
  expect(std::vector<uint8_t>(good.begin(), good.end() - 1), RxDrop::kTooShort);

  auto f = good;
  store_be16(f.data() + 12, 0x0806);  // ARP
  expect(f, RxDrop::kNotIp);
  store_be16(f.data() + 12, 0x88A8);  // QinQ outer tag: not supported
  expect(f, RxDrop::kNotIp);

  f = good;
  f[14] = 0x55;  // version 5
  expect(f, RxDrop::kBadIpHeader);
  f[14] = 0x44;  // IHL 4
  expect(f, RxDrop::kBadIpHeader);
  f = good;
  set_ipv4_total_len(f, 19);  // shorter than the header
  expect(f, RxDrop::kBadIpHeader);
  f = good;
  set_ipv4_total_len(f, static_cast<uint16_t>(f.size() - 14 + 1));  // beyond the frame
  expect(f, RxDrop::kTooShort);

  f = good;
  reinterpret_cast<Ipv4Hdr*>(f.data() + 14)->set_frag(kIpv4FlagMf);
  expect(f, RxDrop::kIpFragment);
  reinterpret_cast<Ipv4Hdr*>(f.data() + 14)->set_frag(kIpv4FlagDf | 1);
  expect(f, RxDrop::kIpFragment);

  f = good;
  f[14 + 9] = 6;  // TCP
  expect(f, RxDrop::kNotUdp);

  f = good;
  store_be16(f.data() + 34 + 2, 4792);
  expect(f, RxDrop::kNotRoce);

  f = good;
  set_udp_len(f, static_cast<uint16_t>(load_be16(f.data() + 38) - 4));
  expect(f, RxDrop::kBadLength);
  f = good;  // an IP datagram too short for UDP
  set_ipv4_total_len(f, 20 + 7);
  expect(f, RxDrop::kBadLength);
  f = good;  // UDP with no room for BTH + ICRC
  set_ipv4_total_len(f, 20 + 8 + 15);
  set_udp_len(f, 8 + 15);
  expect(f, RxDrop::kBadLength);

  f = good;
  bth_of(f).set_tver(1);
  refresh_icrc(f, 14, false);
  expect(f, RxDrop::kBadTver);

  for (uint8_t bad : {0x15, 0x40, 0x4c, 0xa0, 0xff}) {
    f = good;
    bth_of(f).set_opcode(bad);
    refresh_icrc(f, 14, false);
    expect(f, RxDrop::kBadOpcode);
  }

  // Opcode headers that do not fit: WRITE_ONLY needs BTH + RETH (28 B), turn the
  // 8 payload bytes into "room" for only 8 + 12 + 4 bytes of headers.
  f = sample_frame(0);
  f.resize(f.size() - 16);  // drop the RETH bytes
  set_ipv4_total_len(f, static_cast<uint16_t>(f.size() - 14));
  set_udp_len(f, static_cast<uint16_t>(f.size() - 34));
  refresh_icrc(f, 14, false);
  expect(f, RxDrop::kBadLength);

  // Payload bytes on an opcode that has none (ACKNOWLEDGE carrying 4 bytes).
  {
    const PathHeaders path = make_path(false, false);
    std::vector<uint8_t> a(frame_bytes(path, op::kRcAcknowledge, 0) + 4);
    FrameWriter w(a.data(), static_cast<uint32_t>(a.size()), path, op::kRcAcknowledge, 0);
    w.finish();
    set_ipv4_total_len(a, static_cast<uint16_t>(a.size() - 14));
    set_udp_len(a, static_cast<uint16_t>(a.size() - 34));
    refresh_icrc(a, 14, false);
    expect(a, RxDrop::kBadLength);
  }

  f = sample_frame(0);
  bth_of(f).set_pad_count(1);
  refresh_icrc(f, 14, false);
  expect(f, RxDrop::kBadPad);
  f = sample_frame(4);
  bth_of(f).set_pad_count(3);  // 3 <= 4: allowed, payload becomes 1 byte
  refresh_icrc(f, 14, false);
  expect(f, RxDrop::kNone);
  // Payload + pad must end on a 4-byte boundary: 4 payload bytes plus one more
  // byte of datagram with pad 0 (or any pad) is malformed.
  for (uint8_t pad = 0; pad < 4; ++pad) {
    f = sample_frame(4);
    f.insert(f.end() - 4, 0x00);
    set_ipv4_total_len(f, static_cast<uint16_t>(f.size() - 14));
    set_udp_len(f, static_cast<uint16_t>(f.size() - 34));
    bth_of(f).set_pad_count(pad);
    refresh_icrc(f, 14, false);
    expect(f, RxDrop::kBadPad);
  }

  f = good;
  f[f.size() - 1] ^= 0x40;
  expect(f, RxDrop::kBadIcrc);
  EXPECT_EQ(parse(f, /*verify=*/false), RxDrop::kNone);

  EXPECT_EQ(seen.size(), static_cast<size_t>(RxDrop::kCount));
}

TEST(FrameDrop, Ipv6Specific) {
  const auto good = sample_frame(8, true);
  EXPECT_EQ(parse(good), RxDrop::kNone);
  auto f = good;
  f[14] = 0x40 | (f[14] & 0x0F);  // version 4 in an IPv6 EtherType
  EXPECT_EQ(parse(f), RxDrop::kBadIpHeader);
  f = good;
  f[14 + 6] = 6;  // next header TCP
  EXPECT_EQ(parse(f), RxDrop::kNotUdp);
  f = good;
  store_be16(f.data() + 14 + 4, static_cast<uint16_t>(f.size() - 54 + 1));
  EXPECT_EQ(parse(f), RxDrop::kTooShort);
  f = good;
  store_be16(f.data() + 14 + 4, 0);  // jumbogram marker: no UDP header fits
  EXPECT_EQ(parse(f), RxDrop::kBadLength);
}

TEST(Frame, RxDropNamesAreDistinct) {
  std::set<std::string> names;
  for (int d = 0; d < static_cast<int>(RxDrop::kCount); ++d) {
    const std::string n = rx_drop_name(static_cast<RxDrop>(d));
    EXPECT_NE(n, "unknown");
    EXPECT_TRUE(names.insert(n).second) << n;
  }
  EXPECT_STREQ(rx_drop_name(RxDrop::kCount), "unknown");
}

TEST(Frame, EthernetPaddingIsIgnored) {
  auto f = sample_frame(0);
  const size_t n = f.size();
  f.resize(n + 6, 0);  // bytes past the IP datagram (Ethernet padding, a trailer)
  PacketView v{};
  ASSERT_EQ(parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v), RxDrop::kNone);
  EXPECT_EQ(v.payload_len, 0u);
  EXPECT_EQ(v.frame_len, n + 6);
  EXPECT_EQ(v.l3_len(), n - 14);
  f[n + 5] = 0xAB;  // garbage in the padding does not matter either
  EXPECT_EQ(parse(f), RxDrop::kNone);
}

TEST(Frame, Ipv4OptionsAreHonoured) {
  const auto base = sample_frame(8);
  for (uint32_t opt_words = 1; opt_words <= 10; ++opt_words) {
    std::vector<uint8_t> f(base.begin(), base.begin() + 34);
    for (uint32_t i = 0; i < opt_words * 4; ++i) f.push_back(i == 0 ? 0x94 : 0x01);  // RA + NOPs
    f.insert(f.end(), base.begin() + 34, base.end());
    f[14] = static_cast<uint8_t>(0x40 | (5 + opt_words));
    set_ipv4_total_len(f, static_cast<uint16_t>(f.size() - 14));
    refresh_icrc(f, 14, false);
    PacketView v{};
    ASSERT_EQ(parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v), RxDrop::kNone)
        << opt_words;
    EXPECT_EQ(v.udp_off, 34 + opt_words * 4);
    EXPECT_EQ(v.bth_off, v.udp_off + 8);
    EXPECT_EQ(v.payload_len, 8u);
    EXPECT_EQ(v.bth().dest_qpn(), 0x13u);
    EXPECT_EQ(v.reth()->dma_len(), 8u);
    EXPECT_EQ(v.payload()[0], 0x5A);
    EXPECT_EQ(icrc_load(f.data() + f.size() - 4),
              test::reference_icrc(f.data() + 14, static_cast<uint32_t>(f.size() - 18), false));
  }
}

TEST(Frame, VariantFieldsDoNotBreakTheIcrc) {
  for (bool ipv6 : {false, true}) {
    const auto good = sample_frame(100, ipv6);
    auto f = good;
    if (ipv6) {
      reinterpret_cast<Ipv6Hdr*>(f.data() + 14)->set_vtf(6, 0xFF, 0x12345);
      reinterpret_cast<Ipv6Hdr*>(f.data() + 14)->set_hop_limit(1);
    } else {
      auto& ip = *reinterpret_cast<Ipv4Hdr*>(f.data() + 14);
      ip.set_tos(0x03);  // ECN CE
      ip.set_ttl(3);
      ip.set_checksum(0xFFFF);
    }
    const uint32_t udp_off = ipv6 ? 54 : 34;
    reinterpret_cast<UdpHdr*>(f.data() + udp_off)->set_checksum(0x1234);
    auto& b = *reinterpret_cast<Bth*>(f.data() + udp_off + 8);
    b.set_fecn(true);
    b.set_becn(true);
    PacketView v{};
    ASSERT_EQ(parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v), RxDrop::kNone);
    EXPECT_EQ(v.ecn, 3);
    EXPECT_TRUE(v.bth().fecn());
  }
}

TEST(FrameWriter, RefusesWhatDoesNotFitAndWritesNothing) {
  const PathHeaders path = make_path(false, true);
  const uint32_t need = frame_bytes(path, op::kRcSendOnly, 100);
  std::vector<uint8_t> buf(need + 8, 0xAB);
  const std::vector<uint8_t> untouched = buf;

  FrameWriter small(buf.data(), need - 1, path, op::kRcSendOnly, 100);
  EXPECT_FALSE(small.ok());
  EXPECT_EQ(small.payload(), nullptr);
  EXPECT_EQ(small.frame_len(), 0u);
  // Accessors of a refused writer are harmless.
  small.bth().set_psn(Psn(1));
  small.reth().set_rkey(5);
  small.set_ipv4_id(7);
  EXPECT_EQ(small.finish(), 0u);
  EXPECT_EQ(buf, untouched);

  FrameWriter bad_op(buf.data(), need, path, 0x15, 100);
  EXPECT_FALSE(bad_op.ok());
  EXPECT_EQ(bad_op.finish(), 0u);
  EXPECT_EQ(header_bytes(path, 0x15), 0u);
  EXPECT_EQ(frame_bytes(path, 0x40, 0), 0u);

  FrameWriter ack_with_payload(buf.data(), need, path, op::kRcAcknowledge, 4);
  EXPECT_FALSE(ack_with_payload.ok());

  std::vector<uint8_t> big(70000);
  FrameWriter too_big(big.data(), 70000, path, op::kRcSendOnly, 65536 - 20 - 8 - 12 - 4 + 1);
  EXPECT_FALSE(too_big.ok());
  FrameWriter too_big6(big.data(), 70000, make_path(true, false), op::kRcSendOnly, 65536);
  EXPECT_FALSE(too_big6.ok());
  FrameWriter null_buf(nullptr, 4096, path, op::kRcSendOnly, 0);
  EXPECT_FALSE(null_buf.ok());
  EXPECT_EQ(buf, untouched);

  // The largest IPv4 datagram that fits the 16-bit total length.
  const uint32_t max_payload = 65535 - 20 - 8 - 12 - 4;  // 65491; minus 3 leaves no pad
  FrameWriter max4(big.data(), 70000, make_path(false, false), op::kRcSendOnly, max_payload - 3);
  ASSERT_TRUE(max4.ok());
  const uint32_t n = max4.finish();
  PacketView v{};
  ASSERT_EQ(parse_frame(big.data(), n, &v), RxDrop::kNone);
  EXPECT_EQ(v.payload_len, max_payload - 3);

  FrameWriter exact(buf.data(), need, path, op::kRcSendOnly, 100);
  EXPECT_TRUE(exact.ok());
  EXPECT_EQ(exact.finish(), need);
  EXPECT_EQ(std::vector<uint8_t>(buf.begin() + need, buf.end()), std::vector<uint8_t>(8, 0xAB));
}

TEST(FrameWriter, AbsentHeaderAccessorAsserts) {
  const PathHeaders path = make_path(false, false);
  std::vector<uint8_t> buf(256);
  FrameWriter w(buf.data(), 256, path, op::kRcSendOnly, 0);
  ASSERT_TRUE(w.ok());
  w.finish();
  const std::vector<uint8_t> before = buf;
  // Debug builds assert; release builds write into the writer's scratch space.
  EXPECT_DEBUG_DEATH(w.reth().set_rkey(0xFFFFFFFF), "extension header");
  EXPECT_EQ(buf, before);
}

TEST(FrameWriter, FinishAgainAfterEditsAndIpv4Id) {
  auto f = sample_frame(33);
  const PathHeaders path = make_path(false, false);
  FrameWriter w(f.data(), static_cast<uint32_t>(f.size()), path, op::kRcRdmaWriteOnly, 33);
  w.bth().set_psn(Psn(1));
  w.set_ipv4_id(0xBEEF);
  uint32_t n = w.finish();
  PacketView v{};
  ASSERT_EQ(parse_frame(f.data(), n, &v), RxDrop::kNone);
  EXPECT_EQ(load_be16(f.data() + 18), 0xBEEF);
  EXPECT_EQ(ipv4_checksum(f.data() + 14, 20), 0);
  w.bth().set_psn(Psn(2));
  // The pad bits survive a caller overwriting the whole BTH flags byte.
  w.bth().set_pad_count(0);
  ASSERT_NE(parse_frame(f.data(), n, &v), RxDrop::kNone);
  n = w.finish();
  ASSERT_EQ(parse_frame(f.data(), n, &v), RxDrop::kNone);
  EXPECT_EQ(v.bth().psn(), Psn(2));
  EXPECT_EQ(v.pad_count(), 3);
  EXPECT_EQ(v.payload_len, 33u);
}

}  // namespace
}  // namespace burst::wire
