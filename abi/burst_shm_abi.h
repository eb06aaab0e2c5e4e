/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * burst shared-memory ABI: everything that lives in memory shared between an
 * application process (the verbs provider) and burstd. Plain C11 (also valid
 * C++20): fixed-width integers, explicit padding, offsets instead of pointers,
 * every size and offset checked by a static assertion at the end of the file.
 *
 * burstd creates each region (a memfd), fills in the headers and hands the fd
 * to the application over the control socket; both map it. Everything in a
 * region is writable by the application, so burstd never reads geometry back
 * from it: it keeps private copies of sizes and masks, masks every index,
 * checks every index against its private state and validates every field of
 * every entry after copying it out (shm/shm_ring.h, shm/wqe.h).
 *
 * QP region (one memfd per QP; CQ and SRQ regions look the same with one ring)
 *
 *   0            +--------------------------------------------------+
 *                | struct burst_shm_region (64 B)                   |
 *                |  magic "BSHM", abi_version, kind, size, handle,  |
 *                |  part_offset[0] = SQ ring, [1] = RQ ring         |
 *   part[0]      +--------------------------------------------------+
 *                | struct burst_shm_ring (192 B)                    |
 *                |  line 0: magic "BRNG", version, geometry (const) |
 *                |  line 1: producer_index   (provider -> burstd)   |
 *                |  line 2: consumer_index   (burstd -> provider)   |
 *   +entries_off +--------------------------------------------------+
 *                | entry[0] | entry[1] | ... | entry[2^log2 - 1]    |
 *                |  SQ: burst_shm_send_wqe (64 B) + SGEs or inline  |
 *   part[1]      +--------------------------------------------------+
 *                | struct burst_shm_ring (RQ) + entries             |
 *                |  RQ: burst_shm_recv_wqe (16 B) + SGEs            |
 *                +--------------------------------------------------+
 *   CQ region: one ring of struct burst_shm_cqe (64 B); burstd produces,
 *   the provider consumes.
 *
 * Doorbell region (one memfd per burstd worker, mapped by every application
 * with a QP or CQ on that worker)
 *
 *   0            +--------------------------------------------------+
 *                | struct burst_shm_region (kind DOORBELL)          |
 *   part[0]      +--------------------------------------------------+
 *                | struct burst_shm_doorbell (192 B)                |
 *                |  line 0: magic "BRDB", geometry (const)          |
 *                |  line 1: head (hint; all producers, CAS)         |
 *                |  line 2: tail, counters (burstd, diagnostics)    |
 *   +slots_off   +--------------------------------------------------+
 *                | uint64_t slot[2^log2_slots]  (state+lap+record)  |
 *                +--------------------------------------------------+
 *
 * Rings (SQ, RQ, SRQ, CQ): single producer, single consumer. Indices are
 * free-running uint32_t; entry = index & (num_entries - 1); the ring holds
 * num_entries entries (full when producer - consumer == num_entries). The
 * producer fills entries, then stores producer_index with release; the
 * consumer loads it with acquire, copies entries out, then stores
 * consumer_index with release. A side that sees the peer's index move
 * backwards or more than num_entries ahead of its own faults the ring.
 *
 * Doorbell queue: multi-producer (every application on the worker), single
 * consumer (the worker). A record says "look at this queue": burstd then reads
 * the authoritative producer index from that queue's own ring, so a doorbell is
 * a hint and a forged or lost one costs at most a spurious or delayed poll.
 * Each slot is one 64-bit word holding state, lap and the whole record, so that
 * a record is published by one compare-and-swap and a producer that lost its
 * reservation can never write into a slot that has been handed to someone else.
 *
 *   slot word:  63..62 state | 61..48 lap | 47..32 value | 31..28 flags
 *               | 27..24 kind | 23..0 handle
 *   position p (uint64_t, never wraps) lives in slot p & (N - 1) with
 *   lap(p) = (p >> log2_slots) mod 2^14.
 *
 *   Slot state diagram for position p, L = lap(p) (every transition is a CAS
 *   on the slot word, except burstd's store after delivering):
 *
 *               producer: reserve          producer: commit (release)
 *     FREE(L) -------------------> RESERVED(L) -------------------> COMMITTED(L, rec)
 *        |                             |                                  |
 *        | burstd: a hole below        | burstd: reclaim_timeout_ns       | burstd: load
 *        | head for the timeout        | passed (owner dead or stalled);  | (acquire),
 *        | (only via corruption)       | a late commit now fails: stale   | deliver, store
 *        v                             v                                  v
 *     FREE(L + 1) <==================================================== FREE(L + 1)
 *     = free for position p + N, the slot's next lap
 *
 *   Producer (post):
 *     1. h = head, w = slot[h & mask] (both relaxed loads).
 *        - w == FREE(lap h): CAS w -> RESERVED(lap h). Success = position h is
 *          ours; then CAS head h -> h + 1 (failure is fine: someone helped).
 *        - w is RESERVED/COMMITTED(lap h): its owner has not advanced head yet;
 *          help with CAS head h -> h + 1, retry.
 *        - w carries lap(h) - 1: position h - N not consumed yet: FULL.
 *        - anything else (head lags or was corrupted): CAS head h -> h + 1, retry.
 *        At most BURST_SHM_DB_MAX_ATTEMPTS rounds, then BUSY.
 *     2. CAS RESERVED(L) -> COMMITTED(L, record) (release). If it fails, burstd
 *        reclaimed the reservation: the record is stale, nothing was written,
 *        and the producer is told so (and posts again).
 *   Consumer (burstd worker, private tail t, L = lap(t)):
 *     - COMMITTED(L): deliver, store FREE(L + 1), t++.
 *     - FREE(L) and head in {t - 1, t}: empty.
 *     - FREE(L) and head outside [t - 1, t + N]: head corrupted; CAS head -> t.
 *     - RESERVED(L), FREE(L) with head ahead, or any other word: not
 *       deliverable. The first time position t is seen like that, note the
 *       time; once reclaim_timeout_ns has passed, CAS the word to FREE(L + 1)
 *       (counted in `reclaimed`) and go on with t + 1.
 *   Orderings: the producer's commit CAS is a release and burstd's slot load an
 *   acquire, so a ring's producer_index stored before the doorbell is visible to
 *   burstd once it sees the record. Everything else is in the one slot word
 *   (single-location coherence) and needs no ordering; the head hint is relaxed.
 *   Cost of a producer that dies (or stalls) between reserve and commit: its
 *   slot blocks in-order delivery on that worker for at most reclaim_timeout_ns
 *   (plus one worker loop; each stuck position has its own timer, so k dead
 *   reservations in a row cost up to k timeouts); records behind it wait, none
 *   is lost, and no capacity is lost afterwards. A stalled producer that
 *   commits late gets "stale" and posts again. A lap collision (a producer
 *   stalled for 2^14 laps) can only make its late commit land in the current
 *   reservation of that slot: the record is still delivered exactly once and
 *   the current owner is told "stale", so no record is lost or duplicated.
 *   These guarantees (exactly once, in each producer's order) hold while every
 *   writer follows the protocol. Any application on the worker can scribble on
 *   the doorbell page; then burstd still never reads outside it, every call is
 *   bounded, garbage costs at most one timeout per stuck position (a run of
 *   holes one timeout in all), a head outside the window is reset, and the
 *   queue returns to the guarantees once the scribbling stops. Since records
 *   are hints, the cost is delay, never a wrong access.
 */
#ifndef BURST_SHM_ABI_H
#define BURST_SHM_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "abi/burst_limits.h"

#ifdef __cplusplus
#define BURST_SHM_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define BURST_SHM_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* Bumped on any change to a structure, an encoding or the doorbell protocol. */
#define BURST_SHM_ABI_VERSION 2

#define BURST_SHM_CACHE_LINE 64

#define BURST_SHM_REGION_MAGIC 0x4d485342u   /* "BSHM" in memory order */
#define BURST_SHM_RING_MAGIC 0x474e5242u     /* "BRNG" */
#define BURST_SHM_DOORBELL_MAGIC 0x42445242u /* "BRDB" */

/* Layout bounds (the device limits, SGEs and inline bytes per work request
 * included, are in abi/burst_limits.h; checked against these at the end). */
#define BURST_SHM_MAX_LOG2_ENTRIES 16  /* at most 65536 entries per ring */
#define BURST_SHM_MAX_LOG2_SLOTS 16    /* at most 65536 doorbell slots */
#define BURST_SHM_MAX_ENTRY_SIZE 1024  /* bytes, a power of two */

/* ------------------------------------------------------------------------ */
/* Region header, at offset 0 of every memfd.                                */

enum burst_shm_region_kind {
  BURST_SHM_REGION_QP = 1,       /* part[0] SQ ring, part[1] RQ ring (0 with an SRQ) */
  BURST_SHM_REGION_CQ = 2,       /* part[0] CQ ring */
  BURST_SHM_REGION_SRQ = 3,      /* part[0] SRQ ring */
  BURST_SHM_REGION_DOORBELL = 4, /* part[0] doorbell queue */
};

#define BURST_SHM_REGION_MAX_PARTS 4

struct burst_shm_region {
  uint32_t magic;         /* BURST_SHM_REGION_MAGIC */
  uint16_t abi_version;   /* BURST_SHM_ABI_VERSION */
  uint16_t kind;          /* enum burst_shm_region_kind */
  uint64_t size;          /* bytes in the region (the memfd's size) */
  uint32_t handle;        /* QPN, CQN, SRQN, or worker index */
  uint32_t num_parts;     /* valid entries in part_offset */
  uint64_t part_offset[BURST_SHM_REGION_MAX_PARTS]; /* from the region start; 0 = absent */
  uint8_t reserved[8];
};

/* ------------------------------------------------------------------------ */
/* SPSC ring header (SQ, RQ, SRQ, CQ), 64-byte aligned inside its region.    */

enum burst_shm_ring_kind {
  BURST_SHM_RING_SQ = 1,  /* provider produces burst_shm_send_wqe, burstd consumes */
  BURST_SHM_RING_RQ = 2,  /* provider produces burst_shm_recv_wqe, burstd consumes */
  BURST_SHM_RING_SRQ = 3, /* same entries as RQ */
  BURST_SHM_RING_CQ = 4,  /* burstd produces burst_shm_cqe, provider consumes */
};

enum burst_shm_ring_status {
  BURST_SHM_RING_OK = 0,
  BURST_SHM_RING_ERROR = 1, /* burstd stopped using the ring; see error_reason */
};

enum burst_shm_ring_error {
  BURST_SHM_RING_ERR_NONE = 0,
  BURST_SHM_RING_ERR_INDEX_BACKWARDS = 1, /* a peer index moved backwards */
  BURST_SHM_RING_ERR_INDEX_OVERRUN = 2,   /* a peer index moved past the ring size */
  BURST_SHM_RING_ERR_BAD_ENTRY = 3,       /* an entry failed validation */
  BURST_SHM_RING_ERR_OVERFLOW = 4,        /* CQ full when burstd had a completion */
  BURST_SHM_RING_ERR_REVOKED = 5,         /* the client was revoked (exec, new credentials) */
};

struct burst_shm_ring {
  /* Line 0: written by burstd before the region is handed out, constant
   * afterwards except status/error_reason. Read by the provider; never read
   * back by burstd (it keeps private copies). */
  uint32_t magic;          /* BURST_SHM_RING_MAGIC */
  uint16_t abi_version;    /* BURST_SHM_ABI_VERSION */
  uint8_t kind;            /* enum burst_shm_ring_kind */
  uint8_t log2_entries;    /* num_entries == 1 << log2_entries */
  uint32_t num_entries;
  uint32_t entry_size;     /* bytes, power of two, multiple of 16 */
  uint64_t entries_offset; /* from the start of this header, multiple of 64 */
  uint32_t handle;         /* QPN, CQN or SRQN */
  uint32_t max_sge;        /* SGEs an entry may carry (SQ, RQ, SRQ) */
  uint32_t max_inline;     /* inline bytes a send WQE may carry (SQ) */
  uint32_t status;         /* enum burst_shm_ring_status; written by burstd, read by provider */
  uint32_t error_reason;   /* enum burst_shm_ring_error; written by burstd, read by provider */
  uint8_t reserved0[20];
  /* Line 1: written by the producer side, read by the consumer side. */
  uint32_t producer_index;
  uint8_t reserved1[60];
  /* Line 2: written by the consumer side, read by the producer side. */
  uint32_t consumer_index;
  /* CQ only: the requests for a completion event (ibv_req_notify_cq), two
   * 16-bit counters in one word (BURST_SHM_ARM_*), each wrapping on its own:
   * bits 15..0 count every request, bits 31..16 the solicited-only ones among
   * them (the provider updates the word with a compare-and-swap, so the low
   * half never carries into the high one). burstd compares the word with the
   * last one it answered: if any request since was for the next completion,
   * the first completion it writes after seeing it raises one event (in the
   * CQ's channel); if all were solicited-only, the first solicited completion
   * (a receive whose message carried the BTH SE bit) or unsuccessful one does
   * (IBA 11.4.2.2; "next" wins when both were asked). An event answers every
   * request seen so far. The provider's compare-and-swap is sequentially
   * consistent and burstd puts a seq_cst fence between publishing completions
   * and reading the word: an application that arms and then polls either
   * finds the completion or gets the event. */
  uint32_t arm_sequence;
  uint8_t reserved2[56];
};

#define BURST_SHM_ARM_ALL_MASK 0xffffu   /* arm_sequence: requests, any kind */
#define BURST_SHM_ARM_SOLICITED_SHIFT 16 /* arm_sequence: solicited-only requests */

/* ------------------------------------------------------------------------ */
/* Ring entries.                                                             */

struct burst_shm_sge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

/* Send queue entry: this 64-byte header, then the payload area up to
 * entry_size: num_sge struct burst_shm_sge, or (IBV_SEND_INLINE) inline_len
 * bytes of data. Numeric values are libibverbs' (core/verbs.h mirrors them).
 * Local operations carry no payload (num_sge 0, no inline) and reuse fields:
 *   IBV_WR_LOCAL_INV  imm_data = the rkey to invalidate (MR or type 2 MW)
 *   IBV_WR_BIND_MW    imm_data = the window's current rkey, rkey = its new rkey,
 *                     remote_addr = addr, compare_add = length, remote_qpn =
 *                     the MR's lkey, remote_qkey = the window's IBV_ACCESS_* */
struct burst_shm_send_wqe {
  uint64_t wr_id;
  uint8_t opcode;        /* IBV_WR_* */
  uint8_t reserved0;
  uint16_t num_sge;      /* SGEs in the payload area; 0 with IBV_SEND_INLINE */
  uint32_t send_flags;   /* IBV_SEND_* */
  uint32_t inline_len;   /* bytes of inline data in the payload area */
  uint32_t imm_data;     /* host order: immediate (*_WITH_IMM), or the rkey to
                            invalidate (SEND_WITH_INV) */
  uint64_t remote_addr;  /* RDMA and atomic */
  uint64_t compare_add;  /* atomic */
  uint64_t swap;         /* atomic compare-and-swap */
  uint32_t rkey;         /* RDMA and atomic */
  uint32_t ah_handle;    /* UD: address handle created through burstd */
  uint32_t remote_qpn;   /* UD */
  uint32_t remote_qkey;  /* UD */
};
#define BURST_SHM_SEND_WQE_PAYLOAD 64 /* offset of the payload area */
#define BURST_SHM_SEND_INLINE 0x8u    /* IBV_SEND_INLINE in send_flags: the payload is data */

/* Receive queue (RQ, SRQ) entry: this 16-byte header, then num_sge SGEs. */
struct burst_shm_recv_wqe {
  uint64_t wr_id;
  uint32_t num_sge;
  uint32_t reserved0;
};
#define BURST_SHM_RECV_WQE_PAYLOAD 16

/* Completion queue entry (the fields of struct ibv_wc). */
struct burst_shm_cqe {
  uint64_t wr_id;
  uint8_t status;          /* IBV_WC_* status */
  uint8_t opcode;          /* IBV_WC_* opcode */
  uint8_t sl;
  uint8_t dlid_path_bits;
  uint32_t vendor_err;
  uint32_t byte_len;
  uint32_t imm_data;       /* host order; the invalidated rkey with IBV_WC_WITH_INV */
  uint32_t qp_num;
  uint32_t src_qp;
  uint32_t wc_flags;       /* IBV_WC_GRH, IBV_WC_WITH_IMM, IBV_WC_WITH_INV */
  uint16_t pkey_index;
  uint16_t slid;
  uint8_t reserved0[24];
};

/* ------------------------------------------------------------------------ */
/* Doorbell queue (per burstd worker). Protocol: see the top of this file.   */

enum burst_shm_db_kind {
  BURST_SHM_DB_NONE = 0, /* never valid in a committed record */
  BURST_SHM_DB_SQ = 1,   /* handle = QPN: new send WQEs */
  BURST_SHM_DB_RQ = 2,   /* handle = QPN: new receive WQEs */
  BURST_SHM_DB_SRQ = 3,  /* handle = SRQN: new receive WQEs */
  BURST_SHM_DB_CQ_ARM = 4, /* reserved: CQs are armed through burst_shm_ring.arm_sequence */
  BURST_SHM_DB_KIND_MAX = 4,
};

#define BURST_SHM_DB_FLAG_SOLICITED 0x1u /* CQ_ARM: solicited completions only */

enum burst_shm_db_state {
  BURST_SHM_DB_FREE = 0,      /* free for the position of its lap */
  BURST_SHM_DB_RESERVED = 1,  /* a producer owns the position, record not written */
  BURST_SHM_DB_COMMITTED = 2, /* record ready for burstd */
  BURST_SHM_DB_INVALID = 3,   /* never written by a correct party */
};

#define BURST_SHM_DB_HANDLE_SHIFT 0
#define BURST_SHM_DB_HANDLE_BITS 24
#define BURST_SHM_DB_KIND_SHIFT 24
#define BURST_SHM_DB_KIND_BITS 4
#define BURST_SHM_DB_FLAGS_SHIFT 28
#define BURST_SHM_DB_FLAGS_BITS 4
#define BURST_SHM_DB_VALUE_SHIFT 32 /* low 16 bits of the new producer index (hint) */
#define BURST_SHM_DB_VALUE_BITS 16
#define BURST_SHM_DB_LAP_SHIFT 48
#define BURST_SHM_DB_LAP_BITS 14
#define BURST_SHM_DB_STATE_SHIFT 62
#define BURST_SHM_DB_STATE_BITS 2

/* Producer rounds before a post gives up with BUSY (reached only under heavy
 * contention or with a corrupted head). */
#define BURST_SHM_DB_MAX_ATTEMPTS 256

struct burst_shm_doorbell {
  /* Line 0: written by burstd before the region is handed out, constant. */
  uint32_t magic;              /* BURST_SHM_DOORBELL_MAGIC */
  uint16_t abi_version;        /* BURST_SHM_ABI_VERSION */
  uint8_t log2_slots;          /* num_slots == 1 << log2_slots */
  uint8_t reserved0;
  uint32_t num_slots;
  uint32_t worker;             /* index of the burstd worker that consumes it */
  uint64_t slots_offset;       /* from the start of this header, multiple of 64 */
  uint64_t reclaim_timeout_ns; /* informative: burstd reclaims reservations older than this */
  /* Written by burstd (rarely: when its worker goes to sleep and wakes up),
   * read by producers after every post: when non-zero, the producer writes 1
   * to the worker's wake-up eventfd (sent with MAP_DOORBELL). Both sides put a
   * sequentially consistent fence between their store (record / flag) and
   * their load (flag / head), so a record is never left behind a sleeping
   * worker. The only system call on the posting path, and only when idle. */
  uint32_t need_wakeup;
  uint8_t reserved1[28];
  /* Line 1: written (CAS) and read by every producer, read by burstd. A hint. */
  uint64_t head;
  uint8_t reserved2[56];
  /* Line 2: written by burstd, read by diagnostics only. */
  uint64_t tail;               /* next position burstd reads */
  uint64_t reclaimed;          /* slots burstd skipped after the timeout */
  uint8_t reserved3[48];
};

/* ------------------------------------------------------------------------ */
/* Layout checks.                                                            */

#define BURST_SHM_CHECK(type, field, off) \
  BURST_SHM_STATIC_ASSERT(offsetof(struct type, field) == (off), #type "." #field)

BURST_SHM_STATIC_ASSERT(sizeof(struct burst_shm_region) == 64, "region header size");
BURST_SHM_CHECK(burst_shm_region, magic, 0);
BURST_SHM_CHECK(burst_shm_region, abi_version, 4);
BURST_SHM_CHECK(burst_shm_region, kind, 6);
BURST_SHM_CHECK(burst_shm_region, size, 8);
BURST_SHM_CHECK(burst_shm_region, handle, 16);
BURST_SHM_CHECK(burst_shm_region, num_parts, 20);
BURST_SHM_CHECK(burst_shm_region, part_offset, 24);
BURST_SHM_CHECK(burst_shm_region, reserved, 56);

BURST_SHM_STATIC_ASSERT(sizeof(struct burst_shm_ring) == 3 * BURST_SHM_CACHE_LINE, "ring size");
BURST_SHM_CHECK(burst_shm_ring, magic, 0);
BURST_SHM_CHECK(burst_shm_ring, abi_version, 4);
BURST_SHM_CHECK(burst_shm_ring, kind, 6);
BURST_SHM_CHECK(burst_shm_ring, log2_entries, 7);
BURST_SHM_CHECK(burst_shm_ring, num_entries, 8);
BURST_SHM_CHECK(burst_shm_ring, entry_size, 12);
BURST_SHM_CHECK(burst_shm_ring, entries_offset, 16);
BURST_SHM_CHECK(burst_shm_ring, handle, 24);
BURST_SHM_CHECK(burst_shm_ring, max_sge, 28);
BURST_SHM_CHECK(burst_shm_ring, max_inline, 32);
BURST_SHM_CHECK(burst_shm_ring, status, 36);
BURST_SHM_CHECK(burst_shm_ring, error_reason, 40);
BURST_SHM_CHECK(burst_shm_ring, reserved0, 44);
BURST_SHM_CHECK(burst_shm_ring, producer_index, 64);
BURST_SHM_CHECK(burst_shm_ring, consumer_index, 128);
BURST_SHM_CHECK(burst_shm_ring, arm_sequence, 132);

BURST_SHM_STATIC_ASSERT(sizeof(struct burst_shm_sge) == 16, "sge size");
BURST_SHM_CHECK(burst_shm_sge, addr, 0);
BURST_SHM_CHECK(burst_shm_sge, length, 8);
BURST_SHM_CHECK(burst_shm_sge, lkey, 12);

BURST_SHM_STATIC_ASSERT(sizeof(struct burst_shm_send_wqe) == BURST_SHM_SEND_WQE_PAYLOAD,
                        "send wqe header size");
BURST_SHM_CHECK(burst_shm_send_wqe, wr_id, 0);
BURST_SHM_CHECK(burst_shm_send_wqe, opcode, 8);
BURST_SHM_CHECK(burst_shm_send_wqe, num_sge, 10);
BURST_SHM_CHECK(burst_shm_send_wqe, send_flags, 12);
BURST_SHM_CHECK(burst_shm_send_wqe, inline_len, 16);
BURST_SHM_CHECK(burst_shm_send_wqe, imm_data, 20);
BURST_SHM_CHECK(burst_shm_send_wqe, remote_addr, 24);
BURST_SHM_CHECK(burst_shm_send_wqe, compare_add, 32);
BURST_SHM_CHECK(burst_shm_send_wqe, swap, 40);
BURST_SHM_CHECK(burst_shm_send_wqe, rkey, 48);
BURST_SHM_CHECK(burst_shm_send_wqe, ah_handle, 52);
BURST_SHM_CHECK(burst_shm_send_wqe, remote_qpn, 56);
BURST_SHM_CHECK(burst_shm_send_wqe, remote_qkey, 60);
BURST_SHM_STATIC_ASSERT(BURST_SHM_SEND_WQE_PAYLOAD + BURST_MAX_SGE * 16 <=
                            BURST_SHM_MAX_ENTRY_SIZE &&
                        BURST_SHM_SEND_WQE_PAYLOAD + BURST_MAX_INLINE_DATA <=
                            BURST_SHM_MAX_ENTRY_SIZE,
                        "largest send WQE fits the largest entry");
BURST_SHM_STATIC_ASSERT(BURST_SHM_RECV_WQE_PAYLOAD + BURST_MAX_SGE * 16 <=
                            BURST_SHM_MAX_ENTRY_SIZE,
                        "largest receive WQE fits the largest entry");
BURST_SHM_STATIC_ASSERT(BURST_MAX_QP_WR <= (1u << BURST_SHM_MAX_LOG2_ENTRIES) &&
                            BURST_MAX_SRQ_WR <= (1u << BURST_SHM_MAX_LOG2_ENTRIES) &&
                            BURST_MAX_CQE <= (1u << BURST_SHM_MAX_LOG2_ENTRIES),
                        "the largest queue of each kind fits a ring");

BURST_SHM_STATIC_ASSERT(sizeof(struct burst_shm_recv_wqe) == BURST_SHM_RECV_WQE_PAYLOAD,
                        "recv wqe header size");
BURST_SHM_CHECK(burst_shm_recv_wqe, wr_id, 0);
BURST_SHM_CHECK(burst_shm_recv_wqe, num_sge, 8);

BURST_SHM_STATIC_ASSERT(sizeof(struct burst_shm_cqe) == 64, "cqe size");
BURST_SHM_CHECK(burst_shm_cqe, wr_id, 0);
BURST_SHM_CHECK(burst_shm_cqe, status, 8);
BURST_SHM_CHECK(burst_shm_cqe, opcode, 9);
BURST_SHM_CHECK(burst_shm_cqe, sl, 10);
BURST_SHM_CHECK(burst_shm_cqe, dlid_path_bits, 11);
BURST_SHM_CHECK(burst_shm_cqe, vendor_err, 12);
BURST_SHM_CHECK(burst_shm_cqe, byte_len, 16);
BURST_SHM_CHECK(burst_shm_cqe, imm_data, 20);
BURST_SHM_CHECK(burst_shm_cqe, qp_num, 24);
BURST_SHM_CHECK(burst_shm_cqe, src_qp, 28);
BURST_SHM_CHECK(burst_shm_cqe, wc_flags, 32);
BURST_SHM_CHECK(burst_shm_cqe, pkey_index, 36);
BURST_SHM_CHECK(burst_shm_cqe, slid, 38);
BURST_SHM_CHECK(burst_shm_cqe, reserved0, 40);

BURST_SHM_STATIC_ASSERT(sizeof(struct burst_shm_doorbell) == 3 * BURST_SHM_CACHE_LINE,
                        "doorbell header size");
BURST_SHM_CHECK(burst_shm_doorbell, magic, 0);
BURST_SHM_CHECK(burst_shm_doorbell, abi_version, 4);
BURST_SHM_CHECK(burst_shm_doorbell, log2_slots, 6);
BURST_SHM_CHECK(burst_shm_doorbell, num_slots, 8);
BURST_SHM_CHECK(burst_shm_doorbell, worker, 12);
BURST_SHM_CHECK(burst_shm_doorbell, slots_offset, 16);
BURST_SHM_CHECK(burst_shm_doorbell, reclaim_timeout_ns, 24);
BURST_SHM_CHECK(burst_shm_doorbell, need_wakeup, 32);
BURST_SHM_CHECK(burst_shm_doorbell, head, 64);
BURST_SHM_CHECK(burst_shm_doorbell, tail, 128);
BURST_SHM_CHECK(burst_shm_doorbell, reclaimed, 136);
BURST_SHM_STATIC_ASSERT(BURST_SHM_DB_HANDLE_BITS + BURST_SHM_DB_KIND_BITS +
                                BURST_SHM_DB_FLAGS_BITS + BURST_SHM_DB_VALUE_BITS +
                                BURST_SHM_DB_LAP_BITS + BURST_SHM_DB_STATE_BITS == 64,
                        "doorbell slot word is exactly 64 bits");
BURST_SHM_STATIC_ASSERT(BURST_SHM_DB_HANDLE_SHIFT + BURST_SHM_DB_HANDLE_BITS ==
                                BURST_SHM_DB_KIND_SHIFT &&
                            BURST_SHM_DB_KIND_SHIFT + BURST_SHM_DB_KIND_BITS ==
                                BURST_SHM_DB_FLAGS_SHIFT &&
                            BURST_SHM_DB_FLAGS_SHIFT + BURST_SHM_DB_FLAGS_BITS ==
                                BURST_SHM_DB_VALUE_SHIFT &&
                            BURST_SHM_DB_VALUE_SHIFT + BURST_SHM_DB_VALUE_BITS ==
                                BURST_SHM_DB_LAP_SHIFT &&
                            BURST_SHM_DB_LAP_SHIFT + BURST_SHM_DB_LAP_BITS ==
                                BURST_SHM_DB_STATE_SHIFT,
                        "slot word fields are contiguous, in order");
BURST_SHM_STATIC_ASSERT(BURST_SHM_DB_KIND_MAX < (1 << BURST_SHM_DB_KIND_BITS), "kind fits");

#undef BURST_SHM_CHECK

#endif /* BURST_SHM_ABI_H */
