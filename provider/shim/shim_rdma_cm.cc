// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libburst-shim.so, the rdma_cm part: stock librdmacm's event channels served
// by burstd (contract: abi/burst_shim.h; protocol: abi/burst_ctl_cm.h).
//
//   open("/dev/infiniband/rdma_cm")  a hidden control connection to burstd
//                                    (HELLO) and the channel fd: one end of a
//                                    SOCK_SEQPACKET pair, CM_OPEN_CHANNEL
//                                    carrying the other (burstd pushes the
//                                    events there); or an eventfd where
//                                    burstd cannot push
//   fstat(channel)                   a character device 10:BURST_RDMA_CM_CDEV_MINOR
//   write(channel, UCMA command)     CM_COMMAND_EX (eventfd: CM_COMMAND); the
//                                    response bytes go to the command's
//                                    `response` pointer; GET_EVENT of a push
//                                    channel: shim_cm_events.cc
//   close(channel)                   the hidden connection is closed too
//
// Channel table: a slot per channel { hidden socket, burstd's id, how many
// descriptor numbers name it } and a table by descriptor number, kept exact
// by the shim's hooks of close and dup (shim_fd_hooks.cc): no system call to
// recognise a channel. Commands on one channel are serialised by the slot's
// mutex; a blocking
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

// --- the channel table -------------------------------------------------------
// A slot is one channel (one open of the node): its hidden connection and
// burstd's id. Which descriptor numbers name it is kept per number in g_fd,
// maintained by the shim's own hooks of every libc call that closes or
// duplicates a descriptor (close, dup, dup2, dup3, fcntl F_DUPFD*,
// close_range, closefrom: shim_fd_hooks.cc), so recognising a channel costs
// one load, no system call. A number above kFdTable is never a channel.
constexpr int kMaxCmChannels = 256;  // per process; open() fails with EMFILE beyond
constexpr int kFdTable = 1 << 20;    // fs.nr_open's default: every number a process can have
constexpr int kFree = 0;
constexpr int kBusy = -1;
constexpr int kLive = 1;

struct CmSlot {
  std::atomic<int> state{kFree};  // kFree, kBusy (being filled or emptied) or kLive
  int refs = 0;                   // channel numbers naming it (under g_tab_mu)
  std::atomic<int> sock{-1};      // the hidden connection (-1: gone)
  std::atomic<uint32_t> channel_id{0};  // burstd's id (MIGRATE_ID)
  uint64_t next_request = 1;            // under mu
  // Push channels (events arrive on the channel's socket; shim_cm_events.cc):
  std::atomic<int> evsock{-1};  // the shim's own duplicate of the channel fd (-1: eventfd channel)
  CmEvents ev;                  // under g_ev_mu
};
CmSlot g_cm[kMaxCmChannels];
// Zero bytes are PTHREAD_MUTEX_INITIALIZER in glibc: static storage suffices.
pthread_mutex_t g_cm_mu[kMaxCmChannels];
pthread_mutex_t g_ev_mu[kMaxCmChannels];  // a push channel's event state (and its socket's reads)
// Per descriptor number: 0 nothing, s + 1 a number of channel s, -(s + 1)
// channel s's hidden connection. Written under g_tab_mu, read without it.
// 2 MiB of zero pages, only the touched ones ever mapped.
std::atomic<int16_t> g_fd[kFdTable];
static_assert(kMaxCmChannels < INT16_MAX);
std::atomic<int> g_fd_max{-1};  // the highest number ever entered (close_range's bound)
pthread_mutex_t g_tab_mu = PTHREAD_MUTEX_INITIALIZER;

bool in_table(int fd) { return fd >= 0 && fd < kFdTable; }

// The slot of channel fd, or -1.
int find_channel(int fd) {
  if (!in_table(fd)) return -1;
  const int v = g_fd[fd].load(std::memory_order_acquire);
  return v > 0 ? v - 1 : -1;
}

