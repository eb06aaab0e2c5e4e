// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// QP1 in the datapath (core/gsi_channel.h) against the CM MADs Linux rxe sent
// (tests/fixtures/rxe/cm_rping_mtu1024.pcap: rping's REQ, REP, RTU, DREQ, DREP
// between vm1 10.99.0.11 / 52:54:00:99:00:01 and vm2 10.99.0.12 / :02).
//   transmit: the REQ's MAD and the capture's peer, sent through an Engine with
//     a GsiChannel, give the captured frame. Bytes that differ, and why: the
//     IPv4 identification (rxe's counter vs. burst's; 18-19) and so the IPv4
//     header checksum (24-25), the UDP source port (rxe: 0xC000 + hash_32(QPN,
//     14); burst: Engine::udp_sport_for; 34-35), and so the ICRC (it covers the
//     identification and the source port; the last 4 bytes). With those two
//     fields set to the captured values and the checksum and ICRC recomputed,
//     the frame is the captured one byte for byte.
//   receive: the whole capture fed to rx_burst gives exactly its five MADs with
//     their peers; wrong Q_Key, short payload, another opcode, a full ring are
//     counted drops; one eventfd write per burst.
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/engine.h"
#include "core/gsi_channel.h"
#include "core/mr.h"
#include "core/wire/frame.h"
#include "core/worker.h"
#include "tests/unit/wire/pcap.h"

namespace burst::core::test {
namespace {

using Bytes = std::vector<uint8_t>;
using Gid = std::array<uint8_t, 16>;
using Mac = std::array<uint8_t, 6>;

constexpr Mac kVm1Mac = {0x52, 0x54, 0x00, 0x99, 0x00, 0x01};
constexpr Mac kVm2Mac = {0x52, 0x54, 0x00, 0x99, 0x00, 0x02};
constexpr Gid kVm1Gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 11};
constexpr Gid kVm2Gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 12};
constexpr Gid kLinkLocal = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x99, 0, 2};
constexpr uint32_t kMadOff = 14 + 20 + 8 + 12 + 8;  // Ethernet, IPv4, UDP, BTH, DETH

std::vector<Bytes> capture(const char* name) {
  burst::test::PcapFile pcap;
  std::string error;
  EXPECT_TRUE(
      burst::test::read_pcap(std::string(BURST_RXE_FIXTURES_DIR) + "/" + name, &pcap, &error))
      << error;
  return pcap.frames;
}

// The MAD frames of a capture: UD SEND_ONLY to DQPN 1.
std::vector<Bytes> mad_frames(const std::vector<Bytes>& frames) {
  std::vector<Bytes> out;
  for (const Bytes& f : frames) {
    wire::PacketView pv;
    if (wire::parse_frame(f.data(), static_cast<uint32_t>(f.size()), &pv) == wire::RxDrop::kNone &&
        pv.opcode == wire::op::kUdSendOnly && pv.bth().dest_qpn() == kGsiQpn) {
      out.push_back(f);
    }
  }
  return out;
}

struct Host {
  Host(const Mac& mac, const Gid& gid, uint32_t slots = 64) : channel(slots) {
    EngineConfig c;
    c.port.mac = mac;
    c.port.gids = {kLinkLocal, gid};  // GID index 1 is the IPv4 one, as on the guests
    c.max_qps = 16;
    engine = std::make_unique<Engine>(c, mrs, copier);
  }
  void rx(const std::vector<Bytes>& frames) {
    std::vector<datapath::Frame> f;
    for (const Bytes& b : frames) {
      auto* p = const_cast<uint8_t*>(b.data());
      f.push_back({p, static_cast<uint32_t>(b.size()), static_cast<uint32_t>(b.size()), 0});
    }
    engine->rx_burst(f.data(), static_cast<uint32_t>(f.size()), 1000);
  }
  std::vector<Bytes> tx() {
    std::vector<Bytes> out;
    while (engine->tx_pending()) {
      std::vector<uint8_t> store(8 * 2048);
      datapath::Frame f[8];
      for (uint32_t i = 0; i < 8; ++i) f[i] = {store.data() + i * 2048, 0, 2048, i};
      const uint32_t n = engine->tx_build(f, 8, 1000);
      if (n == 0) break;
      for (uint32_t i = 0; i < n; ++i) out.emplace_back(f[i].data, f[i].data + f[i].len);
    }
    return out;
  }
  uint64_t eventfd_count() {
    uint64_t v = 0;
    if (read(channel.event_fd(), &v, sizeof(v)) != sizeof(v)) return 0;
    return v;
  }

  MrTable mrs{16, 4};
  CopyEngine copier;
  GsiChannel channel;
  std::unique_ptr<Engine> engine;
};

