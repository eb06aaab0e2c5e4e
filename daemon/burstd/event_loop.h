/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The control thread's event loop: epoll over the listening socket, the clients,
// a signalfd (SIGTERM / SIGINT stop burstd, SIGHUP is logged and ignored), a
// timerfd for the periodic client check (exec / credential changes), and for
// the connection manager (daemon/burstd/cm_service.h) descriptors watched for
// readability (QP1's eventfd) and one deadline (IB CM retries and timeouts).
// Plain epoll rather than liburing: a handful of control messages per second
// need no batching, and io_uring is often disabled in containers (seccomp
// profiles, kernel.io_uring_disabled) where burstd must still start.
//
// Threading: the control thread (the signals must be blocked in every thread
// before the workers start: block_signals()).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "daemon/burstd/control_socket.h"
#include "daemon/burstd/dispatch.h"

namespace burst::burstd {

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (and the threads it
// creates later) and ignores SIGPIPE. Call first thing in main().
void block_signals();

class EventLoop {
 public:
  EventLoop(const Config& config, ControlSocket& socket, Dispatcher& dispatcher);
  ~EventLoop();

  // Serves until SIGTERM/SIGINT, then closes every client (releasing its
  // objects). Returns false if the loop could not be set up (*error).
  bool run(std::string* error);

  // Level-triggered: fn runs on the control thread while fd is readable (it
  // must consume what makes fd readable, or it runs again). One fn per fd; a
  // second call replaces it. fd stays owned by the caller, who unwatches it
  // before closing it. fn may call unwatch / set_deadline.
  void watch_readable(int fd, std::function<void()> fn);
  void unwatch(int fd);
  // One deadline (CLOCK_MONOTONIC ns; UINT64_MAX: none): fn runs once on the
  // control thread when it passes. Each call replaces the previous one.
  void set_deadline(uint64_t deadline_ns, std::function<void()> fn);

 private:
  struct Conn {
    int fd = -1;
    Session session;
  };
  void accept_clients();
  void serve(Conn& c, uint32_t events);
  void drop(int fd, const char* why);
  bool on_signal();  // true: stop
  bool setup_fds();  // epoll, signalfd, timerfds (idempotent): false with errno
  void on_deadline();

  const Config& config_;
  ControlSocket& socket_;
  Dispatcher& dispatcher_;
  int epoll_fd_ = -1;
  int signal_fd_ = -1;
  int timer_fd_ = -1;  // every client_check_ms: Dispatcher::check_clients
  int deadline_fd_ = -1;  // set_deadline (absolute CLOCK_MONOTONIC)
  std::map<int, std::function<void()>> watches_;  // by fd
  std::function<void()> deadline_fn_;
  uint32_t next_client_ = 1;
  std::map<int, std::unique_ptr<Conn>> conns_;  // by fd
  std::vector<uint8_t> rx_;
  std::vector<uint8_t> tx_;
  std::vector<int> out_fds_;  // sent with tx_; owned by the objects they belong to
  static constexpr size_t kMaxFdsPerMessage = 2;
  static constexpr size_t kMaxFdsReceived = 4;  // more than any op takes: refused
};

}  // namespace burst::burstd
