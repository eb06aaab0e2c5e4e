// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "shm/wqe.h"

#include <cstring>

namespace burst::shm {
namespace {

using core::Errc;
using core::WrOpcode;

constexpr uint32_t kKnownSendFlags =
    core::kSendFence | core::kSendSignaled | core::kSendSolicited | core::kSendInline;
static_assert(core::kSendInline == BURST_SHM_SEND_INLINE, "the encoder's inline flag");

bool KnownOpcode(uint8_t op) { return op <= static_cast<uint8_t>(WrOpcode::kSendWithInv); }

bool MayCarryInline(WrOpcode op) {
  return op == WrOpcode::kSend || op == WrOpcode::kSendWithImm || op == WrOpcode::kSendWithInv ||
         op == WrOpcode::kRdmaWrite || op == WrOpcode::kRdmaWriteWithImm;
}

// Reads n SGEs from `src` into `dst`; false when their total length is too large.
bool ReadSges(const uint8_t* src, uint32_t n, core::Sge* dst) {
  uint64_t total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    burst_shm_sge s;
    std::memcpy(&s, src + i * sizeof(s), sizeof(s));
    dst[i] = core::Sge{s.addr, s.length, s.lkey};
    total += s.length;
  }
  return total <= BURST_MAX_MSG_SIZE;
}

}  // namespace

core::Status DecodeSendWqe(const uint8_t* copy, const WqeLimits& limits, DecodedSendWqe* out) {
  if (limits.entry_size < BURST_SHM_SEND_WQE_PAYLOAD) return Errc::kInvalid;
  burst_shm_send_wqe w;
  std::memcpy(&w, copy, sizeof(w));
  if (!KnownOpcode(w.opcode) || (w.send_flags & ~kKnownSendFlags) != 0) return Errc::kInvalid;

  DecodedSendWqe d;
  d.wr.wr_id = w.wr_id;
  d.wr.opcode = static_cast<WrOpcode>(w.opcode);
  d.wr.send_flags = w.send_flags;
  d.wr.imm_data = w.imm_data;
  const bool inv = d.wr.opcode == WrOpcode::kSendWithInv || d.wr.opcode == WrOpcode::kLocalInv;
  d.wr.invalidate_rkey = inv ? w.imm_data : 0;
  if (d.wr.opcode == WrOpcode::kBindMw) {  // the fields of burst_shm_send_wqe for BIND_MW
    d.wr.bind.mw_rkey = w.imm_data;
    d.wr.bind.new_rkey = w.rkey;
    d.wr.bind.addr = w.remote_addr;
    d.wr.bind.length = w.compare_add;
    d.wr.bind.mr_lkey = w.remote_qpn;
    d.wr.bind.access = w.remote_qkey;
  }
  d.wr.rdma.remote_addr = w.remote_addr;
  d.wr.rdma.rkey = w.rkey;
  d.wr.atomic.remote_addr = w.remote_addr;
  d.wr.atomic.rkey = w.rkey;
  d.wr.atomic.compare_add = w.compare_add;
  d.wr.atomic.swap = w.swap;
  d.wr.ud.remote_qpn = w.remote_qpn;
  d.wr.ud.remote_qkey = w.remote_qkey;
  d.ah_handle = w.ah_handle;

  const uint8_t* payload = copy + BURST_SHM_SEND_WQE_PAYLOAD;
  if ((w.send_flags & core::kSendInline) != 0) {
    if (!MayCarryInline(d.wr.opcode) || w.num_sge != 0 || w.inline_len > InlineRoom(limits)) {
      return Errc::kInvalid;
    }
    d.wr.num_sge = 0;
    d.inline_len = w.inline_len;
    d.inline_data = payload;
  } else {
    if (w.inline_len != 0 || w.num_sge > SgeRoom(limits, BURST_SHM_SEND_WQE_PAYLOAD)) {
      return Errc::kInvalid;
    }
    d.wr.num_sge = w.num_sge;
    if (!ReadSges(payload, w.num_sge, d.wr.sg_list.data())) return Errc::kInvalid;
  }
  *out = d;
  return core::Status::Ok();
}

core::Status DecodeRecvWqe(const uint8_t* copy, const WqeLimits& limits, core::RecvWr* out) {
  if (limits.entry_size < BURST_SHM_RECV_WQE_PAYLOAD) return Errc::kInvalid;
  burst_shm_recv_wqe w;
  std::memcpy(&w, copy, sizeof(w));
  if (w.num_sge > SgeRoom(limits, BURST_SHM_RECV_WQE_PAYLOAD)) return Errc::kInvalid;
  core::RecvWr r;
  r.wr_id = w.wr_id;
  r.num_sge = w.num_sge;
  if (!ReadSges(copy + BURST_SHM_RECV_WQE_PAYLOAD, w.num_sge, r.sg_list.data())) {
    return Errc::kInvalid;
  }
  *out = r;
  return core::Status::Ok();
}

void EncodeCqe(const core::Wc& wc, burst_shm_cqe* cqe) {
  burst_shm_cqe c{};
  c.wr_id = wc.wr_id;
  c.status = static_cast<uint8_t>(wc.status);
  c.opcode = static_cast<uint8_t>(wc.opcode);
  c.sl = wc.sl;
  c.dlid_path_bits = wc.dlid_path_bits;
  c.vendor_err = wc.vendor_err;
  c.byte_len = wc.byte_len;
  c.imm_data = wc.imm_data;
  c.qp_num = wc.qp_num;
  c.src_qp = wc.src_qp;
  c.wc_flags = wc.wc_flags;
  c.pkey_index = wc.pkey_index;
  c.slid = wc.slid;
  std::memcpy(cqe, &c, sizeof(c));
}

}  // namespace burst::shm
