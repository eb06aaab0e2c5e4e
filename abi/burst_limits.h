/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * burst device limits (the rxe_param.h of burst): every limit of a burst
 * device, defined once. burstd enforces them and reports them in HELLO
 * (struct burst_ctl_hello_resp); the verbs provider reports what HELLO says
 * (ibv_query_device, ibv_query_port) and restates none of them; the transport
 * core (core/verbs.h, core/qp.h, core/mr.h, core/engine.h) and the
 * shared-memory layout (abi/burst_shm_abi.h, shm/) take their sizes from here.
 * Plain C11 (also valid C++20); needs nothing else.
 *
 * Changing a value changes what applications see, never a structure: no
 * version bump, but the provider and burstd ship together anyway.
 *
 *   limit                       value   ibv_device_attr / ibv_port_attr   enforced by
 *   BURST_MAX_QP_PER_WORKER     1024    max_qp (x workers)                Engine (max_qps)
 *   BURST_MAX_CQ_PER_WORKER     1024    max_cq (a CQ has a part on every  Engine (max_cqs)
 *                                       worker its QPs live on)
 *   BURST_MAX_SRQ_PER_WORKER    1024    max_srq (x workers)               Engine (max_srqs)
 *   BURST_MAX_QP_WR             32768   max_qp_wr                         Engine create_qp
 *   BURST_MAX_SGE               16      max_sge, max_sge_rd               Engine, shm rings
 *   BURST_MAX_INLINE_DATA       960     (QP cap max_inline_data)          Engine, shm rings
 *   BURST_MAX_RD_ATOMIC         16      max_qp_rd_atom,                   Engine modify_qp
 *                                       max_qp_init_rd_atom
 *   BURST_MAX_MSG_SIZE          2^31    port max_msg_sz                   Engine, shm decoder
 *   BURST_MAX_CQE               65535   max_cqe                           burstd create_cq
 *   BURST_MAX_PD                65536   max_pd                            MrTable
 *   BURST_MAX_MR                65536   max_mr                            MrTable
 *   BURST_MAX_MW                65536   max_mw (one table with the MRs:   MrTable
 *                                       HELLO's max_mr stands for both)
 *   BURST_MAX_MR_SIZE           2^40    max_mr_size                       burstd reg_mr
 *   BURST_MAX_AH                16383   max_ah                            burstd AhTable
 *   BURST_MAX_SRQ_WR            32768   max_srq_wr                        Engine create_srq
 *   BURST_MAX_SRQ_SGE           16      max_srq_sge                       Engine create_srq
 *   BURST_MAX_MCAST_GRP         256     max_mcast_grp                     burstd attach_mcast
 *                                       (each group is one kernel join on the netdev)
 *   BURST_MAX_MCAST_QP_ATTACH   56      max_mcast_qp_attach (QPs per      burstd, Engine
 *                                       group; rxe's value)
 *   BURST_MAX_TOTAL_MCAST_QP_ATTACH 4096 max_total_mcast_qp_attach        burstd attach_mcast
 *   max_res_rd_atom = max_qp * BURST_MAX_RD_ATOMIC (burstd computes it for HELLO).
 *
 * PDs, MRs and AHs are device-wide (one table per burstd); QPs, CQs and SRQs
 * live on one worker's Engine each, hence the per-worker limits.
 */
#ifndef BURST_ABI_BURST_LIMITS_H_
#define BURST_ABI_BURST_LIMITS_H_

#define BURST_MAX_QP_PER_WORKER 1024u
#define BURST_MAX_CQ_PER_WORKER 1024u
#define BURST_MAX_SRQ_PER_WORKER 1024u

/* Work requests and their scatter/gather lists. */
#define BURST_MAX_QP_WR 32768u      /* send and receive WRs per QP */
#define BURST_MAX_SGE 16u           /* SGEs per send or receive WR */
#define BURST_MAX_INLINE_DATA 960u  /* inline bytes per send WR: the largest ring entry
                                       (1024 bytes) less the send WQE header (64) */
#define BURST_MAX_RD_ATOMIC 16u     /* outstanding RDMA READ / atomic requests per QP,
                                       either direction */
#define BURST_MAX_MSG_SIZE 0x80000000u /* bytes per message (IBA: 2^31) */

#define BURST_MAX_CQE 65535u  /* entries per CQ */

#define BURST_MAX_PD 65536u /* as rxe (RXE_MAX_PD): ucmatose allocates one per connection */
#define BURST_MAX_MR 65536u
#define BURST_MAX_MW BURST_MAX_MR /* windows take entries of the MR table */
#define BURST_MAX_MR_SIZE 0x10000000000ull /* bytes per registration: 1 TiB */
#define BURST_MAX_AH 16383u

#define BURST_MAX_SRQ_WR BURST_MAX_QP_WR
#define BURST_MAX_SRQ_SGE BURST_MAX_SGE

#define BURST_MAX_MCAST_GRP 256u              /* multicast groups with an attached QP */
#define BURST_MAX_MCAST_QP_ATTACH 56u         /* QPs attached to one group */
#define BURST_MAX_TOTAL_MCAST_QP_ATTACH 4096u /* attachments over every group */

#endif /* BURST_ABI_BURST_LIMITS_H_ */
