/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Per-QP state of the transport, in plain structs: the send queue with the
// requester/completer state, the receive queue with the responder state, and
// the attributes set through modify_qp. Every ring is allocated at create_qp;
// nothing here allocates on the fast path.
//
// Threading: a QP belongs to one engine (one worker); every field is written and
// read by that worker only.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/mr.h"
#include "core/status.h"
#include "core/verbs.h"
#include "core/wire/frame.h"
#include "core/wire/psn.h"

namespace burst::core {

using wire::Psn;

// Device limits (abi/burst_limits.h) under the names the transport uses.
constexpr uint32_t kMaxRdAtomic = BURST_MAX_RD_ATOMIC;      // max_rd_atomic, max_dest_rd_atomic
constexpr uint32_t kMaxQpWr = BURST_MAX_QP_WR;              // max_send_wr, max_recv_wr
constexpr uint32_t kMaxInlineData = BURST_MAX_INLINE_DATA;  // max_inline_data
constexpr uint32_t kMaxMessageBytes = BURST_MAX_MSG_SIZE;   // IBA: 2^31 bytes per message
constexpr uint32_t kMaxSrqWr = BURST_MAX_SRQ_WR;            // SRQ max_wr
constexpr uint32_t kMaxSrqSge = BURST_MAX_SRQ_SGE;          // SRQ max_sge
static_assert(kMaxRdAtomic <= 255 && kMaxSrqSge <= kMaxSge,
              "RD atomic counts fit a byte; SRQ entries are receive WRs");

// IBA RNR NAK timer (9.7.5.2.8): encoded value -> wait in nanoseconds.
uint64_t rnr_timer_ns(uint8_t code);
// IBA local ACK timeout: 4.096 us * 2^timeout; 0 means infinite (returns 0).
uint64_t ack_timeout_ns(uint8_t timeout);

struct SendWqe {
  SendWr wr;
  uint32_t length = 0;  // total bytes of the message
  uint32_t npkts = 0;   // PSNs the message consumes (READ: response packets)
  Psn first_psn;        // valid once `assigned`
  Psn last_psn;
  bool assigned = false;   // PSNs assigned (the first packet went out)
  bool rd_atomic = false;  // READ or atomic: counts against max_rd_atomic
  bool inline_data = false;
  bool signaled = false;
  uint64_t atomic_orig = 0;  // source of the copy of the atomic result into the local SGE
  WcStatus local_err = WcStatus::kSuccess;  // found before sending; completes once it is the oldest
  // Set when the SGEs are validated (first packet) for a WQE with one SGE: its
  // host address (in sge0_space) and the MR check, so that gather needs no
  // lookup per packet.
  const uint8_t* sge0_host = nullptr;
  MrRef sge0_ref;
  uint32_t sge0_space = MemSpaces::kLocal;
};

struct SendQueue {
  std::vector<SendWqe> ring;
  uint32_t mask = 0;
  uint32_t head = 0;                // next slot to post (free-running)
  uint32_t tail = 0;                // oldest WQE not completed
  uint32_t assigned = 0;            // WQEs [tail, assigned) have PSNs
  uint32_t cursor = 0;              // WQE of the next packet to (re)transmit
  uint32_t cursor_pkt = 0;          // packet index inside that WQE
  std::vector<uint8_t> inline_buf;  // max_inline_data bytes per slot
  uint32_t inline_stride = 0;

  uint32_t count() const { return head - tail; }
  SendWqe& at(uint32_t i) { return ring[i & mask]; }
  const SendWqe& at(uint32_t i) const { return ring[i & mask]; }
  uint8_t* inline_of(uint32_t i) { return inline_buf.data() + size_t{i & mask} * inline_stride; }
};

// A receive queue: a QP's RQ, or an SRQ's ring. A QP attached to an SRQ has a
// one-slot RQ that holds the WQE it took from the SRQ (Engine::srq_take) until
// that WQE completes; head/tail then count the WQEs it took.
struct RecvQueue {
  std::vector<RecvWr> ring;
  uint32_t mask = 0;
  uint32_t head = 0;  // next slot to post
  uint32_t tail = 0;  // oldest WQE not consumed

