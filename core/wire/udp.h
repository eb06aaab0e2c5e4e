/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// UDP header. RoCEv2 uses destination port 4791 and sends checksum 0.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/wire/be.h"

namespace burst::wire {

constexpr uint16_t kRoceV2Port = 4791;

class UdpHdr {
 public:
  uint16_t sport() const { return sport_.get(); }
  uint16_t dport() const { return dport_.get(); }
  uint16_t len() const { return len_.get(); }  // UDP header + payload, bytes
  uint16_t checksum() const { return checksum_.get(); }
  void set_sport(uint16_t v) { sport_.set(v); }
  void set_dport(uint16_t v) { dport_.set(v); }
  void set_len(uint16_t v) { len_.set(v); }
  void set_checksum(uint16_t v) { checksum_.set(v); }

 private:
  Be16 sport_;
  Be16 dport_;
  Be16 len_;
  Be16 checksum_;
};

static_assert(sizeof(UdpHdr) == 8 && alignof(UdpHdr) == 1 && std::is_standard_layout_v<UdpHdr>);

}  // namespace burst::wire
