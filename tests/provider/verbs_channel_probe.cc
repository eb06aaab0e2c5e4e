// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Completion channels through the real libibverbs, run under `burstctl run`
// by provider_test.sh (which also runs burstd: opening burst0 connects to it).
// burstctl preloads libburst-shim.so, so ibv_create_comp_channel()'s write to
// the uverbs node gets an answer:
//
//   - the shim is loaded (burst_shim_channel_peer resolves through dlsym) and
//     LD_PRELOAD still carries what the caller had (BURST_PROBE_KEEP_PRELOAD);
//   - ibv_create_comp_channel on burst0 returns a close-on-exec datagram
//     socket, and the shim knows its peer;
//   - a record written into the peer is what ibv_get_cq_event() reads: the
//     CQ and its cq_context come back (a CQ made without the channel, so this
//     checks the record format, not the provider's event path);
//   - ibv_create_cq_ex takes a channel (a reference on it, events name the CQ);
//   - ibv_destroy_comp_channel closes the peer too;
//   - a child forked with a channel open can exec a program that does not use
//     verbs at all, under the same LD_PRELOAD.
// With BURST_PROBE_NO_SHIM set (burstctl run with BURST_SHIM=""), it checks
// the opposite: no shim, and ibv_create_comp_channel fails with ENOSPC.
// Prints "PASS" and exits 0; a failed check prints "FAIL: ..." and exits 1.
#include <dlfcn.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "abi/burst_shim.h"

#include "tests/provider/probe_util.h"

namespace {

}  // namespace

