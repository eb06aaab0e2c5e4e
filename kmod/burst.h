/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * burst kernel assistant: what the module's parts share. The user API is ../abi/burst_kmod.h.
 *   burst_main.c  module init/exit, the misc device /dev/burst, ioctl dispatch, counters
 *   burst_ibdev.c the ib_device of a registered burstd, shadow objects, raised events
 *   burst_pin.c   pinning a caller's memory, the pin descriptor, the daemon's mapping of it
 */
#ifndef BURST_KMOD_BURST_H
#define BURST_KMOD_BURST_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include "burst_kmod.h"

/* Counters reported by BURST_KMOD_STATS. */
struct burst_counters {
	atomic64_t devices;
	atomic64_t pins;
	atomic64_t pinned_pages;
	atomic64_t mappings;
	atomic64_t shadows;
	atomic64_t events_raised;
	atomic64_t events_dropped;
};

extern struct burst_counters burst_counters;

/* State of one open /dev/burst; registration is NULL until BURST_KMOD_REGISTER succeeds. */
struct burst_file {
	struct mutex lock;
	struct burst_ibdev *registration;
};

/* burst_ibdev.c */
int burst_ibdev_register(struct burst_file *bf, void __user *arg);
int burst_ibdev_raise(struct burst_file *bf, void __user *arg);
void burst_ibdev_release(struct burst_file *bf); /* descriptor closed: unregister */
bool burst_current_is_daemon(void); /* the calling process holds a registration */
int burst_ibdev_init(void);
void burst_ibdev_exit(void);

/* burst_pin.c */
int burst_pin_create(void __user *arg); /* BURST_KMOD_PIN_INFO is an ioctl of the pin descriptor */
int burst_pin_init(void);
void burst_pin_exit(void);

#endif /* BURST_KMOD_BURST_H */
