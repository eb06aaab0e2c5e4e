// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "core/cq.h"

#include <utility>

namespace burst::core {

Cq::Cq(uint32_t depth) : depth_(depth) {
  uint32_t cap = 1;
  while (cap < depth) cap <<= 1;
  ring_.resize(cap);
  mask_ = cap - 1;
}

bool Cq::push(const Wc& wc) {
  if (error_ || tail_ - head_ >= depth_) {
    error_ = true;
    ++dropped_;
    return false;
  }
  ring_[tail_ & mask_] = wc;
  ++tail_;
  return true;
}

void Cq::resize(uint32_t depth) {
  if (depth < size()) depth = size();
  Cq next(depth);
  while (head_ != tail_) next.ring_[next.tail_++ & next.mask_] = ring_[head_++ & mask_];
  next.dropped_ = dropped_;
  next.error_ = error_;
  *this = std::move(next);
}

int Cq::poll(Wc* out, int max) {
  int n = 0;
  while (n < max && head_ != tail_) {
    out[n++] = ring_[head_ & mask_];
    ++head_;
  }
  return n;
}

}  // namespace burst::core
