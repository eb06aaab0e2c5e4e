// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// burst-xfer over a network backend (AF_XDP or DPDK, opened by the port assembly
// burstd uses too: port/port.h): one peer per host.
//
//   server: burst-xfer --backend xdp --netdev IF [--workers N]
//   client: burst-xfer --backend xdp --netdev IF [--workers N] --op ... SERVER
//   DPDK:   --backend dpdk [--netdev IF] [--dpdk-port DEVARGS --address A/LEN] [--eal ARGS]
//
// Setup over a TCP side channel (which itself runs over the same netdev through
// the kernel: the XDP program passes it): the client sends its parameters, both
// sides create their QPs and memory, exchange GID / QPNs / PSNs / rkey / VA,
// resolve the peer's MAC from the kernel's neighbour table (or, on a DPDK port
// with no kernel netdev, take the GID and MAC the peer sent) and connect. Then
// every worker thread runs its own engine, queues and QPs (QP k lives on
// worker k % N on both sides); frames that arrive on another worker's queue are
// handed over through SPSC rings. The client ends with DONE, the server answers
// with its statistics.
#include <sched.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/engine.h"
#include "core/mr.h"
#include "core/worker.h"
#include "net/addr.h"
#include "port/port.h"
#include "tools/burst-xfer/perftest_compat.h"
#include "tools/burst-xfer/sidechannel.h"
#include "tools/burst-xfer/xfer.h"

