// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// CQ verbs through the real libibverbs, run under `burstctl run` with burstd
// running (cq_test.sh). RC QPs connected to themselves; each has a receive CQ
// and a send CQ of its own:
//   solicited: ibv_req_notify_cq(cq, 1) on a receive CQ with a completion
//     channel: SENDs without IBV_SEND_SOLICITED raise no event, one with it
//     does; "next" asked after "solicited" wins (an ordinary SEND wakes); a
//     receive that fails (bad lkey) wakes a solicited-only arm;
//   resize: ibv_resize_cq with completions pending, down (EINVAL below the
//     number held, exactly that number works) and up, cq->cqe at least what was
//     asked, the pending completions kept in order; 0 and above max_cqe EINVAL;
//     then 2 x 3000 SENDs on two QPs sharing the receive CQ (on two burstd
//     workers) while it is resized every few polls: every completion arrives
//     once, in order;
//   ibv_modify_cq: EOPNOTSUPP; ibv_create_cq_ex with completion timestamps or
//     IGNORE_OVERRUN: EOPNOTSUPP; a cq_ex resizes like a CQ.
// Prints "PASS" and exits 0; a failed check prints "FAIL: ..." and exits 1.
#include <infiniband/verbs.h>
#include <poll.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "tests/provider/probe_util.h"

namespace {

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE;
constexpr uint32_t kMsg = 64;
constexpr int kWaitMs = 10000;

struct Rc {
  ibv_cq* rcq = nullptr;
  ibv_cq* scq = nullptr;
  ibv_qp* qp = nullptr;
};

void connect_to_self(ibv_qp* qp, const ibv_gid& gid) {
  burst::test::RcPath p;
  p.access = kAccess;
  p.dest_qpn = qp->qp_num;
  p.rq_psn = p.sq_psn = 0x222;
  p.min_rnr_timer = 1;
  burst::test::rc_to_rts_or_die(qp, gid, p);
}

// An RC QP connected to itself with a send CQ of its own and a new receive CQ
// (or `shared_rcq`).
Rc make_rc(ibv_context* ctx, ibv_pd* pd, const ibv_gid& gid, ibv_comp_channel* ch, int rcqe,
           ibv_cq* shared_rcq = nullptr) {
  Rc r;
  r.rcq = shared_rcq != nullptr ? shared_rcq : ibv_create_cq(ctx, rcqe, nullptr, ch, 0);
  r.scq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
  CHECK(r.rcq != nullptr && r.scq != nullptr, "create_cq: %s", std::strerror(errno));
  ibv_qp_init_attr ia{};
  ia.qp_type = IBV_QPT_RC;
  ia.send_cq = r.scq;
  ia.recv_cq = r.rcq;
  ia.cap.max_send_wr = 64;
  ia.cap.max_recv_wr = 64;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  r.qp = ibv_create_qp(pd, &ia);
  CHECK(r.qp != nullptr, "create_qp: %s", std::strerror(errno));
  connect_to_self(r.qp, gid);
  return r;
}

void post_recv(const Rc& r, uint64_t id, void* buf, uint32_t lkey) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), kMsg, lkey};
  ibv_recv_wr wr{};
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  CHECK(ibv_post_recv(r.qp, &wr, &bad) == 0, "post_recv %llu", (unsigned long long)id);
}

void post_send(const Rc& r, uint64_t id, void* buf, uint32_t lkey, unsigned flags = 0) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), kMsg, lkey};
  ibv_send_wr wr{};
  wr.wr_id = id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED | flags;
  ibv_send_wr* bad = nullptr;
  CHECK(ibv_post_send(r.qp, &wr, &bad) == 0, "post_send %llu", (unsigned long long)id);
}

double now_s() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// Exactly n completions from cq (bounded wait), successful unless `any_status`.
void poll_n(ibv_cq* cq, ibv_wc* wc, int n, bool any_status = false) {
  int got = 0;
  const double end = now_s() + kWaitMs / 1000.0;
  while (got < n) {
    const int r = ibv_poll_cq(cq, n - got, wc + got);
    CHECK(r >= 0, "poll_cq: %d", r);
    got += r;
    CHECK(got == n || now_s() < end, "%d of %d completions", got, n);
  }
  for (int i = 0; i < n && !any_status; ++i) {
    CHECK(wc[i].status == IBV_WC_SUCCESS, "completion %llu: %s", (unsigned long long)wc[i].wr_id,
          ibv_wc_status_str(wc[i].status));
  }
}

