// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libburst-shim.so: the events of a push channel (abi/burst_ctl_cm.h, docs/cm.md
// "Relay fast path"). burstd sends each event, as it is queued, on the
// channel's socket, whose other end is the application's channel fd: the fd
// is readable exactly while events wait, and GET_EVENT is one recv(). Reads
// happen under the channel's event mutex, on the shim's own number of the
// socket; a blocking GET_EVENT waits in poll() without it. Events of ids that
// were destroyed (or moved to another channel) after burstd pushed them are
// listed by burstd in the command's response ("dead") and dropped here when
// met; the ones at the head of the socket at once, so the fd does not stay
// readable for them.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "abi/burst_ctl_proto.h"
#include "provider/shim/shim_rdma_cm.h"

namespace burst::shim {
namespace {

// Removes seq from the dead list: true if it was there.
bool take_dead(CmEvents& ev, uint64_t seq) {
  for (int i = 0; i < ev.n_dead; ++i) {
    if (ev.dead[i] != seq) continue;
    ev.dead[i] = ev.dead[--ev.n_dead];
    return true;
  }
  return false;
}

// Drops dead events at the head of the socket. Under the event mutex.
void drop_dead_heads(int sock, CmEvents& ev) {
  while (ev.n_dead > 0) {
    uint64_t seq = 0;
    if (recv(sock, &seq, sizeof(seq), MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC) <
            static_cast<ssize_t>(sizeof(seq)) ||
        !take_dead(ev, seq)) {
      return;
    }
    burst_ctl_cm_event discard;
    (void)recv(sock, &discard, sizeof(discard), MSG_DONTWAIT);
  }
}

// One event off the socket: 1 (in *out), 0 (none now), or -errno.
int take_one(int slot, int sock, burst_ctl_cm_event* out) {
  CmEvents& ev = cm_events(slot);
  for (;;) {
    const ssize_t n = recv(sock, out, sizeof(*out), MSG_DONTWAIT);
    if (n == 0) return -ENODEV;  // burstd closed its end
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    if (n < static_cast<ssize_t>(offsetof(burst_ctl_cm_event, resp)) ||
        out->len > sizeof(out->resp) ||
        static_cast<size_t>(n) < offsetof(burst_ctl_cm_event, resp) + out->len) {
      return -EIO;  // not what burstd sends
    }
    if (take_dead(ev, out->seq)) continue;
    __atomic_store_n(&ev.consumed, out->seq, __ATOMIC_RELAXED);  // read by other threads' commands
    drop_dead_heads(sock, ev);
    return 1;
  }
}

// Waits until the socket may have an event: 0, or an errno value (ENODEV:
// burstd hung up; EINTR).
int wait_readable(int sock, int slot) {
  pollfd p[2] = {{sock, POLLIN, 0}, {cm_channel_socket(slot), POLLRDHUP, 0}};
  if (p[1].fd < 0) return ENODEV;
  for (;;) {
    const int r = poll(p, 2, -1);
    if (r < 0) return errno;
    if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return ENODEV;
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) return 0;  // an event, or EOF to report
    if (p[0].revents & POLLNVAL) return EBADF;
  }
}

// Acknowledges what was taken (burstd asked: its window is filling up).
void acknowledge(int slot) {
  burst_ctl_cm_command_ex_req req{};
  req.cmd = BURST_CTL_CM_CMD_ACK;
  req.consumed = __atomic_load_n(&cm_events(slot).consumed, __ATOMIC_RELAXED);
  burst_ctl_cm_command_ex_resp resp;
  (void)cm_call(slot, BURST_CTL_OP_CM_COMMAND_EX, &req, sizeof(req), &resp, sizeof(resp),
                offsetof(burst_ctl_cm_command_ex_resp, entries));
}

}  // namespace

int cm_take_event(int slot, void* out, size_t out_len, size_t* n) {
  burst_ctl_cm_event ev;
  for (;;) {
    // Again after every wait: the channel may have been closed meanwhile.
    const int sock = cm_event_socket(slot);
    if (sock < 0 || cm_channel_socket(slot) < 0) return ENODEV;  // closed, or a forked child
    pthread_mutex_lock(cm_events_mutex(slot));
    const int r = take_one(slot, sock, &ev);
    pthread_mutex_unlock(cm_events_mutex(slot));
    if (r < 0) return -r;
    if (r == 1) break;
    const int fl = fcntl(sock, F_GETFL);  // the application's O_NONBLOCK (one open file)
    if (fl < 0) return errno;
    if (fl & O_NONBLOCK) return EAGAIN;
    if (int w = wait_readable(sock, slot); w != 0) return w;
  }
  if (ev.flags & BURST_CTL_CM_EVENT_ACK_ME) acknowledge(slot);
  *n = ev.len < out_len ? ev.len : out_len;
  memcpy(out, ev.resp, *n);
  return 0;
}

void cm_note_dead(int slot, const uint64_t* seqs, uint32_t count) {
  CmEvents& ev = cm_events(slot);  // the caller holds the event mutex
  for (uint32_t i = 0; i < count && ev.n_dead < CmEvents::kMaxDead; ++i) {
    ev.dead[ev.n_dead++] = seqs[i];
  }
  const int sock = cm_event_socket(slot);
  if (sock >= 0) drop_dead_heads(sock, ev);
}

}  // namespace burst::shim
