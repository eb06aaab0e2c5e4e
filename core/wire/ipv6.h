/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IPv6 fixed header (RoCEv2 carries no extension headers: next header is UDP).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/wire/be.h"

namespace burst::wire {

class Ipv6Hdr {
 public:
  uint8_t version() const { return static_cast<uint8_t>(vtf_.get() >> 28); }
  uint8_t traffic_class() const { return static_cast<uint8_t>(vtf_.get() >> 20); }
  uint8_t ecn() const { return traffic_class() & 0x3; }
  uint32_t flow_label() const { return vtf_.get() & 0xFFFFF; }
  uint16_t payload_len() const { return payload_len_.get(); }
  uint8_t next_header() const { return next_header_; }
  uint8_t hop_limit() const { return hop_limit_; }
  const uint8_t* saddr() const { return saddr_; }  // 16 bytes
  const uint8_t* daddr() const { return daddr_; }

  // Sets version, traffic class and flow label (low 20 bits) together.
  void set_vtf(uint8_t version, uint8_t traffic_class, uint32_t flow_label) {
    vtf_.set((uint32_t{version} << 28) | (uint32_t{traffic_class} << 20) | (flow_label & 0xFFFFF));
  }
  void set_payload_len(uint16_t v) { payload_len_.set(v); }
  void set_next_header(uint8_t v) { next_header_ = v; }
  void set_hop_limit(uint8_t v) { hop_limit_ = v; }
  void set_saddr(const uint8_t* a) { std::memcpy(saddr_, a, 16); }
  void set_daddr(const uint8_t* a) { std::memcpy(daddr_, a, 16); }

 private:
  Be32 vtf_;
  Be16 payload_len_;
  uint8_t next_header_;
  uint8_t hop_limit_;
  uint8_t saddr_[16];
  uint8_t daddr_[16];
};

static_assert(sizeof(Ipv6Hdr) == 40 && alignof(Ipv6Hdr) == 1 && std::is_standard_layout_v<Ipv6Hdr>);

}  // namespace burst::wire
