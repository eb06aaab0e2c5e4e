// SPDX-License-Identifier: GPL-2.0-only
/*
 * burst kernel assistant: pinning a caller's memory (BURST_KMOD_PIN), the pin descriptor
 * ("[burst-pin]", BURST_KMOD_PIN_INFO) and the daemon's mapping of it (mmap).
 *
 * A pin holds the pages of [addr, addr + length) of the process that asked, pinned FOLL_LONGTERM
 * (FOLL_WRITE for a writable pin) and accounted in that process's mm->pinned_vm against its
 * RLIMIT_MEMLOCK, as ib_umem_get does for an RNIC. Only a process holding a registration (burstd)
 * may mmap a pin; the mapping shows the pinned pages by frame number (VM_PFNMAP: the pages' own
 * reference counts and reverse map are not touched; the pin keeps them alive). Every mapping holds
 * the file, so the pages are unpinned and unaccounted only when the descriptor's last reference
 * goes (all descriptors closed and all mappings gone, also when a process is killed).
 */
#include <linux/anon_inodes.h>
#include <linux/capability.h>
#include <linux/file.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "burst.h"

/* Pages asked of pin_user_pages_fast at a time (one page of page pointers). */
#define BURST_PIN_CHUNK (PAGE_SIZE / sizeof(struct page *))

struct burst_pin {
	struct mm_struct *mm;	/* mmgrab'd: where pinned_vm is accounted */
	struct pid *tgid;	/* the process whose memory this pins */
	struct page **pages;
	unsigned long npages;	/* pinned and accounted */
	u64 addr;
	u64 length;
	u64 id;
	u32 flags;		/* BURST_KMOD_PIN_* */
};

static atomic64_t burst_pin_next_id;

/* Accounts npages in mm->pinned_vm as ib_umem_get does: ENOMEM beyond RLIMIT_MEMLOCK. */
static int burst_pin_account(struct mm_struct *mm, unsigned long npages)
{
	unsigned long limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	s64 pinned = atomic64_add_return(npages, &mm->pinned_vm);

	if (pinned > limit && !capable(CAP_IPC_LOCK)) {
		atomic64_sub(npages, &mm->pinned_vm);
		return -ENOMEM;
	}
	return 0;
}

static void burst_pin_unpin(struct burst_pin *pin, unsigned long n)
{
	if (pin->flags & BURST_KMOD_PIN_WRITE)
		unpin_user_pages_dirty_lock(pin->pages, n, true);
	else
		unpin_user_pages(pin->pages, n);
}

/* Pins all pin->npages pages starting at the page of pin->addr; on failure none stays pinned. */
static int burst_pin_pages(struct burst_pin *pin)
{
	unsigned int gup = FOLL_LONGTERM;
	unsigned long start = pin->addr & PAGE_MASK;
	unsigned long done = 0;
	int ret;

	if (pin->flags & BURST_KMOD_PIN_WRITE)
		gup |= FOLL_WRITE;
	while (done < pin->npages) {
		int want = min_t(unsigned long, pin->npages - done, BURST_PIN_CHUNK);

		ret = pin_user_pages_fast(start + done * PAGE_SIZE, want, gup, pin->pages + done);
		if (ret <= 0) {
			ret = ret ? ret : -EFAULT;
			goto err;
		}
		done += ret;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err;
		}
		cond_resched();
	}
	return 0;
err:
	if (done)
		unpin_user_pages(pin->pages, done); /* nothing was written through them */
	return ret;
}

static void burst_pin_free(struct burst_pin *pin)
{
	kvfree(pin->pages);
	put_pid(pin->tgid);
	if (pin->mm)
		mmdrop(pin->mm);
	kfree(pin);
}