bool event_pending(ibv_comp_channel* ch, int timeout_ms) {
  pollfd p{ch->fd, POLLIN, 0};
  return poll(&p, 1, timeout_ms) == 1;
}

void expect_event(ibv_comp_channel* ch, ibv_cq* want, const char* what) {
  CHECK(event_pending(ch, kWaitMs), "no completion event: %s", what);
  ibv_cq* cq = nullptr;
  void* cq_ctx = nullptr;
  CHECK(ibv_get_cq_event(ch, &cq, &cq_ctx) == 0 && cq == want, "get_cq_event: %s", what);
  ibv_ack_cq_events(cq, 1);
}

// One SEND (recv posted first) whose receive completion is then polled.
void send_one(const Rc& r, uint64_t id, unsigned char* buf, uint32_t lkey, unsigned flags) {
  post_recv(r, id, buf + kMsg, lkey);
  post_send(r, id, buf, lkey, flags);
  ibv_wc wc[1];
  poll_n(r.scq, wc, 1);
  poll_n(r.rcq, wc, 1);
  CHECK(wc[0].wr_id == id && wc[0].opcode == IBV_WC_RECV, "recv %llu",
        (unsigned long long)wc[0].wr_id);
}

void solicited_checks(ibv_context* ctx, ibv_pd* pd, const ibv_gid& gid) {
  ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  CHECK(ch != nullptr, "create_comp_channel: %s", std::strerror(errno));
  static unsigned char buf[2 * kMsg];
  ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof(buf), kAccess);
  CHECK(mr != nullptr, "reg_mr: %s", std::strerror(errno));
  Rc r = make_rc(ctx, pd, gid, ch, 64);

  CHECK(ibv_req_notify_cq(r.rcq, 1) == 0, "req_notify_cq(solicited)");
  send_one(r, 1, buf, mr->lkey, 0);
  // Receive 2 is delivered after receive 1 by the same worker: had receive 1
  // raised an event, it would be in the channel by now.
  send_one(r, 2, buf, mr->lkey, 0);
  CHECK(!event_pending(r.rcq->channel, 0), "an unsolicited SEND woke a solicited-only arm");
  send_one(r, 3, buf, mr->lkey, IBV_SEND_SOLICITED);
  expect_event(ch, r.rcq, "SEND with IBV_SEND_SOLICITED");

  // "next" after "solicited": next wins.
  CHECK(ibv_req_notify_cq(r.rcq, 1) == 0 && ibv_req_notify_cq(r.rcq, 0) == 0, "arm twice");
  send_one(r, 4, buf, mr->lkey, 0);
  expect_event(ch, r.rcq, "next armed after solicited, ordinary SEND");

  // An unsuccessful receive (its SGE's lkey is not ours) wakes a solicited-only arm.
  CHECK(ibv_req_notify_cq(r.rcq, 1) == 0, "req_notify_cq(solicited) before the error");
  post_recv(r, 5, buf + kMsg, mr->lkey + 0x1000);
  post_send(r, 5, buf, mr->lkey);
  expect_event(ch, r.rcq, "receive error");
  ibv_wc wc[1];
  poll_n(r.rcq, wc, 1, true);
  CHECK(wc[0].wr_id == 5 && wc[0].status != IBV_WC_SUCCESS, "receive 5: %s",
        ibv_wc_status_str(wc[0].status));

  CHECK(ibv_destroy_qp(r.qp) == 0, "destroy_qp");
  CHECK(ibv_destroy_cq(r.rcq) == 0 && ibv_destroy_cq(r.scq) == 0, "destroy_cq");
  CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
  CHECK(ibv_destroy_comp_channel(ch) == 0, "destroy_comp_channel");
}

// n SENDs (ids first..first+n-1) whose receives then wait unpolled in r.rcq:
// a send completion is delivered after the receive completion of its message
// (same worker, the ACK comes later), so once the n send completions are in,
// so are the n receive completions.
void sends_pending(const Rc& r, uint64_t first, int n, unsigned char* buf, uint32_t lkey) {
  for (int i = 0; i < n; ++i) post_recv(r, first + i, buf + kMsg, lkey);
  for (int i = 0; i < n; ++i) post_send(r, first + i, buf, lkey);
  ibv_wc wc[64];
  poll_n(r.scq, wc, n);
}

