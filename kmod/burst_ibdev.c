// SPDX-License-Identifier: GPL-2.0-only
/*
 * burst kernel assistant: the ib_device of a registered burstd.
 *
 * BURST_KMOD_REGISTER on an open /dev/burst allocates and registers one ib_device (driver "burst",
 * one RoCE v2 port on the caller's netdev); the descriptor is the registration, and closing it
 * (burstd exits or is killed) unregisters the device. ib_core's roce_gid_mgmt fills the GID table
 * from the netdev's addresses. The data path is burstd's: the kernel verbs here only create the
 * shadow objects libibverbs' event machinery needs (burst_shadow.c) and answer queries.
 *
 * Port capabilities: only RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP. Without the IB MAD/CM/SA bits ib_mad
 * does not try to open QP0/QP1 on us (our kernel create_qp refuses, and ib_mad would log an error
 * per registration), ib_cm and the kernel rdma_cm leave the device alone (burstd runs the CM for
 * its applications), and the GID table holds RoCE v2 entries only.
 */
#include <linux/capability.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <net/net_namespace.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_mad.h>

#include "burst_ibdev.h"

#define BURST_GID_TBL_LEN 256 /* BURST_GID_TABLE_LEN of abi/burst_device.h */
#define BURST_UVERBS_ABI_VER 1 /* BURST_UVERBS_ABI_VERSION: what the provider matches */
#define BURST_PHYS_STATE_LINK_UP 5
#define BURST_PHYS_STATE_DISABLED 3

/*
 * Every registration is on burst_devices (under the spinlock burst_devices_lock: the netdev
 * notifier runs under RTNL, which ib_register_device takes, so no mutex of ours may be held
 * across both);
 * burst_register_lock serialises registrations (the EEXIST check and the add).
 */
static LIST_HEAD(burst_devices);
static DEFINE_SPINLOCK(burst_devices_lock);
static DEFINE_MUTEX(burst_register_lock);

static int burst_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
			      struct ib_udata *udata)
{
	const struct burst_kmod_device_attr *r = &to_burst_ibdev(ibdev)->attr;

	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	a->fw_ver = r->fw_ver;
	a->sys_image_guid = (__force __be64)r->sys_image_guid;
	a->max_mr_size = r->max_mr_size;
	a->page_size_cap = r->page_size_cap;
	a->vendor_id = r->vendor_id;
	a->vendor_part_id = r->vendor_part_id;
	a->hw_ver = r->hw_ver;
	a->max_qp = r->max_qp;
	a->max_qp_wr = r->max_qp_wr;
	a->device_cap_flags = IB_DEVICE_RC_RNR_NAK_GEN | IB_DEVICE_SYS_IMAGE_GUID |
			      IB_DEVICE_MEM_WINDOW | IB_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_send_sge = r->max_send_sge;
	a->max_recv_sge = r->max_recv_sge;
	a->max_sge_rd = r->max_sge_rd;
	a->max_cq = r->max_cq;
	a->max_cqe = r->max_cqe;
	a->max_mr = r->max_mr;
	a->max_pd = r->max_pd;
	a->max_qp_rd_atom = r->max_qp_rd_atom;
	a->max_qp_init_rd_atom = r->max_qp_init_rd_atom;
	a->max_res_rd_atom = r->max_res_rd_atom;
	a->atomic_cap = IB_ATOMIC_HCA;
	a->max_srq = r->max_srq;
	a->max_srq_wr = r->max_srq_wr;
	a->max_srq_sge = r->max_srq_sge;
	a->max_ah = r->max_ah;
	a->max_mw = r->max_mw;
	a->max_mcast_grp = r->max_mcast_grp;
	a->max_mcast_qp_attach = r->max_mcast_qp_attach;
	a->max_total_mcast_qp_attach = r->max_total_mcast_qp_attach;
	a->max_pkeys = r->max_pkeys;
	return 0;
}

