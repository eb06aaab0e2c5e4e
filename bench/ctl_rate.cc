// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// ctl_rate: burstd's control-plane rate. K connections (one thread each), each
// keeping D requests in flight (pipelined), for S seconds after a short warm-up:
//   --op status  QUERY_STATUS round trips;
//   --op pd      ALLOC_PD / DEALLOC_PD pairs: each of the D slots allocates a PD
//                and, on the response, deallocates it (every message counts).
// Prints one line of JSON: requests/s over all connections, and the latency of
// a request from its send to its response (p50, p99, microseconds);
// all_requests counts the warm-up and the final drain too. Every
// response is checked (id, in order per connection, status 0).
//   ctl_rate --socket PATH [--clients K] [--depth D] [--seconds S] [--op status|pd]
// Exit: 0, 1 on a protocol error or a failed request, 2 for usage.
#include <sys/socket.h>
#include <time.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "daemon/ctl/ctl_client.h"

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

struct Options {
  std::string socket;
  unsigned clients = 1;
  unsigned depth = 1;
  double seconds = 2.0;
  double warmup = 0.3;
  std::string op = "status";
};

struct Result {
  uint64_t requests = 0;          // completed in the measured window
  uint64_t all = 0;               // every response, warm-up and drain included
  std::vector<uint32_t> lat_ns;   // of those, send to response
  std::string error;
};

struct InFlight {
  uint64_t id;
  uint16_t op;
  uint64_t sent_ns;
};

class Conn {
 public:
  Conn(const Options& o, Result* r) : o_(o), r_(r) {}
  bool run(std::atomic<bool>* go, uint64_t start_ns, uint64_t end_ns);

 private:
  bool send_req(uint16_t op, uint32_t handle);
  bool on_response(const uint8_t* buf, ssize_t n, uint64_t t, uint64_t start_ns);

  const Options& o_;
  Result* r_;
  std::unique_ptr<burst::ctl::Client> c_;
  std::deque<InFlight> q_;
  uint64_t next_id_ = 1000;
};

bool Conn::send_req(uint16_t op, uint32_t handle) {
  burst_ctl_handle_req req{};  // 32 bytes; QUERY_STATUS and ALLOC_PD use the header only
  const size_t len = op == BURST_CTL_OP_DEALLOC_PD ? sizeof(req) : sizeof(burst_ctl_hdr);
  req.handle = handle;
  burst_ctl_init_request(&req.hdr, op, static_cast<uint32_t>(len), c_->version(), next_id_);
  const uint64_t t = now_ns();  // the latency includes the send
  if (send(c_->fd(), &req, len, MSG_NOSIGNAL) != static_cast<ssize_t>(len)) {
    r_->error = std::string("send: ") + std::strerror(errno);
    return false;
  }
  q_.push_back({next_id_++, op, t});
  return true;
}

bool Conn::on_response(const uint8_t* buf, ssize_t n, uint64_t t, uint64_t start_ns) {
  burst_ctl_hdr h{};
  if (n < static_cast<ssize_t>(sizeof(h)) || q_.empty()) {
    r_->error = "short or unexpected response";
    return false;
  }
  std::memcpy(&h, buf, sizeof(h));
  const InFlight f = q_.front();
  q_.pop_front();
  ++r_->all;
  if (h.request_id != f.id || h.op != (f.op | BURST_CTL_RESPONSE) || h.status != 0) {
    r_->error = "response out of order or failed: id " + std::to_string(h.request_id) +
                " (want " + std::to_string(f.id) + "), status " + std::to_string(h.status);
    return false;
  }
  if (f.sent_ns >= start_ns) {
    ++r_->requests;
    r_->lat_ns.push_back(static_cast<uint32_t>(std::min<uint64_t>(t - f.sent_ns, UINT32_MAX)));
  }
  if (f.op == BURST_CTL_OP_ALLOC_PD) {
    burst_ctl_alloc_pd_resp a{};
    std::memcpy(&a, buf, std::min(sizeof(a), static_cast<size_t>(n)));
    return send_req(BURST_CTL_OP_DEALLOC_PD, a.pd_handle);
  }
  return send_req(o_.op == "pd" ? BURST_CTL_OP_ALLOC_PD : BURST_CTL_OP_QUERY_STATUS, 0);
}

