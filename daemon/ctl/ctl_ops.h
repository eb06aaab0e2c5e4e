/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The control protocol's one table of operations (abi/burst_ctl_proto.h): one
// row per op. burstctl and the tests read its wire facts through ctl_codec
// (ctl::find_op); burstd's dispatcher expands the same rows with their handlers
// (daemon/burstd/ctl_handlers.h). Adding an op: one row here, one handler in the
// file of the object it acts on.
//
// Columns:
//   OP       BURST_CTL_OP_<OP>; the name is "<OP>"
//   REQ      the request struct burst_ctl_<REQ> (a request is exactly its size)
//   RESP     the response struct burst_ctl_<RESP> of a success (an error is the
//            header alone)
//   SHAPE    FIXED, or LIST: RESP ends in entries[] after a count (the length
//            is offsetof(entries) + count * entry; sizeof(RESP) is the largest)
//   FDS_IN   descriptors a request may carry at most (the handler checks the
//            exact combination)
//   FDS_OUT  descriptors a response carries at most
//   NEEDS    kNothing: allowed before HELLO (HELLO only); kSession: after
//            HELLO, also for a revoked client (tear down and look); kLive:
//            after HELLO, refused (EACCES) once the client is revoked
//   HANDLER  burstd's handler, int HANDLER(Call&) (0 or an errno value)
#pragma once

// clang-format off
#define BURST_CTL_OPS(X)                                                                           \
/* OP, REQ, RESP, SHAPE, FDS_IN, FDS_OUT, NEEDS, HANDLER */                                        \
X(HELLO,          hello_req,          hello_resp,        FIXED, 0, 0, kNothing, op_hello)          \
X(QUERY_STATUS,   query_status_req,   status_resp,       FIXED, 0, 0, kSession, op_query_status)   \
X(QUERY_WORKERS,  query_workers_req,  workers_resp,      LIST,  0, 0, kSession, op_query_workers)  \
X(QUERY_COUNTERS, query_counters_req, counters_resp,     LIST,  0, 0, kSession, op_query_counters) \
X(QUERY_QPS,      query_qps_req,      qps_resp,          LIST,  0, 0, kSession, op_query_qps)      \
X(ALLOC_PD,       alloc_pd_req,       alloc_pd_resp,     FIXED, 0, 0, kLive,    op_alloc_pd)       \
X(DEALLOC_PD,     handle_req,         empty_resp,        FIXED, 0, 0, kSession, op_dealloc_pd)     \
X(CREATE_CQ,      create_cq_req,      create_cq_resp,    FIXED, 1, 1, kLive,    op_create_cq)      \
X(DESTROY_CQ,     handle_req,         empty_resp,        FIXED, 0, 0, kSession, op_destroy_cq)     \
X(CREATE_QP,      create_qp_req,      create_qp_resp,    FIXED, 0, 1, kLive,    op_create_qp)      \
X(MODIFY_QP,      modify_qp_req,      empty_resp,        FIXED, 0, 0, kLive,    op_modify_qp)      \
X(QUERY_QP,       query_qp_req,       query_qp_resp,     FIXED, 0, 0, kSession, op_query_qp)       \
X(DESTROY_QP,     handle_req,         empty_resp,        FIXED, 0, 0, kSession, op_destroy_qp)     \
X(REG_MR,         reg_mr_req,         reg_mr_resp,       FIXED, 1, 0, kLive,    op_reg_mr)         \
X(DEREG_MR,       handle_req,         empty_resp,        FIXED, 0, 0, kSession, op_dereg_mr)       \
X(MAP_DOORBELL,   map_doorbell_req,   map_doorbell_resp, FIXED, 0, 2, kLive,    op_map_doorbell)   \
X(CREATE_AH,      create_ah_req,      create_ah_resp,    FIXED, 0, 0, kLive,    op_create_ah)      \
X(DESTROY_AH,     handle_req,         empty_resp,        FIXED, 0, 0, kSession, op_destroy_ah)     \
X(SET_ASYNC_FD,   set_async_fd_req,   empty_resp,        FIXED, 1, 0, kLive,    op_set_async_fd)   \
X(CREATE_SRQ,     create_srq_req,     create_srq_resp,   FIXED, 0, 1, kLive,    op_create_srq)     \
X(DESTROY_SRQ,    handle_req,         empty_resp,        FIXED, 0, 0, kSession, op_destroy_srq)    \
X(MODIFY_SRQ,     modify_srq_req,     empty_resp,        FIXED, 0, 0, kLive,    op_modify_srq)     \
X(QUERY_SRQ,      handle_req,         query_srq_resp,    FIXED, 0, 0, kSession, op_query_srq)      \
X(ATTACH_MEMORY,  attach_memory_req,  empty_resp,        FIXED, 2, 0, kLive,    op_attach_memory)  \
X(RESIZE_CQ,      resize_cq_req,      resize_cq_resp,    FIXED, 0, 1, kLive,    op_resize_cq)       \
X(REREG_MR,       rereg_mr_req,       reg_mr_resp,       FIXED, 1, 0, kLive,    op_rereg_mr)       \
X(ALLOC_MW,       alloc_mw_req,       alloc_mw_resp,     FIXED, 0, 0, kLive,    op_alloc_mw)       \
X(DEALLOC_MW,     handle_req,         empty_resp,        FIXED, 0, 0, kSession, op_dealloc_mw)   \
X(ATTACH_MCAST,   mcast_req,          empty_resp,        FIXED, 0, 0, kLive,    op_attach_mcast)   \
X(DETACH_MCAST,   mcast_req,          empty_resp,        FIXED, 0, 0, kSession, op_detach_mcast)   \
X(REG_DMABUF_MR,  reg_dmabuf_mr_req,  reg_mr_resp,       FIXED, 1, 0, kLive,    op_reg_dmabuf_mr)  \
X(CM_OPEN_CHANNEL, cm_open_channel_req, cm_open_channel_resp, FIXED, 1, 0, kLive, op_cm_open_channel) \
X(CM_COMMAND,     cm_command_req,     cm_command_resp,   FIXED, 0, 0, kLive,    op_cm_command)     \
X(CM_COMMAND_EX,  cm_command_ex_req,  cm_command_ex_resp, LIST, 0, 0, kLive,    op_cm_command_ex)
// clang-format on

// The wire facts of one row as a ctl::OpSpec initializer (ctl_codec.h).
#define BURST_CTL_SHAPE_FIXED(RESP) 0, 0, 0
#define BURST_CTL_SHAPE_LIST(RESP)                                            \
  static_cast<uint32_t>(offsetof(RESP, entries)),                             \
      static_cast<uint32_t>(sizeof(static_cast<RESP*>(nullptr)->entries[0])), \
      static_cast<uint32_t>(offsetof(RESP, count))
#define BURST_CTL_OP_SPEC(OP, REQ, RESP, SHAPE, FDS_IN, FDS_OUT, NEEDS)                       \
  ::burst::ctl::OpSpec {                                                                      \
    BURST_CTL_OP_##OP, #OP, sizeof(burst_ctl_##REQ), sizeof(burst_ctl_##RESP),                \
        BURST_CTL_SHAPE_##SHAPE(burst_ctl_##RESP), FDS_IN, FDS_OUT, ::burst::ctl::Needs::NEEDS \
  }
