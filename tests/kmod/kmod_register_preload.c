// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Test helper (tests/interop/kmod_pin.sh), preloaded into burstd while burstd does not register
 * with the kernel assistant itself (i17-ibdev's part): at load it opens /dev/burst and issues
 * BURST_KMOD_REGISTER for the netdev $BURST_TEST_KMOD_NETDEV (default eth0), keeping the
 * descriptor for the life of the process, so that the module lets this process mmap pins.
 */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "abi/burst_kmod.h"

__attribute__((constructor)) static void burst_test_kmod_register(void)
{
	const char *netdev = getenv("BURST_TEST_KMOD_NETDEV");
	struct burst_kmod_register reg = { .size = sizeof(reg), .abi_version = BURST_KMOD_ABI_VERSION };
	int fd = open(BURST_KMOD_DEVICE_PATH, O_RDWR | O_CLOEXEC);

	if (!netdev)
		netdev = "eth0";
	reg.ifindex = if_nametoindex(netdev);
	snprintf(reg.name, sizeof(reg.name), "burst%%d");
	if (fd < 0 || ioctl(fd, BURST_KMOD_REGISTER, &reg) != 0) {
		fprintf(stderr, "kmod_register_preload: %s: %s\n", BURST_KMOD_DEVICE_PATH,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return;
	}
	fprintf(stderr, "kmod_register_preload: registered %s on %s (fd %d)\n", reg.name, netdev,
		fd);
}
