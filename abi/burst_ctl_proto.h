/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * burst control protocol: clients (burstctl, the verbs provider) <-> burstd over
 * a unix SOCK_SEQPACKET socket. One message per request and one per response;
 * the kernel keeps message boundaries, so a message is exactly one struct below
 * (or its used prefix, for the list responses). Plain C11 (also valid C++20):
 * fixed-width fields, explicit padding, host byte order (the socket is local),
 * every size and offset checked at the end of the file.
 *
 * Every message starts with the 24-byte header:
 *
 *   0      4        6    8        12       16                 24
 *   +------+--------+----+--------+--------+------------------+--------------+
 *   | magic|version | op | length | status |    request_id    | body ...     |
 *   +------+--------+----+--------+--------+------------------+--------------+
 *   magic       BURST_CTL_MAGIC ("BCTL" in memory)
 *   version     the protocol version of the connection (HELLO: the client's highest)
 *   op          request: BURST_CTL_OP_*; response: the same op | BURST_CTL_RESPONSE
 *   length      bytes of the whole message, header included (must equal what was received)
 *   status      request: 0; response: 0 or a positive errno value (then the response
 *               is the header alone, except HELLO, which always carries its body)
 *   request_id  chosen by the client, echoed in the response
 *
 * Conversation: connect, HELLO (version negotiation + device description), then
 * any requests, each answered before the next is read (clients wait for the
 * answer; burstd processes one message at a time per client). Errors:
 *   EBADMSG          length field != bytes received, or wrong size for the op
 *   EPROTO           bad magic or shorter than a header (burstd then closes the
 *                    connection), or a request before HELLO
 *   EPROTONOSUPPORT  HELLO range without a common version; other requests whose
 *                    version is not the negotiated one
 *   EOPNOTSUPP       unknown op
 *   EMSGSIZE         message longer than BURST_CTL_MAX_MSG
 *   ENOENT           a handle that this connection did not create (handles are
 *                    per connection: another client's handles name nothing)
 *   ETIMEDOUT        the worker owning the object did not answer in time
 *   others           from the transport (EINVAL, ENOMEM, EBUSY, EOPNOTSUPP ...)
 *
 * Ownership: everything a connection creates (PDs, CQs, QPs) belongs to it and
 * is destroyed when the connection closes, including when the process dies:
 * its QPs are moved to ERR (outstanding work is flushed), then destroyed on
 * their worker, then its CQs and PDs. Handles are small integers, unique within
 * a connection and never reused by it; QPNs are global (they go on the wire).
 *
 * Verbs values map 1:1: qp_type = IBV_QPT_*, qp_state = IBV_QPS_*, path_mtu =
 * IBV_MTU_*, attr_mask = IBV_QP_* bits, access flags = IBV_ACCESS_* (the same
 * values as burst::core in core/verbs.h). An address vector whose dmac is all
 * zero asks burstd to resolve it (neighbour table for a network backend, the
 * port's own MAC for the loopback backend).
 *
 * File descriptors travel as SCM_RIGHTS ancillary data of the message they
 * belong to (at most two per message, see each op): burstd sends the memfd of
 * a CQ, QP or doorbell region with the response that describes it; a client
 * sends a CQ's completion-channel socket with CREATE_CQ, its async-event pipe
 * with SET_ASYNC_FD, its own /proc/self/maps and /proc/self/mem with
 * ATTACH_MEMORY and the file behind a shared mapping with REG_MR. A request
 * that carries an fd it should not, or lacks one it should, is answered EBADF;
 * burstd closes every fd it does not keep.
 *
 * Memory (docs/security.md): burstd reaches a client's memory only through
 * descriptors the client opened itself and sent: ATTACH_MEMORY (once, right
 * after HELLO) hands over its /proc/self/maps (required: burstd checks every
 * registration against it) and /proc/self/mem (for memory burstd cannot map:
 * malloc, stack, private mappings); REG_MR may carry the file behind the
 * shared mapping holding the range (memfd, /dev/shm, hugetlbfs) for zero-copy.
 * Both /proc descriptors are bound to the address space they were opened on:
 * once the client execs, they reach nothing, and burstd revokes the client
 * (its MRs are deregistered, its QPs moved to ERR, later requests other than
 * destroy/dereg/dealloc and queries answered EACCES). The same happens when
 * the credentials of the connecting process change.
 *
 * Version 2 added the data path (regions, MRs, AHs, async events) and changed
 * CREATE_CQ and CREATE_QP; version 3 added ATTACH_MEMORY and REG_MR's flags
 * (descriptor-based memory access); version 4 added the rest of the device
 * limits (abi/burst_limits.h) to HELLO, so that the provider reports only what
 * burstd says. A change to an existing struct bumps BURST_CTL_VERSION (and,
 * since the provider and burstd ship together, BURST_CTL_VERSION_MIN).
 */
#ifndef BURST_ABI_BURST_CTL_PROTO_H_
#define BURST_ABI_BURST_CTL_PROTO_H_

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
#define BURST_CTL_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define BURST_CTL_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

#define BURST_CTL_MAGIC 0x4c544342u /* bytes 'B' 'C' 'T' 'L' on little-endian hosts */
#define BURST_CTL_VERSION 4     /* the highest version this header describes */
#define BURST_CTL_VERSION_MIN 4 /* the lowest one burstd still speaks (v4: every limit in HELLO) */
#define BURST_CTL_MAX_MSG 65536     /* bytes; no message is larger */
#define BURST_CTL_DEFAULT_SOCKET "/run/burst/burstd.sock"
#define BURST_CTL_SOCKET_ENV "BURST_SOCKET" /* overrides the default path for clients */

#define BURST_CTL_RESPONSE 0x8000u
#define BURST_CTL_NAME_LEN 32
#define BURST_CTL_IFNAME_LEN 16 /* IFNAMSIZ */
#define BURST_CTL_PATH_LEN 108  /* sizeof(sockaddr_un.sun_path) */
#define BURST_CTL_MAX_GIDS 256
#define BURST_CTL_MAX_WORKERS 64
#define BURST_CTL_WORKER_QUEUES 16 /* queue ids listed per worker (nqueues says how many exist) */
#define BURST_CTL_COUNTER_NAME_LEN 40
#define BURST_CTL_MAX_COUNTERS 512
#define BURST_CTL_QPS_PER_MSG 512
#define BURST_CTL_ALL_WORKERS 0xffffffffu

enum burst_ctl_op {
  BURST_CTL_OP_HELLO = 1,
  BURST_CTL_OP_QUERY_STATUS = 2,
  BURST_CTL_OP_QUERY_WORKERS = 3,
  BURST_CTL_OP_QUERY_COUNTERS = 4,
  BURST_CTL_OP_QUERY_QPS = 5,
  BURST_CTL_OP_ALLOC_PD = 16,
  BURST_CTL_OP_DEALLOC_PD = 17,
  BURST_CTL_OP_CREATE_CQ = 18,
  BURST_CTL_OP_DESTROY_CQ = 19,
  BURST_CTL_OP_CREATE_QP = 20,
  BURST_CTL_OP_MODIFY_QP = 21,
  BURST_CTL_OP_QUERY_QP = 22,
  BURST_CTL_OP_DESTROY_QP = 23,
  BURST_CTL_OP_REG_MR = 24,
  BURST_CTL_OP_DEREG_MR = 25,
  BURST_CTL_OP_MAP_DOORBELL = 26, /* response carries the worker's doorbell region fd */
  BURST_CTL_OP_CREATE_AH = 27,
  BURST_CTL_OP_DESTROY_AH = 28,
  BURST_CTL_OP_SET_ASYNC_FD = 29, /* request carries the async-event pipe's write end */
  BURST_CTL_OP_CREATE_SRQ = 30,   /* response carries the SRQ region's memfd */
  BURST_CTL_OP_DESTROY_SRQ = 31,
  BURST_CTL_OP_MODIFY_SRQ = 32,
  BURST_CTL_OP_QUERY_SRQ = 33,
  BURST_CTL_OP_ATTACH_MEMORY = 34, /* request carries /proc/self/maps [+ /proc/self/mem] */
};

enum burst_ctl_backend {
  BURST_CTL_BACKEND_LOOPBACK = 1, /* in-process wire: the port hears its own frames */
  BURST_CTL_BACKEND_XDP = 2,      /* AF_XDP on a netdev */
  BURST_CTL_BACKEND_DPDK = 3,     /* reserved */
};

enum burst_ctl_xdp_mode {
  BURST_CTL_XDP_NONE = 0, /* not an XDP backend */
  BURST_CTL_XDP_NATIVE = 1,
  BURST_CTL_XDP_GENERIC = 2,
};

/* How burstd reaches application memory (DESIGN.md section 5). */
enum burst_ctl_memory_mode {
  BURST_CTL_MEM_CMA = 1,  /* cross-memory: pread/pwrite on the client's /proc/self/mem */
  BURST_CTL_MEM_SHM = 2,  /* registrations backed by shareable memory (memfd) */
  BURST_CTL_MEM_KMOD = 3, /* pinned pages through the kernel assistant */
};

enum burst_ctl_port_state {
  BURST_CTL_PORT_DOWN = 1,   /* IBV_PORT_DOWN */
  BURST_CTL_PORT_ACTIVE = 4, /* IBV_PORT_ACTIVE */
};

struct burst_ctl_hdr {
  uint32_t magic;
  uint16_t version;
  uint16_t op;
  uint32_t length;
  int32_t status;
  uint64_t request_id;
};

/* ---- HELLO ---------------------------------------------------------------- */

struct burst_ctl_hello_req {
  struct burst_ctl_hdr hdr;
  uint16_t version_min; /* the client speaks every version in [min, max] */
  uint16_t version_max;
  uint32_t flags;                       /* 0 */
  char client_name[BURST_CTL_NAME_LEN]; /* NUL-terminated, for logs ("burstctl", "ib_write_bw") */
};

/* Always carries its body, with status EPROTONOSUPPORT too (then version = 0). */
struct burst_ctl_hello_resp {
  struct burst_ctl_hdr hdr;
  uint16_t version; /* negotiated: the highest common version, 0 if none */
  uint16_t server_version_min;
  uint16_t server_version_max;
  uint16_t backend;   /* enum burst_ctl_backend */
  uint32_t client_id; /* this connection, as burstd's logs and burstctl qps name it */
  uint32_t workers;
  char ibdev[BURST_CTL_NAME_LEN];    /* "burst0" */
  char netdev[BURST_CTL_IFNAME_LEN]; /* "" for a loopback backend without a netdev */
  uint32_t ifindex;
  uint32_t mtu; /* L3 MTU of the port (netdev MTU) */
  uint8_t mac[6];
  uint8_t active_mtu;  /* IBV_MTU_* the port carries */
  uint8_t port_state;  /* enum burst_ctl_port_state */
  uint8_t xdp_mode;    /* enum burst_ctl_xdp_mode */
  uint8_t memory_mode; /* enum burst_ctl_memory_mode */
  uint16_t gid_count;  /* entries of gids[] in use (a zero GID inside is an empty slot) */
  /* Device limits (abi/burst_limits.h): what this burstd enforces, named after
   * the ibv_device_attr fields the provider reports them in. */
  uint32_t max_qp;          /* BURST_MAX_QP_PER_WORKER x workers */
  uint32_t max_qp_wr;
  uint32_t max_sge;         /* also max_sge_rd */
  uint32_t max_cq;
  uint32_t max_cqe;
  uint32_t max_pd;
  uint32_t max_inline_data; /* per QP (struct ibv_qp_cap) */
  uint32_t max_qp_rd_atom;  /* also max_qp_init_rd_atom */
  uint32_t max_mr;
  uint32_t max_ah;
  uint32_t max_srq;         /* BURST_MAX_SRQ_PER_WORKER x workers */
  uint32_t max_srq_wr;
  uint32_t max_srq_sge;
  uint32_t max_res_rd_atom; /* max_qp x max_qp_rd_atom */
  uint32_t max_msg_sz;      /* ibv_port_attr.max_msg_sz */
  uint64_t max_mr_size;
  uint8_t gids[BURST_CTL_MAX_GIDS][16]; /* RoCE v2; IPv4 as ::ffff:a.b.c.d */
};

/* ---- QUERY_STATUS -------------------------------------------------------- */

struct burst_ctl_query_status_req {
  struct burst_ctl_hdr hdr;
};

struct burst_ctl_status_resp {
  struct burst_ctl_hdr hdr;
  uint32_t pid;
  uint32_t workers;
  uint64_t uptime_ms;
  uint16_t backend;
  uint8_t xdp_mode;
  uint8_t zero_copy; /* 1: AF_XDP zero-copy, 0: copy mode (or not XDP) */
  uint8_t memory_mode;
  uint8_t port_state;
  uint16_t reserved0;
  uint32_t queues; /* datapath queues with a socket (all RX queues of the netdev) */
  uint32_t xdp_prog_id;
  uint32_t clients;
  uint32_t pds;
  uint32_t cqs;
  uint32_t qps;
  char ibdev[BURST_CTL_NAME_LEN];
  char netdev[BURST_CTL_IFNAME_LEN];
  char version[BURST_CTL_NAME_LEN]; /* burstd's release, "0.1.0" */
  char socket_path[BURST_CTL_PATH_LEN];
  uint32_t reserved1;
};

/* ---- QUERY_WORKERS ------------------------------------------------------- */

struct burst_ctl_query_workers_req {
  struct burst_ctl_hdr hdr;
};

struct burst_ctl_worker_info {
  uint32_t index;
  uint32_t nqueues;
  uint32_t queue_ids[BURST_CTL_WORKER_QUEUES]; /* the first min(nqueues, 16) */
  uint32_t qps;
  uint32_t reserved;
  uint64_t loops;
  uint64_t idle_sleeps; /* back-off sleeps of an idle loop */
  uint64_t commands;    /* control commands run on this worker */
  uint64_t rx_packets;  /* transport (engine) packets, handed-over ones included */
  uint64_t rx_bytes;
  uint64_t tx_packets;
  uint64_t tx_bytes;
  uint64_t rx_bursts;
  uint64_t tx_bursts;
  uint64_t tx_no_buffers;
  uint64_t tx_backlogged;
  uint64_t handoff_out; /* frames passed to the worker owning their QP */
  uint64_t handoff_in;
  uint64_t handoff_full; /* frames lost: the owner's ring was full */
};

/* Length: offsetof(entries) + count * sizeof(entry). */
struct burst_ctl_workers_resp {
  struct burst_ctl_hdr hdr;
  uint32_t count;
  uint32_t reserved;
  struct burst_ctl_worker_info entries[BURST_CTL_MAX_WORKERS];
};

/* ---- QUERY_COUNTERS ------------------------------------------------------ */

struct burst_ctl_query_counters_req {
  struct burst_ctl_hdr hdr;
  uint32_t worker; /* a worker index, or BURST_CTL_ALL_WORKERS for the sum */
  uint32_t reserved;
};

/* name: NUL-terminated, [a-z0-9_.] ("rx_packets", "rx_drop.bad_icrc"). */
struct burst_ctl_counter {
  char name[BURST_CTL_COUNTER_NAME_LEN];
  uint64_t value;
};

/* Length: offsetof(entries) + count * sizeof(entry). */
struct burst_ctl_counters_resp {
  struct burst_ctl_hdr hdr;
  uint32_t worker;
  uint32_t count;
  struct burst_ctl_counter entries[BURST_CTL_MAX_COUNTERS];
};

/* ---- QUERY_QPS ----------------------------------------------------------- */

struct burst_ctl_query_qps_req {
  struct burst_ctl_hdr hdr;
  uint32_t start_qpn; /* QPs with qpn >= start_qpn, ascending */
  uint32_t max;       /* at most this many (capped at BURST_CTL_QPS_PER_MSG); 0 = the cap */
};

struct burst_ctl_qp_info {
  uint32_t qpn;
  uint32_t worker;
  uint32_t client_id;
  uint32_t pid;     /* of the owning client (SO_PEERCRED) */
  uint8_t qp_type;  /* IBV_QPT_* */
  uint8_t qp_state; /* IBV_QPS_* */
  uint8_t path_mtu; /* IBV_MTU_* */
  uint8_t reserved0;
  uint32_t sq_psn; /* the attributes set with MODIFY_QP (initial PSNs) */
  uint32_t rq_psn;
  uint32_t dest_qp_num;
  uint32_t handle; /* in the owner's connection */
  uint32_t reserved1;
};

/* Length: offsetof(entries) + count * sizeof(entry). next_qpn: the start_qpn of
 * the following page, 0 when this page is the last. */
struct burst_ctl_qps_resp {
  struct burst_ctl_hdr hdr;
  uint32_t total; /* QPs in burstd */
  uint32_t count;
  uint32_t next_qpn;
  uint32_t reserved;
  struct burst_ctl_qp_info entries[BURST_CTL_QPS_PER_MSG];
};

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
 * inode) at that range; otherwise it falls back to /proc/self/mem. */
#define BURST_CTL_MR_F_FILE 0x1u

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
  uint8_t memory_mode; /* enum burst_ctl_memory_mode: CMA or SHM (zero-copy) */
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

/* ---- framing: the one encoder and checker of headers, for every side ------ */

/* A request header: op, the whole message's length (header included), the
 * connection's version (HELLO: the client's highest) and the client's id. */
static inline void burst_ctl_init_request(struct burst_ctl_hdr *h, uint16_t op, uint32_t length,
                                          uint16_t version, uint64_t request_id) {
  h->magic = BURST_CTL_MAGIC;
  h->version = version;
  h->op = op;
  h->length = length;
  h->status = 0;
  h->request_id = request_id;
}

/* The header of the response to `req` (its op | BURST_CTL_RESPONSE, id and version). */
static inline void burst_ctl_init_response(struct burst_ctl_hdr *h, const struct burst_ctl_hdr *req,
                                           uint32_t length, int32_t status) {
  h->magic = BURST_CTL_MAGIC;
  h->version = req->version;
  h->op = (uint16_t)(req->op | BURST_CTL_RESPONSE);
  h->length = length;
  h->status = status;
  h->request_id = req->request_id;
}

/* Checks the header of a message of len bytes received as the response to the
 * request (op, request_id): EPROTO when it answers something else (magic, op,
 * id), EBADMSG when it is malformed (shorter than a header, length field not
 * len, negative status, or an error response that is more than the header:
 * only HELLO keeps its body on error), 0 otherwise. The size of a successful
 * response's body is the caller's to check. */
static inline int burst_ctl_check_response_hdr(const void *msg, size_t len, uint16_t op,
                                               uint64_t request_id) {
  struct burst_ctl_hdr h;
  if (len < sizeof(h)) return EBADMSG;
  memcpy(&h, msg, sizeof(h));
  if (h.magic != BURST_CTL_MAGIC) return EPROTO;
  if (h.op != (uint16_t)(op | BURST_CTL_RESPONSE) || h.request_id != request_id) return EPROTO;
  if (h.length != len || h.status < 0) return EBADMSG;
  if (h.status != 0 && op != BURST_CTL_OP_HELLO && len != sizeof(h)) return EBADMSG;
  return 0;
}

/* ---- layout checks ------------------------------------------------------- */

BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_hdr) == 24, "hdr size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hdr, op) == 6, "hdr.op offset");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hdr, length) == 8, "hdr.length offset");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hdr, status) == 12, "hdr.status offset");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hdr, request_id) == 16, "hdr.request_id offset");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_hello_req) == 64, "hello_req size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, ibdev) == 40, "hello_resp.ibdev");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, max_qp) == 108, "hello_resp.max_qp");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, max_mr) == 140, "hello_resp.max_mr");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, max_mr_size) == 168,
                        "hello_resp.max_mr_size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, gids) == 176, "hello_resp.gids");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_hello_resp) == 176 + 16 * BURST_CTL_MAX_GIDS,
                        "hello_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_query_status_req) == 24, "status_req size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_status_resp, ibdev) == 72, "status_resp.ibdev");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_status_resp) == 264, "status_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_worker_info) == 192, "worker_info size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_workers_resp, entries) == 32,
                        "workers_resp.entries");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_workers_resp) <= BURST_CTL_MAX_MSG,
                        "workers_resp fits a message");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_query_counters_req) == 32, "counters_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_counter) == 48, "counter size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_counters_resp, entries) == 32,
                        "counters_resp.entries");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_counters_resp) <= BURST_CTL_MAX_MSG,
                        "counters_resp fits a message");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_query_qps_req) == 32, "qps_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_qp_info) == 40, "qp_info size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_qps_resp, entries) == 40, "qps_resp.entries");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_qps_resp) <= BURST_CTL_MAX_MSG,
                        "qps_resp fits a message");
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
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_qp_req) == 80, "create_qp_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_srq_req) == 56, "create_srq_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_srq_resp) == 64, "create_srq_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_modify_srq_req) == 48, "modify_srq_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_query_srq_resp) == 40, "query_srq_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_qp_resp) == 72, "create_qp_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_reg_mr_req) == 64, "reg_mr_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_attach_memory_req) == 32, "attach_memory_req");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_reg_mr_resp) == 40, "reg_mr_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_map_doorbell_req) == 32, "map_doorbell_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_map_doorbell_resp) == 40, "map_doorbell_resp");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_ah_req) == 64, "create_ah_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_create_ah_resp) == 32, "create_ah_resp size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_set_async_fd_req) == 24, "set_async_fd_req");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_async_event) == 16, "async_event size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_modify_qp_req) == 104, "modify_qp_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_query_qp_req) == 32, "query_qp_req size");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_query_qp_resp) == 136, "query_qp_resp size");

#endif /* BURST_ABI_BURST_CTL_PROTO_H_ */