// Rewrites the ICRC (and the IPv4 checksum) of an untagged IPv4 frame.
void reseal(Bytes& f) {
  f[24] = f[25] = 0;
  const uint16_t sum = wire::ipv4_checksum(f.data() + 14, 20);
  f[24] = static_cast<uint8_t>(sum >> 8);
  f[25] = static_cast<uint8_t>(sum);
  const uint32_t covered = static_cast<uint32_t>(f.size()) - 14 - wire::kIcrcBytes;
  wire::icrc_store(f.data() + 14 + covered, wire::icrc_compute(f.data() + 14, covered, false));
}

GsiMad mad_of(const Bytes& f) {
  GsiMad m;
  std::memcpy(m.mad.data(), f.data() + kMadOff, kGsiMadBytes);
  return m;
}

TEST(GsiWire, TransmitMatchesTheCapturedReq) {
  const std::vector<Bytes> mads = mad_frames(capture("cm_rping_mtu1024.pcap"));
  ASSERT_EQ(mads.size(), 5u);
  const Bytes& req = mads[0];  // vm2 -> vm1, PSN 0 (QP1's first MAD since boot)
  ASSERT_EQ(req[kMadOff + 16], 0x00);
  ASSERT_EQ(req[kMadOff + 17], 0x10) << "attribute ID: ConnectRequest";

  Host vm2(kVm2Mac, kVm2Gid);
  ASSERT_TRUE(vm2.engine->attach_gsi(&vm2.channel, 0).ok());
  EXPECT_FALSE(vm2.engine->tx_pending());
  GsiMad m = mad_of(req);
  m.remote_gid = kVm1Gid;
  m.local_gid = kVm2Gid;
  m.remote_mac = kVm1Mac;
  m.remote_qpn = kGsiQpn;
  m.traffic_class = 0;
  m.hop_limit = 64;
  ASSERT_TRUE(vm2.channel.send(m));
  EXPECT_TRUE(vm2.engine->tx_pending());
  std::vector<Bytes> out = vm2.tx();
  ASSERT_EQ(out.size(), 1u);
  Bytes& ours = out[0];
  ASSERT_EQ(ours.size(), req.size());
  wire::PacketView pv;
  ASSERT_EQ(wire::parse_frame(ours.data(), static_cast<uint32_t>(ours.size()), &pv),
            wire::RxDrop::kNone)
      << "ICRC valid";
  std::vector<size_t> differ;
  for (size_t i = 0; i < req.size(); ++i) {
    if (ours[i] != req[i]) differ.push_back(i);
  }
  const size_t icrc = req.size() - 4;
  for (size_t i : differ) {
    const bool expected =
        i == 18 || i == 19 || i == 24 || i == 25 || i == 34 || i == 35 || i >= icrc;
    EXPECT_TRUE(expected) << "byte " << i << " differs: ours " << int(ours[i]) << ", rxe's "
                          << int(req[i]);
  }
  // The same identification and source port as rxe's: the same frame exactly.
  std::memcpy(&ours[18], &req[18], 2);
  std::memcpy(&ours[34], &req[34], 2);
  reseal(ours);
  EXPECT_EQ(ours, req);
  EXPECT_EQ(vm2.channel.counters().tx, 1u);
  EXPECT_EQ(vm2.engine->counters().tx_packets, 1u);

  // QP1's PSN advances per MAD (the capture: vm2's next MAD, the RTU, is PSN 1).
  ASSERT_TRUE(vm2.channel.send(m));
  out = vm2.tx();
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(wire::parse_frame(out[0].data(), static_cast<uint32_t>(out[0].size()), &pv),
            wire::RxDrop::kNone);
  EXPECT_EQ(pv.bth().psn().value(), 1u);
  EXPECT_TRUE(pv.bth().ack_req());
  EXPECT_EQ(pv.deth()->src_qpn(), kGsiQpn);
  EXPECT_EQ(pv.deth()->qkey(), wire::kQp1Qkey);
}

