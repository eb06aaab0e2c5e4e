// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "port/reflect_port.h"

#include <cstring>

namespace burst::port {

void ReflectPort::reflect() {
  datapath::Frame in[kMaxBurst];
  const uint32_t n = far().rx_burst(in, kMaxBurst);
  if (n == 0) return;
  datapath::Frame out[kMaxBurst];
  const uint32_t got = far().tx_alloc(out, n);
  for (uint32_t i = 0; i < got; ++i) {
    std::memcpy(out[i].data, in[i].data, in[i].len);
    out[i].len = in[i].len;
  }
  const uint32_t sent = far().tx_burst(out, got);
  if (sent < got) far().tx_free(out + sent, got - sent);
  far().rx_release(in, n);
  reflected_ += sent;
  reflect_drops_ += n - sent;
}

}  // namespace burst::port
