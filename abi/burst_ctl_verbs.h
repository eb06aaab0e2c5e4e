/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * burst control protocol, the verbs objects: PDs, CQs, QPs, MRs, AHs, SRQs,
 * doorbells, async events, ATTACH_MEMORY (the framing, constants and header:
 * abi/burst_ctl_proto.h, which includes this file). Plain C11, also C++20.
 */
#ifndef BURST_ABI_BURST_CTL_VERBS_H_
#define BURST_ABI_BURST_CTL_VERBS_H_

#include <stdint.h>

#include "abi/burst_ctl_proto.h"

/* ---- resources ----------------------------------------------------------- */

struct burst_ctl_qp_cap {
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
  uint32_t reserved;
};

/* ibv_ah_attr with its GRH, resolved to what goes on the wire. */
struct burst_ctl_ah {
  uint8_t dgid[16];
  uint8_t dmac[6]; /* all zero: burstd resolves it */
  uint8_t sgid_index;
  uint8_t hop_limit;
  uint32_t flow_label;
  uint8_t traffic_class;
  uint8_t reserved;
  uint16_t vlan_id; /* 0xffff: untagged */
};

struct burst_ctl_qp_attr {
  uint8_t qp_state;
  uint8_t cur_qp_state;
  uint8_t path_mtu;
  uint8_t reserved0;
  uint32_t qkey;
  uint32_t rq_psn;
  uint32_t sq_psn;
  uint32_t dest_qp_num;
  uint32_t qp_access_flags;
  struct burst_ctl_ah ah;
  uint16_t pkey_index;
  uint8_t port_num;
  uint8_t timeout;
  uint8_t retry_cnt;
  uint8_t rnr_retry;
  uint8_t min_rnr_timer;
  uint8_t max_rd_atomic;
  uint8_t max_dest_rd_atomic;
  uint8_t sq_draining;
  uint8_t reserved1[6];
};

/* A request naming one object by handle (DEALLOC_PD, DESTROY_CQ, DESTROY_QP). */
struct burst_ctl_handle_req {
  struct burst_ctl_hdr hdr;
  uint32_t handle;
  uint32_t reserved;
};

/* The response of ops that return only a status (the header alone). */
struct burst_ctl_empty_resp {
  struct burst_ctl_hdr hdr;
};

struct burst_ctl_alloc_pd_req {
  struct burst_ctl_hdr hdr;
};

struct burst_ctl_alloc_pd_resp {
  struct burst_ctl_hdr hdr;
  uint32_t pd_handle;
  uint32_t reserved;
};

#define BURST_CTL_CQ_F_CHANNEL 0x1u /* the request carries the completion channel's socket */

struct burst_ctl_create_cq_req {
  struct burst_ctl_hdr hdr;
  uint32_t cqe;         /* at least this many entries */
  uint32_t flags;       /* BURST_CTL_CQ_F_* */
  uint64_t user_handle; /* returned in completion events (the application's struct ibv_cq *) */
};

/* The response carries the CQ region's memfd (burst_shm_abi.h, kind CQ). */
struct burst_ctl_create_cq_resp {
  struct burst_ctl_hdr hdr;
  uint32_t cq_handle;
  uint32_t cqe;         /* entries provided */
  uint64_t region_size; /* bytes to map */
};

/* RESIZE_CQ: the CQ gets a new ring of at least cqe entries (EINVAL above the
 * device's max_cqe or below the completions the ring holds); those are copied
 * into it, in order, and the response carries its memfd (kind CQ). burstd's
 * workers switch to it at once; the application polls the old ring no more
 * (the provider holds the CQ's lock across the call) and maps the new one. */
struct burst_ctl_resize_cq_req {
  struct burst_ctl_hdr hdr;
  uint32_t cq_handle;
  uint32_t cqe;
};

struct burst_ctl_resize_cq_resp {
  struct burst_ctl_hdr hdr;
  uint32_t cqe; /* entries provided */
  uint32_t reserved;
  uint64_t region_size; /* bytes to map */
};

