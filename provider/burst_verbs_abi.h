/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The private provider ABI of libibverbs that the burst provider uses.
 *
 * libibverbs loads providers through an ABI that is private to rdma-core: the
 * structures below and four functions exported under the symbol version
 * IBVERBS_PRIVATE_34 (rdma-core 44; the "34" is rdma-core's IBVERBS_PABI_VERSION,
 * bumped whenever one of these layouts changes). Debian's libibverbs-dev does not
 * ship the header that declares them (infiniband/driver.h) and the rdma-core
 * source is not obtainable at build time, so the project declares here what it
 * uses, written after reading rdma-core 44's libibverbs (driver.h, init.c,
 * device.c, dummy_ops.c). Only the public <infiniband/verbs.h> is included.
 *
 * Two guards keep this honest:
 *   - every size and offset that libibverbs relies on is static_assert'ed below
 *     (x86-64, LP64);
 *   - every private function is bound to the version node IBVERBS_PRIVATE_34
 *     with .symver, so linking against a libibverbs with another private ABI
 *     fails (the provider links with -z defs) instead of loading with a wrong
 *     layout.
 *
 * Layout on x86-64 (bytes):
 *
 *   verbs_match_ent   (24)  0 driver_data | 8 modalias / driver_id | 16 vendor
 *                           | 18 device | 20 kind | pad
 *   verbs_sysfs_dev  (992)  0 entry(list) | 16 provider_data | 24 match | 32 flags
 *                           | 36 sysfs_name[64] | 104 sysfs_cdev | 112 ibdev_name[64]
 *                           | 176 ibdev_path[256] | 432 modalias[512] | 944 node_guid
 *                           | 952 driver_id | 956 node_type | 960 ibdev_idx
 *                           | 964 num_ports | 968 abi_ver | 976 time_created
 *   verbs_device_ops  (72)  0 name | 8 match_min_abi | 12 match_max_abi
 *                           | 16 match_table | 24 static_providers | 32 match_device
 *                           | 40 alloc_context | 48 import_context | 56 alloc_device
 *                           | 64 uninit_device
 *   verbs_device     (712)  0 ibv_device(664) | 664 ops | 672 refcount | 680 entry(list)
 *                           | 696 sysfs | 704 core_support
 *   verbs_mr          (56)  0 ibv_mr(48) | 48 mr_type | 52 access
 *   verbs_qp         (368)  0 union{ibv_qp(160), ibv_qp_ex(352)} | 352 comp_mask | 360 xrcd
 *   verbs_cq         (288)  0 union{ibv_cq(128), ibv_cq_ex(288)}
 *   verbs_context_ops (608) 76 function pointers, sorted by name (rdma-core keeps
 *                           the struct sorted); verbs_set_ops() reads every slot.
 *
 * This header is C-compatible: fixed-width types, no C++ in the declarations.
 */
#ifndef BURST_PROVIDER_BURST_VERBS_ABI_H_
#define BURST_PROVIDER_BURST_VERBS_ABI_H_

#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BURST_IBVERBS_PRIVATE_VERSION "IBVERBS_PRIVATE_34"

/* rdma-core's intrusive list link (ccan/list.h list_node). Only libibverbs
 * touches it. */
struct burst_list_node {
  struct burst_list_node *next;
  struct burst_list_node *prev;
};

/* verbs_match_ent.kind */
enum {
  BURST_VERBS_MATCH_SENTINEL = 0,
  BURST_VERBS_MATCH_PCI = 1,
  BURST_VERBS_MATCH_MODALIAS = 2, /* u.modalias is an fnmatch() pattern */
  BURST_VERBS_MATCH_DRIVER_ID = 3,
};

/* libibverbs matches a device named NAME against a MODALIAS entry as the string
 * "rdma_device:N" NAME when the device has no device/modalias file. */
#define BURST_VERBS_NAME_MODALIAS_PREFIX "rdma_device:N"

/* One entry of a provider's match table; the table ends with kind SENTINEL. */
struct verbs_match_ent {
  void *driver_data;
  union {
    const char *modalias;
    uint64_t driver_id;
  } u;
  uint16_t vendor;
  uint16_t device;
  uint8_t kind;
};

