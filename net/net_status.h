/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The error convention of net/: every fallible call returns a Status that
// carries an errno value (ENODEV, EHOSTUNREACH, EPERM, ...) and a message meant
// for an operator ("netdev 'eth7' not found"). Control plane only: building a
// Status allocates.
#pragma once

#include <string>
#include <utility>

namespace burst::net {

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(int err, std::string message) { return Status(err, std::move(message)); }

  bool ok() const { return code_ == 0; }
  int code() const { return code_; }  // errno value, 0 when ok
  const std::string& message() const { return message_; }

 private:
  Status(int code, std::string message) : code_(code), message_(std::move(message)) {}

  int code_ = 0;
  std::string message_;
};

// "what: strerror(err)".
std::string errno_message(const std::string& what, int err);

}  // namespace burst::net
