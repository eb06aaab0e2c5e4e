/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Counters of one engine. Single writer (the owning worker); readers (burstctl)
// take a relaxed snapshot. Every reason a packet is dropped has its own counter.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "core/wire/frame.h"

namespace burst::core {

// Transport-level drop reasons (after parse_frame accepted the frame).
enum class Drop : uint8_t {
  kUnknownQp = 0,       // destination QPN names no QP of this engine
  kBadQpState,          // QP state does not accept this packet (RESET, INIT, ERR ...)
  kOpcodeForQpType,     // e.g. a UD opcode for an RC QP, or a UC opcode
  kBadPkey,             // BTH P_Key does not match the default partition
  kBadSource,           // RC packet from an address other than the connected peer
  kBadQkey,             // UD Q_Key mismatch
  kUdNoRwqe,            // UD SEND with no receive WQE posted
  kUdTooLong,           // UD payload larger than the path MTU
  kAckBadPsn,           // ACK/response for a PSN that was never sent
  kStaleResponse,       // ACK/NAK/response older than the oldest unacknowledged PSN
  kUnexpectedResponse,  // response that matches no outstanding request of its kind
  kBadResponse,         // malformed response (bad syndrome or length); QP errors
  kOutOfSequence,       // future PSN while a NAK is already outstanding
  kDupUnmatched,        // duplicate READ/atomic with no saved resource to replay
  kAfterError,          // request after the responder reported a fatal error
  kMcastUnattached,     // DQPN 0xFFFFFF: no QP of this engine attached to the destination group
  kCount
};
const char* drop_name(Drop d);

constexpr size_t kNakCodes = 5;  // wire::NakCode values 0..4

struct EngineCounters {
  uint64_t rx_packets = 0;
  uint64_t rx_bytes = 0;
  uint64_t tx_packets = 0;
  uint64_t tx_bytes = 0;
  std::array<uint64_t, static_cast<size_t>(wire::RxDrop::kCount)> rx_parse_drop{};
  std::array<uint64_t, static_cast<size_t>(Drop::kCount)> rx_drop{};
  uint64_t rx_ecn_ce = 0;  // packets received with ECN CE (congestion experienced)
  uint64_t rx_cnp = 0;     // CNPs received (DCQCN is a later issue)

  // Responder.
  uint64_t rx_duplicate = 0;        // requests with a PSN before ePSN
  uint64_t rx_out_of_sequence = 0;  // requests with a PSN after ePSN
  uint64_t acks_sent = 0;
  uint64_t rnr_naks_sent = 0;
  std::array<uint64_t, kNakCodes> naks_sent{};
  uint64_t read_responses_sent = 0;  // packets
  uint64_t atomic_acks_sent = 0;
  uint64_t read_replays = 0;
  uint64_t atomic_replays = 0;
  uint64_t ud_received = 0;

  // Requester / completer.
  uint64_t acks_received = 0;
  uint64_t rnr_naks_received = 0;
  std::array<uint64_t, kNakCodes> naks_received{};
  uint64_t retransmit_events = 0;  // Go-Back-N restarts
  uint64_t retransmitted_packets = 0;
  uint64_t timeouts = 0;  // transport timer expiries
  uint64_t read_out_of_sequence = 0;
  uint64_t ud_sent = 0;

  uint64_t cq_overflows = 0;
  uint64_t tx_buffer_too_small = 0;

  // MRs in another process's memory (core/mem_space.h) whose bytes could not be
  // reached (process gone, range unmapped or protected, short transfer). Each
  // one errors the operation that needed it (see engine.h).
  // Placement copies (receive, READ response data, atomic result); transmit
  // gathers and READ response reads; responder atomics.
  uint64_t mem_space_write_errors = 0;
  uint64_t mem_space_read_errors = 0;
  uint64_t mem_space_read_ahead = 0;  // transmit reads that fetched following frames too
  uint64_t mem_space_atomic_errors = 0;
};

}  // namespace burst::core