/* An RDMA device libibverbs found in sysfs (or over netlink), handed to the
 * provider's match_device and alloc_device. Owned by libibverbs. */
struct verbs_sysfs_dev {
  struct burst_list_node entry;
  void *provider_data;
  const struct verbs_match_ent *match; /* the table entry that matched, or NULL */
  unsigned int flags;
  char sysfs_name[IBV_SYSFS_NAME_MAX]; /* "uverbs0" */
  dev_t sysfs_cdev;                    /* from class/infiniband_verbs/uverbsN/dev */
  char ibdev_name[IBV_SYSFS_NAME_MAX]; /* "burst0" */
  char ibdev_path[IBV_SYSFS_PATH_MAX]; /* $SYSFS_PATH/class/infiniband/burst0 */
  char modalias[512];
  uint64_t node_guid; /* only valid once libibverbs has read it (flags) */
  uint32_t driver_id; /* enum rdma_driver_id; 0 (unknown) from sysfs */
  enum ibv_node_type node_type;
  int ibdev_idx; /* -1 when found through sysfs */
  uint32_t num_ports;
  uint32_t abi_ver; /* uverbsN/abi_version */
  struct timespec time_created;
};

struct verbs_device;

/* What a provider registers with verbs_register_driver_34(). */
struct verbs_device_ops {
  const char *name;
  uint32_t match_min_abi_version;
  uint32_t match_max_abi_version;
  const struct verbs_match_ent *match_table;
  const struct verbs_device_ops **static_providers;
  /* Called after the table match (sysfs_dev->match set or NULL); true claims the device. */
  bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
  /* Owns cmd_fd: closes it on failure. */
  struct verbs_context *(*alloc_context)(struct ibv_device *device, int cmd_fd, void *private_data);
  struct verbs_context *(*import_context)(struct ibv_device *device, int cmd_fd);
  struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
  void (*uninit_device)(struct verbs_device *device);
};

/* The provider allocates this (usually embedded first in its own device struct);
 * libibverbs fills every field after alloc_device returns. */
struct verbs_device {
  struct ibv_device device; /* must be first */
  const struct verbs_device_ops *ops;
  int refcount; /* atomic_int in libibverbs; only libibverbs touches it */
  struct burst_list_node entry;
  struct verbs_sysfs_dev *sysfs;
  uint64_t core_support; /* read by ibv_reg_mr (IB_UVERBS_CORE_SUPPORT_*) */
};

/* verbs_mr.mr_type */
enum {
  BURST_VERBS_MR_TYPE_MR = 0,
  BURST_VERBS_MR_TYPE_NULL_MR = 1,
  BURST_VERBS_MR_TYPE_IMPORTED_MR = 2,
  BURST_VERBS_MR_TYPE_DMABUF_MR = 3,
};

/* Every ibv_mr a provider returns must be the ibv_mr of one of these:
 * ibv_dereg_mr reads the fields behind it. */
struct verbs_mr {
  struct ibv_mr ibv_mr;
  uint32_t mr_type; /* enum ibv_mr_type in rdma-core */
  int access;
};

/* verbs_qp.comp_mask bits */
enum {
  BURST_VERBS_QP_XRCD = 1 << 0,
  BURST_VERBS_QP_EX = 1 << 1, /* qp_ex is valid: ibv_qp_to_qp_ex() returns it */
};

struct verbs_xrcd; /* not used by burst */

/* Every ibv_qp a provider returns must be the qp of one of these:
 * ibv_qp_to_qp_ex() reads comp_mask behind the union. */
struct verbs_qp {
  union {
    struct ibv_qp qp;
    struct ibv_qp_ex qp_ex;
  };
  uint32_t comp_mask;
  struct verbs_xrcd *xrcd;
};

/* Every ibv_cq a provider returns is the cq of one of these: libibverbs and
 * applications treat a CQ from ibv_create_cq_ex() as the larger ibv_cq_ex. */
struct verbs_cq {
  union {
    struct ibv_cq cq;
    struct ibv_cq_ex cq_ex;
  };
};

/* The union of every operation a provider can implement, sorted by name. A NULL
 * slot keeps libibverbs' dummy (EOPNOTSUPP). */
