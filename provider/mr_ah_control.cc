// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Memory regions and address handles, registered and created in burstd over
// the context's control connection. A registration of shareable memory hands
// burstd the file behind it (mr_file.cc) so that burstd maps it (zero-copy);
// other memory is pinned by the kernel assistant when it is loaded and the pin
// goes to burstd the same way (mapped in place); without it burstd reaches
// the memory through this process's /proc/self/mem (cross-memory,
// docs/security.md). An address handle travels as the
// protocol's address (ah_to_wire, qp_control.cc).
//
// Threading: control path, any application thread (the control connection
// serialises the calls to burstd).
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "provider/provider.h"

namespace burst::provider {

ibv_mr* reg_mr(ibv_pd* ibpd, void* addr, size_t length, uint64_t hca_va, int access) {
  Context* ctx = to_context(ibpd->context);
  auto* mr = alloc_object<Mr>();
  if (mr == nullptr) return nullptr;
  burst_ctl_reg_mr_req req{};
  req.pd_handle = to_pd(ibpd)->handle;
  req.access = static_cast<uint32_t>(access);
  req.addr = reinterpret_cast<uintptr_t>(addr);
  req.length = length;
  req.iova = hca_va;
  // Shareable memory goes zero-copy when we hand burstd its file, other memory
  // when the kernel assistant pinned it (mr_file.cc).
  int file = -1;
  if (int e = memory_fd_for(addr, length, (access & IBV_ACCESS_LOCAL_WRITE) != 0, &file); e != 0) {
    free(mr);
    return verb_error(e);
  }
  if (file >= 0) req.flags |= BURST_CTL_MR_F_FILE;
  burst_ctl_reg_mr_resp resp{};
  const int e = ctl_request_fd(ctx, BURST_CTL_OP_REG_MR, &req, &resp, file, nullptr);
  if (file >= 0) close(file);
  if (e != 0) {
    free(mr);
    return verb_error(e);
  }
  mr->handle = resp.mr_handle;
  ibv_mr& m = mr->vmr.ibv_mr;
  m.context = ibpd->context;
  m.pd = ibpd;
  m.addr = addr;
  m.length = length;
  m.handle = resp.mr_handle;
  m.lkey = resp.lkey;
  m.rkey = resp.rkey;
  mr->vmr.mr_type = BURST_VERBS_MR_TYPE_MR;
  mr->vmr.access = access;
  debug_log("burst: MR %u: %zu bytes at %p, lkey 0x%x, %s", resp.mr_handle, length, addr, resp.lkey,
            resp.memory_mode == BURST_CTL_MEM_KMOD  ? "pinned"
            : resp.memory_mode == BURST_CTL_MEM_SHM ? "zero-copy"
                                                    : "cross-memory");
  return &m;
}

// ibv_reg_dmabuf_mr: the dma-buf's descriptor goes to burstd, which checks it,
// maps [offset, offset + length) and registers it zero-copy at iova
// (abi/burst_ctl_verbs.h). fd -1 is EBADF (as the kernel's dma_buf_get), which
// is what consumers probing for dma-buf support (NCCL, UCX) look for.
ibv_mr* reg_dmabuf_mr(ibv_pd* ibpd, uint64_t offset, size_t length, uint64_t iova, int fd,
                      int access) {
  if (fd < 0) return verb_error(EBADF);
  Context* ctx = to_context(ibpd->context);
  auto* mr = alloc_object<Mr>();
  if (mr == nullptr) return nullptr;
  burst_ctl_reg_dmabuf_mr_req req{};
  req.pd_handle = to_pd(ibpd)->handle;
  req.access = static_cast<uint32_t>(access);
  req.offset = offset;
  req.length = length;
  req.iova = iova;
  burst_ctl_reg_mr_resp resp{};
  if (int e = ctl_request_fd(ctx, BURST_CTL_OP_REG_DMABUF_MR, &req, &resp, fd, nullptr); e != 0) {
    free(mr);
    return verb_error(e);
  }
  mr->handle = resp.mr_handle;
  ibv_mr& m = mr->vmr.ibv_mr;
  m.context = ibpd->context;
  m.pd = ibpd;
  m.addr = reinterpret_cast<void*>(static_cast<uintptr_t>(offset));  // as libibverbs sets it
  m.length = length;
  m.handle = resp.mr_handle;
  m.lkey = resp.lkey;
  m.rkey = resp.rkey;
  mr->vmr.mr_type = BURST_VERBS_MR_TYPE_DMABUF_MR;
  mr->vmr.access = access;
  debug_log("burst: MR %u: dma-buf %llu+%zu at iova 0x%llx, lkey 0x%x", resp.mr_handle,
            static_cast<unsigned long long>(offset), length, static_cast<unsigned long long>(iova),
            resp.lkey);
  return &m;
}

// ibv_rereg_mr: libibverbs checked the flags and the new range and updates
// mr->pd, addr and length on success; the keys (new with a new translation)
// are set here. burstd maps the range again for a new translation or new
// access rights, so the file behind it goes along as with ibv_reg_mr.
int rereg_mr(verbs_mr* vmr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  auto* mr = reinterpret_cast<Mr*>(vmr);
  ibv_mr& m = vmr->ibv_mr;
  if (flags & ~(IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
                IBV_REREG_MR_CHANGE_ACCESS)) {
    return EINVAL;
  }
  if (vmr->mr_type == BURST_VERBS_MR_TYPE_DMABUF_MR) return EOPNOTSUPP;  // burstd says the same
  const bool translation = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0;
  burst_ctl_rereg_mr_req req{};
  req.mr_handle = mr->handle;
  req.flags = static_cast<uint32_t>(flags);
  if (flags & IBV_REREG_MR_CHANGE_PD) {
    if (pd == nullptr || pd->context != m.context) return EINVAL;
    req.pd_handle = to_pd(pd)->handle;
  }
  const int new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? access : vmr->access;
  req.access = static_cast<uint32_t>(new_access);
  void* range = translation ? addr : m.addr;
  req.addr = reinterpret_cast<uintptr_t>(range);
  req.length = translation ? length : m.length;
  req.iova = req.addr;  // as ibv_reg_mr: the address is the iova
  int file = -1;
  if (int e = memory_fd_for(range, req.length, (new_access & IBV_ACCESS_LOCAL_WRITE) != 0, &file);
      e != 0) {
    errno = e;
    return e;
  }
  if (file >= 0) req.mr_flags |= BURST_CTL_MR_F_FILE;
  burst_ctl_reg_mr_resp resp{};
  const int e = ctl_request_fd(to_context(m.context), BURST_CTL_OP_REREG_MR, &req, &resp, file,
                               nullptr);
  if (file >= 0) close(file);
  if (e != 0) {
    errno = e;
    return e;
  }
  m.lkey = resp.lkey;
  m.rkey = resp.rkey;
  vmr->access = new_access;
  return 0;
}

int dereg_mr(verbs_mr* vmr) {
  auto* mr = reinterpret_cast<Mr*>(vmr);
  const int e = ctl_destroy(to_context(vmr->ibv_mr.context), BURST_CTL_OP_DEREG_MR, mr->handle);
  if (e == 0) free(mr);
  return e;
}

ibv_ah* create_ah(ibv_pd* ibpd, ibv_ah_attr* attr) {
  burst_ctl_create_ah_req req{};
  req.pd_handle = to_pd(ibpd)->handle;
  if (int e = ah_to_wire(*attr, &req.ah); e != 0) return verb_error(e);
  auto* ah = alloc_object<Ah>();
  if (ah == nullptr) return nullptr;
  burst_ctl_create_ah_resp resp{};
  if (int e = ctl_request(to_context(ibpd->context), BURST_CTL_OP_CREATE_AH, &req, &resp); e != 0) {
    free(ah);
    return verb_error(e);
  }
  ah->handle = resp.ah_handle;
  ah->ah.context = ibpd->context;
  ah->ah.pd = ibpd;
  ah->ah.handle = resp.ah_handle;
  return &ah->ah;
}

int destroy_ah(ibv_ah* ibah) {
  auto* ah = reinterpret_cast<Ah*>(ibah);
  const int e = ctl_destroy(to_context(ibah->context), BURST_CTL_OP_DESTROY_AH, ah->handle);
  if (e == 0) free(ah);
  return e;
}

}  // namespace burst::provider
