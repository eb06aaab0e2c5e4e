// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Golden frames: every frame of the Linux rxe captures in tests/fixtures/rxe must
// parse, verify, carry sane fields, be rebuilt byte for byte by FrameWriter, and
// fail on any corruption of an ICRC-covered byte or on any truncation.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/wire/frame.h"
#include "tests/unit/wire/wire_test_util.h"

namespace burst::wire {
namespace {

using Frames = std::vector<std::vector<uint8_t>>;

// Fixture name -> frames, loaded once.
const std::map<std::string, Frames>& all_frames() {
  static const std::map<std::string, Frames> kFrames = [] {
    std::map<std::string, Frames> m;
    for (const auto& fx : test::fixtures()) {
      std::string error;
      m[fx.file] = test::load_frames(fx.file, &error);
      if (m[fx.file].empty()) ADD_FAILURE() << fx.file << ": " << error;
    }
    return m;
  }();
  return kFrames;
}

const Frames& frames(const char* file) { return all_frames().at(file); }

PacketView parse_ok(const std::vector<uint8_t>& f) {
  PacketView v{};
  EXPECT_EQ(parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v), RxDrop::kNone);
  return v;
}

// First frame of a fixture with the given opcode (and optional sender IP octet).
const std::vector<uint8_t>* find_frame(const char* file, uint8_t opcode, int nth = 0) {
  for (const auto& f : frames(file)) {
    PacketView v{};
    if (parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v) == RxDrop::kNone &&
        v.opcode == opcode && nth-- == 0) {
      return &f;
    }
  }
  return nullptr;
}

const Ipv4Hdr& ip_of(const PacketView& v) {
  return *reinterpret_cast<const Ipv4Hdr*>(v.frame + v.l3_off);
}

constexpr MacAddr kVm1Mac = {0x52, 0x54, 0x00, 0x99, 0x00, 0x01};
constexpr MacAddr kVm2Mac = {0x52, 0x54, 0x00, 0x99, 0x00, 0x02};
const Gid kVm1Gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 99, 0, 11};
const Gid kVm2Gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 99, 0, 12};

