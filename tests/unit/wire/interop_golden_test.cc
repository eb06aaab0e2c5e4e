// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Golden frames from the rxe interop matrix (tests/fixtures/interop, captured by
// tests/interop/matrix.sh with MATRIX_CAPTURE_DIR on the bridge side of burst's
// veth): frames burst built (10.99.0.1) and frames Linux rxe built (10.99.0.11) in
// live perftest sessions. Every one must parse with its ICRC verified (and agree
// with the zlib reference), carry sane headers, and survive padding; a regression
// in the wire code shows here without a VM.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/wire/frame.h"
#include "tests/unit/wire/pcap.h"
#include "tests/unit/wire/wire_test_util.h"

namespace burst::wire {
namespace {

struct Capture {
  const char* file;
  uint32_t frames;   // records in the file
  bool burst_sends;  // burst is the requester (b2r)
  uint32_t mtu;      // RoCE path MTU of the session
};

// What matrix.sh kept: the first frames of each cell (perftest 64 KiB messages;
// ib_atomic_bw: 8-byte FETCH_AND_ADD). README.md in the fixtures folder says how.
constexpr Capture kCaptures[] = {
    {"ib_write_bw_b2r_mtu1024.pcap", 24, true, 1024},
    {"ib_write_bw_r2b_mtu1024.pcap", 24, false, 1024},
    {"ib_read_bw_b2r_mtu1024.pcap", 24, true, 1024},
    {"ib_read_bw_r2b_mtu1024.pcap", 24, false, 1024},
    {"ib_send_bw_b2r_mtu1024.pcap", 24, true, 1024},
    {"ib_send_bw_r2b_mtu1024.pcap", 24, false, 1024},
    {"ib_atomic_bw_b2r_mtu1024.pcap", 30, true, 1024},
    {"ib_atomic_bw_r2b_mtu1024.pcap", 30, false, 1024},
    {"ib_write_bw_b2r_mtu4096.pcap", 30, true, 4096},
    {"ib_write_bw_r2b_mtu4096.pcap", 30, false, 4096},
    {"ib_read_bw_b2r_mtu4096.pcap", 30, true, 4096},
    {"ib_read_bw_r2b_mtu4096.pcap", 30, false, 4096},
    {"ib_send_bw_b2r_mtu4096.pcap", 30, true, 4096},
    {"ib_send_bw_r2b_mtu4096.pcap", 30, false, 4096},
    {"ib_atomic_bw_b2r_mtu4096.pcap", 30, true, 4096},
    {"ib_atomic_bw_r2b_mtu4096.pcap", 30, false, 4096},
};

constexpr uint8_t kBurstIp = 1;  // 10.99.0.1
constexpr uint8_t kRxeIp = 11;   // 10.99.0.11

std::vector<std::vector<uint8_t>> load(const char* file) {
  test::PcapFile pcap;
  std::string error;
  const std::string path = std::string(BURST_INTEROP_FIXTURES_DIR) + "/" + file;
  EXPECT_TRUE(test::read_pcap(path, &pcap, &error)) << error;
  EXPECT_EQ(pcap.linktype, 1u) << file;
  return pcap.frames;
}

TEST(InteropGolden, EveryFrameOfBothImplementationsParsesWithItsIcrc) {
  std::map<uint8_t, uint32_t> by_source;  // last IPv4 octet -> frames
  for (const Capture& c : kCaptures) {
    SCOPED_TRACE(c.file);
    const auto frames = load(c.file);
    EXPECT_EQ(frames.size(), c.frames);
    // tcpdump listened before the tools started: a file opens with the session's
    // first request (a message start), not in the middle of the traffic.
    if (!frames.empty()) {
      PacketView first{};
      ASSERT_EQ(parse_frame(frames[0].data(), static_cast<uint32_t>(frames[0].size()), &first),
                RxDrop::kNone);
      EXPECT_TRUE(first.info->has(kRequest) && first.info->has(kFirst)) << first.info->name;
    }
    for (const auto& f : frames) {
      PacketView v{};
      ASSERT_EQ(parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v), RxDrop::kNone);
      const auto& ip = *reinterpret_cast<const Ipv4Hdr*>(v.frame + v.l3_off);
      const uint8_t src = ip.saddr_bytes()[3];
      ASSERT_TRUE(src == kBurstIp || src == kRxeIp) << int{src};
      ++by_source[src];
      // Requests come from the requester, responses (ACK, READ response) from the responder.
      const bool from_requester = (src == kBurstIp) == c.burst_sends;
      const bool response = v.opcode >= 0x0d && v.opcode <= 0x12;  // RC READ responses, ACK, atomic ACK
      EXPECT_EQ(from_requester, !response) << "opcode 0x" << std::hex << int{v.opcode};
      EXPECT_LE(v.payload_len, c.mtu);
      const uint32_t covered = v.l3_len() - 4;
      EXPECT_EQ(test::reference_icrc(f.data() + 14, covered, false),
                icrc_load(f.data() + f.size() - 4));
      auto padded = f;
      padded.resize(f.size() + 5, 0);
      PacketView pv{};
      ASSERT_EQ(parse_frame(padded.data(), static_cast<uint32_t>(padded.size()), &pv),
                RxDrop::kNone);
      EXPECT_EQ(pv.payload_len, v.payload_len);
    }
  }
  EXPECT_GT(by_source[kBurstIp], 0u);  // frames burst built
  EXPECT_GT(by_source[kRxeIp], 0u);    // frames rxe built
}

}  // namespace
}  // namespace burst::wire
