// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// A consumer's address-handle probing, as UCX's GID selection does it: many
// ibv_create_ah calls, most of which cannot succeed. Run under `burstctl run`
// against a burstd on a real netdev (loopback_test.sh):
//
//   verbs_ah_probe COUNT UNREACHABLE_IPV4
//
// For every GID index in use, an AH aimed at that very GID resolves (one-host
// loopback); COUNT AHs to UNREACHABLE_IPV4 (no route) fail with EHOSTUNREACH;
// COUNT with a GID index beyond the table and COUNT with an unsupported
// sgid/port fail with EINVAL, each at once. The test then counts burstd's log
// lines: one per kind of failure for this client, not one per call.
// Prints "PASS" and exits 0; a failed check prints "FAIL: ..." and exits 1.
#include <arpa/inet.h>
#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/provider/probe_util.h"

namespace {

ibv_ah_attr attr_to(const ibv_gid& dgid, uint8_t sgid_index, uint8_t port) {
  ibv_ah_attr a{};
  a.is_global = 1;
  a.grh.dgid = dgid;
  a.grh.sgid_index = sgid_index;
  a.grh.hop_limit = 64;
  a.port_num = port;
  return a;
}

// errno of a failed ibv_create_ah (0 if it succeeded; the AH is destroyed).
int try_ah(ibv_pd* pd, ibv_ah_attr a) {
  errno = 0;
  ibv_ah* ah = ibv_create_ah(pd, &a);
  if (ah != nullptr) {
    ibv_destroy_ah(ah);
    return 0;
  }
  return errno != 0 ? errno : -1;
}

}  // namespace

int main(int argc, char** argv) {
  CHECK(argc == 3, "usage: verbs_ah_probe COUNT UNREACHABLE_IPV4");
  const int count = std::atoi(argv[1]);
  ibv_gid far{};
  far.raw[10] = 0xff;
  far.raw[11] = 0xff;
  CHECK(inet_pton(AF_INET, argv[2], &far.raw[12]) == 1, "bad address %s", argv[2]);

  ibv_context* ctx = burst::test::open_burst0();
  ibv_pd* pd = ibv_alloc_pd(ctx);
  CHECK(pd != nullptr, "alloc_pd: %s", std::strerror(errno));
  ibv_port_attr port{};
  CHECK(ibv_query_port(ctx, 1, &port) == 0, "query_port");

  // Every used GID of the port is reachable from the port itself.
  int own = 0;
  for (int i = 0; i < port.gid_tbl_len; ++i) {
    ibv_gid g{};
    if (ibv_query_gid(ctx, 1, i, &g) != 0) continue;
    static const ibv_gid zero{};
    if (std::memcmp(&g, &zero, sizeof(g)) == 0) continue;
    const int e = try_ah(pd, attr_to(g, static_cast<uint8_t>(i), 1));
    CHECK(e == 0, "AH to own GID %d: %s", i, std::strerror(e));
    ++own;
  }
  CHECK(own >= 2, "only %d GIDs in use", own);

  for (int i = 0; i < count; ++i) {
    const int e = try_ah(pd, attr_to(far, 1, 1));
    CHECK(e == EHOSTUNREACH, "AH to %s: %s (want EHOSTUNREACH)", argv[2], std::strerror(e));
  }
  for (int i = 0; i < count; ++i) {
    const int e = try_ah(pd, attr_to(far, 255, 1));  // beyond the used GIDs
    CHECK(e == EINVAL, "AH with sgid_index 255: %s (want EINVAL)", std::strerror(e));
  }
  for (int i = 0; i < count; ++i) {
    const int e = try_ah(pd, attr_to(far, 1, 2));  // there is one port
    CHECK(e == EINVAL, "AH on port 2: %s (want EINVAL)", std::strerror(e));
  }
  ibv_dealloc_pd(pd);
  ibv_close_device(ctx);
  std::printf("PASS: %d own GIDs reachable, %d x 3 failed AHs with their errno\n", own, count);
  return 0;
}
