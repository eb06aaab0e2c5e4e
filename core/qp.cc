// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// QP state machine: modify_qp (transitions, required/optional attributes per QP
// type as the kernel's ib_modify_qp_is_ok table, attribute values) and query_qp.
#include <algorithm>

#include "core/engine.h"

namespace burst::core {

namespace {

constexpr uint32_t kKnownAccess =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;

// RNR NAK timer values of IBA table 45, in microseconds; code 0 is the longest.
constexpr uint32_t kRnrTimerUs[32] = {
    655360, 10,    20,    30,    40,    60,     80,     120,    160,    240,    320,
    480,    640,   960,   1280,  1920,  2560,   3840,   5120,   7680,   10240,  15360,
    20480,  30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

enum class Kind : uint8_t { kUd, kUc, kRc, kGsi };  // the order of rule()'s by()

struct Rule {
  bool valid;
  uint32_t req;
  uint32_t opt;
};

Rule rule(Kind k, QpState cur, QpState next) {
  using S = QpState;
  // The value for QP kind k, among one value per kind.
  auto by = [k](uint32_t ud, uint32_t uc, uint32_t rc, uint32_t gsi) {
    const uint32_t per_kind[] = {ud, uc, rc, gsi};
    return per_kind[static_cast<size_t>(k)];
  };
  // Attributes that INIT takes (required from RESET, optional INIT -> INIT).
  const uint32_t init_attrs =
      by(kQpPkeyIndex | kQpPort | kQpQkey, kQpPkeyIndex | kQpPort | kQpAccessFlags,
         kQpPkeyIndex | kQpPort | kQpAccessFlags, kQpPkeyIndex | kQpQkey);
  // Optional attributes of RTR -> RTS, RTS -> RTS and SQD -> RTS (the same sets).
  const uint32_t to_rts_opt =
      by(kQpCurState | kQpQkey, kQpCurState | kQpAltPath | kQpAccessFlags | kQpPathMigState,
         kQpCurState | kQpAltPath | kQpAccessFlags | kQpMinRnrTimer | kQpPathMigState,
         kQpCurState | kQpQkey);
  if (next == S::kReset || next == S::kErr) return {true, 0, 0};  // from any state
  switch (cur) {
    case S::kReset:
      if (next == S::kInit) return {true, init_attrs, 0};
      break;
    case S::kInit:
      if (next == S::kInit) return {true, 0, init_attrs};
      if (next == S::kRtr) {
        const uint32_t uc_req = kQpAv | kQpPathMtu | kQpDestQpn | kQpRqPsn;
        const uint32_t conn_opt = kQpAltPath | kQpAccessFlags | kQpPkeyIndex;
        return {true, by(0, uc_req, uc_req | kQpMaxDestRdAtomic | kQpMinRnrTimer, 0),
                by(kQpPkeyIndex | kQpQkey, conn_opt, conn_opt, kQpPkeyIndex | kQpQkey)};
      }
      break;
    case S::kRtr:
      if (next == S::kRts) {
        return {
            true,
            by(kQpSqPsn, kQpSqPsn,
               kQpQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpSqPsn | kQpMaxQpRdAtomic, kQpSqPsn),
            to_rts_opt};
      }
      break;
    case S::kRts:
      if (next == S::kRts) return {true, 0, to_rts_opt};
      if (next == S::kSqd) return {true, 0, kQpEnSqdAsyncNotify};
      break;
    case S::kSqd:
      if (next == S::kRts) return {true, 0, to_rts_opt};
      if (next == S::kSqd) {
        return {true, 0,
                by(kQpPkeyIndex | kQpQkey,
                   kQpAv | kQpAltPath | kQpAccessFlags | kQpPkeyIndex | kQpPathMigState,
                   kQpPort | kQpAv | kQpQpTimeout | kQpRetryCnt | kQpRnrRetry | kQpMaxQpRdAtomic |
                       kQpMaxDestRdAtomic | kQpAltPath | kQpAccessFlags | kQpPkeyIndex |
                       kQpMinRnrTimer | kQpPathMigState,
                   kQpPkeyIndex | kQpQkey)};
      }
      break;
    case S::kSqe:
      if (next == S::kRts) {
        return {true, 0,
                by(kQpCurState | kQpQkey, kQpCurState | kQpAccessFlags, 0, kQpCurState | kQpQkey)};
      }
      break;
    case S::kErr:
      break;
  }
  return {false, 0, 0};
}

}  // namespace

uint64_t rnr_timer_ns(uint8_t code) { return uint64_t{kRnrTimerUs[code & 31]} * 1000; }

uint64_t ack_timeout_ns(uint8_t timeout) {
  if (timeout == 0) return 0;
  return uint64_t{4096} << std::min<uint8_t>(timeout, 31);
}

bool modify_transition_ok(QpType type, bool gsi, QpState cur, QpState next, uint32_t mask) {
  if (static_cast<uint8_t>(cur) > static_cast<uint8_t>(QpState::kErr) ||
      static_cast<uint8_t>(next) > static_cast<uint8_t>(QpState::kErr)) {
    return false;
  }
  Kind k = gsi                   ? Kind::kGsi
           : type == QpType::kRc ? Kind::kRc
           : type == QpType::kUc ? Kind::kUc
                                 : Kind::kUd;
  const Rule r = rule(k, cur, next);
  if (!r.valid) return false;
  const uint32_t attrs = mask & ~kQpState;
  if ((attrs & r.req) != r.req) return false;
  return (attrs & ~(r.req | r.opt)) == 0;
}

Status Engine::check_attr_values(const Qp& qp, const QpAttr& a, uint32_t mask) const {
  if ((mask & kQpCurState) && a.cur_qp_state != qp.state) return Errc::kInvalid;
  if ((mask & kQpAltPath)) return Errc::kNotSupported;  // no automatic path migration
  if (mask & kQpPathMtu) {
    const uint8_t m = static_cast<uint8_t>(a.path_mtu);
    if (m < 1 || m > 5 || mtu_bytes(a.path_mtu) > port_max_mtu_) return Errc::kInvalid;
  }
  if ((mask & kQpQpTimeout) && a.timeout > 31) return Errc::kInvalid;
  if ((mask & kQpRetryCnt) && a.retry_cnt > 7) return Errc::kInvalid;
  if ((mask & kQpRnrRetry) && a.rnr_retry > 7) return Errc::kInvalid;
  if ((mask & kQpMinRnrTimer) && a.min_rnr_timer > 31) return Errc::kInvalid;
  // max_rd_atomic (initiator depth) above the device limit is clamped in apply_attrs, not
  // refused: it only bounds what this QP sends, and perftest sets it to the peer's
  // max_qp_rd_atom (128 on Linux rxe). max_dest_rd_atomic commits responder resources: refused.
  if ((mask & kQpMaxDestRdAtomic) && a.max_dest_rd_atomic > kMaxRdAtomic) return Errc::kInvalid;
  if ((mask & kQpDestQpn) && a.dest_qp_num > wire::kQpnMask) return Errc::kInvalid;
  if ((mask & kQpAccessFlags) && (a.qp_access_flags & ~kKnownAccess) != 0) return Errc::kInvalid;
  if ((mask & kQpPkeyIndex) && a.pkey_index != 0) return Errc::kInvalid;  // one partition
  if ((mask & kQpPort) && a.port_num != 1) return Errc::kInvalid;
  if ((mask & kQpAv) && !path_ok(a.ah)) return Errc::kInvalid;
  return Status::Ok();
}

void Engine::apply_attrs(Qp& qp, const QpAttr& a, uint32_t mask) {
  QpAttr& d = qp.attr;
  if (mask & kQpAccessFlags) d.qp_access_flags = a.qp_access_flags;
  if (mask & kQpPkeyIndex) d.pkey_index = a.pkey_index;
  if (mask & kQpPort) d.port_num = a.port_num;
  if (mask & kQpQkey) d.qkey = a.qkey;
  if (mask & kQpAv) d.ah = a.ah;
  if (mask & kQpPathMtu) d.path_mtu = a.path_mtu;
  if (mask & kQpQpTimeout) d.timeout = a.timeout;
  if (mask & kQpRetryCnt) d.retry_cnt = a.retry_cnt;
  if (mask & kQpRnrRetry) d.rnr_retry = a.rnr_retry;
  if (mask & kQpRqPsn) d.rq_psn = a.rq_psn & wire::kPsnMask;
  if (mask & kQpMaxQpRdAtomic) {
    d.max_rd_atomic = static_cast<uint8_t>(std::min<uint32_t>(a.max_rd_atomic, kMaxRdAtomic));
  }
  if (mask & kQpMinRnrTimer) d.min_rnr_timer = a.min_rnr_timer;
  if (mask & kQpSqPsn) d.sq_psn = a.sq_psn & wire::kPsnMask;
  if (mask & kQpMaxDestRdAtomic) d.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if (mask & kQpDestQpn) d.dest_qp_num = a.dest_qp_num;
  qp.mtu = qp.type == QpType::kUd ? port_max_mtu_ : mtu_bytes(d.path_mtu);
  if ((mask & (kQpAv | kQpDestQpn)) && qp.type != QpType::kUd) {
    make_path(d.ah, qp.qpn, d.dest_qp_num, &qp.path);
    wire::build_template(qp.path, &qp.path_tmpl);
    qp.req_tmpl = wire::FrameTemplate{};
  }
}

Status Engine::modify_qp(uint32_t qpn, const QpAttr& attr, uint32_t attr_mask) {
  Qp* qpp = find_qp(qpn);
  if (qpp == nullptr) return Errc::kNotFound;
  Qp& qp = *qpp;
  const QpState cur = qp.state;
  const QpState next = (attr_mask & kQpState) ? attr.qp_state : cur;
  if (!modify_transition_ok(qp.type, qp.qpn == 1, cur, next, attr_mask)) return Errc::kInvalid;
  if (next != QpState::kReset && next != QpState::kErr) {
    if (Status s = check_attr_values(qp, attr, attr_mask); !s.ok()) return s;
    apply_attrs(qp, attr, attr_mask);
  }

  switch (next) {
    case QpState::kReset:
      reset_queues(qp);
      qp.state = QpState::kReset;
      break;
    case QpState::kErr:
      enter_error(qp);
      break;
    case QpState::kInit:
      qp.state = QpState::kInit;
      break;
    case QpState::kRtr:
      if (cur == QpState::kInit) {
        qp.resp = RespState{};
        qp.resp.epsn = Psn(qp.attr.rq_psn);
      }
      qp.state = QpState::kRtr;
      break;
    case QpState::kRts:
      if (cur == QpState::kRtr) {
        const Psn p(qp.attr.sq_psn);
        qp.req = ReqState{};
        qp.req.psn_alloc = qp.req.psn_hi = qp.req.una = p;
        qp.req.last_ackreq = p - 1;
      }
      if (cur == QpState::kRtr || cur == QpState::kSqe) {
        qp.req.retry_left = qp.attr.retry_cnt;
        qp.req.rnr_left = qp.attr.rnr_retry;
      }
      qp.state = QpState::kRts;
      tx_schedule(qp);
      break;
    case QpState::kSqd:
    case QpState::kSqe:
      qp.state = next;
      break;
  }
  qp.attr.qp_state = qp.state;
  qp.attr.cur_qp_state = qp.state;
  flush_cqes();
  return Status::Ok();
}

Status Engine::query_qp(uint32_t qpn, QpAttr* attr, QpCap* cap) const {
  const Qp* qp = find_qp(qpn);
  if (qp == nullptr) return Errc::kNotFound;
  if (attr != nullptr) {
    *attr = qp->attr;
    attr->qp_state = qp->state;
    attr->cur_qp_state = qp->state;
    attr->sq_draining = qp->state == QpState::kSqd && qp->sq.assigned != qp->sq.tail ? 1 : 0;
  }
  if (cap != nullptr) *cap = qp->cap;
  return Status::Ok();
}

}  // namespace burst::core
