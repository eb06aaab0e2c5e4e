// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The control thread's loop on epoll: the fallback where io_uring cannot be
// set up (seccomp profiles, kernel.io_uring_disabled), and event_loop = epoll.
// Level-triggered: the listening socket, the clients, the signalfd and the
// watched fds; the timers are the wait's timeout. A client is served up to
// kMessagesPerWakeup messages per wakeup, each answered with one sendmsg.
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "daemon/burstd/log.h"
#include "daemon/burstd/loop_core.h"
#include "daemon/burstd/notify.h"

namespace burst::burstd {
namespace {

constexpr int kMaxEvents = 64;
constexpr int kMessagesPerWakeup = 64;  // per client, so one client cannot starve the others

class EpollLoop final : public LoopCore {
 public:
  EpollLoop(const Config& config, ControlSocket& socket, Dispatcher& dispatcher)
      : LoopCore(config, socket, dispatcher), rx_(new uint8_t[kRxBytes]) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  }
  ~EpollLoop() override;
  const char* name() const override { return "epoll"; }
  bool run(std::string* error) override;

 private:
  struct Conn {
    int fd = -1;
    Session session;
  };
  void arm_watch(int fd, uint32_t gen) override;
  void disarm_watch(int fd, uint32_t gen) override;
  bool add(int fd, uint32_t events, LoopTag kind, uint32_t bits = 0);
  bool setup(std::string* error);
  void dispatch(const epoll_event& ev);
  void accept_clients();
  void serve(Conn& c);
  bool respond(Conn& c, uint8_t* msg, size_t n, msghdr& mh);
  void drop(int fd, const char* why);
  void read_signals();
  int wait_ms() const;

