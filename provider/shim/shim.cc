// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libburst-shim.so: completion channels for libibverbs on a kernel without
// RDMA (what and why: burst_shim.h); the rdma_cm event channels are
// shim_rdma_cm.cc's and shim_ucma.cc's, reached from write() and close() here.
// Preloaded into every process `burstctl run` starts, most of which never
// touch verbs, so:
//   - write() costs one atomic load (rdma_cm channels exist?; then one more:
//     is fd one?) and one size comparison unless the write is exactly 16
//     bytes, and then one fstat();
//     close() costs two atomic loads until a channel exists in the process;
//   - nothing here allocates, locks, throws or uses libstdc++; the channel
//     table is a fixed array of atomics, so close() and
//     burst_shim_channel_peer() stay async-signal-safe and fork-safe;
//   - errno is preserved whenever the call is passed on.
//
// Channel table: slot = { channel fd, peer fd, and the inode numbers of both
// sockets }. A file descriptor number is only trusted together with its
// inode, so an entry made stale by a close the shim did not see (dup2 over a
// channel, close_range, a raw syscall) can never make the shim close or hand
// out someone else's descriptor: a stale entry is dropped when its number
// comes back from socketpair() or is closed again.
#include <dlfcn.h>
#include <rdma/ib_user_verbs.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "abi/burst_device.h"
#include "abi/burst_shim.h"
#include "provider/shim/shim_rdma_cm.h"

#define BURST_SHIM_EXPORT extern "C" __attribute__((visibility("default")))

static_assert(sizeof(ib_uverbs_comp_event_desc) == BURST_SHIM_CQ_EVENT_SIZE);
static_assert(offsetof(ib_uverbs_comp_event_desc, cq_handle) == 0);

namespace {

// What libibverbs 44 writes for ibv_create_comp_channel() (cmd_write.h:
// struct ibv_create_comp_channel; _execute_cmd_write sets the header).
struct CreateCompChannelCmd {
  ib_uverbs_cmd_hdr hdr;
  ib_uverbs_create_comp_channel core;  // .response: where resp goes
};
static_assert(sizeof(CreateCompChannelCmd) == 16);
constexpr uint16_t kCmdInWords = sizeof(CreateCompChannelCmd) / 4;
constexpr uint16_t kRespWords = sizeof(ib_uverbs_create_comp_channel_resp) / 4;
static_assert(sizeof(ib_uverbs_create_comp_channel_resp) == 4);

// --- the real functions ------------------------------------------------------
// Resolved once by the constructor (never lazily: dlsym from inside write()
// could re-enter it). Calls that arrive before it ran, or when the lookup
// failed, go straight to the system call.
using WriteFn = ssize_t (*)(int, const void*, size_t);
using CloseFn = int (*)(int);
WriteFn g_real_write = nullptr;  // written by the constructor, read by write()
CloseFn g_real_close = nullptr;  // written by the constructor, read by close()

__attribute__((constructor)) void resolve_real_functions() {
  g_real_write = reinterpret_cast<WriteFn>(dlsym(RTLD_NEXT, "write"));
  g_real_close = reinterpret_cast<CloseFn>(dlsym(RTLD_NEXT, "close"));
}

ssize_t real_write(int fd, const void* buf, size_t count) {
  if (g_real_write != nullptr) return g_real_write(fd, buf, count);
  return syscall(SYS_write, fd, buf, count);
}

int real_close(int fd) {
  if (g_real_close != nullptr) return g_real_close(fd);
  return static_cast<int>(syscall(SYS_close, fd));
}

// --- the channel table -------------------------------------------------------
constexpr int kMaxChannels = 1024;  // per process; ibv_create_comp_channel fails with EMFILE beyond
constexpr int kFree = 0;
constexpr int kBusy = -1;  // being filled or emptied by one thread

struct Slot {
  std::atomic<int> channel{kFree};  // kFree, kBusy or channel fd + 1
  std::atomic<int> peer{-1};        // -1 once the application closed it
  std::atomic<uint64_t> channel_ino{0};
  std::atomic<uint64_t> peer_ino{0};
};
// Constant-initialized (constexpr constructors): usable before any constructor runs.
Slot g_slots[kMaxChannels];
std::atomic<int> g_used{0};  // slots [0, g_used) may be occupied: the scan bound
std::atomic<int> g_live{0};  // occupied slots: close()'s fast path when 0

static_assert(std::atomic<int>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "the table must be async-signal-safe");

// The inode of what fd is open on, 0 when it is not open. Keeps errno.
uint64_t inode_of(int fd) {
  const int saved = errno;
  struct stat st;
  const uint64_t ino = fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
  errno = saved;
  return ino;
}

// Empties the slot if it still holds `expected` (channel fd + 1); returns the
// peer it held (-1: none, or another thread emptied it first).
int take_slot(Slot& s, int expected, uint64_t* peer_ino) {
  if (!s.channel.compare_exchange_strong(expected, kBusy, std::memory_order_acquire)) return -1;
  const int peer = s.peer.exchange(-1, std::memory_order_relaxed);
  *peer_ino = s.peer_ino.load(std::memory_order_relaxed);
  s.channel.store(kFree, std::memory_order_release);
  g_live.fetch_sub(1, std::memory_order_relaxed);
  return peer;
}

// Closes a peer the shim owns, only if the number still refers to that socket.
void close_peer(int peer, uint64_t ino) {
  if (peer < 0) return;
  const int saved = errno;
  if (ino != 0 && inode_of(peer) == ino) real_close(peer);
  errno = saved;
}

// fd is being closed (or was just handed out again by the kernel): drops the
// entry of a channel with that number, closing its peer, and forgets a peer
// with that number (the application closed it; it is no longer the shim's).
void release_number(int fd) {
  const int n = g_used.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    Slot& s = g_slots[i];
    if (s.channel.load(std::memory_order_acquire) == fd + 1) {
      uint64_t ino = 0;
      close_peer(take_slot(s, fd + 1, &ino), ino);
    }
    int p = fd;
    s.peer.compare_exchange_strong(p, -1, std::memory_order_relaxed);
  }
}

