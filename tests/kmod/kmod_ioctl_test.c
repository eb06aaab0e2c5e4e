/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The daemon side of /dev/burst against bad input (abi/burst_kmod.h), run in a guest with the
 * module loaded (tests/interop/kmod_ibdev.sh):
 *   kmod_ioctl_test bad IFINDEX      RAISE before REGISTER: EPERM; wrong size, abi, flags,
 *                                    reserved, name, socket: EINVAL; unknown ifindex: ENODEV
 *   kmod_ioctl_test noperm IFINDEX   a valid REGISTER without CAP_NET_ADMIN: EPERM
 *   kmod_ioctl_test taken IFINDEX    a netdev that has a burst device (burstd runs): EEXIST
 *   kmod_ioctl_test cycle IFINDEX    REGISTER on a free netdev, a second on that descriptor: EBUSY,
 *                                    on another: EEXIST; RAISE: unknown shadow counted as dropped,
 *                                    bad kind/event EINVAL, a port event; close: device gone
 * Exit 0 pass, 1 fail, 77 when /dev/burst is absent.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "abi/burst_kmod.h"

static int failures;

static void expect(const char *what, int rc, int want_errno)
{
	int got = rc == 0 ? 0 : errno;

	if (got != want_errno) {
		printf("FAIL: %s: got %s, want %s\n", what, got ? strerror(got) : "success",
		       want_errno ? strerror(want_errno) : "success");
		++failures;
	} else {
		printf("ok: %s: %s\n", what, got ? strerror(got) : "success");
	}
}

static int open_dev(void)
{
	int fd = open(BURST_KMOD_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		printf("SKIP: %s: %s\n", BURST_KMOD_DEVICE_PATH, strerror(errno));
		exit(errno == ENOENT ? 77 : 1);
	}
	return fd;
}

static void valid_request(struct burst_kmod_register *r, unsigned int ifindex)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->abi_version = BURST_KMOD_ABI_VERSION;
	r->ifindex = ifindex;
	snprintf(r->name, sizeof(r->name), "burst%%d");
	snprintf(r->socket_path, sizeof(r->socket_path), "/run/burst/kmod-test.sock");
	r->attr.max_qp = 1024;
	r->attr.max_cqe = 65535;
	r->attr.max_cq = 1024;
	r->attr.max_pkeys = 1;
	r->attr.num_comp_vectors = 1;
	r->attr.active_mtu = 3;
}

static int do_register(int fd, struct burst_kmod_register *r)
{
	return ioctl(fd, BURST_KMOD_REGISTER, r);
}

static int do_raise(int fd, unsigned int kind, unsigned int type, unsigned int tgid,
		    unsigned long long handle)
{
	struct burst_kmod_event ev = { .size = sizeof(ev), .kind = kind, .event_type = type,
				       .tgid = tgid, .handle = handle };

	return ioctl(fd, BURST_KMOD_RAISE, &ev);
}

static struct burst_kmod_stats stats(int fd)
{
	struct burst_kmod_stats st = { .size = sizeof(st) };

	if (ioctl(fd, BURST_KMOD_STATS, &st) != 0) {
		printf("FAIL: STATS: %s\n", strerror(errno));
		++failures;
	}
	return st;
}

static void bad_input(unsigned int ifindex)
{
	struct burst_kmod_register r;
	int fd = open_dev();

	expect("RAISE before REGISTER", do_raise(fd, BURST_KMOD_EV_CQ_COMP, 0, 1, 1), EPERM);
	valid_request(&r, ifindex);
	r.size = sizeof(r) - 4;
	expect("REGISTER with a wrong size", do_register(fd, &r), EINVAL);
	valid_request(&r, ifindex);
	r.abi_version = BURST_KMOD_ABI_VERSION + 1;
	expect("REGISTER with another ABI version", do_register(fd, &r), EINVAL);
	valid_request(&r, ifindex);
	r.flags = 1;
	expect("REGISTER with flags", do_register(fd, &r), EINVAL);
	valid_request(&r, ifindex);
	r.attr.reserved[1] = 1;
	expect("REGISTER with a reserved word set", do_register(fd, &r), EINVAL);
	valid_request(&r, ifindex);
	memset(r.name, 'x', sizeof(r.name));
	expect("REGISTER with an unterminated name", do_register(fd, &r), EINVAL);
	valid_request(&r, ifindex);
	snprintf(r.socket_path, sizeof(r.socket_path), "relative.sock");
	expect("REGISTER with a relative socket path", do_register(fd, &r), EINVAL);
	valid_request(&r, ifindex);
	r.attr.active_mtu = 9;
	expect("REGISTER with active_mtu 9", do_register(fd, &r), EINVAL);
	valid_request(&r, 0x7ffffff0);
	expect("REGISTER on an unknown ifindex", do_register(fd, &r), ENODEV);
	expect("RAISE after refused REGISTERs", do_raise(fd, BURST_KMOD_EV_CQ_COMP, 0, 1, 1),
	       EPERM);
	expect("unknown ioctl", ioctl(fd, _IO(BURST_KMOD_IOC_MAGIC, 0x7f)), ENOTTY);
	close(fd);
}

