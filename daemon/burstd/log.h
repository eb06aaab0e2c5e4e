/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// burstd's log: one line per event on stderr. Under systemd (JOURNAL_STREAM set)
// lines carry the sd-daemon priority prefix ("<3>", "<6>" ...) so the journal
// records their level; otherwise they read "burstd: [level: ]message".
// Never called per packet. Thread-safe (one write(2) per line).
#pragma once

#include <string>

namespace burst::burstd {

enum class LogLevel : int { kError = 3, kWarning = 4, kInfo = 6, kDebug = 7 };

void set_log_level(LogLevel level);
bool parse_log_level(const std::string& s, LogLevel* out);  // error|warning|info|debug
bool log_enabled(LogLevel level);

void log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#define BURSTD_LOG(level, ...)                                                         \
  do {                                                                                 \
    if (::burst::burstd::log_enabled(level)) ::burst::burstd::log(level, __VA_ARGS__); \
  } while (0)
#define BURSTD_ERROR(...) BURSTD_LOG(::burst::burstd::LogLevel::kError, __VA_ARGS__)
#define BURSTD_WARN(...) BURSTD_LOG(::burst::burstd::LogLevel::kWarning, __VA_ARGS__)
#define BURSTD_INFO(...) BURSTD_LOG(::burst::burstd::LogLevel::kInfo, __VA_ARGS__)
#define BURSTD_DEBUG(...) BURSTD_LOG(::burst::burstd::LogLevel::kDebug, __VA_ARGS__)

}  // namespace burst::burstd