TEST(Golden, EveryFrameParsesVerifiesAndIsSane) {
  std::set<uint8_t> opcodes;
  std::set<uint8_t> pads;
  size_t total = 0;
  for (const auto& fx : test::fixtures()) {
    const Frames& fs = frames(fx.file);
    ASSERT_FALSE(fs.empty()) << fx.file;
    for (size_t idx = 0; idx < fs.size(); ++idx) {
      const auto& f = fs[idx];
      SCOPED_TRACE(std::string(fx.file) + " frame " + std::to_string(idx));
      PacketView v{};
      ASSERT_EQ(parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v), RxDrop::kNone);
      ++total;
      opcodes.insert(v.opcode);
      pads.insert(v.pad_count());
      const OpcodeInfo& info = *v.info;
      const Ipv4Hdr& ip = ip_of(v);

      // L2/L3/L4 as the fixture README describes them.
      EXPECT_FALSE(v.ipv6);
      EXPECT_FALSE(v.has_vlan);
      EXPECT_EQ(v.l3_off, 14);
      EXPECT_EQ(f.size(), 14u + ip.total_len());  // no Ethernet padding in these captures
      EXPECT_EQ(v.l3_len(), ip.total_len());
      const bool from_vm1 = v.smac() == kVm1Mac;
      EXPECT_TRUE(from_vm1 || v.smac() == kVm2Mac);
      EXPECT_EQ(v.dmac(), from_vm1 ? kVm2Mac : kVm1Mac);
      EXPECT_EQ(v.sgid(), from_vm1 ? kVm1Gid : kVm2Gid);
      EXPECT_EQ(v.dgid(), from_vm1 ? kVm2Gid : kVm1Gid);
      EXPECT_EQ(ip.tos(), 0);
      EXPECT_EQ(v.ecn, 0);
      EXPECT_EQ(ip.ttl(), 64);
      EXPECT_TRUE(ip.df());
      EXPECT_NE(ip.id(), 0);
      EXPECT_EQ(ipv4_checksum(f.data() + 14, ip.header_bytes()), 0);
      EXPECT_EQ(reinterpret_cast<const UdpHdr*>(f.data() + v.udp_off)->checksum(), 0);
      EXPECT_NE(v.udp_sport(), 0);

      // BTH.
      const Bth& b = v.bth();
      EXPECT_EQ(b.pkey(), kDefaultPkey);
      EXPECT_EQ(b.tver(), 0);
      EXPECT_FALSE(b.se());
      EXPECT_FALSE(b.mig_req());
      EXPECT_FALSE(b.fecn() || b.becn());
      EXPECT_NE(b.dest_qpn(), 0u);
      EXPECT_EQ(b.pad_count(), (4 - v.payload_len % 4) % 4);
      if ((info.flags & kRc) && (info.flags & kRequest)) {
        // rxe asks for an ACK exactly on the last packet of each message.
        EXPECT_EQ(b.ack_req(), (info.flags & kLast) != 0);
      }

      // Payload sizes against the path MTU.
      if (info.flags & (kFirst | kMiddle)) {
        if (!(info.flags & kLast)) {
          EXPECT_EQ(v.payload_len, fx.mtu);
        }
      }
      EXPECT_LE(v.payload_len, fx.mtu);
      if (!(info.flags & kHasPayload)) {
        EXPECT_EQ(v.payload_len, 0u);
      }

      // Extension headers.
      if (const Aeth* a = v.aeth()) {
        const std::set<uint8_t> rxe_syndromes = {0x1F, 0x3A, 0x60, 0x61, 0x62, 0x63};
        EXPECT_TRUE(rxe_syndromes.count(a->syndrome())) << int{a->syndrome()};
        if (info.flags & kReadResp) {
          EXPECT_EQ(a->syndrome(), 0x1F);
        }
      }
      if (const Reth* r = v.reth()) {
        EXPECT_NE(r->rkey(), 0u);
        if ((info.flags & kWrite) && (info.flags & kOnly)) {
          EXPECT_EQ(r->dma_len(), v.payload_len);
        }
      }
      if (const Deth* d = v.deth()) {
        EXPECT_NE(d->qkey(), 0u);
        if (b.dest_qpn() == 1) {  // CM MADs to QP1
          EXPECT_EQ(d->qkey(), kQp1Qkey);
        }
      }

      // Both ICRC implementations agree with the value rxe put on the wire.
      const uint32_t covered = v.l3_len() - 4;
      EXPECT_EQ(icrc_compute(f.data() + 14, covered, false), icrc_load(f.data() + f.size() - 4));
      EXPECT_EQ(test::reference_icrc(f.data() + 14, covered, false),
                icrc_load(f.data() + f.size() - 4));

      // Trailing bytes (Ethernet padding) change nothing.
      auto padded = f;
      padded.resize(f.size() + 7, 0x77);
      PacketView pv = parse_ok(padded);
      EXPECT_EQ(pv.payload_len, v.payload_len);
      EXPECT_EQ(pv.payload_off, v.payload_off);
    }
  }
  // Every opcode rxe can send appears (RC 0x00-0x14, 0x16, 0x17; UC 0x20-0x2b; UD 0x64, 0x65).
  std::set<uint8_t> want;
  for (int o = 0x00; o <= 0x14; ++o) want.insert(static_cast<uint8_t>(o));
  for (int o = 0x20; o <= 0x2b; ++o) want.insert(static_cast<uint8_t>(o));
  want.insert({0x16, 0x17, 0x64, 0x65});
  EXPECT_EQ(opcodes, want);
  EXPECT_EQ(pads, (std::set<uint8_t>{0, 1, 2, 3}));
  EXPECT_EQ(total, 407u);  // every record of the 16 files (tests/fixtures/rxe/README.md)
}

