// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// udp-pingpong: kernel UDP round-trip latency, the baseline for burst's small-message
// latency. The client sends one datagram at a time (its first 8 bytes: a sequence
// number) and waits for the server's echo; the server sends every datagram back.
//
//   udp-pingpong --server [--port P] [--busy] [--duration SEC]
//   udp-pingpong SERVER_IPV4 [--port P] [--size BYTES] [--duration SEC | --iters N]
//                [--warmup N] [--busy] [--samples FILE]
//
// --busy: both sides spin on non-blocking receives (as burst's workers poll their
// rings); without it they block in recv(). The client ends with one line:
//   udp-pingpong size=8 mode=busy msgs=N lost=L time=S rtt_us p50=.. p99=.. p999=.. min=.. mean=..
// and a zero-length datagram that stops the server. --samples writes every round
// trip (ns, in order, warm-up excluded), one per line.
// Exit codes: 0 ok, 1 runtime failure, 2 usage error.
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr uint64_t kReplyTimeoutNs = 100'000'000;    // a round trip slower than this is lost
constexpr uint64_t kWarmupLimitNs = 10'000'000'000;  // the server must answer within this
constexpr uint32_t kMaxSize = 65000;

std::atomic<bool> g_stop{false};

struct Options {
  bool server = false;
  std::string peer;
  uint16_t port = 18600;
  uint32_t size = 8;
  double duration_s = 0;
  uint64_t iters = 0;
  uint64_t warmup = 100;
  bool busy = false;
  std::string samples;
};

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void Usage() {
  std::fprintf(stderr,
               "usage: udp-pingpong --server [--port P] [--busy] [--duration SEC]\n"
               "       udp-pingpong SERVER_IPV4 [--port P] [--size BYTES] [--duration SEC | "
               "--iters N]\n"
               "                    [--warmup N] [--busy] [--samples FILE]\n");
}

int ParseArgs(int argc, char** argv, Options* o) {
  enum { kServer = 256, kPort, kSize, kDuration, kIters, kWarmup, kBusy, kSamples, kHelp };
  static const option longopts[] = {{"server", no_argument, nullptr, kServer},
                                    {"port", required_argument, nullptr, kPort},
                                    {"size", required_argument, nullptr, kSize},
                                    {"duration", required_argument, nullptr, kDuration},
                                    {"iters", required_argument, nullptr, kIters},
                                    {"warmup", required_argument, nullptr, kWarmup},
                                    {"busy", no_argument, nullptr, kBusy},
                                    {"samples", required_argument, nullptr, kSamples},
                                    {"help", no_argument, nullptr, kHelp},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "", longopts, nullptr)) != -1) {
    switch (c) {
      case kServer:
        o->server = true;
        break;
      case kPort:
        o->port = static_cast<uint16_t>(std::strtoul(optarg, nullptr, 0));
        break;
      case kSize:
        o->size = static_cast<uint32_t>(std::strtoul(optarg, nullptr, 0));
        break;
      case kDuration:
        o->duration_s = std::strtod(optarg, nullptr);
        break;
      case kIters:
        o->iters = std::strtoull(optarg, nullptr, 0);
        break;
      case kWarmup:
        o->warmup = std::strtoull(optarg, nullptr, 0);
        break;
      case kBusy:
        o->busy = true;
        break;
      case kSamples:
        o->samples = optarg;
        break;
      case kHelp:
        Usage();
        std::exit(0);
      default:
        Usage();
        return 2;
    }
  }
  if (optind < argc) o->peer = argv[optind++];
  if (optind != argc || o->server == !o->peer.empty()) {
    Usage();
    return 2;
  }
  if (o->size < 8 || o->size > kMaxSize) {
    std::fprintf(stderr, "udp-pingpong: --size must be in [8, %u]\n", kMaxSize);
    return 2;
  }
  if (o->duration_s < 0 || o->duration_s > 3600 || (o->duration_s > 0 && o->iters > 0)) {
    std::fprintf(stderr, "udp-pingpong: --duration in (0, 3600] s, or --iters, not both\n");
    return 2;
  }
  if (o->duration_s == 0 && o->iters == 0) o->duration_s = o->server ? 600 : 5;
  return 0;
}

int OpenSocket(const Options& o) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | (o.busy ? SOCK_NONBLOCK : 0), 0);
  if (fd < 0) {
    std::fprintf(stderr, "udp-pingpong: socket: %s\n", std::strerror(errno));
    return -1;
  }
  if (!o.busy) {
    // Blocking receives wake up now and then to check the deadline and signals.
    timeval tv{0, 100'000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  return fd;
}

int RunServer(const Options& o) {
  const int fd = OpenSocket(o);
  if (fd < 0) return 1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(o.port);
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    std::fprintf(stderr, "udp-pingpong: bind to port %u: %s\n", o.port, std::strerror(errno));
    close(fd);
    return 1;
  }
  std::printf("udp-pingpong server: port %u mode=%s\n", o.port, o.busy ? "busy" : "blocking");
  std::fflush(stdout);
  const uint64_t end = NowNs() + static_cast<uint64_t>(o.duration_s * 1e9);
  std::vector<uint8_t> buf(kMaxSize);
  uint64_t echoed = 0;
  uint32_t spins = 0;
  bool stopped_by_client = false;
  while (!g_stop.load(std::memory_order_relaxed)) {
    sockaddr_in from{};
    socklen_t fl = sizeof(from);
    const ssize_t n =
        recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        std::fprintf(stderr, "udp-pingpong: recvfrom: %s\n", std::strerror(errno));
        break;
      }
      if (!o.busy || (++spins & 1023) == 0) {
        if (NowNs() >= end) break;
      }
      continue;
    }
    if (n == 0) {  // the client's end marker
      stopped_by_client = true;
      break;
    }
    if (sendto(fd, buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from), fl) ==
        n)
      ++echoed;
  }
  close(fd);
  std::printf("udp-pingpong server: echoed=%" PRIu64 " end=%s\n", echoed,
              stopped_by_client ? "client" : "timeout");
  return 0;
}

