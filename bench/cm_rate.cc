/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// cm_rate: the rdma_cm connection rate, a plain librdmacm program (runs unchanged on the
// kernel's rdma_cm, or under `burstctl run`; self-contained: g++ -O2 cm_rate.cc -lrdmacm
// -libverbs builds it anywhere).
//   server: cm_rate -s ADDR [-p PORT] [-n N] [--qp-depth D]
//     listens, accepts every CONNECT_REQUEST with a QP from rdma_create_qp, destroys the QP
//     and the id when the peer disconnects; with -n N exits after N disconnections.
//   client: cm_rate -c ADDR [-p PORT] [-n N] [-w W] [--qp-depth D] [--json]
//     N RC connections, at most W in flight, all asynchronous on one event channel:
//     rdma_create_id, resolve_addr, resolve_route, create_qp, connect, ESTABLISHED, then
//     rdma_disconnect, DISCONNECTED, destroy_qp and destroy_id; reports established
//     connections/s over the whole run, setup latency (resolve_addr -> ESTABLISHED) and
//     teardown latency (disconnect -> destroyed) p50/p99, failures by kind.
// Output (client): one line "cm_rate key=value ..." (or a JSON object with --json), then a
// human table. Exit 0 when every connection was established, 1 otherwise, 2 on usage.
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  bool server = false;
  std::string addr;
  std::string port = "7471";
  long n = 1000;  // client: connections; server: disconnections before exiting (-n given)
  bool n_given = false;
  long w = 16;
  int qp_depth = 16;
  bool json = false;
  double conn_timeout_s = 15;  // one connection's whole life (client)
};

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

volatile sig_atomic_t g_stop = 0;
void on_signal(int) { g_stop = 1; }

// Shared verbs objects: one PD and one CQ per device for every QP (no traffic flows).
struct Verbs {
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  ibv_cq* cq = nullptr;
};

int verbs_for(Verbs& v, ibv_context* ctx, int depth) {
  if (v.ctx == ctx) return 0;
  if (v.ctx) return -EXDEV;  // a second device: not supported by this tool
  v.pd = ibv_alloc_pd(ctx);
  if (!v.pd) return -errno;
  v.cq = ibv_create_cq(ctx, std::max(2 * depth, 16), nullptr, nullptr, 0);
  if (!v.cq) return -errno;
  v.ctx = ctx;
  return 0;
}

int make_qp(Verbs& v, rdma_cm_id* id, int depth) {
  int rc = verbs_for(v, id->verbs, depth);
  if (rc) return rc;
  ibv_qp_init_attr a{};
  a.send_cq = v.cq;
  a.recv_cq = v.cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = uint32_t(depth);
  a.cap.max_recv_wr = uint32_t(depth);
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  return rdma_create_qp(id, v.pd, &a) ? -errno : 0;
}

void free_verbs(Verbs& v) {
  if (v.cq) ibv_destroy_cq(v.cq);
  if (v.pd) ibv_dealloc_pd(v.pd);
  v = Verbs{};
}

int resolve(const Options& o, sockaddr_storage& ss) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = o.server ? AI_PASSIVE : 0;
  int rc = getaddrinfo(o.addr.empty() ? nullptr : o.addr.c_str(), o.port.c_str(), &hints, &res);
  if (rc) {
    fprintf(stderr, "cm_rate: %s: %s\n", o.addr.c_str(), gai_strerror(rc));
    return -1;
  }
  memcpy(&ss, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return 0;
}

// Waits (at most ms) for an event; nullptr on timeout or error (errno set).
rdma_cm_event* next_event(rdma_event_channel* ch, int ms) {
  pollfd p{ch->fd, POLLIN, 0};
  int r = poll(&p, 1, ms);
  if (r <= 0) return nullptr;
  rdma_cm_event* ev = nullptr;
  return rdma_get_cm_event(ch, &ev) ? nullptr : ev;
}

rdma_conn_param conn_param() {
  rdma_conn_param p{};
  p.responder_resources = 1;
  p.initiator_depth = 1;
  p.retry_count = 7;
  p.rnr_retry_count = 7;
  return p;
}