TEST(GsiWire, TransmitTrafficClassHopLimitAndIpv6) {
  Host h(kVm2Mac, kVm2Gid);
  ASSERT_TRUE(h.engine->attach_gsi(&h.channel).ok());
  GsiMad m;
  m.remote_gid = kVm1Gid;
  m.local_gid = kVm2Gid;
  m.remote_mac = kVm1Mac;
  m.remote_qpn = 1;
  m.traffic_class = 0x68;
  m.hop_limit = 7;
  ASSERT_TRUE(h.channel.send(m));
  GsiMad v6 = m;  // link-local source and destination
  v6.local_gid = kLinkLocal;
  v6.remote_gid = kLinkLocal;
  v6.remote_gid[15] = 1;
  ASSERT_TRUE(h.channel.send(v6));
  GsiMad bad = m;  // IPv6 source, IPv4 destination: dropped, counted
  bad.local_gid = kLinkLocal;
  ASSERT_TRUE(h.channel.send(bad));
  std::vector<Bytes> out = h.tx();
  ASSERT_EQ(out.size(), 2u);
  wire::PacketView pv;
  ASSERT_EQ(wire::parse_frame(out[0].data(), static_cast<uint32_t>(out[0].size()), &pv),
            wire::RxDrop::kNone);
  EXPECT_EQ(out[0][15], 0x68) << "TOS";
  EXPECT_EQ(out[0][22], 7) << "TTL";
  ASSERT_EQ(wire::parse_frame(out[1].data(), static_cast<uint32_t>(out[1].size()), &pv),
            wire::RxDrop::kNone);
  EXPECT_TRUE(pv.ipv6);
  EXPECT_EQ(pv.dgid(), v6.remote_gid);
  EXPECT_EQ(pv.payload_len, kGsiMadBytes);
  EXPECT_EQ(h.channel.counters().tx_bad_path, 1u);
  EXPECT_EQ(h.channel.counters().tx, 2u);
}

TEST(GsiWire, ReceiveTheCaptureGivesItsMadsAndPeers) {
  const std::vector<Bytes> all = capture("cm_rping_mtu1024.pcap");
  const std::vector<Bytes> mads = mad_frames(all);
  ASSERT_EQ(mads.size(), 5u);
  Host vm1(kVm1Mac, kVm1Gid);
  ASSERT_TRUE(vm1.engine->attach_gsi(&vm1.channel).ok());
  vm1.rx(all);  // every frame of the capture in one burst (RC frames: unknown QPs)
  EXPECT_EQ(vm1.eventfd_count(), 1u) << "one wake-up for the burst";
  GsiMad got[8];
  ASSERT_EQ(vm1.channel.receive(got, 8), 5u);
  for (size_t i = 0; i < mads.size(); ++i) {
    const Bytes& f = mads[i];
    const bool from_vm2 = f[14 + 15] == 12;  // the IPv4 source's last byte
    EXPECT_EQ(got[i].remote_gid, from_vm2 ? kVm2Gid : kVm1Gid) << i;
    EXPECT_EQ(got[i].local_gid, from_vm2 ? kVm1Gid : kVm2Gid) << i;
    EXPECT_EQ(got[i].remote_mac, from_vm2 ? kVm2Mac : kVm1Mac) << i;
    EXPECT_EQ(got[i].remote_qpn, 1u);
    EXPECT_EQ(got[i].traffic_class, 0);
    EXPECT_EQ(got[i].hop_limit, 64);
    EXPECT_EQ(std::memcmp(got[i].mad.data(), f.data() + kMadOff, kGsiMadBytes), 0) << i;
  }
  EXPECT_EQ(vm1.channel.receive(got, 8), 0u);
  EXPECT_EQ(vm1.channel.counters().rx, 5u);
  EXPECT_EQ(vm1.eventfd_count(), 0u);

  // SIDR (udaddy): the two MADs to QP1 of that capture too.
  const std::vector<Bytes> sidr = mad_frames(capture("cm_udaddy_mtu1024.pcap"));
  ASSERT_EQ(sidr.size(), 2u);
  vm1.rx(sidr);
  ASSERT_EQ(vm1.channel.receive(got, 8), 2u);
  EXPECT_EQ(std::memcmp(got[1].mad.data(), sidr[1].data() + kMadOff, kGsiMadBytes), 0);
}

TEST(GsiWire, BadMadsAreCountedDrops) {
  const std::vector<Bytes> mads = mad_frames(capture("cm_rping_mtu1024.pcap"));
  ASSERT_FALSE(mads.empty());
  Host h(kVm1Mac, kVm1Gid);
  ASSERT_TRUE(h.engine->attach_gsi(&h.channel).ok());

  Bytes qkey = mads[0];
  qkey[14 + 20 + 8 + 12 + 3] ^= 1;  // DETH Q_Key 0x80010001
  reseal(qkey);
  // A 252-byte payload (the same headers, 4 bytes shorter).
  wire::PathHeaders path{};
  path.smac = kVm2Mac;
  path.dmac = kVm1Mac;
  path.sgid = kVm2Gid;
  path.dgid = kVm1Gid;
  path.hop_limit = 64;
  path.udp_sport = 0xd872;
  Bytes shorter(512);
  wire::FrameWriter w(shorter.data(), 512, path, wire::op::kUdSendOnly, 252);
  w.bth().set_dest_qpn(1);
  w.deth().set_qkey(wire::kQp1Qkey);
  w.deth().set_src_qpn(1);
  shorter.resize(w.finish());
  Bytes imm(512);  // UD SEND_ONLY with immediate to QP1
  wire::FrameWriter wi(imm.data(), 512, path, wire::op::kUdSendOnlyWithImmediate, 256);
  wi.bth().set_dest_qpn(1);
  wi.deth().set_qkey(wire::kQp1Qkey);
  wi.deth().set_src_qpn(1);
  imm.resize(wi.finish());

  h.rx({qkey, shorter, imm});
  const GsiCounters c = h.channel.counters();
  EXPECT_EQ(c.drop_qkey, 1u);
  EXPECT_EQ(c.drop_len, 1u);
  EXPECT_EQ(c.drop_opcode, 1u);
  EXPECT_EQ(c.rx, 0u);
  EXPECT_EQ(h.eventfd_count(), 0u) << "nothing delivered, no wake-up";
  GsiMad got[4];
  EXPECT_EQ(h.channel.receive(got, 4), 0u);
}