int RunClient(const Options& o) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(o.port);
  if (inet_pton(AF_INET, o.peer.c_str(), &a.sin_addr) != 1) {
    std::fprintf(stderr, "udp-pingpong: '%s' is not an IPv4 address\n", o.peer.c_str());
    return 2;
  }
  const int fd = OpenSocket(o);
  if (fd < 0) return 1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    std::fprintf(stderr, "udp-pingpong: connect: %s\n", std::strerror(errno));
    close(fd);
    return 1;
  }
  std::vector<uint8_t> out(o.size, 0x5a), in(kMaxSize);
  std::vector<uint64_t> rtt;
  rtt.reserve(o.iters ? o.iters : 1 << 20);
  uint64_t lost = 0, seq = 0, measured_start = 0;
  const uint64_t t_begin = NowNs();
  uint64_t end = o.duration_s > 0 ? UINT64_MAX : 0;  // set after the warm-up
  int rc = 0;
  while (!g_stop.load(std::memory_order_relaxed)) {
    if (seq == o.warmup) {
      measured_start = NowNs();
      if (o.duration_s > 0) end = measured_start + static_cast<uint64_t>(o.duration_s * 1e9);
    }
    if (seq >= o.warmup) {
      if (o.iters > 0 && seq - o.warmup >= o.iters) break;
      if (o.duration_s > 0 && NowNs() >= end) break;
    }
    std::memcpy(out.data(), &seq, 8);
    const uint64_t t0 = NowNs();
    if (send(fd, out.data(), out.size(), 0) != static_cast<ssize_t>(out.size())) {
      if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR) continue;
      std::fprintf(stderr, "udp-pingpong: send: %s\n", std::strerror(errno));
      rc = 1;
      break;
    }
    bool got = false, refused = false;
    while (!g_stop.load(std::memory_order_relaxed)) {
      const ssize_t n = recv(fd, in.data(), in.size(), 0);
      const uint64_t t1 = NowNs();
      if (n >= 8) {
        uint64_t s;
        std::memcpy(&s, in.data(), 8);
        if (s == seq) {
          if (seq >= o.warmup) rtt.push_back(t1 - t0);
          got = true;
          break;
        }
        continue;  // a late echo of a ping counted as lost
      }
      if (n < 0 && errno == ECONNREFUSED) {
        // The server may still be starting: keep trying during the warm-up.
        if (seq < o.warmup && t1 - t_begin < kWarmupLimitNs) {
          usleep(10'000);
          refused = true;
          break;
        }
        std::fprintf(stderr, "udp-pingpong: no server on %s port %u\n", o.peer.c_str(), o.port);
        rc = 1;
        break;
      }
      if (t1 - t0 > kReplyTimeoutNs) break;
    }
    if (rc != 0) break;
    if (refused) continue;  // the same ping again
    if (!got && seq >= o.warmup) ++lost;
    ++seq;
    if (seq < o.warmup && NowNs() - t_begin > kWarmupLimitNs) {
      std::fprintf(stderr, "udp-pingpong: no answer during the warm-up\n");
      rc = 1;
      break;
    }
  }
  const double secs =
      static_cast<double>(NowNs() - (measured_start ? measured_start : t_begin)) / 1e9;
  send(fd, out.data(), 0, 0);  // stop the server
  close(fd);
  if (!o.samples.empty()) {
    FILE* f = std::fopen(o.samples.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "udp-pingpong: cannot write %s: %s\n", o.samples.c_str(),
                   std::strerror(errno));
      rc = 1;
    } else {
      for (uint64_t v : rtt) std::fprintf(f, "%" PRIu64 "\n", v);
      std::fclose(f);
    }
  }
  std::vector<uint64_t> sorted = rtt;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double p) {
    if (sorted.empty()) return 0.0;
    return static_cast<double>(
               sorted[static_cast<size_t>(p * static_cast<double>(sorted.size() - 1))]) /
           1000.0;
  };
  double sum = 0;
  for (uint64_t v : sorted) sum += static_cast<double>(v);
  std::printf("udp-pingpong size=%u mode=%s msgs=%zu lost=%" PRIu64
              " time=%.3fs rtt_us p50=%.1f p99=%.1f p999=%.1f min=%.1f mean=%.1f\n",
              o.size, o.busy ? "busy" : "blocking", sorted.size(), lost, secs, pct(0.5), pct(0.99),
              pct(0.999), sorted.empty() ? 0.0 : static_cast<double>(sorted.front()) / 1000.0,
              sorted.empty() ? 0.0 : sum / static_cast<double>(sorted.size()) / 1000.0);
  if (rc == 0 && sorted.empty()) {
    std::fprintf(stderr, "udp-pingpong: no round trip measured\n");
    rc = 1;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const int rc = ParseArgs(argc, argv, &o); rc != 0) return rc;
  struct sigaction sa {};
  sa.sa_handler = [](int) { g_stop.store(true); };
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  return o.server ? RunServer(o) : RunClient(o);
}
