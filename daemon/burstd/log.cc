// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/log.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "daemon/burstd/words.h"

namespace burst::burstd {
namespace {

// Written once at start-up (main), read by every thread.
std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};

bool journal() {
  static const bool j = std::getenv("JOURNAL_STREAM") != nullptr;
  return j;
}

constexpr Word<LogLevel> kLevels[] = {{"error", LogLevel::kError},
                                      {"warning", LogLevel::kWarning},
                                      {"info", LogLevel::kInfo},
                                      {"debug", LogLevel::kDebug}};

}  // namespace

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }

bool parse_log_level(const std::string& s, LogLevel* out) { return find_word(kLevels, s, out); }

bool log_enabled(LogLevel level) {
  return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed);
}

void log(LogLevel level, const char* fmt, ...) {
  char line[2048];
  int n = journal() ? std::snprintf(line, sizeof(line), "<%d>", static_cast<int>(level))
          : level == LogLevel::kInfo
              ? std::snprintf(line, sizeof(line), "burstd: ")
              : std::snprintf(line, sizeof(line), "burstd: %s: ", word_of(kLevels, level, "?"));
  va_list ap;
  va_start(ap, fmt);
  const int m = std::vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
  va_end(ap);
  n = m < 0 ? n : std::min<int>(n + m, sizeof(line) - 2);
  line[n++] = '\n';
  const ssize_t w = write(STDERR_FILENO, line, static_cast<size_t>(n));
  (void)w;
}

}  // namespace burst::burstd
