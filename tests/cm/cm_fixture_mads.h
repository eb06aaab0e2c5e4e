/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The CM MADs of the rxe captures (tests/fixtures/rxe/cm_*.pcap): UD SEND_ONLY
// (BTH opcode 0x64) to DQPN 1 on UDP 4791, the 256 bytes after BTH + DETH.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "cm/ib_cm.h"
#include "tests/unit/wire/pcap.h"

namespace burst::cm::test {

struct FixtureMad {
  Mad mad;           // peer: the IP source as an IPv4-mapped GID, the Ethernet source, DETH SQPN
  Gid dst_gid{};     // the IP destination
};

inline Gid v4_gid(const uint8_t* ip) {
  Gid g{};
  g[10] = 0xFF;
  g[11] = 0xFF;
  std::memcpy(g.data() + 12, ip, 4);
  return g;
}

inline std::vector<FixtureMad> fixture_mads(const std::string& file) {
  burst::test::PcapFile pcap;
  std::string error;
  std::vector<FixtureMad> out;
  if (!burst::test::read_pcap(std::string(BURST_RXE_FIXTURES_DIR) + "/" + file, &pcap, &error))
    return out;
  for (const auto& f : pcap.frames) {
    if (f.size() < 14 + 20 + 8 + 20 + kMadSize + 4 || f[12] != 0x08 || f[13] != 0x00) continue;
    const size_t ip = 14, udp = ip + (f[ip] & 0x0F) * 4, bth = udp + 8;
    if (f[ip + 9] != 17 || ((f[udp + 2] << 8) | f[udp + 3]) != 4791) continue;
    const uint32_t dqpn = (f[bth + 5] << 16) | (f[bth + 6] << 8) | f[bth + 7];
    if (f[bth] != 0x64 || dqpn != kGsiQpn || bth + 20 + kMadSize + 4 > f.size()) continue;
    FixtureMad m;
    std::memcpy(m.mad.bytes.data(), f.data() + bth + 20, kMadSize);
    m.mad.peer.gid = v4_gid(f.data() + ip + 12);
    std::memcpy(m.mad.peer.mac.data(), f.data() + 6, 6);
    m.mad.peer.remote_qpn = (f[bth + 17] << 16) | (f[bth + 18] << 8) | f[bth + 19];
    m.dst_gid = v4_gid(f.data() + ip + 16);
    out.push_back(m);
  }
  return out;
}

}  // namespace burst::cm::test
