// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// libburst-shim.so: the UCMA commands librdmacm writes to an rdma_cm channel
// (<rdma/rdma_user_cm.h>), relayed to burstd as CM_COMMAND
// (abi/burst_ctl_cm.h). What the kernel's ucma_write() does with the
// application's memory happens here: the command is read from the buffer, a
// SET_OPTION value from its pointer, MIGRATE_ID's target fd becomes the
// channel's id, and the response is copied to the command's `response`
// pointer. GET_EVENT blocks (unless the fd is O_NONBLOCK) by waiting on the
// channel's eventfd, without holding the channel's mutex.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_user_cm.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "abi/burst_ctl_proto.h"
#include "provider/shim/shim_qp_attrs.h"
#include "provider/shim/shim_rdma_cm.h"

namespace burst::shim {
namespace {

constexpr uint32_t kCommands = RDMA_USER_CM_CMD_JOIN_MCAST + 1;
constexpr int kNone = -1;

// Where each command keeps its `response` pointer (the kernel's offsets), or
// kNone for commands the kernel answers with nothing but write()'s result.
constexpr int kResponseOffset[kCommands] = {
    offsetof(rdma_ucm_create_id, response),      // CREATE_ID
    offsetof(rdma_ucm_destroy_id, response),     // DESTROY_ID
    offsetof(rdma_ucm_bind_ip, response),        // BIND_IP
    kNone,                                       // RESOLVE_IP
    kNone,                                       // RESOLVE_ROUTE
    offsetof(rdma_ucm_query, response),          // QUERY_ROUTE
    kNone,                                       // CONNECT
    kNone,                                       // LISTEN
    kNone,                                       // ACCEPT
    kNone,                                       // REJECT
    kNone,                                       // DISCONNECT
    offsetof(rdma_ucm_init_qp_attr, response),   // INIT_QP_ATTR
    offsetof(rdma_ucm_get_event, response),      // GET_EVENT
    kNone,                                       // GET_OPTION (the kernel has none: ENOSYS)
    kNone,                                       // SET_OPTION
    kNone,                                       // NOTIFY
    offsetof(rdma_ucm_join_ip_mcast, response),  // JOIN_IP_MCAST
    offsetof(rdma_ucm_destroy_id, response),     // LEAVE_MCAST
    offsetof(rdma_ucm_migrate_id, response),     // MIGRATE_ID
    offsetof(rdma_ucm_query, response),          // QUERY
    kNone,                                       // BIND
    kNone,                                       // RESOLVE_ADDR
    offsetof(rdma_ucm_join_mcast, response),     // JOIN_MCAST
};
static_assert(offsetof(rdma_ucm_create_id, response) == 8);
static_assert(offsetof(rdma_ucm_set_option, optlen) == 20 && sizeof(rdma_ucm_set_option) == 24);
static_assert(offsetof(rdma_ucm_migrate_id, fd) == 12);

// The relayed input of a command (CM_COMMAND's or CM_COMMAND_EX's in[]).
struct Input {
  uint8_t* in;
  uint16_t in_len = 0;
  int from = -1;  // MIGRATE_ID: the slot of the channel the id leaves
};

// Turns what the application wrote into the relayed input: 0 or an errno value.
int build_input(const rdma_ucm_cmd_hdr& hdr, const uint8_t* body, Input* req) {
  if (hdr.in > BURST_CTL_CM_MAX_IN) return EINVAL;
  memcpy(req->in, body, hdr.in);
  req->in_len = hdr.in;
  if (hdr.cmd == RDMA_USER_CM_CMD_SET_OPTION && hdr.in >= sizeof(rdma_ucm_set_option)) {
    rdma_ucm_set_option opt;
    memcpy(&opt, body, sizeof(opt));
    if (opt.optlen > BURST_CTL_CM_MAX_IN - sizeof(opt)) return EINVAL;
    if (opt.optlen != 0 && opt.optval == 0) return EFAULT;
    // The value follows the struct (abi/burst_ctl_cm.h).
    memcpy(req->in + sizeof(opt), reinterpret_cast<const void*>(opt.optval), opt.optlen);
    req->in_len = static_cast<uint16_t>(sizeof(opt) + opt.optlen);
  } else if (hdr.cmd == RDMA_USER_CM_CMD_MIGRATE_ID && hdr.in >= sizeof(rdma_ucm_migrate_id)) {
    rdma_ucm_migrate_id m;
    memcpy(&m, body, sizeof(m));
    const int target = cm_find_channel(static_cast<int>(m.fd));
    if (target < 0) return EBADF;  // not an rdma_cm channel of this process
    m.fd = cm_channel_id(target);
    req->from = target;
    memcpy(req->in, &m, sizeof(m));
  }
  return 0;
}

// Waits until channel `slot` (fd) may have an event: 0, or an errno value
// (ENODEV: burstd hung up; EINTR).
int wait_event(int fd, int slot) {
  // The socket only for burstd's hang-up: other threads' responses arrive on
  // it while this one waits (their callers read them).
  pollfd p[2] = {{fd, POLLIN, 0}, {cm_channel_socket(slot), POLLRDHUP, 0}};
  if (p[1].fd < 0) return ENODEV;
  for (;;) {
    const int r = poll(p, 2, -1);
    if (r < 0) return errno;  // EINTR: as the kernel's interruptible wait
    if (p[1].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return ENODEV;
    if (p[0].revents & (POLLNVAL | POLLERR)) return EBADF;
    if (p[0].revents & POLLIN) return 0;
  }
}

// The command on eventfd channel `slot`: the response bytes in out (*n). 0 or an errno.
int relay(int fd, int slot, const rdma_ucm_cmd_hdr& hdr, const uint8_t* body, uint8_t* out,
          size_t out_len, size_t* n) {
  burst_ctl_cm_command_req req{};
  req.cmd = hdr.cmd;
  req.out_len = static_cast<uint16_t>(out_len);
  Input input{req.in};
  if (int e = build_input(hdr, body, &input); e != 0) return e;
  req.in_len = input.in_len;
  burst_ctl_cm_command_resp resp;
  for (;;) {
    const int e = cm_call(slot, BURST_CTL_OP_CM_COMMAND, &req, sizeof(req), &resp, sizeof(resp));
    if (e == EAGAIN && req.cmd == RDMA_USER_CM_CMD_GET_EVENT) {
      const int fl = fcntl(fd, F_GETFL);
      if (fl < 0) return errno;
      if (fl & O_NONBLOCK) return EAGAIN;
      if (int w = wait_event(fd, slot); w != 0) return w;
      continue;
    }
    if (e != 0) return e;
    break;
  }
  *n = resp.out_len < out_len ? resp.out_len : out_len;
  memcpy(out, resp.out, *n);
  return 0;
}

uint64_t consumed_of(int slot) { return __atomic_load_n(&cm_events(slot).consumed, __ATOMIC_RELAXED); }

// A command on push channel `slot` (CM_COMMAND_EX). DESTROY_ID, LEAVE_MCAST and
// MIGRATE_ID may drop pushed events of a channel: its event mutex is held
// across, so that what it acknowledges is exact, and burstd's list of events
// to drop is applied before anyone reads on.
int relay_ex(int slot, const rdma_ucm_cmd_hdr& hdr, const uint8_t* body, uint8_t* out,
             size_t out_len, size_t* n) {
  burst_ctl_cm_command_ex_req req{};
  req.cmd = hdr.cmd;
  req.out_len = static_cast<uint16_t>(out_len);
  // INIT_QP_ATTR: the later states' answers too, kept for the next ones (shim_qp_attrs.cc).
  const bool ahead = hdr.cmd == RDMA_USER_CM_CMD_INIT_QP_ATTR && qpa_enabled() &&
                     hdr.in >= sizeof(rdma_ucm_init_qp_attr) &&
                     out_len >= BURST_CTL_CM_QP_ATTR_BYTES;
  if (ahead) {
    req.cmd = BURST_CTL_CM_CMD_INIT_QP_ATTRS;
    req.out_len = 4 * BURST_CTL_CM_QP_ATTR_BYTES;
  }
  const uint64_t epoch = qpa_before(hdr.cmd, body, hdr.in);
  Input input{req.in};
  if (int e = build_input(hdr, body, &input); e != 0) return e;
  req.in_len = input.in_len;
  const bool drops =
      hdr.cmd == RDMA_USER_CM_CMD_DESTROY_ID || hdr.cmd == RDMA_USER_CM_CMD_LEAVE_MCAST;
  const int locked = drops ? slot : hdr.cmd == RDMA_USER_CM_CMD_MIGRATE_ID ? input.from : -1;
  if (locked >= 0) pthread_mutex_lock(cm_events_mutex(locked));
  req.consumed = consumed_of(slot);
  if (input.from >= 0) req.source_consumed = consumed_of(input.from);
  burst_ctl_cm_command_ex_resp resp;
  const int e = cm_call(slot, BURST_CTL_OP_CM_COMMAND_EX, &req, sizeof(req), &resp, sizeof(resp),
                        offsetof(burst_ctl_cm_command_ex_resp, entries));
  if (e == 0 && locked >= 0 && resp.count <= sizeof(resp.entries) / sizeof(resp.entries[0])) {
    cm_note_dead(locked, resp.entries, resp.count);
  }
  if (locked >= 0) pthread_mutex_unlock(cm_events_mutex(locked));
  qpa_after(hdr.cmd, body, hdr.in);
  if (ahead && e == ENOSYS) {  // a burstd without it: never again
    qpa_disable();
    return relay_ex(slot, hdr, body, out, out_len, n);
  }
  if (e != 0) return e;
  if (ahead && resp.out_len <= sizeof(resp.out)) {
    rdma_ucm_init_qp_attr q;
    memcpy(&q, body, sizeof(q));
    qpa_store(cm_channel_id(slot), q.id, epoch, resp.out, resp.out_len);
  }
  *n = resp.out_len < out_len ? resp.out_len : out_len;
  if (ahead && *n > BURST_CTL_CM_QP_ATTR_BYTES) *n = BURST_CTL_CM_QP_ATTR_BYTES;
  memcpy(out, resp.out, *n);
  return 0;
}

}  // namespace

bool cm_write(int fd, const void* buf, size_t count, ssize_t* ret) {
  const int saved = errno;
  const int slot = cm_find_channel(fd);
  if (slot < 0) {
    errno = saved;
    return false;
  }
  *ret = -1;
  rdma_ucm_cmd_hdr hdr;
  if (count < sizeof(hdr)) return errno = EINVAL, true;
  memcpy(&hdr, buf, sizeof(hdr));
  if (hdr.cmd >= kCommands || sizeof(hdr) + hdr.in > count) return errno = EINVAL, true;
  const auto* body = static_cast<const uint8_t*>(buf) + sizeof(hdr);
  const int off = kResponseOffset[hdr.cmd];
  uint64_t response = 0;
  if (off != kNone && hdr.in >= static_cast<size_t>(off) + sizeof(response)) {
    memcpy(&response, body + off, sizeof(response));
  }
  const size_t out_len = hdr.out < BURST_CTL_CM_MAX_OUT ? hdr.out : BURST_CTL_CM_MAX_OUT;
  alignas(8) uint8_t out[BURST_CTL_CM_MAX_OUT];
  size_t n = 0;
  int e;
  if (cm_event_socket(slot) < 0) {
    e = relay(fd, slot, hdr, body, out, out_len, &n);
  } else if (hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT) {
    if (response == 0 && out_len > 0) return errno = EFAULT, true;  // before an event is taken
    e = cm_take_event(slot, out, out_len, &n);
  } else if (!qpa_answer(cm_channel_id(slot), hdr, body, out, out_len, &n)) {
    e = relay_ex(slot, hdr, body, out, out_len, &n);
  } else {
    e = 0;
  }
  if (e != 0) return errno = e, true;
  if (n > 0) {
    if (response == 0) return errno = EFAULT, true;
    memcpy(reinterpret_cast<void*>(static_cast<uintptr_t>(response)), out, n);
  }
  *ret = static_cast<ssize_t>(count);
  errno = saved;
  return true;
}

}  // namespace burst::shim
