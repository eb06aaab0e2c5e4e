// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The ibv_qp_ex work-request builder over the real data path, through the
// public libibverbs API. Run under `burstctl run --socket SOCK` with burstd
// running (provider_test.sh does both):
//
//   - ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS gives a QP that
//     ibv_qp_to_qp_ex() turns into an ibv_qp_ex; asking for TSO fails with
//     EOPNOTSUPP;
//   - the RC QP is connected to itself (dgid = the port's GID 1, dest QPN =
//     its own) and one batch of three WRs, built with ibv_wr_*, goes out in
//     one ibv_wr_complete: an RDMA WRITE from an SGE, a SEND of inline data
//     (the source buffer is overwritten right after the setter) and an RDMA
//     READ back; the three completions carry the wr_ids given, the data lands;
//   - a batch with a builder error (an SGE setter before any WR) is refused
//     with EINVAL and posts nothing; ibv_wr_abort drops a batch.
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

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
constexpr size_t kLen = 4096;

void connect_to_self(ibv_qp* qp, const ibv_gid& gid) {
  burst::test::RcPath p;
  p.access = kAccess;
  p.dest_qpn = qp->qp_num;
  p.rq_psn = p.sq_psn = 0x111;
  p.rd_atomic = 4;
  burst::test::rc_to_rts_or_die(qp, gid, p);
}

// Polls until n completions arrived (seconds at most).
int poll_n(ibv_cq* cq, ibv_wc* wc, int n, int seconds) {
  int got = 0;
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (got < n) {
    const int r = ibv_poll_cq(cq, n - got, wc + got);
    CHECK(r >= 0, "poll_cq: %d", r);
    got += r;
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (now.tv_sec - start.tv_sec >= seconds) break;
  }
  return got;
}

}  // namespace

