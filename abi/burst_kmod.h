/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The user API of burst's kernel assistant (kmod/, module "burst"): one misc device, /dev/burst.
 *
 * Daemon side (burstd): BURST_KMOD_REGISTER on an open /dev/burst makes that descriptor the
 * registration of one ib_device (driver "burst", RoCE v2 on the netdev, GIDs from ib_core's RoCE GID
 * cache of that netdev); closing the descriptor (also when burstd is killed) unregisters it, and
 * applications holding it get IBV_EVENT_DEVICE_FATAL. burstd raises completion and async events of the
 * kernel's shadow objects with BURST_KMOD_RAISE. Every daemon ioctl on a descriptor that has not
 * registered fails with EPERM; BURST_KMOD_REGISTER itself needs CAP_NET_ADMIN over the netdev's netns.
 *
 * Shadow objects: in native mode the provider creates, next to each burstd object, the kernel object
 * libibverbs' event machinery needs (PD, CQ, QP, SRQ through the uverbs write ABI on the context's
 * cmd_fd), with struct burst_kmod_shadow_udata as driver data naming the burstd object. The name is
 * the object's user_handle as the provider gave it to burstd in CREATE_CQ/QP/SRQ (the application's
 * struct ibv_cq / ibv_qp / ibv_srq address, also the kernel object's user_handle): burstd raises
 * events with it, and it is unique within the process across contexts, which burstd's
 * per-connection handles are not. The module keys a shadow by (that handle, creator tgid); a raise
 * names both, so a client can neither steal nor block another client's events.
 * The ib_device's uverbs ABI version (ops.uverbs_abi_ver, sysfs uverbsN/abi_version) is
 * BURST_KMOD_UVERBS_ABI_VERSION: the provider claims only devices of that version.
 *
 * Application side (any process): BURST_KMOD_PIN pins a range of the caller's own address space
 * (pin_user_pages FOLL_LONGTERM, accounted against RLIMIT_MEMLOCK unless CAP_IPC_LOCK) and returns a
 * new descriptor, the pin. The pin is the only handle: the application hands it to its burstd with
 * REG_MR (SCM_RIGHTS); a process holding a registration (burstd) may mmap it (MAP_SHARED, offset 0,
 * length = the pin's page-aligned length) and then reads and writes the pinned pages in place; any
 * other process gets EPERM from mmap. BURST_KMOD_PIN_INFO on a pin descriptor says what it pins and
 * for whom. Pages are unpinned when the last reference (descriptor or mapping) goes away.
 *
 * Every structure starts with its size (the caller's sizeof); the module rejects sizes it does not
 * know and non-zero reserved fields or flags with EINVAL.
 */
#ifndef BURST_ABI_BURST_KMOD_H
#define BURST_ABI_BURST_KMOD_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define BURST_KMOD_ABI_VERSION 1
#define BURST_KMOD_UVERBS_ABI_VERSION 1 /* = BURST_UVERBS_ABI_VERSION (burst_device.h) */
#define BURST_KMOD_DEVICE_PATH "/dev/burst"
#define BURST_KMOD_DRIVER_NAME "burst"
#define BURST_KMOD_NAME_MAX 64
#define BURST_KMOD_SOCKET_MAX 108 /* sizeof(sockaddr_un.sun_path) */

/*
 * Device attributes as burstd reports them in HELLO: what query_device answers. The GUIDs are in
 * network byte order (the bytes of the EUI-64, as the kernel's __be64 and sysfs node_guid show them).
 */
struct burst_kmod_device_attr {
	__u64 node_guid; /* network byte order */
	__u64 sys_image_guid; /* network byte order */
	__u64 max_mr_size;
	__u64 page_size_cap;
	__u64 fw_ver;
	__u32 vendor_id;
	__u32 vendor_part_id;
	__u32 hw_ver;
	__u32 max_qp;
	__u32 max_qp_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_sge_rd;
	__u32 max_cq;
	__u32 max_cqe;
	__u32 max_mr;
	__u32 max_pd;
	__u32 max_qp_rd_atom;
	__u32 max_qp_init_rd_atom;
	__u32 max_srq;
	__u32 max_srq_wr;
	__u32 max_srq_sge;
	__u32 max_ah;
	__u32 max_mw;
	__u32 max_mcast_grp;
	__u32 max_mcast_qp_attach;
	__u32 max_pkeys;
	__u32 num_comp_vectors;
	__u32 active_mtu; /* enum ib_mtu: 1..5, the most the port carries (capped by the netdev's) */
	__u32 max_total_mcast_qp_attach;
	__u32 max_res_rd_atom;
	__u32 reserved[2];
};

/* BURST_KMOD_REGISTER: in: everything but name's result; out: name (the registered ib_device name). */
struct burst_kmod_register {
	__u32 size;
	__u32 flags; /* 0 */
	__u32 abi_version; /* in: BURST_KMOD_ABI_VERSION */
	__u32 ifindex; /* the netdev, in the caller's network namespace */
	char name[BURST_KMOD_NAME_MAX]; /* in: "burst%d" or an exact name; out: the name given */
	char socket_path[BURST_KMOD_SOCKET_MAX]; /* burstd's control socket (sysfs attribute burst_socket) */
	__u32 reserved0;
	struct burst_kmod_device_attr attr;
};

enum burst_kmod_event_kind {
	BURST_KMOD_EV_CQ_COMP = 1, /* completion event of a CQ (comp channel) */
	BURST_KMOD_EV_CQ_ASYNC = 2, /* async event on a CQ (e.g. IB_EVENT_CQ_ERR) */
	BURST_KMOD_EV_QP_ASYNC = 3, /* async event on a QP (QP_FATAL, COMM_EST, LAST_WQE_REACHED ...) */
	BURST_KMOD_EV_SRQ_ASYNC = 4, /* async event on an SRQ (SRQ_LIMIT_REACHED, SRQ_ERR) */
	BURST_KMOD_EV_PORT_ASYNC = 5, /* port/device event (PORT_ACTIVE, PORT_ERR, GID_CHANGE ...) */
};

/* BURST_KMOD_RAISE: burstd names a shadow by its own handle and the client's tgid. */
struct burst_kmod_event {
	__u32 size;
	__u32 kind; /* enum burst_kmod_event_kind */
	__u32 event_type; /* enum ib_event_type (ignored for BURST_KMOD_EV_CQ_COMP) */
	__u32 tgid; /* the client that created the shadow (0 for PORT_ASYNC) */
	__u64 handle; /* the CQ/QP/SRQ's user_handle, as its shadow was created (0 for PORT_ASYNC) */
};

/*
 * Driver data (udata in) of the shadow create commands: which burstd object this shadows (its
 * user_handle in burstd, see above; equal to the command's own user_handle for CQ, QP and SRQ).
 */
struct burst_kmod_shadow_udata {
	__u64 handle;
};

/* Driver data (udata out) of GET_CONTEXT: lets the provider check it talks to this module. */
struct burst_kmod_context_resp {
	__u32 abi_version;
	__u32 reserved;
	char socket_path[BURST_KMOD_SOCKET_MAX];
	__u32 reserved1;
};

#define BURST_KMOD_PIN_WRITE (1u << 0) /* the MR may be written (remote/local write, atomics) */

/* BURST_KMOD_PIN: in: addr, length, flags; out: fd (the pin), id (for logs and counters). */
struct burst_kmod_pin {
	__u32 size;
	__u32 flags; /* BURST_KMOD_PIN_* */
	__u64 addr; /* caller's virtual address, any alignment */
	__u64 length; /* > 0 */
	__s32 fd; /* out: O_CLOEXEC descriptor of the pin */
	__u32 reserved;
	__u64 id; /* out */
};

/* BURST_KMOD_PIN_INFO on a pin descriptor. */
struct burst_kmod_pin_info {
	__u32 size;
	__u32 flags; /* out: BURST_KMOD_PIN_* it was pinned with */
	__u64 addr; /* out: as given to BURST_KMOD_PIN */
	__u64 length; /* out */
	__u64 map_offset; /* out: offset of addr inside the first page of the mapping */
	__u64 map_length; /* out: length to mmap (whole pages) */
	__u32 tgid; /* out: the process whose memory it pins */
	__u32 reserved;
	__u64 id; /* out */
};

/* BURST_KMOD_STATS: the module's counters (any caller). */
struct burst_kmod_stats {
	__u32 size;
	__u32 reserved;
	__u64 devices; /* registered ib_devices */
	__u64 pins; /* live pins */
	__u64 pinned_pages; /* pages held by live pins */
	__u64 mappings; /* live daemon mappings of pins */
	__u64 shadows; /* live shadow CQ/QP/SRQ */
	__u64 events_raised;
	__u64 events_dropped; /* raise named no live shadow */
	__u64 reserved1[4];
};

#define BURST_KMOD_IOC_MAGIC 0xB5
#define BURST_KMOD_REGISTER _IOWR(BURST_KMOD_IOC_MAGIC, 0x01, struct burst_kmod_register)
#define BURST_KMOD_RAISE _IOW(BURST_KMOD_IOC_MAGIC, 0x02, struct burst_kmod_event)
#define BURST_KMOD_PIN _IOWR(BURST_KMOD_IOC_MAGIC, 0x10, struct burst_kmod_pin)
#define BURST_KMOD_PIN_INFO _IOWR(BURST_KMOD_IOC_MAGIC, 0x11, struct burst_kmod_pin_info)
#define BURST_KMOD_STATS _IOWR(BURST_KMOD_IOC_MAGIC, 0x20, struct burst_kmod_stats)

#endif /* BURST_ABI_BURST_KMOD_H */
