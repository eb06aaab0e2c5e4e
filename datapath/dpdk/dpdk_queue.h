/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// DpdkQueue: one RX/TX queue pair of a DpdkPort, owned by one worker; the DPDK
// implementation of the datapath Backend concept (datapath/datapath.h). Its
// header carries no DPDK include, so the daemon and tools compile without
// DPDK's flags; the calls below are direct (not virtual) calls into
// dpdk_queue.cc, which inlines rte_eth_rx_burst / rte_eth_tx_burst.
//
// Receive: rte_eth_rx_burst; a single-segment mbuf is handed out in place
// (Frame::handle is the mbuf); a multi-segment one (memif chains 2 KB buffers,
// scattered RX of jumbo frames) is linearised into a per-queue scratch buffer
// for the length of the burst. ARP frames go to the port's ArpAgent when it has
// one. rx_release frees the burst's mbufs in bulk.
//
// Transmit: tx_alloc takes mbufs from the queue's TX pool (data room sized for
// a whole frame); tx_burst sets their lengths and calls rte_eth_tx_burst: the
// frames the PMD does not take stay with the caller (the Backend contract), a
// frame with a bad length is freed and counted. The transport gathers payload
// into the mbuf (one copy, like AF_XDP copy mode); external-buffer transmit
// straight from registered memory is not implemented yet.
//
// Threading: the Backend members run on the owning worker thread only;
// on_thread_start() registers that thread with the EAL (per-lcore mempool
// caches). Counters are single-writer (the worker).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "datapath/datapath.h"

struct rte_mbuf;
struct rte_mempool;

namespace burst::datapath {

class ArpAgent;
class DpdkPort;

struct DpdkQueueCounters {
  uint64_t rx_frames = 0;
  uint64_t rx_bytes = 0;
  uint64_t rx_multiseg = 0;   // frames linearised from several segments
  uint64_t rx_oversize = 0;   // multi-segment frames larger than a scratch buffer, dropped
  uint64_t rx_arp = 0;        // ARP frames given to the agent
  uint64_t tx_frames = 0;
  uint64_t tx_bytes = 0;
  uint64_t tx_full = 0;       // tx_burst() calls the PMD did not take whole
  uint64_t tx_invalid = 0;    // frames with a bad length, freed
  uint64_t tx_alloc_fail = 0; // tx_alloc() calls that got fewer mbufs than asked
};

class DpdkQueue {
 public:
  static constexpr uint32_t kMaxBurst = 32;

  ~DpdkQueue();
  DpdkQueue(const DpdkQueue&) = delete;
  DpdkQueue& operator=(const DpdkQueue&) = delete;

  // ---- Backend contract (owning worker thread only) ----
  uint32_t rx_burst(Frame* frames, uint32_t n);
  void rx_release(Frame* frames, uint32_t n);
  uint32_t tx_alloc(Frame* frames, uint32_t n);
  uint32_t tx_burst(Frame* frames, uint32_t n);
  void tx_free(Frame* frames, uint32_t n);
  // Sends frames the control plane queued (ARP): one relaxed load when none.
  void flush() {
    if (control_pending_.load(std::memory_order_acquire)) flush_control();
  }
  void refill() {}
  uint32_t mtu() const { return frame_max_; }
  uint32_t headroom() const { return headroom_; }
  uint32_t queue_count() const { return queue_count_; }
  bool zero_copy() const { return false; }

  // Worker thread, before its first burst.
  void on_thread_start();

  uint32_t queue_id() const { return queue_id_; }
  // Any thread: queues one frame (an mbuf of the port's control pool) for the
  // owner's next flush(). False (and the mbuf freed) when 64 are pending.
  bool queue_control(rte_mbuf* m);
  const DpdkQueueCounters& counters() const { return counters_; }

 private:
  friend class DpdkPort;
  DpdkQueue() = default;
  void flush_control();

  uint16_t port_id_ = 0;
  uint16_t queue_id_ = 0;
  uint32_t queue_count_ = 1;
  uint32_t frame_max_ = 0;  // largest L2 frame (no FCS)
  uint32_t headroom_ = 0;
  rte_mempool* tx_pool_ = nullptr;
  ArpAgent* arp_ = nullptr;
  std::unique_ptr<uint8_t[]> scratch_;  // kMaxBurst buffers of frame_max_ bytes
  DpdkQueueCounters counters_;
  // Control frames (ARP) from other threads, sent by the owner in flush():
  // a port may have no spare TX queue (memif rings pair up with the peer's,
  // net_af_xdp on a veth has one queue).
  std::atomic<bool> control_pending_{false};
  std::mutex control_mu_;
  std::vector<rte_mbuf*> control_;
};

static_assert(Backend<DpdkQueue>);

}  // namespace burst::datapath
