// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "tools/burstctl/queries.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "daemon/ctl/ctl_client.h"
#include "daemon/ctl/ctl_codec.h"
#include "net/addr.h"
#include "tools/burstctl/discover.h"

namespace burst::tools {
namespace {

using nlohmann::json;

void err(const std::string& m) { std::fprintf(stderr, "burstctl: %s\n", m.c_str()); }

std::string hex_qpn(uint32_t qpn) {
  char b[16];
  std::snprintf(b, sizeof(b), "0x%06x", qpn);
  return b;
}

std::string mac_str(const uint8_t* m) {
  net::MacAddr a;
  std::memcpy(a.data(), m, 6);
  return net::format_mac(a);
}

std::string gid_str(const uint8_t* g) {
  net::Gid a;
  std::memcpy(a.data(), g, 16);
  return net::format_gid(a);
}

// A table: header row, then rows; columns padded to their widest cell, numbers right-aligned.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print() const {
    std::vector<size_t> w(rows_[0].size(), 0);
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size());
    }
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size() && i < w.size(); ++i) {
        const bool num = !r[i].empty() && std::all_of(r[i].begin(), r[i].end(), [](char ch) {
          return std::isdigit(static_cast<unsigned char>(ch)) != 0;
        });
        const std::string pad(w[i] - r[i].size(), ' ');
        line +=
            (i ? "  " : "") + (num && i > 0 ? pad + r[i] : r[i] + (i + 1 < r.size() ? pad : ""));
      }
      std::printf("%s\n", line.c_str());
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string u(uint64_t v) { return std::to_string(v); }

class Session {
 public:
  bool open(const std::string& socket) {
    std::string e;
    client_ = ctl::Client::Connect(socket, &e);
    if (!client_) {
      err(e);
      return false;
    }
    if (client_->hello("burstctl", &hello_) != 0) {
      err("HELLO: " + client_->error());
      return false;
    }
    return true;
  }
  const burst_ctl_hello_resp& hello() const { return hello_; }
  const std::string& path() const { return client_->path(); }
  template <class Req, class Resp>
  bool call(uint16_t op, Req* req, Resp* resp) {
    if (client_->call(op, req, sizeof(*req), resp, sizeof(*resp)) != 0) {
      err(client_->error());
      return false;
    }
    return true;
  }

 private:
  std::unique_ptr<ctl::Client> client_;
  burst_ctl_hello_resp hello_{};
};

// Live MRs by how burstd reaches their memory (counters mr.*): kmod-pin (pages
// the kernel assistant pinned, mapped in place), file (the file behind a shared
// mapping, or a dma-buf, mapped in place), mem-fd (the client's /proc/self/mem).
struct MrModes {
  const char* name;
  const char* counter;
  uint64_t mrs = 0;
  uint64_t bytes = 0;
};
std::vector<MrModes> mr_modes(Session& s) {
  std::vector<MrModes> m = {
      {"kmod-pin", "mr.pinned"}, {"file", "mr.zero_copy"}, {"mem-fd", "mr.cross_memory"}};
  burst_ctl_query_counters_req req{};
  req.worker = BURST_CTL_ALL_WORKERS;
  auto r = std::make_unique<burst_ctl_counters_resp>();
  if (!s.call(BURST_CTL_OP_QUERY_COUNTERS, &req, r.get())) return {};
  for (uint32_t i = 0; i < r->count; ++i) {
    const std::string name = ctl::get_str(r->entries[i].name);
    for (auto& e : m) {
      if (name == e.counter) e.mrs = r->entries[i].value;
      if (name == std::string(e.counter) + "_bytes") e.bytes = r->entries[i].value;
    }
  }
  return m;
}

