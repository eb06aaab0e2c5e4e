/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Helpers shared by the wire unit tests.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "tests/unit/wire/pcap.h"

namespace burst::test {

// Reference ICRC, written from the RoCEv2 rule independently of core/wire/icrc.cc:
// copy the whole L3 datagram, mask the variant fields, prepend 8 x 0xFF and run
// zlib's crc32 once over the result. l3_len excludes the ICRC.
inline uint32_t reference_icrc(const uint8_t* l3, uint32_t l3_len, bool ipv6) {
  std::vector<uint8_t> buf(8 + size_t{l3_len}, 0xFF);
  if (l3_len > 0) std::memcpy(buf.data() + 8, l3, l3_len);
  uint8_t* ip = buf.data() + 8;
  uint32_t ip_hdr;
  if (ipv6) {
    ip_hdr = 40;
    ip[0] |= 0x0F;                 // traffic class (high nibble)
    ip[1] = ip[2] = ip[3] = 0xFF;  // traffic class (low nibble) + flow label
    ip[7] = 0xFF;                  // hop limit
  } else {
    ip_hdr = (ip[0] & 0x0F) * 4u;
    ip[1] = 0xFF;            // TOS
    ip[8] = 0xFF;            // TTL
    ip[10] = ip[11] = 0xFF;  // header checksum
  }
  ip[ip_hdr + 6] = ip[ip_hdr + 7] = 0xFF;  // UDP checksum
  ip[ip_hdr + 8 + 4] = 0xFF;               // BTH resv8a (FECN/BECN)
  return static_cast<uint32_t>(crc32(0, buf.data(), static_cast<uInt>(buf.size())));
}

struct Fixture {
  const char* file;
  uint32_t mtu;
};

// The fixture captures copied into tests/fixtures/rxe (see README.md there).
inline const std::vector<Fixture>& fixtures() {
  static const std::vector<Fixture> kList = {
      {"rc_write_mtu1024.pcap", 1024},
      {"rc_write_mtu4096.pcap", 4096},
      {"rc_read_mtu1024.pcap", 1024},
      {"rc_send_mtu1024.pcap", 1024},
      {"rc_atomic_mtu1024.pcap", 1024},
      {"rc_atomic_mtu4096.pcap", 4096},
      {"rc_imm_inv_mtu1024.pcap", 1024},
      {"rc_imm_inv_mtu4096.pcap", 4096},
      {"rc_nak_errors_mtu1024.pcap", 1024},
      {"rc_rnr_nak_mtu1024.pcap", 1024},
      {"ud_mtu1024.pcap", 1024},
      {"ud_mtu4096.pcap", 4096},
      {"pad_odd_sizes_mtu1024.pcap", 1024},
      {"uc_mtu1024.pcap", 1024},
      {"uc_imm_mtu1024.pcap", 1024},
      {"cm_udaddy_mtu1024.pcap", 1024},
  };
  return kList;
}

inline std::string fixture_path(const char* file) {
  return std::string(BURST_RXE_FIXTURES_DIR) + "/" + file;
}

// Frames of one fixture; empty (with *error set) on failure.
inline std::vector<std::vector<uint8_t>> load_frames(const char* file, std::string* error) {
  PcapFile pcap;
  if (!read_pcap(fixture_path(file), &pcap, error)) return {};
  if (pcap.linktype != 1) {
    *error = std::string(file) + ": linktype is not Ethernet";
    return {};
  }
  return std::move(pcap.frames);
}

}  // namespace burst::test
