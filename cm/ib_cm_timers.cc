/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// IbCm: the one timer of each id — the retry of the MAD it waits an answer to
// (REQ, REP, DREQ, SIDR_REQ), or the end of its timewait — and what happens
// when the retries run out (cm.c's cm_process_send_error, cm_timewait_handler).
#include "cm/ib_cm_impl.h"

namespace burst::cm {

void IbCm::Impl::arm(Conn* c, uint64_t deadline) {
  disarm(c);
  c->deadline = deadline;
  timers.emplace(deadline, c->local_id);
}

void IbCm::Impl::disarm(Conn* c) {
  if (c->deadline != UINT64_MAX) timers.erase({c->deadline, c->local_id});
  c->deadline = UINT64_MAX;
}

void IbCm::Impl::start_retry(Conn* c, const Mad& m, uint64_t period_ns, uint8_t retries) {
  c->retry_mad = m;
  c->retries_left = retries;
  c->retry_period_ns = period_ns;
  arm(c, host.now_ns() + period_ns);
}

// The connection is over; its IDs stay taken (a late DREQ gets its DREP) for
// the time a packet of it may still be in flight.
void IbCm::Impl::enter_timewait(Conn* c) {
  c->state = CmState::kTimewait;
  if (c->timewait_ns == 0) c->timewait_ns = timewait_period_ns(20, 0);
  arm(c, host.now_ns() + c->timewait_ns);
}

void IbCm::Impl::reset_to_idle(Conn* c) {
  disarm(c);
  unlink_remote(c);
  c->state = CmState::kIdle;
  c->remote_id = 0;
  c->mra_sent = false;
  if (c->handle == kNoCmHandle) forget(c);
}

void IbCm::Impl::on_retries_exhausted(Conn* c) {
  ++counters.timeouts;
  CmEvent ev;
  ev.peer = peer_of(*c);
  ev.rej_reason = RejReason::kTimeout;
  uint8_t guid_be[8];
  for (int i = 0; i < 8; ++i) guid_be[i] = static_cast<uint8_t>(local_ca_guid >> (56 - 8 * i));
  Mad rej;
  bool send_rej = false;
  switch (c->state) {
    case CmState::kReqSent:
    case CmState::kMraReqRcvd:  // tell the peer, as cm_destroy_id does (REJ timeout, ARI our GUID)
    case CmState::kRepSent:
    case CmState::kMraRepRcvd:
      rej = build_rej(*c, CmMsgKind::kOther, RejReason::kTimeout, guid_be, 8, nullptr, 0);
      send_rej = true;
      ev.type = c->state == CmState::kReqSent || c->state == CmState::kMraReqRcvd
                    ? CmEventType::kReqError : CmEventType::kRepError;
      reset_to_idle(c);  // ids in these states have a handle: c stays
      break;
    case CmState::kDreqSent:
      ev.type = CmEventType::kDreqError;
      enter_timewait(c);
      break;
    case CmState::kSidrReqSent:
      ev.type = CmEventType::kSidrReqError;
      reset_to_idle(c);
      break;
    default:
      return;
  }
  if (send_rej) send(rej);
  emit(c, ev);
}

void IbCm::Impl::on_timer(Conn* c) {
  c->deadline = UINT64_MAX;
  if (c->state == CmState::kTimewait) {
    unlink_remote(c);
    c->state = CmState::kIdle;
    c->remote_id = 0;
    if (c->handle == kNoCmHandle) {
      forget(c);
      return;
    }
    CmEvent ev;
    ev.type = CmEventType::kTimewaitExit;
    ev.peer = peer_of(*c);
    emit(c, ev);
    return;
  }
  if (c->retries_left == 0) {
    on_retries_exhausted(c);
    return;
  }
  --c->retries_left;
  ++counters.retransmits;
  arm(c, host.now_ns() + c->retry_period_ns);
  send(c->retry_mad);
}

void IbCm::tick() {
  const uint64_t now = impl_->host.now_ns();
  while (!impl_->timers.empty()) {
    auto [deadline, id] = *impl_->timers.begin();
    if (deadline > now) break;
    impl_->timers.erase(impl_->timers.begin());
    if (Conn* c = impl_->by_local_id(id)) impl_->on_timer(c);
  }
}

uint64_t IbCm::next_deadline() const {
  return impl_->timers.empty() ? UINT64_MAX : impl_->timers.begin()->first;
}

}  // namespace burst::cm
