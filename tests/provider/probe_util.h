/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Shared by the verbs probes (plain libibverbs programs run under `burstctl
// run` by the provider tests): a check that prints where it failed and exits 1,
// opening burst0, and bringing an RC QP to RTS.
#pragma once

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstdint>
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

// ibv_modify_qp that must succeed; `what` names the step in the failure.
inline void modify_qp_or_die(ibv_qp* qp, ibv_qp_attr* a, int mask, const char* what) {
  const int e = ibv_modify_qp(qp, a, mask);
  CHECK(e == 0, "modify_qp %s: %s", what, std::strerror(e));
}

// What differs between the probes' RC connections (port 1, MTU 1024, GRH from
// sgid index 1 with hop limit 64 everywhere).
struct RcPath {
  int access = 0;                // INIT qp_access_flags
  uint32_t dest_qpn = 0;
  uint32_t rq_psn = 0;
  uint32_t sq_psn = 0;
  uint8_t min_rnr_timer = 12;
  uint8_t rd_atomic = 0;         // max_dest_rd_atomic and max_rd_atomic
  uint8_t timeout = 14;
  uint8_t retry_cnt = 7;
  uint8_t rnr_retry = 7;
};

// INIT, RTR (to `dgid`, p.dest_qpn), RTS; a failed step exits 1 ("modify_qp INIT: ...").
inline void rc_to_rts_or_die(ibv_qp* qp, const ibv_gid& dgid, const RcPath& p) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = p.access;
  modify_qp_or_die(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
                   "INIT");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = IBV_MTU_1024;
  a.dest_qp_num = p.dest_qpn;
  a.rq_psn = p.rq_psn;
  a.max_dest_rd_atomic = p.rd_atomic;
  a.min_rnr_timer = p.min_rnr_timer;
  a.ah_attr.port_num = 1;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = dgid;
  a.ah_attr.grh.sgid_index = 1;
  a.ah_attr.grh.hop_limit = 64;
  modify_qp_or_die(qp, &a,
                   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
                   "RTR");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = p.timeout;
  a.retry_cnt = p.retry_cnt;
  a.rnr_retry = p.rnr_retry;
  a.sq_psn = p.sq_psn;
  a.max_rd_atomic = p.rd_atomic;
  modify_qp_or_die(qp, &a,
                   IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
                       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
                   "RTS");
}

}  // namespace burst::test