static int burst_query_port(struct ib_device *ibdev, u32 port, struct ib_port_attr *a)
{
	struct burst_ibdev *bi = to_burst_ibdev(ibdev);
	struct net_device *nd = bi->netdev;
	bool up = netif_running(nd) && netif_carrier_ok(nd);
	enum ib_mtu mtu = iboe_get_mtu(READ_ONCE(nd->mtu));
	u16 speed;
	u8 width;

	a->state = up ? IB_PORT_ACTIVE : IB_PORT_DOWN;
	a->phys_state = up ? BURST_PHYS_STATE_LINK_UP : BURST_PHYS_STATE_DISABLED;
	a->max_mtu = IB_MTU_4096;
	a->active_mtu = min_t(u32, mtu ? mtu : IB_MTU_256, bi->attr.active_mtu);
	a->phys_mtu = ib_mtu_enum_to_int(IB_MTU_4096);
	a->gid_tbl_len = BURST_GID_TBL_LEN;
	a->ip_gids = true;
	a->port_cap_flags = IB_PORT_CM_SUP;
	a->max_msg_sz = 0x80000000u;
	a->pkey_tbl_len = 1;
	if (ib_get_eth_speed(ibdev, port, &speed, &width) == 0) {
		a->active_speed = speed;
		a->active_width = width;
	} else {
		a->active_speed = IB_SPEED_SDR;
		a->active_width = IB_WIDTH_1X;
	}
	return 0;
}

static int burst_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *im)
{
	im->pkey_tbl_len = 1;
	im->gid_tbl_len = BURST_GID_TBL_LEN;
	im->core_cap_flags = RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP;
	im->max_mad_size = 0; /* no MAD capability: ib_core requires 0 (verify_immutable) */
	return 0;
}

static enum rdma_link_layer burst_get_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int burst_query_pkey(struct ib_device *ibdev, u32 port, u16 index, u16 *pkey)
{
	if (index > 0)
		return -EINVAL;
	*pkey = 0xffff;
	return 0;
}

static int burst_alloc_ucontext(struct ib_ucontext *uctx, struct ib_udata *udata)
{
	struct burst_ibdev *bi = to_burst_ibdev(uctx->device);
	struct burst_kmod_context_resp resp = {};

	if (!udata || !udata->outlen)
		return 0; /* a provider that does not ask */
	if (udata->outlen < sizeof(resp))
		return -EINVAL;
	resp.abi_version = BURST_KMOD_ABI_VERSION;
	strscpy(resp.socket_path, bi->socket_path, sizeof(resp.socket_path));
	return ib_copy_to_udata(udata, &resp, sizeof(resp));
}

static void burst_dealloc_ucontext(struct ib_ucontext *uctx)
{
}

/* Nothing mapped, nothing to revoke: present so unregistering does not wait for applications. */
static void burst_disassociate_ucontext(struct ib_ucontext *uctx)
{
}