void expect_ids(ibv_cq* cq, uint64_t first, int n) {
  ibv_wc wc[64];
  poll_n(cq, wc, n);
  for (int i = 0; i < n; ++i) {
    CHECK(wc[i].wr_id == first + i, "completion %d is %llu, not %llu", i,
          (unsigned long long)wc[i].wr_id, (unsigned long long)(first + i));
  }
  CHECK(ibv_poll_cq(cq, 1, wc) == 0, "a completion too many");
}

// SENDs on r's QP and on a second QP feeding the same receive CQ (with burstd
// running two workers, QPNs are striped over them: two workers deliver into
// the CQ) while the receive CQ is resized every few polls. At most 32 receives
// are outstanding in all, so every size below fits what the CQ can hold.
void traffic_while_resizing(ibv_context* ctx, ibv_pd* pd, const ibv_gid& gid, const Rc& r,
                            unsigned char* buf, uint32_t lkey) {
  const Rc qps[2] = {r, make_rc(ctx, pd, gid, nullptr, 0, r.rcq)};
  CHECK(ibv_resize_cq(r.rcq, 32) == 0, "resize to 32 before the traffic");
  constexpr uint64_t kPerQp = 3000;
  const int sizes[] = {32, 1000, 40, 33, 500, 64};
  uint64_t posted[2] = {}, sent[2] = {}, recvd[2] = {};
  int resizes = 0;
  const double end = now_s() + 60;
  while (recvd[0] + recvd[1] < 2 * kPerQp) {
    CHECK(now_s() < end, "traffic stalled at %llu + %llu", (unsigned long long)recvd[0],
          (unsigned long long)recvd[1]);
    for (int q = 0; q < 2; ++q) {
      while (posted[q] < kPerQp && posted[q] - recvd[q] < 16 && posted[q] - sent[q] < 16) {
        post_recv(qps[q], posted[q], buf + kMsg, lkey);
        post_send(qps[q], posted[q], buf, lkey);
        ++posted[q];
      }
      ibv_wc w[8];
      const int ns = ibv_poll_cq(qps[q].scq, 8, w);
      CHECK(ns >= 0, "poll send cq");
      for (int i = 0; i < ns; ++i, ++sent[q]) {
        CHECK(w[i].status == IBV_WC_SUCCESS && w[i].wr_id == sent[q], "QP %d send %llu: %llu %s", q,
              (unsigned long long)sent[q], (unsigned long long)w[i].wr_id,
              ibv_wc_status_str(w[i].status));
      }
    }
    ibv_wc w[8];
    const int nr = ibv_poll_cq(r.rcq, 1 + (recvd[0] + recvd[1]) % 5, w);
    CHECK(nr >= 0, "poll recv cq");
    for (int i = 0; i < nr; ++i) {
      const int q = w[i].qp_num == qps[0].qp->qp_num ? 0 : 1;
      CHECK(w[i].qp_num == qps[q].qp->qp_num, "receive on QP %u", w[i].qp_num);
      CHECK(w[i].status == IBV_WC_SUCCESS && w[i].wr_id == recvd[q], "QP %d receive %llu: %llu %s",
            q, (unsigned long long)recvd[q], (unsigned long long)w[i].wr_id,
            ibv_wc_status_str(w[i].status));
      ++recvd[q];
    }
    if (nr > 0 && (recvd[0] + recvd[1]) % 7 == 0) {
      const int want = sizes[resizes % 6];
      const int e = ibv_resize_cq(r.rcq, want);
      CHECK(e == 0 && r.rcq->cqe >= want, "resize to %d during traffic: %d", want, e);
      ++resizes;
    }
  }
  std::printf("2 x %llu receives in order across %d resizes\n", (unsigned long long)kPerQp,
              resizes);
  CHECK(resizes > 50, "only %d resizes", resizes);
  CHECK(ibv_destroy_qp(qps[1].qp) == 0 && ibv_destroy_cq(qps[1].scq) == 0, "destroy 2nd QP");
}

