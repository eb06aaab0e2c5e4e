/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// One error convention for the control plane of every datapath backend: errno
// value + one message that names the fix. Never used on the fast path.
#pragma once

#include <string>

namespace burst::datapath {

struct Error {
  int code = 0;  // positive errno value, 0 = no error
  std::string message;
  explicit operator bool() const { return code != 0; }
};

}  // namespace burst::datapath
