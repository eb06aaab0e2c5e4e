/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The provider's connection to burstd: one SOCK_SEQPACKET connection per
// ibv_context, speaking the control protocol of abi/burst_ctl_proto.h.
// Opened by alloc_context (connect + HELLO), closed by free_context; burstd
// releases everything the connection created when it closes, including when
// the process dies.
//
// Written for the provider (no libstdc++, no exceptions), so it does not reuse
// daemon/ctl's std::string-based client. Control path only: a call blocks the
// caller until burstd answers (bounded by kCallTimeoutMs).
//
// Threading: any thread; calls on one connection are serialised by its mutex
// (the protocol answers one request at a time).
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>

#include "abi/burst_ctl_proto.h"

namespace burst::provider {

struct CtlConn {
  int fd = -1;
  uint16_t version = 0;  // negotiated in HELLO
  bool broken = false;   // a transport or framing failure: every later call fails
                         // (written under mu, read by ctl_conn_lost without it)
  uint64_t next_id = 1;
  pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
};

inline constexpr int kCallTimeoutMs = 10'000;

// $BURST_SOCKET when set and not empty, else BURST_CTL_DEFAULT_SOCKET.
const char* ctl_socket_path();

// Connects to `path`, says HELLO as `client_name` (fills *hello) and hands
// burstd this process's own /proc/self/maps and /proc/self/mem (ATTACH_MEMORY:
// the only way burstd reaches its memory, docs/security.md). Returns 0 or an
// errno value, with a one-line description in err[0, err_len).
int ctl_open(CtlConn* c, const char* path, const char* client_name, burst_ctl_hello_resp* hello,
             char* err, size_t err_len);

// Sends req (req_len bytes; its header is filled in here) and waits for the
// response to it; on success it has exactly resp_len bytes and is copied to
// resp. Returns 0, the errno burstd answered, or a transport errno (ECONNRESET
// when burstd went away, ETIMEDOUT, EPROTO/EBADMSG for a malformed answer; the
// connection is then broken and later calls return ECONNRESET).
int ctl_call(CtlConn* c, uint16_t op, void* req, size_t req_len, void* resp, size_t resp_len);

// True once the connection itself failed (burstd went away, a timeout or a
// malformed answer): burstd no longer holds anything this connection created.
inline bool ctl_conn_lost(const CtlConn* c) {
  return __atomic_load_n(&c->broken, __ATOMIC_ACQUIRE);
}

// ctl_call with descriptors: send_fd (-1: none) travels with the request (the
// caller keeps its copy); a descriptor that comes with a successful response is
// stored in *recv_fd (-1 when none came), owned by the caller.
int ctl_call_fd(CtlConn* c, uint16_t op, void* req, size_t req_len, void* resp, size_t resp_len,
                int send_fd, int* recv_fd);

// The same for a response with two descriptors (MAP_DOORBELL): recv_fds[0..1].
int ctl_call_fd2(CtlConn* c, uint16_t op, void* req, size_t req_len, void* resp, size_t resp_len,
                 int* recv_fds);

// ATTACH_MEMORY (part of ctl_open).
int ctl_attach_memory(CtlConn* c, char* err, size_t err_len);

void ctl_close(CtlConn* c);

}  // namespace burst::provider