void resize_checks(ibv_context* ctx, ibv_pd* pd, const ibv_gid& gid) {
  static unsigned char buf[2 * kMsg];
  ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof(buf), kAccess);
  CHECK(mr != nullptr, "reg_mr: %s", std::strerror(errno));
  ibv_device_attr da{};
  CHECK(ibv_query_device(ctx, &da) == 0, "query_device");
  Rc r = make_rc(ctx, pd, gid, nullptr, 64);
  CHECK(r.rcq->cqe >= 64, "create_cq cqe %d", r.rcq->cqe);
  CHECK(ibv_resize_cq(r.rcq, 0) == EINVAL, "resize to 0");
  CHECK(ibv_resize_cq(r.rcq, da.max_cqe + 1) == EINVAL, "resize above max_cqe %d", da.max_cqe);

  sends_pending(r, 0, 10, buf, mr->lkey);  // 10 receive completions held
  ibv_wc wc[2];
  poll_n(r.rcq, wc, 2);  // 8 held
  CHECK(wc[0].wr_id == 0 && wc[1].wr_id == 1, "first two");
  CHECK(ibv_resize_cq(r.rcq, 7) == EINVAL, "resize below the completions held");
  int e = ibv_resize_cq(r.rcq, 8);
  CHECK(e == 0 && r.rcq->cqe >= 8, "resize down to the completions held: %d, cqe %d", e,
        r.rcq->cqe);
  e = ibv_resize_cq(r.rcq, 100);
  CHECK(e == 0 && r.rcq->cqe >= 100, "resize up: %d, cqe %d", e, r.rcq->cqe);
  sends_pending(r, 10, 20, buf, mr->lkey);  // 28 held
  e = ibv_resize_cq(r.rcq, 28);
  CHECK(e == 0 && r.rcq->cqe >= 28, "resize down to 28: %d, cqe %d", e, r.rcq->cqe);
  expect_ids(r.rcq, 2, 28);

  traffic_while_resizing(ctx, pd, gid, r, buf, mr->lkey);

  // What a resize costs (printed, not checked): a round trip to burstd, a new
  // memfd mapped on both sides.
  const double t0 = now_s();
  for (int i = 0; i < 200; ++i) {
    CHECK(ibv_resize_cq(r.rcq, i % 2 ? 4096 : 64) == 0, "idle resize %d", i);
  }
  std::printf("ibv_resize_cq on an idle CQ (64 <-> 4096 entries): %.0f us each\n",
              (now_s() - t0) / 200 * 1e6);

  ibv_modify_cq_attr ma{};
  ma.attr_mask = IBV_CQ_ATTR_MODERATE;
  ma.moderate.cq_count = 8;
  ma.moderate.cq_period = 10;
  CHECK(ibv_modify_cq(r.rcq, &ma) == EOPNOTSUPP, "ibv_modify_cq is not EOPNOTSUPP");

  // ibv_create_cq_ex: what burst does not carry fails cleanly; a cq_ex resizes too.
  ibv_cq_init_attr_ex ca{};
  ca.cqe = 16;
  ca.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
  errno = 0;
  CHECK(ibv_create_cq_ex(ctx, &ca) == nullptr && errno == EOPNOTSUPP, "cq_ex timestamps: %d",
        errno);
  ca.wc_flags = IBV_WC_STANDARD_FLAGS;
  ca.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
  ca.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
  errno = 0;
  CHECK(ibv_create_cq_ex(ctx, &ca) == nullptr && errno == EOPNOTSUPP, "cq_ex ignore overrun: %d",
        errno);
  ca.comp_mask = 0;
  ca.flags = 0;
  ibv_cq_ex* cx = ibv_create_cq_ex(ctx, &ca);
  CHECK(cx != nullptr, "create_cq_ex: %s", std::strerror(errno));
  ibv_cq* c = ibv_cq_ex_to_cq(cx);
  e = ibv_resize_cq(c, 300);
  CHECK(e == 0 && c->cqe >= 300, "resize a cq_ex: %d, cqe %d", e, c->cqe);
  ibv_poll_cq_attr pa{};
  CHECK(ibv_start_poll(cx, &pa) == ENOENT, "start_poll on an empty resized cq_ex");
  CHECK(ibv_destroy_cq(c) == 0, "destroy cq_ex");

  CHECK(ibv_destroy_qp(r.qp) == 0, "destroy_qp");
  CHECK(ibv_destroy_cq(r.rcq) == 0 && ibv_destroy_cq(r.scq) == 0, "destroy_cq");
  CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
}

}  // namespace

int main() {
  ibv_context* ctx = burst::test::open_burst0();
  ibv_gid gid{};
  CHECK(ibv_query_gid(ctx, 1, 1, &gid) == 0, "query_gid 1");
  ibv_pd* pd = ibv_alloc_pd(ctx);
  CHECK(pd != nullptr, "alloc_pd: %s", std::strerror(errno));
  solicited_checks(ctx, pd, gid);
  std::printf("solicited-only arming: ok\n");
  resize_checks(ctx, pd, gid);
  std::printf("resize: ok\n");
  CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
  CHECK(ibv_close_device(ctx) == 0, "close_device");
  std::printf("PASS\n");
  return 0;
}
