/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Shared between bpf/roce_steer.bpf.c and the AF_XDP loader (datapath/xdp/).
 * Plain C with fixed-width kernel types so that both the BPF target and C++
 * include it. Everything the loader and the program must agree on lives here.
 */
#ifndef BURST_BPF_ROCE_STEER_H
#define BURST_BPF_ROCE_STEER_H

#include <linux/types.h>

/*
 * Bumped whenever the maps, the counters or the steering rules change. The
 * program carries it in .rodata (burst_steer_version); the loader checks the
 * object it loads against this value and reports the version of a stale
 * program it replaces.
 */
#define BURST_STEER_VERSION 1

/* Kernel program name (at most 15 characters): how a stale program is found. */
#define BURST_STEER_PROG_NAME "burst_steer"
#define BURST_STEER_VERSION_VAR "burst_steer_version"
#define BURST_STEER_XSKS_MAP "xsks"
#define BURST_STEER_COUNTERS_MAP "burst_counters"
#define BURST_STEER_OWNER_MAP "burst_owner"

#define BURST_ROCE_UDP_PORT 4791

/* Run priority in libxdp's dispatcher (XDP_RUN_CONFIG): libxdp's default. */
#define BURST_STEER_RUN_PRIO 50

/* Default size of the XSKMAP; the loader resizes it to the netdev's queues. */
#define BURST_STEER_MAX_QUEUES 64

/* Indices of the per-CPU counters map. */
enum burst_steer_counter {
	BURST_STEER_STEERED = 0,	/* UDP 4791, redirected to an AF_XDP socket */
	BURST_STEER_PASS_NOT_ROCE,	/* parsed, not RoCEv2 (other L3/L4/port) */
	BURST_STEER_PASS_UNPARSABLE,	/* truncated or malformed headers */
	BURST_STEER_PASS_IP_FRAGMENT,	/* IPv4 fragment (cannot see UDP port) */
	BURST_STEER_PASS_IPV6_EXTHDR,	/* IPv6 with extension headers (not walked) */
	BURST_STEER_PASS_NO_SOCKET,	/* RoCEv2, but no socket on this rx queue */
	BURST_STEER_NR_COUNTERS,
};

/* Value of the single entry of the owner map, written by the loader. */
struct burst_steer_owner {
	__u32 pid;		/* process that attached the program */
	__u32 version;		/* BURST_STEER_VERSION of that process */
	__u64 start_time;	/* its start time (clock ticks after boot, /proc/PID/stat) */
};

#endif /* BURST_BPF_ROCE_STEER_H */
