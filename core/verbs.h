/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Verbs-level types of the transport core. Numeric values match libibverbs
// (<infiniband/verbs.h>) so the provider and burstd translate by copying, and
// static_asserts in tests/provider/verbs_values_check.cc check that they stay equal.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "abi/burst_limits.h"

namespace burst::core {

enum class QpType : uint8_t { kRc = 2, kUc = 3, kUd = 4 };  // IBV_QPT_*

enum class QpState : uint8_t {  // IBV_QPS_*
  kReset = 0,
  kInit = 1,
  kRtr = 2,
  kRts = 3,
  kSqd = 4,
  kSqe = 5,
  kErr = 6,
};

enum class Mtu : uint8_t { k256 = 1, k512 = 2, k1024 = 3, k2048 = 4, k4096 = 5 };  // IBV_MTU_*
constexpr uint32_t mtu_bytes(Mtu m) { return 128u << static_cast<uint8_t>(m); }

enum AccessFlags : uint32_t {  // IBV_ACCESS_*
  kAccessLocalWrite = 1u << 0,
  kAccessRemoteWrite = 1u << 1,
  kAccessRemoteRead = 1u << 2,
  kAccessRemoteAtomic = 1u << 3,
  kAccessMwBind = 1u << 4,
};

enum class WrOpcode : uint8_t {  // IBV_WR_*
  kRdmaWrite = 0,
  kRdmaWriteWithImm = 1,
  kSend = 2,
  kSendWithImm = 3,
  kRdmaRead = 4,
  kAtomicCmpAndSwp = 5,
  kAtomicFetchAndAdd = 6,
  kLocalInv = 7,
  kBindMw = 8,
  kSendWithInv = 9,
};

enum SendFlags : uint32_t {  // IBV_SEND_*
  kSendFence = 1u << 0,
  kSendSignaled = 1u << 1,
  kSendSolicited = 1u << 2,
  kSendInline = 1u << 3,
};

enum class WcStatus : uint8_t {  // IBV_WC_*
  kSuccess = 0,
  kLocLenErr = 1,
  kLocQpOpErr = 2,
  kLocEecOpErr = 3,
  kLocProtErr = 4,
  kWrFlushErr = 5,
  kMwBindErr = 6,
  kBadRespErr = 7,
  kLocAccessErr = 8,
  kRemInvReqErr = 9,
  kRemAccessErr = 10,
  kRemOpErr = 11,
  kRetryExcErr = 12,
  kRnrRetryExcErr = 13,
  kLocRddViolErr = 14,
  kRemInvRdReqErr = 15,
  kRemAbortErr = 16,
  kInvEecnErr = 17,
  kInvEecStateErr = 18,
  kFatalErr = 19,
  kRespTimeoutErr = 20,
  kGeneralErr = 21,
};

enum class WcOpcode : uint8_t {  // IBV_WC_*
  kSend = 0,
  kRdmaWrite = 1,
  kRdmaRead = 2,
  kCompSwap = 3,
  kFetchAdd = 4,
  kBindMw = 5,
  kLocalInv = 6,
  kRecv = 128,
  kRecvRdmaWithImm = 129,
};

enum WcFlags : uint32_t {  // IBV_WC_*
  kWcGrh = 1u << 0,
  kWcWithImm = 1u << 1,
  kWcWithInv = 1u << 3,
};

// ibv_wc.sl of a UD receive, as a ConnectX reports it over RoCE (mlx5 PRM, quoted
// in UCX's ud_iface.h; rdma-core providers/mlx5/cq.c: sl = CQE flags_rqpn[27:24]):
// bit 3 set when the frame carries a UDP header (RoCE v2), bits 2:0 the L3 header
// type (kernel mlx5 MLX5_CQE_ROCE_L3_HEADER_TYPE_*: 0 GRH, 1 IPv6, 2 IPv4). UCX
// 1.13-1.18 take `sl & 7` as the L3 type to find the destination GID in the GRH area.
enum WcRoceSl : uint8_t {
  kWcSlL3Ipv6 = 0x1,
  kWcSlL3Ipv4 = 0x2,
  kWcSlRoceV2 = 0x8,  // UDP header present
};

// Everything needed to address a peer on the wire (the resolved form of ibv_ah_attr
// with a GRH: RoCEv2 always carries one). GIDs are 16 bytes; an IPv4 peer is the
// IPv4-mapped IPv6 address ::ffff:a.b.c.d, exactly as a RoCEv2 GID table holds it.
struct Address {
  std::array<uint8_t, 16> dgid{};
  std::array<uint8_t, 6> dmac{};
  uint8_t sgid_index = 0;
  uint8_t hop_limit = 64;
  uint8_t traffic_class = 0;
  uint32_t flow_label = 0;
  uint16_t vlan_id = 0xffff;  // 0xffff: untagged
};

struct Sge {
  uint64_t addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

constexpr uint32_t kMaxSge = BURST_MAX_SGE;  // device limit: SGEs per WR

// A BIND_MW work request: ibv_mw_bind_info plus the window's keys.
struct MwBind {
  uint32_t mw_rkey = 0;   // the window's current rkey
  uint32_t new_rkey = 0;  // its rkey once bound (only the low byte is taken)
  uint32_t mr_lkey = 0;   // the MR the window is bound to
  uint32_t access = 0;    // IBV_ACCESS_* of the window
  uint64_t addr = 0;
  uint64_t length = 0;  // 0: unbind (type 1)
};

struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::kSend;
  uint32_t send_flags = 0;
  uint32_t num_sge = 0;
  std::array<Sge, kMaxSge> sg_list{};
  uint32_t imm_data = 0;         // host order here; network order on the wire
  uint32_t invalidate_rkey = 0;  // kSendWithInv, kLocalInv
  struct {
    uint64_t remote_addr = 0;
    uint32_t rkey = 0;
  } rdma;
  struct {
    uint64_t remote_addr = 0;
    uint64_t compare_add = 0;
    uint64_t swap = 0;
    uint32_t rkey = 0;
  } atomic;
  MwBind bind;  // kBindMw
  struct {
    Address ah;
    uint32_t remote_qpn = 0;
    uint32_t remote_qkey = 0;
  } ud;
};

struct RecvWr {
  uint64_t wr_id = 0;
  uint32_t num_sge = 0;
  std::array<Sge, kMaxSge> sg_list{};
};

// The pieces of `len` bytes that start `offset` bytes into the SGE list of wr
// (a SendWr or RecvWr), in order: piece(sge, offset in that SGE, bytes) for
// each, until piece returns false (then false). Else true, with the bytes the
// list could not hold in *rest.
template <typename Wr, typename Piece>
inline bool for_each_sge_piece(const Wr& wr, uint32_t offset, uint32_t len, uint32_t* rest,
                               Piece&& piece) {
  for (uint32_t i = 0; i < wr.num_sge && len > 0; ++i) {
    const Sge& s = wr.sg_list[i];
    if (offset >= s.length) {
      offset -= s.length;
      continue;
    }
    const uint32_t n = std::min(len, s.length - offset);
    if (!piece(s, offset, n)) return false;
    len -= n;
    offset = 0;
  }
  *rest = len;
  return true;
}

struct Wc {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::kSuccess;
  WcOpcode opcode = WcOpcode::kSend;
  uint32_t vendor_err = 0;
  uint32_t byte_len = 0;
  uint32_t imm_data = 0;  // host order; also the invalidated rkey with kWcWithInv
  uint32_t qp_num = 0;
  uint32_t src_qp = 0;
  uint32_t wc_flags = 0;
  uint16_t pkey_index = 0;
  uint16_t slid = 0;
  uint8_t sl = 0;
  uint8_t dlid_path_bits = 0;
  // A receive completion of a message whose last packet carried the BTH SE bit
  // (the sender's IBV_SEND_SOLICITED). Not an ibv_wc field: it decides whether a
  // CQ armed for solicited completions only raises an event (IBA 11.4.2.2).
  bool solicited = false;
};

// ibv_qp_attr_mask bits (same values as IBV_QP_*).
enum QpAttrMask : uint32_t {
  kQpState = 1u << 0,
  kQpCurState = 1u << 1,
  kQpEnSqdAsyncNotify = 1u << 2,
  kQpAccessFlags = 1u << 3,
  kQpPkeyIndex = 1u << 4,
  kQpPort = 1u << 5,
  kQpQkey = 1u << 6,
  kQpAv = 1u << 7,
  kQpPathMtu = 1u << 8,
  kQpQpTimeout = 1u << 9,
  kQpRetryCnt = 1u << 10,
  kQpRnrRetry = 1u << 11,
  kQpRqPsn = 1u << 12,
  kQpMaxQpRdAtomic = 1u << 13,
  kQpAltPath = 1u << 14,
  kQpMinRnrTimer = 1u << 15,
  kQpSqPsn = 1u << 16,
  kQpMaxDestRdAtomic = 1u << 17,
  kQpPathMigState = 1u << 18,
  kQpCap = 1u << 19,
  kQpDestQpn = 1u << 20,
};

struct QpAttr {
  QpState qp_state = QpState::kReset;
  QpState cur_qp_state = QpState::kReset;
  Mtu path_mtu = Mtu::k1024;
  uint32_t qkey = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint32_t dest_qp_num = 0;
  uint32_t qp_access_flags = 0;
  Address ah;
  uint16_t pkey_index = 0;
  uint8_t port_num = 1;
  uint8_t timeout = 14;       // IBA local ACK timeout exponent: 4.096 us * 2^timeout; 0 = infinite
  uint8_t retry_cnt = 7;      // 0..7
  uint8_t rnr_retry = 7;      // 0..7, 7 = infinite
  uint8_t min_rnr_timer = 0;  // IBA encoded RNR NAK timer (0..31)
  uint8_t max_rd_atomic = 1;  // outstanding READ/atomic as requester
  uint8_t max_dest_rd_atomic = 1;  // outstanding READ/atomic as responder
  uint8_t sq_draining = 0;
};

struct QpCap {
  uint32_t max_send_wr = 128;
  uint32_t max_recv_wr = 128;
  uint32_t max_send_sge = 4;
  uint32_t max_recv_sge = 4;
  uint32_t max_inline_data = 0;
};

}  // namespace burst::core
