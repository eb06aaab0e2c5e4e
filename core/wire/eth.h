/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Ethernet II header and one 802.1Q tag.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/wire/be.h"

namespace burst::wire {

constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr uint16_t kEtherTypeVlan = 0x8100;

using MacAddr = std::array<uint8_t, 6>;

class EthHdr {
 public:
  MacAddr dmac() const { return to_mac(dmac_); }
  MacAddr smac() const { return to_mac(smac_); }
  uint16_t ethertype() const { return ethertype_.get(); }
  void set_dmac(const MacAddr& m) { std::memcpy(dmac_, m.data(), 6); }
  void set_smac(const MacAddr& m) { std::memcpy(smac_, m.data(), 6); }
  void set_ethertype(uint16_t t) { ethertype_.set(t); }

 private:
  static MacAddr to_mac(const uint8_t* p) {
    MacAddr m;
    std::memcpy(m.data(), p, 6);
    return m;
  }
  uint8_t dmac_[6];
  uint8_t smac_[6];
  Be16 ethertype_;
};

// The 4 bytes that follow the source MAC in a tagged frame: TPID 0x8100 is in
// EthHdr::ethertype(), this holds the TCI and the inner EtherType.
class VlanHdr {
 public:
  uint16_t tci() const { return tci_.get(); }
  uint16_t vid() const { return tci_.get() & 0x0FFF; }
  uint8_t pcp() const { return static_cast<uint8_t>(tci_.get() >> 13); }
  uint16_t ethertype() const { return ethertype_.get(); }
  void set_tci(uint16_t tci) { tci_.set(tci); }
  void set_ethertype(uint16_t t) { ethertype_.set(t); }

 private:
  Be16 tci_;
  Be16 ethertype_;
};

static_assert(sizeof(EthHdr) == 14 && alignof(EthHdr) == 1 && std::is_standard_layout_v<EthHdr>);
static_assert(sizeof(VlanHdr) == 4 && alignof(VlanHdr) == 1 && std::is_standard_layout_v<VlanHdr>);

}  // namespace burst::wire