  uint32_t count() const { return head - tail; }
  bool empty() const { return head == tail; }
  RecvWr& front() { return ring[tail & mask]; }
};

// Requester and completer state (RC).
struct ReqState {
  Psn psn_alloc;                    // first PSN of the next WQE to be assigned
  Psn psn_hi;                       // one past the highest PSN ever transmitted
  Psn una;                          // oldest PSN not acknowledged
  Psn last_ackreq;                  // PSN of the last packet sent with AckReq
  uint32_t rd_atomic_inflight = 0;  // assigned READ/atomic WQEs not completed
  uint8_t retry_left = 0;
  uint8_t rnr_left = 0;
  uint64_t retx_deadline_ns = 0;  // transport timer; 0 = disarmed
  uint64_t rnr_until_ns = 0;      // RNR wait; 0 = not waiting
  bool oos_armed = false;         // a READ response gap already triggered a retransmit
  Psn oos_psn;                    // ... from this PSN
};

// A responder resource for one READ or atomic request (IBA 9.7.5.1.x): kept so a
// duplicate can be answered without executing the request again.
struct RdAtomicRes {
  enum Kind : uint8_t { kFree = 0, kRead, kAtomic };
  Kind kind = kFree;
  bool queued = false;  // responses waiting for transmission
  bool replay = false;  // queued for a duplicate request (the original went out already)
  Psn first_psn;
  Psn last_psn;
  uint32_t rkey = 0;
  uint64_t va = 0;
  uint32_t len = 0;
  uint64_t orig = 0;  // atomic: original value returned in the ATOMIC ACK
  // The MSN after this request: the AETH of its response carries it, not the
  // responder's MSN when the response leaves (requests accepted in the same
  // burst would otherwise be acknowledged by an earlier PSN). rxe answers each
  // request as it arrives, so its responses show the same numbers.
  uint32_t msn = 0;
  // Transmit cursor of a (re)response.
  Psn tx_psn;
  Psn tx_first_psn;  // first PSN of this (re)response: the FIRST/ONLY packet
  uint64_t tx_va = 0;
  uint32_t tx_left = 0;
};

struct RespState {
  // kWriteSpace: an RDMA WRITE into another memory space (mem_space.h), which
  // the WRITE MIDDLE fast path (rx_dispatch.cc) leaves to the general path.
  enum Msg : uint8_t { kNone = 0, kSend, kWrite, kWriteSpace };
  Psn epsn;
  uint32_t msn = 0;
  bool nak_outstanding = false;  // seq/RNR NAK sent: silence until ePSN arrives
  Msg msg = kNone;               // multi-packet message in progress
  bool rwqe_held = false;        // rq.front() belongs to the message in progress (SRQ: taken)
  uint32_t msg_bytes = 0;        // bytes received of the message in progress
  uint32_t rwqe_len = 0;         // total length of the held RWQE
  uint32_t sge_idx = 0;          // scatter cursor into the held RWQE
  uint32_t sge_off = 0;
  uint8_t* write_host = nullptr;  // where the next byte of the WRITE in progress goes
  MrRef write_ref;                // the MR range checked at its first packet
  uint32_t write_left = 0;        // bytes still to come
  uint32_t write_len = 0;         // DMA length of the WRITE in progress (WRITE_WITH_IMM byte_len)
  // The memory space write_host points into.
  uint32_t write_space = MemSpaces::kLocal;
  // Output.
  bool ack_pending = false;
  bool nak_pending = false;  // NAK (seq, RNR or fatal) waiting for transmission
  uint8_t nak_syndrome = 0;
  Psn nak_psn;
  bool fatal = false;  // error NAK queued: the QP is in ERR, only the NAK leaves
  std::array<RdAtomicRes, kMaxRdAtomic> res{};
  uint32_t res_next = 0;  // next resource to allocate (ring over max_dest_rd_atomic)
  std::array<uint8_t, kMaxRdAtomic> queue{};  // resources with responses to send, in order
  uint32_t q_head = 0;
  uint32_t q_count = 0;

  // Takes the resources q for which drop(q) holds off the response queue
  // (`queued` cleared); the others stay queued, in order.
  template <typename Pred>
  void unqueue_if(Pred drop) {
    std::array<uint8_t, kMaxRdAtomic> keep{};
    uint32_t kept = 0;
    for (uint32_t i = 0; i < q_count; ++i) {
      const uint8_t q = queue[(q_head + i) % kMaxRdAtomic];
      if (drop(q)) {
        res[q].queued = false;
      } else {
        keep[kept++] = q;
      }
    }
    q_head = 0;
    q_count = kept;
    for (uint32_t i = 0; i < kept; ++i) queue[i] = keep[i];
  }
  // The responses of the requests from `psn` on (the requester repeats those,
  // Go-Back-N); earlier ones stay queued.
  void unqueue_from(Psn psn) {
    unqueue_if([&](uint8_t q) { return !wire::psn_before(res[q].first_psn, psn); });
  }
};

struct Qp {
  bool in_use = false;
  uint32_t qpn = 0;
  uint32_t index = 0;
  QpType type = QpType::kRc;
  QpState state = QpState::kReset;
  uint32_t pd = 0;
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  uint32_t srq = 0;              // SRQ the receive WQEs come from (0: the QP's own RQ)
  bool last_wqe_queued = false;  // QPN is in the engine's last-WQE event queue
  QpCap cap;
  bool sq_sig_all = false;
  QpAttr attr;                     // attributes as last set (qp_state mirrors `state`)
  uint32_t mtu = 1024;             // path MTU in bytes
  wire::PathHeaders path{};        // RC: headers toward the connected peer
  wire::HeaderTemplate path_tmpl;  // RC: `path` prebuilt (set with it in modify_qp)
  wire::FrameTemplate req_tmpl;    // RC: headers of the last request frame kind built

  SendQueue sq;
  RecvQueue rq;
  ReqState req;
  RespState resp;

  // Engine bookkeeping (owned by the engine's lists).
  bool in_tx_list = false;
  bool in_timer_list = false;
  uint32_t timer_pos = 0;
};

// modify_qp validation in the style of the kernel's ib_modify_qp_is_ok: is the
// transition legal for the QP type, are the required attributes present and no
// attribute outside required|optional? Values are checked separately.
bool modify_transition_ok(QpType type, bool gsi, QpState cur, QpState next, uint32_t mask);

}  // namespace burst::core
