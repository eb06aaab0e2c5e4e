/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * burst kernel assistant: what burst_ibdev.c (the registered ib_device) and burst_shadow.c (its
 * shadow objects and raised events) share. Nothing else includes this header.
 */
#ifndef BURST_KMOD_BURST_IBDEV_H
#define BURST_KMOD_BURST_IBDEV_H

#include <linux/hashtable.h>
#include <linux/idr.h>
#include <linux/list.h>
#include <linux/netdevice.h>
#include <linux/pid.h>
#include <linux/pid_namespace.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <rdma/ib_verbs.h>

#include "burst.h"

#define BURST_SHADOW_HASH_BITS 10

/* One registration: the ib_device of one burstd (ibdev first: ib_alloc_device). */
struct burst_ibdev {
	struct ib_device ibdev;
	struct net_device *netdev; /* held (tracker) until the device is freed */
	netdevice_tracker netdev_tracker;
	struct pid *owner; /* tgid of the registering process (burst_current_is_daemon) */
	struct pid_namespace *pid_ns; /* burstd's: shadow keys are tgids as burstd sees them */
	struct burst_kmod_device_attr attr;
	char socket_path[BURST_KMOD_SOCKET_MAX];
	struct list_head node; /* burst_devices */
	struct work_struct netdev_gone; /* the netdev unregisters: so does the ib_device */
	bool netdev_released; /* netdev_gone ran: the netdev reference is dropped */
	spinlock_t shadow_lock; /* shadows; held while a raised event is delivered */
	DECLARE_HASHTABLE(shadows, BURST_SHADOW_HASH_BITS);
	struct ida qpn_ida; /* qp_num of shadow QPs (restrack needs one per QP) */
};

enum burst_shadow_type {
	BURST_SHADOW_CQ = 1,
	BURST_SHADOW_QP = 2,
	BURST_SHADOW_SRQ = 3,
};

/* Where a shadow CQ/QP/SRQ is found by (type, burstd handle, creator tgid in burstd's pidns). */
struct burst_shadow {
	struct hlist_node node; /* burst_ibdev.shadows, under shadow_lock */
	u64 handle;
	u32 tgid;
	u32 type; /* enum burst_shadow_type */
	bool hashed;
};

struct burst_ucontext {
	struct ib_ucontext ibuc;
};

struct burst_pd {
	struct ib_pd ibpd;
};

struct burst_cq {
	struct ib_cq ibcq;
	struct burst_shadow shadow;
};

struct burst_qp {
	struct ib_qp ibqp;
	struct burst_shadow shadow;
};

struct burst_srq {
	struct ib_srq ibsrq;
	struct burst_shadow shadow;
};

static inline struct burst_ibdev *to_burst_ibdev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct burst_ibdev, ibdev);
}

/* burst_shadow.c: the verbs of shadow objects (udata: struct burst_kmod_shadow_udata). */
int burst_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int burst_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int burst_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    struct ib_udata *udata);
int burst_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int burst_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init, struct ib_udata *udata);
int burst_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int burst_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int burst_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
void burst_shadows_init(struct burst_ibdev *bi);
/* BURST_KMOD_RAISE for the registration bi (the caller holds the registration's file lock). */
int burst_shadow_raise(struct burst_ibdev *bi, const struct burst_kmod_event *ev);

#endif /* BURST_KMOD_BURST_IBDEV_H */
