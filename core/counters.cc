// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "core/counters.h"

#include <iterator>

#include "core/enum_names.h"

namespace burst::core {

namespace {

constexpr const char* kDropNames[] = {
    "unknown_qp",      "bad_qp_state",        "opcode_for_qp_type",
    "bad_pkey",        "bad_source",          "bad_qkey",
    "ud_no_rwqe",      "ud_too_long",         "ack_bad_psn",
    "stale_response",  "unexpected_response", "bad_response",
    "out_of_sequence", "duplicate_unmatched", "after_error",
    "mcast_unattached"};
static_assert(std::size(kDropNames) == static_cast<size_t>(Drop::kCount));

}  // namespace

const char* drop_name(Drop d) { return enum_name(kDropNames, d, "unknown"); }

}  // namespace burst::core