struct burst_ctl_create_qp_req {
  struct burst_ctl_hdr hdr;
  uint32_t pd_handle;
  uint32_t send_cq_handle;
  uint32_t recv_cq_handle;
  uint8_t qp_type; /* IBV_QPT_RC or IBV_QPT_UD */
  uint8_t sq_sig_all;
  uint16_t reserved;
  struct burst_ctl_qp_cap cap;
  uint64_t user_handle; /* returned in async events (the application's struct ibv_qp *) */
  uint32_t srq_handle;  /* 0: the QP has its own receive queue */
  uint32_t reserved2;
};

/* The response carries the QP region's memfd (kind QP: SQ ring, RQ ring; no
 * RQ ring (part_offset[1] == 0) for a QP on an SRQ). */
struct burst_ctl_create_qp_resp {
  struct burst_ctl_hdr hdr;
  uint32_t qp_handle;
  uint32_t qpn;
  uint32_t worker; /* the worker that owns the QP (MAP_DOORBELL it to post) */
  uint32_t reserved;
  struct burst_ctl_qp_cap cap; /* as provided (rounded up) */
  uint64_t region_size;
};

struct burst_ctl_modify_qp_req {
  struct burst_ctl_hdr hdr;
  uint32_t qp_handle;
  uint32_t attr_mask; /* IBV_QP_* */
  struct burst_ctl_qp_attr attr;
};

struct burst_ctl_query_qp_req {
  struct burst_ctl_hdr hdr;
  uint32_t qp_handle;
  uint32_t attr_mask; /* accepted for ibv_query_qp; every attribute is returned */
};

struct burst_ctl_query_qp_resp {
  struct burst_ctl_hdr hdr;
  uint32_t qpn;
  uint32_t worker;
  uint8_t qp_type;
  uint8_t sq_sig_all;
  uint16_t reserved0;
  uint32_t reserved1;
  struct burst_ctl_qp_attr attr;
  struct burst_ctl_qp_cap cap;
};

struct burst_ctl_reg_mr_req {
  struct burst_ctl_hdr hdr;
  uint32_t pd_handle;
  uint32_t access; /* IBV_ACCESS_* */
  uint64_t addr;   /* in the client's address space */
  uint64_t length;
  uint64_t iova;   /* the address work requests and peers use (ibv_reg_mr: addr) */
  uint32_t flags;  /* BURST_CTL_MR_F_* */
  uint32_t reserved;
};

/* REG_MR: the request carries a descriptor of the file mapped MAP_SHARED at
 * [addr, addr + length) (opened by the client, O_RDWR for a writable MR). burstd
 * maps it (zero-copy) if the client's maps show that very file (device and
 * inode) at that range; otherwise it falls back to /proc/self/mem. The
 * descriptor may instead be a pin of the kernel assistant (abi/burst_kmod.h,
 * BURST_KMOD_PIN of exactly [addr, addr + length) by the client): burstd maps
 * the pinned pages (memory_mode BURST_CTL_MEM_KMOD) or answers EINVAL when the
 * pin is another process's or another range's. */
#define BURST_CTL_MR_F_FILE 0x1u

/* REREG_MR (ibv_rereg_mr): flags are IBV_REREG_MR_CHANGE_* (at least one).
 * pd_handle with CHANGE_PD; access with CHANGE_ACCESS; addr/length/iova the
 * MR's range: the new one with CHANGE_TRANSLATION, else the current one (burstd
 * maps it again when the access changes). mr_flags and the descriptor as
 * REG_MR. On success the keys are in the response (they change with a new
 * translation); on any error the MR is as it was. EBUSY while memory windows
 * are bound to it. */
struct burst_ctl_rereg_mr_req {
  struct burst_ctl_hdr hdr;
  uint32_t mr_handle;
  uint32_t flags;     /* IBV_REREG_MR_CHANGE_TRANSLATION | _PD | _ACCESS */
  uint32_t pd_handle; /* CHANGE_PD */
  uint32_t access;    /* CHANGE_ACCESS: IBV_ACCESS_* */
  uint64_t addr;
  uint64_t length;
  uint64_t iova;
  uint32_t mr_flags; /* BURST_CTL_MR_F_* */
  uint32_t reserved;
};

