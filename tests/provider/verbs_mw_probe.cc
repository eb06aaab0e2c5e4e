// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Memory windows through the public libibverbs API, over the real data path.
// Run under `burstctl run --socket SOCK` with burstd running (mw_test.sh):
//
//   - ibv_query_device reports IBV_DEVICE_MEM_WINDOW and _TYPE_2B, max_mw;
//   - two RC QPs of one context connected to each other: A (plain) is the
//     requester, B (an ibv_qp_ex with BIND_MW and LOCAL_INV) owns the windows
//     on an MR registered with IBV_ACCESS_MW_BIND;
//   - type 2: ibv_wr_bind_mw on B (IBV_WC_BIND_MW), RDMA WRITE and READ from A
//     through the new rkey (data checked, nothing outside the window touched),
//     IBV_WR_LOCAL_INV on B (IBV_WC_LOCAL_INV), bound again with IBV_WR_BIND_MW
//     through ibv_post_send, freed by A's SEND_WITH_INV (B's receive carries
//     IBV_WC_WITH_INV and the rkey);
//   - type 1: ibv_bind_mw (mw->rkey takes the next key), RDMA WRITE through it,
//     ibv_dereg_mr of its MR refused (EBUSY) while bound, unbound by a
//     zero-length ibv_bind_mw; an RDMA WRITE through the old rkey then fails
//     with IBV_WC_REM_ACCESS_ERR on A, and B (the responder) goes to the error
//     state, its posted receive flushed;
//   - ibv_rereg_mr: new access (same keys), new translation (new keys, data
//     through them), another PD and back, EBUSY with a window bound;
//   - a bind beyond the MR: IBV_WC_MW_BIND_ERR on a fresh QP, which goes to error;
//   - ibv_dealloc_mw, then the MR deregisters.
// Prints "PASS" and exits 0; a failed check prints "FAIL: ..." and exits 1.
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>

#include "tests/provider/probe_util.h"

namespace {

constexpr int kQpAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
constexpr size_t kLen = 4096;

ibv_gid g_gid;

void connect_to(ibv_qp* qp, uint32_t dest_qpn, uint32_t my_psn, uint32_t peer_psn) {
  burst::test::RcPath p;
  p.access = kQpAccess;
  p.dest_qpn = dest_qpn;
  p.rq_psn = peer_psn;
  p.sq_psn = my_psn;
  p.rd_atomic = 4;
  burst::test::rc_to_rts_or_die(qp, g_gid, p);
}

// One completion from cq (10 s at most).
ibv_wc poll_one(ibv_cq* cq, const char* what) {
  ibv_wc wc{};
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    const int r = ibv_poll_cq(cq, 1, &wc);
    CHECK(r >= 0, "poll_cq: %d", r);
    if (r == 1) return wc;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    CHECK(now.tv_sec - start.tv_sec < 10, "%s: no completion", what);
  }
}

void expect_wc(ibv_cq* cq, uint64_t wr_id, ibv_wc_status status, const char* what) {
  const ibv_wc wc = poll_one(cq, what);
  CHECK(wc.wr_id == wr_id && wc.status == status, "%s: wr_id %llu status %s (%d), want %s", what,
        static_cast<unsigned long long>(wc.wr_id), ibv_wc_status_str(wc.status), wc.status,
        ibv_wc_status_str(status));
}

ibv_wc expect_ok(ibv_cq* cq, uint64_t wr_id, ibv_wc_opcode opcode, const char* what) {
  const ibv_wc wc = poll_one(cq, what);
  CHECK(wc.wr_id == wr_id && wc.status == IBV_WC_SUCCESS && wc.opcode == opcode,
        "%s: wr_id %llu status %s opcode %d", what, static_cast<unsigned long long>(wc.wr_id),
        ibv_wc_status_str(wc.status), wc.opcode);
  return wc;
}

void post(ibv_qp* qp, ibv_send_wr* wr, const char* what) {
  ibv_send_wr* bad = nullptr;
  const int e = ibv_post_send(qp, wr, &bad);
  CHECK(e == 0, "post_send %s: %s", what, std::strerror(e));
}

