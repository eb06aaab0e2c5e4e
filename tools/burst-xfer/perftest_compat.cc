// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// perftest's TCP side channel, client end (see perftest_compat.h).
#include "tools/burst-xfer/perftest_compat.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

namespace burst::tools {
namespace {

[[noreturn]] void fail(const std::string& m) { throw std::runtime_error("perftest peer: " + m); }

uint64_t to_be64(uint64_t v) { return __builtin_bswap64(v); }  // x86-64 only (little endian)

uint64_t double_bits_be(double d) {
  uint64_t u;
  std::memcpy(&u, &d, 8);
  return to_be64(u);
}

double double_from_be(uint64_t be) {
  const uint64_t u = to_be64(be);
  double d;
  std::memcpy(&d, &u, 8);
  return d;
}

std::string sock_addr(int fd, bool peer) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  const int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len)
                      : getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  if (rc != 0) return {};
  char host[INET6_ADDRSTRLEN] = {};
  if (getnameinfo(reinterpret_cast<sockaddr*>(&ss), len, host, sizeof(host), nullptr, 0,
                  NI_NUMERICHOST) != 0)
    return {};
  return host;
}

}  // namespace

std::string perftest_encode_dest(const PerftestDest& d) {
  char msg[kPerftestKeyMsgSize + 16] = {};
  int n =
      std::snprintf(msg, sizeof(msg), "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":", d.lid & 0xFFFF,
                    d.out_reads & 0xFFFF, d.qpn & 0xFFFFFF, d.psn & 0xFFFFFF, d.rkey, d.vaddr);
  for (uint8_t b : d.gid) n += std::snprintf(msg + n, sizeof(msg) - n, "%02x:", b);
  std::snprintf(msg + n, sizeof(msg) - n, "%08x:", d.srqn);
  return std::string(msg, kPerftestKeyMsgSize);  // 107 characters and the NUL
}

bool perftest_decode_dest(const char* msg, size_t n, PerftestDest* d) {
  const std::string s(msg, strnlen(msg, n));
  std::vector<std::string> f;
  size_t pos = 0;
  for (;;) {
    const size_t c = s.find(':', pos);
    if (c == std::string::npos) break;
    f.push_back(s.substr(pos, c - pos));
    pos = c + 1;
  }
  if (f.size() < 22) return false;  // 6 fields + 16 GID bytes (+ SRQN)
  auto hex = [](const std::string& t, uint64_t* v) {
    if (t.empty() || t.size() > 16) return false;
    char* end = nullptr;
    *v = std::strtoull(t.c_str(), &end, 16);
    return end && *end == '\0';
  };
  uint64_t v[6];
  for (int i = 0; i < 6; ++i)
    if (!hex(f[i], &v[i])) return false;
  d->lid = static_cast<uint32_t>(v[0]);
  d->out_reads = static_cast<uint32_t>(v[1]);
  d->qpn = static_cast<uint32_t>(v[2]) & 0xFFFFFF;
  d->psn = static_cast<uint32_t>(v[3]) & 0xFFFFFF;
  d->rkey = static_cast<uint32_t>(v[4]);
  d->vaddr = v[5];
  for (int i = 0; i < 16; ++i) {
    uint64_t b;
    if (!hex(f[6 + i], &b) || b > 0xFF) return false;
    d->gid[i] = static_cast<uint8_t>(b);
  }
  uint64_t srqn = 0;
  if (f.size() > 22 && !hex(f[22], &srqn)) return false;
  d->srqn = static_cast<uint32_t>(srqn);
  return true;
}

uint32_t perftest_mtu_enum(uint32_t bytes) {
  switch (bytes) {
    case 256:
      return 1;
    case 512:
      return 2;
    case 1024:
      return 3;
    case 2048:
      return 4;
    case 4096:
      return 5;
    default:
      return 0;
  }
}

uint32_t perftest_mtu_bytes(uint32_t e) { return e >= 1 && e <= 5 ? 128u << e : 0; }

PerftestPeer PerftestPeer::connect_to(const std::string& host, uint16_t port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_family = AF_INET;  // perftest's server listens on IPv4 only
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string svc = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), svc.c_str(), &hints, &res); rc != 0)
    fail("cannot resolve " + host + ": " + gai_strerror(rc));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int last_errno = 0;
  for (;;) {
    for (addrinfo* t = res; t; t = t->ai_next) {
      const int fd = socket(t->ai_family, t->ai_socktype | SOCK_CLOEXEC, t->ai_protocol);
      if (fd < 0) continue;
      if (connect(fd, t->ai_addr, t->ai_addrlen) == 0) {
        freeaddrinfo(res);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return PerftestPeer(fd, timeout_ms);
      }
      last_errno = errno;
      close(fd);
    }
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  freeaddrinfo(res);
  fail("cannot connect to " + host + ":" + svc + ": " + std::strerror(last_errno));
}

PerftestPeer::~PerftestPeer() {
  if (fd_ >= 0) close(fd_);
}

