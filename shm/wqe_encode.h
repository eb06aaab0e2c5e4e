/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The encoder of the shared-memory work-queue entries (burst_shm_send_wqe,
// burst_shm_recv_wqe of abi/burst_shm_abi.h): the one place that lays out an
// entry, used by the verbs provider to post and by the tests; burstd's decoder
// (shm/wqe.h) measures entries with the same room functions, so it accepts
// exactly what this writes.
//
// Header-only and freestanding enough for the provider (loaded into any
// application: no exceptions, nothing from libstdc++ at run time). The
// scatter/gather elements may be of any type with addr, length and lkey (the
// provider's struct ibv_sge, the core's core::Sge).
#pragma once

#include <cstdint>
#include <cstring>

#include "abi/burst_shm_abi.h"

namespace burst::shm {

// Private limits of one queue: burstd records them when it creates the ring,
// the provider takes them from a ring header it checked.
struct WqeLimits {
  uint32_t entry_size = 0;  // bytes of one entry (RingGeometry::entry_size)
  uint32_t max_sge = 0;     // SGEs allowed per work request
  uint32_t max_inline = 0;  // inline bytes allowed per send WQE (0: no inline)
};

namespace internal {
constexpr uint32_t Min(uint32_t a, uint32_t b) { return a < b ? a : b; }
}  // namespace internal

// SGEs that fit behind a header of `header` bytes (BURST_SHM_SEND_WQE_PAYLOAD,
// BURST_SHM_RECV_WQE_PAYLOAD) in one entry, capped by the queue's and the
// device's limits.
constexpr uint32_t SgeRoom(const WqeLimits& l, uint32_t header) {
  if (l.entry_size < header) return 0;
  return internal::Min(internal::Min(l.max_sge, BURST_MAX_SGE),
                       (l.entry_size - header) / uint32_t{sizeof(burst_shm_sge)});
}
// Inline bytes one send entry can carry.
constexpr uint32_t InlineRoom(const WqeLimits& l) {
  if (l.entry_size < BURST_SHM_SEND_WQE_PAYLOAD) return 0;
  return internal::Min(internal::Min(l.max_inline, BURST_MAX_INLINE_DATA),
                       l.entry_size - BURST_SHM_SEND_WQE_PAYLOAD);
}

// Writes n SGEs as burst_shm_sge at dst.
template <class Sge>
inline void PutSges(uint8_t* dst, const Sge* sges, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    const burst_shm_sge s{sges[i].addr, sges[i].length, sges[i].lkey};
    std::memcpy(dst + size_t{i} * sizeof(s), &s, sizeof(s));
  }
}

// Writes a send WQE into `entry` (limits.entry_size bytes): `hdr` as given
// (wr_id, opcode, send_flags, imm_data, remote and UD fields: see struct
// burst_shm_send_wqe), except num_sge and inline_len, which follow from the
// payload written behind it:
//   - send_flags without BURST_SHM_SEND_INLINE: the n SGEs;
//   - with it: the bytes the n SGEs point at (addresses in this process,
//     read now, so the caller may reuse them on return), one after the other.
// false when the payload does not fit the queue (more than SgeRoom SGEs, more
// than InlineRoom inline bytes); the entry may then be partly written, and must
// not be published.
template <class Sge>
inline bool EncodeSendWqe(burst_shm_send_wqe hdr, const Sge* sges, uint32_t n,
                          const WqeLimits& limits, uint8_t* entry) {
  if (limits.entry_size < BURST_SHM_SEND_WQE_PAYLOAD) return false;
  uint8_t* payload = entry + BURST_SHM_SEND_WQE_PAYLOAD;
  if ((hdr.send_flags & BURST_SHM_SEND_INLINE) != 0) {
    const uint32_t room = InlineRoom(limits);
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t len = sges[i].length;
      if (len > room - total) return false;
      if (len != 0) {
        std::memcpy(payload + total,
                    reinterpret_cast<const void*>(static_cast<uintptr_t>(sges[i].addr)), len);
      }
      total += len;
    }
    hdr.num_sge = 0;
    hdr.inline_len = total;
  } else {
    if (n > SgeRoom(limits, BURST_SHM_SEND_WQE_PAYLOAD)) return false;
    PutSges(payload, sges, n);
    hdr.num_sge = static_cast<uint16_t>(n);
    hdr.inline_len = 0;
  }
  std::memcpy(entry, &hdr, sizeof(hdr));
  return true;
}

// Writes a receive WQE (RQ or SRQ) with n SGEs into `entry`; false when they
// do not fit the queue (more than SgeRoom).
template <class Sge>
inline bool EncodeRecvWqe(uint64_t wr_id, const Sge* sges, uint32_t n, const WqeLimits& limits,
                          uint8_t* entry) {
  if (n > SgeRoom(limits, BURST_SHM_RECV_WQE_PAYLOAD)) return false;
  const burst_shm_recv_wqe w{wr_id, n, 0};
  std::memcpy(entry, &w, sizeof(w));
  PutSges(entry + BURST_SHM_RECV_WQE_PAYLOAD, sges, n);
  return true;
}

}  // namespace burst::shm
