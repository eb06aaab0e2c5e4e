// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Queue pairs (RC and UD), created, transitioned, queried and destroyed in
// burstd over the context's control connection. The attributes travel 1:1
// (burst_ctl_qp_attr carries IBV_* values, see burst_ctl_proto.h); RoCE
// addresses always carry a GRH, and a zero destination MAC asks burstd to
// resolve it. Each QP comes with its region (SQ and RQ rings, mapped in
// shm_regions.cc; posted to in post_wr.cc).
//
// Threading: control path, any application thread (the control connection
// serialises the calls to burstd).
#include <pthread.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "abi/burst_device.h"
#include "provider/native_mode.h"
#include "provider/provider.h"

namespace burst::provider {
namespace {

constexpr uint16_t kUntagged = 0xffff;  // burst_ctl_ah.vlan_id
constexpr uint32_t kPsnMask = 0xffffff;

bool same_context(ibv_context* ctx, ibv_cq* cq) { return cq != nullptr && cq->context == ctx; }

// What make_qp is asked for (ibv_qp_init_attr and ibv_qp_init_attr_ex alike).
struct QpArgs {
  ibv_pd* pd;
  ibv_qp_type type;
  ibv_cq* send_cq;
  ibv_cq* recv_cq;
  ibv_srq* srq;
  void* qp_context;
  int sq_sig_all;
};

// The checks made before asking burstd: 0 or an errno value.
int check_qp_args(const QpArgs& a) {
  ibv_context* ibctx = a.pd->context;
  const ibv_qp_type type = a.type;
  if (type == IBV_QPT_UC || type == IBV_QPT_RAW_PACKET || type == IBV_QPT_XRC_SEND ||
      type == IBV_QPT_XRC_RECV || type == IBV_QPT_DRIVER) {
    debug_log("burst: QP type %d is not supported (RC and UD are)", static_cast<int>(type));
    return EOPNOTSUPP;
  }
  if (type != IBV_QPT_RC && type != IBV_QPT_UD) return EINVAL;
  if (a.srq != nullptr && a.srq->context != ibctx) return EINVAL;
  if (!same_context(ibctx, a.send_cq) || !same_context(ibctx, a.recv_cq)) return EINVAL;
  return 0;
}

// The five queue capacities between ibv_qp_cap and the protocol's
// burst_ctl_qp_cap (the same names and order; either direction).
template <typename To, typename From>
To convert_cap(const From& f) {
  return To{.max_send_wr = f.max_send_wr,
            .max_recv_wr = f.max_recv_wr,
            .max_send_sge = f.max_send_sge,
            .max_recv_sge = f.max_recv_sge,
            .max_inline_data = f.max_inline_data};
}

// Every ibv_qp field of a QP burstd created (create_qp_ex is called by
// applications directly; ibv_create_qp's wrapper sets the same values again).
void init_ibv_qp(Qp* qp, const QpArgs& a, const burst_ctl_create_qp_resp& resp) {
  qp->handle = resp.qp_handle;
  qp->worker = resp.worker;
  qp->sq_sig_all = a.sq_sig_all != 0;
  qp->vqp.comp_mask = 0;  // no ibv_qp_ex: ibv_qp_to_qp_ex() returns NULL
  ibv_qp& q = qp->vqp.qp;
  q = ibv_qp{.context = a.pd->context,
             .qp_context = a.qp_context,
             .pd = a.pd,
             .send_cq = a.send_cq,
             .recv_cq = a.recv_cq,
             .srq = a.srq,
             .handle = resp.qp_handle,
             .qp_num = resp.qpn,
             .state = IBV_QPS_RESET,
             .qp_type = a.type,
             .events_completed = 0};
  pthread_mutex_init(&q.mutex, nullptr);
  pthread_cond_init(&q.cond, nullptr);
}

// Native mode: the QP's kernel shadow, on the shadows of its PD, CQs and SRQ.
int make_qp_shadow(const QpArgs& a, uint64_t user_handle, const burst_ctl_qp_cap& cap,
                   uint32_t* kqp) {
  NativeQpArgs n{};
  n.user_handle = user_handle;
  n.kpd = to_pd(a.pd)->khandle;
  n.send_kcq = to_cq(a.send_cq)->khandle;
  n.recv_kcq = to_cq(a.recv_cq)->khandle;
  n.has_srq = a.srq != nullptr;
  n.ksrq = a.srq != nullptr ? to_srq(a.srq)->khandle : 0;
  n.qp_type = static_cast<uint8_t>(a.type);
  n.sq_sig_all = a.sq_sig_all != 0 ? 1 : 0;
  n.cap = convert_cap<ibv_qp_cap>(cap);
  return native_create_qp(a.pd->context->cmd_fd, n, kqp);
}

// CREATE_QP in burstd, with its rings mapped. Fills every ibv_qp field and cap
// with what the QP provides. nullptr with errno on failure.
Qp* make_qp(const QpArgs& a, ibv_qp_cap* cap) {
  if (int e = check_qp_args(a); e != 0) return verb_error(e);
  Context* ctx = to_context(a.pd->context);
  auto* qp = alloc_object<Qp>();
  if (qp == nullptr) return nullptr;
  burst_ctl_create_qp_req req{};
  req.pd_handle = to_pd(a.pd)->handle;
  req.send_cq_handle = to_cq(a.send_cq)->handle;
  req.recv_cq_handle = to_cq(a.recv_cq)->handle;
  req.qp_type = static_cast<uint8_t>(a.type);
  req.sq_sig_all = a.sq_sig_all != 0 ? 1 : 0;
  req.cap = convert_cap<burst_ctl_qp_cap>(*cap);
  req.user_handle = reinterpret_cast<uintptr_t>(&qp->vqp.qp);
  req.srq_handle = a.srq != nullptr ? to_srq(a.srq)->handle : 0;
  burst_ctl_create_qp_resp resp{};
  int fd = -1;
  int e = ctl_request_fd(ctx, BURST_CTL_OP_CREATE_QP, &req, &resp, -1, &fd);
  if (e == 0) {
    qp->vqp.qp.qp_num = resp.qpn;
    qp->vqp.qp.srq = a.srq;  // attach_qp_rings: no RQ ring on an SRQ
    e = attach_qp_rings(ctx, qp, fd, resp.region_size, resp.worker);
    if (e == 0 && ctx->native) {
      e = make_qp_shadow(a, req.user_handle, resp.cap, &qp->khandle);
      if (e != 0) detach_qp_rings(qp);
    }
    if (e != 0) (void)ctl_destroy(ctx, BURST_CTL_OP_DESTROY_QP, resp.qp_handle);
  }
  if (e != 0) {
    free(qp);
    return verb_error(e);  // EINVAL for caps beyond the device limits (ibv_query_device)
  }
  init_ibv_qp(qp, a, resp);
  // Work-request counts come back rounded up to the ring size, like a real device's.
  *cap = convert_cap<ibv_qp_cap>(resp.cap);
  debug_log("burst: QP %u (%s) on worker %u", resp.qpn, a.type == IBV_QPT_RC ? "RC" : "UD",
            resp.worker);
  return qp;
}

}  // namespace

// ibv_ah_attr -> the protocol's address. RoCE needs the GRH.
int ah_to_wire(const ibv_ah_attr& ah, burst_ctl_ah* out) {
  if (!ah.is_global) return EINVAL;  // as a RoCE device: no address without a GRH
  if (ah.port_num != 0 && ah.port_num != BURST_PORT_NUM) return EINVAL;
  memcpy(out->dgid, ah.grh.dgid.raw, sizeof(out->dgid));
  memset(out->dmac, 0, sizeof(out->dmac));  // burstd resolves it
  out->sgid_index = ah.grh.sgid_index;
  out->hop_limit = ah.grh.hop_limit;
  out->traffic_class = ah.grh.traffic_class;
  out->flow_label = ah.grh.flow_label & 0xfffff;
  out->vlan_id = kUntagged;
  return 0;
}

namespace {

void ah_from_wire(const burst_ctl_ah& in, uint8_t port_num, ibv_ah_attr* ah) {
  *ah = ibv_ah_attr{};
  ah->is_global = 1;
  ah->port_num = port_num;
  memcpy(ah->grh.dgid.raw, in.dgid, sizeof(in.dgid));
  ah->grh.sgid_index = in.sgid_index;
  ah->grh.hop_limit = in.hop_limit;
  ah->grh.traffic_class = in.traffic_class;
  ah->grh.flow_label = in.flow_label;
}

}  // namespace

ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  const QpArgs a{pd,        attr->qp_type,    attr->send_cq,   attr->recv_cq,
                 attr->srq, attr->qp_context, attr->sq_sig_all};
  Qp* qp = make_qp(a, &attr->cap);
  return qp != nullptr ? &qp->vqp.qp : nullptr;
}

ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr) {
  // A PD, optionally create_flags 0, optionally the work-request API
  // (send_ops_flags: ibv_qp_ex, qp_ex.cc).
  constexpr uint32_t kSupported =
      IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
  if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || attr->pd == nullptr || attr->pd->context != ctx) {
    return verb_error(EINVAL);
  }
  if ((attr->comp_mask & ~kSupported) ||
      ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags != 0)) {
    debug_log("burst: ibv_create_qp_ex comp_mask 0x%x is not supported", attr->comp_mask);
    return verb_error(EOPNOTSUPP);
  }
  const QpArgs a{attr->pd,  attr->qp_type,    attr->send_cq,   attr->recv_cq,
                 attr->srq, attr->qp_context, attr->sq_sig_all};
  Qp* qp = make_qp(a, &attr->cap);
  if (qp == nullptr) return nullptr;
  if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
    if (int e = init_qp_ex(qp, attr->send_ops_flags); e != 0) {
      (void)destroy_qp(&qp->vqp.qp);
      return verb_error(e);
    }
    qp->vqp.comp_mask |= BURST_VERBS_QP_EX;
  }
  return &qp->vqp.qp;
}

