/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The service manager's notification protocol (systemd Type=notify): READY=1,
// STATUS=..., WATCHDOG=1, STOPPING=1. Through libsystemd's sd_notify when
// burstd is built with it, otherwise a datagram to $NOTIFY_SOCKET written here
// (the protocol is one AF_UNIX datagram of "KEY=VALUE\n" lines). Without
// $NOTIFY_SOCKET (burstd started by hand) every call does nothing.
//
// Threading: the control thread.
#pragma once

#include <cstdint>
#include <string>

namespace burst::burstd {

void notify(const std::string& state);
// The watchdog interval systemd asked for (WatchdogSec=, in $WATCHDOG_USEC for
// this pid), 0 when there is none.
uint64_t watchdog_interval_us();

}  // namespace burst::burstd
