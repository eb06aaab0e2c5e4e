/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Invalidate Extended Transport Header (IBA 9.3.8): the R_Key to invalidate.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/wire/be.h"

namespace burst::wire {

class Ieth {
 public:
  uint32_t rkey() const { return rkey_.get(); }
  void set_rkey(uint32_t v) { rkey_.set(v); }

 private:
  Be32 rkey_;
};

static_assert(sizeof(Ieth) == 4 && alignof(Ieth) == 1 && std::is_standard_layout_v<Ieth>);

}  // namespace burst::wire
