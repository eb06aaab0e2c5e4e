/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The control thread's event loop: the listening socket, the clients (one
// response per request, in order; a client that hangs up loses its objects), a
// signalfd (SIGTERM / SIGINT stop burstd, SIGHUP is logged and ignored), the
// periodic client check (exec / credential changes), and what other parts of
// burstd register: readable fds (eventfds) and one deadline.
//
// Two implementations behind this one class (burstd.conf event_loop):
//   - io_uring (uring_loop.cc, liburing): every response and re-armed receive of
//     a pass goes to the kernel in one io_uring_enter, the one that also waits;
//   - epoll (epoll_loop.cc): where io_uring cannot be set up (EPERM from a
//     seccomp profile or kernel.io_uring_disabled, ENOSYS), or event_loop = epoll.
// event_loop = auto takes io_uring and falls back to epoll with one log line;
// uring refuses to start without it.
//
// Threading: construct, run and call everything on the control thread (the
// io_uring ring has a single issuer); the signals must be blocked in every
// thread before the workers start: block_signals().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "daemon/burstd/config.h"
#include "daemon/burstd/control_socket.h"
#include "daemon/burstd/dispatch.h"

namespace burst::burstd {

class LoopCore;

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (and the threads it
// creates later) and ignores SIGPIPE. Call first thing in main().
void block_signals();

// event_loop = uring where io_uring cannot be set up: false and why (checked
// at start-up, before the port is opened). True for auto and epoll.
bool check_event_loop(const Config& config, std::string* error);

class EventLoop {
 public:
  // Sets up the loop config.event_loop asks for (logs a fallback to epoll).
  EventLoop(const Config& config, ControlSocket& socket, Dispatcher& dispatcher);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // Serves until SIGTERM/SIGINT (or stop()), then closes every client
  // (releasing its objects). Returns false if the loop could not be set up or
  // failed (*error).
  bool run(std::string* error);
  // run() returns after the current pass (from a watch or deadline fn).
  void stop();

  // fn runs on the control thread while fd is readable (level: again on the
  // next pass if fn left it readable). One watch per fd: watching it again
  // replaces fn. unwatch and watch_readable may be called from inside any fn,
  // before run() too. The fd stays the caller's; unwatch before closing it.
  void watch_readable(int fd, std::function<void()> fn);
  void unwatch(int fd);
  // One deadline (CLOCK_MONOTONIC ns), replaced by the next call; UINT64_MAX:
  // none. fn runs once on the control thread at or after deadline_ns.
  void set_deadline(uint64_t deadline_ns, std::function<void()> fn);

  // "io_uring" or "epoll".
  const char* kind() const;

 private:
  std::unique_ptr<LoopCore> loop_;
  std::string error_;  // event_loop = uring without io_uring: run() fails with it
};

}  // namespace burst::burstd