// An RDMA op from qp of len bytes at local (lkey) to remote_addr through rkey.
void rdma(ibv_qp* qp, ibv_wr_opcode op, uint64_t wr_id, void* local, uint32_t lkey, uint32_t len,
          uint64_t remote_addr, uint32_t rkey) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), len, lkey};
  ibv_send_wr wr{};
  wr.wr_id = wr_id;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.wr.rdma.remote_addr = remote_addr;
  wr.wr.rdma.rkey = rkey;
  post(qp, &wr, "rdma");
}

void post_recv(ibv_qp* qp, uint64_t wr_id, void* buf, uint32_t lkey, uint32_t len) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(buf), len, lkey};
  ibv_recv_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  ibv_recv_wr* bad = nullptr;
  CHECK(ibv_post_recv(qp, &wr, &bad) == 0, "post_recv");
}

ibv_qp* make_qp(ibv_context* ctx, ibv_pd* pd, ibv_cq* cq, bool ex) {
  ibv_qp_init_attr_ex ia{};
  ia.qp_type = IBV_QPT_RC;
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.cap.max_send_wr = 16;
  ia.cap.max_recv_wr = 16;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  ia.pd = pd;
  ia.comp_mask = IBV_QP_INIT_ATTR_PD;
  if (ex) {
    ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
    ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV;
  }
  ibv_qp* qp = ibv_create_qp_ex(ctx, &ia);
  CHECK(qp != nullptr, "create_qp_ex: %s", std::strerror(errno));
  return qp;
}

ibv_qp_state state_of(ibv_qp* qp) {
  ibv_qp_attr a{};
  ibv_qp_init_attr ia{};
  CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) == 0, "query_qp");
  return a.qp_state;
}

struct Bufs {
  unsigned char src[kLen], dst[kLen], back[kLen], rbuf[kLen];
};

void check_device(ibv_context* ctx) {
  ibv_device_attr da{};
  CHECK(ibv_query_device(ctx, &da) == 0, "query_device");
  CHECK((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW) != 0, "no IBV_DEVICE_MEM_WINDOW");
  CHECK((da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) != 0, "no MEM_WINDOW_TYPE_2B");
  CHECK(da.max_mw > 0, "max_mw %d", da.max_mw);
}