TEST(GsiWire, FullRingsDropAndCount) {
  const std::vector<Bytes> mads = mad_frames(capture("cm_rping_mtu1024.pcap"));
  Host h(kVm1Mac, kVm1Gid, 2);
  ASSERT_TRUE(h.engine->attach_gsi(&h.channel).ok());
  h.rx(mads);  // 5 MADs, 2 slots
  EXPECT_EQ(h.channel.counters().rx, 2u);
  EXPECT_EQ(h.channel.counters().rx_ring_full, 3u);
  GsiMad got[1];
  ASSERT_EQ(h.channel.receive(got, 1), 1u);
  // One left: the eventfd stays readable.
  uint64_t v = 0;
  EXPECT_EQ(read(h.channel.event_fd(), &v, sizeof(v)), static_cast<ssize_t>(sizeof(v)));
  ASSERT_EQ(h.channel.receive(got, 1), 1u);
  EXPECT_EQ(read(h.channel.event_fd(), &v, sizeof(v)), -1) << "drained";

  GsiMad m;
  m.remote_gid = kVm2Gid;
  m.local_gid = kVm1Gid;
  EXPECT_TRUE(h.channel.send(m));
  EXPECT_TRUE(h.channel.send(m));
  EXPECT_FALSE(h.channel.send(m));
  EXPECT_EQ(h.channel.counters().tx_ring_full, 1u);
  EXPECT_EQ(h.tx().size(), 2u);
  EXPECT_TRUE(h.channel.send(m));
}

TEST(GsiWire, Qp1IsNeverAVerbsQpWhileAttached) {
  Host h(kVm1Mac, kVm1Gid);
  const uint32_t pd = h.mrs.alloc_pd();
  uint32_t cq = 0;
  ASSERT_TRUE(h.engine->create_cq(16, &cq).ok());
  QpInitAttr init;
  init.type = QpType::kUd;
  init.pd = pd;
  init.send_cq = init.recv_cq = cq;
  init.gsi = true;
  uint32_t qpn = 0;
  ASSERT_TRUE(h.engine->attach_gsi(&h.channel).ok());
  EXPECT_EQ(h.engine->create_qp(init, &qpn).errc(), Errc::kBusy);
  init.gsi = false;
  for (int i = 0; i < 16; ++i) {  // every QPN handed out is >= first_qpn, never 1
    ASSERT_TRUE(h.engine->create_qp(init, &qpn).ok());
    EXPECT_GE(qpn, h.engine->config().first_qpn);
  }
  ASSERT_TRUE(h.engine->attach_gsi(nullptr).ok());
  init.gsi = true;
  ASSERT_TRUE(h.engine->create_qp(init, &qpn).ok());
  EXPECT_EQ(qpn, 1u);
  EXPECT_EQ(h.engine->attach_gsi(&h.channel).errc(), Errc::kBusy);
}

// A sleeping owner sees MADs queued for it (Handoff::add_inbound).
TEST(GsiWire, QueuedMadsKeepTheOwnerAwake) {
  GsiChannel ch(4);
  Handoff handoff(2, 4, 64);
  handoff.add_inbound(kGsiOwner, &ch.tx_ring());
  const int fd = eventfd(0, EFD_NONBLOCK);
  handoff.set_wake_fd(kGsiOwner, fd);
  EXPECT_TRUE(handoff.may_sleep(kGsiOwner));  // now "sleeping"
  ASSERT_TRUE(ch.send(GsiMad{}));
  handoff.wake(kGsiOwner);
  uint64_t v = 0;
  EXPECT_EQ(read(fd, &v, sizeof(v)), static_cast<ssize_t>(sizeof(v))) << "woken";
  handoff.woke(kGsiOwner);
  EXPECT_FALSE(handoff.may_sleep(kGsiOwner)) << "a queued MAD: no sleep";
  EXPECT_TRUE(handoff.may_sleep(1));
  close(fd);
}

}  // namespace
}  // namespace burst::core::test