int modify_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int attr_mask) {
  Qp* qp = to_qp(ibqp);
  Context* ctx = to_context(ibqp->context);
  const uint32_t mask = static_cast<uint32_t>(attr_mask);
  burst_ctl_modify_qp_req req{};
  req.qp_handle = qp->handle;
  req.attr_mask = mask;  // burstd answers EOPNOTSUPP for attributes it does not know
  burst_ctl_qp_attr& w = req.attr;
  w.ah.vlan_id = kUntagged;
  if (mask & IBV_QP_STATE) w.qp_state = static_cast<uint8_t>(attr->qp_state);
  if (mask & IBV_QP_CUR_STATE) w.cur_qp_state = static_cast<uint8_t>(attr->cur_qp_state);
  if (mask & IBV_QP_PATH_MTU) w.path_mtu = static_cast<uint8_t>(attr->path_mtu);
  if (mask & IBV_QP_QKEY) w.qkey = attr->qkey;
  if (mask & IBV_QP_RQ_PSN) w.rq_psn = attr->rq_psn & kPsnMask;
  if (mask & IBV_QP_SQ_PSN) w.sq_psn = attr->sq_psn & kPsnMask;
  if (mask & IBV_QP_DEST_QPN) w.dest_qp_num = attr->dest_qp_num;
  if (mask & IBV_QP_ACCESS_FLAGS) w.qp_access_flags = static_cast<uint32_t>(attr->qp_access_flags);
  if (mask & IBV_QP_AV) {
    if (int e = ah_to_wire(attr->ah_attr, &w.ah); e != 0) return e;
  }
  if (mask & IBV_QP_PKEY_INDEX) w.pkey_index = attr->pkey_index;
  if (mask & IBV_QP_PORT) {
    if (attr->port_num != BURST_PORT_NUM) return EINVAL;
    w.port_num = attr->port_num;
  }
  if (mask & IBV_QP_TIMEOUT) w.timeout = attr->timeout;
  if (mask & IBV_QP_RETRY_CNT) w.retry_cnt = attr->retry_cnt;
  if (mask & IBV_QP_RNR_RETRY) w.rnr_retry = attr->rnr_retry;
  if (mask & IBV_QP_MIN_RNR_TIMER) w.min_rnr_timer = attr->min_rnr_timer;
  if (mask & IBV_QP_MAX_QP_RD_ATOMIC) w.max_rd_atomic = attr->max_rd_atomic;
  if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) w.max_dest_rd_atomic = attr->max_dest_rd_atomic;
  // INIT -> INIT with the attributes of the last INIT transition (librdmacm's
  // ucma_modify_qp_rtr repeats rdma_create_qp's): nothing would change, and no
  // event moves a QP out of INIT behind the application's back.
  const bool to_init = (mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_INIT;
  if (to_init && qp->init_mask == mask && memcmp(&qp->init_attr, &w, sizeof(w)) == 0) return 0;
  qp->init_mask = 0;
  burst_ctl_empty_resp resp{};
  if (int e = ctl_request(ctx, BURST_CTL_OP_MODIFY_QP, &req, &resp); e != 0) return e;
  if (to_init) {
    qp->init_mask = mask;
    qp->init_attr = w;
  }
  if ((mask & IBV_QP_STATE) && attr->qp_state == IBV_QPS_RESET) {
    // A reset QP's completions (its flushed work requests) go away with it,
    // as on mlx5: a QP reused after RESET reports only its new work.
    if (ibqp->recv_cq != nullptr) clean_cq(to_cq(ibqp->recv_cq), ibqp->qp_num);
    if (ibqp->send_cq != nullptr && ibqp->send_cq != ibqp->recv_cq) {
      clean_cq(to_cq(ibqp->send_cq), ibqp->qp_num);
    }
  }
  return 0;
}

