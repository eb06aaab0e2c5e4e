/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstd's side of the ring entries: decoding and validation of the work
// requests an application wrote (burst_shm_send_wqe, burst_shm_recv_wqe) into
// the core's verbs types, and encoding of completions (burst_shm_cqe). The
// entries are written by shm/wqe_encode.h (the provider's encoder), whose room
// functions the decoder shares.
//
// burstd decodes a private copy of an entry (RingConsumer::CopyEntry) and
// checks every field it reads against its private limits before the core sees
// it: a failure is a bad work request and errors that QP only. Decoding reads
// at most limits.entry_size bytes of the copy, whatever the entry says.
// Semantic checks that need the QP or the MR tables (opcode allowed for the QP
// type, lkeys, access rights) stay with the core.
#pragma once

#include <cstdint>

#include "abi/burst_shm_abi.h"
#include "core/status.h"
#include "core/verbs.h"
#include "shm/wqe_encode.h"

namespace burst::shm {

struct DecodedSendWqe {
  core::SendWr wr;                       // ud.ah is not filled: resolve ah_handle
  uint32_t ah_handle = 0;                // UD: burstd's address-handle table index
  uint32_t inline_len = 0;               // with kSendInline: bytes at inline_data
  const uint8_t* inline_data = nullptr;  // points into the caller's private copy
};

// burstd: decodes one SQ entry copy of limits.entry_size bytes. kInvalid on
// an unknown opcode or flag, too many SGEs, inline data too long or with an
// opcode that cannot carry it, or a total length above BURST_MAX_MSG_SIZE.
core::Status DecodeSendWqe(const uint8_t* copy, const WqeLimits& limits, DecodedSendWqe* out);

// burstd: decodes one RQ/SRQ entry copy of limits.entry_size bytes.
core::Status DecodeRecvWqe(const uint8_t* copy, const WqeLimits& limits, core::RecvWr* out);

// burstd writes completions (every field, reserved bytes zero); the provider
// copies them into struct ibv_wc (it trusts burstd).
void EncodeCqe(const core::Wc& wc, burst_shm_cqe* cqe);

}  // namespace burst::shm