// ---------------------------------------------------------------- server
int run_server(const Options& o) {
  sockaddr_storage ss{};
  if (resolve(o, ss)) return 2;
  rdma_event_channel* ch = rdma_create_event_channel();
  if (!ch) {
    perror("cm_rate: rdma_create_event_channel");
    return 1;
  }
  rdma_cm_id* listen_id = nullptr;
  if (rdma_create_id(ch, &listen_id, nullptr, RDMA_PS_TCP) ||
      rdma_bind_addr(listen_id, reinterpret_cast<sockaddr*>(&ss)) ||
      rdma_listen(listen_id, 1024)) {
    perror("cm_rate: listen");
    return 1;
  }
  printf("cm_rate server listening on %s port %s\n", o.addr.c_str(), o.port.c_str());
  fflush(stdout);
  Verbs v;
  long accepted = 0, established = 0, disconnected = 0, rejected = 0, errors = 0, live = 0;
  while (!g_stop && (!o.n_given || o.n <= 0 || disconnected + errors < o.n)) {
    rdma_cm_event* ev = next_event(ch, 200);
    if (!ev) continue;
    rdma_cm_id* id = ev->id;
    switch (ev->event) {
      case RDMA_CM_EVENT_CONNECT_REQUEST: {
        rdma_conn_param p = conn_param();
        if (make_qp(v, id, o.qp_depth) == 0 && rdma_accept(id, &p) == 0) {
          accepted++;
          live++;
          rdma_ack_cm_event(ev);
          continue;
        }
        fprintf(stderr, "cm_rate: accept: %s\n", strerror(errno));
        rejected++;
        rdma_reject(id, nullptr, 0);
        if (id->qp) rdma_destroy_qp(id);
        rdma_ack_cm_event(ev);
        rdma_destroy_id(id);
        continue;
      }
      case RDMA_CM_EVENT_ESTABLISHED:
        established++;
        break;
      case RDMA_CM_EVENT_DISCONNECTED:
      case RDMA_CM_EVENT_CONNECT_ERROR:
      case RDMA_CM_EVENT_UNREACHABLE:
      case RDMA_CM_EVENT_REJECTED: {
        (ev->event == RDMA_CM_EVENT_DISCONNECTED ? disconnected : errors)++;
        live--;
        rdma_ack_cm_event(ev);
        if (id->qp) rdma_destroy_qp(id);
        rdma_destroy_id(id);
        continue;
      }
      default:
        break;
    }
    rdma_ack_cm_event(ev);
  }
  printf("cm_rate mode=server accepted=%ld established=%ld disconnected=%ld rejected=%ld "
         "errors=%ld live=%ld\n",
         accepted, established, disconnected, rejected, errors, live);
  rdma_destroy_id(listen_id);
  free_verbs(v);
  rdma_destroy_event_channel(ch);
  return 0;
}

// ---------------------------------------------------------------- client
enum Fail { kAddr, kRoute, kQp, kConnect, kRejected, kUnreachable, kTimeout, kOther, kFails };
const char* const kFailName[kFails] = {"addr",   "route",       "qp",      "connect",
                                       "rejected", "unreachable", "timeout", "other"};

struct Conn {
  rdma_cm_id* id = nullptr;
  uint64_t t0 = 0;       // rdma_resolve_addr
  uint64_t t_disc = 0;   // rdma_disconnect (0: not yet)
  bool in_use = false;
};

struct Client {
  const Options& o;
  rdma_event_channel* ch = nullptr;
  sockaddr_storage dst{};
  Verbs v;
  std::vector<Conn> slots;
  std::vector<uint64_t> setup_ns, teardown_ns;
  long started = 0, done = 0, established = 0;
  long fails[kFails] = {};

  explicit Client(const Options& opt) : o(opt) {}

  void start(Conn& c) {
    c = Conn{};
    c.in_use = true;
    started++;
    c.t0 = now_ns();
    if (rdma_create_id(ch, &c.id, &c, RDMA_PS_TCP)) {
      c.id = nullptr;
      finish(c, kOther);
      return;
    }
    if (rdma_resolve_addr(c.id, nullptr, reinterpret_cast<sockaddr*>(&dst), 5000)) finish(c, kAddr);
  }

