// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/loop_core.h"

#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/burstd/log.h"
#include "daemon/burstd/notify.h"

namespace burst::burstd {
namespace {

// The access-control hook: every peer is admitted today (credentials are
// logged); a policy by uid/gid goes here.
bool admit(const ucred& cred) {
  (void)cred;
  return true;
}

}  // namespace

sigset_t control_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

LoopCore::LoopCore(const Config& config, ControlSocket& socket, Dispatcher& dispatcher)
    : config_(config), socket_(socket), dispatcher_(dispatcher) {
  next_check_ns_ = now_ns() + uint64_t{config_.client_check_ms} * 1'000'000;
}

uint64_t LoopCore::now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

void LoopCore::watch_readable(int fd, std::function<void()> fn) {
  auto it = watches_.find(fd);
  if (it != watches_.end()) {
    disarm_watch(fd, it->second->gen);
    watches_.erase(it);
  }
  const uint32_t gen = next_gen_++ & 0xFFFFFF;  // 24 bits in a wait's tag
  if (next_gen_ > 0xFFFFFF) next_gen_ = 1;
  watches_[fd] = std::make_shared<Watch>(Watch{gen, std::move(fn)});
  arm_watch(fd, gen);
}

void LoopCore::unwatch(int fd) {
  auto it = watches_.find(fd);
  if (it == watches_.end()) return;
  disarm_watch(fd, it->second->gen);
  watches_.erase(it);
}

void LoopCore::set_deadline(uint64_t deadline_ns, std::function<void()> fn) {
  deadline_ns_ = deadline_ns;
  deadline_fn_ = deadline_ns == UINT64_MAX ? nullptr : std::move(fn);
}

bool LoopCore::run_watch(int fd, uint32_t gen) {
  auto it = watches_.find(fd);
  if (it == watches_.end() || it->second->gen != gen) return false;
  std::shared_ptr<Watch> w = it->second;  // fn may unwatch (erase) itself
  w->fn();
  it = watches_.find(fd);
  return it != watches_.end() && it->second == w;
}

uint64_t LoopCore::next_timer_ns() const {
  return deadline_ns_ < next_check_ns_ ? deadline_ns_ : next_check_ns_;
}

void LoopCore::run_timers(uint64_t now) {
  if (now >= next_check_ns_) {
    const uint64_t period = uint64_t{config_.client_check_ms} * 1'000'000;
    next_check_ns_ += period;
    if (next_check_ns_ <= now) next_check_ns_ = now + period;  // late: no burst of checks
    dispatcher_.check_clients();
  }
  if (now >= deadline_ns_) {
    std::function<void()> fn = std::move(deadline_fn_);
    deadline_ns_ = UINT64_MAX;
    deadline_fn_ = nullptr;
    if (fn) fn();  // may set the next deadline
  }
}

bool LoopCore::on_signal(const signalfd_siginfo& si) {
  if (si.ssi_signo == SIGHUP) {
    BURSTD_INFO("SIGHUP: configuration reload is not supported; restart burstd to apply changes");
    return false;
  }
  BURSTD_INFO("%s from pid %u: stopping", strsignal(static_cast<int>(si.ssi_signo)), si.ssi_pid);
  return true;
}

void LoopCore::announce_ready() {
  notify("READY=1\nSTATUS=serving on " + socket_.path());
  BURSTD_INFO("ready: control socket %s (control loop: %s)", socket_.path().c_str(), name());
}

bool LoopCore::admit_client(int fd, size_t connected, Session* s) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    BURSTD_WARN("SO_PEERCRED: %s; refusing the connection", std::strerror(errno));
    close(fd);
    return false;
  }
  if (!admit(cred)) {
    BURSTD_WARN("refused a connection from pid %d uid %u", static_cast<int>(cred.pid),
                static_cast<unsigned>(cred.uid));
    close(fd);
    return false;
  }
  if (connected >= config_.max_clients) {
    BURSTD_WARN("refused a connection from pid %d: %u clients connected (max_clients)",
                static_cast<int>(cred.pid), config_.max_clients);
    close(fd);
    return false;
  }
  s->id = next_client_++;
  s->pid = cred.pid;
  s->uid = cred.uid;
  s->gid = cred.gid;
  // Supplementary groups (admin_group may be one of them).
  gid_t groups[64];
  socklen_t glen = sizeof(groups);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0) {
    s->groups.assign(groups, groups + glen / sizeof(gid_t));
  }
  dispatcher_.open_session(*s);
  return true;
}

void LoopCore::close_received_fds(msghdr& mh) {
  for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr; cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t k = 0; k < nfds; ++k) {
      int got;
      std::memcpy(&got, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
      close(got);
    }
  }
}

void LoopCore::serve_message(Session& s, const uint8_t* msg, size_t n, msghdr& mh,
                             std::vector<uint8_t>* out, std::vector<int>* out_fds,
                             bool* close_after) {
  // Descriptors that came with the message go to the dispatcher, which keeps
  // or closes each; a truncated set is closed here and the request refused.
  int in_fds[kMaxFdsReceived + 1];
  size_t n_in = 0;
  bool truncated = (mh.msg_flags & MSG_CTRUNC) != 0;
  for (cmsghdr* cm = CMSG_FIRSTHDR(&mh); cm != nullptr; cm = CMSG_NXTHDR(&mh, cm)) {
    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) continue;
    const size_t nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t k = 0; k < nfds; ++k) {
      int got;
      std::memcpy(&got, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
      if (n_in < kMaxFdsReceived) {
        in_fds[n_in++] = got;
      } else {
        close(got);
        truncated = true;
      }
    }
  }
  if (truncated) {
    for (size_t k = 0; k < n_in; ++k) close(in_fds[k]);
    for (n_in = 0; n_in <= kMaxFdsReceived; ++n_in) in_fds[n_in] = -1;  // refused: too many
  }
  // Larger than any request: the checks answer EMSGSIZE.
  const size_t len = (mh.msg_flags & MSG_TRUNC) ? kRxBytes : n;
  *close_after = false;
  out_fds->clear();
  dispatcher_.handle(s, msg, len, in_fds, n_in, out, out_fds, close_after);
}

void LoopCore::prepare_recv(msghdr* mh, iovec* iov, uint8_t* buf, char* cbuf, size_t cbuf_len) {
  *iov = iovec{buf, kRxBytes};
  *mh = msghdr{};
  mh->msg_iov = iov;
  mh->msg_iovlen = 1;
  mh->msg_control = cbuf;
  mh->msg_controllen = cbuf_len;
}

void LoopCore::prepare_send(msghdr* mh, iovec* iov, std::vector<uint8_t>& out,
                            const std::vector<int>& fds, char* cbuf) {
  *iov = iovec{out.data(), out.size()};
  *mh = msghdr{};
  mh->msg_iov = iov;
  mh->msg_iovlen = 1;
  if (!fds.empty() && fds.size() <= kMaxFdsPerMessage) {
    mh->msg_control = cbuf;
    mh->msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* cm = CMSG_FIRSTHDR(mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cm), fds.data(), sizeof(int) * fds.size());
  }
}

}  // namespace burst::burstd