  int epoll_fd_ = -1;
  int signal_fd_ = -1;
  std::map<int, std::unique_ptr<Conn>> conns_;  // by fd
  std::unique_ptr<uint8_t[]> rx_;
  std::vector<uint8_t> tx_;
  std::vector<int> out_fds_;  // sent with tx_; owned by the objects they belong to
};

EpollLoop::~EpollLoop() {
  while (!conns_.empty()) drop(conns_.begin()->first, "disconnected: burstd is stopping");
  if (signal_fd_ >= 0) close(signal_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

bool EpollLoop::add(int fd, uint32_t events, LoopTag kind, uint32_t bits) {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = loop_tag(kind, (uint64_t{bits} << 32) | static_cast<uint32_t>(fd));
  return epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0;
}

void EpollLoop::arm_watch(int fd, uint32_t gen) {
  if (!add(fd, EPOLLIN, LoopTag::kWatch, gen))
    BURSTD_WARN("cannot watch fd %d: %s", fd, std::strerror(errno));
}

void EpollLoop::disarm_watch(int fd, uint32_t) { epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

bool EpollLoop::setup(std::string* error) {
  sigset_t set = control_signals();
  signal_fd_ = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (epoll_fd_ < 0 || signal_fd_ < 0 || !add(socket_.fd(), EPOLLIN, LoopTag::kAccept) ||
      !add(signal_fd_, EPOLLIN, LoopTag::kSignal)) {
    *error = std::string("cannot set up the event loop: ") + std::strerror(errno);
    return false;
  }
  return true;
}

int EpollLoop::wait_ms() const {
  const uint64_t next = next_timer_ns();
  const uint64_t now = now_ns();
  if (next <= now) return 0;
  const uint64_t ms = (next - now + 999'999) / 1'000'000;  // never early
  return ms > 60'000 ? 60'000 : static_cast<int>(ms);
}

bool EpollLoop::run(std::string* error) {
  if (!setup(error)) return false;
  announce_ready();
  epoll_event events[kMaxEvents];
  while (!stop_) {
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, wait_ms());
    if (n < 0) {
      if (errno == EINTR) continue;
      *error = std::string("epoll_wait: ") + std::strerror(errno);
      return false;
    }
    for (int i = 0; i < n; ++i) dispatch(events[i]);
    run_timers(now_ns());
  }
  notify("STOPPING=1\nSTATUS=stopping");
  while (!conns_.empty()) drop(conns_.begin()->first, "disconnected: burstd is stopping");
  return true;
}

void EpollLoop::dispatch(const epoll_event& ev) {
  const uint64_t bits = loop_tag_bits(ev.data.u64);
  const int fd = static_cast<int>(static_cast<uint32_t>(bits));
  switch (loop_tag_kind(ev.data.u64)) {
    case LoopTag::kAccept:
      accept_clients();
      break;
    case LoopTag::kSignal:
      read_signals();
      break;
    case LoopTag::kWatch:
      run_watch(fd, static_cast<uint32_t>(bits >> 32));  // level-triggered: stays armed
      break;
    case LoopTag::kRecv: {
      auto it = conns_.find(fd);
      if (it != conns_.end()) serve(*it->second);
      break;
    }
    default:
      break;
  }
}

void EpollLoop::read_signals() {
  signalfd_siginfo si;
  while (read(signal_fd_, &si, sizeof(si)) == static_cast<ssize_t>(sizeof(si))) {
    if (on_signal(si)) stop_ = true;
  }
}

void EpollLoop::accept_clients() {
  for (;;) {
    const int fd = accept4(socket_.fd(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        BURSTD_WARN("accept on %s: %s", socket_.path().c_str(), std::strerror(errno));
      }
      return;
    }
    auto c = std::make_unique<Conn>();
    c->fd = fd;
    if (!admit_client(fd, conns_.size(), &c->session)) continue;
    if (!add(fd, EPOLLIN | EPOLLRDHUP, LoopTag::kRecv)) {
      BURSTD_WARN("epoll_ctl: %s; refusing the connection", std::strerror(errno));
      dispatcher_.close_session(c->session, "disconnected (epoll_ctl failed)");
      close(fd);
      continue;
    }
    conns_[fd] = std::move(c);
  }
}

void EpollLoop::serve(Conn& c) {
  const int fd = c.fd;
  for (int i = 0; i < kMessagesPerWakeup; ++i) {
    iovec iov;
    alignas(cmsghdr) char cbuf[CMSG_SPACE(sizeof(int) * kMaxFdsReceived)];
    msghdr mh;
    prepare_recv(&mh, &iov, rx_.get(), cbuf, sizeof(cbuf));
    const ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      drop(fd, "disconnected (receive error)");
      return;
    }
    if (n == 0) {
      close_received_fds(mh);
      drop(fd, "disconnected");
      return;
    }
    if (!respond(c, rx_.get(), static_cast<size_t>(n), mh)) return;
  }
  // EPOLLHUP / EPOLLRDHUP / EPOLLERR: recvmsg() reports them (0 or an error)
  // once the messages before them are read; epoll is level-triggered.
}

// Serves one message and sends the response: false when the client was dropped.
bool EpollLoop::respond(Conn& c, uint8_t* msg, size_t n, msghdr& mh) {
  bool close_after = false;
  serve_message(c.session, msg, n, mh, &tx_, &out_fds_, &close_after);
  iovec tiov;
  alignas(cmsghdr) char tbuf[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
  msghdr th;
  prepare_send(&th, &tiov, tx_, out_fds_, tbuf);
  const int fd = c.fd;
  if (sendmsg(fd, &th, MSG_NOSIGNAL | MSG_DONTWAIT) != static_cast<ssize_t>(tx_.size())) {
    // A client that does not read its responses is not served further.
    drop(fd, errno == EAGAIN ? "disconnected (not reading its responses)"
                             : "disconnected (send failed)");
    return false;
  }
  if (close_after) {
    drop(fd, "disconnected (protocol violation)");
    return false;
  }
  return true;
}

void EpollLoop::drop(int fd, const char* why) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  std::unique_ptr<Conn> c = std::move(it->second);
  conns_.erase(it);
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  dispatcher_.close_session(c->session, why);
}

}  // namespace

std::unique_ptr<LoopCore> make_epoll_loop(const Config& config, ControlSocket& socket,
                                          Dispatcher& dispatcher) {
  return std::make_unique<EpollLoop>(config, socket, dispatcher);
}

}  // namespace burst::burstd
