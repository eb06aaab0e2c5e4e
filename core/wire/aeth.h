/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// ACK Extended Transport Header (IBA 9.3.5): syndrome + 24-bit MSN.
// Syndrome byte: bit 7 reserved (0), bits 6:5 type, bits 4:0 value:
//   type 00 ACK      value = credit count (31 = "invalid credit", what rxe always sends)
//   type 01 RNR NAK  value = RNR timer code
//   type 10 reserved
//   type 11 NAK      value = NakCode
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/wire/be.h"

namespace burst::wire {

enum class AethType : uint8_t { kAck = 0, kRnrNak = 1, kReserved = 2, kNak = 3 };

enum class NakCode : uint8_t {
  kPsnSeqError = 0,
  kInvalidRequest = 1,
  kRemoteAccessError = 2,
  kRemoteOpError = 3,
  kInvalidRdRequest = 4,
};

constexpr uint8_t kAethInvalidCredit = 0x1F;

// Value type over the syndrome byte.
class AethSyndrome {
 public:
  constexpr explicit AethSyndrome(uint8_t raw) : raw_(raw) {}
  static constexpr AethSyndrome ack(uint8_t credit = kAethInvalidCredit) {
    return make(AethType::kAck, credit);
  }
  static constexpr AethSyndrome rnr_nak(uint8_t timer) { return make(AethType::kRnrNak, timer); }
  static constexpr AethSyndrome nak(NakCode code) {
    return make(AethType::kNak, static_cast<uint8_t>(code));
  }

  constexpr uint8_t raw() const { return raw_; }
  constexpr AethType type() const { return static_cast<AethType>((raw_ >> 5) & 0x3); }
  constexpr uint8_t value() const { return raw_ & 0x1F; }  // credit, RNR timer or NAK code
  constexpr bool is_ack() const { return type() == AethType::kAck; }
  constexpr bool is_rnr_nak() const { return type() == AethType::kRnrNak; }
  constexpr bool is_nak() const { return type() == AethType::kNak; }
  constexpr uint8_t credit() const { return value(); }
  constexpr uint8_t rnr_timer() const { return value(); }
  constexpr NakCode nak_code() const { return static_cast<NakCode>(value()); }
  constexpr bool operator==(const AethSyndrome&) const = default;

 private:
  static constexpr AethSyndrome make(AethType t, uint8_t v) {
    return AethSyndrome(static_cast<uint8_t>((static_cast<uint8_t>(t) << 5) | (v & 0x1F)));
  }
  uint8_t raw_;
};

static_assert(AethSyndrome::ack().raw() == 0x1F);
static_assert(AethSyndrome::rnr_nak(26).raw() == 0x3A);
static_assert(AethSyndrome::nak(NakCode::kRemoteOpError).raw() == 0x63);

class Aeth {
 public:
  uint8_t syndrome() const { return syndrome_; }
  AethSyndrome syn() const { return AethSyndrome(syndrome_); }
  uint32_t msn() const { return msn_.get(); }
  void set_syndrome(uint8_t v) { syndrome_ = v; }
  void set_syndrome(AethSyndrome s) { syndrome_ = s.raw(); }
  void set_msn(uint32_t v) { msn_.set(v); }  // low 24 bits

 private:
  uint8_t syndrome_;
  Be24 msn_;
};

static_assert(sizeof(Aeth) == 4 && alignof(Aeth) == 1 && std::is_standard_layout_v<Aeth>);

}  // namespace burst::wire
