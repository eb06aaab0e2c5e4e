// SPDX-License-Identifier: GPL-2.0-only
/*
 * burst kernel assistant: module init/exit, /dev/burst and its ioctls (see ../abi/burst_kmod.h).
 */
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "burst.h"

struct burst_counters burst_counters;

static int burst_open(struct inode *inode, struct file *filp)
{
	struct burst_file *bf = kzalloc(sizeof(*bf), GFP_KERNEL);

	if (!bf)
		return -ENOMEM;
	mutex_init(&bf->lock);
	filp->private_data = bf;
	return 0;
}

static int burst_release(struct inode *inode, struct file *filp)
{
	struct burst_file *bf = filp->private_data;

	burst_ibdev_release(bf);
	kfree(bf);
	return 0;
}

static int burst_stats(void __user *arg)
{
	struct burst_kmod_stats st = {};
	u32 size;

	if (get_user(size, (u32 __user *)arg))
		return -EFAULT;
	if (size != sizeof(st))
		return -EINVAL;
	st.size = size;
	st.devices = atomic64_read(&burst_counters.devices);
	st.pins = atomic64_read(&burst_counters.pins);
	st.pinned_pages = atomic64_read(&burst_counters.pinned_pages);
	st.mappings = atomic64_read(&burst_counters.mappings);
	st.shadows = atomic64_read(&burst_counters.shadows);
	st.events_raised = atomic64_read(&burst_counters.events_raised);
	st.events_dropped = atomic64_read(&burst_counters.events_dropped);
	return copy_to_user(arg, &st, sizeof(st)) ? -EFAULT : 0;
}

static long burst_ioctl(struct file *filp, unsigned int cmd, unsigned long uarg)
{
	struct burst_file *bf = filp->private_data;
	void __user *arg = (void __user *)uarg;

	switch (cmd) {
	case BURST_KMOD_REGISTER:
		return burst_ibdev_register(bf, arg);
	case BURST_KMOD_RAISE:
		return burst_ibdev_raise(bf, arg);
	case BURST_KMOD_PIN:
		return burst_pin_create(arg);
	case BURST_KMOD_STATS:
		return burst_stats(arg);
	default:
		return -ENOTTY;
	}
}

static const struct file_operations burst_fops = {
	.owner = THIS_MODULE,
	.open = burst_open,
	.release = burst_release,
	.unlocked_ioctl = burst_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

static struct miscdevice burst_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "burst",
	.fops = &burst_fops,
	.mode = 0666,
};

static int __init burst_init(void)
{
	int ret;

	ret = burst_pin_init();
	if (ret)
		return ret;
	ret = burst_ibdev_init();
	if (ret)
		goto err_pin;
	ret = misc_register(&burst_misc);
	if (ret)
		goto err_ibdev;
	return 0;

err_ibdev:
	burst_ibdev_exit();
err_pin:
	burst_pin_exit();
	return ret;
}

static void __exit burst_exit(void)
{
	misc_deregister(&burst_misc);
	burst_ibdev_exit();
	burst_pin_exit();
}

module_init(burst_init);
module_exit(burst_exit);

MODULE_LICENSE("GPL");
MODULE_AUTHOR("The burst authors");
MODULE_DESCRIPTION("burst: soft-RoCE service assistant (ib_device registration, memory pinning)");
