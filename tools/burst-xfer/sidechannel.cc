// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "tools/burst-xfer/sidechannel.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "tools/burst-xfer/xfer.h"

namespace burst::tools {
namespace {

[[noreturn]] void fail(const std::string& what, int err = 0) {
  throw std::runtime_error(err ? what + ": " + std::strerror(err) : what);
}

std::string addr_text(const sockaddr_storage& ss) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(ss).sin_addr, buf, sizeof(buf));
  } else if (ss.ss_family == AF_INET6) {
    const auto& a6 = reinterpret_cast<const sockaddr_in6&>(ss).sin6_addr;
    if (IN6_IS_ADDR_V4MAPPED(&a6)) {
      inet_ntop(AF_INET, &a6.s6_addr[12], buf, sizeof(buf));
    } else {
      inet_ntop(AF_INET6, &a6, buf, sizeof(buf));
    }
  }
  return buf;
}

}  // namespace

SideChannel SideChannel::accept_one(uint16_t port, int timeout_ms) {
  int ls = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) fail("side channel: socket", errno);
  int one = 1, zero = 0;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  setsockopt(ls, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_port = htons(port);
  a.sin6_addr = in6addr_any;
  if (bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 || listen(ls, 1) != 0) {
    const int err = errno;
    close(ls);
    fail("side channel: cannot listen on TCP port " + std::to_string(port) +
             " (another burst-xfer server running? use --port)",
         err);
  }
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(timeout_ms) * 1'000'000u;
  while (true) {
    if (interrupted()) {
      close(ls);
      fail("interrupted");
    }
    if (now_ns() >= deadline) {
      close(ls);
      fail("side channel: no client connected within " + std::to_string(timeout_ms / 1000) + " s");
    }
    pollfd p{ls, POLLIN, 0};
    if (poll(&p, 1, 200) > 0) break;
  }
  const int fd = accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
  const int err = errno;
  close(ls);
  if (fd < 0) fail("side channel: accept", err);
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return SideChannel(fd);
}

SideChannel SideChannel::connect_to(const std::string& host, uint16_t port, int timeout_ms) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0) fail("side channel: cannot resolve '" + host + "': " + gai_strerror(gai));
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(timeout_ms) * 1'000'000u;
  int last_err = 0;
  while (true) {
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
      if (fd < 0) continue;
      if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        freeaddrinfo(res);
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        return SideChannel(fd);
      }
      last_err = errno;
      close(fd);
    }
    if (now_ns() >= deadline || interrupted()) break;
    usleep(100'000);
  }
  freeaddrinfo(res);
  fail("side channel: cannot connect to " + host + ":" + std::to_string(port) +
           " (is the burst-xfer server running?)",
       last_err);
}

SideChannel::~SideChannel() {
  if (fd_ >= 0) close(fd_);
}

void SideChannel::send_line(const std::string& key, const std::map<std::string, std::string>& kv) {
  std::string line = key;
  for (const auto& [k, v] : kv) line += " " + k + "=" + v;
  line += "\n";
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("side channel: send " + key, errno);
    }
    off += static_cast<size_t>(n);
  }
}

std::map<std::string, std::string> SideChannel::recv_line(const std::string& key, int timeout_ms) {
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(timeout_ms) * 1'000'000u;
  size_t nl;
  while ((nl = buffered_.find('\n')) == std::string::npos) {
    if (buffered_.size() > 1 << 20) fail("side channel: line too long");
    const uint64_t t = now_ns();
    if (t >= deadline) fail("side channel: timed out waiting for " + key + " from the peer");
    if (interrupted()) fail("interrupted");
    pollfd p{fd_, POLLIN, 0};
    const int r =
        poll(&p, 1, std::min<int>(200, static_cast<int>((deadline - t) / 1'000'000u) + 1));
    if (r < 0 && errno != EINTR) fail("side channel: poll", errno);
    if (r <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n == 0) fail("side channel: the peer closed the connection while " + key + " was expected");
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("side channel: recv", errno);
    }
    buffered_.append(buf, static_cast<size_t>(n));
  }
  const std::string line = buffered_.substr(0, nl);
  buffered_.erase(0, nl + 1);
  std::map<std::string, std::string> kv;
  size_t pos = line.find(' ');
  const std::string got = line.substr(0, pos);
  if (got != key) fail("side channel: expected " + key + " from the peer, got '" + got + "'");
  while (pos != std::string::npos) {
    const size_t next = line.find(' ', pos + 1);
    const std::string tok = line.substr(pos + 1, next == std::string::npos ? next : next - pos - 1);
    const size_t eq = tok.find('=');
    if (eq != std::string::npos) kv[tok.substr(0, eq)] = tok.substr(eq + 1);
    pos = next;
  }
  return kv;
}

std::string SideChannel::local_address() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  return addr_text(ss);
}

std::string SideChannel::peer_address() const {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  getpeername(fd_, reinterpret_cast<sockaddr*>(&ss), &len);
  return addr_text(ss);
}

uint64_t field_u64(const std::map<std::string, std::string>& kv, const std::string& k) {
  const std::string& v = field_str(kv, k);
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(v.c_str(), &end, 0);
  if (errno != 0 || end == v.c_str() || *end != '\0')
    fail("side channel: field '" + k + "' is not a number: '" + v + "'");
  return x;
}

const std::string& field_str(const std::map<std::string, std::string>& kv, const std::string& k) {
  auto it = kv.find(k);
  if (it == kv.end()) fail("side channel: field '" + k + "' missing");
  return it->second;
}

}  // namespace burst::tools