int query_qp(ibv_qp* ibqp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr) {
  burst_ctl_query_qp_req req{};
  req.qp_handle = to_qp(ibqp)->handle;
  req.attr_mask = static_cast<uint32_t>(attr_mask);
  burst_ctl_query_qp_resp resp{};
  if (int e = ctl_request(to_context(ibqp->context), BURST_CTL_OP_QUERY_QP, &req, &resp); e != 0) {
    return e;
  }
  // Every attribute is returned, whatever the mask (as most providers do).
  const burst_ctl_qp_attr& w = resp.attr;
  const auto cap = convert_cap<ibv_qp_cap>(resp.cap);
  *attr = ibv_qp_attr{};
  attr->qp_state = static_cast<ibv_qp_state>(w.qp_state);
  attr->cur_qp_state = static_cast<ibv_qp_state>(w.qp_state);
  attr->path_mtu = static_cast<ibv_mtu>(w.path_mtu);
  attr->path_mig_state = IBV_MIG_MIGRATED;
  attr->qkey = w.qkey;
  attr->rq_psn = w.rq_psn;
  attr->sq_psn = w.sq_psn;
  attr->dest_qp_num = w.dest_qp_num;
  attr->qp_access_flags = static_cast<unsigned int>(w.qp_access_flags);
  attr->cap = cap;
  const uint8_t port = w.port_num != 0 ? w.port_num : BURST_PORT_NUM;
  if (resp.qp_type == IBV_QPT_RC) ah_from_wire(w.ah, port, &attr->ah_attr);
  attr->pkey_index = w.pkey_index;
  attr->sq_draining = w.sq_draining;
  attr->max_rd_atomic = w.max_rd_atomic;
  attr->max_dest_rd_atomic = w.max_dest_rd_atomic;
  attr->min_rnr_timer = w.min_rnr_timer;
  attr->port_num = port;
  attr->timeout = w.timeout;
  attr->retry_cnt = w.retry_cnt;
  attr->rnr_retry = w.rnr_retry;
  if (init_attr != nullptr) {
    *init_attr = ibv_qp_init_attr{};
    init_attr->qp_context = ibqp->qp_context;
    init_attr->send_cq = ibqp->send_cq;
    init_attr->recv_cq = ibqp->recv_cq;
    init_attr->srq = ibqp->srq;
    init_attr->cap = cap;
    init_attr->qp_type = ibqp->qp_type;
    init_attr->sq_sig_all = resp.sq_sig_all;
  }
  return 0;
}

int destroy_qp(ibv_qp* ibqp) {
  Qp* qp = to_qp(ibqp);
  Context* ctx = to_context(ibqp->context);
  const int e = ctl_destroy(ctx, BURST_CTL_OP_DESTROY_QP, qp->handle);
  if (e != 0) return e;
  detach_qp_rings(qp);
  if (ctx->native) {
    if (int ke = native_destroy_qp(ibqp->context->cmd_fd, ibqp, qp->khandle); ke != 0) {
      // The kernel may still report events naming this ibv_qp: keep its memory.
      debug_log("burst: the kernel kept QP shadow %u: %s", qp->khandle, strerror(ke));
      return 0;
    }
  }
  fini_qp_ex(qp);
  pthread_cond_destroy(&ibqp->cond);
  pthread_mutex_destroy(&ibqp->mutex);
  free(qp);
  return 0;
}

}  // namespace burst::provider