int main() {
  if (std::getenv("BURST_PROBE_NO_SHIM") != nullptr) {
    // Without the shim the write reaches /dev/full: a clean ENOSPC.
    CHECK(dlsym(RTLD_DEFAULT, BURST_SHIM_CHANNEL_PEER_SYMBOL) == nullptr, "the shim is loaded");
    ibv_context* ctx = burst::test::open_burst0();
    errno = 0;
    CHECK(ibv_create_comp_channel(ctx) == nullptr && errno == ENOSPC,
          "ibv_create_comp_channel without the shim: errno %d", errno);
    CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
    std::printf("PASS\n");
    return 0;
  }
  const char* preload = std::getenv("LD_PRELOAD");
  CHECK(preload != nullptr && std::strstr(preload, BURST_SHIM_LIBRARY_NAME) != nullptr,
        "LD_PRELOAD=%s", preload != nullptr ? preload : "(unset)");
  if (const char* keep = std::getenv("BURST_PROBE_KEEP_PRELOAD"); keep != nullptr) {
    CHECK(std::strstr(preload, keep) != nullptr, "LD_PRELOAD=%s lost %s", preload, keep);
  }
  auto peer_of = reinterpret_cast<burst_shim_channel_peer_fn>(
      dlsym(RTLD_DEFAULT, BURST_SHIM_CHANNEL_PEER_SYMBOL));
  CHECK(peer_of != nullptr, "%s not found: the shim is not loaded", BURST_SHIM_CHANNEL_PEER_SYMBOL);

  ibv_context* ctx = burst::test::open_burst0();

  ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  CHECK(ch != nullptr, "ibv_create_comp_channel: %s", std::strerror(errno));
  CHECK(ch->context == ctx && ch->fd >= 0, "channel fd %d", ch->fd);
  struct stat st;
  CHECK(fstat(ch->fd, &st) == 0 && S_ISSOCK(st.st_mode), "channel fd is not a socket");
  CHECK(fcntl(ch->fd, F_GETFD) & FD_CLOEXEC, "channel fd not close-on-exec");
  const int peer = peer_of(ch->fd);
  CHECK(peer >= 0 && peer != ch->fd, "peer %d", peer);

  // A second channel is another socket pair.
  ibv_comp_channel* ch2 = ibv_create_comp_channel(ctx);
  CHECK(ch2 != nullptr && ch2->fd != ch->fd, "second channel");
  const int peer2 = peer_of(ch2->fd);
  CHECK(peer2 >= 0 && peer2 != peer, "second peer %d", peer2);

  // The record ibv_get_cq_event reads: the CQ's address.
  int cq_ctx_tag = 0;
  ibv_cq* cq = ibv_create_cq(ctx, 16, &cq_ctx_tag, nullptr, 0);
  CHECK(cq != nullptr, "ibv_create_cq: %s", std::strerror(errno));
  unsigned char rec[BURST_SHIM_CQ_EVENT_SIZE];
  burst_shim_encode_cq_event(rec, reinterpret_cast<uintptr_t>(cq));
  CHECK(write(peer, rec, sizeof(rec)) == static_cast<ssize_t>(sizeof(rec)), "write peer: %s",
        std::strerror(errno));
  ibv_cq* ev_cq = nullptr;
  void* ev_ctx = nullptr;
  CHECK(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0, "ibv_get_cq_event: %s", std::strerror(errno));
  CHECK(ev_cq == cq && ev_ctx == &cq_ctx_tag, "event for %p/%p, want %p/%p",
        static_cast<void*>(ev_cq), ev_ctx, static_cast<void*>(cq), static_cast<void*>(&cq_ctx_tag));
  ibv_ack_cq_events(cq, 1);
  CHECK(ibv_destroy_cq(cq) == 0, "ibv_destroy_cq");

  // ibv_create_cq_ex with the channel: burstd gets the channel's peer (the
  // provider's event path), the CQ holds a reference on the channel (destroying
  // the channel is EBUSY while it lives), and an event names the CQ and its
  // cq_context like a plain CQ's.
  ibv_cq_init_attr_ex cx{};
  cx.cqe = 16;
  cx.cq_context = &cq_ctx_tag;
  cx.channel = ch2;
  cx.comp_vector = 0;
  ibv_cq_ex* cqx = ibv_create_cq_ex(ctx, &cx);
  CHECK(cqx != nullptr, "ibv_create_cq_ex with a channel: %s", std::strerror(errno));
  ibv_cq* xcq = ibv_cq_ex_to_cq(cqx);
  CHECK(xcq->channel == ch2 && xcq->context == ctx && xcq->cq_context == &cq_ctx_tag,
        "cq_ex channel %p context %p cq_context %p", static_cast<void*>(xcq->channel),
        static_cast<void*>(xcq->context), xcq->cq_context);
  CHECK(ibv_destroy_comp_channel(ch2) == EBUSY, "destroying a channel in use is not EBUSY");
  CHECK(ibv_req_notify_cq(xcq, 0) == 0, "ibv_req_notify_cq on the cq_ex");
  burst_shim_encode_cq_event(rec, reinterpret_cast<uintptr_t>(xcq));
  CHECK(write(peer2, rec, sizeof(rec)) == static_cast<ssize_t>(sizeof(rec)), "write peer2: %s",
        std::strerror(errno));
  CHECK(ibv_get_cq_event(ch2, &ev_cq, &ev_ctx) == 0, "ibv_get_cq_event (cq_ex): %s",
        std::strerror(errno));
  CHECK(ev_cq == xcq && ev_ctx == &cq_ctx_tag, "cq_ex event for %p/%p",
        static_cast<void*>(ev_cq), ev_ctx);
  ibv_ack_cq_events(xcq, 1);
  CHECK(ibv_destroy_cq(xcq) == 0, "ibv_destroy_cq (cq_ex)");

  // fork + exec of a program that knows nothing about verbs, channels open.
  const pid_t pid = fork();
  CHECK(pid >= 0, "fork: %s", std::strerror(errno));
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", "echo child-ok >/dev/null && exit 7", static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 7,
        "child status %d", status);

  CHECK(ibv_destroy_comp_channel(ch2) == 0, "ibv_destroy_comp_channel 2");
  CHECK(fcntl(peer2, F_GETFD) == -1 && errno == EBADF, "peer %d still open", peer2);
  CHECK(ibv_destroy_comp_channel(ch) == 0, "ibv_destroy_comp_channel");
  CHECK(fcntl(peer, F_GETFD) == -1 && errno == EBADF, "peer %d still open", peer);
  CHECK(ibv_close_device(ctx) == 0, "ibv_close_device");
  std::printf("PASS\n");
  return 0;
}