struct verbs_context_ops {
  int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
                   struct ibv_sge *sg_list, uint32_t num_sges);
  struct ibv_dm *(*alloc_dm)(struct ibv_context *context, struct ibv_alloc_dm_attr *attr);
  struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
  struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
  struct ibv_pd *(*alloc_parent_domain)(struct ibv_context *context,
                                        struct ibv_parent_domain_init_attr *attr);
  struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
  struct ibv_td *(*alloc_td)(struct ibv_context *context, struct ibv_td_init_attr *init_attr);
  void (*async_event)(struct ibv_context *context, struct ibv_async_event *event);
  int (*attach_counters_point_flow)(struct ibv_counters *counters,
                                    struct ibv_counter_attach_attr *attr, struct ibv_flow *flow);
  int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
  int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
  int (*close_xrcd)(struct ibv_xrcd *xrcd);
  void (*cq_event)(struct ibv_cq *cq);
  struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
  struct ibv_counters *(*create_counters)(struct ibv_context *context,
                                          struct ibv_counters_init_attr *init_attr);
  struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
                              struct ibv_comp_channel *channel, int comp_vector);
  struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
                                    struct ibv_cq_init_attr_ex *init_attr);
  struct ibv_flow *(*create_flow)(struct ibv_qp *qp, struct ibv_flow_attr *flow_attr);
  struct ibv_flow_action *(*create_flow_action_esp)(struct ibv_context *context,
                                                    struct ibv_flow_action_esp_attr *attr);
  struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
  struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
                                 struct ibv_qp_init_attr_ex *qp_init_attr_ex);
  struct ibv_rwq_ind_table *(*create_rwq_ind_table)(struct ibv_context *context,
                                                    struct ibv_rwq_ind_table_init_attr *init_attr);
  struct ibv_srq *(*create_srq)(struct ibv_pd *pd, struct ibv_srq_init_attr *srq_init_attr);
  struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
                                   struct ibv_srq_init_attr_ex *srq_init_attr_ex);
  struct ibv_wq *(*create_wq)(struct ibv_context *context, struct ibv_wq_init_attr *wq_init_attr);
  int (*dealloc_mw)(struct ibv_mw *mw);
  int (*dealloc_pd)(struct ibv_pd *pd);
  int (*dealloc_td)(struct ibv_td *td);
  int (*dereg_mr)(struct verbs_mr *vmr);
  int (*destroy_ah)(struct ibv_ah *ah);
  int (*destroy_counters)(struct ibv_counters *counters);
  int (*destroy_cq)(struct ibv_cq *cq);
  int (*destroy_flow)(struct ibv_flow *flow);
  int (*destroy_flow_action)(struct ibv_flow_action *action);
  int (*destroy_qp)(struct ibv_qp *qp);
  int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
  int (*destroy_srq)(struct ibv_srq *srq);
  int (*destroy_wq)(struct ibv_wq *wq);
  int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
  void (*free_context)(struct ibv_context *context);
  int (*free_dm)(struct ibv_dm *dm);
  int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
  struct ibv_dm *(*import_dm)(struct ibv_context *context, uint32_t dm_handle);
  struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
  struct ibv_pd *(*import_pd)(struct ibv_context *context, uint32_t pd_handle);
  int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
  int (*modify_flow_action_esp)(struct ibv_flow_action *action,
                                struct ibv_flow_action_esp_attr *attr);
  int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
  int (*modify_qp_rate_limit)(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr);
  int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr, int srq_attr_mask);
  int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
  struct ibv_qp *(*open_qp)(struct ibv_context *context, struct ibv_qp_open_attr *attr);
  struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
                                struct ibv_xrcd_init_attr *xrcd_init_attr);
  int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
  int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);
  int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
  int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad_op);
  int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
                       struct ibv_recv_wr **bad_recv_wr);
  /* ibv_query_device() arrives here with attr_size = sizeof(struct ibv_device_attr). */
  int (*query_device_ex)(struct ibv_context *context, const struct ibv_query_device_ex_input *input,
                         struct ibv_device_attr_ex *attr, size_t attr_size);
  int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
  /* port_attr is a full, zeroed struct ibv_port_attr (libibverbs pads short callers). */
  int (*query_port)(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *port_attr);
  int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
                  struct ibv_qp_init_attr *init_attr);
  int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags);
  int (*query_rt_values)(struct ibv_context *context, struct ibv_values_ex *values);
  int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
  int (*read_counters)(struct ibv_counters *counters, uint64_t *counters_value, uint32_t ncounters,
                       uint32_t flags);
  struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t dm_offset,
                              size_t length, unsigned int access);
  struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
                                  int fd, int access);
  struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
                           int access);
  int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
  int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr, size_t length,
                  int access);
  int (*resize_cq)(struct ibv_cq *cq, int cqe);
  int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
  void (*unimport_dm)(struct ibv_dm *dm);
  void (*unimport_mr)(struct ibv_mr *mr);
  void (*unimport_pd)(struct ibv_pd *pd);
};

