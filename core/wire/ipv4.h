/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IPv4 header (the fixed 20 bytes; options, if any, follow and are covered by ihl()).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/wire/be.h"

namespace burst::wire {

constexpr uint8_t kIpProtoUdp = 17;
constexpr uint16_t kIpv4FlagDf = 0x4000;
constexpr uint16_t kIpv4FlagMf = 0x2000;
constexpr uint16_t kIpv4FragOffsetMask = 0x1FFF;

class Ipv4Hdr {
 public:
  uint8_t version() const { return ver_ihl_ >> 4; }
  uint8_t ihl() const { return ver_ihl_ & 0x0F; }  // header length in 32-bit words
  uint32_t header_bytes() const { return uint32_t{ihl()} * 4; }
  uint8_t tos() const { return tos_; }
  uint8_t dscp() const { return tos_ >> 2; }
  uint8_t ecn() const { return tos_ & 0x3; }
  uint16_t total_len() const { return total_len_.get(); }
  uint16_t id() const { return id_.get(); }
  uint16_t frag() const { return frag_.get(); }  // flags (3 bits) + fragment offset (13 bits)
  bool df() const { return (frag() & kIpv4FlagDf) != 0; }
  bool mf() const { return (frag() & kIpv4FlagMf) != 0; }
  uint16_t frag_offset() const { return frag() & kIpv4FragOffsetMask; }  // in 8-byte units
  bool is_fragment() const { return (frag() & (kIpv4FlagMf | kIpv4FragOffsetMask)) != 0; }
  uint8_t ttl() const { return ttl_; }
  uint8_t protocol() const { return protocol_; }
  uint16_t checksum() const { return checksum_.get(); }
  uint32_t saddr() const { return saddr_.get(); }  // host order
  uint32_t daddr() const { return daddr_.get(); }
  const uint8_t* saddr_bytes() const { return saddr_.raw; }
  const uint8_t* daddr_bytes() const { return daddr_.raw; }

  void set_version_ihl(uint8_t version, uint8_t ihl) {
    ver_ihl_ = static_cast<uint8_t>((version << 4) | (ihl & 0x0F));
  }
  void set_tos(uint8_t v) { tos_ = v; }
  void set_total_len(uint16_t v) { total_len_.set(v); }
  void set_id(uint16_t v) { id_.set(v); }
  void set_frag(uint16_t v) { frag_.set(v); }
  void set_ttl(uint8_t v) { ttl_ = v; }
  void set_protocol(uint8_t v) { protocol_ = v; }
  void set_checksum(uint16_t v) { checksum_.set(v); }
  void set_saddr(uint32_t v) { saddr_.set(v); }
  void set_daddr(uint32_t v) { daddr_.set(v); }

 private:
  uint8_t ver_ihl_;
  uint8_t tos_;
  Be16 total_len_;
  Be16 id_;
  Be16 frag_;
  uint8_t ttl_;
  uint8_t protocol_;
  Be16 checksum_;
  Be32 saddr_;
  Be32 daddr_;
};

static_assert(sizeof(Ipv4Hdr) == 20 && alignof(Ipv4Hdr) == 1 && std::is_standard_layout_v<Ipv4Hdr>);

// RFC 1071 Internet checksum of len bytes at hdr, to store as-is in the checksum
// field (which must be zero while computing). Over a header that already holds a
// valid checksum the result is 0.
uint16_t ipv4_checksum(const uint8_t* hdr, uint32_t len);

}  // namespace burst::wire
