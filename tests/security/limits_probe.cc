// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// burstd's per-user limits and client revocation (issue 12), seen through the
// public libibverbs API only. Run under `burstctl run` by limits_test.sh, which
// drives it: one command per line on stdin, one answer line per command on
// stdout (flushed), so the test decides the order across several processes.
//
//   limits_probe            opens burst0, prints "ready pid=P uid=U", then:
//
//   pd | cq | qp            ibv_alloc_pd / ibv_create_cq (16 entries) /
//                           ibv_create_qp (RC on the first PD and CQ, moved to
//                           INIT): "ok N" (its index), or the errno name
//   free-pd | free-cq | free-qp   destroys the last one created: "ok" or errno
//   mr BYTES                ibv_reg_mr (LOCAL_WRITE|REMOTE_READ|REMOTE_WRITE)
//                           over a fresh private anonymous mapping on the first
//                           PD: "ok N" or the errno name
//   dereg N                 ibv_dereg_mr of MR N: "ok" or the errno name
//   rts N                   QP N INIT -> RTR -> RTS towards itself (GID 1)
//   qpstate N               ibv_query_qp: RESET INIT RTR RTS SQD SQE ERR
//   setresuid UID           setresuid(UID, UID, UID) on this process: "ok"/errno
//   async MS                waits up to MS ms for an async event (poll on
//                           context->async_fd): "IBV_EVENT_QP_FATAL qp=N ms=T"
//                           (N: which of our QPs, -1 if none) or "none ms=T"
//   quit (or end of input)  exits 0 without tearing down (burstd cleans up)
//
// Anything unexpected (a bad command) answers "usage: ..." and goes on.
#include <infiniband/verbs.h>
#include <poll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/provider/probe_util.h"

namespace {

constexpr int kAccess = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

struct Mr {
  ibv_mr* mr = nullptr;
  void* buf = nullptr;
  size_t len = 0;
};

struct Probe {
  ibv_context* ctx = nullptr;
  std::vector<ibv_pd*> pds;
  std::vector<ibv_cq*> cqs;
  std::vector<ibv_qp*> qps;
  std::vector<Mr> mrs;  // index stable: a deregistered one stays as a hole
};

std::string err_name(int e) {
  const char* n = strerrorname_np(e);
  return n != nullptr ? n : "errno " + std::to_string(e);
}

int64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

const char* state_name(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET: return "RESET";
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_SQD: return "SQD";
    case IBV_QPS_SQE: return "SQE";
    case IBV_QPS_ERR: return "ERR";
    default: return "UNKNOWN";
  }
}

std::string ok_index(size_t i) { return "ok " + std::to_string(i); }

std::string do_pd(Probe& p) {
  errno = 0;
  ibv_pd* pd = ibv_alloc_pd(p.ctx);
  if (pd == nullptr) return err_name(errno != 0 ? errno : EIO);
  p.pds.push_back(pd);
  return ok_index(p.pds.size() - 1);
}

std::string do_cq(Probe& p) {
  errno = 0;
  ibv_cq* cq = ibv_create_cq(p.ctx, 16, nullptr, nullptr, 0);
  if (cq == nullptr) return err_name(errno != 0 ? errno : EIO);
  p.cqs.push_back(cq);
  return ok_index(p.cqs.size() - 1);
}

std::string do_qp(Probe& p) {
  if (p.pds.empty()) return "usage: qp needs a PD";
  if (p.cqs.empty()) return "usage: qp needs a CQ";
  ibv_qp_init_attr ia{};
  ia.send_cq = p.cqs[0];
  ia.recv_cq = p.cqs[0];
  ia.qp_type = IBV_QPT_RC;
  ia.cap.max_send_wr = 8;
  ia.cap.max_recv_wr = 8;
  ia.cap.max_send_sge = 1;
  ia.cap.max_recv_sge = 1;
  errno = 0;
  ibv_qp* qp = ibv_create_qp(p.pds[0], &ia);
  if (qp == nullptr) return err_name(errno != 0 ? errno : EIO);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = kAccess;
  if (int e = ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
      e != 0) {
    (void)ibv_destroy_qp(qp);
    return "INIT: " + err_name(e);
  }
  p.qps.push_back(qp);
  return ok_index(p.qps.size() - 1);
}

template <typename T, typename F>
std::string free_last(std::vector<T*>& v, F destroy) {
  if (v.empty()) return "usage: nothing to free";
  if (int e = destroy(v.back()); e != 0) return err_name(e);
  v.pop_back();
  return "ok";
}

std::string do_mr(Probe& p, size_t len) {
  if (p.pds.empty()) return "usage: mr needs a PD";
  if (len == 0) return "usage: mr BYTES";
  void* buf = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED) return "mmap: " + err_name(errno);
  std::memset(buf, 0x5a, len);
  errno = 0;
  ibv_mr* mr = ibv_reg_mr(p.pds[0], buf, len, kAccess);
  if (mr == nullptr) {
    const int e = errno != 0 ? errno : EIO;
    munmap(buf, len);
    return err_name(e);
  }
  p.mrs.push_back(Mr{mr, buf, len});
  return ok_index(p.mrs.size() - 1);
}

std::string do_dereg(Probe& p, size_t i) {
  if (i >= p.mrs.size() || p.mrs[i].mr == nullptr) return "usage: no MR " + std::to_string(i);
  if (int e = ibv_dereg_mr(p.mrs[i].mr); e != 0) return err_name(e);
  munmap(p.mrs[i].buf, p.mrs[i].len);
  p.mrs[i] = Mr{};
  return "ok";
}

