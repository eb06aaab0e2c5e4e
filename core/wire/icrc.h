/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// RoCEv2 invariant CRC (ICRC): CRC-32 (the zlib/gzip polynomial and convention)
// over 8 bytes of 0xFF (stand-in for the IB LRH), then the IP header, UDP header,
// BTH, extension headers, payload and pad, with the variant fields set to all
// ones: IPv4 TOS, TTL, header checksum; IPv6 traffic class, flow label, hop
// limit; UDP checksum; BTH byte 4 (FECN/BECN/reserved). The ICRC travels in the
// last 4 bytes of the UDP payload, least significant byte first.
//
// No packet copy: only the (small) headers are copied and masked on the stack;
// the payload is fed to ISA-L's crc32_gzip_refl in place.
#pragma once

#include <cstdint>

namespace burst::wire {

constexpr uint32_t kIcrcBytes = 4;

// l3 points at the IP header; l3_len covers the IP header through the end of
// payload + pad (the ICRC itself excluded). IPv4 honours the IHL (options are
// covered). Safe for any l3_len: the masked header part is clamped to l3_len.
uint32_t icrc_compute(const uint8_t* l3, uint32_t l3_len, bool ipv6);

// l3_len_incl_icrc covers the IP header through the ICRC. False when the ICRC
// does not match or the length cannot hold one.
bool icrc_verify(const uint8_t* l3, uint32_t l3_len_incl_icrc, bool ipv6);

// The ICRC as stored on the wire (little-endian) at p.
inline uint32_t icrc_load(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
inline void icrc_store(uint8_t* p, uint32_t crc) {
  p[0] = static_cast<uint8_t>(crc);
  p[1] = static_cast<uint8_t>(crc >> 8);
  p[2] = static_cast<uint8_t>(crc >> 16);
  p[3] = static_cast<uint8_t>(crc >> 24);
}

}  // namespace burst::wire
