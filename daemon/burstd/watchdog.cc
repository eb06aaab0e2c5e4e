// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/watchdog.h"

#include <sys/timerfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "daemon/burstd/device.h"
#include "daemon/burstd/event_loop.h"
#include "daemon/burstd/log.h"
#include "daemon/burstd/notify.h"

namespace burst::burstd {

bool all_moved(const std::vector<uint64_t>& since, const std::vector<uint64_t>& now,
               uint32_t* stuck) {
  for (size_t i = 0; i < now.size() && i < since.size(); ++i) {
    if (now[i] == since[i]) {
      *stuck = static_cast<uint32_t>(i);
      return false;
    }
  }
  return true;
}

Watchdog::Watchdog(Device& device, EventLoop& loop, std::string status)
    : device_(device), loop_(loop), status_(std::move(status)) {
  interval_us_ = watchdog_interval_us();
  if (interval_us_ == 0) return;
  timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer_fd_ < 0) {
    BURSTD_WARN("watchdog: timerfd_create: %s; no WATCHDOG=1 will be sent", std::strerror(errno));
    return;
  }
  const uint64_t tick_ns = interval_us_ * 1000 / 4;
  itimerspec its{};
  its.it_interval.tv_sec = static_cast<time_t>(tick_ns / 1'000'000'000);
  its.it_interval.tv_nsec = static_cast<long>(tick_ns % 1'000'000'000);
  its.it_value = its.it_interval;
  timerfd_settime(timer_fd_, 0, &its, nullptr);
  at_ping_ = heartbeats();
  last_ping_ns_ = monotonic_ns();
  notify("WATCHDOG=1");
  loop_.watch_readable(timer_fd_, [this] { tick(); });
  BURSTD_INFO("watchdog: every %llu ms systemd hears WATCHDOG=1 while all %u workers move",
              static_cast<unsigned long long>(interval_us_ / 1000), device_.workers());
}

Watchdog::~Watchdog() {
  if (timer_fd_ < 0) return;
  loop_.unwatch(timer_fd_);
  close(timer_fd_);
}

std::vector<uint64_t> Watchdog::heartbeats() const {
  std::vector<uint64_t> h(device_.workers());
  for (uint32_t w = 0; w < h.size(); ++w) h[w] = device_.worker(w).heartbeat();
  return h;
}

void Watchdog::tick() {
  uint64_t expirations = 0;
  (void)!read(timer_fd_, &expirations, sizeof expirations);
  const std::vector<uint64_t> now = heartbeats();
  uint32_t stuck = 0;
  if (all_moved(at_ping_, now, &stuck)) {
    notify(stalled_ || !announced_ ? "WATCHDOG=1\nSTATUS=" + status_ : std::string("WATCHDOG=1"));
    announced_ = true;
    if (stalled_) BURSTD_INFO("watchdog: every worker moves again");
    stalled_ = false;
    at_ping_ = now;
    last_ping_ns_ = monotonic_ns();
    return;
  }
  if (stalled_) return;
  stalled_ = true;
  const uint64_t ms = (monotonic_ns() - last_ping_ns_) / 1'000'000;
  const std::string what = "worker " + std::to_string(stuck) + " has not moved for " +
                           std::to_string(ms) + " ms: no WATCHDOG=1 until it does";
  BURSTD_ERROR("watchdog: %s", what.c_str());
  notify("STATUS=" + what);
}

}  // namespace burst::burstd
