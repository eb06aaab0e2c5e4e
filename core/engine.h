/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The transport of one worker: owns its QPs and CQs, never locks, never
// allocates on the fast path, never logs per packet.
//
//   rx_burst(frames)  parse + ICRC check -> dispatch by destination QPN ->
//                     responder (requests) / completer (responses) / UD receive;
//                     payload placement through the CopyEngine; completions are
//                     posted after the copies they depend on (drained before return).
//   tx_build(bufs)    fills empty buffers with the next frames, per QP responder
//                     output first (READ responses, atomic ACKs, ACK, NAK), then
//                     requests and retransmissions; QPs are served round-robin.
//   tick(now)         transport timers (retransmit), RNR waits.
//
// All three take now_ns, a monotonic clock read once per loop iteration by the
// caller; the engine reads no clock itself.
//
// Shared receive queues (SRQ; IBA semantics as rxe implements them): an RC
// or UD QP created with QpInitAttr::srq takes its receive WQEs from that SRQ of
// the same engine instead of its own RQ (post_recv on it is kInvalid). Taking a
// WQE copies it into the QP's one-slot RQ, so from there on it is the QP's
// (completion on the QP's recv CQ with its qp_num, flushed with the QP's other
// work when the QP errors); the SRQ's untaken WQEs are never flushed by a QP. An
// empty SRQ means an RNR NAK (RC) or a dropped datagram (UD), as an empty RQ.
// Events the owner polls after any call: SRQ limit reached (an armed SRQ's
// count of posted WQEs dropped below its limit on a take: disarmed, one event),
// last WQE reached (a QP attached to an SRQ entered ERR; its held WQE, if any,
// was flushed first). An SRQ has no PD here (that stays with the control plane):
// its SGEs are checked against the PD of the QP that takes the WQE, as in rxe.
//
// Memory spaces: an MR may live in another process (mr.h, mem_space.h). Gathers
// and READ responses from such an MR read it through MemSpaces at build time; a
// failure is a local protection error (gather) or a remote access error NAK
// (READ response). Placement into it goes through the CopyEngine, batched; a
// copy that fails is found when the copies are drained, before any completion
// or ACK of this batch leaves: the operation that needed it completes with an
// error (responder: the RWQE with kLocProtErr and a NAK, remote access error for
// a WRITE and remote operational error for a SEND, at the failed packet's PSN;
// requester: the READ or atomic WQE with kLocProtErr), later work of the QP is
// flushed and the QP goes to ERR (core/copy_failure.cc). Counted in
// EngineCounters::mem_space_*_errors.
//
// QP1: the engine owning QPN 1 may have a GsiChannel attached (attach_gsi,
// core/gsi_channel.h): frames for DQPN 1 then go to the control thread's CM as MADs and
// MADs it queued leave as UD SEND_ONLY frames from QP1; no verbs QP1 exists then.
//
// Threading: every member runs on the owning worker thread (the control-plane
// calls too: burstd forwards them to the worker). The MrTable is shared with the
// control plane (see mr.h for its contract).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/counters.h"
#include "core/cq.h"
#include "core/gsi_channel.h"
#include "core/mr.h"
#include "core/qp.h"
#include "core/status.h"
#include "core/verbs.h"
#include "datapath/datapath.h"

