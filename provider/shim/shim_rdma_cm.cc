// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libburst-shim.so, the rdma_cm part: stock librdmacm's event channels served
// by burstd (contract: abi/burst_shim.h; protocol: abi/burst_ctl_cm.h).
//
//   open("/dev/infiniband/rdma_cm")  an eventfd (the channel fd) + a hidden
//                                    control connection to burstd (HELLO,
//                                    CM_OPEN_CHANNEL carrying the eventfd)
//   fstat(channel)                   a character device 10:BURST_RDMA_CM_CDEV_MINOR
//   write(channel, UCMA command)     CM_COMMAND; the response bytes go to the
//                                    command's `response` pointer
//   close(channel)                   the hidden connection is closed too
//
// Channel table: as shim.cc's, slots of atomics holding { channel fd, its
// inode, hidden socket, its inode }, a number trusted only with its inode.
// Commands on one channel are serialised by the slot's mutex; a blocking
// GET_EVENT waits on the eventfd without holding it. rdma_cm is control path:
// this part may lock and make system calls, but never allocates.
#include "provider/shim/shim_rdma_cm.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_user_cm.h>
#include <stdarg.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "abi/burst_ctl_proto.h"
#include "abi/burst_shim.h"

#define BURST_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

namespace burst::shim {

std::atomic<int> g_cm_live{0};

namespace {

// --- the real functions (resolved by the constructor; before it, syscalls) --
using OpenFn = int (*)(const char*, int, ...);
using OpenatFn = int (*)(int, const char*, int, ...);
using FstatFn = int (*)(int, struct stat*);
using FstatatFn = int (*)(int, const char*, struct stat*, int);
using FxstatFn = int (*)(int, int, struct stat*);
using CloseFn = int (*)(int);
OpenFn g_open = nullptr, g_open64 = nullptr;
OpenatFn g_openat = nullptr, g_openat64 = nullptr;
FstatFn g_fstat = nullptr, g_fstat64 = nullptr;
FstatatFn g_fstatat = nullptr, g_fstatat64 = nullptr;
FxstatFn g_fxstat = nullptr, g_fxstat64 = nullptr;
CloseFn g_close = nullptr;

template <class T>
T next_fn(const char* name) {
  return reinterpret_cast<T>(dlsym(RTLD_NEXT, name));
}

void forget_channels_in_child();

__attribute__((constructor)) void resolve_cm_functions() {
  pthread_atfork(nullptr, nullptr, forget_channels_in_child);
  g_open = next_fn<OpenFn>("open");
  g_open64 = next_fn<OpenFn>("open64");
  g_openat = next_fn<OpenatFn>("openat");
  g_openat64 = next_fn<OpenatFn>("openat64");
  g_fstat = next_fn<FstatFn>("fstat");
  g_fstat64 = next_fn<FstatFn>("fstat64");
  g_fstatat = next_fn<FstatatFn>("fstatat");
  g_fstatat64 = next_fn<FstatatFn>("fstatat64");
  g_fxstat = next_fn<FxstatFn>("__fxstat");
  g_fxstat64 = next_fn<FxstatFn>("__fxstat64");
  g_close = next_fn<CloseFn>("close");
}

int sys_openat(OpenatFn fn, int dirfd, const char* path, int flags, mode_t mode) {
  if (fn != nullptr) return fn(dirfd, path, flags, mode);
  return static_cast<int>(syscall(SYS_openat, dirfd, path, flags, mode));
}

int real_fstat(int fd, struct stat* st) {
  if (g_fstat != nullptr) return g_fstat(fd, st);
  return static_cast<int>(syscall(SYS_fstat, fd, st));
}

int real_close(int fd) {
  if (g_close != nullptr) return g_close(fd);
  return static_cast<int>(syscall(SYS_close, fd));
}

uint64_t inode_of(int fd) {
  const int saved = errno;
  struct stat st;
  const uint64_t ino = real_fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
  errno = saved;
  return ino;
}

// --- the channel table -------------------------------------------------------
constexpr int kMaxCmChannels = 256;  // per process; open() fails with EMFILE beyond
constexpr int kFree = 0;
constexpr int kBusy = -1;

struct CmSlot {
  std::atomic<int> channel{kFree};  // kFree, kBusy or channel fd + 1
  std::atomic<uint64_t> channel_ino{0};
  std::atomic<int> sock{-1};  // the hidden connection (-1: gone)
  std::atomic<uint64_t> sock_ino{0};
  std::atomic<uint32_t> channel_id{0};  // burstd's id (MIGRATE_ID)
  uint64_t next_request = 1;            // under mu
};
CmSlot g_cm[kMaxCmChannels];
// Zero bytes are PTHREAD_MUTEX_INITIALIZER in glibc: static storage suffices.
pthread_mutex_t g_cm_mu[kMaxCmChannels];
std::atomic<int> g_cm_used{0};  // slots [0, g_cm_used) may be occupied

// The slot of channel fd (checked against its inode), or -1.
int find_channel(int fd) {
  if (fd < 0) return -1;
  const int n = g_cm_used.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (g_cm[i].channel.load(std::memory_order_acquire) != fd + 1) continue;
    const uint64_t ino = g_cm[i].channel_ino.load(std::memory_order_relaxed);
    return ino != 0 && inode_of(fd) == ino ? i : -1;
  }
  return -1;
}

// Empties slot i if it still holds channel fd; closes its hidden connection.
void release_slot(int i, int fd) {
  CmSlot& s = g_cm[i];
  int expected = fd + 1;
  if (!s.channel.compare_exchange_strong(expected, kBusy, std::memory_order_acquire)) return;
  pthread_mutex_lock(&g_cm_mu[i]);  // no command of this channel is in flight
  const int sock = s.sock.exchange(-1, std::memory_order_relaxed);
  if (sock >= 0 && inode_of(sock) == s.sock_ino.load(std::memory_order_relaxed)) {
    real_close(sock);
  }
  pthread_mutex_unlock(&g_cm_mu[i]);
  s.channel.store(kFree, std::memory_order_release);
  g_cm_live.fetch_sub(1, std::memory_order_relaxed);
}

// A number that is being closed or was just handed out again: entries made
// stale by a close the shim did not see are dropped.
void release_number(int fd) {
  const int n = g_cm_used.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (g_cm[i].channel.load(std::memory_order_acquire) == fd + 1) release_slot(i, fd);
    int s = fd;
    g_cm[i].sock.compare_exchange_strong(s, -1, std::memory_order_relaxed);
  }
}

