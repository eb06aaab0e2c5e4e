/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// systemd's watchdog (WatchdogSec=): burstd says WATCHDOG=1 only while every
// worker's loop moves. Each worker bumps its heartbeat counter once per loop
// iteration (busy or idle: an idle worker sleeps at most idle_sleep_max_us);
// a timer on the control thread, four times per watchdog interval, pings when
// every heartbeat changed since the last ping. A worker stuck (a bug, a
// deadlock) stops the pings, STATUS= names it, and systemd restarts burstd
// (Restart=on-failure); a stuck control thread stops them as well.
//
// Threading: the control thread (timer on the EventLoop).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace burst::burstd {

class Device;
class EventLoop;

// Whether every counter in `now` differs from the one in `since` (same size);
// if not, *stuck is the first index that did not move.
bool all_moved(const std::vector<uint64_t>& since, const std::vector<uint64_t>& now,
               uint32_t* stuck);

class Watchdog {
 public:
  // Arms the timer when systemd asked for a watchdog (else does nothing);
  // `status` is the STATUS= text while all is well.
  Watchdog(Device& device, EventLoop& loop, std::string status);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

 private:
  void tick();
  std::vector<uint64_t> heartbeats() const;

  Device& device_;
  EventLoop& loop_;
  const std::string status_;
  int timer_fd_ = -1;
  uint64_t interval_us_ = 0;
  std::vector<uint64_t> at_ping_;  // heartbeats when WATCHDOG=1 was last sent
  uint64_t last_ping_ns_ = 0;
  bool stalled_ = false;           // logged once per stall
  bool announced_ = false;         // STATUS= status_ sent (after READY's own STATUS=)
};

}  // namespace burst::burstd