// Is `sock` still slot i's hidden connection (the application never closed its number)?
bool sock_is_ours(int i, int sock) {
  return in_table(sock) && g_fd[sock].load(std::memory_order_acquire) == -(i + 1);
}

void set_number(int fd, int v) {
  g_fd[fd].store(static_cast<int16_t>(v), std::memory_order_release);
  int m = g_fd_max.load(std::memory_order_relaxed);
  while (fd > m && !g_fd_max.compare_exchange_weak(m, fd)) {
  }
}

// Slots whose last number went away, released once g_tab_mu is dropped.
struct Orphans {
  int slot[kMaxCmChannels];
  int n = 0;
};

// Number fd no longer names what the table says (closed, or replaced by
// dup2): forgotten; a channel losing its last number goes to *o. Under g_tab_mu.
void forget_number_locked(int fd, Orphans* o) {
  if (!in_table(fd)) return;
  const int v = g_fd[fd].load(std::memory_order_relaxed);
  if (v == 0) return;
  g_fd[fd].store(0, std::memory_order_release);
  if (v < 0) {  // the application closed a hidden number of the shim's: no longer ours
    int s = fd;
    g_cm[-v - 1].sock.compare_exchange_strong(s, -1, std::memory_order_relaxed);
    s = fd;
    g_cm[-v - 1].evsock.compare_exchange_strong(s, -1, std::memory_order_relaxed);
    return;
  }
  CmSlot& s = g_cm[v - 1];
  if (--s.refs == 0) {
    s.state.store(kBusy, std::memory_order_relaxed);
    o->slot[o->n++] = v - 1;
  }
}

// Closes the hidden connection of a slot no number names any more, once no
// command of it is in flight, and frees the slot.
void release_orphans(const Orphans& o) {
  for (int k = 0; k < o.n; ++k) {
    const int i = o.slot[k];
    CmSlot& s = g_cm[i];
    pthread_mutex_lock(&g_cm_mu[i]);  // no command of this channel is in flight
    pthread_mutex_lock(&g_tab_mu);
    const int sock = s.sock.exchange(-1, std::memory_order_relaxed);
    const bool ours = sock >= 0 && sock_is_ours(i, sock);
    if (ours) g_fd[sock].store(0, std::memory_order_release);
    const int evsock = s.evsock.exchange(-1, std::memory_order_relaxed);
    const bool ev_ours = evsock >= 0 && sock_is_ours(i, evsock);
    if (ev_ours) g_fd[evsock].store(0, std::memory_order_release);
    s.state.store(kFree, std::memory_order_release);
    pthread_mutex_unlock(&g_tab_mu);
    if (ours) real_close(sock);  // before its number can be handed out again
    if (ev_ours) real_close(evsock);
    pthread_mutex_unlock(&g_cm_mu[i]);
    g_cm_live.fetch_sub(1, std::memory_order_relaxed);
  }
}

int insert_channel(int fd, int sock, int evsock, uint32_t channel_id) {
  if (!in_table(fd) || !in_table(sock) || (evsock >= 0 && !in_table(evsock))) return -1;
  Orphans o;
  pthread_mutex_lock(&g_tab_mu);
  forget_number_locked(fd, &o);  // the numbers are brand new: older entries are stale
  forget_number_locked(sock, &o);
  if (evsock >= 0) forget_number_locked(evsock, &o);
  int slot = -1;
  for (int i = 0; i < kMaxCmChannels && slot < 0; ++i) {
    if (g_cm[i].state.load(std::memory_order_relaxed) != kFree) continue;
    CmSlot& s = g_cm[i];
    s.state.store(kLive, std::memory_order_relaxed);
    s.refs = 1;
    s.sock.store(sock, std::memory_order_relaxed);
    s.channel_id.store(channel_id, std::memory_order_relaxed);
    s.evsock.store(evsock, std::memory_order_relaxed);
    s.ev = CmEvents{};
    g_cm_live.fetch_add(1, std::memory_order_relaxed);
    set_number(sock, -(i + 1));
    if (evsock >= 0) set_number(evsock, -(i + 1));
    set_number(fd, i + 1);
    slot = i;
  }
  pthread_mutex_unlock(&g_tab_mu);
  release_orphans(o);
  return slot;
}