// Type 2 on B: bind, write + read from A, local invalidate, bind again,
// remote invalidate by A's SEND_WITH_INV.
void type2(ibv_qp* a, ibv_qp* b, ibv_cq* cq, ibv_pd* pd, Bufs& m, ibv_mr* src, ibv_mr* dst,
           ibv_mr* back, ibv_mr* rbuf) {
  ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  CHECK(mw != nullptr, "alloc_mw type 2: %s", std::strerror(errno));
  ibv_qp_ex* bx = ibv_qp_to_qp_ex(b);
  CHECK(bx != nullptr, "qp_to_qp_ex");
  const uint64_t win = reinterpret_cast<uintptr_t>(m.dst) + 512;
  ibv_mw_bind_info info{dst, win, 1024, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ};
  const uint32_t key = ibv_inc_rkey(mw->rkey);
  ibv_wr_start(bx);
  bx->wr_id = 10;
  bx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_bind_mw(bx, mw, key, &info);
  CHECK(ibv_wr_complete(bx) == 0, "wr_complete bind_mw");
  expect_ok(cq, 10, IBV_WC_BIND_MW, "ibv_wr_bind_mw");
  mw->rkey = key;  // the consumer keeps the key it bound with

  rdma(a, IBV_WR_RDMA_WRITE, 11, m.src, src->lkey, 1024, win, key);
  expect_ok(cq, 11, IBV_WC_RDMA_WRITE, "write through the type 2 window");
  CHECK(std::memcmp(m.dst + 512, m.src, 1024) == 0, "window data");
  for (size_t i = 0; i < 512; ++i) CHECK(m.dst[i] == 0 && m.dst[1536 + i] == 0, "outside at %zu", i);
  rdma(a, IBV_WR_RDMA_READ, 12, m.back, back->lkey, 1024, win, key);
  expect_ok(cq, 12, IBV_WC_RDMA_READ, "read through the type 2 window");
  CHECK(std::memcmp(m.back, m.src, 1024) == 0, "read data");

  ibv_send_wr inv{};
  inv.wr_id = 13;
  inv.opcode = IBV_WR_LOCAL_INV;
  inv.send_flags = IBV_SEND_SIGNALED;
  inv.invalidate_rkey = key;
  post(b, &inv, "local_inv");
  expect_ok(cq, 13, IBV_WC_LOCAL_INV, "local invalidate");

  // Bound again through ibv_post_send, then freed by the peer's SEND_WITH_INV.
  const uint32_t key2 = ibv_inc_rkey(key);
  ibv_send_wr bind{};
  bind.wr_id = 14;
  bind.opcode = IBV_WR_BIND_MW;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_mw.mw = mw;
  bind.bind_mw.rkey = key2;
  bind.bind_mw.bind_info = info;
  post(b, &bind, "bind_mw");
  expect_ok(cq, 14, IBV_WC_BIND_MW, "IBV_WR_BIND_MW");
  mw->rkey = key2;
  post_recv(b, 15, m.rbuf, rbuf->lkey, 64);
  ibv_sge sge{reinterpret_cast<uintptr_t>(m.src), 16, src->lkey};
  ibv_send_wr send{};
  send.wr_id = 16;
  send.opcode = IBV_WR_SEND_WITH_INV;
  send.send_flags = IBV_SEND_SIGNALED;
  send.sg_list = &sge;
  send.num_sge = 1;
  send.invalidate_rkey = key2;
  post(a, &send, "send_with_inv");
  for (int i = 0; i < 2; ++i) {
    const ibv_wc wc = poll_one(cq, "send with invalidate");
    CHECK(wc.status == IBV_WC_SUCCESS, "send_with_inv wr %llu: %s",
          static_cast<unsigned long long>(wc.wr_id), ibv_wc_status_str(wc.status));
    if (wc.wr_id == 15) {
      CHECK((wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == key2,
            "receive: flags %#x rkey %#x want %#x", wc.wc_flags, wc.invalidated_rkey, key2);
    }
  }
  CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw type 2");
}

// ibv_rereg_mr of an MR on B's side: new access (same keys, as rxe), a new
// translation (new keys, data lands in the new buffer), another PD and back
// (the PD is held), EBUSY while a window is bound.
void rereg(ibv_context* ctx, ibv_qp* a, ibv_qp* b, ibv_cq* cq, ibv_pd* pd, Bufs& m,
           ibv_mr* src) {
  static unsigned char one[kLen], two[2 * kLen];
  ibv_mr* mr = ibv_reg_mr(pd, one, kLen, IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr != nullptr, "reg_mr: %s", std::strerror(errno));
  const uint32_t lkey = mr->lkey, rkey = mr->rkey;
  int r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0,
                       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
  CHECK(r == 0, "rereg access: %d (%s)", r, std::strerror(errno));
  CHECK(mr->lkey == lkey && mr->rkey == rkey, "keys changed with the access");
  rdma(a, IBV_WR_RDMA_WRITE, 40, m.src, src->lkey, 512, reinterpret_cast<uintptr_t>(one), rkey);
  expect_ok(cq, 40, IBV_WC_RDMA_WRITE, "write after rereg access");
  CHECK(std::memcmp(one, m.src, 512) == 0, "data after rereg access");

  r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, nullptr, two, sizeof(two), 0);
  CHECK(r == 0, "rereg translation: %d (%s)", r, std::strerror(errno));
  CHECK(mr->addr == two && mr->length == sizeof(two), "addr/length after rereg");
  CHECK(mr->rkey != rkey, "same rkey after a new translation");
  rdma(a, IBV_WR_RDMA_WRITE, 41, m.src, src->lkey, 1024,
       reinterpret_cast<uintptr_t>(two) + kLen, mr->rkey);
  expect_ok(cq, 41, IBV_WC_RDMA_WRITE, "write after rereg translation");
  CHECK(std::memcmp(two + kLen, m.src, 1024) == 0, "data in the new translation");

  ibv_pd* pd2 = ibv_alloc_pd(ctx);
  CHECK(pd2 != nullptr, "alloc_pd 2");
  r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd2, nullptr, 0, 0);
  CHECK(r == 0 && mr->pd == pd2, "rereg pd: %d (%s)", r, std::strerror(errno));
  CHECK(ibv_dealloc_pd(pd2) == EBUSY, "dealloc of the MR's new PD");
  r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, pd, nullptr, 0, 0);
  CHECK(r == 0 && mr->pd == pd, "rereg pd back: %d", r);
  CHECK(ibv_dealloc_pd(pd2) == 0, "dealloc pd 2");

  ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
  CHECK(mw != nullptr, "alloc_mw");
  ibv_mw_bind bind{};
  bind.wr_id = 42;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info = {mr, reinterpret_cast<uintptr_t>(two), 64, IBV_ACCESS_REMOTE_READ};
  CHECK(ibv_bind_mw(b, mw, &bind) == 0, "ibv_bind_mw");
  expect_ok(cq, 42, IBV_WC_BIND_MW, "bind on the reregistered MR");
  errno = 0;
  r = ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE);
  CHECK(r == IBV_REREG_MR_ERR_CMD && errno == EBUSY, "rereg with a bound window: %d errno %d", r,
        errno);
  CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw");
  CHECK(ibv_dereg_mr(mr) == 0, "dereg after rereg");
}

