// SPDX-License-Identifier: GPL-2.0-only
/*
 * TEST STAND-IN for kmod/burst_ibdev.c (i17-ibdev's part), used only by tests/interop/kmod_pin.sh
 * while that file is absent from the tree: the script builds the module from a copy of kmod/ with
 * this file as burst_ibdev.c. BURST_KMOD_REGISTER here registers no ib_device: it only records the
 * caller's process as a daemon (CAP_NET_ADMIN), which is all burst_pin.c asks of it
 * (burst_current_is_daemon); RAISE answers EOPNOTSUPP. Remove once burst_ibdev.c is merged.
 */
#include <linux/capability.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "burst.h"

struct burst_ibdev {
	struct list_head node;
	struct pid *tgid;
};

static LIST_HEAD(burst_stub_daemons);
static DEFINE_MUTEX(burst_stub_lock);

int burst_ibdev_register(struct burst_file *bf, void __user *arg)
{
	struct burst_ibdev *dev;
	u32 size;

	if (get_user(size, (u32 __user *)arg))
		return -EFAULT;
	if (size != sizeof(struct burst_kmod_register))
		return -EINVAL;
	if (!capable(CAP_NET_ADMIN))
		return -EPERM;
	mutex_lock(&bf->lock);
	if (bf->registration) {
		mutex_unlock(&bf->lock);
		return -EBUSY;
	}
	dev = kzalloc(sizeof(*dev), GFP_KERNEL);
	if (!dev) {
		mutex_unlock(&bf->lock);
		return -ENOMEM;
	}
	dev->tgid = get_task_pid(current, PIDTYPE_TGID);
	mutex_lock(&burst_stub_lock);
	list_add(&dev->node, &burst_stub_daemons);
	mutex_unlock(&burst_stub_lock);
	bf->registration = dev;
	mutex_unlock(&bf->lock);
	atomic64_inc(&burst_counters.devices);
	return 0;
}

int burst_ibdev_raise(struct burst_file *bf, void __user *arg)
{
	return bf->registration ? -EOPNOTSUPP : -EPERM;
}

void burst_ibdev_release(struct burst_file *bf)
{
	struct burst_ibdev *dev = bf->registration;

	if (!dev)
		return;
	mutex_lock(&burst_stub_lock);
	list_del(&dev->node);
	mutex_unlock(&burst_stub_lock);
	put_pid(dev->tgid);
	kfree(dev);
	atomic64_dec(&burst_counters.devices);
}

bool burst_current_is_daemon(void)
{
	struct burst_ibdev *dev;
	bool found = false;

	mutex_lock(&burst_stub_lock);
	list_for_each_entry(dev, &burst_stub_daemons, node)
		if (dev->tgid == task_tgid(current))
			found = true;
	mutex_unlock(&burst_stub_lock);
	return found;
}

int burst_ibdev_init(void)
{
	return 0;
}

void burst_ibdev_exit(void)
{
}