std::string do_rts(Probe& p, size_t i) {
  if (i >= p.qps.size()) return "usage: no QP " + std::to_string(i);
  ibv_qp* qp = p.qps[i];
  ibv_gid gid{};
  if (int e = ibv_query_gid(p.ctx, 1, 1, &gid); e != 0) return "query_gid: " + err_name(e);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = qp->qp_num;
  a.rq_psn = 1;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = gid;
  a.ah_attr.grh.sgid_index = 1;
  a.ah_attr.grh.hop_limit = 64;
  if (int e = ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
      e != 0) {
    return "RTR: " + err_name(e);
  }
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = 1;
  a.max_rd_atomic = 1;
  if (int e = ibv_modify_qp(qp, &a,
                            IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
      e != 0) {
    return "RTS: " + err_name(e);
  }
  return "ok";
}

std::string do_qpstate(Probe& p, size_t i) {
  if (i >= p.qps.size()) return "usage: no QP " + std::to_string(i);
  ibv_qp_attr a{};
  ibv_qp_init_attr ia{};
  if (int e = ibv_query_qp(p.qps[i], &a, IBV_QP_STATE, &ia); e != 0) return err_name(e);
  return state_name(a.qp_state);
}

std::string do_setresuid(const std::string& arg) {
  char* end = nullptr;
  const unsigned long uid = std::strtoul(arg.c_str(), &end, 10);
  if (arg.empty() || *end != '\0') return "usage: setresuid UID";
  const auto u = static_cast<uid_t>(uid);
  if (setresuid(u, u, u) != 0) return err_name(errno);
  return "ok";
}

std::string do_async(Probe& p, int timeout_ms) {
  const int64_t start = now_ms();
  pollfd pf{p.ctx->async_fd, POLLIN, 0};
  int r;
  for (;;) {
    const int64_t left = timeout_ms - (now_ms() - start);
    r = poll(&pf, 1, left > 0 ? static_cast<int>(left) : 0);
    if (r >= 0 || errno != EINTR) break;
  }
  const int64_t took = now_ms() - start;
  if (r < 0) return "poll: " + err_name(errno);
  if (r == 0) return "none ms=" + std::to_string(took);
  ibv_async_event ev;
  if (ibv_get_async_event(p.ctx, &ev) != 0) return "ibv_get_async_event: " + err_name(errno);
  std::string out;  // the enum's name (the test compares it)
  switch (ev.event_type) {
    case IBV_EVENT_QP_FATAL: out = "IBV_EVENT_QP_FATAL"; break;
    case IBV_EVENT_DEVICE_FATAL: out = "IBV_EVENT_DEVICE_FATAL"; break;
    case IBV_EVENT_QP_REQ_ERR: out = "IBV_EVENT_QP_REQ_ERR"; break;
    case IBV_EVENT_QP_ACCESS_ERR: out = "IBV_EVENT_QP_ACCESS_ERR"; break;
    default: out = "event " + std::to_string(ev.event_type); break;
  }
  if (ev.event_type == IBV_EVENT_QP_FATAL || ev.event_type == IBV_EVENT_QP_REQ_ERR ||
      ev.event_type == IBV_EVENT_QP_ACCESS_ERR) {
    int which = -1;
    for (size_t i = 0; i < p.qps.size(); ++i) {
      if (p.qps[i] == ev.element.qp) which = static_cast<int>(i);
    }
    out += " qp=" + std::to_string(which);
  }
  ibv_ack_async_event(&ev);
  return out + " ms=" + std::to_string(took);
}

bool parse_size(const std::string& s, size_t* v) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || errno != 0) return false;
  *v = static_cast<size_t>(x);
  return true;
}

std::string run(Probe& p, const std::string& line, bool* quit) {
  std::istringstream in(line);
  std::string cmd, arg;
  in >> cmd >> arg;
  size_t n = 0;
  if (cmd == "pd") return do_pd(p);
  if (cmd == "cq") return do_cq(p);
  if (cmd == "qp") return do_qp(p);
  if (cmd == "free-pd") return free_last(p.pds, ibv_dealloc_pd);
  if (cmd == "free-cq") return free_last(p.cqs, ibv_destroy_cq);
  if (cmd == "free-qp") return free_last(p.qps, ibv_destroy_qp);
  if (cmd == "mr" && parse_size(arg, &n)) return do_mr(p, n);
  if (cmd == "dereg" && parse_size(arg, &n)) return do_dereg(p, n);
  if (cmd == "rts" && parse_size(arg, &n)) return do_rts(p, n);
  if (cmd == "qpstate" && parse_size(arg, &n)) return do_qpstate(p, n);
  if (cmd == "setresuid") return do_setresuid(arg);
  if (cmd == "async" && parse_size(arg, &n)) return do_async(p, static_cast<int>(n));
  if (cmd == "quit") {
    *quit = true;
    return "bye";
  }
  return "usage: unknown command '" + line + "'";
}

}  // namespace

int main() {
  Probe p;
  p.ctx = burst::test::open_burst0();
  std::printf("ready pid=%d uid=%u\n", static_cast<int>(getpid()), static_cast<unsigned>(getuid()));
  std::fflush(stdout);
  std::string line;
  bool quit = false;
  while (!quit && std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::printf("%s\n", run(p, line, &quit).c_str());
    std::fflush(stdout);
  }
  return 0;
}
