/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Which rdma-core release the libibverbs in this process is. The private ABI
// the provider binds to (IBVERBS_PRIVATE_34) says which functions exist, not
// that the structures of burst_verbs_abi.h have rdma-core 44's layout: the
// provider registers itself only with the libibverbs of the release it was
// written for, and says so otherwise (verbs_device.cc). rdma-core names its
// library libibverbs.so.1.<minor>.<release>.<patch> (1.14.44.0 for v44.0).
#pragma once

#include <cstdlib>
#include <cstring>

namespace burst::provider {

inline constexpr int kIbverbsRelease = 44;  // burst_verbs_abi.h's rdma-core

// The rdma-core release in a libibverbs file name ("/usr/lib/x86_64-linux-gnu/
// libibverbs.so.1.14.44.0" -> 44); -1 when the name does not say.
inline int ibverbs_release_from_path(const char* path) {
  const char* base = strrchr(path, '/');
  base = base != nullptr ? base + 1 : path;
  constexpr char kPrefix[] = "libibverbs.so.1.";
  if (strncmp(base, kPrefix, sizeof(kPrefix) - 1) != 0) return -1;
  const char* p = base + sizeof(kPrefix) - 1;
  char* end = nullptr;
  strtoul(p, &end, 10);  // the library's minor version
  if (end == p || *end != '.') return -1;
  p = end + 1;
  const unsigned long release = strtoul(p, &end, 10);
  if (end == p || (*end != '.' && *end != '\0') || release > 100000) return -1;
  return static_cast<int>(release);
}

}  // namespace burst::provider
