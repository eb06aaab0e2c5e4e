// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Shared receive queues (IBA; the semantics of rdma-core / Linux rxe):
// the SRQ table, posting, taking a WQE for a QP (responder SEND / SEND_IMM /
// WRITE_IMM, UD receive), the limit event and the last-WQE event.
//
// An SRQ is a RecvQueue of its own engine; a QP attached to it (QpInitAttr::srq)
// has a one-slot RQ into which srq_take() copies the SRQ's oldest WQE when a
// message needs one. From there on the WQE is the QP's: it completes on the QP's
// recv CQ with the QP's qp_num, it is flushed when the QP errors, and the copy
// tags and pending completions name it by the QP's RQ index as for an RQ WQE
// (engine.h). So nothing else of the responder knows about SRQs, and a QP error
// never touches the WQEs still in the SRQ (other QPs take them).
//
// Threading: every function runs on the owning worker (burstd places all the QPs
// of an SRQ on one worker). The rings are allocated at create_srq; posting and
// taking never allocate; the event queues are reserved for one entry per SRQ/QP.
#include <algorithm>

#include "core/engine.h"

namespace burst::core {

namespace {

uint32_t round_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

}  // namespace

Status Engine::create_srq(const SrqAttr& attr, uint32_t* srq_id) {
  if (attr.max_wr == 0 || attr.max_wr > kMaxSrqWr || attr.max_sge > kMaxSrqSge) {
    return Errc::kInvalid;
  }
  const uint32_t slots = round_pow2(attr.max_wr);
  if (attr.srq_limit > slots) return Errc::kInvalid;
  for (uint32_t i = 1; i < srqs_.size(); ++i) {
    SrqSlot& s = srqs_[i];
    if (s.in_use) continue;
    s = SrqSlot{};
    s.in_use = true;
    s.max_wr = slots;
    s.max_sge = std::max<uint32_t>(attr.max_sge, 1);
    s.limit = attr.srq_limit;
    s.rq.ring.resize(slots);
    s.rq.mask = slots - 1;
    *srq_id = i;
    return Status::Ok();
  }
  return Errc::kNoMemory;
}

Status Engine::destroy_srq(uint32_t srq_id) {
  if (srq_id == 0 || srq_id >= srqs_.size() || !srqs_[srq_id].in_use) return Errc::kNotFound;
  SrqSlot& s = srqs_[srq_id];
  if (s.qp_refs != 0) return Errc::kBusy;
  if (s.limit_event_queued) std::erase(srq_limit_events_, srq_id);
  s = SrqSlot{};  // frees the ring (control plane)
  return Status::Ok();
}

Status Engine::modify_srq(uint32_t srq_id, uint32_t srq_limit) {
  if (srq_id == 0 || srq_id >= srqs_.size() || !srqs_[srq_id].in_use) return Errc::kNotFound;
  SrqSlot& s = srqs_[srq_id];
  if (srq_limit > s.max_wr) return Errc::kInvalid;
  // Armed now, the event fires at the next take that leaves fewer than
  // srq_limit WQEs (rxe checks on a take only, not when arming).
  s.limit = srq_limit;
  return Status::Ok();
}

Status Engine::query_srq(uint32_t srq_id, SrqAttr* out) const {
  if (srq_id == 0 || srq_id >= srqs_.size() || !srqs_[srq_id].in_use) return Errc::kNotFound;
  const SrqSlot& s = srqs_[srq_id];
  out->max_wr = s.max_wr;
  out->max_sge = s.max_sge;
  out->srq_limit = s.limit;
  return Status::Ok();
}

Status Engine::post_srq_recv(uint32_t srq_id, const RecvWr& wr) {
  if (srq_id == 0 || srq_id >= srqs_.size() || !srqs_[srq_id].in_use) return Errc::kNotFound;
  SrqSlot& s = srqs_[srq_id];
  if (wr.num_sge > s.max_sge || wr.num_sge > kMaxSge) return Errc::kInvalid;
  if (s.rq.count() >= s.max_wr) return Errc::kNoMemory;
  s.rq.ring[s.rq.head & s.rq.mask] = wr;
  ++s.rq.head;
  return Status::Ok();
}

bool Engine::srq_take(Qp& qp) {
  SrqSlot& s = srqs_[qp.srq];
  if (s.rq.empty()) return false;
  const RecvWr& from = s.rq.front();
  RecvWr& to = qp.rq.ring[qp.rq.head & qp.rq.mask];
  to.wr_id = from.wr_id;
  to.num_sge = from.num_sge;  // <= max_sge <= kMaxSge (post_srq_recv)
  std::copy_n(from.sg_list.begin(), from.num_sge, to.sg_list.begin());
  ++s.rq.tail;
  ++qp.rq.head;
  if (s.limit != 0 && s.rq.count() < s.limit) [[unlikely]] {
    s.limit = 0;  // disarmed: modify_srq arms it again
    if (!s.limit_event_queued) {
      s.limit_event_queued = true;
      srq_limit_events_.push_back(qp.srq);  // reserved: one per SRQ
    }
  }
  return true;
}

void Engine::queue_last_wqe_event(Qp& qp) {
  if (qp.last_wqe_queued) return;
  qp.last_wqe_queued = true;
  last_wqe_events_.push_back(qp.qpn);  // reserved: one per QP
}

bool Engine::take_srq_limit_event(uint32_t* srq_id) {
  if (srq_limit_events_.empty()) return false;
  const uint32_t id = srq_limit_events_.front();
  srq_limit_events_.erase(srq_limit_events_.begin());
  srqs_[id].limit_event_queued = false;
  *srq_id = id;
  return true;
}

bool Engine::take_last_wqe_event(uint32_t* qpn) {
  if (last_wqe_events_.empty()) return false;
  const uint32_t n = last_wqe_events_.front();
  last_wqe_events_.erase(last_wqe_events_.begin());
  if (Qp* qp = find_qp(n)) qp->last_wqe_queued = false;
  *qpn = n;
  return true;
}

}  // namespace burst::core
