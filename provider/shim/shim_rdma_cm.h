/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The rdma_cm half of libburst-shim.so (shim_rdma_cm.cc; contract in
// abi/burst_shim.h): what shim.cc's write() and close() hand over. Internal to
// the shim (hidden symbols).
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "abi/burst_ctl_proto.h"

namespace burst::shim {

// Channels open in the process: write() and close() skip the rdma_cm checks
// while it is 0 (one relaxed load).
extern std::atomic<int> g_cm_live;

inline bool cm_channels_exist() { return g_cm_live.load(std::memory_order_relaxed) != 0; }

// A UCMA command written to an rdma_cm channel fd: true, with write()'s result
// in *ret (errno set on failure). False: fd is not a channel, pass it on.
bool cm_write(int fd, const void* buf, size_t count, ssize_t* ret);

// fd is being closed: a channel's hidden connection is closed too once no
// other number names the channel (burstd then destroys the channel's ids); a
// hidden connection's number closed by the application is forgotten.
void cm_close(int fd);
// close_range(first, last) / closefrom(first) closed these numbers.
void cm_close_range(unsigned first, unsigned last);
// new_fd is now a duplicate of old_fd (dup, dup2, dup3, fcntl F_DUPFD*): what
// new_fd named before is forgotten, and it names old_fd's channel if any.
void cm_dup(int old_fd, int new_fd);

// For the command relay (shim_ucma.cc). A slot is a channel's table entry.
int cm_find_channel(int fd);       // the slot of channel fd, or -1 (one load)
uint32_t cm_channel_id(int slot);  // burstd's id of the channel
int cm_channel_socket(int slot);   // its hidden connection (-1: gone), to poll for HUP
// One request and its response on the slot's hidden connection, under the
// slot's mutex: 0, burstd's errno, ETIMEDOUT, or ENODEV (burstd gone). A
// response may be shorter than resp_len down to min_len (0: exactly resp_len).
int cm_call(int slot, uint16_t op, void* req, size_t req_len, void* resp, size_t resp_len,
            size_t min_len = 0);

// A push channel's events (abi/burst_ctl_cm.h; shim_cm_events.cc), under
// cm_events_mutex(slot).
struct CmEvents {
  static constexpr int kMaxDead = 4 * BURST_CTL_CM_PUSH_WINDOW;
  uint64_t consumed = 0;  // the last event taken
  int n_dead = 0;         // pushed events to drop when met (their ids are gone)
  uint64_t dead[kMaxDead] = {};
};
// The shim's own number of a push channel's socket, or -1 (an eventfd channel, or gone).
int cm_event_socket(int slot);
CmEvents& cm_events(int slot);
pthread_mutex_t* cm_events_mutex(int slot);
// GET_EVENT of push channel `slot`: the next event's bytes (at most out_len,
// *n of them) in out. Blocks unless the channel is O_NONBLOCK (EAGAIN). 0 or
// an errno value (ENODEV: burstd gone).
int cm_take_event(int slot, void* out, size_t out_len, size_t* n);
// Pushed events burstd said to drop (a command's response). The caller holds
// the slot's event mutex.
void cm_note_dead(int slot, const uint64_t* seqs, uint32_t count);

}  // namespace burst::shim
