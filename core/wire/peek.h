/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Cheap look at a frame's destination QPN, without validating the frame: used
// by a worker to decide which worker owns a packet before handing it over. The
// owner runs the full parse_frame (bounds, lengths, ICRC) on it, so a frame
// that peeks wrongly is still dropped and counted there.
#pragma once

#include <cstdint>

#include "core/wire/eth.h"
#include "core/wire/ipv4.h"
#include "core/wire/udp.h"

namespace burst::wire {

// Returns true and sets *qpn for an Ethernet (+ one 802.1Q tag) / IPv4 or IPv6
// / UDP 4791 frame long enough to hold a BTH; false otherwise.
inline bool peek_dest_qpn(const uint8_t* f, uint32_t len, uint32_t* qpn) {
  uint32_t off = 12;
  if (len < 14) return false;
  uint16_t type = static_cast<uint16_t>((f[off] << 8) | f[off + 1]);
  off += 2;
  if (type == kEtherTypeVlan) {
    if (len < 18) return false;
    type = static_cast<uint16_t>((f[off + 2] << 8) | f[off + 3]);
    off += 4;
  }
  uint32_t udp;
  if (type == kEtherTypeIpv4) {
    if (len < off + 20 || f[off + 9] != kIpProtoUdp) return false;
    udp = off + (f[off] & 0x0Fu) * 4;
  } else if (type == kEtherTypeIpv6) {
    if (len < off + 40 || f[off + 6] != kIpProtoUdp) return false;
    udp = off + 40;
  } else {
    return false;
  }
  if (len < udp + 8 + 12) return false;
  if (((f[udp + 2] << 8) | f[udp + 3]) != kRoceV2Port) return false;
  const uint8_t* bth = f + udp + 8;
  *qpn = (uint32_t{bth[5]} << 16) | (uint32_t{bth[6]} << 8) | bth[7];
  return true;
}

}  // namespace burst::wire
