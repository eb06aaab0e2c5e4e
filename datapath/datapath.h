/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The datapath contract: what every backend (loopback, AF_XDP, DPDK) offers the
// transport. A backend object is one queue of one port, owned by one worker
// thread; the worker template (core/worker.h) is instantiated once per backend,
// so every call here is a direct, inlinable call: no virtual dispatch per packet.
//
// Ownership of frame buffers:
//   rx_burst()  hands received frames to the caller; they stay valid until the
//               caller gives them back with rx_release().
//   tx_alloc()  hands empty transmit buffers (cap bytes each) to the caller.
//   tx_burst()  takes filled buffers; it returns how many it accepted, in order.
//               The rest stay owned by the caller, who retries them later or
//               returns them with tx_free(). Nothing is dropped silently.
//   flush()     kicks the device if it needs a wakeup (AF_XDP needs_wakeup).
//   refill()    tops up receive buffers (AF_XDP fill ring) above a threshold.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace burst::datapath {

struct Frame {
  uint8_t* data = nullptr;  // first byte of the Ethernet header
  uint32_t len = 0;         // bytes of frame (rx: received; tx: filled in by caller)
  uint32_t cap = 0;         // bytes available at data (tx buffers)
  uint64_t handle = 0;      // backend cookie (UMEM address, mbuf pointer, slot index)
};

template <class B>
concept Backend = requires(B b, const B cb, Frame* frames, uint32_t n) {
  { B::kMaxBurst } -> std::convertible_to<uint32_t>;
  { b.rx_burst(frames, n) } -> std::same_as<uint32_t>;
  { b.rx_release(frames, n) } -> std::same_as<void>;
  { b.tx_alloc(frames, n) } -> std::same_as<uint32_t>;
  { b.tx_burst(frames, n) } -> std::same_as<uint32_t>;
  { b.tx_free(frames, n) } -> std::same_as<void>;
  { b.flush() } -> std::same_as<void>;
  { b.refill() } -> std::same_as<void>;
  { cb.mtu() } -> std::same_as<uint32_t>;          // largest L2 frame, bytes (no FCS)
  { cb.headroom() } -> std::same_as<uint32_t>;     // bytes reserved before data
  { cb.queue_count() } -> std::same_as<uint32_t>;  // queues of the port
  { cb.zero_copy() } -> std::same_as<bool>;
};

}  // namespace burst::datapath
