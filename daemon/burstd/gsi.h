/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// QP1 of burstd's port for the control thread: the CM MADs QP1 received, and
// MADs to send from it (IB CM over RoCEv2, cm/ib_cm.h's Mad and MadPeer). The
// datapath side is core/gsi_channel.h: a GsiChannel whose rings join the control
// thread to the worker owning QPN 1 (worker 0), attached to its Engine by the
// Device before the workers start.
//
//   receive(): the channel's MADs, their peer completed here: sgid_index is the
//              index of the GID the frame was sent to in the port's GID table
//              (a MAD for a GID the port does not have is dropped, counted:
//              gsi.drop_dgid); pkey_index 0.
//   send():    the source GID from peer.sgid_index; an all-zero peer.mac is
//              resolved first (Device::resolve_dmac: the port's own MAC for its
//              own GIDs, the kernel's neighbour table, the ARP agent; a bounded
//              wait on the control thread), then queued for the worker, woken
//              if it sleeps (core::Handoff::wake).
//
// Counters (burstctl counters, gsi.*): rx, tx, drop_qkey, drop_len,
// drop_opcode, rx_ring_full, tx_ring_full, tx_bad_path (core/gsi_channel.h), and
// drop_dgid, tx_unreachable (here).
//
// Test hook (BURST_TEST_HOOKS builds only, never in release packages): MAD loss
// in the burst -> peer direction, where no netem can be had. The environment of
// burstd at start: BURST_TEST_GSI_TX_LOSS=P drops P% of the MADs send() is given
// (a seeded xorshift, BURST_TEST_GSI_TX_SEED), BURST_TEST_GSI_TX_DROP_EVERY=N
// every Nth; a dropped MAD is answered 0 as if sent (lost on the wire), counted
// gsi.test_tx_dropped. The CM's retries must cover it.
//
// Threading: the control thread (every member).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cm/ib_cm.h"
#include "core/gsi_channel.h"
#include "core/worker.h"
#include "net/addr.h"

namespace burst::burstd {

class Gsi {
 public:
  // The destination MAC of a GID: 0 or an errno value.
  using Resolve = std::function<int(const net::Gid& dgid, net::MacAddr* mac)>;

  // gids: the port's GID table (sgid_index -> GID); handoff: the port's rings,
  // whose wake() reaches a sleeping QPN 1 owner (nullptr: none sleeps).
  Gsi(std::vector<net::Gid> gids, Resolve resolve, core::Handoff* handoff);
  Gsi(const Gsi&) = delete;
  Gsi& operator=(const Gsi&) = delete;

  // Readable (eventfd) while receive() has MADs.
  int event_fd() const { return channel_.event_fd(); }
  // Drains up to max MADs QP1 received, oldest first.
  size_t receive(cm::Mad* out, size_t max);
  // 0; EAGAIN (ring full: the CM's retry covers it); EHOSTUNREACH (peer.mac
  // zero and not resolvable); EINVAL (sgid_index not in the GID table, a
  // remote QPN over 24 bits, source and destination of different IP versions).
  int send(const cm::Mad& mad);

  // What the Device attaches to worker 0's Engine and lists in the Handoff.
  core::GsiChannel& channel() { return channel_; }
  std::vector<std::pair<std::string, uint64_t>> counters() const;

 private:
  core::GsiChannel channel_;
  const std::vector<net::Gid> gids_;
  const Resolve resolve_;
  core::Handoff* const handoff_;
  uint64_t drop_dgid_ = 0;       // received for a GID the port does not have
  uint64_t tx_unreachable_ = 0;  // send() gave EHOSTUNREACH
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  bool test_drop();              // the test hook above: this MAD is lost
  uint32_t test_loss_ppm_ = 0;   // BURST_TEST_GSI_TX_LOSS, parts per million
  uint64_t test_every_ = 0;      // BURST_TEST_GSI_TX_DROP_EVERY
  uint64_t test_seen_ = 0;
  uint64_t test_rng_ = 0x9E3779B97F4A7C15ull;
  uint64_t test_dropped_ = 0;
#endif
};

}  // namespace burst::burstd
