// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * roce_steer for DPDK's net_af_xdp (its xdp_prog devarg): the same program,
 * with the XSKMAP named as that PMD looks it up. UDP 4791 goes to the PMD's
 * AF_XDP socket of the queue, everything else (ARP, the kernel's TCP, ...)
 * stays with the kernel, as with burst's own AF_XDP backend.
 */
#define BURST_XSKMAP_NAME xsks_map
#include "roce_steer.bpf.c"