namespace burst::core {

struct LocalPort {
  std::array<uint8_t, 6> mac{};
  std::vector<std::array<uint8_t, 16>> gids;  // sgid_index -> GID (IPv4 as ::ffff:a.b.c.d)
  uint32_t l2_mtu = 1514;  // largest frame the datapath carries (Ethernet header included, no FCS)
};

struct EngineConfig {
  LocalPort port;
  uint32_t max_qps = BURST_MAX_QP_PER_WORKER;
  uint32_t first_qpn = 0x11;  // QPN allocation start (QPs 0 and 1 are special)
  // Several engines (workers) on one port share its QPN space: engine `qpn_offset`
  // of `qpn_stride` hands out QPNs with (qpn - first_qpn) % qpn_stride == qpn_offset,
  // so the owner of a packet is arithmetic on its destination QPN (core/worker.h).
  uint32_t qpn_stride = 1;
  uint32_t qpn_offset = 0;
  uint32_t max_cqs = BURST_MAX_CQ_PER_WORKER;
  uint32_t max_srqs = BURST_MAX_SRQ_PER_WORKER;
  uint32_t ack_coalesce_pkts = 16;  // requester sets AckReq at least every this many packets
  uint32_t window_pkts = 1024;      // most unacknowledged packets per QP (< 2^23)
  uint32_t tx_qp_burst = 32;        // frames per QP per round of tx_build (fairness)
  bool verify_icrc = true;
};

struct QpInitAttr {
  QpType type = QpType::kRc;
  uint32_t pd = 0;
  uint32_t send_cq = 0;
  uint32_t recv_cq = 0;
  QpCap cap;
  bool sq_sig_all = false;
  bool gsi = false;  // UD only: create QP1 (the GSI QP; one per engine)
  // RC/UD: receive from this SRQ (create_srq) instead of an RQ of its own; cap's
  // max_recv_wr / max_recv_sge are then ignored (and reported as 0). The QP holds
  // a reference on the SRQ until destroy_qp.
  uint32_t srq = 0;
};

// ibv_srq_attr. max_wr and max_sge are capacities (create_srq rounds them up;
// query_srq reports the result); srq_limit arms the limit event (0: disarmed).
struct SrqAttr {
  uint32_t max_wr = 0;
  uint32_t max_sge = 0;
  uint32_t srq_limit = 0;
};

class EngineTestPeer;

// The completion opcode of a send work request.
WcOpcode wc_opcode(WrOpcode op);

class Engine {
 public:
  Engine(const EngineConfig& config, MrTable& mrs, CopyEngine& copier);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Control plane (owning thread).
  Status create_cq(uint32_t depth, uint32_t* cq_id);
  Status destroy_cq(uint32_t cq_id);                        // kBusy while a QP uses it
  // A new depth (ibv_resize_cq); completions waiting in the CQ are kept, in
  // order (the depth never goes below their number). Owning worker only.
  Status resize_cq(uint32_t cq_id, uint32_t depth);
  Status create_qp(const QpInitAttr& init, uint32_t* qpn);  // *cap is rounded up in query_qp
  Status destroy_qp(uint32_t qpn);
  Status modify_qp(uint32_t qpn, const QpAttr& attr, uint32_t attr_mask);
  Status query_qp(uint32_t qpn, QpAttr* attr, QpCap* cap) const;
  // kInvalid for a bad WR, kNoMemory when the SQ/RQ is full, kState in RESET/INIT
  // (and RTR for sends). In ERR (and SQE for sends) the WR completes with
  // kWrFlushErr. Inline data (kSendInline) is read from the SGE addresses as
  // host pointers at post time, the lkeys are ignored (libibverbs semantics):
  // always burst's own memory (burstd copies an application's inline bytes
  // into its own memory before post_send). post_recv: kInvalid on a QP attached
  // to an SRQ (post_srq_recv).
  Status post_send(uint32_t qpn, const SendWr& wr);
  Status post_recv(uint32_t qpn, const RecvWr& wr);
  int poll_cq(uint32_t cq_id, Wc* wc, int max);
  bool cq_error(uint32_t cq_id) const;     // CQ overrun happened
  uint32_t cq_size(uint32_t cq_id) const;  // completions waiting to be polled (0 for a bad id)
  // Completions ever pushed into this Engine's CQs: unchanged means no CQ has
  // anything new (a consumer with many CQs looks at them only when it moves).
  uint64_t cqes_pushed() const { return cqes_pushed_; }

