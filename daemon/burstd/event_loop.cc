// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/event_loop.h"

#include <signal.h>

#include <cstring>

#include "daemon/burstd/log.h"
#include "daemon/burstd/loop_core.h"

namespace burst::burstd {
namespace {

std::string uring_unavailable(const std::string& why) {
  return "io_uring is not available here (" + why + ")";
}

}  // namespace

bool check_event_loop(const Config& config, std::string* error) {
  if (config.event_loop != EventLoopKind::kUring) return true;
  std::string why;
  if (probe_uring(&why)) return true;
  *error = uring_unavailable(why) + "; event_loop = uring: set event_loop = auto or epoll";
  return false;
}

void block_signals() {
  sigset_t set = control_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
}

EventLoop::EventLoop(const Config& config, ControlSocket& socket, Dispatcher& dispatcher) {
  if (config.event_loop != EventLoopKind::kEpoll) {
    std::string why;
    loop_ = make_uring_loop(config, socket, dispatcher, &why);
    if (!loop_ && config.event_loop == EventLoopKind::kUring) {
      error_ = uring_unavailable(why) + "; event_loop = uring: set event_loop = auto or epoll";
    } else if (!loop_) {
      BURSTD_INFO("%s: the control thread runs on epoll", uring_unavailable(why).c_str());
    }
  }
  if (!loop_) loop_ = make_epoll_loop(config, socket, dispatcher);
}

EventLoop::~EventLoop() = default;

bool EventLoop::run(std::string* error) {
  if (!error_.empty()) {
    *error = error_;
    return false;
  }
  return loop_->run(error);
}

void EventLoop::stop() { loop_->stop(); }

void EventLoop::watch_readable(int fd, std::function<void()> fn) {
  loop_->watch_readable(fd, std::move(fn));
}

void EventLoop::unwatch(int fd) { loop_->unwatch(fd); }

void EventLoop::set_deadline(uint64_t deadline_ns, std::function<void()> fn) {
  loop_->set_deadline(deadline_ns, std::move(fn));
}

const char* EventLoop::kind() const { return loop_->name(); }

}  // namespace burst::burstd
