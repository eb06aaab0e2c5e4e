// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Data-path probes through the burst provider, run under `burstctl run`
// against a loopback burstd (the port hears its own frames, so two RC QPs of
// one process talk to each other). Plain libibverbs, no test framework: each
// mode prints what it checked and exits 0 on success, 1 on a failed check.
//
//   access            remote access rules: WRITE to an MR without REMOTE_WRITE,
//                     with a wrong rkey, READ without REMOTE_READ -> the
//                     requester completes with IBV_WC_REM_ACCESS_ERR; with the
//                     right rkey and flags WRITE, READ and atomics work (data checked)
//   hold FILE         registers a buffer, writes "lkey addr rkey" to FILE, sleeps
//   foreign LKEY ADDR a WRITE whose local SGE uses another process's lkey ->
//                     IBV_WC_LOC_PROT_ERR (the key names nothing of ours)
//   stream SECONDS    RDMA WRITEs of 64 KiB in a loop (a victim for kill -9)
//   events            blocks in ibv_get_cq_event with nothing posted; exits 0
//                     when that ends with an error or IBV_EVENT_DEVICE_FATAL
//                     (burstd stopped under it), 1 on a timeout
#include <infiniband/verbs.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/provider/probe_util.h"

namespace {

int g_failures = 0;

void check(bool ok, const char* what) {
  std::printf("%s: %s\n", ok ? "ok" : "FAILED", what);
  if (!ok) ++g_failures;
}

[[noreturn]] void die(const char* what) {
  std::fprintf(stderr, "verbs_data_probe: %s: %s\n", what, std::strerror(errno));
  std::exit(2);
}

struct Dev {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_gid gid{};
};

Dev open_dev() {
  Dev d;
  d.ctx = burst::test::open_burst0();
  d.pd = ibv_alloc_pd(d.ctx);
  if (d.pd == nullptr) die("ibv_alloc_pd");
  if (ibv_query_gid(d.ctx, 1, 1, &d.gid) != 0) die("ibv_query_gid");
  return d;
}

struct Qp {
  ibv_cq* cq = nullptr;
  ibv_qp* qp = nullptr;
};

Qp make_qp(Dev& d, ibv_comp_channel* ch = nullptr) {
  Qp q;
  q.cq = ibv_create_cq(d.ctx, 64, nullptr, ch, 0);
  if (q.cq == nullptr) die("ibv_create_cq");
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = q.cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = 32;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  q.qp = ibv_create_qp(d.pd, &a);
  if (q.qp == nullptr) die("ibv_create_qp");
  return q;
}

void connect(Dev& d, Qp& q, uint32_t dest) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
  if (ibv_modify_qp(q.qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
    die("INIT");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = dest;
  a.rq_psn = 0;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = d.gid;
  a.ah_attr.grh.sgid_index = 1;
  a.ah_attr.grh.hop_limit = 64;
  a.ah_attr.port_num = 1;
  if (ibv_modify_qp(q.qp, &a,
                    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                        IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
    die("RTR");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 10;
  a.retry_cnt = 3;
  a.rnr_retry = 3;
  a.sq_psn = 0;
  a.max_rd_atomic = 4;
  if (ibv_modify_qp(q.qp, &a,
                    IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                        IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
    die("RTS");
}

// A connected pair of RC QPs.
struct Pair {
  Qp a, b;
};
Pair make_pair(Dev& d) {
  Pair p{make_qp(d), make_qp(d)};
  connect(d, p.a, p.b.qp->qp_num);
  connect(d, p.b, p.a.qp->qp_num);
  return p;
}

// Waits (bounded) for one completion; returns its status, or -1 on timeout.
int wait_one(ibv_cq* cq, ibv_wc* out = nullptr) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  ibv_wc wc{};
  while (std::chrono::steady_clock::now() < end) {
    const int n = ibv_poll_cq(cq, 1, &wc);
    if (n < 0) return -2;
    if (n == 1) {
      if (out != nullptr) *out = wc;
      return wc.status;
    }
  }
  return -1;
}

int post_rdma(Qp& q, ibv_wr_opcode op, void* local, uint32_t len, uint32_t lkey, uint64_t raddr,
              uint32_t rkey) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), len, lkey};
  ibv_send_wr wr{};
  wr.wr_id = 7;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
    wr.wr.atomic.remote_addr = raddr;
    wr.wr.atomic.rkey = rkey;
    wr.wr.atomic.compare_add = 5;
  } else {
    wr.wr.rdma.remote_addr = raddr;
    wr.wr.rdma.rkey = rkey;
  }
  ibv_send_wr* bad = nullptr;
  return ibv_post_send(q.qp, &wr, &bad);
}

int mode_access() {
  Dev d = open_dev();
  std::vector<uint8_t> src(4096), dst(4096);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 1);
  ibv_mr* msrc = ibv_reg_mr(d.pd, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* mro = ibv_reg_mr(d.pd, dst.data(), dst.size(), IBV_ACCESS_LOCAL_WRITE);  // no remote
  if (msrc == nullptr || mro == nullptr) die("ibv_reg_mr");
  {
    Pair p = make_pair(d);
    check(post_rdma(p.a, IBV_WR_RDMA_WRITE, src.data(), 64, msrc->lkey,
                    reinterpret_cast<uintptr_t>(dst.data()), mro->rkey) == 0,
          "post WRITE to an MR without REMOTE_WRITE");
    check(wait_one(p.a.cq) == IBV_WC_REM_ACCESS_ERR, "  -> IBV_WC_REM_ACCESS_ERR");
    check(dst[0] == 0, "  -> nothing written");
  }
  {
    Pair p = make_pair(d);
    check(post_rdma(p.a, IBV_WR_RDMA_READ, src.data(), 64, msrc->lkey,
                    reinterpret_cast<uintptr_t>(dst.data()), mro->rkey) == 0,
          "post READ from an MR without REMOTE_READ");
    check(wait_one(p.a.cq) == IBV_WC_REM_ACCESS_ERR, "  -> IBV_WC_REM_ACCESS_ERR");
  }
  ibv_mr* mrw = ibv_reg_mr(d.pd, dst.data(), dst.size(),
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                               IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
  if (mrw == nullptr) die("ibv_reg_mr remote");
  {
    Pair p = make_pair(d);
    check(post_rdma(p.a, IBV_WR_RDMA_WRITE, src.data(), 64, msrc->lkey,
                    reinterpret_cast<uintptr_t>(dst.data()), mrw->rkey ^ 0x5500) == 0,
          "post WRITE with a wrong rkey");
    check(wait_one(p.a.cq) == IBV_WC_REM_ACCESS_ERR, "  -> IBV_WC_REM_ACCESS_ERR");
  }
  {
    Pair p = make_pair(d);
    check(post_rdma(p.a, IBV_WR_RDMA_WRITE, src.data(), 4096, msrc->lkey,
                    reinterpret_cast<uintptr_t>(dst.data()), mrw->rkey) == 0,
          "post WRITE 4 KiB with the right rkey");
    check(wait_one(p.a.cq) == IBV_WC_SUCCESS, "  -> success");
    check(std::memcmp(src.data(), dst.data(), 4096) == 0, "  -> data arrived (cross-memory)");
    std::vector<uint8_t> back(4096);
    ibv_mr* mb = ibv_reg_mr(d.pd, back.data(), back.size(), IBV_ACCESS_LOCAL_WRITE);
    check(post_rdma(p.a, IBV_WR_RDMA_READ, back.data(), 4096, mb->lkey,
                    reinterpret_cast<uintptr_t>(dst.data()), mrw->rkey) == 0 &&
              wait_one(p.a.cq) == IBV_WC_SUCCESS && back == src,
          "READ it back");
    uint64_t* counter = reinterpret_cast<uint64_t*>(dst.data() + 1024);
    *counter = 100;
    uint64_t old = 0;
    ibv_mr* mo = ibv_reg_mr(d.pd, &old, 8, IBV_ACCESS_LOCAL_WRITE);
    check(post_rdma(p.a, IBV_WR_ATOMIC_FETCH_AND_ADD, &old, 8, mo->lkey,
                    reinterpret_cast<uintptr_t>(counter), mrw->rkey) == 0 &&
              wait_one(p.a.cq) == IBV_WC_SUCCESS && old == 100 && *counter == 105,
          "FETCH_AND_ADD: old 100, now 105");
    ibv_dereg_mr(mo);
    ibv_dereg_mr(mb);
  }
  return g_failures == 0 ? 0 : 1;
}

int mode_hold(const char* file) {
  Dev d = open_dev();
  static uint8_t buf[65536];
  ibv_mr* mr = ibv_reg_mr(d.pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr == nullptr) die("ibv_reg_mr");
  FILE* f = std::fopen(file, "w");
  if (f == nullptr) die("fopen");
  std::fprintf(f, "%u %" PRIu64 " %u\n", mr->lkey, static_cast<uint64_t>(reinterpret_cast<uintptr_t>(buf)), mr->rkey);
  std::fclose(f);
  sleep(60);
  return 0;
}

int mode_foreign(uint32_t lkey, uint64_t addr) {
  Dev d = open_dev();
  std::vector<uint8_t> dst(4096);
  ibv_mr* mr = ibv_reg_mr(d.pd, dst.data(), dst.size(),
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr == nullptr) die("ibv_reg_mr");
  Pair p = make_pair(d);
  // The local SGE names the other process's buffer with its lkey.
  check(post_rdma(p.a, IBV_WR_RDMA_WRITE, reinterpret_cast<void*>(addr), 64, lkey,
                  reinterpret_cast<uintptr_t>(dst.data()), mr->rkey) == 0,
        "post WRITE gathering from another application's lkey");
  const int st = wait_one(p.a.cq);
  check(st == IBV_WC_LOC_PROT_ERR, "  -> IBV_WC_LOC_PROT_ERR");
  return g_failures == 0 ? 0 : 1;
}

int mode_stream(int seconds) {
  Dev d = open_dev();
  std::vector<uint8_t> src(65536, 0xab), dst(65536);
  ibv_mr* ms = ibv_reg_mr(d.pd, src.data(), src.size(), IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* md = ibv_reg_mr(d.pd, dst.data(), dst.size(),
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (ms == nullptr || md == nullptr) die("ibv_reg_mr");
  Pair p = make_pair(d);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  uint64_t done = 0;
  int inflight = 0;
  std::printf("streaming\n");
  std::fflush(stdout);
  while (std::chrono::steady_clock::now() < end) {
    while (inflight < 8 && post_rdma(p.a, IBV_WR_RDMA_WRITE, src.data(), 65536, ms->lkey,
                                     reinterpret_cast<uintptr_t>(dst.data()), md->rkey) == 0) {
      ++inflight;
    }
    ibv_wc wc[8];
    const int n = ibv_poll_cq(p.a.cq, 8, wc);
    if (n < 0) return 1;
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) return 1;
    }
    inflight -= n;
    done += static_cast<uint64_t>(n);
  }
  std::printf("streamed %" PRIu64 " writes\n", done);
  return 0;
}

int mode_events() {
  Dev d = open_dev();
  ibv_comp_channel* ch = ibv_create_comp_channel(d.ctx);
  if (ch == nullptr) die("ibv_create_comp_channel");
  Qp q = make_qp(d, ch);
  if (ibv_req_notify_cq(q.cq, 0) != 0) die("ibv_req_notify_cq");
  std::printf("waiting\n");
  std::fflush(stdout);
  // Both the completion channel and the async fd: whichever reports first.
  pollfd pf[2] = {{ch->fd, POLLIN, 0}, {d.ctx->async_fd, POLLIN, 0}};
  if (poll(pf, 2, 20'000) <= 0) {
    std::printf("FAILED: nothing reported within 20 s\n");
    return 1;
  }
  bool fatal = false;
  if (pf[1].revents & POLLIN) {
    ibv_async_event ev;
    if (ibv_get_async_event(d.ctx, &ev) == 0) {
      fatal = ev.event_type == IBV_EVENT_DEVICE_FATAL;
      ibv_ack_async_event(&ev);
    }
  }
  if (pf[0].revents & POLLIN) {
    ibv_cq* cq;
    void* cctx;
    if (ibv_get_cq_event(ch, &cq, &cctx) == 0) {
      ibv_ack_cq_events(cq, 1);
      ibv_wc wc;
      fatal |= ibv_poll_cq(cq, 1, &wc) < 0;
    }
  }
  check(fatal, "burstd going away is reported (DEVICE_FATAL or a failing poll)");
  ibv_wc wc;
  check(ibv_poll_cq(q.cq, 1, &wc) < 0, "ibv_poll_cq fails afterwards");
  return g_failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "access") return mode_access();
  if (mode == "hold" && argc > 2) return mode_hold(argv[2]);
  if (mode == "foreign" && argc > 3) {
    return mode_foreign(static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 0)),
                        std::strtoull(argv[3], nullptr, 0));
  }
  if (mode == "stream" && argc > 2) return mode_stream(std::atoi(argv[2]));
  if (mode == "events") return mode_events();
  std::fprintf(stderr, "usage: verbs_data_probe access|hold FILE|foreign LKEY ADDR|stream S|events\n");
  return 2;
}
