// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/event_loop.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/burstd/log.h"

namespace burst::burstd {
namespace {

constexpr int kMaxEvents = 64;
constexpr int kMessagesPerWakeup = 64;  // per client, so one client cannot starve the others

sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

// The access-control hook: every peer is admitted today (credentials are
// logged); a policy by uid/gid goes here.
bool admit(const ucred& cred) {
  (void)cred;
  return true;
}

}  // namespace

void block_signals() {
  sigset_t set = handled_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

EventLoop::EventLoop(const Config& config, ControlSocket& socket, Dispatcher& dispatcher)
    : config_(config), socket_(socket), dispatcher_(dispatcher), rx_(BURST_CTL_MAX_MSG + 1) {}

EventLoop::~EventLoop() {
  while (!conns_.empty()) drop(conns_.begin()->first, "disconnected: burstd is stopping");
  if (signal_fd_ >= 0) close(signal_fd_);
  if (timer_fd_ >= 0) close(timer_fd_);
  if (deadline_fd_ >= 0) close(deadline_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

bool EventLoop::setup_fds() {
  if (epoll_fd_ >= 0) return true;
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  sigset_t set = handled_signals();
  signal_fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  deadline_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (epoll_fd_ < 0 || signal_fd_ < 0 || timer_fd_ < 0 || deadline_fd_ < 0) return false;
  epoll_event ev{};
  ev.events = EPOLLIN;
  for (int fd : {signal_fd_, timer_fd_, deadline_fd_}) {
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) return false;
  }
  return true;
}

void EventLoop::watch_readable(int fd, std::function<void()> fn) {
  if (!setup_fds()) {
    BURSTD_ERROR("event loop: cannot watch fd %d: %s", fd, std::strerror(errno));
    return;
  }
  const bool known = watches_.count(fd) != 0;
  watches_[fd] = std::move(fn);
  if (known) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    BURSTD_ERROR("event loop: epoll_ctl(ADD %d): %s", fd, std::strerror(errno));
    watches_.erase(fd);
  }
}

void EventLoop::unwatch(int fd) {
  if (watches_.erase(fd) == 0) return;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void EventLoop::set_deadline(uint64_t deadline_ns, std::function<void()> fn) {
  if (!setup_fds()) {
    BURSTD_ERROR("event loop: cannot set a deadline: %s", std::strerror(errno));
    return;
  }
  itimerspec at{};  // all zero: disarmed
  if (deadline_ns != UINT64_MAX) {
    deadline_fn_ = std::move(fn);
    if (deadline_ns == 0) deadline_ns = 1;  // 0 would disarm: due now
    at.it_value.tv_sec = static_cast<time_t>(deadline_ns / 1'000'000'000u);
    at.it_value.tv_nsec = static_cast<long>(deadline_ns % 1'000'000'000u);
  } else {
    deadline_fn_ = nullptr;
  }
  timerfd_settime(deadline_fd_, TFD_TIMER_ABSTIME, &at, nullptr);
}

void EventLoop::on_deadline() {
  uint64_t expirations = 0;
  // Nothing to read: the deadline was replaced after epoll reported it.
  if (read(deadline_fd_, &expirations, sizeof(expirations)) <= 0 || expirations == 0) return;
  // The function may set the next deadline: it is moved out first.
  std::function<void()> fn = std::move(deadline_fn_);
  deadline_fn_ = nullptr;
  if (fn) fn();
}

bool EventLoop::run(std::string* error) {
  if (!setup_fds()) {
    *error = std::string("cannot set up the event loop: ") + std::strerror(errno);
    return false;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = socket_.fd();
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, socket_.fd(), &ev);
  itimerspec period{};
  period.it_interval.tv_sec = config_.client_check_ms / 1000;
  period.it_interval.tv_nsec = static_cast<long>(config_.client_check_ms % 1000) * 1'000'000;
  period.it_value = period.it_interval;
  timerfd_settime(timer_fd_, 0, &period, nullptr);

  sd_notifyf(0, "READY=1\nSTATUS=serving on %s", socket_.path().c_str());
  BURSTD_INFO("ready: control socket %s", socket_.path().c_str());

  epoll_event events[kMaxEvents];
  for (;;) {
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::string("epoll_wait: ") + std::strerror(errno);
      return false;
    }
    bool stop = false;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == socket_.fd()) {
        accept_clients();
      } else if (fd == signal_fd_) {
        stop |= on_signal();
      } else if (fd == timer_fd_) {
        uint64_t expirations;
        while (read(timer_fd_, &expirations, sizeof(expirations)) > 0) {
        }
        dispatcher_.check_clients();
      } else if (fd == deadline_fd_) {
        on_deadline();
      } else if (auto w = watches_.find(fd); w != watches_.end()) {
        std::function<void()> fn = w->second;  // fn may unwatch (erase) itself
        fn();
      } else {
        auto it = conns_.find(fd);
        if (it != conns_.end()) serve(*it->second, events[i].events);
      }
    }
    if (stop) break;
  }
  sd_notify(0, "STOPPING=1\nSTATUS=stopping");
  while (!conns_.empty()) drop(conns_.begin()->first, "disconnected: burstd is stopping");
  return true;
}

bool EventLoop::on_signal() {
  signalfd_siginfo si;
  bool stop = false;
  while (read(signal_fd_, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
    if (si.ssi_signo == SIGHUP) {
      BURSTD_INFO("SIGHUP: configuration reload is not supported; restart burstd to apply changes");
      continue;
    }
    BURSTD_INFO("%s from pid %u: stopping", strsignal(static_cast<int>(si.ssi_signo)), si.ssi_pid);
    stop = true;
  }
  return stop;
}

void EventLoop::accept_clients() {
  for (;;) {
    const int fd = accept4(socket_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        BURSTD_WARN("accept on %s: %s", socket_.path().c_str(), std::strerror(errno));
      }
      return;
    }
    ucred cred{};
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
      BURSTD_WARN("SO_PEERCRED: %s; refusing the connection", std::strerror(errno));
      close(fd);
      continue;
    }
    if (!admit(cred)) {
      BURSTD_WARN("refused a connection from pid %d uid %u", static_cast<int>(cred.pid),
                  static_cast<unsigned>(cred.uid));
      close(fd);
      continue;
    }
    if (conns_.size() >= config_.max_clients) {
      BURSTD_WARN("refused a connection from pid %d: %u clients connected (max_clients)",
                  static_cast<int>(cred.pid), config_.max_clients);
      close(fd);
      continue;
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    c->session.id = next_client_++;
    c->session.pid = cred.pid;
    c->session.uid = cred.uid;
    c->session.gid = cred.gid;
    // Supplementary groups (admin_group may be one of them).
    gid_t groups[64];
    socklen_t glen = sizeof(groups);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0) {
      c->session.groups.assign(groups, groups + glen / sizeof(gid_t));
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      BURSTD_WARN("epoll_ctl: %s; refusing the connection", std::strerror(errno));
      close(fd);
      continue;
    }
    dispatcher_.open_session(c->session);
    conns_[fd] = std::move(c);
  }
}

void EventLoop::serve(Conn& c, uint32_t events) {
  const int fd = c.fd;
  for (int i = 0; i < kMessagesPerWakeup; ++i) {
    iovec iov{rx_.data(), rx_.size()};
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxFdsReceived)];
    msghdr mh{};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof(cbuf);
    const ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      drop(fd, "disconnected (receive error)");
      return;
    }
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
    if (n == 0) {
      for (size_t k = 0; k < n_in; ++k) {
        if (in_fds[k] >= 0) close(in_fds[k]);
      }
      drop(fd, "disconnected");
      return;
    }
    size_t len = static_cast<size_t>(n);
    // Larger than any request: the checks answer EMSGSIZE.
    if (mh.msg_flags & MSG_TRUNC) len = rx_.size();
    bool close_after = false;
    out_fds_.clear();
    dispatcher_.handle(c.session, rx_.data(), len, in_fds, n_in, &tx_, &out_fds_, &close_after);
    iovec tiov{tx_.data(), tx_.size()};
    alignas(cmsghdr) char tbuf[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
    msghdr th{};
    th.msg_iov = &tiov;
    th.msg_iovlen = 1;
    if (!out_fds_.empty() && out_fds_.size() <= kMaxFdsPerMessage) {
      th.msg_control = tbuf;
      th.msg_controllen = CMSG_SPACE(sizeof(int) * out_fds_.size());
      cmsghdr* cm = CMSG_FIRSTHDR(&th);
      cm->cmsg_level = SOL_SOCKET;
      cm->cmsg_type = SCM_RIGHTS;
      cm->cmsg_len = CMSG_LEN(sizeof(int) * out_fds_.size());
      std::memcpy(CMSG_DATA(cm), out_fds_.data(), sizeof(int) * out_fds_.size());
    }
    if (sendmsg(fd, &th, MSG_NOSIGNAL | MSG_DONTWAIT) != static_cast<ssize_t>(tx_.size())) {
      // A client that does not read its responses is not served further.
      drop(fd, errno == EAGAIN ? "disconnected (not reading its responses)"
                               : "disconnected (send failed)");
      return;
    }
    if (close_after) {
      drop(fd, "disconnected (protocol violation)");
      return;
    }
  }
  // EPOLLHUP / EPOLLRDHUP / EPOLLERR: recvmsg() reports them (0 or an error)
  // once the messages before them are read; epoll is level-triggered.
  (void)events;
}

void EventLoop::drop(int fd, const char* why) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  std::unique_ptr<Conn> c = std::move(it->second);
  conns_.erase(it);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  dispatcher_.close_session(c->session, why);
}

}  // namespace burst::burstd
