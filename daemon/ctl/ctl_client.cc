// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/ctl/ctl_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "daemon/ctl/ctl_codec.h"

namespace burst::ctl {
namespace {

int64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

}  // namespace

std::string default_socket_path() {
  const char* env = std::getenv(BURST_CTL_SOCKET_ENV);
  if (env != nullptr && env[0] != '\0') return env;
  return BURST_CTL_DEFAULT_SOCKET;
}

std::unique_ptr<Client> Client::Connect(const std::string& path_in, std::string* error) {
  const std::string path = path_in.empty() ? default_socket_path() : path_in;
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof(sa.sun_path)) {
    *error = "socket path too long (" + std::to_string(path.size()) + " bytes, at most " +
             std::to_string(sizeof(sa.sun_path) - 1) + "): " + path;
    return nullptr;
  }
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *error = std::string("socket(AF_UNIX, SOCK_SEQPACKET): ") + std::strerror(errno);
    return nullptr;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    const int e = errno;
    close(fd);
    *error = "cannot connect to burstd at " + path + ": " + std::strerror(e);
    if (e == ENOENT || e == ECONNREFUSED) {
      *error +=
          " (is burstd running? choose its socket with --socket or $" BURST_CTL_SOCKET_ENV ")";
    }
    return nullptr;
  }
  return std::unique_ptr<Client>(new Client(fd, path));
}

Client::~Client() {
  if (fd_ >= 0) close(fd_);
}

int Client::fail(int err, const std::string& what) {
  broken_ = true;
  error_ = what;
  return err;
}

int Client::receive(void* buf, size_t cap, size_t* len, int timeout_ms) {
  const int64_t deadline = now_ms() + timeout_ms;
  for (;;) {
    const int64_t left = deadline - now_ms();
    if (left <= 0)
      return fail(ETIMEDOUT, "burstd did not answer within " + std::to_string(timeout_ms) + " ms");
    pollfd p{fd_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0) {
      if (errno == EINTR) continue;
      return fail(errno, std::string("poll: ") + std::strerror(errno));
    }
    if (r == 0) continue;
    const ssize_t n = recv(fd_, buf, cap, MSG_TRUNC);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return fail(errno, std::string("receiving from burstd: ") + std::strerror(errno));
    }
    if (n == 0) return fail(ECONNRESET, "burstd closed the connection");
    if (static_cast<size_t>(n) > cap) {
      return fail(EMSGSIZE, "response of " + std::to_string(n) + " bytes is larger than " +
                                std::to_string(cap));
    }
    *len = static_cast<size_t>(n);
    return 0;
  }
}

int Client::raw(const void* msg, size_t len, void* resp, size_t resp_cap, size_t* resp_len,
                int timeout_ms) {
  if (broken_) return ENOTCONN;
  if (send(fd_, msg, len, MSG_NOSIGNAL) != static_cast<ssize_t>(len)) {
    return fail(errno, std::string("sending to burstd: ") + std::strerror(errno));
  }
  return receive(resp, resp_cap, resp_len, timeout_ms);
}

int Client::call(uint16_t op, void* req, size_t req_len, void* resp, size_t resp_cap,
                 size_t* resp_len, int timeout_ms) {
  if (broken_) return ENOTCONN;
  if (req_len < sizeof(burst_ctl_hdr) || req_len > BURST_CTL_MAX_MSG) {
    error_ = "request of " + std::to_string(req_len) + " bytes";
    return EINVAL;
  }
  auto* h = static_cast<burst_ctl_hdr*>(req);
  const uint64_t id = next_id_++;
  init_request(h, op, static_cast<uint32_t>(req_len), version_, id);
  if (send(fd_, req, req_len, MSG_NOSIGNAL) != static_cast<ssize_t>(req_len)) {
    return fail(errno == EPIPE ? ECONNRESET : errno,
                std::string("sending to burstd: ") + std::strerror(errno));
  }
  std::vector<uint8_t> buf(BURST_CTL_MAX_MSG);
  size_t n = 0;
  if (int e = receive(buf.data(), buf.size(), &n, timeout_ms); e != 0) return e;
  if (int e = check_response(buf.data(), n, op, id); e != 0) {
    return fail(e, std::string("malformed response from burstd to ") + op_name(op));
  }
  if (n > resp_cap) {
    return fail(EMSGSIZE, "response of " + std::to_string(n) + " bytes is larger than " +
                              std::to_string(resp_cap));
  }
  std::memcpy(resp, buf.data(), n);
  if (resp_len != nullptr) *resp_len = n;
  burst_ctl_hdr rh;
  std::memcpy(&rh, buf.data(), sizeof(rh));
  if (rh.status != 0) {
    error_ = std::string(op_name(op)) + ": " + std::strerror(rh.status);
    return rh.status;
  }
  return 0;
}

int Client::hello(const std::string& client_name, burst_ctl_hello_resp* resp) {
  burst_ctl_hello_req req{};
  req.version_min = BURST_CTL_VERSION_MIN;
  req.version_max = BURST_CTL_VERSION;
  set_str(req.client_name, client_name);
  version_ = BURST_CTL_VERSION;
  const int e = call(BURST_CTL_OP_HELLO, &req, sizeof(req), resp, sizeof(*resp));
  if (e == 0) {
    version_ = resp->version;
  } else if (e == EPROTONOSUPPORT && !broken_) {
    error_ = "burstd speaks control protocol versions " + std::to_string(resp->server_version_min) +
             ".." + std::to_string(resp->server_version_max) + ", this client " +
             std::to_string(BURST_CTL_VERSION_MIN) + ".." + std::to_string(BURST_CTL_VERSION);
  }
  return e;
}

}  // namespace burst::ctl