namespace burst::tools {
namespace {

constexpr int kSetupTimeoutMs = 30'000;

[[noreturn]] void fail(const std::string& m) { throw std::runtime_error(m); }

void check(const core::Status& s, const std::string& what) {
  if (!s.ok()) fail(what + " failed (errno " + std::to_string(s.to_errno()) + ")");
}

std::string join(const std::vector<uint32_t>& v) {
  std::string s;
  for (uint32_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

std::vector<uint32_t> split_u32(const std::string& s) {
  std::vector<uint32_t> v;
  size_t pos = 0;
  while (pos <= s.size() && !s.empty()) {
    const size_t c = s.find(',', pos);
    v.push_back(static_cast<uint32_t>(std::stoul(s.substr(pos, c - pos), nullptr, 0)));
    if (c == std::string::npos) break;
    pos = c + 1;
  }
  return v;
}

struct WorkerCtx {
  core::CopyEngine copier;
  std::unique_ptr<core::Engine> engine;
  std::unique_ptr<port::WorkerLoop> worker;  // its queues and the poll loop over them
  uint32_t cq = 0;
  std::vector<uint32_t> qps;  // global QP indices owned by this worker
  std::vector<std::unique_ptr<QpRequester>> reqs;
  std::vector<std::unique_ptr<QpResponder>> resps;
  std::vector<uint32_t> local_of_qpn;  // QPN -> index into reqs / resps
  Results res;
};

class Node {
 public:
  Node(const Options& o, bool client) : o_(o), client_(client) {}

  int run();
  // --peer perftest: the client of a stock perftest server (perftest_compat.h).
  int run_perftest();

 private:
  void open_datapath();
  void handshake(SideChannel& sc);
  void create_qps();
  void connect_qps(const std::map<std::string, std::string>& peer);
  void worker_loop(WorkerCtx& w);

  Options o_;
  bool client_;
  Params p_;
  std::vector<net::Gid> gids_;
  net::Gid address_gid_{};  // --address, on a port without a kernel netdev
  uint32_t sgid_index_ = 0;
  net::Gid peer_gid_{};
  core::MrTable mrs_;
  uint32_t pd_ = 0;
  // Destroyed after workers_ (their loops run on its queues and handoff rings).
  std::unique_ptr<port::Port> port_;
  std::vector<std::unique_ptr<WorkerCtx>> workers_;
  std::vector<uint32_t> qpns_, psns_;
  std::vector<uint8_t> local_, check_;
  uint32_t lkey_ = 0, rkey_ = 0, check_lkey_ = 0;
  uint64_t region_ = 0;  // bytes per QP in local_
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> budget_{0};
  uint64_t deadline_ns_ = 0;
};

void Node::open_datapath() {
  if (o_.backend == "xdp" && o_.netdev.empty())
    fail("--backend xdp needs --netdev IF (the interface that carries RoCE)");
  if (o_.backend == "dpdk" && o_.netdev.empty() && (o_.dpdk_port.empty() || o_.address.empty()))
    fail("--backend dpdk needs --netdev IF (net_af_packet on it, or the kernel netdev behind "
         "--dpdk-port), or --dpdk-port DEVARGS with --address A.B.C.D/LEN for a port without one");
  port::PortConfig pc;
  pc.kind = o_.backend == "dpdk" ? port::Kind::kDpdk : port::Kind::kXdp;
  pc.netdev = o_.netdev;
  pc.workers = o_.workers;
  if (o_.netdev.empty()) {
    // A DPDK port with no kernel netdev: its identity comes from the options.
    pc.mtu = o_.port_mtu != 0 ? o_.port_mtu : o_.mtu <= 1024 ? 1500 : 9000;
    net::IfAddress a;
    if (!port::parse_ipv4_prefix(o_.address, &a))
      fail("--address " + o_.address + ": expected A.B.C.D/LEN");
    pc.addresses.push_back(a);
    address_gid_ = a.addr;
  }
  pc.xdp.mode = o_.xdp_mode == "native"    ? datapath::XdpAttachMode::kNative
                : o_.xdp_mode == "generic" ? datapath::XdpAttachMode::kGeneric
                                           : datapath::XdpAttachMode::kAuto;
  pc.xdp.frames = o_.frames;
  pc.dpdk.devargs = o_.dpdk_port;
  pc.dpdk.eal = o_.eal;
  std::string error;
  port_ = port::open_port(pc, &error);
  if (!port_) fail(error);
  const port::PortInfo& pi = port_->info();
  if (!pi.notes.empty()) std::fprintf(stderr, "burst-xfer: %s\n", pi.notes.c_str());
  for (const std::string& w : pi.warnings)
    std::fprintf(stderr, "burst-xfer: warning: %s\n", w.c_str());
  gids_ = pi.gids;
  for (uint32_t w = 0; w < o_.workers; ++w) workers_.push_back(std::make_unique<WorkerCtx>());
}

void Node::handshake(SideChannel& sc) {
  if (client_) {
    sc.send_line("HELLO", {{"op", o_.op},
                           {"size", std::to_string(o_.size)},
                           {"qps", std::to_string(o_.qps)},
                           {"depth", std::to_string(o_.depth)},
                           {"mtu", std::to_string(o_.mtu)},
                           {"verify", o_.verify ? "1" : "0"}});
  } else {
    auto kv = sc.recv_line("HELLO", kSetupTimeoutMs);
    o_.op = field_str(kv, "op");
    o_.size = field_u64(kv, "size");
    o_.qps = static_cast<uint32_t>(field_u64(kv, "qps"));
    o_.depth = static_cast<uint32_t>(field_u64(kv, "depth"));
    o_.mtu = static_cast<uint32_t>(field_u64(kv, "mtu"));
    o_.verify = field_u64(kv, "verify") != 0;
    if (o_.qps == 0 || o_.qps > 1024 || o_.depth == 0 || o_.depth > 1024 || o_.size > (1u << 30) ||
        (o_.mtu != 256 && o_.mtu != 512 && o_.mtu != 1024 && o_.mtu != 2048 && o_.mtu != 4096))
      fail("client sent parameters out of range");
  }
  if (!parse_op(o_.op, &p_.op)) fail("unknown operation '" + o_.op + "'");
  p_.size = static_cast<uint32_t>(o_.size);
  p_.depth = o_.depth;
  p_.verify = o_.verify;
  // The GID of the address this host uses towards the peer: the side
  // channel's, or --address on a port without a kernel netdev (then the side
  // channel may run over any path, and SETUP carries the peer's GID and MAC).
  net::Gid local{};
  if (!net::parse_gid(sc.local_address(), &local) || !net::parse_gid(sc.peer_address(), &peer_gid_))
    fail("cannot parse the side channel's addresses");
  if (o_.netdev.empty()) local = address_gid_;
  sgid_index_ = UINT32_MAX;
  for (size_t i = 0; i < gids_.size(); ++i)
    if (gids_[i] == local) sgid_index_ = static_cast<uint32_t>(i);
  if (sgid_index_ == UINT32_MAX)
    fail("the side channel runs over " + sc.local_address() + ", which is not an address of " +
         o_.netdev + ": name the server by an address reachable through --netdev");
}

void Node::create_qps() {
  const uint64_t slot = std::max<uint64_t>(o_.size, 1);
  region_ = slot * o_.depth * 2;  // responders use 2 x depth receive slots
  local_.assign(region_ * o_.qps, 0);
  check_.assign(region_ * o_.qps, 0);
  pd_ = mrs_.alloc_pd();
  check(mrs_.reg_mr(pd_, local_.data(), reinterpret_cast<uint64_t>(local_.data()), local_.size(),
                    core::kAccessLocalWrite | core::kAccessRemoteWrite | core::kAccessRemoteRead,
                    &lkey_, &rkey_),
        "reg_mr");
  uint32_t unused;
  check(mrs_.reg_mr(pd_, check_.data(), reinterpret_cast<uint64_t>(check_.data()), check_.size(),
                    core::kAccessLocalWrite, &check_lkey_, &unused),
        "reg_mr");
  for (uint32_t w = 0; w < o_.workers; ++w) {
    WorkerCtx& c = *workers_[w];
    core::EngineConfig cfg = port_->engine_config(w);
    cfg.window_pkts = o_.window;
    c.engine = std::make_unique<core::Engine>(cfg, mrs_, c.copier);
    c.worker = port_->make_loop(w, *c.engine);
    check(c.engine->create_cq(std::max<uint32_t>(4096, 8 * o_.qps * (o_.depth + 4)), &c.cq),
          "create_cq");
  }
  qpns_.resize(o_.qps);
  psns_.resize(o_.qps);
  for (uint32_t q = 0; q < o_.qps; ++q) {
    WorkerCtx& c = *workers_[q % o_.workers];
    core::QpInitAttr ia;
    ia.type = core::QpType::kRc;
    ia.pd = pd_;
    ia.send_cq = ia.recv_cq = c.cq;
    ia.cap.max_send_wr = 2 * o_.depth + 4;
    ia.cap.max_recv_wr = 2 * o_.depth + 4;
    check(c.engine->create_qp(ia, &qpns_[q]), "create_qp");
    psns_[q] = static_cast<uint32_t>((now_ns() * 2654435761u + q * 7919u) & 0xFFFFFF);
    c.qps.push_back(q);
    core::QpAttr a;
    a.qp_state = core::QpState::kInit;
    a.port_num = 1;
    a.qp_access_flags = core::kAccessRemoteWrite | core::kAccessRemoteRead;
    check(c.engine->modify_qp(
              qpns_[q], a,
              core::kQpState | core::kQpPkeyIndex | core::kQpPort | core::kQpAccessFlags),
          "modify_qp(INIT)");
  }
}

void Node::connect_qps(const std::map<std::string, std::string>& peer) {
  const std::vector<uint32_t> pq = split_u32(field_str(peer, "qpns"));
  const std::vector<uint32_t> pp = split_u32(field_str(peer, "psns"));
  if (pq.size() != o_.qps || pp.size() != o_.qps) fail("peer sent a different number of QPs");
  const uint64_t peer_va = field_u64(peer, "va");
  const uint32_t peer_rkey = static_cast<uint32_t>(field_u64(peer, "rkey"));
  net::MacAddr dmac{};
  if (o_.netdev.empty()) {
    // No kernel behind the port: resolve the peer's GID with the port's own
    // ARP agent, and check it against the MAC the peer announced.
    net::MacAddr announced{};
    if (!net::parse_gid(field_str(peer, "gid"), &peer_gid_) ||
        !net::parse_mac(field_str(peer, "mac"), &announced))
      fail("the peer sent no usable gid/mac in SETUP");
    std::string why;
    if (port_->resolve_unstarted(peer_gid_, 5000, interrupted, &dmac, &why) != 0)
      fail("cannot resolve " + net::format_gid(peer_gid_) + ": " + why);
    if (dmac != announced)
      fail("ARP says " + net::format_mac(dmac) + " for the peer, which announced " +
           net::format_mac(announced));
  } else {
    std::string why;
    if (port_->resolve(peer_gid_, 1000, &dmac, &why) != 0) fail(why);
  }
  for (uint32_t q = 0; q < o_.qps; ++q) {
    WorkerCtx& c = *workers_[q % o_.workers];
    core::QpAttr a;
    a.qp_state = core::QpState::kRtr;
    a.path_mtu = path_mtu_of(o_.mtu);
    a.dest_qp_num = pq[q];
    a.rq_psn = pp[q];
    a.max_dest_rd_atomic = 16;
    a.min_rnr_timer = 12;  // 0.32 ms
    a.ah.dgid = peer_gid_;
    a.ah.dmac = dmac;
    a.ah.sgid_index = static_cast<uint8_t>(sgid_index_);
    check(c.engine->modify_qp(qpns_[q], a,
                              core::kQpState | core::kQpAv | core::kQpPathMtu | core::kQpDestQpn |
                                  core::kQpRqPsn | core::kQpMaxDestRdAtomic | core::kQpMinRnrTimer),
          "modify_qp(RTR)");
    a = {};
    a.qp_state = core::QpState::kRts;
    a.sq_psn = psns_[q];
    a.timeout = 14;  // 67 ms
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.max_rd_atomic = 16;
    check(c.engine->modify_qp(qpns_[q], a,
                              core::kQpState | core::kQpSqPsn | core::kQpQpTimeout |
                                  core::kQpRetryCnt | core::kQpRnrRetry | core::kQpMaxQpRdAtomic),
          "modify_qp(RTS)");
    const uint32_t li = static_cast<uint32_t>(client_ ? c.reqs.size() : c.resps.size());
    if (c.local_of_qpn.size() <= qpns_[q]) c.local_of_qpn.resize(qpns_[q] + 1, UINT32_MAX);
    c.local_of_qpn[qpns_[q]] = li;
    uint8_t* mine = local_.data() + q * region_;
    if (client_) {
      RemoteRegion rr{peer_va + q * region_, peer_rkey};
      c.reqs.push_back(std::make_unique<QpRequester>(*c.engine, qpns_[q], q, p_, mine, lkey_,
                                                     check_.data() + q * region_, check_lkey_, rr));
    } else {
      c.resps.push_back(std::make_unique<QpResponder>(*c.engine, qpns_[q], q, p_, mine, lkey_));
      check(c.resps.back()->start(), "posting receives");
    }
  }
}

void Node::worker_loop(WorkerCtx& w) {
  core::Wc wc[64];
  uint32_t idle = 0;
  w.res.latency_ns.reserve(1 << 18);
  w.worker->on_thread_start();
  while (!stop_.load(std::memory_order_relaxed) && !interrupted()) {
    const uint64_t now = now_ns();
    bool worked = w.worker->poll_once(now);
    int n;
    while ((n = w.engine->poll_cq(w.cq, wc, 64)) > 0) {
      worked = true;
      const uint64_t t = now_ns();
      for (int i = 0; i < n; ++i) {
        const uint32_t li =
            wc[i].qp_num < w.local_of_qpn.size() ? w.local_of_qpn[wc[i].qp_num] : UINT32_MAX;
        if (li == UINT32_MAX) {
          if (w.res.error.empty()) w.res.error = "completion for an unknown QP";
        } else if (client_) {
          w.reqs[li]->complete(wc[i], t, &w.res);
        } else {
          w.resps[li]->complete(wc[i], &w.res);
        }
      }
    }
    if (!w.res.error.empty()) break;
    if (client_) {
      const bool posting = now < deadline_ns_ && budget_.load(std::memory_order_relaxed) > 0;
      if (posting) {
        for (auto& r : w.reqs) {
          const int64_t b = budget_.load(std::memory_order_relaxed);
          if (b <= 0) break;
          const uint32_t got = r->post(now, static_cast<uint64_t>(b), &w.res);
          if (got) {
            budget_.fetch_sub(got, std::memory_order_relaxed);
            worked = true;
          }
        }
      } else {
        bool all_idle = true;
        for (auto& r : w.reqs) all_idle = all_idle && r->idle();
        if (all_idle) break;
      }
    }
    // Back off when idle: both peers may share two cores in tests. With --spin
    // (a core of its own) never: a frame that lands during sched_yield() waits
    // for the system call to return (~0.5 us on this machine).
    if (worked) {
      idle = 0;
    } else if (++idle > 64 && !o_.spin) {
      sched_yield();
    }
  }
}

int Node::run() {
  open_datapath();
  SideChannel sc = client_ ? SideChannel::connect_to(o_.server, o_.port, kSetupTimeoutMs)
                           : SideChannel::accept_one(o_.port, 600'000);
  handshake(sc);
  create_qps();
  sc.send_line("SETUP", {{"va", std::to_string(reinterpret_cast<uint64_t>(local_.data()))},
                         {"rkey", std::to_string(rkey_)},
                         {"qpns", join(qpns_)},
                         {"psns", join(psns_)},
                         {"gid", net::format_gid(gids_[sgid_index_])},
                         {"mac", net::format_mac(port_->info().mac)}});
  connect_qps(sc.recv_line("SETUP", kSetupTimeoutMs));
  sc.send_line("READY", {});
  sc.recv_line("READY", kSetupTimeoutMs);

  const uint64_t start = now_ns();
  deadline_ns_ =
      o_.duration_s > 0 ? start + static_cast<uint64_t>(o_.duration_s * 1e9) : UINT64_MAX;
  budget_ = o_.iters ? static_cast<int64_t>(o_.iters) : INT64_MAX;
  std::vector<std::thread> threads;
  // Whatever ends this function (an error on the side channel included), the
  // workers stop and are joined before the engines and queues go away.
  struct Joiner {
    std::atomic<bool>& stop;
    std::vector<std::thread>& threads;
    ~Joiner() {
      stop = true;
      for (auto& t : threads)
        if (t.joinable()) t.join();
    }
  } joiner{stop_, threads};
  for (auto& w : workers_) threads.emplace_back([this, &w] { worker_loop(*w); });

  Results total;
  std::string peer_stats;
  if (client_) {
    // Requesters stop by themselves (deadline, budget or error); bounded by
    // the duration (or 10 minutes) plus the retry budget of the transport.
    for (auto& t : threads) t.join();
  } else {
    const int wait_ms = 3'600'000;  // the client's run is bounded by its own duration
    sc.recv_line("DONE", wait_ms);
  }
  const double secs = static_cast<double>(now_ns() - start) / 1e9;
  if (client_) {
    sc.send_line("DONE", {});
    auto kv = sc.recv_line("STATS", kSetupTimeoutMs);
    peer_stats = " peer_received=" + field_str(kv, "completed") +
                 " peer_verify_failures=" + field_str(kv, "verify_failures");
    total.verify_failures += field_u64(kv, "verify_failures");
    if (field_str(kv, "error") != "none") total.error = "peer: " + field_str(kv, "error");
  } else {
    stop_ = true;
    for (auto& t : threads) t.join();
  }
  std::vector<const core::EngineCounters*> counters;
  for (auto& w : workers_) {
    total.completed += w->res.completed;
    total.verify_failures += w->res.verify_failures;
    total.latency_ns.insert(total.latency_ns.end(), w->res.latency_ns.begin(),
                            w->res.latency_ns.end());
    if (total.error.empty()) total.error = w->res.error;
    counters.push_back(&w->engine->counters());
  }
  if (!client_) {
    std::string err = total.error.empty() ? "none" : total.error;
    for (char& ch : err)
      if (ch == ' ') ch = '_';
    sc.send_line("STATS", {{"completed", std::to_string(total.completed)},
                           {"verify_failures", std::to_string(total.verify_failures)},
                           {"error", err}});
  }
  if (interrupted() && total.error.empty()) total.error = "interrupted";
  uint64_t handoff = 0;
  for (auto& w : workers_) handoff += w->worker->counters().handoff_out;
  if (client_ && !o_.lat_out.empty() && !write_latency_samples(o_.lat_out, total) &&
      total.error.empty())
    total.error = "cannot write --lat-out";
  const DropReport drops = drop_report(counters);
  std::string extra =
      std::string(" role=") + (client_ ? "client" : "server") +
      " workers=" + std::to_string(o_.workers) + port_->summary() +
      " handoff=" + std::to_string(handoff) + peer_stats;
  std::printf("%s\n", summary_line(o_, &total, secs, drops, extra).c_str());
  if (!total.error.empty()) {
    std::fprintf(stderr, "burst-xfer: %s\n", total.error.c_str());
    return 1;
  }
  if (total.verify_failures) {
    std::fprintf(stderr, "burst-xfer: %" PRIu64 " messages failed verification\n",
                 total.verify_failures);
    return 1;
  }
  return 0;
}

int Node::run_perftest() {
  if (!client_) fail("--peer perftest: only the client role exists so far (name the server)");
  if (o_.op != "write") fail("--peer perftest: only --op write so far (ib_write_bw)");
  if (o_.qps != 1 || o_.workers != 1) fail("--peer perftest: one QP on one worker so far");
  if (o_.duration_s > 0 && o_.iters == 0) fail("--peer perftest: give --iters (the server's -n)");
  open_datapath();
  PerftestPeer pp = PerftestPeer::connect_to(o_.server, o_.port, kSetupTimeoutMs);
  // Our cycle buffer sizes the server's buffer: `depth` slots written in turn.
  const uint64_t cycle = std::max<uint64_t>(o_.size, 1) * o_.depth;
  if (cycle > (1u << 30)) fail("--peer perftest: size x depth must stay under 1 GiB");
  o_.mtu = pp.negotiate(o_.mtu, static_cast<uint32_t>(cycle), 64);
  if (o_.mtu != 256 && o_.mtu != 512 && o_.mtu != 1024 && o_.mtu != 2048 && o_.mtu != 4096)
    fail("perftest server agreed on MTU " + std::to_string(o_.mtu) + ": not an IB MTU");
  if (!parse_op(o_.op, &p_.op)) fail("unknown operation '" + o_.op + "'");
  p_.size = static_cast<uint32_t>(o_.size);
  p_.depth = o_.depth;
  p_.verify = false;  // perftest's buffer holds no pattern to READ back and compare
  o_.verify = false;
  net::Gid local{};
  if (!net::parse_gid(pp.local_address(), &local) || !net::parse_gid(pp.peer_address(), &peer_gid_))
    fail("cannot parse the side channel's addresses");
  sgid_index_ = UINT32_MAX;
  for (size_t i = 0; i < gids_.size(); ++i)
    if (gids_[i] == local) sgid_index_ = static_cast<uint32_t>(i);
  if (sgid_index_ == UINT32_MAX)
    fail("the side channel runs over " + pp.local_address() + ", not an address of " + o_.netdev);
  create_qps();
  PerftestDest mine;
  mine.out_reads = 16;
  mine.qpn = qpns_[0];
  mine.psn = psns_[0];
  mine.rkey = rkey_;
  mine.vaddr = reinterpret_cast<uint64_t>(local_.data());
  mine.gid = gids_[sgid_index_];
  const PerftestDest rem = pp.hand_shake(mine);
  if (rem.gid != peer_gid_)
    std::fprintf(stderr, "burst-xfer: note: the server's GID %s is not its address %s\n",
                 net::format_gid(rem.gid).c_str(), net::format_gid(peer_gid_).c_str());
  connect_qps({{"qpns", std::to_string(rem.qpn)},
               {"psns", std::to_string(rem.psn)},
               {"va", std::to_string(rem.vaddr)},
               {"rkey", std::to_string(rem.rkey)}});
  pp.hand_shake(mine);  // perftest prints the remote address after this one
  pp.hand_shake(mine);  // barrier: both QPs are past RTR
  std::fprintf(stderr,
               "burst-xfer: perftest server version %s: QPN 0x%06x PSN 0x%06x RKey 0x%08x VAddr "
               "0x%016" PRIx64 "; local QPN 0x%06x PSN 0x%06x; MTU %u\n",
               pp.remote_version().c_str(), rem.qpn, rem.psn, rem.rkey, rem.vaddr, qpns_[0],
               psns_[0], o_.mtu);

  const uint64_t start = now_ns();
  deadline_ns_ = UINT64_MAX;
  budget_ = static_cast<int64_t>(o_.iters);
  {
    std::thread t([this] { worker_loop(*workers_[0]); });
    t.join();
  }
  const double secs = static_cast<double>(now_ns() - start) / 1e9;
  Results total = std::move(workers_[0]->res);
  // End of test: a key round, the client's report (the server prints it), close.
  pp.hand_shake(mine);
  PerftestReport rep;
  rep.size = o_.size;
  rep.iters = total.completed;
  rep.bw_avg = static_cast<double>(total.completed) * static_cast<double>(o_.size) /
               std::max(secs, 1e-9) / (1024.0 * 1024.0);
  rep.bw_peak = rep.bw_avg;  // no per-interval measurement: the peak is the average
  rep.msg_rate = static_cast<double>(total.completed) / std::max(secs, 1e-9) / 1e6;
  pp.exchange_reports(rep);
  pp.close_connection(mine);

  if (interrupted() && total.error.empty()) total.error = "interrupted";
  if (total.error.empty() && total.completed != o_.iters)
    total.error = "completed " + std::to_string(total.completed) + " of " +
                  std::to_string(o_.iters) + " writes";
  if (!o_.lat_out.empty() && !write_latency_samples(o_.lat_out, total) && total.error.empty())
    total.error = "cannot write --lat-out";
  const DropReport drops = drop_report({&workers_[0]->engine->counters()});
  std::string extra = std::string(" role=client peer=perftest/") + pp.remote_version() +
                      port_->summary();
  std::printf("%s\n", summary_line(o_, &total, secs, drops, extra).c_str());
  if (!total.error.empty()) {
    std::fprintf(stderr, "burst-xfer: %s\n", total.error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int run_net_perftest(const Options& o) {
  Node node(o, !o.server.empty());
  return node.run_perftest();
}

int run_net(const Options& o) {
  Node node(o, !o.server.empty());
  return node.run();
}

}  // namespace burst::tools