// Type 1 on B through ibv_bind_mw; ends with B in error (access after unbind).
void type1(ibv_qp* a, ibv_qp* b, ibv_cq* cq, ibv_pd* pd, Bufs& m, ibv_mr* src, ibv_mr* dst,
           ibv_mr* rbuf) {
  ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
  CHECK(mw != nullptr, "alloc_mw type 1: %s", std::strerror(errno));
  const uint32_t first = mw->rkey;
  ibv_mw_bind bind{};
  bind.wr_id = 20;
  bind.send_flags = IBV_SEND_SIGNALED;
  bind.bind_info = {dst, reinterpret_cast<uintptr_t>(m.dst) + 2048, 256, IBV_ACCESS_REMOTE_WRITE};
  CHECK(ibv_bind_mw(b, mw, &bind) == 0, "ibv_bind_mw");
  CHECK(mw->rkey == ibv_inc_rkey(first), "rkey %#x after bind (was %#x)", mw->rkey, first);
  expect_ok(cq, 20, IBV_WC_BIND_MW, "ibv_bind_mw");
  rdma(a, IBV_WR_RDMA_WRITE, 21, m.src, src->lkey, 256, bind.bind_info.addr, mw->rkey);
  expect_ok(cq, 21, IBV_WC_RDMA_WRITE, "write through the type 1 window");
  CHECK(std::memcmp(m.dst + 2048, m.src, 256) == 0, "type 1 window data");
  CHECK(ibv_dereg_mr(dst) == EBUSY, "dereg_mr of an MR with a bound window");

  const uint32_t bound = mw->rkey;
  bind.wr_id = 22;
  bind.bind_info = {nullptr, 0, 0, 0};  // zero length: unbind
  CHECK(ibv_bind_mw(b, mw, &bind) == 0, "ibv_bind_mw unbind");
  expect_ok(cq, 22, IBV_WC_BIND_MW, "unbind");

  post_recv(b, 23, m.rbuf, rbuf->lkey, 64);
  rdma(a, IBV_WR_RDMA_WRITE, 24, m.src, src->lkey, 8, bind.bind_info.addr, bound);
  // Both sides, in either order: A's NAK'd write, B's flushed receive.
  for (int i = 0; i < 2; ++i) {
    const ibv_wc wc = poll_one(cq, "write through an unbound window");
    const ibv_wc_status want = wc.wr_id == 24 ? IBV_WC_REM_ACCESS_ERR : IBV_WC_WR_FLUSH_ERR;
    CHECK((wc.wr_id == 24 || wc.wr_id == 23) && wc.status == want, "wr %llu: %s",
          static_cast<unsigned long long>(wc.wr_id), ibv_wc_status_str(wc.status));
  }
  CHECK(state_of(b) == IBV_QPS_ERR, "responder state %d", state_of(b));
  CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw type 1");
}

