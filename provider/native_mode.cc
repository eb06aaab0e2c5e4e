// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Native mode (native_mode.h): the uverbs write commands the provider sends to
// the kernel assistant's ib_device, as the kernel's ib_uverbs_write() reads
// them (legacy, non-extended commands): the header, the core command, the
// driver data; the core response and the driver data out at `response`
// (in_words / out_words count 32-bit words of the whole command / response).
//
// Threading: control path, any application thread; each command is one
// write() on cmd_fd (the kernel serialises them).
#include <pthread.h>
#include <rdma/ib_user_verbs.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "abi/burst_device.h"
#include "abi/burst_kmod.h"
#include "provider/native_mode.h"
#include "provider/provider.h"

namespace burst::provider {
namespace {

static_assert(BURST_KMOD_UVERBS_ABI_VERSION == BURST_UVERBS_ABI_VERSION,
              "the module's ib_device must carry the uverbs ABI version the provider claims");
static_assert(sizeof(ib_uverbs_create_cq) == 32 && sizeof(ib_uverbs_create_qp) == 56 &&
                  sizeof(ib_uverbs_create_srq) == 32 && sizeof(ib_uverbs_alloc_pd) == 8 &&
                  sizeof(ib_uverbs_get_context) == 8,
              "core command sizes as the kernel's write handlers expect them (req_size)");
static_assert(sizeof(ib_uverbs_get_context_resp) == 8 && sizeof(ib_uverbs_create_cq_resp) == 8 &&
                  sizeof(ib_uverbs_create_qp_resp) == 32 &&
                  sizeof(ib_uverbs_create_srq_resp) == 16 && sizeof(ib_uverbs_alloc_pd_resp) == 4,
              "core response sizes (resp_size): driver data out follows them");
static_assert(sizeof(burst_kmod_context_resp) % 4 == 0 && sizeof(burst_kmod_shadow_udata) == 8);

// One write command. `core` starts with the `response` pointer when the
// command has a response (the caller sets it to resp); resp_len counts the
// core response and the driver data out behind it.
int uverbs_write(int fd, uint32_t command, const void* core, size_t core_len, const void* udata,
                 size_t udata_len, size_t resp_len) {
  alignas(8) uint8_t buf[128];
  const size_t total = sizeof(ib_uverbs_cmd_hdr) + core_len + udata_len;
  if (total > sizeof(buf) || total % 4 != 0 || resp_len % 4 != 0) return EINVAL;
  ib_uverbs_cmd_hdr hdr{};
  hdr.command = command;
  hdr.in_words = static_cast<uint16_t>(total / 4);
  hdr.out_words = static_cast<uint16_t>(resp_len / 4);
  memcpy(buf, &hdr, sizeof(hdr));
  memcpy(buf + sizeof(hdr), core, core_len);
  if (udata_len != 0) memcpy(buf + sizeof(hdr) + core_len, udata, udata_len);
  const ssize_t n = write(fd, buf, total);
  if (n < 0) return errno;
  return static_cast<size_t>(n) == total ? 0 : EIO;
}

uint64_t ptr(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// A destroy the kernel refused with EIO: the device went away (burstd's
// registration closed, the context disassociated) and took the shadow with it.
// As rdma-core with RDMAV_ALLOW_DISASSOC_DESTROY: the object is gone, nothing
// more will be reported for it.
bool disassociated(int e) { return e == EIO; }

// Waits until the application acknowledged `reported` events (*completed is
// bumped by ibv_ack_*_events under mu, which signals cond).
void wait_acked(pthread_mutex_t* mu, pthread_cond_t* cond, const uint32_t* completed,
                uint32_t reported, const uint32_t* completed2 = nullptr, uint32_t reported2 = 0) {
  pthread_mutex_lock(mu);
  while (*completed != reported || (completed2 != nullptr && *completed2 != reported2)) {
    pthread_cond_wait(cond, mu);
  }
  pthread_mutex_unlock(mu);
}

}  // namespace

bool cmd_fd_is_kernel(int cmd_fd) {
  struct stat st {};
  if (cmd_fd < 0 || fstat(cmd_fd, &st) != 0 || !S_ISCHR(st.st_mode)) return false;
  return st.st_rdev != makedev(BURST_UVERBS_CDEV_MAJOR, BURST_UVERBS_CDEV_MINOR);
}

int native_get_context(int cmd_fd, NativeContext* out) {
  // The core response, then the module's driver data (a flexible array member
  // cannot be followed by another in one struct: one buffer, copied out).
  alignas(8) uint8_t resp[sizeof(ib_uverbs_get_context_resp) + sizeof(burst_kmod_context_resp)] = {};
  // async_fd stays ~0 unless a kernel answered (a write that "succeeds" on
  // some other character device must not make us close descriptor 0).
  constexpr uint32_t kNoFd = ~0u;
  memcpy(resp, &kNoFd, sizeof(kNoFd));
  ib_uverbs_get_context cmd{};
  cmd.response = ptr(resp);
  if (int e = uverbs_write(cmd_fd, IB_USER_VERBS_CMD_GET_CONTEXT, &cmd, sizeof(cmd), nullptr, 0,
                           sizeof(resp));
      e != 0) {
    return e;
  }
  ib_uverbs_get_context_resp core{};
  burst_kmod_context_resp drv{};
  memcpy(&core, resp, sizeof(core));
  memcpy(&drv, resp + sizeof(core), sizeof(drv));
  if (core.async_fd == kNoFd) {
    debug_log("burst: cmd_fd %d took GET_CONTEXT without answering: not a uverbs device", cmd_fd);
    return EPROTO;
  }
  const int async_fd = static_cast<int>(core.async_fd);
  if (drv.abi_version != BURST_KMOD_ABI_VERSION) {
    debug_log("burst: the kernel device answers GET_CONTEXT with ABI %u, expected %u",
              drv.abi_version, BURST_KMOD_ABI_VERSION);
    close(async_fd);  // the async-event file the kernel made for us
    return EPROTO;
  }
  out->async_fd = async_fd;
  out->num_comp_vectors = static_cast<int>(core.num_comp_vectors);
  memcpy(out->socket, drv.socket_path, sizeof(out->socket));
  out->socket[sizeof(out->socket) - 1] = '\0';
  return 0;
}

int native_alloc_pd(int cmd_fd, uint64_t user_handle, uint32_t* kpd) {
  ib_uverbs_alloc_pd_resp resp{};
  ib_uverbs_alloc_pd cmd{};
  cmd.response = ptr(&resp);
  const burst_kmod_shadow_udata udata{user_handle};
  const int e = uverbs_write(cmd_fd, IB_USER_VERBS_CMD_ALLOC_PD, &cmd, sizeof(cmd), &udata,
                             sizeof(udata), sizeof(resp));
  if (e == 0) *kpd = resp.pd_handle;
  return e;
}

int native_dealloc_pd(int cmd_fd, uint32_t kpd) {
  ib_uverbs_dealloc_pd cmd{};
  cmd.pd_handle = kpd;
  const int e = uverbs_write(cmd_fd, IB_USER_VERBS_CMD_DEALLOC_PD, &cmd, sizeof(cmd), nullptr, 0, 0);
  return disassociated(e) ? 0 : e;
}

int native_create_cq(int cmd_fd, uint64_t user_handle, uint32_t cqe, int channel_fd,
                     uint32_t comp_vector, uint32_t* kcq) {
  ib_uverbs_create_cq_resp resp{};
  ib_uverbs_create_cq cmd{};
  cmd.response = ptr(&resp);
  cmd.user_handle = user_handle;
  cmd.cqe = cqe;
  cmd.comp_vector = comp_vector;
  cmd.comp_channel = channel_fd;  // -1: none
  const burst_kmod_shadow_udata udata{user_handle};
  const int e = uverbs_write(cmd_fd, IB_USER_VERBS_CMD_CREATE_CQ, &cmd, sizeof(cmd), &udata,
                             sizeof(udata), sizeof(resp));
  if (e == 0) *kcq = resp.cq_handle;
  return e;
}

int native_create_qp(int cmd_fd, const NativeQpArgs& a, uint32_t* kqp) {
  ib_uverbs_create_qp_resp resp{};
  ib_uverbs_create_qp cmd{};
  cmd.response = ptr(&resp);
  cmd.user_handle = a.user_handle;
  cmd.pd_handle = a.kpd;
  cmd.send_cq_handle = a.send_kcq;
  cmd.recv_cq_handle = a.recv_kcq;
  cmd.srq_handle = a.has_srq ? a.ksrq : 0;
  cmd.max_send_wr = a.cap.max_send_wr;
  cmd.max_recv_wr = a.has_srq ? 0 : a.cap.max_recv_wr;
  cmd.max_send_sge = a.cap.max_send_sge;
  cmd.max_recv_sge = a.has_srq ? 0 : a.cap.max_recv_sge;
  cmd.max_inline_data = a.cap.max_inline_data;
  cmd.sq_sig_all = a.sq_sig_all;
  cmd.qp_type = a.qp_type;
  cmd.is_srq = a.has_srq ? 1 : 0;
  const burst_kmod_shadow_udata udata{a.user_handle};
  const int e = uverbs_write(cmd_fd, IB_USER_VERBS_CMD_CREATE_QP, &cmd, sizeof(cmd), &udata,
                             sizeof(udata), sizeof(resp));
  if (e == 0) *kqp = resp.qp_handle;
  return e;
}

int native_create_srq(int cmd_fd, uint64_t user_handle, uint32_t kpd, const ibv_srq_attr& attr,
                      uint32_t* ksrq) {
  ib_uverbs_create_srq_resp resp{};
  ib_uverbs_create_srq cmd{};
  cmd.response = ptr(&resp);
  cmd.user_handle = user_handle;
  cmd.pd_handle = kpd;
  cmd.max_wr = attr.max_wr;
  cmd.max_sge = attr.max_sge;
  cmd.srq_limit = attr.srq_limit;
  const burst_kmod_shadow_udata udata{user_handle};
  const int e = uverbs_write(cmd_fd, IB_USER_VERBS_CMD_CREATE_SRQ, &cmd, sizeof(cmd), &udata,
                             sizeof(udata), sizeof(resp));
  if (e == 0) *ksrq = resp.srq_handle;
  return e;
}

int native_destroy_cq(int cmd_fd, ibv_cq* cq, uint32_t kcq) {
  ib_uverbs_destroy_cq_resp resp{};
  ib_uverbs_destroy_cq cmd{};
  cmd.response = ptr(&resp);
  cmd.cq_handle = kcq;
  const int e =
      uverbs_write(cmd_fd, IB_USER_VERBS_CMD_DESTROY_CQ, &cmd, sizeof(cmd), nullptr, 0, sizeof(resp));
  if (e != 0) return disassociated(e) ? 0 : e;
  wait_acked(&cq->mutex, &cq->cond, &cq->comp_events_completed, resp.comp_events_reported,
             &cq->async_events_completed, resp.async_events_reported);
  return 0;
}

int native_destroy_qp(int cmd_fd, ibv_qp* qp, uint32_t kqp) {
  ib_uverbs_destroy_qp_resp resp{};
  ib_uverbs_destroy_qp cmd{};
  cmd.response = ptr(&resp);
  cmd.qp_handle = kqp;
  const int e =
      uverbs_write(cmd_fd, IB_USER_VERBS_CMD_DESTROY_QP, &cmd, sizeof(cmd), nullptr, 0, sizeof(resp));
  if (e != 0) return disassociated(e) ? 0 : e;
  wait_acked(&qp->mutex, &qp->cond, &qp->events_completed, resp.events_reported);
  return 0;
}

int native_destroy_srq(int cmd_fd, ibv_srq* srq, uint32_t ksrq) {
  ib_uverbs_destroy_srq_resp resp{};
  ib_uverbs_destroy_srq cmd{};
  cmd.response = ptr(&resp);
  cmd.srq_handle = ksrq;
  const int e = uverbs_write(cmd_fd, IB_USER_VERBS_CMD_DESTROY_SRQ, &cmd, sizeof(cmd), nullptr, 0,
                             sizeof(resp));
  if (e != 0) return disassociated(e) ? 0 : e;
  wait_acked(&srq->mutex, &srq->cond, &srq->events_completed, resp.events_reported);
  return 0;
}

}  // namespace burst::provider