void PerftestPeer::write_all(const void* p, size_t n, const char* what) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    const ssize_t w = send(fd_, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(std::string("sending ") + what + ": " + std::strerror(errno));
    c += w;
    n -= static_cast<size_t>(w);
  }
}

void PerftestPeer::read_exact(void* p, size_t n, const char* what) {
  char* c = static_cast<char*>(p);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  while (n) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) fail(std::string("timed out waiting for ") + what);
    pollfd pfd{fd_, POLLIN, 0};
    const int pr = poll(&pfd, 1, static_cast<int>(left));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) continue;
    const ssize_t r = recv(fd_, c, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) fail(std::string("the server closed the connection while we waited for ") + what);
    if (r < 0) fail(std::string("receiving ") + what + ": " + std::strerror(errno));
    c += r;
    n -= static_cast<size_t>(r);
  }
}

// Client side of ctx_xchg_data: ours first, then theirs.
void PerftestPeer::xchg(const void* mine, void* rem, size_t n, const char* what) {
  write_all(mine, n, what);
  read_exact(rem, n, what);
}

double PerftestPeer::rem_version_number() const { return std::atof(rem_version_.c_str()); }

uint32_t PerftestPeer::negotiate(uint32_t mtu_bytes, uint32_t cycle_buffer, uint32_t cache_line) {
  char mine[kPerftestVersionSize] = {};
  std::strncpy(mine, kPerftestVersion, sizeof(mine) - 1);
  char rem[kPerftestVersionSize + 1] = {};
  xchg(mine, rem, kPerftestVersionSize, "the version");
  rem_version_ = std::string(rem, strnlen(rem, kPerftestVersionSize));
  const double rv = rem_version_number();
  // Our version (6.06) makes the server take every branch below; the
  // server's version decides ours, as in perftest.
  if (rv < 5.33)
    fail("server speaks perftest version '" + rem_version_ +
         "': only versions >= 5.33 (perftest 4.5) are supported");
  uint32_t be = htonl(cycle_buffer), rbe = 0;
  xchg(&be, &rbe, 4, "the cycle buffer size");
  be = htonl(cache_line);
  xchg(&be, &rbe, 4, "the cache line size");
  const uint32_t me = perftest_mtu_enum(mtu_bytes);
  if (!me) fail("MTU " + std::to_string(mtu_bytes) + " has no ibv_mtu value");
  char cur[2] = {static_cast<char>('0' + me), 0};
  char rm[3] = {};
  xchg(cur, rm, 2, "the MTU");
  const uint32_t re = static_cast<uint32_t>(std::strtoul(rm, nullptr, 10));
  const uint32_t use = (perftest_mtu_bytes(re) && re < me) ? re : me;
  return perftest_mtu_bytes(use);
}

PerftestDest PerftestPeer::hand_shake(const PerftestDest& mine) {
  const std::string msg = perftest_encode_dest(mine);
  char rem[kPerftestKeyMsgSize];
  xchg(msg.data(), rem, kPerftestKeyMsgSize, "the key message");
  PerftestDest d;
  if (!perftest_decode_dest(rem, sizeof(rem), &d))
    fail("cannot parse the server's key message '" + std::string(rem, strnlen(rem, sizeof(rem))) +
         "'");
  return d;
}

PerftestReport PerftestPeer::exchange_reports(const PerftestReport& mine) {
  // One 8-byte field each way, big-endian on the wire: a u64, or the bits of a double.
  auto field = [this](auto value, auto* theirs, const char* what) {
    constexpr bool kDouble = std::is_same_v<decltype(value), double>;
    uint64_t out = 0, in = 0;
    if constexpr (kDouble) {
      out = double_bits_be(value);
    } else {
      out = to_be64(value);
    }
    xchg(&out, &in, 8, what);
    if constexpr (kDouble) {
      *theirs = double_from_be(in);
    } else {
      *theirs = to_be64(in);
    }
  };
  PerftestReport r;
  field(mine.size, &r.size, "the report (size)");
  field(mine.iters, &r.iters, "the report (iterations)");
  field(mine.bw_peak, &r.bw_peak, "the report (peak bandwidth)");
  field(mine.bw_avg, &r.bw_avg, "the report (average bandwidth)");
  field(mine.msg_rate, &r.msg_rate, "the report (message rate)");
  return r;
}

void PerftestPeer::close_connection(const PerftestDest& mine) {
  hand_shake(mine);
  static const char kDone[] = "done";
  write_all(kDone, sizeof(kDone), "done");
  // The server writes its own "done" and closes; not waiting for it is what
  // perftest does too, but reading it keeps our close from racing its write.
  char buf[sizeof(kDone)];
  try {
    read_exact(buf, sizeof(buf), "done");
  } catch (const std::exception&) {
  }
  close(fd_);
  fd_ = -1;
}

std::string PerftestPeer::local_address() const { return sock_addr(fd_, false); }
std::string PerftestPeer::peer_address() const { return sock_addr(fd_, true); }

}  // namespace burst::tools
