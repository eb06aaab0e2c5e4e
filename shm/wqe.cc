#include "shm/wqe.h"

#include <algorithm>
#include <cstring>

namespace burst::shm {
namespace {

using core::Errc;
using core::WrOpcode;

constexpr uint32_t kKnownSendFlags =
    core::kSendFence | core::kSendSignaled | core::kSendSolicited | core::kSendInline;

bool KnownOpcode(uint8_t op) { return op <= static_cast<uint8_t>(WrOpcode::kSendWithInv); }

bool MayCarryInline(WrOpcode op) {
  return op == WrOpcode::kSend || op == WrOpcode::kSendWithImm || op == WrOpcode::kSendWithInv ||
         op == WrOpcode::kRdmaWrite || op == WrOpcode::kRdmaWriteWithImm;
}

// SGEs that fit behind a header of `header` bytes in an entry, capped by the limits.
uint32_t SgeRoom(const WqeLimits& l, uint32_t header) {
  if (l.entry_size < header) return 0;
  return std::min({l.max_sge, (l.entry_size - header) / uint32_t{sizeof(burst_shm_sge)},
                   uint32_t{BURST_SHM_MAX_SGE}});
}
uint32_t InlineRoom(const WqeLimits& l) {
  if (l.entry_size < BURST_SHM_SEND_WQE_PAYLOAD) return 0;
  return std::min(
      {l.max_inline, l.entry_size - BURST_SHM_SEND_WQE_PAYLOAD, uint32_t{BURST_SHM_MAX_INLINE}});
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
  return total <= kMaxMessageBytes;
}

void WriteSges(const core::Sge* src, uint32_t n, uint8_t* dst) {
  for (uint32_t i = 0; i < n; ++i) {
    const burst_shm_sge s{src[i].addr, src[i].length, src[i].lkey};
    std::memcpy(dst + i * sizeof(s), &s, sizeof(s));
  }
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
  d.wr.invalidate_rkey = d.wr.opcode == WrOpcode::kSendWithInv ? w.imm_data : 0;
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

core::Status EncodeSendWqe(const core::SendWr& wr, uint32_t ah_handle,
                           std::span<const uint8_t> inline_data, const WqeLimits& limits,
                           uint8_t* entry) {
  const bool is_inline = (wr.send_flags & core::kSendInline) != 0;
  if (limits.entry_size < BURST_SHM_SEND_WQE_PAYLOAD) return Errc::kInvalid;
  if (is_inline ? inline_data.size() > InlineRoom(limits)
                : wr.num_sge > SgeRoom(limits, BURST_SHM_SEND_WQE_PAYLOAD)) {
    return Errc::kInvalid;
  }
  burst_shm_send_wqe w{};
  w.wr_id = wr.wr_id;
  w.opcode = static_cast<uint8_t>(wr.opcode);
  w.send_flags = wr.send_flags;
  w.imm_data = wr.opcode == WrOpcode::kSendWithInv ? wr.invalidate_rkey : wr.imm_data;
  const bool atomic =
      wr.opcode == WrOpcode::kAtomicCmpAndSwp || wr.opcode == WrOpcode::kAtomicFetchAndAdd;
  w.remote_addr = atomic ? wr.atomic.remote_addr : wr.rdma.remote_addr;
  w.rkey = atomic ? wr.atomic.rkey : wr.rdma.rkey;
  w.compare_add = wr.atomic.compare_add;
  w.swap = wr.atomic.swap;
  w.ah_handle = ah_handle;
  w.remote_qpn = wr.ud.remote_qpn;
  w.remote_qkey = wr.ud.remote_qkey;
  uint8_t* payload = entry + BURST_SHM_SEND_WQE_PAYLOAD;
  if (is_inline) {
    w.inline_len = static_cast<uint32_t>(inline_data.size());
    if (!inline_data.empty()) std::memcpy(payload, inline_data.data(), inline_data.size());
  } else {
    w.num_sge = static_cast<uint16_t>(wr.num_sge);
    WriteSges(wr.sg_list.data(), wr.num_sge, payload);
  }
  std::memcpy(entry, &w, sizeof(w));
  return core::Status::Ok();
}

core::Status EncodeRecvWqe(const core::RecvWr& wr, const WqeLimits& limits, uint8_t* entry) {
  if (wr.num_sge > SgeRoom(limits, BURST_SHM_RECV_WQE_PAYLOAD)) return Errc::kInvalid;
  const burst_shm_recv_wqe w{wr.wr_id, wr.num_sge, 0};
  std::memcpy(entry, &w, sizeof(w));
  WriteSges(wr.sg_list.data(), wr.num_sge, entry + BURST_SHM_RECV_WQE_PAYLOAD);
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

core::Wc DecodeCqe(const burst_shm_cqe& cqe) {
  core::Wc wc;
  wc.wr_id = cqe.wr_id;
  wc.status = static_cast<core::WcStatus>(cqe.status);
  wc.opcode = static_cast<core::WcOpcode>(cqe.opcode);
  wc.sl = cqe.sl;
  wc.dlid_path_bits = cqe.dlid_path_bits;
  wc.vendor_err = cqe.vendor_err;
  wc.byte_len = cqe.byte_len;
  wc.imm_data = cqe.imm_data;
  wc.qp_num = cqe.qp_num;
  wc.src_qp = cqe.src_qp;
  wc.wc_flags = cqe.wc_flags;
  wc.pkey_index = cqe.pkey_index;
  wc.slid = cqe.slid;
  return wc;
}

}  // namespace burst::shm