  // Shared receive queues (owning thread; core/srq.cc). create_srq: kInvalid for
  // max_wr 0 or above kMaxSrqWr, max_sge above kMaxSrqSge, srq_limit above the
  // rounded max_wr; max_wr is rounded up to a power of two, max_sge to at least 1;
  // a nonzero srq_limit arms the limit at once (as rxe). destroy_srq: kBusy while
  // a QP uses it, kNotFound for an unknown id. modify_srq arms the limit (0
  // disarms): kInvalid above max_wr. post_srq_recv: kInvalid for more SGEs than
  // max_sge, kNoMemory when full; valid in any state of the QPs using the SRQ.
  Status create_srq(const SrqAttr& attr, uint32_t* srq_id);
  Status destroy_srq(uint32_t srq_id);
  Status modify_srq(uint32_t srq_id, uint32_t srq_limit);
  Status query_srq(uint32_t srq_id, SrqAttr* out) const;
  Status post_srq_recv(uint32_t srq_id, const RecvWr& wr);
  // Asynchronous events, oldest first; false when there is none. An SRQ's limit
  // event (IBV_EVENT_SRQ_LIMIT_REACHED) or a QP's last-WQE event
  // (IBV_EVENT_QP_LAST_WQE_REACHED) is queued at most once until taken, and is
  // dropped when its SRQ / QP is destroyed first.
  bool take_srq_limit_event(uint32_t* srq_id);
  bool take_last_wqe_event(uint32_t* qpn);

  // UD multicast (owning thread; core/mcast.cc). attach_mcast: the QP receives
  // every datagram sent to DQPN 0xFFFFFF and the multicast group `gid` (ff00::/8,
  // or IPv4 224.0.0.0/4 as ::ffff:a.b.c.d) that reaches this engine; attaching
  // twice is a success. kInvalid for a non-UD QP or a GID that is not multicast,
  // kNotFound for an unknown QP, kNoMemory at BURST_MAX_MCAST_QP_ATTACH QPs of
  // this engine in the group. detach_mcast: kInvalid when not attached.
  // destroy_qp detaches the QP from every group. mcast_groups: groups with a QP
  // of this engine attached.
  Status attach_mcast(uint32_t qpn, const std::array<uint8_t, 16>& gid);
  Status detach_mcast(uint32_t qpn, const std::array<uint8_t, 16>& gid);
  uint32_t mcast_groups() const { return static_cast<uint32_t>(mcast_.size()); }

  // Datapath (owning thread). Frames passed to rx_burst are only read during the
  // call. tx_build fills up to n buffers (bufs[i].data, bufs[i].cap) and sets
  // bufs[i].len; it returns the number filled.
  void rx_burst(const datapath::Frame* frames, uint32_t n, uint64_t now_ns);
  uint32_t tx_build(datapath::Frame* bufs, uint32_t n, uint64_t now_ns);
  void tick(uint64_t now_ns);
  bool tx_pending() const { return tx_count_ != 0 || (gsi_ != nullptr && gsi_->tx_pending()); }

  // QP1 in the datapath (core/gsi_channel.h; the engine owning QPN 1, before traffic):
  // frames for DQPN 1 go to `channel`'s rx ring, MADs queued on it are sent
  // from QP1 (BTH PSNs from initial_psn; the kernel starts QP1 at 0). nullptr
  // detaches. kBusy while a verbs QP1 exists; create_qp(gsi) is then kBusy.
  Status attach_gsi(GsiChannel* channel, uint32_t initial_psn = 0);
  // The UDP source port of a QP pair's frames (flow entropy for ECMP).
  static uint16_t udp_sport_for(uint32_t src_qpn, uint32_t dest_qpn);

  const EngineCounters& counters() const { return counters_; }
  const EngineConfig& config() const { return config_; }
  uint32_t port_max_mtu_bytes() const {
    return port_max_mtu_;
  }  // largest path MTU the port carries

 private:
  friend class EngineTestPeer;

  enum class Build : uint8_t { kBuilt, kBlocked, kNoRoom };