#define BURST_VERBS_CONTEXT_OPS_COUNT 76

/* The async event record libibverbs reads from context.async_fd
 * (struct ib_uverbs_async_event_desc in the kernel UAPI). */
struct burst_async_event_desc {
  uint64_t element; /* the object's user handle (pointer) or the port number */
  uint32_t event_type;
  uint32_t reserved;
};

/* --- Functions of libibverbs' private ABI (IBVERBS_PRIVATE_34) ------------- */

/* Adds a provider to libibverbs' driver list; call from a constructor. */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

/* calloc(alloc_size), then initialises the verbs_context found context_offset
 * bytes into it (the offset travels as a pointer value): takes a device
 * reference and cmd_fd, sets async_fd = -1 and installs the dummy ops. On
 * failure closes cmd_fd and returns NULL. */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
                                    struct verbs_context *context_offset, uint32_t driver_id);

/* Copies every non-NULL slot of ops into the context. */
void verbs_set_ops(struct verbs_context *vctx, const struct verbs_context_ops *ops);

/* Closes cmd_fd and async_fd, drops the device reference; does not free. */
void verbs_uninit_context(struct verbs_context *context);

__asm__(".symver verbs_register_driver_34, verbs_register_driver_34@IBVERBS_PRIVATE_34");
__asm__(".symver _verbs_init_and_alloc_context, _verbs_init_and_alloc_context@IBVERBS_PRIVATE_34");
__asm__(".symver verbs_set_ops, verbs_set_ops@IBVERBS_PRIVATE_34");
__asm__(".symver verbs_uninit_context, verbs_uninit_context@IBVERBS_PRIVATE_34");

#ifdef __cplusplus
} /* extern "C" */
#define BURST_ABI_STATIC_ASSERT static_assert
#else
#define BURST_ABI_STATIC_ASSERT _Static_assert
#endif

/* --- Layout checks (x86-64) ------------------------------------------------ */
BURST_ABI_STATIC_ASSERT(sizeof(void *) == 8, "the declared layouts are LP64");
/* Public structures the private ones embed (libibverbs 1.14.44 verbs.h). */
BURST_ABI_STATIC_ASSERT(sizeof(struct ibv_device) == 664, "ibv_device");
BURST_ABI_STATIC_ASSERT(sizeof(struct ibv_mr) == 48, "ibv_mr");
BURST_ABI_STATIC_ASSERT(sizeof(struct ibv_context) == 328, "ibv_context");
BURST_ABI_STATIC_ASSERT(sizeof(struct verbs_context) == 648, "verbs_context");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context, context) == 320, "verbs_context.context");
BURST_ABI_STATIC_ASSERT(sizeof(struct ibv_device_attr) == 232, "ibv_device_attr");
BURST_ABI_STATIC_ASSERT(sizeof(struct ibv_device_attr_ex) == 400, "ibv_device_attr_ex");
BURST_ABI_STATIC_ASSERT(sizeof(struct ibv_port_attr) == 52, "ibv_port_attr");
BURST_ABI_STATIC_ASSERT(IBV_SYSFS_NAME_MAX == 64 && IBV_SYSFS_PATH_MAX == 256, "sysfs name sizes");

