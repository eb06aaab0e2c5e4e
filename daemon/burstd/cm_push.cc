// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// CmService, push channels (abi/burst_ctl_cm.h, docs/cm.md "Relay fast path"):
// every event Cma queues on such a channel is taken off at once (GET_EVENT)
// and sent on the channel's socket, whose other end is the application's
// channel fd, so the shim answers GET_EVENT without a round trip. burstd keeps
// the pushed events until the shim acknowledges them (CM_COMMAND_EX's
// `consumed`), at most BURST_CTL_CM_PUSH_WINDOW, because what the kernel does
// with events the application has not taken yet must still be possible:
// DESTROY_ID and LEAVE_MCAST drop them (events_reported excludes them, a
// CONNECT_REQUEST's new id is destroyed), MIGRATE_ID moves them. Control
// thread only.
#include <rdma/rdma_user_cm.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "daemon/burstd/cm_service.h"

namespace burst::burstd {
namespace {

constexpr uint32_t kConnectRequest = 4;  // RDMA_CM_EVENT_CONNECT_REQUEST
constexpr uint32_t kMulticastJoin = 12;  // RDMA_CM_EVENT_MULTICAST_JOIN
constexpr uint32_t kMulticastError = 13;
constexpr int kPushSndbuf = 256 * 1024;  // the window's events with room to spare
constexpr uint32_t kQpsRts = 3;          // IB_QPS_RTS: the last state INIT_QP_ATTR serves
static_assert(sizeof(rdma_ucm_event_resp) == BURST_CTL_CM_EVENT_BYTES);
static_assert(sizeof(ib_uverbs_qp_attr) == BURST_CTL_CM_QP_ATTR_BYTES);

template <class T>
bool read_in(const void* in, size_t in_len, T* v) {
  if (in_len < sizeof(T)) return false;
  std::memcpy(v, in, sizeof(T));
  return true;
}

// Lowers a response's events_reported (its first u32) by n.
void unreport(void* out, int r, uint32_t n) {
  if (r < static_cast<int>(sizeof(uint32_t)) || n == 0) return;
  uint32_t v;
  std::memcpy(&v, out, sizeof(v));
  v = v > n ? v - n : 0;
  std::memcpy(out, &v, sizeof(v));
}

void add_dead(CmChannels::ExResult* ex, uint64_t seq) {
  if (ex->n_dead < ex->max_dead) ex->dead[ex->n_dead++] = seq;
}

}  // namespace

// BURST_CTL_CM_CMD_INIT_QP_ATTRS: INIT_QP_ATTR for the state asked and each
// later one up to RTS, one ib_uverbs_qp_attr each; the first one's error is
// the answer, a later one's ends the list.
int CmService::init_qp_attrs(uint32_t channel, const void* in, size_t in_len, void* out,
                             size_t out_len) {
  rdma_ucm_init_qp_attr q;
  if (!read_in(in, in_len, &q)) return -EINVAL;
  auto* o = static_cast<uint8_t*>(out);
  int total = 0;
  const uint32_t first = q.qp_state;
  for (uint32_t s = first; s == first || s <= kQpsRts; ++s) {
    if (static_cast<size_t>(total) + sizeof(ib_uverbs_qp_attr) > out_len) break;
    q.qp_state = s;
    const int r = cma_->command(channel, RDMA_USER_CM_CMD_INIT_QP_ATTR, &q, sizeof(q),
                                o + total, sizeof(ib_uverbs_qp_attr));
    if (r < 0) return total == 0 ? r : total;
    if (r != static_cast<int>(sizeof(ib_uverbs_qp_attr))) break;
    total += r;
  }
  return total;
}

int CmService::open_push_channel(uint32_t channel, pid_t pid, int sock) {
  if (channels_.count(channel) != 0) {
    close(sock);
    return EALREADY;
  }
  int type = 0, domain = 0;
  socklen_t len = sizeof(int), dlen = sizeof(int);
  if (sock < 0 || getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
      getsockopt(sock, SOL_SOCKET, SO_DOMAIN, &domain, &dlen) != 0 || type != SOCK_SEQPACKET ||
      domain != AF_UNIX) {
    if (sock >= 0) close(sock);
    return EBADF;
  }
  (void)setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &kPushSndbuf, sizeof(kPushSndbuf));
  Channel& c = channels_[channel];
  c.event_fd = sock;
  c.push = true;
  cma_->open_channel(channel, static_cast<cm::ClientId>(pid));
  return 0;
}

void CmService::flush_pushes() {
  while (!to_push_.empty()) {
    const uint32_t id = to_push_.back();
    to_push_.pop_back();
    auto it = channels_.find(id);
    if (it != channels_.end() && it->second.push) push_channel(id, it->second);
  }
}

