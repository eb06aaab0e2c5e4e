// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Protection domains and completion queues, created in burstd over the
// context's control connection. A CQ comes with its ring (a memfd burstd
// sends with the answer, mapped in shm_regions.cc; polled in poll_cq.cc) and,
// with a completion channel, hands burstd the channel's socket (from the
// preload shim, cq_events.cc) so that burstd can write completion events into it.
// In native mode (native_mode.h) each PD and CQ also gets its kernel shadow;
// the channel is the kernel's and burstd raises a CQ's events through the
// module (BURST_CTL_CQ_F_KMOD).
// ibv_resize_cq (RESIZE_CQ) gets a new ring holding what was not polled yet.
//
// Threading: control path, any application thread (the control connection
// serialises the calls to burstd).
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "provider/native_mode.h"
#include "provider/provider.h"

namespace burst::provider {
namespace {

// CREATE_CQ in burstd; nullptr with errno on failure.
Cq* make_cq(ibv_context* ibctx, int cqe, ibv_comp_channel* channel, int comp_vector) {
  Context* ctx = to_context(ibctx);
  if (cqe < 1 || static_cast<uint32_t>(cqe) > ctx->limits.max_cqe || comp_vector < 0 ||
      comp_vector >= ibctx->num_comp_vectors) {
    return verb_error(EINVAL);
  }
  int peer = -1;
  if (channel != nullptr && !ctx->native) {
    // burstd writes completion events into the channel through this socket.
    peer = cq_channel_peer(channel);
    if (peer < 0) {
      // (errno from the dup, or no shim)
      debug_log(
          "burst: completion channel fd %d is not one of burst's (run the application "
          "under `burstctl run`, which preloads the shim that creates them)",
          channel->fd);
      return verb_error(EOPNOTSUPP);
    }
  }
  auto* cq = alloc_object<Cq>();
  if (cq == nullptr) return nullptr;
  cq->channel_peer = peer;
  burst_ctl_create_cq_req req{};
  req.cqe = static_cast<uint32_t>(cqe);
  req.flags = peer >= 0 ? BURST_CTL_CQ_F_CHANNEL : 0;
  if (ctx->native && channel != nullptr) req.flags = BURST_CTL_CQ_F_KMOD;
  req.user_handle = reinterpret_cast<uintptr_t>(&cq->vcq.cq);
  burst_ctl_create_cq_resp resp{};
  int fd = -1;
  int e = ctl_request_fd(ctx, BURST_CTL_OP_CREATE_CQ, &req, &resp, peer, &fd);
  if (e == 0) {
    e = attach_cq_ring(ctx, cq, fd, resp.region_size);
    if (e == 0 && ctx->native) {
      e = native_create_cq(ibctx->cmd_fd, req.user_handle, resp.cqe,
                           channel != nullptr ? channel->fd : -1,
                           static_cast<uint32_t>(comp_vector), &cq->khandle);
      if (e != 0) detach_cq_ring(ctx, cq);
    }
    if (e != 0) (void)ctl_destroy(ctx, BURST_CTL_OP_DESTROY_CQ, resp.cq_handle);
  }
  if (e != 0) {
    if (peer >= 0) close(peer);
    free(cq);
    return verb_error(e);
  }
  cq->handle = resp.cq_handle;
  ibv_cq& c = cq->vcq.cq;
  c.context = ibctx;
  c.handle = resp.cq_handle;
  c.cqe = static_cast<int>(resp.cqe);
  return cq;
}

}  // namespace

ibv_pd* alloc_pd(ibv_context* ibctx) {
  auto* pd = alloc_object<Pd>();
  if (pd == nullptr) return nullptr;
  burst_ctl_alloc_pd_req req{};
  burst_ctl_alloc_pd_resp resp{};
  Context* ctx = to_context(ibctx);
  int e = ctl_request(ctx, BURST_CTL_OP_ALLOC_PD, &req, &resp);
  if (e == 0 && ctx->native) {
    e = native_alloc_pd(ibctx->cmd_fd, reinterpret_cast<uintptr_t>(&pd->pd), &pd->khandle);
    if (e != 0) (void)ctl_destroy(ctx, BURST_CTL_OP_DEALLOC_PD, resp.pd_handle);
  }
  if (e != 0) {
    free(pd);
    return verb_error(e);
  }
  pd->handle = resp.pd_handle;
  pd->pd.context = ibctx;
  pd->pd.handle = resp.pd_handle;
  return &pd->pd;
}

int dealloc_pd(ibv_pd* ibpd) {
  Pd* pd = to_pd(ibpd);
  Context* ctx = to_context(ibpd->context);
  const int e = ctl_destroy(ctx, BURST_CTL_OP_DEALLOC_PD, pd->handle);
  if (e != 0) return e;  // EBUSY while QPs use it
  if (ctx->native) {
    if (int ke = native_dealloc_pd(ibpd->context->cmd_fd, pd->khandle); ke != 0) {
      debug_log("burst: the kernel kept PD shadow %u: %s", pd->khandle, strerror(ke));
    }
  }
  free(pd);
  return 0;
}

ibv_cq* create_cq(ibv_context* ibctx, int cqe, ibv_comp_channel* channel, int comp_vector) {
  // libibverbs (ibv_create_cq) fills channel, cq_context, the event counters
  // and the mutex/cond afterwards.
  Cq* cq = make_cq(ibctx, cqe, channel, comp_vector);
  return cq != nullptr ? &cq->vcq.cq : nullptr;
}

ibv_cq_ex* create_cq_ex(ibv_context* ibctx, ibv_cq_init_attr_ex* attr) {
  // Basics only: standard work-completion fields, no flags, no parent domain.
  constexpr uint64_t kWcFlags = IBV_WC_STANDARD_FLAGS;
  if (attr->comp_mask & ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS)) {
    return verb_error(EOPNOTSUPP);
  }
  if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) && attr->flags != 0) {
    return verb_error(EOPNOTSUPP);
  }
  if (attr->wc_flags & ~kWcFlags) return verb_error(EOPNOTSUPP);
  if (attr->cqe > to_context(ibctx)->limits.max_cqe) return verb_error(EINVAL);
  Cq* cq = make_cq(ibctx, static_cast<int>(attr->cqe), attr->channel,
                   static_cast<int>(attr->comp_vector));
  if (cq == nullptr) return nullptr;
  // libibverbs' wrapper around this op (__lib_ibv_create_cq_ex) does what
  // ibv_create_cq does for a plain CQ: context, the channel's reference,
  // cq_context, event counters, mutex and cond (verbs_init_cq). The channel's
  // peer went to burstd above: events flow as for a plain CQ.
  ibv_cq_ex& x = cq->vcq.cq_ex;
  x.comp_mask = 0;
  init_cq_ex_ops(cq);
  return &x;
}