int insert_channel(int fd, int sock, uint32_t channel_id) {
  for (int i = 0; i < kMaxCmChannels; ++i) {
    CmSlot& s = g_cm[i];
    int expected = kFree;
    if (!s.channel.compare_exchange_strong(expected, kBusy, std::memory_order_acquire)) continue;
    s.channel_ino.store(inode_of(fd), std::memory_order_relaxed);
    s.sock.store(sock, std::memory_order_relaxed);
    s.sock_ino.store(inode_of(sock), std::memory_order_relaxed);
    s.channel_id.store(channel_id, std::memory_order_relaxed);
    int used = g_cm_used.load(std::memory_order_relaxed);
    while (used < i + 1 && !g_cm_used.compare_exchange_weak(used, i + 1)) {
    }
    g_cm_live.fetch_add(1, std::memory_order_relaxed);
    s.channel.store(fd + 1, std::memory_order_release);
    return i;
  }
  return -1;
}

// A forked child shares its parent's hidden connections: its requests would
// interleave with the parent's on one stream. The child's copies are closed
// (the parent's channels go on); its inherited channel fds answer ENODEV.
void forget_channels_in_child() {
  const int n = g_cm_used.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i) {
    pthread_mutex_init(&g_cm_mu[i], nullptr);  // a parent thread may have held it
    const int sock = g_cm[i].sock.exchange(-1, std::memory_order_relaxed);
    if (sock >= 0 && inode_of(sock) == g_cm[i].sock_ino.load(std::memory_order_relaxed)) {
      real_close(sock);
    }
  }
}

// --- the hidden connection -----------------------------------------------------
constexpr int kCallTimeoutMs = 30000;  // burstd resolves routes synchronously (<= 5 s)

int64_t now_ms() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
}

// One request (with at most one descriptor) and its response on sock: 0 or an
// errno value (burstd's status, or ENODEV when the connection is unusable).
int roundtrip(int sock, uint64_t id, uint16_t op, void* req, size_t req_len, void* resp,
              size_t resp_len, int send_fd) {
  burst_ctl_init_request(static_cast<burst_ctl_hdr*>(req), op, static_cast<uint32_t>(req_len),
                         BURST_CTL_VERSION, id);
  iovec iov{req, req_len};
  alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int))];
  msghdr mh{};
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  if (send_fd >= 0) {
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof(cbuf);
    cmsghdr* cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &send_fd, sizeof(int));
  }
  ssize_t n;
  do {
    n = sendmsg(sock, &mh, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(req_len)) return ENODEV;
  const int64_t deadline = now_ms() + kCallTimeoutMs;
  for (;;) {
    const int64_t left = deadline - now_ms();
    if (left <= 0) return ETIMEDOUT;
    pollfd p{sock, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left));
    if (r < 0 && errno != EINTR) return ENODEV;
    if (r <= 0) continue;
    n = recv(sock, resp, resp_len, MSG_DONTWAIT | MSG_TRUNC);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    break;
  }
  if (n <= 0 || static_cast<size_t>(n) > resp_len) return ENODEV;
  if (burst_ctl_check_response_hdr(resp, static_cast<size_t>(n), op, id) != 0) return ENODEV;
  burst_ctl_hdr h;
  memcpy(&h, resp, sizeof(h));
  if (h.status != 0) return h.status;
  return static_cast<size_t>(n) == resp_len ? 0 : ENODEV;
}

