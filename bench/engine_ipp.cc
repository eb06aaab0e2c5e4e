// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Fixed amount of work for instruction counting with callgrind (see
// bench/ipp.sh): streams `packets` RDMA WRITE frames through the engines.
// Usage: engine_ipp MTU(1024|4096) VERIFY_ICRC(0|1) PACKETS rx|tx
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "bench/engine_loop.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s MTU VERIFY_ICRC PACKETS rx|tx\n", argv[0]);
    return 2;
  }
  const auto mtu = std::atoi(argv[1]) == 4096 ? burst::core::Mtu::k4096 : burst::core::Mtu::k1024;
  burst::bench::WriteStream s(mtu, std::atoi(argv[2]) != 0);
  const uint64_t want = std::strtoull(argv[3], nullptr, 10);
  for (int i = 0; i < 200; ++i) s.round();
  uint64_t done = 0;
  const int collect = argv[4][0] == 't' ? 2 : 1;
  while (done < want) done += s.round(collect);
  std::printf("packets %llu\n", static_cast<unsigned long long>(done));
  return 0;
}
