/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Shared by the verbs probes (plain libibverbs programs run under `burstctl
// run` by the provider tests): a check that prints where it failed and exits 1,
// and opening burst0.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define CHECK(cond, ...)                                         \
  do {                                                           \
    if (!(cond)) {                                               \
      std::fprintf(stderr, "FAIL: %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                         \
      std::fprintf(stderr, " [%s]\n", #cond);                    \
      std::exit(1);                                              \
    }                                                            \
  } while (0)

namespace burst::test {

// burst0's context; exits 1 (with the reason) when it is not there.
inline ibv_context* open_burst0() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  CHECK(list != nullptr, "ibv_get_device_list: %s", std::strerror(errno));
  ibv_device* dev = nullptr;
  for (int i = 0; i < n; ++i) {
    if (std::strcmp(ibv_get_device_name(list[i]), "burst0") == 0) dev = list[i];
  }
  CHECK(dev != nullptr, "no burst0 (run under burstctl run)");
  ibv_context* ctx = ibv_open_device(dev);
  CHECK(ctx != nullptr, "ibv_open_device: %s", std::strerror(errno));
  ibv_free_device_list(list);
  return ctx;
}

}  // namespace burst::test