/* The last reference to the pin descriptor went (no descriptor, no mapping left). */
static int burst_pin_release(struct inode *inode, struct file *filp)
{
	struct burst_pin *pin = filp->private_data;

	burst_pin_unpin(pin, pin->npages);
	atomic64_sub(pin->npages, &pin->mm->pinned_vm);
	atomic64_sub(pin->npages, &burst_counters.pinned_pages);
	atomic64_dec(&burst_counters.pins);
	burst_pin_free(pin);
	return 0;
}

static void burst_pin_vm_open(struct vm_area_struct *vma)
{
	atomic64_inc(&burst_counters.mappings); /* a split of a mapping */
}

static void burst_pin_vm_close(struct vm_area_struct *vma)
{
	atomic64_dec(&burst_counters.mappings);
}

static const struct vm_operations_struct burst_pin_vm_ops = {
	.open = burst_pin_vm_open,
	.close = burst_pin_vm_close,
};

static void burst_pin_vm_flags(struct vm_area_struct *vma, vm_flags_t set, vm_flags_t clear)
{
	vma->vm_flags = (vma->vm_flags | set) & ~clear; /* vm_flags_mod() from Linux 6.3 */
}

/* The daemon's mapping: MAP_SHARED, offset 0, at most the pinned pages; writable if the pin is. */
static int burst_pin_mmap(struct file *filp, struct vm_area_struct *vma)
{
	struct burst_pin *pin = filp->private_data;
	unsigned long len = vma->vm_end - vma->vm_start;
	unsigned long n = len >> PAGE_SHIFT;
	unsigned long i, run;
	int ret;

	if (!burst_current_is_daemon())
		return -EPERM;
	if (!(vma->vm_flags & VM_SHARED) || vma->vm_pgoff != 0 || len > pin->npages * PAGE_SIZE)
		return -EINVAL;
	if (!(pin->flags & BURST_KMOD_PIN_WRITE)) {
		if (vma->vm_flags & VM_WRITE)
			return -EACCES;
		burst_pin_vm_flags(vma, 0, VM_MAYWRITE);
	}
	burst_pin_vm_flags(vma, VM_DONTEXPAND | VM_DONTCOPY | VM_DONTDUMP, 0);
	vma->vm_ops = &burst_pin_vm_ops;
	/* Runs of consecutive frames in one call each. */
	for (i = 0; i < n; i += run) {
		for (run = 1; i + run < n; run++)
			if (page_to_pfn(pin->pages[i + run]) != page_to_pfn(pin->pages[i]) + run)
				break;
		ret = remap_pfn_range(vma, vma->vm_start + i * PAGE_SIZE,
				      page_to_pfn(pin->pages[i]), run * PAGE_SIZE,
				      vma->vm_page_prot);
		if (ret)
			return ret; /* the caller unmaps it; vm_ops->close is not called */
	}
	atomic64_inc(&burst_counters.mappings);
	return 0;
}

static long burst_pin_info(struct burst_pin *pin, void __user *arg)
{
	struct burst_kmod_pin_info info = {};
	u32 size;

	if (get_user(size, (u32 __user *)arg))
		return -EFAULT;
	if (size != sizeof(info))
		return -EINVAL;
	info.size = size;
	info.flags = pin->flags;
	info.addr = pin->addr;
	info.length = pin->length;
	info.map_offset = pin->addr & ~PAGE_MASK;
	info.map_length = (u64)pin->npages << PAGE_SHIFT;
	info.tgid = pid_vnr(pin->tgid); /* as the caller's pid namespace sees it; 0 if invisible */
	info.id = pin->id;
	return copy_to_user(arg, &info, sizeof(info)) ? -EFAULT : 0;
}

static long burst_pin_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	if (cmd != BURST_KMOD_PIN_INFO)
		return -ENOTTY;
	return burst_pin_info(filp->private_data, (void __user *)arg);
}

static const struct file_operations burst_pin_fops = {
	.owner = THIS_MODULE,
	.release = burst_pin_release,
	.mmap = burst_pin_mmap,
	.unlocked_ioctl = burst_pin_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.llseek = noop_llseek,
};