// RESIZE_CQ: burstd copies the completions not polled yet into a new ring and
// switches its workers to it; the CQ's locks keep polls (and arm requests) off
// the old ring until the new one is in place.
int resize_cq(ibv_cq* ibcq, int cqe) {
  Cq* cq = to_cq(ibcq);
  Context* ctx = to_context(ibcq->context);
  if (cqe < 1 || static_cast<uint32_t>(cqe) > ctx->limits.max_cqe) return EINVAL;
  if (context_dead(ctx)) return EIO;
  burst_ctl_resize_cq_req req{};
  req.cq_handle = cq->handle;
  req.cqe = static_cast<uint32_t>(cqe);
  burst_ctl_resize_cq_resp resp{};
  int fd = -1;
  pthread_spin_lock(&cq->lock);
  pthread_spin_lock(&cq->arm_lock);
  int e = ctl_request_fd(ctx, BURST_CTL_OP_RESIZE_CQ, &req, &resp, -1, &fd);
  if (e == 0) e = replace_cq_ring(cq, fd, resp.region_size);
  if (e == 0) ibcq->cqe = static_cast<int>(resp.cqe);
  pthread_spin_unlock(&cq->arm_lock);
  pthread_spin_unlock(&cq->lock);
  return e;
}

int destroy_cq(ibv_cq* ibcq) {
  Cq* cq = to_cq(ibcq);
  Context* ctx = to_context(ibcq->context);
  const int e = ctl_destroy(ctx, BURST_CTL_OP_DESTROY_CQ, cq->handle);
  if (e != 0) return e;  // EBUSY while QPs use it
  detach_cq_ring(ctx, cq);
  if (ctx->native) {
    if (int ke = native_destroy_cq(ibcq->context->cmd_fd, ibcq, cq->khandle); ke != 0) {
      // The kernel may still report events naming this ibv_cq: keep its memory.
      debug_log("burst: the kernel kept CQ shadow %u: %s", cq->khandle, strerror(ke));
      return 0;
    }
  }
  free(cq);
  return 0;
}

}  // namespace burst::provider
