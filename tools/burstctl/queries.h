/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstctl status | devices | workers | counters | qps: what a running burstd
// reports over its control socket, as tables for people or JSON (--json) for
// tools. The socket is --socket PATH, else $BURST_SOCKET, else
// /run/burst/burstd.sock.
#pragma once

#include <cstdint>
#include <string>

namespace burst::tools {

struct StatusOptions {
  std::string socket;  // "" = default
  std::string socket_dir;  // devices without a socket: where to look (discover.h)
  bool json = false;
  int64_t worker = -1;  // counters: one worker, -1 = the sum over all
  bool all = false;     // counters table: zero counters too
};

enum class StatusView { kStatus, kDevices, kWorkers, kCounters, kQps };

// Prints the view on stdout. Returns 0, or 1 with the reason on stderr.
int show_status(StatusView view, const StatusOptions& o);

}  // namespace burst::tools