int main() {
  ibv_context* ctx = burst::test::open_burst0();
  ibv_gid gid{};
  CHECK(ibv_query_gid(ctx, 1, 1, &gid) == 0, "query_gid 1");

  ibv_pd* pd = ibv_alloc_pd(ctx);
  CHECK(pd != nullptr, "alloc_pd: %s", std::strerror(errno));
  ibv_cq* cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
  CHECK(cq != nullptr, "create_cq: %s", std::strerror(errno));
  static unsigned char src[kLen], dst[kLen], back[kLen], rbuf[kLen];
  for (size_t i = 0; i < kLen; ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
  ibv_mr* mr_src = ibv_reg_mr(pd, src, kLen, kAccess);
  ibv_mr* mr_dst = ibv_reg_mr(pd, dst, kLen, kAccess);
  ibv_mr* mr_back = ibv_reg_mr(pd, back, kLen, kAccess);
  ibv_mr* mr_rbuf = ibv_reg_mr(pd, rbuf, kLen, kAccess);
  CHECK(mr_src && mr_dst && mr_back && mr_rbuf, "reg_mr: %s", std::strerror(errno));

  ibv_qp_init_attr_ex ia{};
  ia.qp_type = IBV_QPT_RC;
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.cap.max_send_wr = 16;
  ia.cap.max_recv_wr = 16;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  ia.cap.max_inline_data = 64;
  ia.sq_sig_all = 0;
  ia.pd = pd;
  ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  ia.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
  errno = 0;
  CHECK(ibv_create_qp_ex(ctx, &ia) == nullptr && errno == EOPNOTSUPP, "TSO ops: errno %d", errno);
  ia.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ;
  ibv_qp* qp = ibv_create_qp_ex(ctx, &ia);
  CHECK(qp != nullptr, "create_qp_ex: %s", std::strerror(errno));
  ibv_qp_ex* qpx = ibv_qp_to_qp_ex(qp);
  CHECK(qpx != nullptr && &qpx->qp_base == qp, "ibv_qp_to_qp_ex");
  connect_to_self(qp, gid);

  ibv_sge rsge{reinterpret_cast<uintptr_t>(rbuf), kLen, mr_rbuf->lkey};
  ibv_recv_wr rwr{};
  rwr.wr_id = 99;
  rwr.sg_list = &rsge;
  rwr.num_sge = 1;
  ibv_recv_wr* bad_r = nullptr;
  CHECK(ibv_post_recv(qp, &rwr, &bad_r) == 0, "post_recv");

  // A failed batch posts nothing; an aborted one neither.
  ibv_wr_start(qpx);
  ibv_wr_set_sge(qpx, mr_src->lkey, reinterpret_cast<uintptr_t>(src), 8);
  ibv_wr_send(qpx);
  CHECK(ibv_wr_complete(qpx) == EINVAL, "setter before any WR");
  ibv_wr_start(qpx);
  qpx->wr_id = 5;
  ibv_wr_send(qpx);
  ibv_wr_abort(qpx);

  char msg[48] = "inline through ibv_wr_set_inline_data";
  const size_t msg_len = std::strlen(msg) + 1;
  ibv_wr_start(qpx);
  qpx->wr_id = 1;
  qpx->wr_flags = IBV_SEND_SIGNALED;
  ibv_wr_rdma_write(qpx, mr_dst->rkey, reinterpret_cast<uintptr_t>(dst));
  ibv_wr_set_sge(qpx, mr_src->lkey, reinterpret_cast<uintptr_t>(src), kLen);
  qpx->wr_id = 2;
  ibv_wr_send(qpx);
  ibv_wr_set_inline_data(qpx, msg, msg_len);
  std::memset(msg, 'X', sizeof(msg));  // copied by the setter
  qpx->wr_id = 3;
  qpx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_FENCE;  // after the WRITE
  ibv_wr_rdma_read(qpx, mr_dst->rkey, reinterpret_cast<uintptr_t>(dst));
  ibv_wr_set_sge(qpx, mr_back->lkey, reinterpret_cast<uintptr_t>(back), kLen);
  const int e = ibv_wr_complete(qpx);
  CHECK(e == 0, "wr_complete: %s", std::strerror(e));

  ibv_wc wc[8];
  const int got = poll_n(cq, wc, 4, 5);  // WRITE, SEND, READ, and the receive
  CHECK(got == 4, "%d completions, want 4", got);
  bool seen[4] = {};
  for (int i = 0; i < got; ++i) {
    CHECK(wc[i].status == IBV_WC_SUCCESS, "wr_id %llu: %s",
          static_cast<unsigned long long>(wc[i].wr_id), ibv_wc_status_str(wc[i].status));
    switch (wc[i].wr_id) {
      case 1:
        CHECK(wc[i].opcode == IBV_WC_RDMA_WRITE, "opcode 1");
        seen[0] = true;
        break;
      case 2:
        CHECK(wc[i].opcode == IBV_WC_SEND, "opcode 2");
        seen[1] = true;
        break;
      case 3:
        CHECK(wc[i].opcode == IBV_WC_RDMA_READ, "opcode 3");
        seen[2] = true;
        break;
      case 99:
        CHECK(wc[i].opcode == IBV_WC_RECV && wc[i].byte_len == msg_len, "recv %u bytes",
              wc[i].byte_len);
        seen[3] = true;
        break;
      default:
        CHECK(false, "unexpected wr_id %llu", static_cast<unsigned long long>(wc[i].wr_id));
    }
  }
  CHECK(seen[0] && seen[1] && seen[2] && seen[3], "a completion is missing");
  CHECK(std::memcmp(dst, src, kLen) == 0, "RDMA WRITE data differs");
  CHECK(std::memcmp(back, src, kLen) == 0, "RDMA READ data differs");
  CHECK(std::strcmp(reinterpret_cast<char*>(rbuf), "inline through ibv_wr_set_inline_data") == 0,
        "inline SEND data differs: '%.40s'", reinterpret_cast<char*>(rbuf));
  CHECK(poll_n(cq, wc, 1, 1) == 0, "a completion for the failed or aborted batch");

  CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
  for (ibv_mr* mr : {mr_src, mr_dst, mr_back, mr_rbuf}) CHECK(ibv_dereg_mr(mr) == 0, "dereg_mr");
  CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
  CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
  CHECK(ibv_close_device(ctx) == 0, "close_device");
  std::printf("PASS\n");
  return 0;
}
