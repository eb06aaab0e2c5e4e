/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// RDMA Extended Transport Header (IBA 9.3.3): virtual address, R_Key, DMA length.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/wire/be.h"

namespace burst::wire {

class Reth {
 public:
  uint64_t va() const { return va_.get(); }
  uint32_t rkey() const { return rkey_.get(); }
  uint32_t dma_len() const { return dma_len_.get(); }
  void set_va(uint64_t v) { va_.set(v); }
  void set_rkey(uint32_t v) { rkey_.set(v); }
  void set_dma_len(uint32_t v) { dma_len_.set(v); }

 private:
  Be64 va_;
  Be32 rkey_;
  Be32 dma_len_;
};

static_assert(sizeof(Reth) == 16 && alignof(Reth) == 1 && std::is_standard_layout_v<Reth>);

}  // namespace burst::wire