// Values printed by the tools in /work/shared/fixtures/rxe/logs/*.log.
TEST(Golden, SpotChecksAgainstToolLogs) {
  // rc_write_mtu1024.log: client QPN 0x13 PSN 0xc9ecdc; server RKey 0x00044e
  // VAddr 0x005600a0b23000; first test writes 8 bytes.
  {
    const auto& f = frames("rc_write_mtu1024.pcap");
    const PacketView w = parse_ok(f[0]);
    EXPECT_EQ(w.opcode, op::kRcRdmaWriteOnly);
    EXPECT_EQ(w.sgid(), kVm2Gid);
    EXPECT_EQ(w.bth().dest_qpn(), 0x13u);
    EXPECT_EQ(w.bth().psn(), Psn(0xC9ECDC));
    EXPECT_TRUE(w.bth().ack_req());
    ASSERT_NE(w.reth(), nullptr);
    EXPECT_EQ(w.reth()->rkey(), 0x44Eu);
    EXPECT_EQ(w.reth()->va(), 0x5600A0B23000ull);
    EXPECT_EQ(w.reth()->dma_len(), 8u);
    EXPECT_EQ(w.payload_len, 8u);
    const PacketView a = parse_ok(f[5]);  // the first ACK
    EXPECT_EQ(a.opcode, op::kRcAcknowledge);
    EXPECT_EQ(a.sgid(), kVm1Gid);
    EXPECT_EQ(a.bth().psn(), Psn(0xC9ECDC));
    EXPECT_EQ(a.aeth()->syn(), AethSyndrome::ack());
    EXPECT_EQ(a.aeth()->msn(), 1u);
  }
  // rc_atomic_mtu1024.log: CMP_AND_SWAP, client QPN 0x17 PSN 0x7f8b3c.
  {
    const auto* cs = find_frame("rc_atomic_mtu1024.pcap", op::kRcCompareSwap);
    ASSERT_NE(cs, nullptr);
    const PacketView v = parse_ok(*cs);
    EXPECT_EQ(cs->size(), 86u);  // README: 14 + 20 + 8 + 12 + 28 + 4
    EXPECT_EQ(v.bth().dest_qpn(), 0x17u);
    EXPECT_EQ(v.bth().psn(), Psn(0x7F8B3C));
    ASSERT_NE(v.atomic_eth(), nullptr);
    const auto* ack = find_frame("rc_atomic_mtu1024.pcap", op::kRcAtomicAcknowledge);
    ASSERT_NE(ack, nullptr);
    const PacketView a = parse_ok(*ack);
    EXPECT_EQ(a.bth().psn(), Psn(0x7F8B3C));
    EXPECT_EQ(a.aeth()->syndrome(), 0x1F);
    ASSERT_NE(a.atomic_ack(), nullptr);
  }
  // rc_imm_inv_mtu1024.log: imm=0x1000 / 0x2000 on QPN 0x19; bound MW rkeys
  // 0x8000164 and 0x800028c invalidated by SEND_*_WITH_INVALIDATE on QPN 0x1a.
  {
    const char* file = "rc_imm_inv_mtu1024.pcap";
    const PacketView s = parse_ok(*find_frame(file, op::kRcSendOnlyWithImmediate));
    EXPECT_EQ(s.bth().dest_qpn(), 0x19u);
    EXPECT_EQ(s.immdt()->imm(), 0x1000u);
    EXPECT_EQ(s.payload_len, 8u);
    const PacketView w = parse_ok(*find_frame(file, op::kRcRdmaWriteOnlyWithImmediate));
    EXPECT_EQ(w.immdt()->imm(), 0x2000u);
    EXPECT_EQ(parse_ok(*find_frame(file, op::kRcSendLastWithImmediate)).immdt()->imm(), 0x1001u);
    EXPECT_EQ(parse_ok(*find_frame(file, op::kRcRdmaWriteLastWithImmediate)).immdt()->imm(),
              0x2001u);
    const PacketView i1 = parse_ok(*find_frame(file, op::kRcSendOnlyWithInvalidate));
    EXPECT_EQ(i1.bth().dest_qpn(), 0x1Au);
    EXPECT_EQ(i1.ieth()->rkey(), 0x8000164u);
    const PacketView i2 = parse_ok(*find_frame(file, op::kRcSendLastWithInvalidate));
    EXPECT_EQ(i2.ieth()->rkey(), 0x800028Cu);
  }
  // rc_nak_errors_mtu1024.log: per case QPN and client PSN, and the NAK rxe sends.
  {
    struct Nak {
      uint32_t qpn, psn;
      uint8_t syndrome;
    };
    const Nak want[] = {{0x1C, 0x56C2EF, 0x62},
                        {0x1D, 0x550380, 0x62},
                        {0x1E, 0xF98F6F, 0x61},
                        {0x1F, 0xFA7447, 0x63}};
    for (int i = 0; i < 4; ++i) {
      const auto* f = find_frame("rc_nak_errors_mtu1024.pcap", op::kRcAcknowledge, i);
      ASSERT_NE(f, nullptr);
      const PacketView v = parse_ok(*f);
      EXPECT_EQ(v.bth().dest_qpn(), want[i].qpn);
      EXPECT_EQ(v.bth().psn(), Psn(want[i].psn));
      EXPECT_EQ(v.aeth()->syndrome(), want[i].syndrome);
      EXPECT_TRUE(v.aeth()->syn().is_nak());
    }
  }
  // rc_rnr_nak_mtu1024.log: QPN 0x1b, client PSN 0x94db41; the receiver posts
  // late, so the first SEND is answered with RNR NAKs (timer 26) and retried.
  {
    int rnr = 0;
    for (const auto& f : frames("rc_rnr_nak_mtu1024.pcap")) {
      const PacketView v = parse_ok(f);
      EXPECT_EQ(v.bth().dest_qpn(), 0x1Bu);
      if (v.aeth() && v.aeth()->syn().is_rnr_nak()) {
        ++rnr;
        EXPECT_EQ(v.aeth()->syn().rnr_timer(), 26);
        EXPECT_EQ(v.bth().psn(), Psn(0x94DB41));
      }
    }
    EXPECT_EQ(rnr, 7);
  }
  // ud_mtu1024.log: ibv_ud_pingpong QPN 0x24 both sides; 512 B + 40 B GRH space.
  {
    const PacketView v = parse_ok(frames("ud_mtu1024.pcap")[0]);
    EXPECT_EQ(v.opcode, op::kUdSendOnly);
    EXPECT_EQ(v.bth().dest_qpn(), 0x24u);
    EXPECT_EQ(v.deth()->src_qpn(), 0x24u);
    EXPECT_EQ(v.deth()->qkey(), 0x11111111u);  // ibv_ud_pingpong's fixed Q_Key
    EXPECT_EQ(v.payload_len, 512u);
  }
  // cm_udaddy: SIDR to QP1 with the GSI Q_Key, then UD sends whose immediate is
  // the sender's QPN.
  {
    const PacketView sidr = parse_ok(frames("cm_udaddy_mtu1024.pcap")[0]);
    EXPECT_EQ(sidr.bth().dest_qpn(), 1u);
    EXPECT_EQ(sidr.deth()->qkey(), kQp1Qkey);
    EXPECT_EQ(sidr.deth()->src_qpn(), 1u);
    EXPECT_EQ(sidr.payload_len, 256u);   // one MAD
    EXPECT_EQ(sidr.payload()[1], 0x07);  // management class: CM
    int imm = 0;
    for (const auto& f : frames("cm_udaddy_mtu1024.pcap")) {
      const PacketView v = parse_ok(f);
      if (v.opcode != op::kUdSendOnlyWithImmediate) continue;
      ++imm;
      EXPECT_EQ(v.immdt()->imm(), v.deth()->src_qpn());
    }
    EXPECT_EQ(imm, 6);
  }
  // pad_odd_sizes: rcx imm with 1, 2, 3 bytes -> pad 3, 2, 1.
  {
    for (int i = 0; i < 3; ++i) {
      const auto* f = find_frame("pad_odd_sizes_mtu1024.pcap", op::kRcSendOnlyWithImmediate, i);
      ASSERT_NE(f, nullptr);
      const PacketView v = parse_ok(*f);
      EXPECT_EQ(v.payload_len, static_cast<uint32_t>(i + 1));
      EXPECT_EQ(v.pad_count(), 3 - i);
    }
  }
}

