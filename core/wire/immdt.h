/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Immediate Data Extended Transport Header (IBA 9.3.7).
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/wire/be.h"

namespace burst::wire {

class ImmDt {
 public:
  // Host-order value of the 4 wire bytes. libibverbs' imm_data is the same
  // bytes kept in network order: ibv imm_data == htonl(imm()).
  uint32_t imm() const { return imm_.get(); }
  void set_imm(uint32_t v) { imm_.set(v); }

 private:
  Be32 imm_;
};

static_assert(sizeof(ImmDt) == 4 && alignof(ImmDt) == 1 && std::is_standard_layout_v<ImmDt>);

}  // namespace burst::wire