// A forked child shares its parent's hidden connections: its requests would
// interleave with the parent's on one stream. The child's copies are closed
// (the parent's channels go on); its inherited channel fds answer ENODEV.
void forget_channels_in_child() {
  pthread_mutex_init(&g_tab_mu, nullptr);  // a parent thread may have held it
  for (int i = 0; i < kMaxCmChannels; ++i) {
    pthread_mutex_init(&g_cm_mu[i], nullptr);
    pthread_mutex_init(&g_ev_mu[i], nullptr);
    const int sock = g_cm[i].sock.exchange(-1, std::memory_order_relaxed);
    if (sock >= 0 && sock_is_ours(i, sock)) {
      g_fd[sock].store(0, std::memory_order_relaxed);
      real_close(sock);
    }
  }
}

// --- the hidden connection -----------------------------------------------------
constexpr int kCallTimeoutMs = 30000;  // burstd resolves routes synchronously (<= 5 s)

// One request (with at most one descriptor) and its response on sock: 0 or an
// errno value (burstd's status, or ENODEV when the connection is unusable).
int roundtrip(int sock, uint64_t id, uint16_t op, void* req, size_t req_len, void* resp,
              size_t resp_len, int send_fd, size_t min_len = 0) {
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
  // A blocking receive, bounded by the socket's SO_RCVTIMEO (connect_burstd):
  // one system call for the answer.
  do {
    n = recv(sock, resp, resp_len, MSG_TRUNC);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ETIMEDOUT;
  if (n <= 0 || static_cast<size_t>(n) > resp_len) return ENODEV;
  if (burst_ctl_check_response_hdr(resp, static_cast<size_t>(n), op, id) != 0) return ENODEV;
  burst_ctl_hdr h;
  memcpy(&h, resp, sizeof(h));
  if (h.status != 0) return h.status;
  const size_t least = min_len != 0 ? min_len : resp_len;  // a list op's answer may be shorter
  return static_cast<size_t>(n) >= least ? 0 : ENODEV;
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
  const timeval tv{kCallTimeoutMs / 1000, 0};
  int r = setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  while (r == 0 && (r = connect(sock, reinterpret_cast<sockaddr*>(&sa), sizeof(sa))) != 0 &&
         errno == EINTR) {
    r = 0;
  }
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

// Opens the channel on sock: with events pushed (the channel fd is one end of
// a SOCK_SEQPACKET pair, burstd gets the other), or, where burstd cannot push
// (or BURST_CM_PUSH=0), an eventfd. The channel fd, or -1 with errno.
int open_on(int sock, int flags, bool push) {
  int fd = -1, peer = -1, evsock = -1;
  if (push) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return -1;
    fd = sv[0];
    peer = sv[1];
    evsock = fcntl(fd, F_DUPFD_CLOEXEC, 0);  // the shim's own number for the reads
    if ((!(flags & O_CLOEXEC) && fcntl(fd, F_SETFD, 0) != 0) ||
        ((flags & O_NONBLOCK) && fcntl(fd, F_SETFL, O_NONBLOCK) != 0) || evsock < 0) {
      const int e = errno;
      for (int f : {fd, peer, evsock}) {
        if (f >= 0) real_close(f);
      }
      return errno = e, -1;
    }
  } else {
    fd = eventfd(0, ((flags & O_CLOEXEC) ? EFD_CLOEXEC : 0) |
                        ((flags & O_NONBLOCK) ? EFD_NONBLOCK : 0));
    if (fd < 0) return -1;
  }
  burst_ctl_cm_open_channel_req req{};
  req.flags = push ? BURST_CTL_CM_OPEN_PUSH : 0;
  burst_ctl_cm_open_channel_resp resp{};
  int e = roundtrip(sock, push ? 2 : 1, BURST_CTL_OP_CM_OPEN_CHANNEL, &req, sizeof(req), &resp,
                    sizeof(resp), push ? peer : fd);
  if (peer >= 0) real_close(peer);  // burstd has it
  if (e == 0) {
    if (insert_channel(fd, sock, evsock, resp.channel_id) >= 0) return fd;
    e = EMFILE;
  }
  real_close(fd);
  if (evsock >= 0) real_close(evsock);
  return errno = e, -1;
}

bool push_wanted() {
  const char* env = getenv("BURST_CM_PUSH");
  return env == nullptr || strcmp(env, "0") != 0;
}

// open() of the rdma_cm node: the channel fd, or -1 with errno.
int open_channel(int flags) {
  const int sock = connect_burstd();
  if (sock < 0) return -1;
  const bool push = push_wanted();
  int fd = open_on(sock, flags, push);
  if (fd < 0 && push && errno == EINVAL) fd = open_on(sock, flags, false);  // burstd cannot push
  if (fd >= 0) return fd;
  int e = errno;
  if (e != EMFILE && e != ENFILE && e != ENOMEM) {
    e = ENODEV;  // burstd without a connection manager: as a kernel without rdma_ucm
  }
  real_close(sock);
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

int cm_event_socket(int slot) {
  const int fd = g_cm[slot].evsock.load(std::memory_order_relaxed);
  return fd >= 0 && sock_is_ours(slot, fd) ? fd : -1;
}

CmEvents& cm_events(int slot) { return g_cm[slot].ev; }
pthread_mutex_t* cm_events_mutex(int slot) { return &g_ev_mu[slot]; }

int cm_call(int slot, uint16_t op, void* req, size_t req_len, void* resp, size_t resp_len,
            size_t min_len) {
  CmSlot& s = g_cm[slot];
  pthread_mutex_lock(&g_cm_mu[slot]);
  const int sock = s.sock.load(std::memory_order_relaxed);
  int e = ENODEV;  // the hidden connection is gone (closed by the application)
  if (sock >= 0 && sock_is_ours(slot, sock)) {
    e = roundtrip(sock, s.next_request++, op, req, req_len, resp, resp_len, -1, min_len);
  }
  pthread_mutex_unlock(&g_cm_mu[slot]);
  return e;
}

void cm_close(int fd) {
  if (!in_table(fd) || g_fd[fd].load(std::memory_order_acquire) == 0) return;
  Orphans o;
  pthread_mutex_lock(&g_tab_mu);
  forget_number_locked(fd, &o);
  pthread_mutex_unlock(&g_tab_mu);
  release_orphans(o);
}

void cm_close_range(unsigned first, unsigned last) {
  const int max = g_fd_max.load(std::memory_order_acquire);
  if (max < 0 || first > static_cast<unsigned>(max)) return;
  if (last > static_cast<unsigned>(max)) last = static_cast<unsigned>(max);
  Orphans o;
  pthread_mutex_lock(&g_tab_mu);
  for (unsigned fd = first; fd <= last; ++fd) forget_number_locked(static_cast<int>(fd), &o);
  pthread_mutex_unlock(&g_tab_mu);
  release_orphans(o);
}

void cm_dup(int old_fd, int new_fd) {
  if (!in_table(new_fd) || old_fd == new_fd) return;
  Orphans o;
  pthread_mutex_lock(&g_tab_mu);
  forget_number_locked(new_fd, &o);  // dup2/dup3 closed what new_fd was
  const int v = in_table(old_fd) ? g_fd[old_fd].load(std::memory_order_relaxed) : 0;
  if (v > 0) {  // a second number of the channel, as the kernel's file
    ++g_cm[v - 1].refs;
    set_number(new_fd, v);
  }
  pthread_mutex_unlock(&g_tab_mu);
  release_orphans(o);
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