bool CmService::send_pushed(Channel& c, Pushed& p) {
  burst_ctl_cm_event ev{};
  ev.seq = p.seq;
  const size_t unacked = c.unacked.size();
  ev.flags = unacked >= BURST_CTL_CM_PUSH_WINDOW / 2 || p.ack_me ? BURST_CTL_CM_EVENT_ACK_ME : 0;
  ev.len = sizeof(ev.resp);
  std::memcpy(ev.resp, p.resp, sizeof(ev.resp));
  const ssize_t n = send(c.event_fd, &ev, sizeof(ev), MSG_DONTWAIT | MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;  // sent again later
  p.sent = true;  // or the application closed its end: nobody will read it
  return true;
}

void CmService::push_channel(uint32_t id, Channel& c) {
  for (Pushed& p : c.unacked) {
    if (!p.sent && !send_pushed(c, p)) return;  // the socket is still full
  }
  while (c.pending && c.unacked.size() < BURST_CTL_CM_PUSH_WINDOW) {
    Pushed p;
    rdma_ucm_get_event ge{};
    if (cma_->command(id, RDMA_USER_CM_CMD_GET_EVENT, &ge, sizeof(ge), p.resp, sizeof(p.resp)) <
        0) {
      c.pending = false;
      break;
    }
    rdma_ucm_event_resp ev;
    std::memcpy(&ev, p.resp, sizeof(ev));
    p.seq = c.next_seq++;
    p.owner = ev.id;
    if (ev.event == kConnectRequest) {  // counted against the listen id, named by its uid
      p.new_id = ev.id;
      auto u = c.uids.find(ev.uid);
      p.owner = u != c.uids.end() ? u->second : 0;
      // Held until the application has taken it (ucma gives it back at GET_EVENT). When
      // the unacknowledged requests hold half the listen's backlog or more, this one
      // asks for the acknowledgement, so a listen that only reads events still gets
      // its backlog back; with a large backlog nothing extra is sent.
      const uint32_t left = cma_->hold_backlog(p.owner);
      uint32_t held = 1;
      for (const Pushed& q : c.unacked) held += q.new_id != 0 && q.owner == p.owner;
      p.ack_me = left <= held;
    } else if (ev.event == kMulticastJoin || ev.event == kMulticastError) {
      p.mc = ev.id;
      auto m = c.mcs.find(ev.id);
      p.owner = m != c.mcs.end() ? m->second : 0;
    }
    c.unacked.push_back(p);
    if (!send_pushed(c, c.unacked.back())) return;
  }
}

void CmService::acknowledge(Channel& c, uint64_t consumed) {
  while (!c.unacked.empty() && c.unacked.front().sent && c.unacked.front().seq <= consumed) {
    if (c.unacked.front().new_id != 0) cma_->release_backlog(c.unacked.front().owner);
    c.unacked.pop_front();
  }
}

// What the pushed events' owners need: the uid of each id this channel created
// (a CONNECT_REQUEST names its listen id by it) and each multicast join's id.
void CmService::note_command(uint32_t, Channel& c, uint32_t cmd, const void* in, size_t in_len,
                             const void* out, int r) {
  if (r < 0) return;
  rdma_ucm_create_id_resp made{};
  if (r >= static_cast<int>(sizeof(made))) std::memcpy(&made, out, sizeof(made));
  if (cmd == RDMA_USER_CM_CMD_CREATE_ID) {
    rdma_ucm_create_id ci;
    if (read_in(in, in_len, &ci) && r >= static_cast<int>(sizeof(made))) c.uids[ci.uid] = made.id;
  } else if (cmd == RDMA_USER_CM_CMD_JOIN_IP_MCAST) {
    rdma_ucm_join_ip_mcast j;
    if (read_in(in, in_len, &j) && r >= static_cast<int>(sizeof(made))) c.mcs[made.id] = j.id;
  } else if (cmd == RDMA_USER_CM_CMD_JOIN_MCAST) {
    rdma_ucm_join_mcast j;
    if (read_in(in, in_len, &j) && r >= static_cast<int>(sizeof(made))) c.mcs[made.id] = j.id;
  } else if (cmd == RDMA_USER_CM_CMD_DESTROY_ID) {
    rdma_ucm_destroy_id d;
    if (!read_in(in, in_len, &d)) return;
    std::erase_if(c.uids, [&](const auto& e) { return e.second == d.id; });
    std::erase_if(c.mcs, [&](const auto& e) { return e.second == d.id; });
  } else if (cmd == RDMA_USER_CM_CMD_LEAVE_MCAST) {
    rdma_ucm_destroy_id d;
    if (read_in(in, in_len, &d)) c.mcs.erase(d.id);
  }
}

// DESTROY_ID / LEAVE_MCAST succeeded: the id's (join's) pushed events the
// application has not taken are no longer reported (ucma_cleanup_ctx_events,
// ucma_cleanup_mc_events): dropped, not counted, their new ids destroyed.
int CmService::drop_unreported(uint32_t channel, Channel& c, uint32_t cmd, const void* in,
                               size_t in_len, void* out, int r, ExResult* ex) {
  const bool leave = cmd == RDMA_USER_CM_CMD_LEAVE_MCAST;
  rdma_ucm_destroy_id d;
  if (r < 0 || (cmd != RDMA_USER_CM_CMD_DESTROY_ID && !leave) || !read_in(in, in_len, &d)) {
    return r;
  }
  std::vector<uint32_t> new_ids;
  uint32_t n = 0;
  std::erase_if(c.unacked, [&](const Pushed& p) {
    if ((leave ? p.mc : p.owner) != d.id || (leave && p.mc == 0)) return false;
    ++n;
    if (p.sent) add_dead(ex, p.seq);
    if (p.new_id != 0) new_ids.push_back(p.new_id);
    return true;
  });
  unreport(out, r, n);
  for (uint32_t id : new_ids) {  // their requests are rejected, as the kernel's
    rdma_ucm_destroy_id nd{0, id, 0};
    rdma_ucm_destroy_id_resp ignored{};
    (void)cma_->command(channel, RDMA_USER_CM_CMD_DESTROY_ID, &nd, sizeof(nd), &ignored,
                        sizeof(ignored));
  }
  return r;
}

// MIGRATE_ID on push channel `to`: the id's pushed events the application has
// not taken from the source channel go to `to` (after what `to` already had),
// as ucma_migrate_id moves the unreported ones.
int CmService::migrate_pushed(uint32_t to, uint64_t source_consumed, const void* in,
                              size_t in_len, void* out, size_t out_len, ExResult* ex) {
  rdma_ucm_migrate_id m;
  Channel& dst = channels_.at(to);
  if (!read_in(in, in_len, &m)) {
    return cma_->command(to, RDMA_USER_CM_CMD_MIGRATE_ID, in, in_len, out, out_len);
  }
  auto sit = channels_.find(m.fd);
  Channel* src = sit != channels_.end() && sit->second.push && m.fd != to ? &sit->second : nullptr;
  if (src != nullptr) acknowledge(*src, source_consumed);
  push_channel(to, dst);  // what `to` had queued goes first
  const int r = cma_->command(to, RDMA_USER_CM_CMD_MIGRATE_ID, in, in_len, out, out_len);
  if (r < 0 || src == nullptr) return r;
  std::vector<Pushed> moved;
  std::erase_if(src->unacked, [&](const Pushed& p) {
    if (p.owner != m.id) return false;
    if (p.sent) add_dead(ex, p.seq);
    moved.push_back(p);
    return true;
  });
  unreport(out, r, static_cast<uint32_t>(moved.size()));
  for (const auto& [uid, id] : src->uids) {
    if (id == m.id) dst.uids[uid] = id;
  }
  std::erase_if(src->uids, [&](const auto& e) { return e.second == m.id; });
  for (const auto& [mc, id] : src->mcs) {
    if (id == m.id) dst.mcs[mc] = id;
  }
  std::erase_if(src->mcs, [&](const auto& e) { return e.second == m.id; });
  for (Pushed p : moved) {
    p.seq = dst.next_seq++;
    p.sent = false;
    dst.unacked.push_back(p);
    if (p.new_id != 0) {  // the request's new id follows its listen id
      rdma_ucm_migrate_id nm{0, p.new_id, m.fd};
      rdma_ucm_migrate_resp ignored{};
      (void)cma_->command(to, RDMA_USER_CM_CMD_MIGRATE_ID, &nm, sizeof(nm), &ignored,
                          sizeof(ignored));
    }
  }
  push_channel(to, dst);
  return r;
}

int CmService::command_ex(uint32_t channel, uint32_t cmd, uint64_t consumed,
                          uint64_t source_consumed, const void* in, size_t in_len, void* out,
                          size_t out_len, ExResult* ex) {
  auto it = channels_.find(channel);
  if (it == channels_.end()) return -EBADF;
  Channel& c = it->second;
  if (!c.push) return -EINVAL;  // CM_COMMAND_EX is a push channel's
  acknowledge(c, consumed);
  int r = 0;
  if (cmd == BURST_CTL_CM_CMD_ACK) {
    r = 0;
  } else if (cmd == RDMA_USER_CM_CMD_GET_EVENT) {
    r = -EINVAL;  // the shim takes events from the socket
  } else if (cmd == BURST_CTL_CM_CMD_INIT_QP_ATTRS) {
    r = init_qp_attrs(channel, in, in_len, out, out_len);
  } else if (cmd == RDMA_USER_CM_CMD_MIGRATE_ID) {
    r = migrate_pushed(channel, source_consumed, in, in_len, out, out_len, ex);
  } else {
    r = cma_->command(channel, cmd, in, in_len, out, out_len);
    note_command(channel, c, cmd, in, in_len, out, r);
    r = drop_unreported(channel, c, cmd, in, in_len, out, r, ex);
  }
  push_channel(channel, c);  // the window may have opened
  rearm();
  return r;
}

}  // namespace burst::burstd
