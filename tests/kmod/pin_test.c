// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The kernel assistant's pins (kmod/burst_pin.c) against bad input, run as root in a guest with
 * the module loaded (tests/interop/kmod_pin.sh): pins and counters (BURST_KMOD_STATS, VmPin),
 * PIN_INFO, EINVAL for bad sizes/flags/reserved/zero length/overflow, EFAULT for an unmapped range
 * and for a writable pin of read-only memory, ENOMEM beyond RLIMIT_MEMLOCK (a child without
 * CAP_IPC_LOCK), EPERM for mmap by a process without a registration, the daemon's mapping (after
 * BURST_KMOD_REGISTER: the same pages, its limits, the pin kept by the mapping), and kill -9 of a
 * process holding pins returning the counters to zero.
 * Usage: pin_test [--stats: print the counters]. Exit 0 pass, 1 fail, 77 no /dev/burst.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "abi/burst_kmod.h"

static int failures;
static int dev = -1;
static long page;

#define CHECK(cond, ...)                                    \
	do {                                                \
		if (cond) {                                 \
			printf("ok   ");                    \
		} else {                                    \
			printf("FAIL ");                    \
			failures++;                         \
		}                                           \
		printf(__VA_ARGS__);                        \
		printf("\n");                               \
		fflush(stdout);                             \
	} while (0)

static struct burst_kmod_stats stats(void)
{
	struct burst_kmod_stats st = { .size = sizeof(st) };

	if (ioctl(dev, BURST_KMOD_STATS, &st) != 0) {
		perror("BURST_KMOD_STATS");
		exit(1);
	}
	return st;
}

static long vm_pin_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* BURST_KMOD_PIN; returns the fd or -errno. */
static int pin(void *addr, uint64_t len, uint32_t flags, struct burst_kmod_pin *out)
{
	struct burst_kmod_pin p = { .size = sizeof(p), .flags = flags };

	p.addr = (uintptr_t)addr;
	p.length = len;
	if (ioctl(dev, BURST_KMOD_PIN, &p) != 0)
		return -errno;
	if (out)
		*out = p;
	return p.fd;
}

static int pin_raw(struct burst_kmod_pin *p)
{
	return ioctl(dev, BURST_KMOD_PIN, p) == 0 ? p->fd : -errno;
}

static void test_pin_and_info(char *buf)
{
	struct burst_kmod_stats before = stats(), st;
	struct burst_kmod_pin p;
	struct burst_kmod_pin_info info = { .size = sizeof(info) };
	long vm0 = vm_pin_kb();
	int fd = pin(buf + 100, 4 * page, BURST_KMOD_PIN_WRITE, &p);

	CHECK(fd >= 0, "PIN of 4 pages at an offset of 100: fd %d", fd);
	if (fd < 0)
		return;
	CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC, "the pin is O_CLOEXEC");
	st = stats();
	CHECK(st.pins == before.pins + 1 && st.pinned_pages == before.pinned_pages + 5,
	      "counters: pins %llu, pinned_pages %llu (5 pages)", (unsigned long long)st.pins,
	      (unsigned long long)st.pinned_pages);
	CHECK(vm_pin_kb() == vm0 + 5 * page / 1024, "VmPin %ld kB (was %ld)", vm_pin_kb(), vm0);
	CHECK(ioctl(fd, BURST_KMOD_PIN_INFO, &info) == 0 && info.tgid == (uint32_t)getpid() &&
	      info.addr == (uintptr_t)(buf + 100) && info.length == (uint64_t)(4 * page) &&
	      info.map_offset == 100 && info.map_length == (uint64_t)(5 * page) &&
	      info.flags == BURST_KMOD_PIN_WRITE && info.id == p.id,
	      "PIN_INFO: tgid %u, offset %llu, map_length %llu, id %llu", info.tgid,
	      (unsigned long long)info.map_offset, (unsigned long long)info.map_length,
	      (unsigned long long)info.id);
	info.size = sizeof(info) - 8;
	CHECK(ioctl(fd, BURST_KMOD_PIN_INFO, &info) != 0 && errno == EINVAL, "PIN_INFO size: EINVAL");
	CHECK(ioctl(fd, BURST_KMOD_STATS, &st) != 0 && errno == ENOTTY, "other ioctl on a pin: ENOTTY");
	CHECK(ioctl(dev, BURST_KMOD_PIN_INFO, &info) != 0 && errno == ENOTTY,
	      "PIN_INFO on /dev/burst: ENOTTY");
	void *m = mmap(NULL, 5 * page, PROT_READ, MAP_SHARED, fd, 0);

	CHECK(m == MAP_FAILED && errno == EPERM, "mmap of a pin without a registration: EPERM");
	close(fd);
	st = stats();
	CHECK(st.pins == before.pins && st.pinned_pages == before.pinned_pages && vm_pin_kb() == vm0,
	      "close: counters and VmPin back (pins %llu)", (unsigned long long)st.pins);
}