  // The connection's end: destroyed, counted; kFails = a clean teardown.
  void finish(Conn& c, Fail why) {
    if (c.id) {
      if (c.id->qp) rdma_destroy_qp(c.id);
      rdma_destroy_id(c.id);
    }
    if (why == kFails)
      teardown_ns.push_back(now_ns() - c.t_disc);
    else
      fails[why]++;
    c.in_use = false;
    c.id = nullptr;
    done++;
  }

  void on_event(rdma_cm_event* ev) {
    Conn& c = *static_cast<Conn*>(ev->id->context);
    rdma_cm_event_type type = ev->event;
    rdma_ack_cm_event(ev);
    switch (type) {
      case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (rdma_resolve_route(c.id, 5000)) finish(c, kRoute);
        return;
      case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        if (make_qp(v, c.id, o.qp_depth)) {
          finish(c, kQp);
          return;
        }
        rdma_conn_param p = conn_param();
        if (rdma_connect(c.id, &p)) finish(c, kConnect);
        return;
      }
      case RDMA_CM_EVENT_ESTABLISHED:
        established++;
        c.t_disc = now_ns();
        setup_ns.push_back(c.t_disc - c.t0);
        if (rdma_disconnect(c.id)) finish(c, kOther);
        return;
      case RDMA_CM_EVENT_DISCONNECTED:
        finish(c, c.t_disc ? kFails : kOther);
        return;
      case RDMA_CM_EVENT_ADDR_ERROR: finish(c, kAddr); return;
      case RDMA_CM_EVENT_ROUTE_ERROR: finish(c, kRoute); return;
      case RDMA_CM_EVENT_CONNECT_ERROR: finish(c, kConnect); return;
      case RDMA_CM_EVENT_UNREACHABLE: finish(c, kUnreachable); return;
      case RDMA_CM_EVENT_REJECTED: finish(c, kRejected); return;
      default: return;  // TIMEWAIT_EXIT, ADDR_CHANGE...: nothing to do
    }
  }

  void expire(uint64_t now) {
    uint64_t limit = uint64_t(o.conn_timeout_s * 1e9);
    for (Conn& c : slots)
      if (c.in_use && now - c.t0 > limit) finish(c, kTimeout);
  }

  int run(double& seconds) {
    if (resolve(o, dst)) return 2;
    ch = rdma_create_event_channel();
    if (!ch) {
      perror("cm_rate: rdma_create_event_channel");
      return 1;
    }
    slots.resize(size_t(std::min(o.w, o.n)));
    setup_ns.reserve(size_t(o.n));
    teardown_ns.reserve(size_t(o.n));
    uint64_t t_start = now_ns(), last_check = t_start;
    for (Conn& c : slots)
      if (started < o.n) start(c);
    while (done < o.n && !g_stop) {
      rdma_cm_event* ev = next_event(ch, 100);
      if (ev) on_event(ev);
      uint64_t t = now_ns();
      if (t - last_check > 100000000ull) {
        expire(t);
        last_check = t;
      }
      for (Conn& c : slots)
        if (!c.in_use && started < o.n) start(c);
    }
    seconds = double(now_ns() - t_start) / 1e9;
    for (Conn& c : slots)
      if (c.in_use) finish(c, kTimeout);  // interrupted
    free_verbs(v);
    rdma_destroy_event_channel(ch);
    return 0;
  }
};

double pct_us(std::vector<uint64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = size_t(p * double(v.size() - 1) + 0.5);
  return double(v[std::min(i, v.size() - 1)]) / 1000.0;
}