/* The data path is burstd's: kernel verbs that would need it are not offered. */
static int burst_modify_qp(struct ib_qp *qp, struct ib_qp_attr *attr, int mask,
			   struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

static int burst_post_send(struct ib_qp *qp, const struct ib_send_wr *wr,
			   const struct ib_send_wr **bad)
{
	*bad = wr;
	return -EOPNOTSUPP;
}

static int burst_post_recv(struct ib_qp *qp, const struct ib_recv_wr *wr,
			   const struct ib_recv_wr **bad)
{
	*bad = wr;
	return -EOPNOTSUPP;
}

static int burst_poll_cq(struct ib_cq *cq, int n, struct ib_wc *wc)
{
	return 0;
}

static int burst_req_notify_cq(struct ib_cq *cq, enum ib_cq_notify_flags flags)
{
	return -EOPNOTSUPP;
}

static struct ib_mr *burst_get_dma_mr(struct ib_pd *pd, int access)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static struct ib_mr *burst_reg_user_mr(struct ib_pd *pd, u64 start, u64 length, u64 virt,
				       int access, struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static int burst_dereg_mr(struct ib_mr *mr, struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

static ssize_t burst_socket_show(struct device *device, struct device_attribute *attr,
				 char *buf)
{
	struct burst_ibdev *bi = rdma_device_to_drv_device(device, struct burst_ibdev, ibdev);

	return sysfs_emit(buf, "%s\n", bi->socket_path);
}
static DEVICE_ATTR_RO(burst_socket);

static struct attribute *burst_attrs[] = {
	&dev_attr_burst_socket.attr,
	NULL,
};

static const struct attribute_group burst_attr_group = {
	.attrs = burst_attrs,
};

static const struct ib_device_ops burst_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = BURST_UVERBS_ABI_VER,
	.device_group = &burst_attr_group,

	.alloc_pd = burst_alloc_pd,
	.alloc_ucontext = burst_alloc_ucontext,
	.create_cq = burst_create_cq,
	.create_qp = burst_create_qp,
	.create_srq = burst_create_srq,
	.dealloc_pd = burst_dealloc_pd,
	.dealloc_ucontext = burst_dealloc_ucontext,
	.dereg_mr = burst_dereg_mr,
	.destroy_cq = burst_destroy_cq,
	.destroy_qp = burst_destroy_qp,
	.destroy_srq = burst_destroy_srq,
	.disassociate_ucontext = burst_disassociate_ucontext,
	.get_dma_mr = burst_get_dma_mr,
	.get_link_layer = burst_get_link_layer,
	.get_port_immutable = burst_get_port_immutable,
	.modify_qp = burst_modify_qp,
	.poll_cq = burst_poll_cq,
	.post_recv = burst_post_recv,
	.post_send = burst_post_send,
	.query_device = burst_query_device,
	.query_pkey = burst_query_pkey,
	.query_port = burst_query_port,
	.reg_user_mr = burst_reg_user_mr,
	.req_notify_cq = burst_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_cq, burst_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, burst_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, burst_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, burst_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, burst_ucontext, ibuc),
};

static bool burst_string_ok(const char *s, size_t size)
{
	return s[0] && strnlen(s, size) < size;
}

/* The request's fields the module checks (size was checked by the caller). */
static int burst_register_check(const struct burst_kmod_register *req)
{
	const struct burst_kmod_device_attr *a = &req->attr;

	if (req->flags || req->reserved0 || a->reserved[0] || a->reserved[1])
		return -EINVAL;
	if (req->abi_version != BURST_KMOD_ABI_VERSION)
		return -EINVAL;
	if (!burst_string_ok(req->name, sizeof(req->name)) ||
	    !burst_string_ok(req->socket_path, sizeof(req->socket_path)) ||
	    strchr(req->name, '/') || req->socket_path[0] != '/')
		return -EINVAL;
	if (a->active_mtu < IB_MTU_256 || a->active_mtu > IB_MTU_4096 || !a->num_comp_vectors ||
	    !a->max_cqe)
		return -EINVAL;
	return 0;
}

/* The netdev ifindex names in the caller's netns, held with bi's tracker; NULL if none. */
static struct net_device *burst_hold_netdev(struct burst_ibdev *bi, u32 ifindex)
{
	struct net_device *nd;

	rcu_read_lock();
	nd = dev_get_by_index_rcu(current->nsproxy->net_ns, ifindex);
	if (nd)
		netdev_hold(nd, &bi->netdev_tracker, GFP_ATOMIC);
	rcu_read_unlock();
	return nd;
}

static bool burst_netdev_taken(struct net_device *nd)
{
	struct burst_ibdev *it;

	bool taken = false;

	lockdep_assert_held(&burst_register_lock);
	spin_lock(&burst_devices_lock);
	list_for_each_entry(it, &burst_devices, node) {
		if (it->netdev == nd && !READ_ONCE(it->netdev_released)) {
			taken = true;
			break;
		}
	}
	spin_unlock(&burst_devices_lock);
	return taken;
}

static void burst_ibdev_free(struct burst_ibdev *bi)
{
	if (!bi->netdev_released)
		netdev_put(bi->netdev, &bi->netdev_tracker);
	put_pid(bi->owner);
	put_pid_ns(bi->pid_ns);
	ib_dealloc_device(&bi->ibdev);
}

/*
 * The netdev is being unregistered: unregister the ib_device and drop our reference, or the netdev
 * would wait for burstd to exit (as rxe does on NETDEV_UNREGISTER). The registration stays until
 * its descriptor is closed; applications got IBV_EVENT_DEVICE_FATAL.
 */
static void burst_netdev_gone(struct work_struct *work)
{
	struct burst_ibdev *bi = container_of(work, struct burst_ibdev, netdev_gone);

	ib_unregister_device(&bi->ibdev);
	netdev_put(bi->netdev, &bi->netdev_tracker);
	WRITE_ONCE(bi->netdev_released, true);
}

static int burst_netdev_event(struct notifier_block *nb, unsigned long event, void *ptr)
{
	struct net_device *nd = netdev_notifier_info_to_dev(ptr);
	struct burst_ibdev *it;

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	spin_lock(&burst_devices_lock);
	list_for_each_entry(it, &burst_devices, node) {
		if (it->netdev == nd)
			schedule_work(&it->netdev_gone);
	}
	spin_unlock(&burst_devices_lock);
	return NOTIFY_DONE;
}

static struct notifier_block burst_netdev_notifier = {
	.notifier_call = burst_netdev_event,
};

/* Allocates bi for req on nd (held by the caller through bi's tracker once bi exists). */
static struct burst_ibdev *burst_ibdev_alloc(const struct burst_kmod_register *req)
{
	struct burst_ibdev *bi = ib_alloc_device(burst_ibdev, ibdev);

	if (!bi)
		return NULL;
	bi->attr = req->attr;
	strscpy(bi->socket_path, req->socket_path, sizeof(bi->socket_path));
	bi->owner = get_task_pid(current, PIDTYPE_TGID);
	bi->pid_ns = get_pid_ns(task_active_pid_ns(current));
	INIT_LIST_HEAD(&bi->node);
	INIT_WORK(&bi->netdev_gone, burst_netdev_gone);
	burst_shadows_init(bi);
	bi->ibdev.node_type = RDMA_NODE_IB_CA;
	bi->ibdev.phys_port_cnt = 1;
	bi->ibdev.num_comp_vectors = req->attr.num_comp_vectors;
	bi->ibdev.node_guid = (__force __be64)req->attr.node_guid;
	strscpy(bi->ibdev.node_desc, "burst soft-RoCE", sizeof(bi->ibdev.node_desc));
	ib_set_device_ops(&bi->ibdev, &burst_dev_ops);
	return bi;
}

/* Registers bi on nd under burst_devices_lock: EEXIST when nd has one already. */
static int burst_ibdev_add(struct burst_ibdev *bi, struct net_device *nd, const char *name)
{
	int ret;

	mutex_lock(&burst_register_lock);
	if (burst_netdev_taken(nd)) {
		ret = -EEXIST;
		goto out;
	}
	ret = ib_device_set_netdev(&bi->ibdev, nd, 1);
	if (ret)
		goto out;
	ret = ib_register_device(&bi->ibdev, name, NULL);
	if (ret)
		goto out;
	spin_lock(&burst_devices_lock);
	list_add_tail(&bi->node, &burst_devices);
	spin_unlock(&burst_devices_lock);
	atomic64_inc(&burst_counters.devices);
out:
	mutex_unlock(&burst_register_lock);
	return ret;
}

static void burst_ibdev_remove(struct burst_ibdev *bi)
{
	spin_lock(&burst_devices_lock);
	list_del_init(&bi->node);
	spin_unlock(&burst_devices_lock);
	/* it may have unregistered already: then ib_unregister_device is a no-op */
	cancel_work_sync(&bi->netdev_gone);
	/* uverbs disassociates open contexts (IBV_EVENT_DEVICE_FATAL), then shadows are gone */
	ib_unregister_device(&bi->ibdev);
	atomic64_dec(&burst_counters.devices);
	burst_ibdev_free(bi);
}

static int burst_ibdev_copy_in(struct burst_kmod_register *req, void __user *arg)
{
	u32 size;

	if (get_user(size, (u32 __user *)arg))
		return -EFAULT;
	if (size != sizeof(*req))
		return -EINVAL;
	if (copy_from_user(req, arg, sizeof(*req)))
		return -EFAULT;
	return burst_register_check(req);
}

static int burst_ibdev_do_register(struct burst_file *bf, struct burst_kmod_register *req,
				   void __user *arg)
{
	struct burst_ibdev *bi;
	struct net_device *nd;
	int ret;

	bi = burst_ibdev_alloc(req);
	if (!bi)
		return -ENOMEM;
	nd = burst_hold_netdev(bi, req->ifindex);
	if (!nd) {
		ret = -ENODEV;
		goto err_free;
	}
	bi->netdev = nd;
	if (!ns_capable(dev_net(nd)->user_ns, CAP_NET_ADMIN)) {
		ret = -EPERM;
		goto err_free;
	}
	ret = burst_ibdev_add(bi, nd, req->name);
	if (ret)
		goto err_free;
	strscpy(req->name, dev_name(&bi->ibdev.dev), sizeof(req->name));
	if (copy_to_user(arg, req, sizeof(*req))) {
		burst_ibdev_remove(bi);
		return -EFAULT;
	}
	bf->registration = bi;
	return 0;

err_free:
	burst_ibdev_free(bi);
	return ret;
}

int burst_ibdev_register(struct burst_file *bf, void __user *arg)
{
	struct burst_kmod_register *req;
	int ret;

	req = kzalloc(sizeof(*req), GFP_KERNEL);
	if (!req)
		return -ENOMEM;
	ret = burst_ibdev_copy_in(req, arg);
	if (ret)
		goto out;
	mutex_lock(&bf->lock);
	if (bf->registration)
		ret = -EBUSY;
	else
		ret = burst_ibdev_do_register(bf, req, arg);
	mutex_unlock(&bf->lock);
out:
	kfree(req);
	return ret;
}

int burst_ibdev_raise(struct burst_file *bf, void __user *arg)
{
	struct burst_kmod_event ev;
	int ret;

	if (copy_from_user(&ev, arg, sizeof(ev)))
		return -EFAULT;
	/* EPERM before anything else: this descriptor is no daemon's */
	mutex_lock(&bf->lock);
	if (!bf->registration)
		ret = -EPERM;
	else if (ev.size != sizeof(ev))
		ret = -EINVAL;
	else
		ret = burst_shadow_raise(bf->registration, &ev);
	mutex_unlock(&bf->lock);
	return ret;
}

void burst_ibdev_release(struct burst_file *bf)
{
	struct burst_ibdev *bi = bf->registration;

	bf->registration = NULL;
	if (bi)
		burst_ibdev_remove(bi);
}

bool burst_current_is_daemon(void)
{
	struct pid *me = task_tgid(current);
	struct burst_ibdev *it;
	bool found = false;

	spin_lock(&burst_devices_lock);
	list_for_each_entry(it, &burst_devices, node) {
		if (it->owner == me) {
			found = true;
			break;
		}
	}
	spin_unlock(&burst_devices_lock);
	return found;
}

int burst_ibdev_init(void)
{
	return register_netdevice_notifier(&burst_netdev_notifier);
}

/* Every registration holds the module (its descriptor's fops.owner): none is left here. */
void burst_ibdev_exit(void)
{
	struct burst_ibdev *bi, *tmp;

	list_for_each_entry_safe(bi, tmp, &burst_devices, node) {
		WARN_ON_ONCE(1);
		burst_ibdev_remove(bi);
	}
	unregister_netdevice_notifier(&burst_netdev_notifier);
}