static void test_bad_input(char *buf)
{
	struct burst_kmod_pin p = { .size = sizeof(p), .addr = (uintptr_t)buf, .length = page };
	struct burst_kmod_stats before = stats();

	p.size = sizeof(p) - 8;
	CHECK(pin_raw(&p) == -EINVAL, "PIN size %u: EINVAL", p.size);
	p.size = sizeof(p);
	p.flags = 1u << 5;
	CHECK(pin_raw(&p) == -EINVAL, "PIN unknown flag: EINVAL");
	p.flags = 0;
	p.reserved = 1;
	CHECK(pin_raw(&p) == -EINVAL, "PIN reserved != 0: EINVAL");
	p.reserved = 0;
	CHECK(pin(buf, 0, 0, NULL) == -EINVAL, "PIN of length 0: EINVAL");
	CHECK(pin((void *)(UINT64_MAX - 100), 200, 0, NULL) == -EINVAL, "PIN wrapping: EINVAL");
	CHECK(pin((void *)(1ull << 62), page, 0, NULL) == -EFAULT, "PIN of a kernel address: EFAULT");
	char *hole = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	munmap(hole + page, page);
	CHECK(pin(hole + page, page, 0, NULL) == -EFAULT, "PIN of an unmapped page: EFAULT");
	CHECK(pin(hole, 3 * page, BURST_KMOD_PIN_WRITE, NULL) == -EFAULT,
	      "PIN over a hole: EFAULT");
	mprotect(hole, page, PROT_READ);
	CHECK(pin(hole, page, BURST_KMOD_PIN_WRITE, NULL) == -EFAULT,
	      "writable PIN of read-only memory: EFAULT");
	int fd = pin(hole, page, 0, NULL);

	CHECK(fd >= 0, "read-only PIN of read-only memory");
	close(fd);
	struct burst_kmod_stats st = { .size = 8 };

	CHECK(ioctl(dev, BURST_KMOD_STATS, &st) != 0 && errno == EINVAL, "STATS size 8: EINVAL");
	CHECK(ioctl(dev, _IO(BURST_KMOD_IOC_MAGIC, 0x7f)) != 0 && errno == ENOTTY,
	      "unknown ioctl: ENOTTY");
	st = stats();
	CHECK(st.pins == before.pins && st.pinned_pages == before.pinned_pages,
	      "nothing left pinned by the refused calls");
	munmap(hole, 3 * page);
}

