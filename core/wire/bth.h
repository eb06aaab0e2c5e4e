/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Base Transport Header (IBA 9.2), 12 bytes:
//   byte 0     opcode
//   byte 1     SE(7) M(6) PadCnt(5:4) TVer(3:0)
//   bytes 2-3  P_Key
//   byte 4     FECN(7) BECN(6) reserved(5:0)  (RoCEv2: resv8a, masked in the ICRC)
//   bytes 5-7  destination QP (24 bits)
//   byte 8     AckReq(7) reserved(6:0)
//   bytes 9-11 PSN (24 bits)
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/wire/be.h"
#include "core/wire/psn.h"

namespace burst::wire {

constexpr uint16_t kDefaultPkey = 0xFFFF;
constexpr uint32_t kQpnMask = 0xFFFFFF;
constexpr uint32_t kMulticastQpn = 0xFFFFFF;  // IBA 9.8.1: DQPN of a UD multicast datagram

class Bth {
 public:
  uint8_t opcode() const { return opcode_; }
  bool se() const { return (flags_ & kSe) != 0; }
  bool mig_req() const { return (flags_ & kMig) != 0; }
  uint8_t pad_count() const { return (flags_ >> 4) & 0x3; }
  uint8_t tver() const { return flags_ & 0x0F; }
  uint16_t pkey() const { return pkey_.get(); }
  bool fecn() const { return (resv8a_ & kFecn) != 0; }
  bool becn() const { return (resv8a_ & kBecn) != 0; }
  // The 24-bit fields are read as the low bits of a 32-bit load that starts one
  // byte earlier (inside the BTH): one load instead of three.
  uint32_t dest_qpn() const { return load_be32(bytes() + 4) & kQpnMask; }
  bool ack_req() const { return (ack_ & kAckReq) != 0; }
  Psn psn() const { return Psn(load_be32(bytes() + 8)); }

  void set_opcode(uint8_t v) { opcode_ = v; }
  void set_se(bool v) { set_bit(flags_, kSe, v); }
  void set_mig_req(bool v) { set_bit(flags_, kMig, v); }
  void set_pad_count(uint8_t v) {
    flags_ = static_cast<uint8_t>((flags_ & ~0x30) | ((v & 0x3) << 4));
  }
  void set_tver(uint8_t v) { flags_ = static_cast<uint8_t>((flags_ & 0xF0) | (v & 0x0F)); }
  void set_pkey(uint16_t v) { pkey_.set(v); }
  void set_fecn(bool v) { set_bit(resv8a_, kFecn, v); }
  void set_becn(bool v) { set_bit(resv8a_, kBecn, v); }
  void set_dest_qpn(uint32_t v) { dest_qpn_.set(v); }  // low 24 bits
  void set_ack_req(bool v) { set_bit(ack_, kAckReq, v); }
  void set_psn(Psn v) { psn_.set(v.value()); }

 private:
  static constexpr uint8_t kSe = 0x80;
  static constexpr uint8_t kMig = 0x40;
  static constexpr uint8_t kFecn = 0x80;
  static constexpr uint8_t kBecn = 0x40;
  static constexpr uint8_t kAckReq = 0x80;
  const uint8_t* bytes() const { return reinterpret_cast<const uint8_t*>(this); }
  static void set_bit(uint8_t& byte, uint8_t bit, bool v) {
    byte = static_cast<uint8_t>(v ? (byte | bit) : (byte & ~bit));
  }

  uint8_t opcode_;
  uint8_t flags_;
  Be16 pkey_;
  uint8_t resv8a_;
  Be24 dest_qpn_;
  uint8_t ack_;
  Be24 psn_;
};

static_assert(sizeof(Bth) == 12 && alignof(Bth) == 1 && std::is_standard_layout_v<Bth>);
static_assert(kQpnMask == Be24::kMask && kPsnMask == Be24::kMask);
static_assert(std::is_trivially_copyable_v<Bth>);
constexpr uint32_t kBthResv8aOffset = 4;  // the FECN/BECN byte, masked in the ICRC

}  // namespace burst::wire
