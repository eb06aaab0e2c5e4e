/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * burst control protocol: clients (burstctl, the verbs provider) <-> burstd over
 * a unix SOCK_SEQPACKET socket. One message per request and one per response;
 * the kernel keeps message boundaries, so a message is exactly one struct below
 * (or its used prefix, for the list responses). Plain C11 (also valid C++20):
 * fixed-width fields, explicit padding, host byte order (the socket is local),
 * every size and offset checked by static assertions. This file: the framing
 * (constants, ops, header, encoders and checker); the ops' messages are in
 * burst_ctl_query.h (HELLO, QUERY_*), burst_ctl_verbs.h (PD, CQ, QP, MR,
 * AH, SRQ, doorbells, async events, memory) and burst_ctl_cm.h (rdma_cm event
 * channels), all included at the end.
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
  BURST_CTL_OP_RESIZE_CQ = 35,     /* response carries the CQ's new region memfd */
  BURST_CTL_OP_REREG_MR = 36,      /* request may carry the file behind the new range */
  BURST_CTL_OP_ALLOC_MW = 37,
  BURST_CTL_OP_DEALLOC_MW = 38,
  BURST_CTL_OP_ATTACH_MCAST = 39,
  BURST_CTL_OP_DETACH_MCAST = 40,
  BURST_CTL_OP_REG_DMABUF_MR = 41, /* request carries the dma-buf descriptor */
  /* 42..45: the connection manager, in abi/burst_ctl_cm.h */
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

BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_hdr) == 24, "hdr size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hdr, op) == 6, "hdr.op offset");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hdr, length) == 8, "hdr.length offset");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hdr, status) == 12, "hdr.status offset");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_hdr, request_id) == 16, "hdr.request_id offset");

/* The ops, by area (each file checks its own sizes and offsets). */
#include "abi/burst_ctl_query.h"
#include "abi/burst_ctl_verbs.h"
#include "abi/burst_ctl_cm.h"

#endif /* BURST_ABI_BURST_CTL_PROTO_H_ */
