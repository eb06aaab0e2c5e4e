// SPDX-License-Identifier: GPL-2.0-only
/*
 * burst kernel assistant: shadow objects and raised events.
 *
 * In native mode the provider creates, next to each burstd CQ/QP/SRQ, a kernel "shadow" through the
 * uverbs write ABI, so that libibverbs' completion channels and async events work as on any RNIC.
 * A shadow carries no queue: its driver data (struct burst_kmod_shadow_udata) names the burstd
 * handle it stands for. The shadow is keyed by (type, handle, creator tgid as burstd's pid
 * namespace sees it); burstd raises its events with BURST_KMOD_RAISE naming (handle, tgid), so a
 * client can neither steal nor block another client's events. Kernel callers (no udata) get
 * -EOPNOTSUPP: the data path of burst is in burstd, not here.
 *
 * Concurrency: the per-device shadow_lock covers the table and the delivery of a raised event, so a
 * destroy that has returned can no longer be raised on (the handlers uverbs installs only take
 * their own irq-safe spinlocks).
 */
#include <linux/hash.h>
#include <linux/sched.h>

#include "burst_ibdev.h"

static u64 burst_shadow_hash(u32 type, u64 handle, u32 tgid)
{
	return handle ^ ((u64)tgid << 32) ^ ((u64)type << 29);
}

/* The key of a new shadow from the create command's driver data. */
static int burst_shadow_key(struct burst_ibdev *bi, struct ib_udata *udata, u32 type,
			    struct burst_shadow *sh)
{
	struct burst_kmod_shadow_udata ud;

	if (!udata)
		return -EOPNOTSUPP; /* a kernel ULP: burst has no kernel data path */
	if (udata->inlen < sizeof(ud))
		return -EINVAL;
	if (udata->inlen > sizeof(ud) &&
	    !ib_is_udata_cleared(udata, sizeof(ud), udata->inlen - sizeof(ud)))
		return -EINVAL;
	if (ib_copy_from_udata(&ud, udata, sizeof(ud)))
		return -EFAULT;
	sh->handle = ud.handle;
	sh->type = type;
	/* burstd names clients by the tgid it sees (SO_PEERCRED) */
	sh->tgid = task_tgid_nr_ns(current, bi->pid_ns);
	if (!sh->tgid)
		return -EPERM; /* invisible to burstd: it could never name this object */
	return 0;
}

static struct burst_shadow *burst_shadow_find(struct burst_ibdev *bi, u32 type, u64 handle,
					      u32 tgid)
{
	struct burst_shadow *it;

	hash_for_each_possible(bi->shadows, it, node, burst_shadow_hash(type, handle, tgid)) {
		if (it->type == type && it->handle == handle && it->tgid == tgid)
			return it;
	}
	return NULL;
}

static int burst_shadow_add(struct burst_ibdev *bi, struct ib_udata *udata, u32 type,
			    struct burst_shadow *sh)
{
	int ret = burst_shadow_key(bi, udata, type, sh);

	if (ret)
		return ret;
	spin_lock(&bi->shadow_lock);
	if (burst_shadow_find(bi, type, sh->handle, sh->tgid)) {
		spin_unlock(&bi->shadow_lock);
		return -EEXIST;
	}
	hash_add(bi->shadows, &sh->node, burst_shadow_hash(type, sh->handle, sh->tgid));
	sh->hashed = true;
	spin_unlock(&bi->shadow_lock);
	atomic64_inc(&burst_counters.shadows);
	return 0;
}

static void burst_shadow_del(struct burst_ibdev *bi, struct burst_shadow *sh)
{
	if (!sh->hashed)
		return;
	spin_lock(&bi->shadow_lock);
	hash_del(&sh->node);
	sh->hashed = false;
	spin_unlock(&bi->shadow_lock);
	atomic64_dec(&burst_counters.shadows);
}

void burst_shadows_init(struct burst_ibdev *bi)
{
	spin_lock_init(&bi->shadow_lock);
	hash_init(bi->shadows);
	ida_init(&bi->qpn_ida);
}

int burst_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	/* a PD has no events: nothing to key; only user space may have one */
	return udata ? 0 : -EOPNOTSUPP;
}

int burst_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return 0;
}

int burst_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata)
{
	struct burst_cq *cq = container_of(ibcq, struct burst_cq, ibcq);
	struct burst_ibdev *bi = to_burst_ibdev(ibcq->device);

	if (attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > bi->attr.max_cqe)
		return -EINVAL;
	ibcq->cqe = attr->cqe;
	return burst_shadow_add(bi, udata, BURST_SHADOW_CQ, &cq->shadow);
}

int burst_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct burst_cq *cq = container_of(ibcq, struct burst_cq, ibcq);

	burst_shadow_del(to_burst_ibdev(ibcq->device), &cq->shadow);
	return 0;
}

int burst_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init, struct ib_udata *udata)
{
	struct burst_qp *qp = container_of(ibqp, struct burst_qp, ibqp);
	struct burst_ibdev *bi = to_burst_ibdev(ibqp->device);
	int qpn, ret;

	if (!udata)
		return -EOPNOTSUPP;
	switch (init->qp_type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (init->create_flags)
		return -EOPNOTSUPP;
	/* a number of its own for restrack (rdma res): burstd's QPN is the provider's business */
	qpn = ida_alloc_range(&bi->qpn_ida, 2, 0xffffff, GFP_KERNEL);
	if (qpn < 0)
		return qpn;
	ibqp->qp_num = qpn;
	ret = burst_shadow_add(bi, udata, BURST_SHADOW_QP, &qp->shadow);
	if (ret)
		ida_free(&bi->qpn_ida, qpn);
	return ret;
}

int burst_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct burst_qp *qp = container_of(ibqp, struct burst_qp, ibqp);
	struct burst_ibdev *bi = to_burst_ibdev(ibqp->device);

	burst_shadow_del(bi, &qp->shadow);
	ida_free(&bi->qpn_ida, ibqp->qp_num);
	return 0;
}

