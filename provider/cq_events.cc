// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Completion events and the end of burstd: completion channels (the socket
// the preload shim created, abi/burst_shim.h, through which burstd writes one
// event per armed CQ; in native mode the kernel's, burstd raises the event
// through the module: native_mode.h), arming a CQ (ibv_req_notify_cq bumps the ring's arm
// sequence: no system call), and the watcher thread that turns burstd going
// away into IBV_EVENT_DEVICE_FATAL, woken completion channels and failing
// posts and polls (Context::dead).
//
// Threading: req_notify_cq runs on application threads under the CQ's
// arm_lock (one compare-and-swap on the ring; resize_cq takes the lock to move
// the word). The list of CQs with a channel (Context::channel_cqs) is under
// Context::mu: written by the create/destroy verbs, read by the
// watcher. One watcher thread per context, started by alloc_context and joined
// by free_context (stop_watcher); it only writes Context::dead (release), the
// async-event pipe and the channel sockets.
#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "abi/burst_shim.h"
#include "provider/provider.h"

namespace burst::provider {
namespace {

constexpr uint32_t kIbvEventDeviceFatal = 8;  // IBV_EVENT_DEVICE_FATAL

// Blocks until burstd hangs up (true) or stop_watcher asks the thread to end
// (false).
bool wait_for_hangup(Context* ctx) {
  pollfd p[2] = {{ctx->ctl.fd, POLLRDHUP, 0}, {ctx->watcher_wake_fd, POLLIN, 0}};
  for (;;) {
    const int r = poll(p, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || (p[1].revents & POLLIN)) return false;
    if (p[0].revents & (POLLRDHUP | POLLHUP | POLLERR)) return true;
  }
}

// Applications blocked in ibv_get_cq_event wake up, poll, and get an error.
void wake_channels(Context* ctx) {
  pthread_mutex_lock(&ctx->mu);
  for (Cq* cq = ctx->channel_cqs; cq != nullptr; cq = cq->next_channel) {
    const uint64_t handle = reinterpret_cast<uintptr_t>(&cq->vcq.cq);
    (void)!send(cq->channel_peer, &handle, sizeof(handle), MSG_DONTWAIT | MSG_NOSIGNAL);
  }
  pthread_mutex_unlock(&ctx->mu);
}

void* watcher_main(void* arg) {
  auto* ctx = static_cast<Context*>(arg);
  if (!wait_for_hangup(ctx)) return nullptr;
  __atomic_store_n(&ctx->dead, true, __ATOMIC_RELEASE);
  // Native mode: the kernel reports IBV_EVENT_DEVICE_FATAL on async_fd and
  // ends the completion channels when burstd's registration goes.
  const burst_ctl_async_event ev{0, kIbvEventDeviceFatal, 0};
  if (!ctx->native && write(ctx->async_write_fd, &ev, sizeof(ev)) != sizeof(ev)) {
    debug_log("burst: could not report IBV_EVENT_DEVICE_FATAL");
  }
  if (!ctx->native) wake_channels(ctx);
  fprintf(stderr,
          "burst: burstd closed the connection: device %s is gone (IBV_EVENT_DEVICE_FATAL)\n",
          ctx->vctx.context.device->name);
  return nullptr;
}

}  // namespace

int start_watcher(Context* ctx) {
  ctx->watcher_wake_fd = eventfd(0, EFD_CLOEXEC);
  if (ctx->watcher_wake_fd < 0) return errno;
  if (int e = pthread_create(&ctx->watcher, nullptr, watcher_main, ctx); e != 0) {
    close(ctx->watcher_wake_fd);
    ctx->watcher_wake_fd = -1;
    return e;
  }
  ctx->watcher_running = true;
  return 0;
}

void stop_watcher(Context* ctx) {
  if (!ctx->watcher_running) return;
  const uint64_t one = 1;
  (void)!write(ctx->watcher_wake_fd, &one, sizeof(one));
  pthread_join(ctx->watcher, nullptr);
  close(ctx->watcher_wake_fd);
  ctx->watcher_running = false;
}

// The completion channel's other end, from the preload shim (burstctl run),
// duplicated: the shim's own descriptor goes away with the channel, ours stays
// valid until the CQ is destroyed.
int cq_channel_peer(ibv_comp_channel* channel) {
  auto fn = reinterpret_cast<burst_shim_channel_peer_fn>(
      dlsym(RTLD_DEFAULT, BURST_SHIM_CHANNEL_PEER_SYMBOL));
  const int peer = fn != nullptr ? fn(channel->fd) : -1;
  return peer >= 0 ? fcntl(peer, F_DUPFD_CLOEXEC, 0) : -1;
}

void add_channel_cq(Context* ctx, Cq* cq) {
  pthread_mutex_lock(&ctx->mu);
  cq->next_channel = ctx->channel_cqs;
  ctx->channel_cqs = cq;
  pthread_mutex_unlock(&ctx->mu);
}

void remove_channel_cq(Context* ctx, Cq* cq) {
  pthread_mutex_lock(&ctx->mu);
  for (Cq** p = &ctx->channel_cqs; *p != nullptr; p = &(*p)->next_channel) {
    if (*p == cq) {
      *p = cq->next_channel;
      break;
    }
  }
  pthread_mutex_unlock(&ctx->mu);
}

// One more request in the ring's arm word (abi/burst_shm_abi.h): the low half
// counts every request, the high half the solicited-only ones; a
// compare-and-swap keeps the halves from carrying into each other.
int req_notify_cq(ibv_cq* ibcq, int solicited_only) {
  Cq* cq = to_cq(ibcq);
  if (context_dead(to_context(ibcq->context))) return EIO;
  const uint32_t add_solicited = solicited_only ? 1u << BURST_SHM_ARM_SOLICITED_SHIFT : 0;
  pthread_spin_lock(&cq->arm_lock);  // against resize_cq moving the word to a new ring
  uint32_t* word = &cq->hdr->arm_sequence;
  uint32_t old = __atomic_load_n(word, __ATOMIC_RELAXED);
  uint32_t next;
  do {
    next = ((old + add_solicited) & ~BURST_SHM_ARM_ALL_MASK) | ((old + 1) & BURST_SHM_ARM_ALL_MASK);
    // seq_cst: the poll that follows an arm must not be ordered before it
    // (burstd fences between publishing a completion and reading the word).
  } while (
      !__atomic_compare_exchange_n(word, &old, next, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED));
  pthread_spin_unlock(&cq->arm_lock);
  return 0;
}

}  // namespace burst::provider
