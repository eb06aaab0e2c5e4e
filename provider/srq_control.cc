// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Shared receive queues, created, modified, queried and destroyed in burstd
// over the context's control connection. An SRQ comes with its region (one
// receive ring on the burstd worker that owns the SRQ, mapped in
// shm_regions.cc); receives are posted in post_wr.cc.
//
// Threading: control path, any application thread (the control connection
// serialises the calls to burstd).
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "provider/native_mode.h"
#include "provider/provider.h"

namespace burst::provider {

ibv_srq* create_srq(ibv_pd* ibpd, ibv_srq_init_attr* attr) {
  Context* ctx = to_context(ibpd->context);
  auto* srq = alloc_object<Srq>();
  if (srq == nullptr) return nullptr;
  burst_ctl_create_srq_req req{};
  req.pd_handle = to_pd(ibpd)->handle;
  req.attr.max_wr = attr->attr.max_wr;
  req.attr.max_sge = attr->attr.max_sge;
  req.attr.srq_limit = attr->attr.srq_limit;
  req.user_handle = reinterpret_cast<uintptr_t>(&srq->srq);
  burst_ctl_create_srq_resp resp{};
  int fd = -1;
  int e = ctl_request_fd(ctx, BURST_CTL_OP_CREATE_SRQ, &req, &resp, -1, &fd);
  if (e == 0) {
    e = attach_srq_ring(ctx, srq, fd, resp.region_size, resp.worker);
    if (e == 0 && ctx->native) {  // the kernel shadow (native_mode.h)
      ibv_srq_attr k{};
      k.max_wr = resp.attr.max_wr;
      k.max_sge = resp.attr.max_sge;
      k.srq_limit = attr->attr.srq_limit;
      e = native_create_srq(ibpd->context->cmd_fd, req.user_handle, to_pd(ibpd)->khandle, k,
                            &srq->khandle);
      if (e != 0) detach_srq_ring(srq);
    }
    if (e != 0) (void)ctl_destroy(ctx, BURST_CTL_OP_DESTROY_SRQ, resp.srq_handle);
  }
  if (e != 0) {
    free(srq);
    return verb_error(e);
  }
  srq->handle = resp.srq_handle;
  srq->srqn = resp.srqn;
  srq->srq.handle = resp.srq_handle;
  attr->attr.max_wr = resp.attr.max_wr;
  attr->attr.max_sge = resp.attr.max_sge;
  return &srq->srq;
}

int destroy_srq(ibv_srq* ibsrq) {
  Srq* srq = to_srq(ibsrq);
  Context* ctx = to_context(ibsrq->context);
  const int e = ctl_destroy(ctx, BURST_CTL_OP_DESTROY_SRQ, srq->handle);
  if (e != 0) return e;  // EBUSY while QPs use it
  detach_srq_ring(srq);
  if (ctx->native) {
    if (int ke = native_destroy_srq(ibsrq->context->cmd_fd, ibsrq, srq->khandle); ke != 0) {
      // The kernel may still report events naming this ibv_srq: keep its memory.
      debug_log("burst: the kernel kept SRQ shadow %u: %s", srq->khandle, strerror(ke));
      return 0;
    }
  }
  free(srq);
  return 0;
}

int modify_srq(ibv_srq* ibsrq, ibv_srq_attr* attr, int mask) {
  burst_ctl_modify_srq_req req{};
  req.srq_handle = to_srq(ibsrq)->handle;
  req.attr_mask = static_cast<uint32_t>(mask);
  req.attr.max_wr = attr->max_wr;
  req.attr.srq_limit = attr->srq_limit;
  burst_ctl_empty_resp resp{};
  return ctl_request(to_context(ibsrq->context), BURST_CTL_OP_MODIFY_SRQ, &req, &resp);
}

int query_srq(ibv_srq* ibsrq, ibv_srq_attr* attr) {
  burst_ctl_handle_req req{};
  req.handle = to_srq(ibsrq)->handle;
  burst_ctl_query_srq_resp resp{};
  if (int e = ctl_request(to_context(ibsrq->context), BURST_CTL_OP_QUERY_SRQ, &req, &resp);
      e != 0) {
    return e;
  }
  attr->max_wr = resp.attr.max_wr;
  attr->max_sge = resp.attr.max_sge;
  attr->srq_limit = resp.attr.srq_limit;
  return 0;
}

}  // namespace burst::provider
