/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * What a burst device looks like to libibverbs: the names and constants shared
 * by whoever describes the device in sysfs (burstctl run's private tree today,
 * burstd and the kernel assistant later) and the provider that claims it.
 *
 * A burst device is recognised by its IB device name: "burst" followed by the
 * device index (burst0, burst1, ...). libibverbs offers a provider the name as
 * the modalias "rdma_device:Nburst0" when the device has no device/modalias
 * file, and the provider also checks the uverbs ABI version below, so a device
 * of another driver that happens to carry the name is refused.
 *
 * Sysfs layout (under $SYSFS_PATH; one port, RoCEv2 on an Ethernet netdev):
 *
 *   class/infiniband_verbs/abi_version             "6"
 *   class/infiniband_verbs/uverbsN/ibdev           "burst0"
 *   class/infiniband_verbs/uverbsN/abi_version     "1"   (BURST_UVERBS_ABI_VERSION)
 *   class/infiniband_verbs/uverbsN/dev             "1:7" (the node /dev/infiniband/uverbsN)
 *   class/infiniband/burst0/node_type              "1: CA"
 *   class/infiniband/burst0/node_guid              "xxxx:xxxx:xxxx:xxxx" (EUI-64 of the MAC)
 *   class/infiniband/burst0/sys_image_guid, fw_ver, hca_type, hw_rev, board_id, node_desc
 *   class/infiniband/burst0/ports/1/state          "4: ACTIVE"
 *   class/infiniband/burst0/ports/1/phys_state     "5: LinkUp"
 *   class/infiniband/burst0/ports/1/link_layer     "Ethernet"
 *   class/infiniband/burst0/ports/1/{lid,sm_lid,lid_mask_count,sm_sl,cap_mask}
 *   class/infiniband/burst0/ports/1/pkeys/0        "0xffff"
 *   class/infiniband/burst0/ports/1/gids/I         8 groups of 4 hex digits, I < GID table length
 *   class/infiniband/burst0/ports/1/gid_attrs/types/I  "RoCE v2" (every slot, used or not)
 *   class/infiniband/burst0/ports/1/gid_attrs/ndevs/I  netdev name (used slots only)
 *   class/infiniband/burst0/ports/1/rate           "10 Gb/sec (1X QDR)" (the netdev's speed)
 *   class/infiniband/burst0/tc/1/traffic_class     "Global tclass=N" (only when configured)
 *   class/infiniband/burst0/burst_socket           its burstd's control socket (burst only;
 *                                                  several devices: one burstd each)
 *   class/misc/rdma_cm/abi_version                 "4"  (librdmacm; the node: burst_shim.h)
 *   class/misc/rdma_cm/dev                         "10:58"
 *
 * As on a PCI RoCE NIC, class/infiniband/burst0 is a symlink to the IB device
 * below its "device" (here <root>/devices/burst0, absolute, so that it
 * resolves the same under $SYSFS_PATH and at /sys/class/infiniband):
 *
 *   devices/burst0/                       the NIC (what device/ resolves to)
 *   devices/burst0/infiniband/burst0/     the IB device; its "device" is ../..
 *   devices/burst0/numa_node              the netdev's device's, else "-1"
 *   devices/burst0/local_cpus, local_cpulist   the netdev's device's, else every
 *                                         possible CPU (kernel bitmap / list)
 *   devices/burst0/vendor, device         BURST_VENDOR_ID, BURST_VENDOR_PART_ID ("0x%04x")
 *   devices/burst0/driver                 -> ../../bus/burst/drivers/burst (basename
 *                                         BURST_DRIVER_NAME: Open MPI fnmatches it)
 *   devices/burst0/net/<ifname>           -> the netdev's /sys directory, or a
 *                                         directory with ifindex and address
 *                                         when this /sys does not show it
 *   class/infiniband_verbs/uverbsN/device -> devices/burst0 (absolute)
 * No device/modalias (libibverbs then matches the provider by name) and no
 * subsystem link (not a PCI function: NCCL attaches the NIC to the first CPU).
 *
 * `burstctl run` shows the tree at /sys/class/infiniband{,_verbs} too, in a
 * private mount namespace (docs/sysfs.md), for consumers that ignore SYSFS_PATH.
 *
 * The provider reads the netdev name from ndevs/0 (the default GID's netdev),
 * node_guid / sys_image_guid and burst_socket from their files.
 *
 * C-compatible; needs no RDMA headers.
 */
#ifndef BURST_ABI_BURST_DEVICE_H_
#define BURST_ABI_BURST_DEVICE_H_

#include <stdint.h>

#define BURST_IBDEV_PREFIX "burst"
#define BURST_PROVIDER_NAME "burst" /* libburst-rdmav34.so, "driver burst" */

/* class/infiniband_verbs/abi_version: the kernel's IB_USER_VERBS_ABI_VERSION,
 * which libibverbs 1.14.44 requires to be 6. */
#define BURST_UVERBS_CLASS_ABI_VERSION 6
/* uverbsN/abi_version: the driver-specific ABI between burst devices and the
 * provider; the provider claims only devices with exactly this version. */
#define BURST_UVERBS_ABI_VERSION 1

/* The uverbs character device: /dev/full. A command libibverbs sends to the
 * kernel fails cleanly (write: ENOSPC, ioctl: ENOTTY) instead of "succeeding"
 * with garbage as /dev/null would. */
#define BURST_UVERBS_CDEV_MAJOR 1
#define BURST_UVERBS_CDEV_MINOR 7
#define BURST_CDEV_DIR "/dev/infiniband" /* fixed in libibverbs (RDMA_CDEV_DIR) */

#define BURST_PORT_NUM 1
#define BURST_GID_TABLE_LEN 256
#define BURST_PKEY_TABLE_LEN 1
#define BURST_DEFAULT_PKEY 0xffff

#define BURST_FW_VER "burst 0.1"
/* "bst": a locally administered (not IEEE-assigned) OUI, the way siw uses "bmt". */
#define BURST_VENDOR_ID 0x627374
#define BURST_VENDOR_PART_ID 1
#define BURST_HCA_TYPE "burst"
#define BURST_BOARD_ID "burst soft-RoCE"

#define BURST_GID_TYPE_ROCE_V2 "RoCE v2"
/* The basename of devices/<ibdev>/driver (Open MPI: opal_common_ucx_devices). */
#define BURST_DRIVER_NAME "burst"
#define BURST_NETDEV_FILE "ports/1/gid_attrs/ndevs/0"
/* The control socket of the burstd serving the device (absolute path), in the
 * IB device's directory; absent: $BURST_SOCKET, else BURST_CTL_DEFAULT_SOCKET. */
#define BURST_SOCKET_FILE "burst_socket"

/* The most header bytes a RoCEv2 packet with a full MTU of payload carries
 * inside the netdev MTU: IPv6 40 + UDP 8 + BTH 12 + RETH 16 + ImmDt 4 + ICRC 4
 * (RDMA WRITE ONLY with immediate over IPv6). Linux rxe uses 80. */
#define BURST_ROCE_MAX_HDR_BYTES 84

/* The IB MTU (IBV_MTU_256 = 1 .. IBV_MTU_4096 = 5) of a port on a netdev with
 * this L3 MTU: the largest one whose packets, headers included, fit; 0 when
 * not even 256 bytes fit (the port cannot carry RoCE). */
static inline uint8_t burst_ib_mtu_for_netdev(uint32_t netdev_mtu) {
  uint8_t ib_mtu = 0;
  uint32_t bytes = 256;
  uint8_t e = 1;
  for (; e <= 5; ++e, bytes <<= 1) {
    if (netdev_mtu < BURST_ROCE_MAX_HDR_BYTES || bytes > netdev_mtu - BURST_ROCE_MAX_HDR_BYTES) {
      break;
    }
    ib_mtu = e;
  }
  return ib_mtu;
}

/* ibv_port_attr.active_width / active_speed (IBA PortInfo encodings) of a
 * port on an Ethernet link of this speed: the width x lane speed pair that
 * comes closest without exceeding it, the way Linux reports RoCE ports
 * (unknown or below 5 Gb/s: 1X SDR). The provider reports it in
 * ibv_query_port; the sysfs tree writes it as ports/1/rate. */
#define BURST_IB_WIDTH_1X 1
#define BURST_IB_WIDTH_4X 2
#define BURST_IB_SPEED_SDR 1   /* 2.5 Gb/s per lane */
#define BURST_IB_SPEED_DDR 2   /* 5 */
#define BURST_IB_SPEED_QDR 4   /* 10 */
#define BURST_IB_SPEED_FDR 16  /* 14 */
#define BURST_IB_SPEED_EDR 32  /* 25 */
#define BURST_IB_SPEED_HDR 64  /* 50 */
#define BURST_IB_SPEED_NDR 128 /* 100 */

struct burst_ib_width_speed {
  uint8_t width;
  uint8_t speed;
};

static inline struct burst_ib_width_speed burst_eth_width_speed(uint32_t mbps) {
  static const struct {
    uint32_t min_mbps;
    struct burst_ib_width_speed ws;
  } rows[] = {
      {400000, {BURST_IB_WIDTH_4X, BURST_IB_SPEED_NDR}},
      {200000, {BURST_IB_WIDTH_4X, BURST_IB_SPEED_HDR}},
      {100000, {BURST_IB_WIDTH_4X, BURST_IB_SPEED_EDR}},
      {56000, {BURST_IB_WIDTH_4X, BURST_IB_SPEED_FDR}},
      {50000, {BURST_IB_WIDTH_1X, BURST_IB_SPEED_HDR}},
      {40000, {BURST_IB_WIDTH_4X, BURST_IB_SPEED_QDR}},
      {25000, {BURST_IB_WIDTH_1X, BURST_IB_SPEED_EDR}},
      {20000, {BURST_IB_WIDTH_4X, BURST_IB_SPEED_DDR}},
      {14000, {BURST_IB_WIDTH_1X, BURST_IB_SPEED_FDR}},
      {10000, {BURST_IB_WIDTH_1X, BURST_IB_SPEED_QDR}},
      {5000, {BURST_IB_WIDTH_1X, BURST_IB_SPEED_DDR}},
  };
  struct burst_ib_width_speed sdr = {BURST_IB_WIDTH_1X, BURST_IB_SPEED_SDR};
  for (unsigned i = 0; i < sizeof(rows) / sizeof(rows[0]); ++i) {
    if (mbps >= rows[i].min_mbps) return rows[i].ws;
  }
  return sdr;
}

#endif /* BURST_ABI_BURST_DEVICE_H_ */