bool insert_channel(int channel, int peer) {
  release_number(channel);  // stale entries: both numbers are brand new
  release_number(peer);
  for (int i = 0; i < kMaxChannels; ++i) {
    Slot& s = g_slots[i];
    int expected = kFree;
    if (!s.channel.compare_exchange_strong(expected, kBusy, std::memory_order_acquire)) continue;
    s.peer.store(peer, std::memory_order_relaxed);
    s.channel_ino.store(inode_of(channel), std::memory_order_relaxed);
    s.peer_ino.store(inode_of(peer), std::memory_order_relaxed);
    int used = g_used.load(std::memory_order_relaxed);
    while (used < i + 1 && !g_used.compare_exchange_weak(used, i + 1, std::memory_order_release)) {
    }
    g_live.fetch_add(1, std::memory_order_relaxed);
    s.channel.store(channel + 1, std::memory_order_release);
    return true;
  }
  return false;
}

// True when fd is open on a burst uverbs node: the placeholder character
// device 1:7, but not /dev/full itself (a different inode). This holds for
// every descriptor of the node however it was obtained (open, dup, fork,
// SCM_RIGHTS), needs no /proc, and never matches a real uverbs device.
bool is_burst_uverbs(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISCHR(st.st_mode) ||
      st.st_rdev != makedev(BURST_UVERBS_CDEV_MAJOR, BURST_UVERBS_CDEV_MINOR)) {
    return false;
  }
  struct stat full;
  return !(stat("/dev/full", &full) == 0 && full.st_dev == st.st_dev && full.st_ino == st.st_ino);
}