  struct CqSlot {
    bool in_use = false;
    uint32_t qp_refs = 0;
    Cq cq;
  };
  struct SrqSlot {
    bool in_use = false;
    bool limit_event_queued = false;  // srq_id is in srq_limit_events_
    uint32_t qp_refs = 0;
    uint32_t max_wr = 0;  // posted WQEs at most (ring size)
    uint32_t max_sge = 0;
    uint32_t limit = 0;  // armed limit; 0 = disarmed
    RecvQueue rq;
  };
  struct PendingCqe {
    uint32_t cq_id;
    uint32_t qp_index;
    uint32_t qpn;
    uint32_t wq_index;  // free-running SQ/RQ index of the WQE it completes
    bool send_side;
    Wc wc;
  };
  // What a copy into another memory space was for, in its CopyEngine tag
  // (make_resp_tag / make_req_tag; decoded in copy_failure.cc).
  enum CopyTag : uint8_t {
    kTagRespRwqe = 1,   // responder placement for the held RWQE (SEND, WRITE_WITH_IMM last)
    kTagRespWrite = 2,  // responder RDMA WRITE placement (no RWQE held)
    kTagUdRecv = 3,     // UD receive placement
    kTagReq = 4,        // requester: READ response data or atomic result
  };
  // RQ index bits of a responder tag: more than the RWQEs one drain can cover
  // (each consumed RWQE adds a pending completion, flushed at kPendingCqes).
  static constexpr uint32_t kTagRqBits = 13;
  // Responder tag: QP slot (24 bits) | PSN (24) | RQ index (13) | kind (3).
  static uint64_t make_resp_tag(const Qp& qp, Psn psn, CopyTag kind) {
    return uint64_t{qp.index} << 40 | uint64_t{psn.value()} << 16 |
           uint64_t{qp.rq.tail & ((1u << kTagRqBits) - 1)} << 3 | kind;
  }
  // Requester tag: QP slot (24 bits) | SQ index of the oldest WQE (32) | kind (3).
  static uint64_t make_req_tag(const Qp& qp) {
    return uint64_t{qp.index} << 40 | uint64_t{qp.sq.tail} << 3 | kTagReq;
  }

  // engine.cc: tables, completions, errors.
  Qp* find_qp(uint32_t qpn);
  const Qp* find_qp(uint32_t qpn) const;
  void emit_cqe(const Qp& qp, bool send_side, const Wc& wc);
  void flush_cqes();
  void complete_send_tail(Qp& qp, WcStatus status);
  void enter_error(Qp& qp);
  void flush_sq(Qp& qp);
  void flush_rq(Qp& qp);
  void reset_queues(Qp& qp);
  void tx_schedule(Qp& qp);
  void timer_watch(Qp& qp);
  void timer_unwatch(Qp& qp);
  void copy(void* dst, const void* src, uint32_t len) {
    if (len == 0) return;
    while (copier_.submit(dst, src, len) == 0) copier_.poll();
  }
  // Placement into `space` (any space); `tag` names the operation for failures.
  void copy_to(uint32_t space, void* dst, const void* src, uint32_t len, uint64_t tag) {
    if (len == 0) return;
    while (copier_.submit(dst, src, len, space, tag) == 0) copier_.poll();
  }
  // Transmit-side read of MR bytes in `space` into a frame (synchronous).
  // `avail` bytes from `src` on are readable (the rest of the SGE / READ
  // response): up to kTxStageBytes of them, and no more than the QP's visit in
  // tx_build() can send (tx_stage_cap_: with many QPs taking turns, a larger
  // read would be thrown away), are read ahead with the same system call into
  // tx_stage_, and the following frames of the message are copied
  // from there. The stage is dropped at the start of every tx_build(): within
  // one call every message it serves is in flight, so its bytes cannot change
  // (the verbs contract), and no MR is deregistered.
  bool space_read(uint32_t space, void* dst, const void* src, uint32_t len, uint64_t avail);

