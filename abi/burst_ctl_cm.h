/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * burst control protocol, the connection manager: the rdma_cm event channels
 * of unmodified librdmacm applications (the framing, constants and header:
 * abi/burst_ctl_proto.h, which includes this file). Plain C11, also C++20.
 *
 * The preload shim (provider/shim/shim_rdma_cm.cc, contract in
 * abi/burst_shim.h) answers open("/dev/infiniband/rdma_cm") with an eventfd
 * and opens one hidden control connection per such channel (HELLO first).
 * burstd serves the kernel's UCMA command ABI (<rdma/rdma_user_cm.h>) over it:
 *
 *   CM_OPEN_CHANNEL  once per connection, carries the channel's eventfd
 *                    (SCM_RIGHTS). burstd keeps the eventfd readable (counter
 *                    1) exactly while the channel has events queued, 0 when
 *                    the queue is empty. Response: the channel id (the id
 *                    MIGRATE_ID names a channel by). A second one on the same
 *                    connection: EALREADY; no descriptor: EBADF.
 *   CM_COMMAND       one UCMA command: rdma_ucm_cmd_hdr's cmd, in (in_len
 *                    bytes of the command struct after the header, as the
 *                    application wrote them) and out (hdr.out: the size of
 *                    the application's response buffer). The response
 *                    carries the bytes the kernel would copy to the command's
 *                    `response` pointer (out_len of them, at most the
 *                    request's out_len); an error is the header alone with the
 *                    errno ucma_write would return (EAGAIN: GET_EVENT on an
 *                    empty queue; the shim waits on the eventfd). Before
 *                    CM_OPEN_CHANNEL: EBADF.
 *
 * Two commands carry something the kernel would read from the application's
 * memory or file table; the shim resolves it before sending:
 *   SET_OPTION  `optval` is a pointer: the optlen bytes it points to follow
 *               the struct rdma_ucm_set_option in `in` (in_len = 24 + optlen).
 *   MIGRATE_ID  `fd` is the target channel's descriptor: the shim replaces it
 *               with that channel's id (CM_OPEN_CHANNEL's response).
 * The connection closing (close() of the channel fd, or the process dying)
 * destroys the channel's ids as ucma_close does.
 *
 * Events pushed (CM_OPEN_CHANNEL flags BURST_CTL_CM_OPEN_PUSH; docs/cm.md "Relay
 * fast path"): the descriptor is then not an eventfd but burstd's end of a
 * socketpair(AF_UNIX, SOCK_SEQPACKET) whose other end is the application's
 * channel fd. burstd takes every event off the channel's queue as it is
 * queued and sends it there as one struct burst_ctl_cm_event (the GET_EVENT
 * response bytes, a sequence number per channel from 1), so the channel fd is
 * readable exactly while events wait, and the shim answers GET_EVENT with one
 * recv() and no round trip. At most BURST_CTL_CM_PUSH_WINDOW events are pushed
 * and not yet acknowledged; the rest wait in burstd's queue. The commands of
 * such a channel are CM_COMMAND_EX (op 44), which carries `consumed`: the
 * sequence number of the last event the application took (an
 * acknowledgement). What the kernel does with events not yet taken, burstd
 * does with the pushed, unacknowledged ones:
 *   DESTROY_ID / LEAVE_MCAST  the id's (mc's) unacknowledged events are no
 *               longer reported: events_reported excludes them, a
 *               CONNECT_REQUEST's new id is destroyed (its REQ rejected), and
 *               their sequence numbers are listed in the response (entries[]):
 *               the shim drops them when it meets them in the socket.
 *   MIGRATE_ID  the id's unacknowledged events of the source channel (whose
 *               `consumed` the shim sends as source_consumed) are pushed again
 *               on the target channel; the response lists their sequence
 *               numbers on the source channel, dropped there.
 * The shim holds the channel's event lock across such a command, so
 * `consumed` is exact. An event flagged BURST_CTL_CM_EVENT_ACK_ME asks for an
 * acknowledgement even if no command follows (cmd BURST_CTL_CM_CMD_ACK: no
 * UCMA command, only `consumed`).
 *
 * INIT_QP_ATTR ahead (cmd BURST_CTL_CM_CMD_INIT_QP_ATTRS, in: struct
 * rdma_ucm_init_qp_attr): INIT_QP_ATTR for qp_state and then for every later
 * state up to RTS, as burstd would answer each now; out[] holds one struct
 * ib_uverbs_qp_attr (BURST_CTL_CM_QP_ATTR_BYTES) per state answered, in order,
 * stopping at the first later state that fails (the first one's error is the
 * command's). The shim keeps the later ones and answers librdmacm's
 * INIT_QP_ATTR for them without a round trip until a command that may change
 * the id is written (docs/cm.md "Fewer round trips"). A burstd without it: ENOSYS.
 *
 * Op 45 is reserved for the connection manager.
 */
#ifndef BURST_ABI_BURST_CTL_CM_H_
#define BURST_ABI_BURST_CTL_CM_H_

#include <stdint.h>

#include "abi/burst_ctl_proto.h"

#define BURST_CTL_OP_CM_OPEN_CHANNEL 42 /* request carries the channel's eventfd */
#define BURST_CTL_OP_CM_COMMAND 43
#define BURST_CTL_OP_CM_COMMAND_EX 44 /* a command of a push channel */
/* 45: reserved for the connection manager */

#define BURST_CTL_CM_OPEN_PUSH 1u /* cm_open_channel_req.flags: events pushed (see above) */
#define BURST_CTL_CM_PUSH_WINDOW 64 /* events pushed and not acknowledged, at most */
#define BURST_CTL_CM_CMD_ACK 0xFFFFFFFFu /* cm_command_ex_req.cmd: acknowledgement only */
#define BURST_CTL_CM_CMD_INIT_QP_ATTRS 0xFFFFFFFEu /* cm_command_ex_req.cmd: see above */
#define BURST_CTL_CM_QP_ATTR_BYTES 144 /* sizeof(struct ib_uverbs_qp_attr) */
#define BURST_CTL_CM_EVENT_BYTES 336     /* sizeof(struct rdma_ucm_event_resp) */
#define BURST_CTL_CM_EVENT_ACK_ME 1u     /* burst_ctl_cm_event.flags */

/* The largest UCMA command and response relayed: CONNECT / ACCEPT are 296
 * bytes (256 bytes of private data + ECE), GET_EVENT's response 336 bytes,
 * QUERY(PATH) 8 + 72 per path; SET_OPTION's value follows its struct. */
#define BURST_CTL_CM_MAX_IN 1024
#define BURST_CTL_CM_MAX_OUT 1024
/* The UCMA ABI served (the kernel's RDMA_USER_CM_ABI_VERSION). */
#define BURST_CTL_CM_ABI_VERSION 4

struct burst_ctl_cm_open_channel_req {
  struct burst_ctl_hdr hdr;
  uint32_t flags; /* 0 */
  uint32_t reserved;
};

struct burst_ctl_cm_open_channel_resp {
  struct burst_ctl_hdr hdr;
  uint32_t channel_id;  /* what MIGRATE_ID's fd field is replaced with */
  uint32_t abi_version; /* BURST_CTL_CM_ABI_VERSION */
};

struct burst_ctl_cm_command_req {
  struct burst_ctl_hdr hdr;
  uint32_t cmd;     /* rdma_ucm_cmd_hdr.cmd (RDMA_USER_CM_CMD_*) */
  uint16_t in_len;  /* bytes of in[] used, <= BURST_CTL_CM_MAX_IN */
  uint16_t out_len; /* rdma_ucm_cmd_hdr.out, clamped to BURST_CTL_CM_MAX_OUT */
  uint8_t in[BURST_CTL_CM_MAX_IN];
};

struct burst_ctl_cm_command_resp {
  struct burst_ctl_hdr hdr;
  uint32_t out_len; /* bytes of out[] for the command's response pointer (0: none) */
  uint32_t reserved;
  uint8_t out[BURST_CTL_CM_MAX_OUT];
};

/* CM_COMMAND_EX: CM_COMMAND with the acknowledgement of pushed events. */
struct burst_ctl_cm_command_ex_req {
  struct burst_ctl_hdr hdr;
  uint32_t cmd; /* rdma_ucm_cmd_hdr.cmd, or BURST_CTL_CM_CMD_ACK */
  uint16_t in_len;
  uint16_t out_len;
  uint64_t consumed;        /* the last event taken from this channel (0: none) */
  uint64_t source_consumed; /* MIGRATE_ID: the same for the channel the id leaves */
  uint8_t in[BURST_CTL_CM_MAX_IN];
};

/* Its response (a list op: entries[] has count sequence numbers). */
struct burst_ctl_cm_command_ex_resp {
  struct burst_ctl_hdr hdr;
  uint32_t out_len; /* bytes of out[] for the command's response pointer */
  uint32_t count;   /* pushed events to drop (DESTROY_ID, LEAVE_MCAST, MIGRATE_ID) */
  uint8_t out[BURST_CTL_CM_MAX_OUT];
  uint64_t entries[2 * BURST_CTL_CM_PUSH_WINDOW];
};

/* One pushed event, one SOCK_SEQPACKET message. */
struct burst_ctl_cm_event {
  uint64_t seq;   /* per channel, from 1 */
  uint32_t flags; /* BURST_CTL_CM_EVENT_ACK_ME */
  uint32_t len;   /* bytes of resp[] */
  uint8_t resp[BURST_CTL_CM_EVENT_BYTES]; /* struct rdma_ucm_event_resp */
};

BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_cm_open_channel_req) == 32, "cm_open_channel_req");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_cm_command_ex_req, in) == 48, "cm_command_ex_req.in");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_cm_command_ex_resp, entries) == 32 + BURST_CTL_CM_MAX_OUT,
                        "cm_command_ex_resp.entries");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_cm_event) == 16 + BURST_CTL_CM_EVENT_BYTES, "cm_event");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_cm_open_channel_resp) == 32,
                        "cm_open_channel_resp");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_cm_command_req, in) == 32, "cm_command_req.in");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_cm_command_req) == 32 + BURST_CTL_CM_MAX_IN,
                        "cm_command_req size");
BURST_CTL_STATIC_ASSERT(offsetof(struct burst_ctl_cm_command_resp, out) == 32,
                        "cm_command_resp.out");
BURST_CTL_STATIC_ASSERT(sizeof(struct burst_ctl_cm_command_resp) == 32 + BURST_CTL_CM_MAX_OUT,
                        "cm_command_resp size");

#endif /* BURST_ABI_BURST_CTL_CM_H_ */