/* Validates the request; 0 or -EINVAL. */
static int burst_pin_check(const struct burst_kmod_pin *req)
{
	u64 end;

	if (req->size != sizeof(*req) || (req->flags & ~BURST_KMOD_PIN_WRITE) || req->reserved)
		return -EINVAL;
	if (!req->length || check_add_overflow(req->addr, req->length, &end))
		return -EINVAL;
	return 0;
}

/* Pins and accounts the range of the caller that *pin describes. */
static int burst_pin_acquire(struct burst_pin *pin)
{
	u64 first = pin->addr & PAGE_MASK;
	u64 last = PAGE_ALIGN(pin->addr + pin->length);
	unsigned long npages = (last - first) >> PAGE_SHIFT;
	int ret;

	if (!access_ok((void __user *)(unsigned long)pin->addr, pin->length))
		return -EFAULT;
	pin->pages = kvmalloc_array(npages, sizeof(*pin->pages), GFP_KERNEL_ACCOUNT);
	if (!pin->pages)
		return -ENOMEM;
	pin->mm = current->mm;
	mmgrab(pin->mm);
	ret = burst_pin_account(pin->mm, npages);
	if (ret)
		return ret;
	pin->npages = npages;
	ret = burst_pin_pages(pin);
	if (ret) {
		atomic64_sub(npages, &pin->mm->pinned_vm);
		pin->npages = 0;
	}
	return ret;
}

/* Hands out the pin as a new O_CLOEXEC descriptor, reported with its id in *req. */
static int burst_pin_install(struct burst_pin *pin, struct burst_kmod_pin *req,
			     void __user *arg)
{
	struct file *file;
	int fd;

	fd = get_unused_fd_flags(O_CLOEXEC);
	if (fd < 0)
		return fd;
	file = anon_inode_getfile("[burst-pin]", &burst_pin_fops, pin, O_RDWR);
	if (IS_ERR(file)) {
		put_unused_fd(fd);
		return PTR_ERR(file);
	}
	atomic64_inc(&burst_counters.pins);
	atomic64_add(pin->npages, &burst_counters.pinned_pages);
	req->fd = fd;
	req->id = pin->id;
	if (copy_to_user(arg, req, sizeof(*req))) {
		put_unused_fd(fd);
		fput(file); /* release: unpins and counts down */
		return -EFAULT;
	}
	fd_install(fd, file);
	return 0;
}

int burst_pin_create(void __user *arg)
{
	struct burst_kmod_pin req;
	struct burst_pin *pin;
	int ret;

	if (copy_from_user(&req, arg, sizeof(req)))
		return -EFAULT;
	ret = burst_pin_check(&req);
	if (ret)
		return ret;
	if (!current->mm)
		return -EINVAL;
	pin = kzalloc(sizeof(*pin), GFP_KERNEL_ACCOUNT);
	if (!pin)
		return -ENOMEM;
	pin->addr = req.addr;
	pin->length = req.length;
	pin->flags = req.flags;
	pin->id = atomic64_inc_return(&burst_pin_next_id);
	pin->tgid = get_task_pid(current, PIDTYPE_TGID);
	ret = burst_pin_acquire(pin);
	if (ret)
		goto err;
	ret = burst_pin_install(pin, &req, arg);
	if (ret == -EFAULT)
		return ret; /* the file's release freed the pin */
	if (ret) {
		burst_pin_unpin(pin, pin->npages);
		atomic64_sub(pin->npages, &pin->mm->pinned_vm);
		goto err;
	}
	return 0;
err:
	burst_pin_free(pin);
	return ret;
}

int burst_pin_init(void)
{
	atomic64_set(&burst_pin_next_id, 0);
	return 0;
}

void burst_pin_exit(void)
{
	/* Each pin descriptor holds a module reference: none is left when the module goes. */
}
