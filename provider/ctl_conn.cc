// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "provider/ctl_conn.h"

#include <fcntl.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace burst::provider {
namespace {

constexpr size_t kHdr = sizeof(burst_ctl_hdr);
// The largest response the provider asks for (HELLO); anything longer is a
// protocol error.
constexpr size_t kMaxResp = sizeof(burst_ctl_hello_resp);

int64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

// Marks the connection unusable and returns err.
int broken(CtlConn* c, int err, const char* what) {
  __atomic_store_n(&c->broken, true, __ATOMIC_RELEASE);
  fprintf(stderr, "burst: control connection to burstd lost: %s (%s)\n", what, strerror(err));
  return err;
}

// One message of at most cap bytes; the deadline is absolute (now_ms()). A
// descriptors that came with it go to fd[0..1] (when fd is not null; extra
// ones are closed).
int receive(CtlConn* c, void* buf, size_t cap, size_t* len, int64_t deadline, int* fd) {
  for (;;) {
    const int64_t left = deadline - now_ms();
    if (left <= 0) return broken(c, ETIMEDOUT, "burstd did not answer in time");
    pollfd p{c->fd, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0) {
      if (errno == EINTR) continue;
      return broken(c, errno, "poll");
    }
    if (r == 0) continue;
    iovec iov{buf, cap};
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 4)];
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof(cbuf);
    const ssize_t n = recvmsg(c->fd, &mh, MSG_TRUNC | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n >= 0) {
      for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr; cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
        const size_t nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t k = 0; k < nfds; ++k) {
          int got;
          memcpy(&got, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
          if (fd != nullptr && fd[0] < 0) {
            fd[0] = got;
          } else if (fd != nullptr && fd[1] < 0) {
            fd[1] = got;
          } else {
            close(got);
          }
        }
      }
    }
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return broken(c, errno == ECONNRESET ? ECONNRESET : errno, "receive");
    }
    if (n == 0) return broken(c, ECONNRESET, "burstd closed the connection");
    if (static_cast<size_t>(n) > cap) return broken(c, EMSGSIZE, "oversized response");
    *len = static_cast<size_t>(n);
    return 0;
  }
}

int call_locked(CtlConn* c, uint16_t op, void* req, size_t req_len, void* resp, size_t resp_len,
                const int* send_fds, size_t n_send, int* recv_fd) {
  if (c->broken || c->fd < 0) return ECONNRESET;
  if (req_len < kHdr || req_len > BURST_CTL_MAX_MSG || resp_len < kHdr || resp_len > kMaxResp) {
    return EINVAL;
  }
  const uint64_t id = c->next_id++;
  burst_ctl_init_request(static_cast<burst_ctl_hdr*>(req), op, static_cast<uint32_t>(req_len),
                         c->version, id);
  iovec iov{req, req_len};
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * 2)];
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (n_send > 2) return EINVAL;
  if (n_send > 0) {
    mh.msg_control = cbuf;
    mh.msg_controllen = CMSG_SPACE(sizeof(int) * n_send);
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * n_send);
    memcpy(CMSG_DATA(cm), send_fds, sizeof(int) * n_send);
  }
  ssize_t sent;
  do {
    sent = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent != static_cast<ssize_t>(req_len)) {
    return broken(c, sent < 0 && errno != EPIPE ? errno : ECONNRESET, "send");
  }
  alignas(8) uint8_t buf[kMaxResp];  // 4 KiB on the caller's stack: control path only
  size_t n = 0;
  if (int e = receive(c, buf, sizeof(buf), &n, now_ms() + kCallTimeoutMs, recv_fd); e != 0) {
    return e;
  }
  if (int e = burst_ctl_check_response_hdr(buf, n, op, id); e != 0) {
    return broken(c, e, e == EPROTO ? "response to another request" : "malformed response");
  }
  burst_ctl_hdr rh;
  memcpy(&rh, buf, kHdr);
  // An error answer is the header alone (HELLO keeps its body).
  if (rh.status != 0 && op != BURST_CTL_OP_HELLO) return rh.status;
  if (n != resp_len) return broken(c, EBADMSG, "response of unexpected size");
  memcpy(resp, buf, n);
  return rh.status;
}

}  // namespace

const char* ctl_socket_path() {
  const char* env = getenv(BURST_CTL_SOCKET_ENV);
  return env != nullptr && env[0] != '\0' ? env : BURST_CTL_DEFAULT_SOCKET;
}

