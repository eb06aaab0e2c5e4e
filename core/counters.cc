// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "core/counters.h"

namespace burst::core {

const char* drop_name(Drop d) {
  switch (d) {
    case Drop::kUnknownQp:
      return "unknown_qp";
    case Drop::kBadQpState:
      return "bad_qp_state";
    case Drop::kOpcodeForQpType:
      return "opcode_for_qp_type";
    case Drop::kBadPkey:
      return "bad_pkey";
    case Drop::kBadSource:
      return "bad_source";
    case Drop::kBadQkey:
      return "bad_qkey";
    case Drop::kUdNoRwqe:
      return "ud_no_rwqe";
    case Drop::kUdTooLong:
      return "ud_too_long";
    case Drop::kAckBadPsn:
      return "ack_bad_psn";
    case Drop::kStaleResponse:
      return "stale_response";
    case Drop::kUnexpectedResponse:
      return "unexpected_response";
    case Drop::kBadResponse:
      return "bad_response";
    case Drop::kOutOfSequence:
      return "out_of_sequence";
    case Drop::kDupUnmatched:
      return "duplicate_unmatched";
    case Drop::kAfterError:
      return "after_error";
    case Drop::kCount:
      break;
  }
  return "unknown";
}

}  // namespace burst::core
