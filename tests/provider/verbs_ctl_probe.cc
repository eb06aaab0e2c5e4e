// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The provider's control path through burstd, seen through the public
// libibverbs API. Run under `burstctl run --socket SOCK` with burstd running
// (provider_test.sh does both):
//
//   verbs_ctl_probe [--qpn-file FILE] [--hold-until FILE]
//
// opens burst0, allocates a PD, creates a CQ and an RC QP (caps rounded up),
// moves it INIT -> RTR -> RTS towards itself (dgid = the port's GID 1, dest QPN
// = its own), queries it back (state and every attribute it set), checks the
// errors of what is not there (EOPNOTSUPP: UC, create_srq_ex;
// EBUSY: a CQ or PD still in use; EINVAL: an address without GRH), a UD QP to
// RTS, then writes the RC QP's number to --qpn-file and waits for --hold-until
// to exist (so the test can look at burstd, or kill this process), and
// destroys everything. Prints "PASS" and exits 0; a failed check prints
// "FAIL: ..." and exits 1.
#include <infiniband/verbs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/provider/probe_util.h"

namespace {

constexpr uint32_t kRqPsn = 0x123456;
constexpr uint32_t kSqPsn = 0x654321;
constexpr uint32_t kFlowLabel = 0x12345;
constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

void modify(ibv_qp* qp, ibv_qp_attr* a, int mask, const char* what) {
  const int e = ibv_modify_qp(qp, a, mask);
  CHECK(e == 0, "modify_qp %s: %s", what, std::strerror(e));
  CHECK(qp->state == a->qp_state, "qp->state after %s", what);
}

void rc_to_rts(ibv_qp* qp, const ibv_gid& gid) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = kAccess;
  modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT");

  // An address without a GRH cannot be carried by RoCE.
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = qp->qp_num;
  a.rq_psn = kRqPsn;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = 1;
  const int rtr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  CHECK(ibv_modify_qp(qp, &a, rtr_mask) == EINVAL, "RTR without GRH must be EINVAL");
  CHECK(qp->state == IBV_QPS_INIT, "a failed modify changed qp->state");

  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = gid;
  a.ah_attr.grh.sgid_index = 1;
  a.ah_attr.grh.hop_limit = 33;
  a.ah_attr.grh.traffic_class = 0x20;
  a.ah_attr.grh.flow_label = kFlowLabel;
  modify(qp, &a, rtr_mask, "RTR");

  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 16;
  a.retry_cnt = 5;
  a.rnr_retry = 6;
  a.sq_psn = kSqPsn;
  a.max_rd_atomic = 2;
  modify(qp, &a,
         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
             IBV_QP_MAX_QP_RD_ATOMIC,
         "RTS");
}

void check_rc_query(ibv_qp* qp, ibv_cq* cq, const ibv_gid& gid) {
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  const int all = IBV_QP_STATE | IBV_QP_CUR_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                  IBV_QP_ACCESS_FLAGS | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_TIMEOUT |
                  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_RQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
                  IBV_QP_MIN_RNR_TIMER | IBV_QP_SQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_CAP |
                  IBV_QP_DEST_QPN;
  const int e = ibv_query_qp(qp, &a, all, &init);
  CHECK(e == 0, "query_qp: %s", std::strerror(e));
  CHECK(a.qp_state == IBV_QPS_RTS, "state %d", a.qp_state);
  CHECK(a.path_mtu == IBV_MTU_1024, "path_mtu %d", a.path_mtu);
  CHECK(a.dest_qp_num == qp->qp_num, "dest_qp_num %u", a.dest_qp_num);
  CHECK(a.rq_psn == kRqPsn && a.sq_psn == kSqPsn, "psn rq %#x sq %#x", a.rq_psn, a.sq_psn);
  CHECK(a.qp_access_flags == static_cast<unsigned>(kAccess), "access %#x", a.qp_access_flags);
  CHECK(a.port_num == 1 && a.pkey_index == 0, "port %u pkey %u", a.port_num, a.pkey_index);
  CHECK(a.timeout == 16 && a.retry_cnt == 5 && a.rnr_retry == 6, "timeout %u retry %u rnr %u",
        a.timeout, a.retry_cnt, a.rnr_retry);
  CHECK(a.max_rd_atomic == 2 && a.max_dest_rd_atomic == 4, "rd_atomic %u dest %u", a.max_rd_atomic,
        a.max_dest_rd_atomic);
  CHECK(a.min_rnr_timer == 12, "min_rnr_timer %u", a.min_rnr_timer);
  CHECK(a.ah_attr.is_global == 1, "AV without GRH");
  CHECK(std::memcmp(a.ah_attr.grh.dgid.raw, gid.raw, 16) == 0, "dgid differs");
  CHECK(a.ah_attr.grh.sgid_index == 1 && a.ah_attr.grh.hop_limit == 33 &&
            a.ah_attr.grh.traffic_class == 0x20 && a.ah_attr.grh.flow_label == kFlowLabel,
        "grh sgid %u hop %u tclass %u flow %#x", a.ah_attr.grh.sgid_index, a.ah_attr.grh.hop_limit,
        a.ah_attr.grh.traffic_class, a.ah_attr.grh.flow_label);
  CHECK(a.cap.max_send_wr == 16 && a.cap.max_recv_wr == 32, "cap wr %u/%u", a.cap.max_send_wr,
        a.cap.max_recv_wr);
  CHECK(init.qp_type == IBV_QPT_RC && init.send_cq == cq && init.recv_cq == cq &&
            init.cap.max_send_wr == 16 && init.sq_sig_all == 1,
        "init_attr type %d sig_all %d", init.qp_type, init.sq_sig_all);
  CHECK(qp->state == IBV_QPS_RTS, "qp->state after query");
}