const char* socket_path() {
  const char* env = getenv(BURST_CTL_SOCKET_ENV);
  return env != nullptr && env[0] != '\0' ? env : BURST_CTL_DEFAULT_SOCKET;
}

// Connects and says HELLO: the socket, or -1 with errno.
int connect_burstd() {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  const char* path = socket_path();
  if (strlen(path) >= sizeof(sa.sun_path)) return errno = ENODEV, -1;
  strcpy(sa.sun_path, path);
  const int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (sock < 0) return -1;
  int r;
  do {
    r = connect(sock, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  } while (r != 0 && errno == EINTR);
  burst_ctl_hello_req req{};
  req.version_min = BURST_CTL_VERSION_MIN;
  req.version_max = BURST_CTL_VERSION;
  snprintf(req.client_name, sizeof(req.client_name), "%s (rdma_cm)", program_invocation_short_name);
  alignas(8) uint8_t resp[sizeof(burst_ctl_hello_resp)];
  if (r != 0 ||
      roundtrip(sock, 0, BURST_CTL_OP_HELLO, &req, sizeof(req), resp, sizeof(resp), -1) != 0) {
    real_close(sock);
    return errno = ENODEV, -1;
  }
  return sock;
}

// open() of the rdma_cm node: the channel fd, or -1 with errno.
int open_channel(int flags) {
  const int efd_flags =
      ((flags & O_CLOEXEC) ? EFD_CLOEXEC : 0) | ((flags & O_NONBLOCK) ? EFD_NONBLOCK : 0);
  const int fd = eventfd(0, efd_flags);
  if (fd < 0) return -1;
  const int sock = connect_burstd();
  if (sock < 0) {
    const int e = errno;
    real_close(fd);
    return errno = e, -1;
  }
  burst_ctl_cm_open_channel_req req{};
  burst_ctl_cm_open_channel_resp resp{};
  int e =
      roundtrip(sock, 1, BURST_CTL_OP_CM_OPEN_CHANNEL, &req, sizeof(req), &resp, sizeof(resp), fd);
  if (e == 0) {
    release_number(fd);  // both numbers are brand new: older entries are stale
    release_number(sock);
    if (insert_channel(fd, sock, resp.channel_id) >= 0) return fd;
    e = EMFILE;
  } else if (e != EMFILE && e != ENFILE && e != ENOMEM) {
    e = ENODEV;  // burstd without a connection manager: as a kernel without rdma_ucm
  }
  real_close(sock);
  real_close(fd);
  return errno = e, -1;
}

bool is_rdma_cm_path(const char* path) {
  return path != nullptr && strcmp(path, BURST_RDMA_CM_PATH) == 0;
}

// A channel's stat as the kernel's misc device shows it.
void fake_cdev(int fd, struct stat* st) {
  if (find_channel(fd) < 0) return;
  st->st_mode = S_IFCHR | 0666;
  st->st_rdev = makedev(BURST_RDMA_CM_CDEV_MAJOR, BURST_RDMA_CM_CDEV_MINOR);
}

}  // namespace

int cm_find_channel(int fd) { return find_channel(fd); }

uint32_t cm_channel_id(int slot) { return g_cm[slot].channel_id.load(std::memory_order_relaxed); }

int cm_channel_socket(int slot) { return g_cm[slot].sock.load(std::memory_order_relaxed); }

int cm_call(int slot, uint16_t op, void* req, size_t req_len, void* resp, size_t resp_len) {
  CmSlot& s = g_cm[slot];
  pthread_mutex_lock(&g_cm_mu[slot]);
  const int sock = s.sock.load(std::memory_order_relaxed);
  int e = ENODEV;  // the hidden connection is gone (closed by the application)
  if (sock >= 0 && inode_of(sock) == s.sock_ino.load(std::memory_order_relaxed)) {
    e = roundtrip(sock, s.next_request++, op, req, req_len, resp, resp_len, -1);
  }
  pthread_mutex_unlock(&g_cm_mu[slot]);
  return e;
}

