/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// QP1 (the GSI QP) of one port in the datapath: the MADs of the connection
// manager (IB CM over RoCEv2: UD SEND_ONLY to DQPN 1, DETH Q_Key 0x80010000 and
// source QP 1, a 256-byte MAD as payload) between the worker that owns QPN 1
// and the control thread that runs the CM. QP1 is not a verbs QP here: no
// receive WQEs, no CQ; a MAD and its path travel as one GsiMad record.
//
//   worker (QPN 1's owner: worker 0; QPNs below EngineConfig::first_qpn are its,
//   core/worker.h, so other workers hand QP1 frames over through the Handoff)
//     Engine::rx_burst -> parse + ICRC -> DQPN 1 -> opcode, Q_Key, length checks
//        -> rx ring (SPSC) -> eventfd, written at most once per rx_burst that
//           delivered MADs                                  -> control: receive()
//     control: send() -> tx ring (SPSC) -> Handoff::wake(0)
//        -> Engine::tx_build builds UD SEND_ONLY frames from QP1 (first in the
//           burst; BTH PSN per QP1, AckReq set as rxe sets it) -> backend
//
// The worker polls the tx ring once per iteration (Engine::tx_pending: one
// acquire load) and a sleeping worker 0 is woken by the sender through the
// Handoff (Handoff::add_inbound lists the tx ring, so may_sleep(0) sees it).
// Nothing per MAD allocates, locks, logs or makes a virtual call.
//
// Threading: one control thread (send, receive, counters), one worker (the
// Engine QPN 1 is attached to: Engine::attach_gsi). Counters are written by
// one side each (which one is said per field) and read by anyone, relaxed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "core/spsc_ring.h"

namespace burst::core {

inline constexpr uint32_t kGsiQpn = 1;
inline constexpr uint32_t kGsiMadBytes = 256;
inline constexpr uint32_t kGsiOwner = 0;  // the worker owning QPN 1 (core/worker.h owner_of)

// One MAD and its path. GIDs are IPv4-mapped (::ffff:a.b.c.d) for IPv4.
struct GsiMad {
  std::array<uint8_t, 16> remote_gid{};  // receive: the IP source; send: the IP destination
  std::array<uint8_t, 16> local_gid{};   // receive: the IP destination; send: the IP source
  std::array<uint8_t, 6> remote_mac{};   // receive: the Ethernet source; send: the destination
  uint8_t traffic_class = 0;             // IPv4 TOS / IPv6 traffic class
  uint8_t hop_limit = 64;                // IPv4 TTL / IPv6 hop limit
  uint32_t remote_qpn = kGsiQpn;         // receive: the DETH source QP; send: the BTH DQPN
  std::array<uint8_t, kGsiMadBytes> mad{};
};
static_assert(std::is_trivially_copyable_v<GsiMad>);

// A snapshot of the channel's counters.
struct GsiCounters {
  uint64_t rx = 0;            // MADs delivered to the rx ring
  uint64_t tx = 0;            // MAD frames built
  uint64_t drop_qkey = 0;     // DETH Q_Key other than 0x80010000
  uint64_t drop_len = 0;      // payload other than 256 bytes
  uint64_t drop_opcode = 0;   // an opcode other than UD SEND_ONLY to QP1
  uint64_t rx_ring_full = 0;  // MADs dropped: the control thread had not drained the ring
  uint64_t tx_ring_full = 0;  // send() refused: the worker had not drained the ring
  uint64_t tx_bad_path = 0;   // queued MADs dropped by the worker: source and destination
                              // of different IP versions
};

class GsiChannel {
 public:
  // MADs per ring. 256 overflowed in the 10,000-connection run (docs/cm.md
  // "Scale"): thousands of connections in flight make bursts of REQs, REPs and
  // their retransmissions larger than that, and every MAD a full ring drops
  // (rx_ring_full, tx_ring_full) comes back later as more retransmissions.
  // 2 x 4096 x 320 bytes, touched only as far as used.
  static constexpr uint32_t kDefaultSlots = 4096;

  explicit GsiChannel(uint32_t slots = kDefaultSlots);
  ~GsiChannel();
  GsiChannel(const GsiChannel&) = delete;
  GsiChannel& operator=(const GsiChannel&) = delete;

  // Control thread. event_fd is readable while receive() has MADs (it may also
  // be readable with none: receive() then returns 0); -1 if it could not be made.
  int event_fd() const { return event_fd_; }
  // Drains up to max received MADs, oldest first.
  uint32_t receive(GsiMad* out, uint32_t max);
  // Queues one MAD for QP1's send queue; false when the ring is full (counted).
  // The caller wakes the owning worker (Handoff::wake(kGsiOwner)).
  bool send(const GsiMad& mad);
  GsiCounters counters() const;
  // The ring send() fills, for Handoff::add_inbound (a sleeping owner checks it).
  const SpscFrameRing& tx_ring() const { return tx_; }

  // Worker (QPN 1's owner), called by its Engine.
  bool tx_pending() const { return tx_.readable(); }  // one acquire load
  // The oldest queued MAD into *out; false when none. tx_pop() removes it.
  bool tx_front(GsiMad* out);
  void tx_pop() { tx_.release(1); }
  // A received MAD into the rx ring (counted either way); true when queued.
  bool deliver(const GsiMad& mad);
  // Wakes the control thread (one eventfd write); once per burst that delivered.
  void notify();
  // Counters the worker writes (rx is counted by deliver()).
  void count_tx(uint64_t n) { bump(tx_count_, n); }
  void count_drop_qkey() { bump(drop_qkey_, 1); }
  void count_drop_len() { bump(drop_len_, 1); }
  void count_drop_opcode() { bump(drop_opcode_, 1); }
  void count_tx_bad_path() { bump(tx_bad_path_, 1); }

 private:
  // Single writer: a relaxed load and store (no locked instruction).
  static void bump(std::atomic<uint64_t>& c, uint64_t n) {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  SpscFrameRing rx_;  // producer: the worker; consumer: the control thread
  SpscFrameRing tx_;  // producer: the control thread; consumer: the worker
  int event_fd_ = -1;
  // Written by the worker, read by anyone.
  std::atomic<uint64_t> rx_count_{0}, tx_count_{0}, drop_qkey_{0}, drop_len_{0}, drop_opcode_{0},
      rx_ring_full_{0}, tx_bad_path_{0};
  // Written by the control thread, read by anyone.
  std::atomic<uint64_t> tx_ring_full_{0};
};

}  // namespace burst::core