void check_not_yet(ibv_pd* pd, ibv_cq* cq, ibv_qp* qp) {
  char buf[64];
  errno = 0;
  ibv_mr* mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
  CHECK(mr != nullptr && mr->lkey != 0, "reg_mr: errno %d", errno);
  CHECK(ibv_dealloc_pd(pd) == EBUSY, "dealloc_pd with an MR on it");
  CHECK(mr != nullptr && ibv_dereg_mr(mr) == 0, "dereg_mr");
  ibv_wc wc;
  CHECK(ibv_poll_cq(cq, 1, &wc) == 0, "poll_cq on an empty CQ returns 0");
  ibv_srq_init_attr srq{};
  srq.attr.max_wr = 16;
  srq.attr.max_sge = 1;
  errno = 0;
  ibv_srq* s = ibv_create_srq(pd, &srq);
  CHECK(s != nullptr && srq.attr.max_wr >= 16, "create_srq: errno %d", errno);
  ibv_srq_attr sa{};
  CHECK(s != nullptr && ibv_query_srq(s, &sa) == 0 && sa.max_wr >= 16, "query_srq");
  CHECK(s != nullptr && ibv_destroy_srq(s) == 0, "destroy_srq");
  CHECK(ibv_qp_to_qp_ex(qp) == nullptr, "no ibv_qp_ex without the work-request API");
  // In use: burstd refuses, the objects stay usable.
  CHECK(ibv_destroy_cq(cq) == EBUSY, "destroy_cq with a QP on it");
  CHECK(ibv_dealloc_pd(pd) == EBUSY, "dealloc_pd with a QP on it");
}

void check_create_errors(ibv_context* ctx, ibv_pd* pd, ibv_cq* cq) {
  ibv_qp_init_attr ia{};
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.cap.max_send_wr = 1;
  ia.cap.max_recv_wr = 1;
  ia.qp_type = IBV_QPT_UC;
  errno = 0;
  CHECK(ibv_create_qp(pd, &ia) == nullptr && errno == EOPNOTSUPP, "UC QP: errno %d", errno);
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_sge = 1000;
  errno = 0;
  CHECK(ibv_create_qp(pd, &ia) == nullptr && errno == EINVAL, "oversized caps: errno %d", errno);
  errno = 0;
  CHECK(ibv_create_cq(ctx, 0, nullptr, nullptr, 0) == nullptr && errno == EINVAL, "cqe 0");

  // ibv_create_cq_ex: created in burstd, polled on its ring.
  ibv_cq_init_attr_ex cx{};
  cx.cqe = 8;
  cx.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
  ibv_cq_ex* cqx = ibv_create_cq_ex(ctx, &cx);
  CHECK(cqx != nullptr, "create_cq_ex: %s", std::strerror(errno));
  CHECK(cqx->cqe >= 8, "cq_ex cqe %d", cqx->cqe);
  ibv_poll_cq_attr pa{};
  CHECK(ibv_start_poll(cqx, &pa) == ENOENT, "start_poll on an empty CQ: ENOENT");
  CHECK(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)) == 0, "destroy cq_ex");
}