int show_status_view(Session& s, const StatusOptions& o) {
  burst_ctl_query_status_req req{};
  burst_ctl_status_resp r{};
  if (!s.call(BURST_CTL_OP_QUERY_STATUS, &req, &r)) return 1;
  const std::string netdev = ctl::get_str(r.netdev);
  const std::vector<MrModes> modes = mr_modes(s);
  if (o.json) {
    json mrs = json::object();
    for (const auto& m : modes) mrs[m.name] = {{"mrs", m.mrs}, {"bytes", m.bytes}};
    json j = {{"version", ctl::get_str(r.version)},
              {"pid", r.pid},
              {"uptime_ms", r.uptime_ms},
              {"protocol", s.hello().version},
              {"socket", ctl::get_str(r.socket_path)},
              {"ibdev", ctl::get_str(r.ibdev)},
              {"netdev", netdev},
              {"backend", ctl::backend_name(r.backend)},
              {"xdp_mode", ctl::xdp_mode_name(r.xdp_mode)},
              {"zero_copy", r.zero_copy != 0},
              {"port_state", ctl::port_state_name(r.port_state)},
              {"workers", r.workers},
              {"queues", r.queues},
              {"xdp_prog_id", r.xdp_prog_id},
              {"memory_mode", ctl::memory_mode_name(r.memory_mode)},
              {"mrs", mrs},
              {"clients", r.clients},
              {"pds", r.pds},
              {"cqs", r.cqs},
              {"qps", r.qps}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("burstd   %s, pid %u, up %.1f s, control protocol %u\n",
              ctl::get_str(r.version).c_str(), r.pid, static_cast<double>(r.uptime_ms) / 1000.0,
              s.hello().version);
  std::printf("socket   %s\n", ctl::get_str(r.socket_path).c_str());
  const char* where = !netdev.empty() ? netdev.c_str()
                      : r.backend == BURST_CTL_BACKEND_DPDK
                          ? "a DPDK port with no kernel netdev (burstd's log names the PMD)"
                          : "a loopback port";
  std::printf("device   %s on %s, port %s\n", ctl::get_str(r.ibdev).c_str(), where,
              ctl::port_state_name(r.port_state));
  std::string backend = ctl::backend_name(r.backend);
  if (r.backend == BURST_CTL_BACKEND_XDP) {
    backend += std::string(" (") + ctl::xdp_mode_name(r.xdp_mode) + ", " +
               (r.zero_copy ? "zero-copy" : "copy mode") + ", program id " + u(r.xdp_prog_id) + ")";
  }
  std::printf("backend  %s, %u queues, %u workers\n", backend.c_str(), r.queues, r.workers);
  std::printf("memory   %s\n", ctl::memory_mode_name(r.memory_mode));
  if (!modes.empty()) {
    std::printf("MRs     ");
    for (size_t i = 0; i < modes.size(); ++i) {
      std::printf("%s %s %llu (%llu bytes)", i == 0 ? "" : ",", modes[i].name,
                  static_cast<unsigned long long>(modes[i].mrs),
                  static_cast<unsigned long long>(modes[i].bytes));
    }
    std::printf("\n");
  }
  std::printf("clients  %u (PDs %u, CQs %u, QPs %u)\n", r.clients, r.pds, r.cqs, r.qps);
  return 0;
}

int show_devices(Session& s, const StatusOptions& o) {
  const burst_ctl_hello_resp& h = s.hello();
  const std::string netdev = ctl::get_str(h.netdev);
  if (o.json) {
    json gids = json::array();
    for (uint32_t i = 0; i < h.gid_count && i < BURST_CTL_MAX_GIDS; ++i) {
      static const uint8_t kZero[16] = {};
      if (std::memcmp(h.gids[i], kZero, 16) == 0) continue;
      gids.push_back({{"index", i}, {"gid", gid_str(h.gids[i])}, {"type", "RoCE v2"}});
    }
    json dev = {{"ibdev", ctl::get_str(h.ibdev)},
                {"netdev", netdev},
                {"socket", s.path()},
                {"ifindex", h.ifindex},
                {"mac", mac_str(h.mac)},
                {"mtu", h.mtu},
                {"active_mtu", ctl::mtu_bytes(h.active_mtu)},
                {"port_state", ctl::port_state_name(h.port_state)},
                {"backend", ctl::backend_name(h.backend)},
                {"xdp_mode", ctl::xdp_mode_name(h.xdp_mode)},
                {"memory_mode", ctl::memory_mode_name(h.memory_mode)},
                {"workers", h.workers},
                {"gids", gids},
                {"limits",
                 {{"max_qp", h.max_qp},
                  {"max_qp_wr", h.max_qp_wr},
                  {"max_sge", h.max_sge},
                  {"max_cq", h.max_cq},
                  {"max_cqe", h.max_cqe},
                  {"max_pd", h.max_pd},
                  {"max_inline_data", h.max_inline_data},
                  {"max_qp_rd_atom", h.max_qp_rd_atom},
                  {"max_mr", h.max_mr},
                  {"max_mr_size", h.max_mr_size},
                  {"max_ah", h.max_ah},
                  {"max_srq", h.max_srq},
                  {"max_srq_wr", h.max_srq_wr},
                  {"max_srq_sge", h.max_srq_sge},
                  {"max_res_rd_atom", h.max_res_rd_atom},
                  {"max_msg_sz", h.max_msg_sz}}}};
    std::printf("%s\n", json{{"devices", json::array({dev})}}.dump(2).c_str());
    return 0;
  }
  std::printf("%s: netdev %s, socket %s, MAC %s, MTU %u (active_mtu %u), port %s, backend %s, "
              "memory %s\n",
              ctl::get_str(h.ibdev).c_str(), netdev.empty() ? "-" : netdev.c_str(),
              s.path().c_str(),
              mac_str(h.mac).c_str(), h.mtu, ctl::mtu_bytes(h.active_mtu),
              ctl::port_state_name(h.port_state), ctl::backend_name(h.backend),
              ctl::memory_mode_name(h.memory_mode));
  std::printf(
      "limits: max_qp %u, max_qp_wr %u, max_sge %u, max_cq %u, max_cqe %u, max_pd %u, "
      "max_inline_data %u, max_qp_rd_atom %u, max_mr %u, max_mr_size %llu, max_ah %u, "
      "max_srq %u, max_srq_wr %u, max_srq_sge %u, max_res_rd_atom %u, max_msg_sz %u\n",
      h.max_qp, h.max_qp_wr, h.max_sge, h.max_cq, h.max_cqe, h.max_pd, h.max_inline_data,
      h.max_qp_rd_atom, h.max_mr, static_cast<unsigned long long>(h.max_mr_size), h.max_ah,
      h.max_srq, h.max_srq_wr, h.max_srq_sge, h.max_res_rd_atom, h.max_msg_sz);
  Table t({"GID", "ADDRESS", "TYPE"});
  for (uint32_t i = 0; i < h.gid_count && i < BURST_CTL_MAX_GIDS; ++i) {
    static const uint8_t kZero[16] = {};
    if (std::memcmp(h.gids[i], kZero, 16) == 0) continue;
    t.add({u(i), gid_str(h.gids[i]), "RoCE v2"});
  }
  t.print();
  return 0;
}

int show_workers(Session& s, const StatusOptions& o) {
  burst_ctl_query_workers_req req{};
  auto r = std::make_unique<burst_ctl_workers_resp>();
  if (!s.call(BURST_CTL_OP_QUERY_WORKERS, &req, r.get())) return 1;
  if (o.json) {
    json arr = json::array();
    for (uint32_t i = 0; i < r->count; ++i) {
      const burst_ctl_worker_info& w = r->entries[i];
      json queues = json::array();
      for (uint32_t q = 0; q < w.nqueues && q < BURST_CTL_WORKER_QUEUES; ++q)
        queues.push_back(w.queue_ids[q]);
      arr.push_back({{"index", w.index},
                     {"queues", queues},
                     {"qps", w.qps},
                     {"loops", w.loops},
                     {"idle_sleeps", w.idle_sleeps},
                     {"commands", w.commands},
                     {"rx_packets", w.rx_packets},
                     {"rx_bytes", w.rx_bytes},
                     {"tx_packets", w.tx_packets},
                     {"tx_bytes", w.tx_bytes},
                     {"rx_bursts", w.rx_bursts},
                     {"tx_bursts", w.tx_bursts},
                     {"tx_no_buffers", w.tx_no_buffers},
                     {"tx_backlogged", w.tx_backlogged},
                     {"handoff_out", w.handoff_out},
                     {"handoff_in", w.handoff_in},
                     {"handoff_full", w.handoff_full}});
    }
    std::printf("%s\n", json{{"workers", arr}}.dump(2).c_str());
    return 0;
  }
  Table t({"WORKER", "QUEUES", "QPS", "LOOPS", "IDLE_SLEEPS", "RX_PKTS", "TX_PKTS", "HANDOFF_IN",
           "HANDOFF_OUT", "HANDOFF_FULL", "TX_BACKLOG"});
  for (uint32_t i = 0; i < r->count; ++i) {
    const burst_ctl_worker_info& w = r->entries[i];
    std::string q;
    for (uint32_t k = 0; k < w.nqueues && k < BURST_CTL_WORKER_QUEUES; ++k) {
      q += (k ? "," : "") + u(w.queue_ids[k]);
    }
    if (w.nqueues > BURST_CTL_WORKER_QUEUES) q += ",...";
    t.add({u(w.index), q, u(w.qps), u(w.loops), u(w.idle_sleeps), u(w.rx_packets), u(w.tx_packets),
           u(w.handoff_in), u(w.handoff_out), u(w.handoff_full), u(w.tx_backlogged)});
  }
  t.print();
  return 0;
}

int show_counters(Session& s, const StatusOptions& o) {
  burst_ctl_query_counters_req req{};
  req.worker = o.worker < 0 ? BURST_CTL_ALL_WORKERS : static_cast<uint32_t>(o.worker);
  auto r = std::make_unique<burst_ctl_counters_resp>();
  if (!s.call(BURST_CTL_OP_QUERY_COUNTERS, &req, r.get())) return 1;
  if (o.json) {
    json c = json::object();
    for (uint32_t i = 0; i < r->count; ++i)
      c[ctl::get_str(r->entries[i].name)] = r->entries[i].value;
    json j = {{"worker", o.worker < 0 ? json("all") : json(o.worker)}, {"counters", c}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  Table t({"COUNTER", "VALUE"});
  uint32_t hidden = 0;
  for (uint32_t i = 0; i < r->count; ++i) {
    if (r->entries[i].value == 0 && !o.all) {
      ++hidden;
      continue;
    }
    t.add({ctl::get_str(r->entries[i].name), u(r->entries[i].value)});
  }
  std::printf("%s\n", o.worker < 0 ? "all workers" : ("worker " + u(o.worker)).c_str());
  t.print();
  if (hidden) std::printf("(%u counters are zero; --all shows them)\n", hidden);
  return 0;
}

// The table lists this many QPs unless --all (or --json): thousands of lines
// answer nobody; the total is always there.
constexpr uint32_t kQpsShown = 100;

int show_qps(Session& s, const StatusOptions& o) {
  std::vector<burst_ctl_qp_info> qps;
  uint32_t start = 0, total = 0;
  const bool every = o.all || o.json;
  auto r = std::make_unique<burst_ctl_qps_resp>();
  for (int page = 0; page < 1024; ++page) {  // bounded: 512 QPs per page
    burst_ctl_query_qps_req req{};
    req.start_qpn = start;
    req.max = every ? 0 : kQpsShown;
    if (!s.call(BURST_CTL_OP_QUERY_QPS, &req, r.get())) return 1;
    total = r->total;
    qps.insert(qps.end(), r->entries, r->entries + r->count);
    if (!every || r->next_qpn == 0 || r->next_qpn <= start) break;
    start = r->next_qpn;
  }
  if (o.json) {
    json arr = json::array();
    for (const auto& q : qps) {
      arr.push_back({{"qpn", q.qpn},
                     {"worker", q.worker},
                     {"type", ctl::qp_type_name(q.qp_type)},
                     {"state", ctl::qp_state_name(q.qp_state)},
                     {"sq_psn", q.sq_psn},
                     {"rq_psn", q.rq_psn},
                     {"dest_qpn", q.dest_qp_num},
                     {"path_mtu", ctl::mtu_bytes(q.path_mtu)},
                     {"client", q.client_id},
                     {"pid", q.pid},
                     {"handle", q.handle}});
    }
    std::printf("%s\n", json{{"total", total}, {"qps", arr}}.dump(2).c_str());
    return 0;
  }
  Table t(
      {"QPN", "WORKER", "TYPE", "STATE", "SQ_PSN", "RQ_PSN", "DEST_QPN", "MTU", "PID", "CLIENT"});
  for (const auto& q : qps) {
    t.add({hex_qpn(q.qpn), u(q.worker), ctl::qp_type_name(q.qp_type),
           ctl::qp_state_name(q.qp_state), u(q.sq_psn), u(q.rq_psn), hex_qpn(q.dest_qp_num),
           u(ctl::mtu_bytes(q.path_mtu)), u(q.pid), u(q.client_id)});
  }
  t.print();
  if (qps.size() < total) {
    std::printf("%u QPs (the first %zu listed; --all lists every one)\n", total, qps.size());
  } else {
    std::printf("%u QPs\n", total);
  }
  return 0;
}

// burstctl devices without a socket: every burstd of the socket directory,
// named as `burstctl run` names them (discover.h); then the sockets that did not
// answer or serve a netdev this namespace does not show (no device name).
int show_device_list(const StatusOptions& o) {
  const std::string dir = socket_dir(o.socket_dir);
  const std::vector<Burstd> all = list_burstd(dir);
  if (o.json) {
    json arr = json::array();
    for (const Burstd& b : all) {
      json d = {{"ibdev", b.ibdev}, {"socket", b.socket}, {"answered", b.answered}};
      if (b.answered) {
        d["netdev"] = b.netdev;
        d["mac"] = net::format_mac(b.mac);
        d["backend"] = ctl::backend_name(b.backend);
        d["port_state"] = ctl::port_state_name(b.port_state);
      }
      if (!b.error.empty()) d["note"] = b.error;
      arr.push_back(d);
    }
    std::printf("%s\n", json{{"socket_dir", dir}, {"devices", arr}}.dump(2).c_str());
    return 0;
  }
  if (all.empty()) {
    std::printf("no burstd socket in %s (--socket-dir, $BURST_SOCKET_DIR)\n", dir.c_str());
    return 1;
  }
  Table t({"DEVICE", "NETDEV", "SOCKET", "BACKEND", "STATE"});
  for (const Burstd& b : all) {
    t.add({b.ibdev.empty() ? "-" : b.ibdev, b.netdev.empty() ? "-" : b.netdev, b.socket,
           b.answered ? ctl::backend_name(b.backend) : "-",
           b.answered ? ctl::port_state_name(b.port_state) : "no answer"});
  }
  t.print();
  for (const Burstd& b : all) {
    if (b.ibdev.empty()) std::printf("note: %s\n", b.error.c_str());
  }
  return 0;
}

// No --socket, no $BURST_SOCKET: the default socket, else the only socket of the
// socket directory (the service's /run/burst/NETDEV.sock); several: "" and a
// message naming them.
std::string implicit_socket(const StatusOptions& o) {
  struct stat st;
  if (stat(BURST_CTL_DEFAULT_SOCKET, &st) == 0) return BURST_CTL_DEFAULT_SOCKET;
  const std::string dir = socket_dir(o.socket_dir);
  const std::vector<std::string> socks = list_sockets(dir);
  if (socks.size() == 1) return socks[0];
  if (socks.empty()) return BURST_CTL_DEFAULT_SOCKET;  // the connect error says it all
  std::string names;
  for (const std::string& p : socks) names += "\n  " + p;
  err("several burstd sockets in " + dir + ", choose one with --socket (burstctl devices lists "
      "them):" + names);
  return "";
}

}  // namespace

int show_status(StatusView view, const StatusOptions& o) {
  const char* env = std::getenv(BURST_CTL_SOCKET_ENV);
  const bool implicit = o.socket.empty() && (env == nullptr || env[0] == '\0');
  if (view == StatusView::kDevices && implicit) return show_device_list(o);
  const std::string socket = implicit ? implicit_socket(o) : o.socket;
  if (implicit && socket.empty()) return 1;
  Session s;
  if (!s.open(socket)) return 1;
  switch (view) {
    case StatusView::kStatus:
      return show_status_view(s, o);
    case StatusView::kDevices:
      return show_devices(s, o);
    case StatusView::kWorkers:
      return show_workers(s, o);
    case StatusView::kCounters:
      return show_counters(s, o);
    case StatusView::kQps:
      return show_qps(s, o);
  }
  return 1;
}

}  // namespace burst::tools