TEST(Golden, AnyCorruptionOfCoveredBytesFailsVerification) {
  size_t checked = 0;
  for (const auto& fx : test::fixtures()) {
    for (const auto& orig : frames(fx.file)) {
      auto f = orig;
      const PacketView v0 = parse_ok(orig);
      const uint32_t len = static_cast<uint32_t>(f.size());
      const uint32_t bth = v0.bth_off;
      for (uint32_t pos = 0; pos < len; ++pos) {
        // Bytes outside the ICRC: MACs (the Ethernet FCS protects them); masked
        // variant fields: TOS, TTL, IPv4 checksum, UDP checksum, BTH byte 4.
        const bool uncovered = pos < 12;
        const bool masked = pos == 15 || pos == 22 || pos == 24 || pos == 25 || pos == 40 ||
                            pos == 41 || pos == bth + 4;
        // BTH bytes that change how the rest is parsed may give an earlier reason.
        const bool structural = pos < bth || pos == bth || pos == bth + 1;
        for (uint8_t flip : {0x01, 0xFF}) {
          f[pos] ^= flip;
          PacketView v{};
          const RxDrop r = parse_frame(f.data(), len, &v);
          if (uncovered || masked) {
            ASSERT_EQ(r, RxDrop::kNone) << fx.file << " pos " << pos;
          } else if (structural) {
            ASSERT_NE(r, RxDrop::kNone) << fx.file << " pos " << pos;
          } else {
            ASSERT_EQ(r, RxDrop::kBadIcrc) << fx.file << " pos " << pos;
          }
          if (pos >= 14 && !masked) {
            ASSERT_FALSE(icrc_verify(f.data() + 14, len - 14, false)) << fx.file << " " << pos;
          }
          f[pos] ^= flip;
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 200000u);
}

TEST(Golden, FrameWriterRebuildsEveryFrameByteForByte) {
  for (const auto& fx : test::fixtures()) {
    const Frames& fs = frames(fx.file);
    for (size_t idx = 0; idx < fs.size(); ++idx) {
      const auto& f = fs[idx];
      SCOPED_TRACE(std::string(fx.file) + " frame " + std::to_string(idx));
      const PacketView v = parse_ok(f);
      const Ipv4Hdr& ip = ip_of(v);
      PathHeaders path{};
      path.smac = v.smac();
      path.dmac = v.dmac();
      path.has_vlan = v.has_vlan;
      path.vlan_tci = v.vlan_tci;
      path.ipv6 = v.ipv6;
      path.sgid = v.sgid();
      path.dgid = v.dgid();
      path.traffic_class = ip.tos();
      path.hop_limit = ip.ttl();
      path.udp_sport = v.udp_sport();

      std::vector<uint8_t> out(frame_bytes(path, v.opcode, v.payload_len));
      ASSERT_EQ(out.size(), f.size());
      EXPECT_EQ(header_bytes(path, v.opcode), v.payload_off);
      FrameWriter w(out.data(), static_cast<uint32_t>(out.size()), path, v.opcode, v.payload_len);
      ASSERT_TRUE(w.ok());
      const Bth& src = v.bth();
      Bth& b = w.bth();
      b.set_se(src.se());
      b.set_mig_req(src.mig_req());
      b.set_pkey(src.pkey());
      b.set_fecn(src.fecn());
      b.set_becn(src.becn());
      b.set_dest_qpn(src.dest_qpn());
      b.set_ack_req(src.ack_req());
      b.set_psn(src.psn());
      if (const Reth* r = v.reth()) {
        w.reth().set_va(r->va());
        w.reth().set_rkey(r->rkey());
        w.reth().set_dma_len(r->dma_len());
      }
      if (const Aeth* a = v.aeth()) {
        w.aeth().set_syndrome(a->syndrome());
        w.aeth().set_msn(a->msn());
      }
      if (const AtomicEth* a = v.atomic_eth()) {
        w.atomic_eth().set_va(a->va());
        w.atomic_eth().set_rkey(a->rkey());
        w.atomic_eth().set_swap_add(a->swap_add());
        w.atomic_eth().set_compare(a->compare());
      }
      if (const AtomicAckEth* a = v.atomic_ack()) w.atomic_ack().set_orig(a->orig());
      if (const ImmDt* i = v.immdt()) w.immdt().set_imm(i->imm());
      if (const Ieth* i = v.ieth()) w.ieth().set_rkey(i->rkey());
      if (const Deth* d = v.deth()) {
        w.deth().set_qkey(d->qkey());
        w.deth().set_src_qpn(d->src_qpn());
      }
      std::memcpy(w.payload(), v.payload(), v.payload_len);

      // With ID 0 (the default) only the ID, the header checksum and the ICRC
      // (which covers the ID) differ.
      ASSERT_EQ(w.finish(), f.size());
      for (size_t i = 0; i < f.size(); ++i) {
        const bool id_or_csum = i == 18 || i == 19 || i == 24 || i == 25 || i >= f.size() - 4;
        if (!id_or_csum) {
          ASSERT_EQ(out[i], f[i]) << "byte " << i;
        }
      }
      EXPECT_EQ(ipv4_checksum(out.data() + 14, 20), 0);
      EXPECT_EQ(parse_ok(out).payload_len, v.payload_len);

      // With rxe's ID the whole frame is identical, checksum and ICRC included.
      w.set_ipv4_id(ip.id());
      ASSERT_EQ(w.finish(), f.size());
      ASSERT_EQ(out, f);
    }
  }
}

TEST(Golden, EveryPrefixIsDroppedAsTooShort) {
  size_t prefixes = 0;
  for (const auto& fx : test::fixtures()) {
    for (const auto& f : frames(fx.file)) {
      for (size_t n = 0; n < f.size(); ++n) {
        // An exactly sized heap copy: ASan reports any read past n.
        const std::vector<uint8_t> cut(f.begin(), f.begin() + static_cast<ptrdiff_t>(n));
        PacketView v{};
        ASSERT_EQ(parse_frame(cut.data(), static_cast<uint32_t>(n), &v), RxDrop::kTooShort)
            << fx.file << " n=" << n;
        ASSERT_EQ(parse_frame(cut.data(), static_cast<uint32_t>(n), &v, false), RxDrop::kTooShort);
        ++prefixes;
      }
    }
  }
  EXPECT_GT(prefixes, 250000u);
}

}  // namespace
}  // namespace burst::wire