BURST_ABI_STATIC_ASSERT(sizeof(struct verbs_match_ent) == 24, "verbs_match_ent");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_match_ent, u) == 8, "verbs_match_ent.u");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_match_ent, kind) == 20, "verbs_match_ent.kind");

BURST_ABI_STATIC_ASSERT(sizeof(struct verbs_sysfs_dev) == 992, "verbs_sysfs_dev");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, match) == 24, "sysfs_dev.match");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, sysfs_name) == 36, "sysfs_dev.sysfs_name");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, sysfs_cdev) == 104,
                        "sysfs_dev.sysfs_cdev");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, ibdev_name) == 112,
                        "sysfs_dev.ibdev_name");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, ibdev_path) == 176,
                        "sysfs_dev.ibdev_path");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, modalias) == 432, "sysfs_dev.modalias");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, node_guid) == 944, "sysfs_dev.node_guid");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, node_type) == 956, "sysfs_dev.node_type");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, abi_ver) == 968, "sysfs_dev.abi_ver");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_sysfs_dev, time_created) == 976,
                        "sysfs_dev.time_created");

BURST_ABI_STATIC_ASSERT(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_device_ops, match_table) == 16, "ops.match_table");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_device_ops, match_device) == 32, "ops.match_device");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_device_ops, alloc_context) == 40,
                        "ops.alloc_context");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_device_ops, alloc_device) == 56, "ops.alloc_device");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_device_ops, uninit_device) == 64,
                        "ops.uninit_device");

BURST_ABI_STATIC_ASSERT(sizeof(struct verbs_device) == 712, "verbs_device");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_device, device) == 0, "verbs_device.device");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_device, ops) == 664, "verbs_device.ops");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_device, entry) == 680, "verbs_device.entry");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_device, sysfs) == 696, "verbs_device.sysfs");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_device, core_support) == 704,
                        "verbs_device.core_support");

BURST_ABI_STATIC_ASSERT(sizeof(struct verbs_mr) == 56, "verbs_mr");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_mr, mr_type) == 48, "verbs_mr.mr_type");

BURST_ABI_STATIC_ASSERT(sizeof(struct ibv_qp) == 160 && sizeof(struct ibv_qp_ex) == 352, "ibv_qp");
BURST_ABI_STATIC_ASSERT(offsetof(struct ibv_qp_ex, qp_base) == 0, "ibv_qp_ex.qp_base");
BURST_ABI_STATIC_ASSERT(sizeof(struct verbs_qp) == 368, "verbs_qp");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_qp, comp_mask) == 352, "verbs_qp.comp_mask");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_qp, xrcd) == 360, "verbs_qp.xrcd");
BURST_ABI_STATIC_ASSERT(sizeof(struct ibv_cq) == 128 && sizeof(struct ibv_cq_ex) == 288, "ibv_cq");
BURST_ABI_STATIC_ASSERT(sizeof(struct verbs_cq) == 288, "verbs_cq");

BURST_ABI_STATIC_ASSERT(sizeof(struct verbs_context_ops) ==
                            BURST_VERBS_CONTEXT_OPS_COUNT * sizeof(void (*)(void)),
                        "verbs_context_ops: 76 function pointers");
/* Spot checks of the sorted order (index * 8). */
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, alloc_pd) == 5 * 8, "ops[5]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, create_cq) == 15 * 8, "ops[15]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, create_qp) == 19 * 8, "ops[19]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, dereg_mr) == 28 * 8, "ops[28]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, free_context) == 39 * 8, "ops[39]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, modify_qp) == 47 * 8, "ops[47]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, poll_cq) == 53 * 8, "ops[53]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, post_send) == 55 * 8, "ops[55]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, query_device_ex) == 58 * 8, "ops[58]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, query_port) == 60 * 8, "ops[60]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, reg_mr) == 68 * 8, "ops[68]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, req_notify_cq) == 69 * 8, "ops[69]");
BURST_ABI_STATIC_ASSERT(offsetof(struct verbs_context_ops, unimport_pd) == 75 * 8, "ops[75]");

BURST_ABI_STATIC_ASSERT(sizeof(struct burst_async_event_desc) == 16, "async event record");

#undef BURST_ABI_STATIC_ASSERT

#endif /* BURST_PROVIDER_BURST_VERBS_ABI_H_ */