/* REG_DMABUF_MR (ibv_reg_dmabuf_mr): the request carries the dma-buf's
 * descriptor. burstd checks that it is a dma-buf (its file lives in the
 * kernel's dma-buf pseudo file system: fstatfs gives DMA_BUF_MAGIC) and that
 * [offset, offset + length) lies within the buffer (its size: lseek SEEK_END),
 * maps that range MAP_SHARED and registers it zero-copy at `iova`; it need not
 * be mapped in the client. EBADF: no descriptor; EINVAL: not a dma-buf, a
 * range past the buffer's end, offset + length wraps; EACCES: a writable MR
 * (LOCAL_WRITE) over a descriptor opened without write access (PRIME export
 * without DRM_RDWR); access otherwise as REG_MR. Charged to RLIMIT_MEMLOCK as
 * a zero-copy REG_MR (whole pages). REREG_MR on it: EOPNOTSUPP. */
struct burst_ctl_reg_dmabuf_mr_req {
  struct burst_ctl_hdr hdr;
  uint32_t pd_handle;
  uint32_t access; /* IBV_ACCESS_* */
  uint64_t offset; /* into the dma-buf */
  uint64_t length;
  uint64_t iova;
  uint64_t reserved;
};

/* ALLOC_MW: a memory window of type 1 or 2 (IBV_MW_TYPE_*) in a PD. Its rkey
 * changes at each bind (the key byte the consumer chose); DEALLOC_MW takes the
 * handle and unbinds it first. */
struct burst_ctl_alloc_mw_req {
  struct burst_ctl_hdr hdr;
  uint32_t pd_handle;
  uint32_t type; /* IBV_MW_TYPE_1 (1) or IBV_MW_TYPE_2 (2) */
};

struct burst_ctl_alloc_mw_resp {
  struct burst_ctl_hdr hdr;
  uint32_t mw_handle;
  uint32_t rkey;
};

/* ATTACH_MEMORY: descriptor 0 is the client's /proc/self/maps; with
 * BURST_CTL_ATTACH_F_MEM descriptor 1 is its /proc/self/mem (opened O_RDWR).
 * Without it (a process that cannot open its own mem file, e.g. one that is
 * not dumpable) only file-backed shared memory can be registered. Once per
 * connection (EALREADY after that); REG_MR before it is answered EACCES. */
#define BURST_CTL_ATTACH_F_MEM 0x1u
struct burst_ctl_attach_memory_req {
  struct burst_ctl_hdr hdr;
  uint32_t flags; /* BURST_CTL_ATTACH_F_* */
  uint32_t reserved;
};

struct burst_ctl_reg_mr_resp {
  struct burst_ctl_hdr hdr;
  uint32_t mr_handle;
  uint32_t lkey;
  uint32_t rkey;
  uint8_t memory_mode; /* enum burst_ctl_memory_mode: CMA, SHM or KMOD (zero-copy) */
  uint8_t reserved[3];
};

struct burst_ctl_map_doorbell_req {
  struct burst_ctl_hdr hdr;
  uint32_t worker;
  uint32_t reserved;
};

/* The response carries two descriptors: the doorbell region's memfd (kind
 * DOORBELL), then the worker's wake-up eventfd (see need_wakeup in
 * burst_shm_abi.h). */
struct burst_ctl_map_doorbell_resp {
  struct burst_ctl_hdr hdr;
  uint32_t worker;
  uint32_t reserved;
  uint64_t region_size;
};

struct burst_ctl_create_ah_req {
  struct burst_ctl_hdr hdr;
  uint32_t pd_handle;
  uint32_t reserved;
  struct burst_ctl_ah ah; /* dmac all zero: burstd resolves it */
};

struct burst_ctl_create_ah_resp {
  struct burst_ctl_hdr hdr;
  uint32_t ah_handle; /* what UD send WQEs carry in ah_handle */
  uint32_t reserved;
};

/* ATTACH_MCAST / DETACH_MCAST: a UD QP joins / leaves the multicast group gid
 * (ff00::/8, or IPv4 224.0.0.0/4 as ::ffff:a.b.c.d); mlid is not used on RoCE. */
struct burst_ctl_mcast_req {
  struct burst_ctl_hdr hdr;
  uint32_t qp_handle;
  uint16_t mlid;
  uint16_t reserved;
  uint8_t gid[16];
};

