/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// INIT_QP_ATTR answered ahead (shim_qp_attrs.cc): the later states' answers
// burstd gave with an INIT_QP_ATTR, kept until a command may change the id.
// Internal to the shim (hidden symbols).
#pragma once

#include <rdma/rdma_user_cm.h>

#include <cstddef>
#include <cstdint>

namespace burst::shim {

// On unless BURST_CM_QP_ATTRS=0 or burstd answered ENOSYS (qpa_disable).
bool qpa_enabled();
void qpa_disable();
// INIT_QP_ATTR of an id whose answer is kept: true, the answer in out (*n bytes).
bool qpa_answer(uint32_t channel, const rdma_ucm_cmd_hdr& hdr, const uint8_t* body, void* out,
                size_t out_len, size_t* n);
// Around every relayed command of a push channel: before returns the epoch an
// INIT_QP_ATTRS answer is stored under (qpa_store); a command that may change
// an id forgets its answers before and after it is relayed.
uint64_t qpa_before(uint32_t cmd, const uint8_t* body, size_t in);
void qpa_after(uint32_t cmd, const uint8_t* body, size_t in);
// Keeps the answers (one ib_uverbs_qp_attr per state) burstd gave for `id`,
// unless an id may have changed since `epoch`.
void qpa_store(uint32_t channel, uint32_t id, uint64_t epoch, const uint8_t* attrs, size_t bytes);

}  // namespace burst::shim