bool Conn::run(std::atomic<bool>* go, uint64_t start_ns, uint64_t end_ns) {
  std::string err;
  c_ = burst::ctl::Client::Connect(o_.socket, &err);
  burst_ctl_hello_resp h{};
  if (!c_ || c_->hello("ctl_rate", &h) != 0) {
    r_->error = c_ ? c_->error() : err;
    return false;
  }
  while (!go->load()) std::this_thread::yield();
  const uint16_t first = o_.op == "pd" ? BURST_CTL_OP_ALLOC_PD : BURST_CTL_OP_QUERY_STATUS;
  for (unsigned i = 0; i < o_.depth; ++i) {
    if (!send_req(first, 0)) return false;
  }
  std::vector<uint8_t> buf(BURST_CTL_MAX_MSG);
  while (now_ns() < end_ns) {
    const ssize_t n = recv(c_->fd(), buf.data(), buf.size(), 0);
    if (n <= 0) {
      r_->error = n == 0 ? "burstd hung up" : std::string("recv: ") + std::strerror(errno);
      return false;
    }
    if (!on_response(buf.data(), n, now_ns(), start_ns)) return false;
  }
  // Drain what is in flight so that the PDs are released in order.
  while (!q_.empty()) {
    const ssize_t n = recv(c_->fd(), buf.data(), buf.size(), 0);
    if (n <= 0) break;
    q_.pop_front();
    ++r_->all;
  }
  return true;
}

uint32_t percentile(std::vector<uint32_t>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"ctl_rate: burstd control-plane requests/s and latency"};
  app.add_option("--socket", o.socket, "burstd's control socket")->required();
  app.add_option("--clients", o.clients, "connections (one thread each)")->check(CLI::Range(1, 1024));
  app.add_option("--depth", o.depth, "requests in flight per connection")->check(CLI::Range(1, 256));
  app.add_option("--seconds", o.seconds, "measured time")->check(CLI::Range(0.1, 600.0));
  app.add_option("--op", o.op, "status or pd")->check(CLI::IsMember({"status", "pd"}));
  CLI11_PARSE(app, argc, argv);

  std::vector<Result> results(o.clients);
  std::vector<std::thread> threads;
  std::atomic<bool> go{false};
  std::atomic<unsigned> failed{0};
  const uint64_t t0 = now_ns() + 200'000'000;  // connections set up meanwhile
  const uint64_t start = t0 + static_cast<uint64_t>(o.warmup * 1e9);
  const uint64_t end = start + static_cast<uint64_t>(o.seconds * 1e9);
  for (unsigned k = 0; k < o.clients; ++k) {
    threads.emplace_back([&, k] {
      results[k].lat_ns.reserve(1 << 16);
      Conn c(o, &results[k]);
      if (!c.run(&go, start, end)) ++failed;
    });
  }
  while (now_ns() < t0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  go = true;
  for (auto& t : threads) t.join();
  uint64_t total = 0, all = 0;
  std::vector<uint32_t> lat;
  for (Result& r : results) {
    if (!r.error.empty()) std::fprintf(stderr, "ctl_rate: %s\n", r.error.c_str());
    total += r.requests;
    all += r.all;
    lat.insert(lat.end(), r.lat_ns.begin(), r.lat_ns.end());
  }
  const double rate = static_cast<double>(total) / o.seconds;
  const double p50 = percentile(lat, 0.50) / 1e3;
  const double p99 = percentile(lat, 0.99) / 1e3;
  std::printf(
      "{\"op\": \"%s\", \"clients\": %u, \"depth\": %u, \"seconds\": %.2f, \"requests\": %llu, "
      "\"all_requests\": %llu, \"rate\": %.0f, \"p50_us\": %.1f, \"p99_us\": %.1f}\n",
      o.op.c_str(), o.clients, o.depth, o.seconds, static_cast<unsigned long long>(total),
      static_cast<unsigned long long>(all), rate, p50, p99);
  return failed.load() == 0 ? 0 : 1;
}