/* The request carries the write end of the pipe whose read end is the
 * context's async_fd: burstd writes struct burst_ctl_async_event records. */
struct burst_ctl_set_async_fd_req {
  struct burst_ctl_hdr hdr;
};

/* One async event as the provider's async_fd delivers it (the layout
 * libibverbs reads: the element is the user handle given at creation). */
struct burst_ctl_async_event {
  uint64_t element;    /* QP user_handle; 0 for device events */
  uint32_t event_type; /* IBV_EVENT_* */
  uint32_t reserved;
};

struct burst_ctl_srq_attr {
  uint32_t max_wr;
  uint32_t max_sge;
  uint32_t srq_limit;
  uint32_t reserved;
};

struct burst_ctl_create_srq_req {
  struct burst_ctl_hdr hdr;
  uint32_t pd_handle;
  uint32_t reserved;
  struct burst_ctl_srq_attr attr;
  uint64_t user_handle; /* returned in async events (the application's struct ibv_srq *) */
};

/* The response carries the SRQ region's memfd (kind SRQ: one ring). Post to
 * it, then ring the doorbell of `worker` with kind SRQ and handle srqn. */
struct burst_ctl_create_srq_resp {
  struct burst_ctl_hdr hdr;
  uint32_t srq_handle;
  uint32_t srqn;
  uint32_t worker;
  uint32_t reserved;
  struct burst_ctl_srq_attr attr; /* as provided (rounded up) */
  uint64_t region_size;
};

#define BURST_CTL_SRQ_MAX_WR 0x1u /* IBV_SRQ_MAX_WR: resizing, not supported */
#define BURST_CTL_SRQ_LIMIT 0x2u  /* IBV_SRQ_LIMIT */

struct burst_ctl_modify_srq_req {
  struct burst_ctl_hdr hdr;
  uint32_t srq_handle;
  uint32_t attr_mask; /* BURST_CTL_SRQ_* (IBV_SRQ_* values) */
  struct burst_ctl_srq_attr attr;
};

struct burst_ctl_query_srq_resp {
  struct burst_ctl_hdr hdr;
  struct burst_ctl_srq_attr attr;
};

/* ---- layout checks ------------------------------------------------------- */

BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_qp_cap) == 24, "qp_cap size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_ah) == 32, "ah size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_qp_attr, ah) == 24, "qp_attr.ah offset");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_qp_attr, pkey_index) == 56, "qp_attr.pkey");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_qp_attr) == 72, "qp_attr size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_handle_req) == 32, "handle_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_empty_resp) == 24, "empty_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_alloc_pd_req) == 24, "alloc_pd_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_alloc_pd_resp) == 32, "alloc_pd_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_cq_req) == 40, "create_cq_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_cq_resp) == 40, "create_cq_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_resize_cq_req) == 32, "resize_cq_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_resize_cq_resp) == 40, "resize_cq_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_qp_req) == 80, "create_qp_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_srq_req) == 56, "create_srq_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_srq_resp) == 64, "create_srq_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_modify_srq_req) == 48, "modify_srq_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_query_srq_resp) == 40, "query_srq_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_qp_resp) == 72, "create_qp_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_reg_mr_req) == 64, "reg_mr_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_attach_memory_req) == 32, "attach_memory_req");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_alloc_mw_req) == 32, "alloc_mw_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_rereg_mr_req) == 72, "rereg_mr_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_reg_dmabuf_mr_req) == 64, "reg_dmabuf_mr_req");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_alloc_mw_resp) == 32, "alloc_mw_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_reg_mr_resp) == 40, "reg_mr_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_map_doorbell_req) == 32, "map_doorbell_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_map_doorbell_resp) == 40, "map_doorbell_resp");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_ah_req) == 64, "create_ah_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_ah_resp) == 32, "create_ah_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_mcast_req) == 48, "mcast_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_set_async_fd_req) == 24, "set_async_fd_req");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_async_event) == 16, "async_event size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_modify_qp_req) == 104, "modify_qp_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_query_qp_req) == 32, "query_qp_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_query_qp_resp) == 136, "query_qp_resp size");

#endif /* BURST_ABI_BURST_CTL_VERBS_H_ */