void report(const Options& o, const Client& c, double secs) {
  long failed = 0;
  for (long f : c.fails) failed += f;
  double rate = secs > 0 ? double(c.established) / secs : 0;
  double s50 = pct_us(c.setup_ns, 0.5), s99 = pct_us(c.setup_ns, 0.99);
  double t50 = pct_us(c.teardown_ns, 0.5), t99 = pct_us(c.teardown_ns, 0.99);
  if (o.json) {
    printf("{\"mode\": \"client\", \"n\": %ld, \"w\": %ld, \"qp_depth\": %d, \"established\": %ld, "
           "\"failed\": %ld, \"seconds\": %.3f, \"rate\": %.1f, \"setup_p50_us\": %.1f, "
           "\"setup_p99_us\": %.1f, \"teardown_p50_us\": %.1f, \"teardown_p99_us\": %.1f",
           o.n, o.w, o.qp_depth, c.established, failed, secs, rate, s50, s99, t50, t99);
    for (int f = 0; f < kFails; f++) printf(", \"fail_%s\": %ld", kFailName[f], c.fails[f]);
    printf("}\n");
  } else {
    printf("cm_rate mode=client n=%ld w=%ld qp_depth=%d established=%ld failed=%ld seconds=%.3f "
           "rate=%.1f setup_p50_us=%.1f setup_p99_us=%.1f teardown_p50_us=%.1f "
           "teardown_p99_us=%.1f",
           o.n, o.w, o.qp_depth, c.established, failed, secs, rate, s50, s99, t50, t99);
    for (int f = 0; f < kFails; f++) printf(" fail_%s=%ld", kFailName[f], c.fails[f]);
    printf("\n");
  }
  printf("  connections      %10ld established of %ld (%ld failed), %ld in flight at most\n",
         c.established, o.n, failed, o.w);
  printf("  rate             %10.1f established/s over %.3f s\n", rate, secs);
  printf("  setup    (us)    %10.1f p50 %10.1f p99   (resolve_addr -> ESTABLISHED)\n", s50, s99);
  printf("  teardown (us)    %10.1f p50 %10.1f p99   (disconnect -> destroyed)\n", t50, t99);
  for (int f = 0; f < kFails; f++)
    if (c.fails[f]) printf("  failed: %-12s %ld\n", kFailName[f], c.fails[f]);
}

void usage() {
  fprintf(stderr,
          "usage: cm_rate -s ADDR [-p PORT] [-n N] [--qp-depth D]\n"
          "       cm_rate -c ADDR [-p PORT] [-n N] [-w W] [--qp-depth D] [--timeout S] [--json]\n");
}

int parse(int argc, char** argv, Options& o) {
  static const option longs[] = {{"server", required_argument, nullptr, 's'},
                                 {"client", required_argument, nullptr, 'c'},
                                 {"port", required_argument, nullptr, 'p'},
                                 {"num", required_argument, nullptr, 'n'},
                                 {"window", required_argument, nullptr, 'w'},
                                 {"qp-depth", required_argument, nullptr, 'd'},
                                 {"timeout", required_argument, nullptr, 't'},
                                 {"json", no_argument, nullptr, 'j'},
                                 {"help", no_argument, nullptr, 'h'},
                                 {nullptr, 0, nullptr, 0}};
  bool have = false;
  for (int ch; (ch = getopt_long(argc, argv, "s:c:p:n:w:h", longs, nullptr)) != -1;) {
    switch (ch) {
      case 's': o.server = true; o.addr = optarg; have = true; break;
      case 'c': o.server = false; o.addr = optarg; have = true; break;
      case 'p': o.port = optarg; break;
      case 'n': o.n = strtol(optarg, nullptr, 0); o.n_given = true; break;
      case 'w': o.w = strtol(optarg, nullptr, 0); break;
      case 'd': o.qp_depth = int(strtol(optarg, nullptr, 0)); break;
      case 't': o.conn_timeout_s = strtod(optarg, nullptr); break;
      case 'j': o.json = true; break;
      default: return -1;
    }
  }
  if (!have || optind != argc || o.w < 1 || o.qp_depth < 1 || (!o.server && o.n < 1)) return -1;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (parse(argc, argv, o)) {
    usage();
    return 2;
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  setvbuf(stdout, nullptr, _IOLBF, 0);
  if (o.server) return run_server(o);
  Client c(o);
  double secs = 0;
  int rc = c.run(secs);
  if (rc) return rc;
  report(o, c, secs);
  return c.established == o.n ? 0 : 1;
}
