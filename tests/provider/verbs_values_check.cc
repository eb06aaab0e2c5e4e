// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The transport core's verbs-level types carry libibverbs' numeric values
// (core/verbs.h), and so do the shared-memory rings (abi/burst_shm_abi.h): the
// provider copies ibv_* values into the rings and burstd copies them into the
// core's types. Checked here, where both definitions are visible (compiled
// into qp_ex_test: the provider itself includes nothing from core/). No code.
#include <infiniband/verbs.h>

#include "abi/burst_shm_abi.h"
#include "core/verbs.h"

namespace burst {
namespace {

// Equal numeric values, whatever the two enumeration types.
constexpr bool same(auto a, auto b) {
  return static_cast<long long>(a) == static_cast<long long>(b);
}

using core::Mtu;
using core::QpState;
using core::QpType;
using core::WcOpcode;
using core::WcStatus;
using core::WrOpcode;

static_assert(same(QpType::kRc, IBV_QPT_RC) && same(QpType::kUc, IBV_QPT_UC) &&
              same(QpType::kUd, IBV_QPT_UD));
static_assert(same(QpState::kReset, IBV_QPS_RESET) && same(QpState::kInit, IBV_QPS_INIT) &&
              same(QpState::kRtr, IBV_QPS_RTR) && same(QpState::kRts, IBV_QPS_RTS) &&
              same(QpState::kSqd, IBV_QPS_SQD) && same(QpState::kSqe, IBV_QPS_SQE) &&
              same(QpState::kErr, IBV_QPS_ERR));
static_assert(same(Mtu::k256, IBV_MTU_256) && same(Mtu::k1024, IBV_MTU_1024) &&
              same(Mtu::k4096, IBV_MTU_4096));
static_assert(same(core::kAccessLocalWrite, IBV_ACCESS_LOCAL_WRITE) &&
              same(core::kAccessRemoteWrite, IBV_ACCESS_REMOTE_WRITE) &&
              same(core::kAccessRemoteRead, IBV_ACCESS_REMOTE_READ) &&
              same(core::kAccessRemoteAtomic, IBV_ACCESS_REMOTE_ATOMIC));
static_assert(same(WrOpcode::kRdmaWrite, IBV_WR_RDMA_WRITE) &&
              same(WrOpcode::kRdmaWriteWithImm, IBV_WR_RDMA_WRITE_WITH_IMM) &&
              same(WrOpcode::kSend, IBV_WR_SEND) &&
              same(WrOpcode::kSendWithImm, IBV_WR_SEND_WITH_IMM) &&
              same(WrOpcode::kRdmaRead, IBV_WR_RDMA_READ) &&
              same(WrOpcode::kAtomicCmpAndSwp, IBV_WR_ATOMIC_CMP_AND_SWP) &&
              same(WrOpcode::kAtomicFetchAndAdd, IBV_WR_ATOMIC_FETCH_AND_ADD) &&
              same(WrOpcode::kLocalInv, IBV_WR_LOCAL_INV) &&
              same(WrOpcode::kBindMw, IBV_WR_BIND_MW) &&
              same(WrOpcode::kSendWithInv, IBV_WR_SEND_WITH_INV));
static_assert(same(core::kSendFence, IBV_SEND_FENCE) &&
              same(core::kSendSignaled, IBV_SEND_SIGNALED) &&
              same(core::kSendSolicited, IBV_SEND_SOLICITED) &&
              same(core::kSendInline, IBV_SEND_INLINE) &&
              same(BURST_SHM_SEND_INLINE, IBV_SEND_INLINE));
static_assert(same(WcStatus::kSuccess, IBV_WC_SUCCESS) &&
              same(WcStatus::kLocLenErr, IBV_WC_LOC_LEN_ERR) &&
              same(WcStatus::kLocProtErr, IBV_WC_LOC_PROT_ERR) &&
              same(WcStatus::kWrFlushErr, IBV_WC_WR_FLUSH_ERR) &&
              same(WcStatus::kRemAccessErr, IBV_WC_REM_ACCESS_ERR) &&
              same(WcStatus::kRetryExcErr, IBV_WC_RETRY_EXC_ERR) &&
              same(WcStatus::kRnrRetryExcErr, IBV_WC_RNR_RETRY_EXC_ERR) &&
              same(WcStatus::kFatalErr, IBV_WC_FATAL_ERR) &&
              same(WcStatus::kGeneralErr, IBV_WC_GENERAL_ERR));
static_assert(same(WcOpcode::kSend, IBV_WC_SEND) && same(WcOpcode::kRdmaWrite, IBV_WC_RDMA_WRITE) &&
              same(WcOpcode::kRdmaRead, IBV_WC_RDMA_READ) &&
              same(WcOpcode::kCompSwap, IBV_WC_COMP_SWAP) &&
              same(WcOpcode::kFetchAdd, IBV_WC_FETCH_ADD) &&
              same(WcOpcode::kBindMw, IBV_WC_BIND_MW) &&
              same(WcOpcode::kLocalInv, IBV_WC_LOCAL_INV) && same(WcOpcode::kRecv, IBV_WC_RECV) &&
              same(WcOpcode::kRecvRdmaWithImm, IBV_WC_RECV_RDMA_WITH_IMM));
static_assert(same(core::kWcGrh, IBV_WC_GRH) && same(core::kWcWithImm, IBV_WC_WITH_IMM) &&
              same(core::kWcWithInv, IBV_WC_WITH_INV));
static_assert(same(core::kQpState, IBV_QP_STATE) &&
              same(core::kQpAccessFlags, IBV_QP_ACCESS_FLAGS) && same(core::kQpAv, IBV_QP_AV) &&
              same(core::kQpPathMtu, IBV_QP_PATH_MTU) && same(core::kQpRqPsn, IBV_QP_RQ_PSN) &&
              same(core::kQpSqPsn, IBV_QP_SQ_PSN) &&
              same(core::kQpMaxDestRdAtomic, IBV_QP_MAX_DEST_RD_ATOMIC) &&
              same(core::kQpCap, IBV_QP_CAP) && same(core::kQpDestQpn, IBV_QP_DEST_QPN));

}  // namespace
}  // namespace burst
