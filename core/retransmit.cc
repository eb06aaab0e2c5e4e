// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Timers: the IBA transport timer (local ACK timeout, 4.096 us * 2^timeout,
// restarted on progress; expiry -> Go-Back-N from the oldest unacknowledged PSN
// and one retry less; exhausted -> kRetryExcErr) and the RNR wait. Only QPs with
// an armed timer are visited, and only when the earliest deadline has passed.
#include "core/engine.h"

namespace burst::core {

void Engine::arm_retx(Qp& qp, uint64_t now_ns) {
  if (qp.req.retx_deadline_ns != 0 || qp.state == QpState::kErr) return;
  const uint64_t t = ack_timeout_ns(qp.attr.timeout);
  if (t == 0) return;  // timeout 0: wait forever
  qp.req.retx_deadline_ns = now_ns + t;
  timer_watch(qp);
}

void Engine::check_timers(Qp& qp, uint64_t now_ns) {
  ReqState& rq = qp.req;
  if (rq.rnr_until_ns != 0 && now_ns >= rq.rnr_until_ns) {
    rq.rnr_until_ns = 0;
    tx_schedule(qp);  // the cursor already points at the RNR NAK'd PSN
  }
  if (rq.retx_deadline_ns != 0 && now_ns >= rq.retx_deadline_ns) {
    rq.retx_deadline_ns = 0;
    if (wire::psn_before(rq.una, rq.psn_hi)) {
      ++counters_.timeouts;
      if (count_retry(qp, WcStatus::kRetryExcErr)) go_back_n(qp, rq.una);
    }
  }
}

void Engine::tick(uint64_t now_ns) {
  if (next_timer_ns_ == 0 || now_ns < next_timer_ns_) return;
  next_timer_ns_ = 0;
  for (uint32_t i = 0; i < timer_list_.size();) {
    const uint32_t index = timer_list_[i];
    Qp& qp = qps_[index];
    check_timers(qp, now_ns);
    if (i >= timer_list_.size() || timer_list_[i] != index) continue;  // removed by an error
    const uint64_t a = qp.req.retx_deadline_ns;
    const uint64_t b = qp.req.rnr_until_ns;
    if (a == 0 && b == 0) {
      timer_unwatch(qp);
      continue;
    }
    uint64_t d = a == 0 ? b : (b == 0 ? a : std::min(a, b));
    if (next_timer_ns_ == 0 || d < next_timer_ns_) next_timer_ns_ = d;
    ++i;
  }
  flush_cqes();
}

}  // namespace burst::core
