/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * burst control protocol, the session and the queries: HELLO, QUERY_STATUS,
 * QUERY_WORKERS, QUERY_COUNTERS, QUERY_QPS (the framing, constants and header:
 * abi/burst_ctl_proto.h, which includes this file). Plain C11, also C++20.
 */
#ifndef BURST_ABI_BURST_CTL_QUERY_H_
#define BURST_ABI_BURST_CTL_QUERY_H_

#include <stdint.h>

#include "abi/burst_ctl_proto.h"

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
  /* More device limits (appended: the struct had no spare bytes). */
  uint32_t max_mcast_grp;
  uint32_t max_mcast_qp_attach;
  uint32_t max_total_mcast_qp_attach;
  uint32_t reserved_limits;
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

/* ---- layout checks ------------------------------------------------------- */

BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_hello_req) == 64, "hello_req size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, ibdev) == 40, "hello_resp.ibdev");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, max_qp) == 108, "hello_resp.max_qp");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, max_mr) == 140, "hello_resp.max_mr");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, max_mr_size) == 168,
                        "hello_resp.max_mr_size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, gids) == 176, "hello_resp.gids");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hello_resp, max_mcast_grp) ==
                            176 + 16 * BURST_CTL_MAX_GIDS,
                        "hello_resp.max_mcast_grp");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_hello_resp) == 176 + 16 * BURST_CTL_MAX_GIDS + 16,
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

#endif /* BURST_ABI_BURST_CTL_QUERY_H_ */
