// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "datapath/loopback/loopback.h"

#include <cstring>

namespace burst::datapath {

LoopbackWire::LoopbackWire(uint32_t frame_bytes, uint32_t frames, uint32_t queue_limit)
    : frame_bytes_(frame_bytes),
      queue_limit_(queue_limit),
      storage_(new uint8_t[static_cast<size_t>(frame_bytes) * frames]),
      lens_(frames, 0) {
  free_.reserve(frames);
  for (uint32_t i = frames; i > 0; --i) free_.push_back(i - 1);
}

bool LoopbackWire::alloc(uint32_t* idx) {
  if (free_.empty()) return false;
  *idx = free_.back();
  free_.pop_back();
  return true;
}

size_t LoopbackWire::in_flight(int side) const {
  return dir_[side].queue.size() + dir_[side].held.size();
}

#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
void LoopbackWire::set_faults(int side, const LoopbackFaults& f) {
  Direction& d = dir_[side ^ 1];
  d.faults = f;
  d.faulty = f.drop > 0 || f.duplicate > 0 || f.reorder > 0 || f.corrupt > 0;
  d.rng.seed(f.seed);
}

void LoopbackWire::age_held(Direction& d) {
  // Release held-back frames whose age reached the reorder depth.
  for (size_t i = 0; i < d.held.size();) {
    if (++d.held_age[i] >= d.faults.reorder_depth) {
      d.queue.push_back(d.held[i]);
      d.held.erase(d.held.begin() + static_cast<std::ptrdiff_t>(i));
      d.held_age.erase(d.held_age.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

void LoopbackWire::transmit_faulty(int from, Direction& d, uint32_t idx, uint32_t len) {
  LoopbackCounters& c = port(from).counters_;
  std::uniform_real_distribution<double> u(0.0, 1.0);
  if (u(d.rng) < d.faults.drop) {
    ++c.dropped;
    release(idx);
    return;
  }
  if (u(d.rng) < d.faults.corrupt && len > 0) {
    std::uniform_int_distribution<uint32_t> pos(0, len - 1);
    buf(idx)[pos(d.rng)] ^= static_cast<uint8_t>(1u << (d.rng() & 7));
    ++c.corrupted;
  }
  if (u(d.rng) < d.faults.duplicate) {
    uint32_t dup;
    if (alloc(&dup)) {
      std::memcpy(buf(dup), buf(idx), len);
      lens_[dup] = len;
      d.queue.push_back(dup);
      ++c.duplicated;
    }
  }
  if (u(d.rng) < d.faults.reorder && d.faults.reorder_depth > 0) {
    d.held.push_back(idx);
    d.held_age.push_back(0);
    ++c.reordered;
    return;
  }
  d.queue.push_back(idx);
  age_held(d);
}
#endif

void LoopbackWire::transmit(int from, uint32_t idx, uint32_t len) {
  Direction& d = dir_[from ^ 1];
  lens_[idx] = len;
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  if (d.faulty) {
    transmit_faulty(from, d, idx, len);
    return;
  }
#endif
  d.queue.push_back(idx);
}

uint32_t LoopbackPort::rx_burst(Frame* frames, uint32_t n) {
  auto& d = wire_->dir_[side_];
  if (d.queue.empty() && !d.held.empty()) {
    // Nothing else is coming: let held-back frames through so that a quiet
    // wire never keeps a frame forever.
    d.queue.push_back(d.held.front());
    d.held.pop_front();
    d.held_age.erase(d.held_age.begin());
  }
  uint32_t got = 0;
  while (got < n && !d.queue.empty()) {
    uint32_t idx = d.queue.front();
    d.queue.pop_front();
    frames[got].data = wire_->buf(idx);
    frames[got].len = wire_->lens_[idx];
    frames[got].cap = wire_->frame_bytes_;
    frames[got].handle = idx;
    ++got;
  }
  counters_.rx_frames += got;
  return got;
}

void LoopbackPort::rx_release(Frame* frames, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) wire_->release(static_cast<uint32_t>(frames[i].handle));
}

uint32_t LoopbackPort::tx_alloc(Frame* frames, uint32_t n) {
  uint32_t got = 0;
  uint32_t idx;
  while (got < n && wire_->alloc(&idx)) {
    frames[got].data = wire_->buf(idx);
    frames[got].len = 0;
    frames[got].cap = wire_->frame_bytes_;
    frames[got].handle = idx;
    ++got;
  }
  return got;
}

uint32_t LoopbackPort::tx_burst(Frame* frames, uint32_t n) {
  auto& d = wire_->dir_[side_ ^ 1];
  uint32_t sent = 0;
  for (; sent < n; ++sent) {
    if (d.queue.size() + d.held.size() >= wire_->queue_limit_) {
      ++counters_.tx_full;
      break;
    }
    wire_->transmit(side_, static_cast<uint32_t>(frames[sent].handle), frames[sent].len);
  }
  counters_.tx_frames += sent;
  return sent;
}

void LoopbackPort::tx_free(Frame* frames, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) wire_->release(static_cast<uint32_t>(frames[i].handle));
}

void LoopbackPort::flush() {}

uint32_t LoopbackPort::mtu() const { return wire_->frame_bytes_; }

}  // namespace burst::datapath
