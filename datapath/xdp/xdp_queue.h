/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// XdpQueue: one AF_XDP socket on one (netdev, queue), owned by one worker; the
// AF_XDP implementation of the datapath Backend concept (datapath/datapath.h).
//
// UMEM (per queue, on 2 MB hugepages when available):
//
//   0                     rx_frames * chunk         + tx_slots * slot_bytes
//   | rx chunks (fill ring) | tx slots: slot_chunks adjacent chunks each |
//
// Receive: a frame that fits one chunk is handed out in place (zero copy from
// the UMEM); rx_release() puts its chunk on a free stack and refill() moves
// free chunks to the fill ring in bulk. A multi-buffer frame (descriptors with
// XDP_PKT_CONTD, only with XDP_USE_SG) is reassembled into a contiguous scratch
// buffer (one memcpy, ~40 ns per 4 KB) and its chunks are recycled at once, so
// the caller always sees one contiguous frame. When no scratch buffer is free
// the frame stays in the RX ring until rx_release() returns one.
//
// Transmit: a tx slot is `slot_chunks` adjacent chunks, so a frame larger than
// a chunk is contiguous for the caller; tx_burst() splits it at chunk
// boundaries into descriptors chained with XDP_PKT_CONTD. A slot returns to the
// free stack when the completion ring has returned all of its descriptors.
// flush() kicks the kernel only when it asks (XDP_USE_NEED_WAKEUP).
//
// Threading: every member below "Backend contract" must run on the owning
// worker thread. Open() and the destructor run on the control thread while the
// worker is not polling. Destroy all XdpQueues of an XdpPort before the port.
#pragma once

#include <linux/if_xdp.h>
#include <xdp/xsk.h>

#include <cstdint>
#include <memory>

#include "datapath/datapath.h"
#include "datapath/xdp/xdp_config.h"
#include "datapath/xdp/xdp_sys.h"

namespace burst::datapath {

class XdpPort;

// Single-writer counters (the worker), updated once per burst.
struct XdpQueueCounters {
  uint64_t rx_frames = 0;
  uint64_t rx_bytes = 0;
  uint64_t rx_multibuf = 0;       // frames reassembled from several descriptors
  uint64_t rx_scratch_waits = 0;  // bursts cut short: no free reassembly buffer
  uint64_t rx_oversize = 0;       // multi-buffer frames larger than a scratch buffer, dropped
  uint64_t rx_bad_desc = 0;       // descriptors outside the rx area, dropped
  uint64_t fill_submitted = 0;    // chunks given to the fill ring
  uint64_t fill_wakeups = 0;      // recvfrom() because the fill ring asked for it
  uint64_t tx_frames = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_descs = 0;
  uint64_t tx_ring_full = 0;    // tx_burst() calls that could not take every frame
  uint64_t tx_invalid = 0;      // frames not from tx_alloc() or with a bad length, freed
  uint64_t tx_kicks = 0;        // sendto() wakeups
  uint64_t tx_kick_busy = 0;    // wakeups answered EAGAIN/EBUSY/ENOBUFS (retried later)
  uint64_t tx_kick_errors = 0;  // other wakeup errors
  uint64_t tx_completed = 0;    // descriptors returned by the completion ring
};

class XdpQueue {
 public:
  static constexpr uint32_t kMaxBurst = 32;

  // Creates the UMEM and socket for `queue_id` of `port`'s netdev and registers
  // the socket in the port's XSKMAP. Zero-copy is tried first unless disabled.
  static std::unique_ptr<XdpQueue> Open(XdpPort& port, uint32_t queue_id, XdpError* error);
  ~XdpQueue();
  XdpQueue(const XdpQueue&) = delete;
  XdpQueue& operator=(const XdpQueue&) = delete;

  // ---- Backend contract (owning worker thread only) ----
  uint32_t rx_burst(Frame* frames, uint32_t n);
  void rx_release(Frame* frames, uint32_t n);
  uint32_t tx_alloc(Frame* frames, uint32_t n);
  uint32_t tx_burst(Frame* frames, uint32_t n);
  void tx_free(Frame* frames, uint32_t n);
  void flush();
  void refill();
  uint32_t mtu() const { return mtu_; }
  uint32_t headroom() const { return headroom_; }
  uint32_t queue_count() const { return queue_count_; }
  bool zero_copy() const { return zero_copy_; }

  // ---- Introspection ----
  uint32_t queue_id() const { return queue_id_; }
  bool multi_buffer() const { return sg_; }
  bool hugepages() const { return region_.huge; }
  uint32_t tx_slots() const { return tx_slots_; }
  uint32_t tx_slots_free() const { return tx_free_n_; }
  int fd() const { return xsk_ != nullptr ? xsk_socket__fd(xsk_) : -1; }
  const XdpQueueCounters& counters() const { return counters_; }
  // Kernel socket statistics (drops for ring full, fill ring empty, bad descs...).
  bool KernelStats(xdp_statistics* out) const;
  // Owning worker: reaps the completion ring (tx_alloc() and flush() also do).
  void ReapCompletions();

 private:
  XdpQueue() = default;
  XdpError Setup(XdpPort& port, uint32_t queue_id);
  XdpError TryBind(const std::string& netdev, uint16_t bind_flags);
  void DestroySocket();
  void Kick();

  static constexpr uint64_t kScratchTag = uint64_t{1} << 63;

  // Rings (the kernel's, mapped by libxdp).
  xsk_ring_prod fill_{};
  xsk_ring_cons comp_{};
  xsk_ring_cons rx_{};
  xsk_ring_prod tx_{};
  xsk_umem* umem_ = nullptr;
  xsk_socket* xsk_ = nullptr;
  int xsks_map_fd_ = -1;  // the port's XSKMAP (not owned)

  xdp_sys::Region region_;
  uint8_t* base_ = nullptr;  // UMEM start
  uint32_t chunk_ = 4096;
  uint32_t headroom_ = 0;
  uint32_t mtu_ = 0;  // largest L2 frame
  uint32_t queue_id_ = 0;
  uint32_t queue_count_ = 1;
  bool zero_copy_ = false;
  bool sg_ = false;
  bool need_wakeup_ = true;

  // Receive side.
  uint32_t rx_frames_ = 0;  // chunks in the rx area
  uint32_t fill_size_ = 0;
  uint32_t rx_ring_size_ = 0;
  std::unique_ptr<uint64_t[]> rx_free_;  // chunk addresses owned by us, not in the fill ring
  uint32_t rx_free_n_ = 0;
  std::unique_ptr<uint8_t[]> scratch_;  // rx_scratch buffers of scratch_bytes_
  uint32_t scratch_bytes_ = 0;
  std::unique_ptr<uint32_t[]> scratch_free_;
  uint32_t scratch_free_n_ = 0;

  // Transmit side.
  uint64_t tx_base_ = 0;  // UMEM offset of the first tx slot
  uint32_t slot_chunks_ = 1;
  uint32_t slot_bytes_ = 0;
  uint32_t tx_slots_ = 0;
  uint32_t comp_size_ = 0;
  std::unique_ptr<uint32_t[]> tx_free_;  // free slot indices
  uint32_t tx_free_n_ = 0;
  std::unique_ptr<uint16_t[]> tx_pending_;  // per slot: descriptors not yet completed
  bool tx_needs_kick_ = false;              // descriptors submitted since the last full kick

  XdpQueueCounters counters_;
};

static_assert(Backend<XdpQueue>);

}  // namespace burst::datapath