  // copy_failure.cc: copies into other spaces that failed.
  void handle_copy_failures();
  void req_copy_failed(Qp& qp, uint32_t sq_index);
  void resp_copy_failed(Qp& qp, Psn psn, uint32_t rq_low, CopyTag kind);
  bool make_path(const Address& ah, uint32_t src_qpn, uint32_t dest_qpn,
                 wire::PathHeaders* path) const;
  bool path_ok(const Address& ah) const;

  // qp.cc: modify_qp helpers.
  Status check_attr_values(const Qp& qp, const QpAttr& attr, uint32_t mask) const;
  void apply_attrs(Qp& qp, const QpAttr& attr, uint32_t mask);

  // requester.cc (RC).
  bool req_can_send(const Qp& qp, uint64_t now_ns) const;
  Build build_rc_request(Qp& qp, datapath::Frame& buf, uint64_t now_ns);
  // BIND_MW / LOCAL_INV at the cursor, once every older WQE completed: done
  // and completed here (no packet), or the QP's error completion.
  void run_local_op(Qp& qp, SendWqe& w);
  bool gather(Qp& qp, uint32_t sq_index, uint32_t offset, uint32_t len, uint8_t* dst,
              WcStatus* err);
  bool validate_local_sges(const Qp& qp, SendWqe& wqe, WcStatus* err) const;

  // completer.cc (RC).
  void rc_response(Qp& qp, const wire::PacketView& pv, uint64_t now_ns);
  bool implicit_ack(Qp& qp, Psn upto, uint64_t now_ns);
  void go_back_n(Qp& qp, Psn from);
  void req_progress(Qp& qp, uint64_t now_ns);
  bool count_retry(Qp& qp, WcStatus exhausted);
  void complete_error_at(Qp& qp, WcStatus status);
  void complete_tail_ok(Qp& qp);
  void check_tail_error(Qp& qp);
  void retry_missing_responses(Qp& qp);
  SendWqe* response_wqe(Qp& qp, Psn p, const wire::Aeth* aeth, uint64_t now_ns);
  void on_read_response(Qp& qp, const wire::PacketView& pv, uint64_t now_ns);
  void on_atomic_ack(Qp& qp, const wire::PacketView& pv, uint64_t now_ns);

  // responder.cc (RC).
  void rc_request(Qp& qp, const wire::PacketView& pv, uint64_t now_ns);
  void rc_duplicate(Qp& qp, const wire::PacketView& pv);
  void rc_send(Qp& qp, const wire::PacketView& pv);
  void rc_write(Qp& qp, const wire::PacketView& pv);
  void rc_read(Qp& qp, const wire::PacketView& pv);
  void rc_atomic(Qp& qp, const wire::PacketView& pv);
  bool take_rwqe(Qp& qp);
  bool srq_take(Qp& qp);  // srq.cc: the SRQ's oldest WQE into the QP's RQ slot
  void queue_last_wqe_event(Qp& qp);
  bool scatter(Qp& qp, const uint8_t* src, uint32_t len, WcStatus* err, uint64_t tag);
  void complete_rwqe(Qp& qp, WcStatus status, WcOpcode opcode, uint32_t byte_len, uint32_t wc_flags,
                     uint32_t imm, bool solicited = false);
  void resp_fatal(Qp& qp, uint8_t nak_code, WcStatus rwqe_status);
  // resp_fatal for an invalid request / a remote access error (the R_Key check).
  void resp_invalid(Qp& qp) {
    resp_fatal(qp, static_cast<uint8_t>(wire::NakCode::kInvalidRequest), WcStatus::kRemInvReqErr);
  }
  void resp_access_error(Qp& qp) {
    resp_fatal(qp, static_cast<uint8_t>(wire::NakCode::kRemoteAccessError),
               WcStatus::kRemAccessErr);
  }
  void resp_nak(Qp& qp, uint8_t syndrome);
  void queue_response(Qp& qp, uint32_t res_index);
  bool claim_resource(Qp& qp);
  bool resp_has_output(const Qp& qp) const;
  Build build_response(Qp& qp, datapath::Frame& buf);

