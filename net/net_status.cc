// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "net/net_status.h"

#include <cstring>

namespace burst::net {

std::string errno_message(const std::string& what, int err) {
  return what + ": " + std::strerror(err);
}

}  // namespace burst::net