int burst_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata)
{
	struct burst_srq *srq = container_of(ibsrq, struct burst_srq, ibsrq);

	if (init->srq_type != IB_SRQT_BASIC)
		return -EOPNOTSUPP;
	return burst_shadow_add(to_burst_ibdev(ibsrq->device), udata, BURST_SHADOW_SRQ,
				&srq->shadow);
}

int burst_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct burst_srq *srq = container_of(ibsrq, struct burst_srq, ibsrq);

	burst_shadow_del(to_burst_ibdev(ibsrq->device), &srq->shadow);
	return 0;
}

/* Which shadow type an event kind names and whether event_type fits it; 0 if it does not. */
static u32 burst_event_shadow_type(u32 kind, u32 event_type)
{
	switch (kind) {
	case BURST_KMOD_EV_CQ_COMP:
		return BURST_SHADOW_CQ;
	case BURST_KMOD_EV_CQ_ASYNC:
		return event_type == IB_EVENT_CQ_ERR ? BURST_SHADOW_CQ : 0;
	case BURST_KMOD_EV_QP_ASYNC:
		switch (event_type) {
		case IB_EVENT_QP_FATAL:
		case IB_EVENT_QP_REQ_ERR:
		case IB_EVENT_QP_ACCESS_ERR:
		case IB_EVENT_COMM_EST:
		case IB_EVENT_SQ_DRAINED:
		case IB_EVENT_PATH_MIG:
		case IB_EVENT_PATH_MIG_ERR:
		case IB_EVENT_QP_LAST_WQE_REACHED:
			return BURST_SHADOW_QP;
		}
		return 0;
	case BURST_KMOD_EV_SRQ_ASYNC:
		if (event_type == IB_EVENT_SRQ_ERR || event_type == IB_EVENT_SRQ_LIMIT_REACHED)
			return BURST_SHADOW_SRQ;
		return 0;
	}
	return 0;
}

static int burst_raise_port(struct burst_ibdev *bi, const struct burst_kmod_event *ev)
{
	struct ib_event event = {};

	if (ev->handle || ev->tgid)
		return -EINVAL;
	switch (ev->event_type) {
	case IB_EVENT_PORT_ACTIVE:
	case IB_EVENT_PORT_ERR:
	case IB_EVENT_LID_CHANGE:
	case IB_EVENT_PKEY_CHANGE:
	case IB_EVENT_SM_CHANGE:
	case IB_EVENT_CLIENT_REREGISTER:
	case IB_EVENT_GID_CHANGE:
		break;
	default:
		return -EINVAL;
	}
	event.device = &bi->ibdev;
	event.element.port_num = 1;
	event.event = ev->event_type;
	ib_dispatch_event(&event);
	atomic64_inc(&burst_counters.events_raised);
	return 0;
}

/* Delivers ev to the shadow sh (shadow_lock held). */
static void burst_deliver(struct burst_ibdev *bi, struct burst_shadow *sh,
			  const struct burst_kmod_event *ev)
{
	struct ib_event event = { .device = &bi->ibdev, .event = ev->event_type };
	struct ib_srq *srq;
	struct ib_cq *cq;
	struct ib_qp *qp;

	switch (sh->type) {
	case BURST_SHADOW_CQ:
		cq = &container_of(sh, struct burst_cq, shadow)->ibcq;
		if (ev->kind == BURST_KMOD_EV_CQ_COMP) {
			if (cq->comp_handler)
				cq->comp_handler(cq, cq->cq_context);
		} else if (cq->event_handler) {
			event.element.cq = cq;
			cq->event_handler(&event, cq->cq_context);
		}
		break;
	case BURST_SHADOW_QP:
		qp = &container_of(sh, struct burst_qp, shadow)->ibqp;
		event.element.qp = qp;
		if (qp->event_handler)
			qp->event_handler(&event, qp->qp_context);
		break;
	case BURST_SHADOW_SRQ:
		srq = &container_of(sh, struct burst_srq, shadow)->ibsrq;
		event.element.srq = srq;
		if (srq->event_handler)
			srq->event_handler(&event, srq->srq_context);
		break;
	}
}

int burst_shadow_raise(struct burst_ibdev *bi, const struct burst_kmod_event *ev)
{
	struct burst_shadow *sh;
	u32 type;

	if (ev->kind == BURST_KMOD_EV_PORT_ASYNC)
		return burst_raise_port(bi, ev);
	type = burst_event_shadow_type(ev->kind, ev->event_type);
	if (!type || !ev->tgid)
		return -EINVAL;
	spin_lock(&bi->shadow_lock);
	sh = burst_shadow_find(bi, type, ev->handle, ev->tgid);
	if (sh)
		burst_deliver(bi, sh, ev);
	spin_unlock(&bi->shadow_lock);
	/* no shadow: the application may just have destroyed it; not burstd's error */
	atomic64_inc(sh ? &burst_counters.events_raised : &burst_counters.events_dropped);
	return 0;
}
