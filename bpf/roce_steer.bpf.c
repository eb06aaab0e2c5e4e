// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * roce_steer: steer RoCEv2 (UDP destination port 4791) to the AF_XDP socket of
 * the receive queue, pass everything else to the kernel stack untouched.
 *
 * Parsed: Ethernet, at most one 802.1Q/802.1ad tag, IPv4 (options honoured
 * through IHL; fragments passed) or IPv6 (UDP as the first next header only;
 * extension headers are counted and passed, not walked), UDP.
 * Anything this program does not understand is passed (XDP_PASS).
 *
 * Frags-aware (xdp.frags): with multi-buffer packets only the first buffer is
 * directly addressable; the headers always are on the drivers burst targets.
 * A packet whose headers would cross into a fragment is counted unparsable and
 * passed. Plain program (no CO-RE): the target kernel has no vmlinux BTF.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <xdp/xdp_helpers.h>

#include "roce_steer.h"

/* The XSKMAP's name: "xsks" for burst's own loader (datapath/xdp); DPDK's
 * net_af_xdp looks its custom program's map up as "xsks_map"
 * (roce_steer_dpdk.bpf.c). */
#ifndef BURST_XSKMAP_NAME
#define BURST_XSKMAP_NAME xsks
#endif

/* Read by the loader (from the object before loading, from the kernel map of a
 * program found attached); never written. */
const volatile __u32 burst_steer_version = BURST_STEER_VERSION;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, BURST_STEER_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} BURST_XSKMAP_NAME SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, BURST_STEER_NR_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} burst_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct burst_steer_owner);
} burst_owner SEC(".maps");

#define VLAN_HLEN 4
#define IP_MF 0x2000
#define IP_OFFSET 0x1fff

static __always_inline int count(__u32 idx, int action)
{
	__u64 *c = bpf_map_lookup_elem(&burst_counters, &idx);

	if (c)
		*c += 1;
	return action;
}

static __always_inline int steer(struct xdp_md *ctx)
{
	int act = bpf_redirect_map(&BURST_XSKMAP_NAME, ctx->rx_queue_index, XDP_PASS);

	if (act != XDP_REDIRECT)
		return count(BURST_STEER_PASS_NO_SOCKET, act);
	return count(BURST_STEER_STEERED, act);
}

/* Returns 1 when *udp (already bounds checked) goes to port 4791. */
static __always_inline int is_roce(const struct udphdr *udp)
{
	return udp->dest == bpf_htons(BURST_ROCE_UDP_PORT);
}

static __always_inline int handle_ipv4(struct xdp_md *ctx, void *l3, void *end)
{
	struct iphdr *iph = l3;
	struct udphdr *udp;
	__u32 ihl_bytes;

	if ((void *)(iph + 1) > end)
		return count(BURST_STEER_PASS_UNPARSABLE, XDP_PASS);
	if (iph->version != 4 || iph->ihl < 5)
		return count(BURST_STEER_PASS_UNPARSABLE, XDP_PASS);
	if (iph->protocol != IPPROTO_UDP)
		return count(BURST_STEER_PASS_NOT_ROCE, XDP_PASS);
	if (iph->frag_off & bpf_htons(IP_MF | IP_OFFSET))
		return count(BURST_STEER_PASS_IP_FRAGMENT, XDP_PASS);

	ihl_bytes = (__u32)iph->ihl * 4; /* 20..60 */
	udp = l3 + ihl_bytes;
	if ((void *)(udp + 1) > end)
		return count(BURST_STEER_PASS_UNPARSABLE, XDP_PASS);
	if (!is_roce(udp))
		return count(BURST_STEER_PASS_NOT_ROCE, XDP_PASS);
	return steer(ctx);
}

static __always_inline int handle_ipv6(struct xdp_md *ctx, void *l3, void *end)
{
	struct ipv6hdr *ip6 = l3;
	struct udphdr *udp;

	if ((void *)(ip6 + 1) > end)
		return count(BURST_STEER_PASS_UNPARSABLE, XDP_PASS);
	if (ip6->version != 6)
		return count(BURST_STEER_PASS_UNPARSABLE, XDP_PASS);

	switch (ip6->nexthdr) {
	case IPPROTO_UDP:
		break;
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_FRAGMENT:
	case IPPROTO_DSTOPTS:
	case IPPROTO_AH:
	case IPPROTO_MH:
		/* RoCEv2 never uses them; whatever it is, the kernel handles it. */
		return count(BURST_STEER_PASS_IPV6_EXTHDR, XDP_PASS);
	default:
		return count(BURST_STEER_PASS_NOT_ROCE, XDP_PASS);
	}

	udp = (void *)(ip6 + 1);
	if ((void *)(udp + 1) > end)
		return count(BURST_STEER_PASS_UNPARSABLE, XDP_PASS);
	if (!is_roce(udp))
		return count(BURST_STEER_PASS_NOT_ROCE, XDP_PASS);
	return steer(ctx);
}

/*
 * libxdp's dispatcher (several XDP programs on one netdev): run at priority
 * BURST_STEER_RUN_PRIO (lower runs first; xdp-filter is at 10, so a firewall
 * sees RoCE before burst takes it) and let the next program run when this one
 * passes a frame (XDP_PASS: not RoCE, or no socket on the queue). A steered
 * frame (XDP_REDIRECT) ends the chain. Ignored by a legacy attach.
 */
struct {
	__uint(priority, BURST_STEER_RUN_PRIO);
	__uint(XDP_PASS, 1);
} XDP_RUN_CONFIG(burst_steer);

SEC("xdp.frags")
int burst_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	void *l3 = eth + 1;
	__u16 proto;

	if ((void *)(eth + 1) > end)
		return count(BURST_STEER_PASS_UNPARSABLE, XDP_PASS);
	proto = eth->h_proto;

	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		/* One tag: TCI then the inner ethertype. */
		__be16 *tag = l3;

		if ((void *)(tag + 2) > end)
			return count(BURST_STEER_PASS_UNPARSABLE, XDP_PASS);
		proto = tag[1];
		l3 += VLAN_HLEN;
	}

	if (proto == bpf_htons(ETH_P_IP))
		return handle_ipv4(ctx, l3, end);
	if (proto == bpf_htons(ETH_P_IPV6))
		return handle_ipv6(ctx, l3, end);
	return count(BURST_STEER_PASS_NOT_ROCE, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
