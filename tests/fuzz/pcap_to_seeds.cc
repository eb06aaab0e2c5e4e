// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Writes the seed corpus of the packet fuzzers into a directory, one frame per
// file: every frame of the given pcap files (Linux rxe, IPv4 only), plus one
// frame per valid opcode built with FrameWriter over IPv6 and over IPv4 with an
// 802.1Q tag, so the fuzzer starts with the paths the captures lack.
//   pcap_to_seeds OUT_DIR FILE.pcap...
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/wire/frame.h"
#include "tests/unit/wire/pcap.h"

namespace {

bool write_seed(const std::filesystem::path& path, const uint8_t* data, size_t len) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(len));
  if (!f) std::fprintf(stderr, "cannot write seed %s\n", path.c_str());
  return static_cast<bool>(f);
}

// Synthetic frames; returns how many were written, or -1 on error.
int write_synthetic(const std::filesystem::path& out_dir) {
  using namespace burst::wire;
  int written = 0;
  for (bool ipv6 : {false, true}) {
    PathHeaders path{};
    path.smac = {0x02, 0, 0, 0, 0, 1};
    path.dmac = {0x02, 0, 0, 0, 0, 2};
    path.ipv6 = ipv6;
    path.has_vlan = !ipv6;
    path.vlan_tci = 0x2064;
    path.sgid = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 1};
    path.dgid = {0xFE, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 0, 0, 2};
    path.traffic_class = 0x03;  // ECN CE
    path.hop_limit = 64;
    path.flow_label = 0x12345;
    path.udp_sport = 0xC000;
    for (int opcode = 0; opcode < 256; ++opcode) {
      const OpcodeInfo& info = opcode_info(static_cast<uint8_t>(opcode));
      if (!info.valid()) continue;
      const uint32_t payload = (info.flags & kHasPayload) ? 7 : 0;
      std::vector<uint8_t> buf(frame_bytes(path, static_cast<uint8_t>(opcode), payload));
      FrameWriter w(buf.data(), static_cast<uint32_t>(buf.size()), path,
                    static_cast<uint8_t>(opcode), payload);
      if (!w.ok()) return -1;
      w.bth().set_dest_qpn(0x11);
      w.bth().set_psn(Psn(0xFFFFFF));
      for (uint32_t i = 0; i < payload; ++i) w.payload()[i] = static_cast<uint8_t>(i);
      const uint32_t n = w.finish();
      const std::string name = std::string(ipv6 ? "synth6_" : "synth4vlan_") + info.name;
      if (!write_seed(out_dir / name, buf.data(), n)) return -1;
      ++written;
    }
  }
  return written;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s OUT_DIR FILE.pcap...\n", argv[0]);
    return 2;
  }
  const std::filesystem::path out_dir = argv[1];
  std::filesystem::create_directories(out_dir);
  size_t written = 0;
  for (int i = 2; i < argc; ++i) {
    burst::test::PcapFile pcap;
    std::string error;
    if (!burst::test::read_pcap(argv[i], &pcap, &error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    const std::string stem = std::filesystem::path(argv[i]).stem().string();
    for (size_t n = 0; n < pcap.frames.size(); ++n) {
      const auto& fr = pcap.frames[n];
      if (!write_seed(out_dir / (stem + "_" + std::to_string(n)), fr.data(), fr.size())) return 1;
      ++written;
    }
  }
  const int synthetic = write_synthetic(out_dir);
  if (synthetic < 0) return 1;
  written += static_cast<size_t>(synthetic);
  std::printf("%zu seeds in %s\n", written, out_dir.c_str());
  return written > 0 ? 0 : 1;
}