int ctl_open(CtlConn* c, const char* path, const char* client_name, burst_ctl_hello_resp* hello,
             char* err, size_t err_len) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const size_t plen = strlen(path);
  if (plen >= sizeof(sa.sun_path)) {
    snprintf(err, err_len, "burstd socket path too long (%zu bytes): %s", plen, path);
    return ENAMETOOLONG;
  }
  memcpy(sa.sun_path, path, plen + 1);
  const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    const int e = errno;
    snprintf(err, err_len, "socket(AF_UNIX, SOCK_SEQPACKET): %s", strerror(e));
    return e;
  }
  int r;
  do {
    r = connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    const int e = errno;
    close(fd);
    snprintf(err, err_len, "cannot connect to burstd at %s: %s%s", path, strerror(e),
             e == ENOENT || e == ECONNREFUSED
                 ? " (is burstd running? its socket is chosen with $" BURST_CTL_SOCKET_ENV
                   " or `burstctl run --socket PATH`)"
                 : "");
    return e;
  }
  c->fd = fd;
  c->broken = false;
  c->version = BURST_CTL_VERSION;

  burst_ctl_hello_req req{};
  req.version_min = BURST_CTL_VERSION_MIN;
  req.version_max = BURST_CTL_VERSION;
  snprintf(req.client_name, sizeof(req.client_name), "%s", client_name);
  pthread_mutex_lock(&c->mu);
  const int e =
      call_locked(c, BURST_CTL_OP_HELLO, &req, sizeof(req), hello, sizeof(*hello), nullptr, 0,
                  nullptr);
  pthread_mutex_unlock(&c->mu);
  if (e != 0) {
    if (e == EPROTONOSUPPORT && !c->broken) {
      snprintf(err, err_len,
               "burstd at %s speaks control protocol versions %u..%u, this provider %u..%u", path,
               hello->server_version_min, hello->server_version_max, BURST_CTL_VERSION_MIN,
               BURST_CTL_VERSION);
    } else {
      snprintf(err, err_len, "HELLO to burstd at %s failed: %s", path, strerror(e));
    }
    ctl_close(c);
    return e;
  }
  c->version = hello->version;
  if (int ae = ctl_attach_memory(c, err, err_len); ae != 0) {
    ctl_close(c);
    return ae;
  }
  return 0;
}

int ctl_call(CtlConn* c, uint16_t op, void* req, size_t req_len, void* resp, size_t resp_len) {
  return ctl_call_fd(c, op, req, req_len, resp, resp_len, -1, nullptr);
}

int ctl_call_fd(CtlConn* c, uint16_t op, void* req, size_t req_len, void* resp, size_t resp_len,
                int send_fd, int* recv_fd) {
  int fds[2] = {-1, -1};
  pthread_mutex_lock(&c->mu);
  int e = call_locked(c, op, req, req_len, resp, resp_len, &send_fd, send_fd >= 0 ? 1 : 0, fds);
  pthread_mutex_unlock(&c->mu);
  if (e != 0 || recv_fd == nullptr) {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
    if (recv_fd != nullptr) recv_fd[0] = -1;
    return e;
  }
  recv_fd[0] = fds[0];
  if (fds[1] >= 0) close(fds[1]);
  return 0;
}

int ctl_call_fd2(CtlConn* c, uint16_t op, void* req, size_t req_len, void* resp, size_t resp_len,
                 int* recv_fds) {
  recv_fds[0] = recv_fds[1] = -1;
  pthread_mutex_lock(&c->mu);
  int e = call_locked(c, op, req, req_len, resp, resp_len, nullptr, 0, recv_fds);
  pthread_mutex_unlock(&c->mu);
  if (e != 0) {
    for (int i = 0; i < 2; ++i) {
      if (recv_fds[i] >= 0) close(recv_fds[i]);
      recv_fds[i] = -1;
    }
  }
  return e;
}

int ctl_attach_memory(CtlConn* c, char* err, size_t err_len) {
  // Opened here, by this process, with its own credentials: the kernel checks
  // them now, and both stay bound to this address space (an exec'd image is
  // out of their reach). burstd reaches our memory only through them.
  const int maps = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (maps < 0) {
    const int e = errno;
    snprintf(err, err_len, "cannot open /proc/self/maps: %s (is /proc mounted?)", strerror(e));
    return e;
  }
  const int mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
  if (mem < 0) {
    // E.g. a process that is not dumpable (setuid, prctl(PR_SET_DUMPABLE, 0)):
    // its /proc files belong to root.
    fprintf(stderr,
            "burst: cannot open /proc/self/mem (%s): only memory backed by a shared file "
            "(memfd, /dev/shm, MAP_SHARED|MAP_ANONYMOUS as root) can be registered\n",
            strerror(errno));
  }
  burst_ctl_attach_memory_req req{};
  req.flags = mem >= 0 ? BURST_CTL_ATTACH_F_MEM : 0;
  const int fds[2] = {maps, mem};
  burst_ctl_empty_resp resp{};
  pthread_mutex_lock(&c->mu);
  const int e = call_locked(c, BURST_CTL_OP_ATTACH_MEMORY, &req, sizeof(req), &resp, sizeof(resp),
                            fds, mem >= 0 ? 2 : 1, nullptr);
  pthread_mutex_unlock(&c->mu);
  close(maps);
  if (mem >= 0) close(mem);
  if (e != 0) snprintf(err, err_len, "ATTACH_MEMORY to burstd failed: %s", strerror(e));
  return e;
}

void ctl_close(CtlConn* c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  c->broken = true;
}

}  // namespace burst::provider