// A bind beyond its MR: IBV_WC_MW_BIND_ERR, the QP in error.
void bad_bind(ibv_context* ctx, ibv_pd* pd, ibv_cq* cq, Bufs& m, ibv_mr* dst) {
  ibv_qp* q = make_qp(ctx, pd, cq, true);
  connect_to(q, q->qp_num, 0x500, 0x500);
  ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  CHECK(mw != nullptr, "alloc_mw: %s", std::strerror(errno));
  ibv_qp_ex* qx = ibv_qp_to_qp_ex(q);
  ibv_mw_bind_info info{dst, reinterpret_cast<uintptr_t>(m.dst) + 4000, 200,
                        IBV_ACCESS_REMOTE_WRITE};
  ibv_wr_start(qx);
  qx->wr_id = 30;
  qx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_bind_mw(qx, mw, ibv_inc_rkey(mw->rkey), &info);
  CHECK(ibv_wr_complete(qx) == 0, "wr_complete");
  expect_wc(cq, 30, IBV_WC_MW_BIND_ERR, "bind beyond the MR");
  CHECK(state_of(q) == IBV_QPS_ERR, "state %d after a bind error", state_of(q));
  CHECK(ibv_dealloc_mw(mw) == 0, "dealloc_mw");
  CHECK(ibv_destroy_qp(q) == 0, "destroy_qp");
}

}  // namespace

int main() {
  ibv_context* ctx = burst::test::open_burst0();
  CHECK(ibv_query_gid(ctx, 1, 1, &g_gid) == 0, "query_gid 1");
  check_device(ctx);
  ibv_pd* pd = ibv_alloc_pd(ctx);
  CHECK(pd != nullptr, "alloc_pd: %s", std::strerror(errno));
  ibv_cq* cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
  CHECK(cq != nullptr, "create_cq: %s", std::strerror(errno));
  static Bufs m;
  for (size_t i = 0; i < kLen; ++i) m.src[i] = static_cast<unsigned char>(i * 7 + 1);
  ibv_mr* src = ibv_reg_mr(pd, m.src, kLen, kQpAccess);
  ibv_mr* dst = ibv_reg_mr(pd, m.dst, kLen, kQpAccess | IBV_ACCESS_MW_BIND);
  ibv_mr* back = ibv_reg_mr(pd, m.back, kLen, kQpAccess);
  ibv_mr* rbuf = ibv_reg_mr(pd, m.rbuf, kLen, kQpAccess);
  CHECK(src && dst && back && rbuf, "reg_mr: %s", std::strerror(errno));

  ibv_qp* a = make_qp(ctx, pd, cq, false);
  ibv_qp* b = make_qp(ctx, pd, cq, true);
  connect_to(a, b->qp_num, 0x100, 0x200);
  connect_to(b, a->qp_num, 0x200, 0x100);

  type2(a, b, cq, pd, m, src, dst, back, rbuf);
  rereg(ctx, a, b, cq, pd, m, src);
  type1(a, b, cq, pd, m, src, dst, rbuf);
  bad_bind(ctx, pd, cq, m, dst);

  CHECK(ibv_destroy_qp(a) == 0 && ibv_destroy_qp(b) == 0, "destroy_qp");
  for (ibv_mr* mr : {src, dst, back, rbuf}) CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
  CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
  CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
  CHECK(ibv_close_device(ctx) == 0, "close_device");
  std::printf("PASS\n");
  return 0;
}