  // ud.cc.
  void ud_receive(Qp& qp, const wire::PacketView& pv);
  // mcast.cc: a UD datagram to DQPN 0xFFFFFF, to every QP attached to its group.
  void mcast_receive(const wire::PacketView& pv);
  void mcast_detach_all(uint32_t qpn);
  Build build_ud_send(Qp& qp, datapath::Frame& buf);

  // gsi_channel.cc: QP1 in the datapath.
  void gsi_receive(const wire::PacketView& pv);
  uint32_t gsi_build(datapath::Frame* bufs, uint32_t n);

  // rx_dispatch.cc.
  bool rx_write_middle(const wire::PacketView& pv, Qp*& qp);
  bool rx_write_middle_on(Qp& qp, const wire::PacketView& pv);
  void dispatch(const wire::PacketView& pv, uint64_t now_ns);
  uint32_t build_for_qp(Qp& qp, datapath::Frame* bufs, uint32_t n, uint64_t now_ns, bool* no_room);
  bool qp_tx_ready(const Qp& qp, uint64_t now_ns) const;

  // retransmit.cc.
  void arm_retx(Qp& qp, uint64_t now_ns);
  void check_timers(Qp& qp, uint64_t now_ns);

  EngineConfig config_;
  MrTable& mrs_;
  CopyEngine& copier_;
  uint32_t port_max_mtu_ = 256;

  std::vector<Qp> qps_;           // max_qps slots + 1 for QP1 (last slot)
  std::vector<uint32_t> qp_gen_;  // per slot: generation, part of the QPN
  std::vector<uint32_t> free_qps_;
  std::vector<CqSlot> cqs_;          // cq_id = index; slot 0 unused
  std::vector<SrqSlot> srqs_;        // srq_id = index; slot 0 unused
  std::vector<PendingCqe> pending_;  // completions waiting for copies (reserved)
  std::vector<uint32_t> tx_list_;    // ring of QP slots with transmit work
  uint32_t tx_head_ = 0;
  uint32_t tx_count_ = 0;
  std::vector<uint32_t> timer_list_;  // QP slots with an armed timer
  uint64_t next_timer_ns_ = 0;        // earliest deadline in timer_list_ (0 = none)
  uint16_t ipv4_id_ = 1;
  GsiChannel* gsi_ = nullptr;  // attach_gsi (QPN 1's owner); nullptr: no GSI here
  Psn gsi_psn_{0};             // QP1's next BTH PSN
  bool gsi_notify_ = false;    // rx_burst delivered MADs: notify once at its end
  // Read-ahead of cross-memory transmit payload (space_read).
  static constexpr uint32_t kTxStageBytes = 64 * 1024;
  struct TxStage {
    uint32_t space = 0;
    const uint8_t* begin = nullptr;  // [begin, end) of the space's addresses held
    const uint8_t* end = nullptr;
    std::unique_ptr<uint8_t[]> buf;
  } tx_stage_;
  uint32_t tx_stage_cap_ = kTxStageBytes;  // what the QP being built may still send now
  bool flushing_ = false;                  // inside flush_cqes() or handle_copy_failures()
  uint64_t cqes_pushed_ = 0;               // completions pushed into cqs_ (owning worker)
  // handle_copy_failures() scratch (error path): the failed copies' tags, the
  // earliest per QP and side.
  std::vector<uint64_t> failed_copies_;
  std::vector<uint64_t> failed_first_;
  // Queued asynchronous events, oldest first (reserved: one entry per SRQ / QP).
  std::vector<uint32_t> srq_limit_events_;  // srq_ids
  std::vector<uint32_t> last_wqe_events_;   // QPNs
  // Multicast groups with a QP of this engine attached (attach order).
  struct McastGroup {
    std::array<uint8_t, 16> gid{};
    std::vector<uint32_t> qpns;
  };
  std::vector<McastGroup> mcast_;
  EngineCounters counters_;
};

}  // namespace burst::core