static void no_permission(unsigned int ifindex)
{
	struct burst_kmod_register r;
	int fd = open_dev();

	valid_request(&r, ifindex);
	expect("REGISTER without CAP_NET_ADMIN", do_register(fd, &r), EPERM);
	close(fd);
}

static void taken(unsigned int ifindex)
{
	struct burst_kmod_register r;
	int fd = open_dev();

	valid_request(&r, ifindex);
	expect("REGISTER on a netdev that has a burst device", do_register(fd, &r), EEXIST);
	close(fd);
}

static void cycle(unsigned int ifindex)
{
	struct burst_kmod_register r;
	struct burst_kmod_stats before, after;
	int fd = open_dev(), fd2 = open_dev();

	before = stats(fd);
	valid_request(&r, ifindex);
	expect("REGISTER", do_register(fd, &r), 0);
	printf("registered as %s\n", r.name);
	valid_request(&r, ifindex);
	expect("a second REGISTER on the descriptor", do_register(fd, &r), EBUSY);
	valid_request(&r, ifindex);
	expect("REGISTER of the netdev on another descriptor", do_register(fd2, &r), EEXIST);
	expect("RAISE CQ_COMP of no shadow", do_raise(fd, BURST_KMOD_EV_CQ_COMP, 0, 1, 42), 0);
	expect("RAISE QP_ASYNC QP_FATAL of no shadow", do_raise(fd, BURST_KMOD_EV_QP_ASYNC, 1, 1, 42),
	       0);
	/* IB_EVENT_CQ_ERR = 0, IB_EVENT_QP_FATAL = 1 */
	expect("RAISE QP_ASYNC with a CQ event", do_raise(fd, BURST_KMOD_EV_QP_ASYNC, 0, 1, 42),
	       EINVAL);
	expect("RAISE of an unknown kind", do_raise(fd, 99, 0, 1, 42), EINVAL);
	expect("RAISE CQ_COMP with tgid 0", do_raise(fd, BURST_KMOD_EV_CQ_COMP, 0, 0, 42), EINVAL);
	expect("RAISE PORT_ASYNC naming a handle", do_raise(fd, BURST_KMOD_EV_PORT_ASYNC, 18, 0, 1),
	       EINVAL);
	/* IB_EVENT_GID_CHANGE = 18 */
	expect("RAISE PORT_ASYNC GID_CHANGE", do_raise(fd, BURST_KMOD_EV_PORT_ASYNC, 18, 0, 0), 0);
	after = stats(fd);
	if (after.devices != before.devices + 1 || after.events_dropped != before.events_dropped + 2 ||
	    after.events_raised != before.events_raised + 1) {
		printf("FAIL: counters: devices %llu->%llu raised %llu->%llu dropped %llu->%llu\n",
		       (unsigned long long)before.devices, (unsigned long long)after.devices,
		       (unsigned long long)before.events_raised,
		       (unsigned long long)after.events_raised,
		       (unsigned long long)before.events_dropped,
		       (unsigned long long)after.events_dropped);
		++failures;
	} else {
		printf("ok: counters: devices +1, raised +1, dropped +2\n");
	}
	close(fd);
	after = stats(fd2);
	if (after.devices != before.devices) {
		printf("FAIL: devices %llu after close, %llu before\n",
		       (unsigned long long)after.devices, (unsigned long long)before.devices);
		++failures;
	} else {
		printf("ok: close unregistered the device\n");
	}
	close(fd2);
}

int main(int argc, char **argv)
{
	unsigned int ifindex;

	if (argc != 3) {
		fprintf(stderr, "usage: %s bad|noperm|taken|cycle IFINDEX\n", argv[0]);
		return 2;
	}
	ifindex = (unsigned int)strtoul(argv[2], NULL, 0);
	if (!strcmp(argv[1], "bad"))
		bad_input(ifindex);
	else if (!strcmp(argv[1], "noperm"))
		no_permission(ifindex);
	else if (!strcmp(argv[1], "taken"))
		taken(ifindex);
	else if (!strcmp(argv[1], "cycle"))
		cycle(ifindex);
	else
		return 2;
	printf("%s\n", failures ? "FAIL" : "PASS");
	return failures ? 1 : 0;
}