void ud_to_rts(ibv_pd* pd, ibv_cq* cq) {
  ibv_qp_init_attr ia{};
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.cap.max_send_wr = 4;
  ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_UD;
  ibv_qp* qp = ibv_create_qp(pd, &ia);
  CHECK(qp != nullptr, "UD QP: %s", std::strerror(errno));
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qkey = 0x11111111;
  modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, "UD INIT");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  modify(qp, &a, IBV_QP_STATE, "UD RTR");
  a.qp_state = IBV_QPS_RTS;
  a.sq_psn = 7;
  modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN, "UD RTS");
  ibv_qp_init_attr init{};
  CHECK(ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_QKEY, &init) == 0, "UD query");
  CHECK(a.qp_state == IBV_QPS_RTS && a.qkey == 0x11111111 && init.qp_type == IBV_QPT_UD,
        "UD state %d qkey %#x", a.qp_state, a.qkey);
  CHECK(ibv_destroy_qp(qp) == 0, "destroy UD QP");
}

}  // namespace

int main(int argc, char** argv) {
  std::string qpn_file, hold_until;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--qpn-file" && i + 1 < argc) {
      qpn_file = argv[++i];
    } else if (a == "--hold-until" && i + 1 < argc) {
      hold_until = argv[++i];
    } else {
      std::fprintf(stderr, "usage: verbs_ctl_probe [--qpn-file FILE] [--hold-until FILE]\n");
      return 2;
    }
  }

  ibv_context* ctx = burst::test::open_burst0();
  ibv_gid gid{};
  CHECK(ibv_query_gid(ctx, 1, 1, &gid) == 0, "GID 1");

  ibv_pd* pd = ibv_alloc_pd(ctx);
  CHECK(pd != nullptr, "alloc_pd: %s", std::strerror(errno));
  CHECK(pd->context == ctx, "pd->context");
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  CHECK(cq != nullptr, "create_cq: %s", std::strerror(errno));
  CHECK(cq->cqe >= 16 && cq->context == ctx, "cq cqe %d", cq->cqe);

  ibv_qp_init_attr ia{};
  ia.send_cq = cq;
  ia.recv_cq = cq;
  ia.cap.max_send_wr = 10;  // rounded up to 16
  ia.cap.max_recv_wr = 20;  // to 32
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  ia.qp_type = IBV_QPT_RC;
  ia.sq_sig_all = 1;
  ibv_qp* qp = ibv_create_qp(pd, &ia);
  CHECK(qp != nullptr, "create RC QP: %s", std::strerror(errno));
  CHECK(ia.cap.max_send_wr == 16 && ia.cap.max_recv_wr == 32, "caps returned %u/%u",
        ia.cap.max_send_wr, ia.cap.max_recv_wr);
  CHECK(qp->qp_num != 0 && qp->state == IBV_QPS_RESET && qp->pd == pd && qp->send_cq == cq,
        "qp fields");

  rc_to_rts(qp, gid);
  check_rc_query(qp, cq, gid);
  check_not_yet(pd, cq, qp);
  check_create_errors(ctx, pd, cq);
  ud_to_rts(pd, cq);
  std::printf("RC QP %u in RTS\n", qp->qp_num);
  std::fflush(stdout);

  if (!qpn_file.empty()) {
    const std::string tmp = qpn_file + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    CHECK(f != nullptr, "open %s", tmp.c_str());
    std::fprintf(f, "%u\n", qp->qp_num);
    std::fclose(f);
    CHECK(std::rename(tmp.c_str(), qpn_file.c_str()) == 0, "rename to %s", qpn_file.c_str());
  }
  if (!hold_until.empty()) {
    for (int i = 0; i < 1200 && access(hold_until.c_str(), F_OK) != 0; ++i) usleep(50'000);
    CHECK(access(hold_until.c_str(), F_OK) == 0, "%s never appeared", hold_until.c_str());
  }

  CHECK(ibv_destroy_qp(qp) == 0, "destroy_qp");
  CHECK(ibv_destroy_cq(cq) == 0, "destroy_cq");
  CHECK(ibv_dealloc_pd(pd) == 0, "dealloc_pd");
  CHECK(ibv_close_device(ctx) == 0, "close_device");
  std::printf("PASS\n");
  return 0;
}
