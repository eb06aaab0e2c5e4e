// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "core/wire/ipv4.h"

namespace burst::wire {

uint16_t ipv4_checksum(const uint8_t* hdr, uint32_t len) {
  // One's complement sum in 32-bit words: 2^16 = 1 (mod 2^16 - 1), so the
  // weight of a 16-bit word does not matter once the sum is folded.
  uint64_t sum = 0;
  uint32_t i = 0;
  for (; i + 4 <= len; i += 4) sum += load_be32(hdr + i);
  if (i + 2 <= len) {
    sum += load_be16(hdr + i);
    i += 2;
  }
  if (i < len) sum += uint32_t{hdr[i]} << 8;
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

}  // namespace burst::wire