// Handles the write when it is CREATE_COMP_CHANNEL on a burst node: true, with
// write()'s result in *ret (errno set on failure). False: pass it on.
bool create_comp_channel(int fd, const void* buf, size_t count, ssize_t* ret) {
  const int saved = errno;
  if (!is_burst_uverbs(fd)) {
    errno = saved;
    return false;
  }
  // The node is ours, so the writer is libibverbs (or acts like it): the
  // buffer is readable and the response pointer writable, as the kernel
  // would require (it would answer EFAULT; this faults instead).
  CreateCompChannelCmd cmd;
  memcpy(&cmd, buf, sizeof(cmd));
  if (cmd.hdr.command != IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL || cmd.hdr.in_words != kCmdInWords ||
      cmd.hdr.out_words < kRespWords) {
    errno = saved;
    return false;  // not this command: /dev/full answers (ENOSPC), as for every other one
  }
  if (cmd.core.response == 0) {
    errno = EFAULT;
    *ret = -1;
    return true;
  }
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *ret = -1;  // EMFILE, ENFILE, ENOMEM: what the kernel would report too
    return true;
  }
  if (!insert_channel(sv[0], sv[1])) {
    real_close(sv[0]);
    real_close(sv[1]);
    errno = EMFILE;
    *ret = -1;
    return true;
  }
  // As the kernel: the response, then zeros up to out_words.
  ib_uverbs_create_comp_channel_resp resp{};
  resp.fd = static_cast<uint32_t>(sv[0]);
  auto* out = reinterpret_cast<unsigned char*>(static_cast<uintptr_t>(cmd.core.response));
  memcpy(out, &resp, sizeof(resp));
  memset(out + sizeof(resp), 0, static_cast<size_t>(cmd.hdr.out_words) * 4 - sizeof(resp));
  errno = saved;
  *ret = static_cast<ssize_t>(count);
  return true;
}

}  // namespace

BURST_SHIM_EXPORT ssize_t write(int fd, const void* buf, size_t count) {
  // rdma_cm channels first (one load per write): GET_EVENT and RESOLVE_ROUTE
  // are 16 bytes too, and a channel is never a uverbs node.
  if (burst::shim::cm_channels_exist()) [[unlikely]] {
    ssize_t ret;
    if (burst::shim::cm_write(fd, buf, count, &ret)) return ret;
  }
  if (count == sizeof(CreateCompChannelCmd)) [[unlikely]] {
    ssize_t ret;
    if (create_comp_channel(fd, buf, count, &ret)) return ret;
  }
  return real_write(fd, buf, count);
}

BURST_SHIM_EXPORT int close(int fd) {
  if (burst::shim::cm_channels_exist()) [[unlikely]] burst::shim::cm_close(fd);
  if (g_live.load(std::memory_order_relaxed) == 0 || fd < 0) [[likely]] {
    return real_close(fd);
  }
  // Take the entry first: while fd is still open its number cannot be handed
  // to a new channel by another thread.
  const int n = g_used.load(std::memory_order_acquire);
  int peer = -1;
  uint64_t peer_ino = 0;
  bool found = false;
  for (int i = 0; i < n; ++i) {
    Slot& s = g_slots[i];
    if (!found && s.channel.load(std::memory_order_acquire) == fd + 1) {
      peer = take_slot(s, fd + 1, &peer_ino);
      found = true;
    }
    int p = fd;  // the application closes a peer: forget it
    s.peer.compare_exchange_strong(p, -1, std::memory_order_relaxed);
  }
  const int r = real_close(fd);
  close_peer(peer, peer_ino);
  return r;
}

BURST_SHIM_EXPORT int burst_shim_channel_peer(int channel_fd) {
  if (channel_fd < 0) return -1;
  const int n = g_used.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    Slot& s = g_slots[i];
    if (s.channel.load(std::memory_order_acquire) != channel_fd + 1) continue;
    const int peer = s.peer.load(std::memory_order_relaxed);
    const uint64_t channel_ino = s.channel_ino.load(std::memory_order_relaxed);
    const uint64_t peer_ino = s.peer_ino.load(std::memory_order_relaxed);
    // Both numbers must still be the sockets the shim created.
    if (peer < 0 || inode_of(channel_fd) != channel_ino || inode_of(peer) != peer_ino) return -1;
    return peer;
  }
  return -1;
}
