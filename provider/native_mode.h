/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Native mode: the provider on a burst device the kernel assistant (kmod/,
// abi/burst_kmod.h) registered with ib_core. libibverbs then opens the real
// /dev/infiniband/uverbsN as cmd_fd; the provider gets its context from the
// kernel (GET_CONTEXT: async_fd, completion vectors, burstd's socket) and, next
// to each PD, CQ, QP and SRQ it creates in burstd, a kernel "shadow" object
// through the uverbs write ABI (rdma/ib_user_verbs.h), so that libibverbs'
// own event machinery (completion channels, async_fd) works on kernel objects
// that burstd raises events on. Everything else still goes to burstd.
//
// A shadow's driver data (struct burst_kmod_shadow_udata) names the object the
// way burstd names it when it raises an event: the user_handle the provider
// gave burstd (the application's struct ibv_cq / ibv_qp / ibv_srq pointer),
// unique in the process across contexts, which burstd's per-connection
// handles are not.
//
// Error convention: 0 or an errno value.
#pragma once

#include <cstdint>

#include "provider/burst_verbs_abi.h"

namespace burst::provider {

// Whether cmd_fd is a real uverbs device rather than burstctl run's stand-in
// (abi/burst_device.h: /dev/full): a character device with another number.
bool cmd_fd_is_kernel(int cmd_fd);

// What GET_CONTEXT answers.
struct NativeContext {
  int async_fd = -1;
  int num_comp_vectors = 0;
  char socket[108] = {};  // burstd's control socket ("" when the module does not say)
};
// GET_CONTEXT on cmd_fd. EPROTO when the device answers without burst's
// driver data (another driver, or a module of another ABI version).
int native_get_context(int cmd_fd, NativeContext* out);

// Shadows. user_handle is the libibverbs object's address (what the kernel
// hands back in events) and also the shadow's driver data (see above).
int native_alloc_pd(int cmd_fd, uint64_t user_handle, uint32_t* kpd);
int native_dealloc_pd(int cmd_fd, uint32_t kpd);
int native_create_cq(int cmd_fd, uint64_t user_handle, uint32_t cqe, int channel_fd,
                     uint32_t comp_vector, uint32_t* kcq);
struct NativeQpArgs {
  uint64_t user_handle;
  uint32_t kpd, send_kcq, recv_kcq, ksrq;  // ksrq valid with has_srq
  bool has_srq;
  uint8_t qp_type;
  uint8_t sq_sig_all;
  ibv_qp_cap cap;
};
int native_create_qp(int cmd_fd, const NativeQpArgs& a, uint32_t* kqp);
int native_create_srq(int cmd_fd, uint64_t user_handle, uint32_t kpd, const ibv_srq_attr& attr,
                      uint32_t* ksrq);

// Destroys the shadow, then waits (as rdma-core's ibv_cmd_destroy_*) until the
// application acknowledged every event the kernel reported for it, so that
// none is read after the object is freed.
int native_destroy_cq(int cmd_fd, ibv_cq* cq, uint32_t kcq);
int native_destroy_qp(int cmd_fd, ibv_qp* qp, uint32_t kqp);
int native_destroy_srq(int cmd_fd, ibv_srq* srq, uint32_t ksrq);

}  // namespace burst::provider
