/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The loopback port (burstd's `backend = loopback`): one in-process
// LoopbackWire per worker whose far end sends every frame straight back, so the
// port receives what it transmits, like a NIC port in loopback mode. QPs of
// one burstd can be connected to each other (destination GID/MAC = the port's
// own); a frame for a QP of another worker reaches it through the handoff
// rings like any frame received on the wrong queue. Needs no privilege and no
// netdev.
//
// Threading: owned by one worker thread (the wire is single-threaded).
#pragma once

#include <cstdint>

#include "datapath/datapath.h"
#include "datapath/loopback/loopback.h"

namespace burst::port {

class ReflectPort {
 public:
  static constexpr uint32_t kMaxBurst = datapath::LoopbackPort::kMaxBurst;

  explicit ReflectPort(uint32_t frame_bytes) : wire_(frame_bytes) {}

  uint32_t rx_burst(datapath::Frame* frames, uint32_t n) {
    reflect();
    return near().rx_burst(frames, n);
  }
  void rx_release(datapath::Frame* frames, uint32_t n) { near().rx_release(frames, n); }
  uint32_t tx_alloc(datapath::Frame* frames, uint32_t n) { return near().tx_alloc(frames, n); }
  uint32_t tx_burst(datapath::Frame* frames, uint32_t n) { return near().tx_burst(frames, n); }
  void tx_free(datapath::Frame* frames, uint32_t n) { near().tx_free(frames, n); }
  void flush() {}
  void refill() {}
  uint32_t mtu() const { return wire_.frame_bytes(); }
  uint32_t headroom() const { return 0; }
  uint32_t queue_count() const { return 1; }
  bool zero_copy() const { return false; }

  uint64_t reflected() const { return reflected_; }
  uint64_t reflect_drops() const { return reflect_drops_; }  // no buffer or queue space
  const datapath::LoopbackCounters& counters() { return near().counters(); }

 private:
  datapath::LoopbackPort& near() { return wire_.port(0); }
  datapath::LoopbackPort& far() { return wire_.port(1); }
  // The far end: every frame it received goes back (copied into a new buffer).
  void reflect();

  datapath::LoopbackWire wire_;
  uint64_t reflected_ = 0;
  uint64_t reflect_drops_ = 0;
};

static_assert(datapath::Backend<ReflectPort>);

}  // namespace burst::port
