/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Datagram Extended Transport Header (IBA 9.3.2): Q_Key, reserved byte, source QP.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/wire/be.h"

namespace burst::wire {

constexpr uint32_t kQp1Qkey = 0x80010000;  // well-known Q_Key of QP1 (GSI)

class Deth {
 public:
  uint32_t qkey() const { return qkey_.get(); }
  uint32_t src_qpn() const { return src_qpn_.get(); }
  uint8_t reserved() const { return resv_; }  // sent as 0
  void set_qkey(uint32_t v) { qkey_.set(v); }
  void set_src_qpn(uint32_t v) { src_qpn_.set(v); }  // low 24 bits

 private:
  Be32 qkey_;
  uint8_t resv_;
  Be24 src_qpn_;
};

static_assert(sizeof(Deth) == 8 && alignof(Deth) == 1 && std::is_standard_layout_v<Deth>);

}  // namespace burst::wire