/* A child without CAP_IPC_LOCK (nobody) and RLIMIT_MEMLOCK of 16 pages. */
static void test_memlock(void)
{
	pid_t child = fork();

	if (child == 0) {
		struct rlimit rl = { 16 * page, 16 * page };
		char *b = mmap(NULL, 32 * page, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		int a, c;

		if (setrlimit(RLIMIT_MEMLOCK, &rl) || setgid(65534) || setuid(65534))
			_exit(2);
		failures = 0;
		a = pin(b, 10 * page, BURST_KMOD_PIN_WRITE, NULL);
		CHECK(a >= 0, "[nobody, memlock 16 pages] PIN of 10 pages");
		c = pin(b + 10 * page, 10 * page, BURST_KMOD_PIN_WRITE, NULL);
		CHECK(c == -ENOMEM, "[nobody] 10 more pages beyond RLIMIT_MEMLOCK: ENOMEM (%d)", c);
		CHECK(pin(b, 17 * page, 0, NULL) == -ENOMEM, "[nobody] 17 pages at once: ENOMEM");
		close(a);
		c = pin(b + 10 * page, 16 * page, BURST_KMOD_PIN_WRITE, NULL);
		CHECK(c >= 0, "[nobody] after a close, 16 pages fit again");
		_exit(failures ? 1 : 0);
	}
	int status = 0;

	waitpid(child, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "memlock child exited %d",
	      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

/* kill -9 of a process holding pins: every count returns. */
static void test_kill(void)
{
	struct burst_kmod_stats before = stats(), st;
	int pipefd[2];
	char c;

	if (pipe(pipefd))
		return;
	pid_t child = fork();

	if (child == 0) {
		char *b = malloc(64 * page);

		memset(b, 1, 64 * page);
		for (int i = 0; i < 3; i++)
			if (pin(b + i * 16 * page, 16 * page, BURST_KMOD_PIN_WRITE, NULL) < 0)
				_exit(1);
		if (write(pipefd[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	CHECK(read(pipefd[0], &c, 1) == 1, "child holds 3 pins");
	st = stats();
	CHECK(st.pins == before.pins + 3, "counters: pins %llu, pages %llu",
	      (unsigned long long)st.pins, (unsigned long long)st.pinned_pages);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	for (int i = 0; i < 200; i++) {
		st = stats();
		if (st.pins == before.pins)
			break;
		usleep(10000);
	}
	CHECK(st.pins == before.pins && st.pinned_pages == before.pinned_pages,
	      "kill -9: pins %llu, pinned_pages %llu", (unsigned long long)st.pins,
	      (unsigned long long)st.pinned_pages);
	close(pipefd[0]);
}

/* The daemon's mapping, after registering (the caller becomes a daemon). */
static void test_daemon_map(char *buf)
{
	struct burst_kmod_register reg = { .size = sizeof(reg), .abi_version = 1 };
	int regfd = open(BURST_KMOD_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	reg.ifindex = if_nametoindex("eth0") ? if_nametoindex("eth0") : if_nametoindex("lo");
	snprintf(reg.name, sizeof(reg.name), "burst%%d");
	snprintf(reg.socket_path, sizeof(reg.socket_path), "/tmp/pin_test.sock");
	if (ioctl(regfd, BURST_KMOD_REGISTER, &reg) != 0) {
		printf("skip the daemon mapping: BURST_KMOD_REGISTER: %s\n", strerror(errno));
		close(regfd);
		return;
	}
	struct burst_kmod_stats before = stats(), st;
	int fd = pin(buf + 8, 2 * page, BURST_KMOD_PIN_WRITE, NULL);
	int ro = pin(buf, page, 0, NULL);

	CHECK(fd >= 0 && ro >= 0, "two pins (writable, read-only)");
	CHECK(mmap(NULL, 3 * page, PROT_READ, MAP_SHARED, fd, page) == MAP_FAILED &&
	      errno == EINVAL, "mmap at an offset: EINVAL");
	CHECK(mmap(NULL, 4 * page, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EINVAL,
	      "mmap longer than the pin: EINVAL");
	CHECK(mmap(NULL, 3 * page, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED && errno == EINVAL,
	      "MAP_PRIVATE: EINVAL");
	CHECK(mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0) == MAP_FAILED &&
	      errno == EACCES, "writable mapping of a read-only pin: EACCES");
	char *m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	CHECK(m != MAP_FAILED, "daemon mmap of the pin");
	if (m == MAP_FAILED)
		return;
	memcpy(buf + 8, "application", 12);
	CHECK(memcmp(m + 8, "application", 12) == 0, "the mapping shows the application's bytes");
	memcpy(m + 8 + page, "daemon", 7);
	CHECK(memcmp(buf + 8 + page, "daemon", 7) == 0, "the application sees the daemon's bytes");
	st = stats();
	CHECK(st.mappings == before.mappings + 1, "mappings %llu", (unsigned long long)st.mappings);
	close(fd);
	close(ro);
	st = stats();
	CHECK(st.pins == before.pins + 1, "closed: the mapping keeps its pin (pins %llu)",
	      (unsigned long long)st.pins);
	CHECK(mremap(m, 3 * page, 4 * page, 0) == MAP_FAILED, "mremap to grow: refused");
	munmap(m, 3 * page);
	st = stats();
	CHECK(st.pins == before.pins && st.mappings == before.mappings &&
	      st.pinned_pages == before.pinned_pages,
	      "unmapped: pins %llu, mappings %llu, pages %llu", (unsigned long long)st.pins,
	      (unsigned long long)st.mappings, (unsigned long long)st.pinned_pages);
	close(regfd);
}

int main(int argc, char **argv)
{
	page = sysconf(_SC_PAGESIZE);
	dev = open(BURST_KMOD_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (dev < 0) {
		printf("SKIP: %s: %s (module not loaded)\n", BURST_KMOD_DEVICE_PATH, strerror(errno));
		return 77;
	}
	if (argc > 1 && strcmp(argv[1], "--stats") == 0) { /* for the scripts */
		struct burst_kmod_stats s = stats();

		printf("pins %llu pinned_pages %llu mappings %llu\n", (unsigned long long)s.pins,
		       (unsigned long long)s.pinned_pages, (unsigned long long)s.mappings);
		return 0;
	}
	char *buf = mmap(NULL, 16 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			 -1, 0);

	memset(buf, 0, 16 * page);
	test_pin_and_info(buf);
	test_bad_input(buf);
	test_memlock();
	test_kill();
	test_daemon_map(buf);
	struct burst_kmod_stats st = stats();

	CHECK(st.pins == 0 && st.pinned_pages == 0 && st.mappings == 0,
	      "at the end: pins %llu, pinned_pages %llu, mappings %llu",
	      (unsigned long long)st.pins, (unsigned long long)st.pinned_pages,
	      (unsigned long long)st.mappings);
	printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}
