// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * A foreign XDP program (not burst's) for tests/netns: attached with iproute2
 * to check that XdpPort refuses a busy interface instead of replacing it.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int foreign_pass(struct xdp_md *ctx)
{
	(void)ctx;
	return XDP_PASS;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
