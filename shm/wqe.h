// Encoding and validation of ring entries (burst_shm_send_wqe,
// burst_shm_recv_wqe, burst_shm_cqe) to and from the core's verbs types.
//
// burstd decodes a private copy of an entry (RingConsumer::CopyEntry) and
// checks every field it reads against its private limits before the core sees
// it: a failure is a bad work request and errors that QP only. Decoding reads
// at most limits.entry_size bytes of the copy, whatever the entry says.
// Semantic checks that need the QP or the MR tables (opcode allowed for the QP
// type, lkeys, access rights) stay with the core.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "core/verbs.h"
#include "shm/burst_shm_abi.h"

namespace burst::shm {

static_assert(BURST_SHM_MAX_SGE == burst::core::kMaxSge, "ABI and core agree on SGEs per WR");

// Private limits of one queue, recorded by burstd when it created the ring.
struct WqeLimits {
  uint32_t entry_size = 0;  // bytes of one entry (RingGeometry::entry_size)
  uint32_t max_sge = 0;     // SGEs allowed per work request
  uint32_t max_inline = 0;  // inline bytes allowed per send WQE (0: no inline)
};

// Largest message IBA allows (2^31 bytes); also bounds the sum of SGE lengths.
inline constexpr uint64_t kMaxMessageBytes = uint64_t{1} << 31;

struct DecodedSendWqe {
  core::SendWr wr;                       // ud.ah is not filled: resolve ah_handle
  uint32_t ah_handle = 0;                // UD: burstd's address-handle table index
  uint32_t inline_len = 0;               // with kSendInline: bytes at inline_data
  const uint8_t* inline_data = nullptr;  // points into the caller's private copy
};

// burstd: decodes one SQ entry copy of limits.entry_size bytes. kInvalid on
// an unknown opcode or flag, too many SGEs, inline data too long or with an
// opcode that cannot carry it, or a total length above kMaxMessageBytes.
core::Status DecodeSendWqe(const uint8_t* copy, const WqeLimits& limits, DecodedSendWqe* out);

// burstd: decodes one RQ/SRQ entry copy of limits.entry_size bytes.
core::Status DecodeRecvWqe(const uint8_t* copy, const WqeLimits& limits, core::RecvWr* out);

// Provider (and tests): writes a send WQE into an entry of limits.entry_size
// bytes. With kSendInline, `inline_data` is the payload and wr.num_sge is
// ignored. kInvalid when the request does not fit the limits.
core::Status EncodeSendWqe(const core::SendWr& wr, uint32_t ah_handle,
                           std::span<const uint8_t> inline_data, const WqeLimits& limits,
                           uint8_t* entry);
core::Status EncodeRecvWqe(const core::RecvWr& wr, const WqeLimits& limits, uint8_t* entry);

// burstd writes completions; the provider reads them (it trusts burstd).
void EncodeCqe(const core::Wc& wc, burst_shm_cqe* cqe);
core::Wc DecodeCqe(const burst_shm_cqe& cqe);

}  // namespace burst::shm