void cm_close(int fd) {
  if (fd < 0) return;
  release_number(fd);
}

}  // namespace burst::shim

// --- interposed functions ------------------------------------------------------
using namespace burst::shim;

#define BURST_SHIM_MODE_ARG(flags, mode)                  \
  mode_t mode = 0;                                        \
  if ((flags) & (O_CREAT | __O_TMPFILE)) {                \
    va_list ap;                                           \
    va_start(ap, flags);                                  \
    mode = static_cast<mode_t>(va_arg(ap, unsigned int)); \
    va_end(ap);                                           \
  }

BURST_SHIM_EXPORT int open(const char* path, int flags, ...) {
  BURST_SHIM_MODE_ARG(flags, mode)
  if (is_rdma_cm_path(path)) [[unlikely]]
    return open_channel(flags);
  if (g_open != nullptr) return g_open(path, flags, mode);
  return sys_openat(nullptr, AT_FDCWD, path, flags, mode);
}

BURST_SHIM_EXPORT int open64(const char* path, int flags, ...) {
  BURST_SHIM_MODE_ARG(flags, mode)
  if (is_rdma_cm_path(path)) [[unlikely]]
    return open_channel(flags);
  if (g_open64 != nullptr) return g_open64(path, flags, mode);
  return sys_openat(nullptr, AT_FDCWD, path, flags | O_LARGEFILE, mode);
}

BURST_SHIM_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  BURST_SHIM_MODE_ARG(flags, mode)
  if (is_rdma_cm_path(path)) [[unlikely]]
    return open_channel(flags);
  return sys_openat(g_openat, dirfd, path, flags, mode);
}

BURST_SHIM_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  BURST_SHIM_MODE_ARG(flags, mode)
  if (is_rdma_cm_path(path)) [[unlikely]]
    return open_channel(flags);
  return sys_openat(g_openat64, dirfd, path, flags | O_LARGEFILE, mode);
}

BURST_SHIM_EXPORT int fstat(int fd, struct stat* st) {
  const int r = real_fstat(fd, st);
  if (r == 0 && cm_channels_exist()) fake_cdev(fd, st);
  return r;
}

BURST_SHIM_EXPORT int fstat64(int fd, struct stat64* st) {
  static_assert(sizeof(struct stat64) == sizeof(struct stat), "LP64: one stat layout");
  const int r = g_fstat64 != nullptr ? g_fstat64(fd, reinterpret_cast<struct stat*>(st))
                                     : real_fstat(fd, reinterpret_cast<struct stat*>(st));
  if (r == 0 && cm_channels_exist()) fake_cdev(fd, reinterpret_cast<struct stat*>(st));
  return r;
}

static int fstatat_common(FstatatFn fn, int dirfd, const char* path, struct stat* st, int flags) {
  const int r = fn != nullptr ? fn(dirfd, path, st, flags)
                              : static_cast<int>(syscall(SYS_newfstatat, dirfd, path, st, flags));
  // Only fstat's form names the descriptor itself.
  if (r == 0 && cm_channels_exist() && (flags & AT_EMPTY_PATH) && path != nullptr &&
      path[0] == '\0') {
    fake_cdev(dirfd, st);
  }
  return r;
}

BURST_SHIM_EXPORT int fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  return fstatat_common(g_fstatat, dirfd, path, st, flags);
}

BURST_SHIM_EXPORT int fstatat64(int dirfd, const char* path, struct stat64* st, int flags) {
  return fstatat_common(g_fstatat64, dirfd, path, reinterpret_cast<struct stat*>(st), flags);
}

// Binaries built against glibc < 2.33 call these instead of fstat.
BURST_SHIM_EXPORT int __fxstat(int ver, int fd, struct stat* st) {
  const int r = g_fxstat != nullptr ? g_fxstat(ver, fd, st) : real_fstat(fd, st);
  if (r == 0 && cm_channels_exist()) fake_cdev(fd, st);
  return r;
}

BURST_SHIM_EXPORT int __fxstat64(int ver, int fd, struct stat64* st) {
  auto* s = reinterpret_cast<struct stat*>(st);
  const int r = g_fxstat64 != nullptr ? g_fxstat64(ver, fd, s) : real_fstat(fd, s);
  if (r == 0 && cm_channels_exist()) fake_cdev(fd, s);
  return r;
}
