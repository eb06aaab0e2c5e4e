// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Contexts (ibv_open_device / ibv_close_device) and the queries a context
// answers: device attributes, port attributes. GID, P_Key and GUID queries never
// reach a provider: libibverbs reads them from sysfs.
//
// Opening a context connects to burstd (ctl_conn.h): without a running burstd
// ibv_open_device fails. PDs, CQs, QPs, SRQs, MRs and AHs are created through
// it (pd_cq.cc, qp_control.cc, srq_control.cc, mr_ah_control.cc); posting and
// polling run on shared-memory rings (post_wr.cc, poll_cq.cc; regions mapped in
// shm_regions.cc, completion events and the watcher of burstd in cq_events.cc).
// Memory windows, XRC, flows, DM and the rest return EOPNOTSUPP.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "abi/burst_device.h"
#include "provider/native_mode.h"
#include "provider/provider.h"
#include "provider/unsupported.h"

namespace burst::provider {
namespace {

// Device attributes that are not limits (the limits are burstd's, from HELLO).
constexpr uint64_t kPageSizeCap = 0xfffff000;  // 4 KiB pages and every larger power of two
constexpr uint8_t kLocalCaAckDelay = 15;       // IBA encoding: 4.096 us * 2^15 ~ 134 ms

constexpr uint8_t kPortPhysStateDisabled = 3;
constexpr uint8_t kPortPhysStateLinkUp = 5;

int query_device_ex(ibv_context* ctx, const ibv_query_device_ex_input* input,
                    ibv_device_attr_ex* attr, size_t attr_size) {
  if (input != nullptr && input->comp_mask != 0) return EINVAL;
  if (attr_size < sizeof(ibv_device_attr)) return EINVAL;
  const Device* dev = to_device(ctx->device);
  const Limits& l = to_context(ctx)->limits;
  auto i = [](uint32_t v) { return static_cast<int>(v); };

  ibv_device_attr_ex a{};
  ibv_device_attr& o = a.orig_attr;
  snprintf(o.fw_ver, sizeof(o.fw_ver), "%s", BURST_FW_VER);
  o.node_guid = dev->node_guid_be;
  o.sys_image_guid = dev->sys_image_guid_be;
  o.max_mr_size = l.max_mr_size;
  o.page_size_cap = kPageSizeCap;
  o.vendor_id = BURST_VENDOR_ID;
  o.vendor_part_id = BURST_VENDOR_PART_ID;
  o.hw_ver = 0;
  o.max_qp = i(l.max_qp);
  o.max_qp_wr = i(l.max_qp_wr);
  // Memory windows type 1 and 2B (bound to a QP), as rxe.
  o.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID |
                       IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
  o.max_sge = i(l.max_sge);
  o.max_sge_rd = i(l.max_sge);
  o.max_cq = i(l.max_cq);
  o.max_cqe = i(l.max_cqe);
  o.max_mr = i(l.max_mr);
  o.max_mw = i(l.max_mr);  // windows and MRs share burstd's table (BURST_MAX_MW)
  o.max_pd = i(l.max_pd);
  o.max_qp_rd_atom = i(l.max_qp_rd_atom);
  o.max_qp_init_rd_atom = i(l.max_qp_rd_atom);
  o.max_res_rd_atom = i(l.max_res_rd_atom);
  o.atomic_cap = IBV_ATOMIC_HCA;
  o.max_ah = i(l.max_ah);
  o.max_srq = i(l.max_srq);
  o.max_srq_wr = i(l.max_srq_wr);
  o.max_srq_sge = i(l.max_srq_sge);
  o.max_mcast_grp = i(l.max_mcast_grp);
  o.max_mcast_qp_attach = i(l.max_mcast_qp_attach);
  o.max_total_mcast_qp_attach = i(l.max_total_mcast_qp_attach);
  o.max_pkeys = BURST_PKEY_TABLE_LEN;
  o.local_ca_ack_delay = kLocalCaAckDelay;
  o.phys_port_cnt = 1;
  a.device_cap_flags_ex = o.device_cap_flags;
  a.phys_port_cnt_ex = o.phys_port_cnt;

  // Copy only what the caller's structure holds (ibv_query_device passes
  // sizeof(struct ibv_device_attr)); zero what a newer caller has beyond ours.
  const size_t n = std::min(attr_size, sizeof(a));
  memcpy(attr, &a, n);
  if (attr_size > n) memset(reinterpret_cast<char*>(attr) + n, 0, attr_size - n);
  return 0;
}

int query_port(ibv_context* ctx, uint8_t port_num, ibv_port_attr* attr) {
  if (port_num != BURST_PORT_NUM) return EINVAL;
  const Device* dev = to_device(ctx->device);
  const NetdevState nd = query_netdev_state(dev->netdev);
  const uint8_t ib_mtu = burst_ib_mtu_for_netdev(nd.mtu);
  const bool active = nd.exists && nd.up && nd.running && ib_mtu != 0;

  *attr = ibv_port_attr{};
  attr->state = active ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
  attr->phys_state = active ? kPortPhysStateLinkUp : kPortPhysStateDisabled;
  attr->max_mtu = IBV_MTU_4096;
  attr->active_mtu = ib_mtu != 0 ? static_cast<ibv_mtu>(ib_mtu) : IBV_MTU_256;
  attr->gid_tbl_len = BURST_GID_TABLE_LEN;
  attr->port_cap_flags = IBV_PORT_CM_SUP;
  attr->max_msg_sz = to_context(ctx)->limits.max_msg_sz;
  attr->pkey_tbl_len = BURST_PKEY_TABLE_LEN;
  attr->max_vl_num = 1;  // VL0 only
  const burst_ib_width_speed ws = burst_eth_width_speed(nd.speed_mbps);
  attr->active_width = ws.width;
  attr->active_speed = ws.speed;
  attr->link_layer = IBV_LINK_LAYER_ETHERNET;
  return 0;
}

// libibverbs calls this after reading an event from async_fd, before handing it
// to the application: nothing to account for yet.
void async_event(ibv_context*, ibv_async_event*) {}
// ibv_get_cq_event calls this after reading an event: nothing to account for.
void cq_event(ibv_cq*) {}

// Tears a context down, opened or half-opened (alloc_context's failures):
// the watcher stopped, the connection closed (burstd releases whatever the
// application did not destroy), the doorbells unmapped, everything freed.
void release_context(Context* ctx) {
  stop_watcher(ctx);
  ctl_close(&ctx->ctl);
  for (uint32_t w = 0; ctx->doorbells != nullptr && w < ctx->workers; ++w) {
    unmap_region(&ctx->doorbells[w].map);
    if (ctx->doorbells[w].ready) close(ctx->doorbells[w].wake_fd);
  }
  free(ctx->doorbells);
  pthread_mutex_destroy(&ctx->mu);
  pthread_mutex_destroy(&ctx->ctl.mu);
  if (ctx->async_write_fd >= 0) close(ctx->async_write_fd);
  verbs_uninit_context(&ctx->vctx);  // closes cmd_fd and async_fd (the pipe's read end)
  free(ctx);
}

void free_context(ibv_context* ibctx) { release_context(to_context(ibctx)); }

int query_qp_data_in_order_unsupported(ibv_qp*, ibv_wr_opcode, uint32_t) {
  return 0;  // no in-order guarantee claimed
}
// Posting verbs report the first work request they did not take.

// Every slot is set, so no libibverbs dummy is ever reached and the designated
// initialisers (which C++ requires in declaration order) double as a check of
// the order declared in burst_verbs_abi.h.
const verbs_context_ops kContextOps = {
    .advise_mr = BURST_UNSUPPORTED(advise_mr),
    .alloc_dm = BURST_UNSUPPORTED(alloc_dm),
    .alloc_mw = alloc_mw,
    .alloc_null_mr = BURST_UNSUPPORTED(alloc_null_mr),
    .alloc_parent_domain = BURST_UNSUPPORTED(alloc_parent_domain),
    .alloc_pd = alloc_pd,
    .alloc_td = BURST_UNSUPPORTED(alloc_td),
    .async_event = async_event,
    .attach_counters_point_flow = BURST_UNSUPPORTED(attach_counters_point_flow),
    .attach_mcast = attach_mcast,
    .bind_mw = bind_mw,
    .close_xrcd = BURST_UNSUPPORTED(close_xrcd),
    .cq_event = cq_event,
    .create_ah = create_ah,
    .create_counters = BURST_UNSUPPORTED(create_counters),
    .create_cq = create_cq,
    .create_cq_ex = create_cq_ex,
    .create_flow = BURST_UNSUPPORTED(create_flow),
    .create_flow_action_esp = BURST_UNSUPPORTED(create_flow_action_esp),
    .create_qp = create_qp,
    .create_qp_ex = create_qp_ex,
    .create_rwq_ind_table = BURST_UNSUPPORTED(create_rwq_ind_table),
    .create_srq = create_srq,
    .create_srq_ex = BURST_UNSUPPORTED(create_srq_ex),
    .create_wq = BURST_UNSUPPORTED(create_wq),
    .dealloc_mw = dealloc_mw,
    .dealloc_pd = dealloc_pd,
    .dealloc_td = BURST_UNSUPPORTED(dealloc_td),
    .dereg_mr = dereg_mr,
    .destroy_ah = destroy_ah,
    .destroy_counters = BURST_UNSUPPORTED(destroy_counters),
    .destroy_cq = destroy_cq,
    .destroy_flow = BURST_UNSUPPORTED(destroy_flow),
    .destroy_flow_action = BURST_UNSUPPORTED(destroy_flow_action),
    .destroy_qp = destroy_qp,
    .destroy_rwq_ind_table = BURST_UNSUPPORTED(destroy_rwq_ind_table),
    .destroy_srq = destroy_srq,
    .destroy_wq = BURST_UNSUPPORTED(destroy_wq),
    .detach_mcast = detach_mcast,
    .free_context = free_context,
    .free_dm = BURST_UNSUPPORTED(free_dm),
    .get_srq_num = BURST_UNSUPPORTED(get_srq_num),
    .import_dm = BURST_UNSUPPORTED(import_dm),
    .import_mr = BURST_UNSUPPORTED(import_mr),
    .import_pd = BURST_UNSUPPORTED(import_pd),
    .modify_cq = BURST_UNSUPPORTED(modify_cq),
    .modify_flow_action_esp = BURST_UNSUPPORTED(modify_flow_action_esp),
    .modify_qp = modify_qp,
    .modify_qp_rate_limit = BURST_UNSUPPORTED(modify_qp_rate_limit),
    .modify_srq = modify_srq,
    .modify_wq = BURST_UNSUPPORTED(modify_wq),
    .open_qp = BURST_UNSUPPORTED(open_qp),
    .open_xrcd = BURST_UNSUPPORTED(open_xrcd),
    .poll_cq = poll_cq,
    .post_recv = post_recv,
    .post_send = post_send,
    .post_srq_ops = BURST_UNSUPPORTED(post_srq_ops),
    .post_srq_recv = post_srq_recv,
    .query_device_ex = query_device_ex,
    .query_ece = BURST_UNSUPPORTED(query_ece),
    .query_port = query_port,
    .query_qp = query_qp,
    .query_qp_data_in_order = query_qp_data_in_order_unsupported,
    .query_rt_values = BURST_UNSUPPORTED(query_rt_values),
    .query_srq = query_srq,
    .read_counters = BURST_UNSUPPORTED(read_counters),
    .reg_dm_mr = BURST_UNSUPPORTED(reg_dm_mr),
    .reg_dmabuf_mr = reg_dmabuf_mr,
    .reg_mr = reg_mr,
    .req_notify_cq = req_notify_cq,
    .rereg_mr = rereg_mr,
    .resize_cq = resize_cq,
    .set_ece = BURST_UNSUPPORTED(set_ece),
    .unimport_dm = BURST_UNSUPPORTED(unimport_dm),
    .unimport_mr = BURST_UNSUPPORTED(unimport_mr),
    .unimport_pd = BURST_UNSUPPORTED(unimport_pd),
};

// The device limits burstd reported in HELLO.
Limits limits_from_hello(const burst_ctl_hello_resp& h) {
  return Limits{h.max_qp,      h.max_qp_wr,       h.max_sge,         h.max_cq,
                h.max_cqe,     h.max_pd,          h.max_inline_data, h.max_qp_rd_atom,
                h.max_mr,      h.max_ah,          h.max_srq,         h.max_srq_wr,
                h.max_srq_sge, h.max_res_rd_atom, h.max_msg_sz,      h.max_mr_size,
                h.max_mcast_grp, h.max_mcast_qp_attach, h.max_total_mcast_qp_attach};
}

// burstd could not be reached (err says why): said on stderr once per process,
// so an application retrying ibv_open_device does not flood it.
void report_open_failure(const char* device_name, const char* err) {
  static bool reported = false;
  if (!__atomic_exchange_n(&reported, true, __ATOMIC_RELAXED)) {
    fprintf(stderr, "burst: %s: %s\n", device_name, err);
  }
  debug_log("burst: %s", err);
}

void warn_netdev_mismatch(ibv_device* device, const burst_ctl_hello_resp& hello, const char* path) {
  const char* ours = to_device(device)->netdev;
  if (hello.netdev[0] != '\0' && ours[0] != '\0' &&
      strncmp(hello.netdev, ours, sizeof(hello.netdev)) != 0) {
    fprintf(stderr, "burst: warning: %s describes netdev %s but burstd at %s serves %.*s\n",
            device->name, ours, path, static_cast<int>(sizeof(hello.netdev)), hello.netdev);
  }
}

// The async-event channel is ours: with no kernel behind cmd_fd, libibverbs
// would otherwise ask the kernel for one (and fail). A pipe: the read end is
// the context's async_fd, burstd gets the write end (SET_ASYNC_FD); then the
// watcher starts. 0 or an errno value.
int open_async_channel(Context* ctx) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return errno;
  // The writers (burstd's workers, the watcher) must never block on a slow reader.
  fcntl(fds[1], F_SETFL, O_NONBLOCK);
  ctx->vctx.context.async_fd = fds[0];
  ctx->async_write_fd = fds[1];
  burst_ctl_set_async_fd_req areq{};
  burst_ctl_empty_resp aresp{};
  int e = ctx->doorbells == nullptr
              ? ENOMEM
              : ctl_request_fd(ctx, BURST_CTL_OP_SET_ASYNC_FD, &areq, &aresp, fds[1], nullptr);
  if (e == 0) e = start_watcher(ctx);
  return e;
}

// Native mode: async_fd is the kernel's; burstd raises the QP, SRQ and CQ
// events through the module (SET_ASYNC_FD without a descriptor). The watcher
// still marks the context dead when burstd goes (the kernel reports
// IBV_EVENT_DEVICE_FATAL itself when burstd's registration goes with it).
int open_native_async(Context* ctx) {
  burst_ctl_set_async_fd_req areq{};
  burst_ctl_empty_resp aresp{};
  int e = ctx->doorbells == nullptr
              ? ENOMEM
              : ctl_request_fd(ctx, BURST_CTL_OP_SET_ASYNC_FD, &areq, &aresp, -1, nullptr);
  if (e != 0) {
    fprintf(stderr,
            "burst: %s: burstd does not raise events through the kernel module (%s): is it the "
            "burstd that registered this device?\n",
            ctx->vctx.context.device->name, strerror(e));
    return e;
  }
  return start_watcher(ctx);
}

}  // namespace

verbs_context* alloc_context(ibv_device* device, int cmd_fd, void* /*private_data*/) {
  // Takes cmd_fd (the uverbs node: burstctl run's /dev/full, or the kernel
  // assistant's uverbsN in native mode): closed on failure here, by
  // verbs_uninit_context otherwise.
  const bool native = cmd_fd_is_kernel(cmd_fd);
  auto* ctx = static_cast<Context*>(_verbs_init_and_alloc_context(
      device, cmd_fd, sizeof(Context), reinterpret_cast<verbs_context*>(offsetof(Context, vctx)),
      /*driver_id=*/0));
  if (ctx == nullptr) return nullptr;
  ctx->async_write_fd = -1;
  ctx->ctl = CtlConn{};
  ctx->watcher_wake_fd = -1;
  ctx->native = native;
  pthread_mutex_init(&ctx->mu, nullptr);

  NativeContext nc{};
  if (native) {
    if (int e = native_get_context(cmd_fd, &nc); e != 0) {
      char err[128];
      snprintf(err, sizeof(err), "GET_CONTEXT on the kernel device failed: %s", strerror(e));
      report_open_failure(device->name, err);
      release_context(ctx);
      return verb_error(e);
    }
    ctx->vctx.context.async_fd = nc.async_fd;  // the kernel's async-event file
  }
  // burstd owns every object: no context without it.
  burst_ctl_hello_resp hello{};
  char err[256];
  const Device* bdev = to_device(device);
  const char* path = nc.socket[0] != '\0'     ? nc.socket
                     : bdev->socket[0] != '\0' ? bdev->socket
                                               : ctl_socket_path();
  if (int e = ctl_open(&ctx->ctl, path, program_invocation_short_name, &hello, err, sizeof(err));
      e != 0) {
    report_open_failure(device->name, err);
    release_context(ctx);
    return verb_error(e);
  }
  ctx->client_id = hello.client_id;
  ctx->workers = hello.workers;
  ctx->limits = limits_from_hello(hello);
  ctx->doorbells =
      static_cast<Doorbell*>(calloc(hello.workers == 0 ? 1 : hello.workers, sizeof(Doorbell)));
  warn_netdev_mismatch(device, hello, path);
  if (int e = native ? open_native_async(ctx) : open_async_channel(ctx); e != 0) {
    release_context(ctx);
    return verb_error(e);
  }
  // Completion vectors: the kernel device's in native mode (its CREATE_CQ
  // checks them); otherwise as rxe and siw report them (one per possible CPU).
  // A vector is a hint: events of a CQ come from the burstd workers its QPs
  // live on, whichever vector the CQ was created with.
  const long cpus = sysconf(_SC_NPROCESSORS_CONF);
  ctx->vctx.context.num_comp_vectors =
      native ? std::max(nc.num_comp_vectors, 1) : (cpus > 0 ? static_cast<int>(cpus) : 1);

#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  // Test hook (never in release packages): die between reserving a doorbell
  // slot and committing it, as a crashing application would.
  if (getenv("BURST_TEST_DIE_IN_DOORBELL") != nullptr) {
    shm::test_hooks::after_doorbell_reserve.store(+[](uint64_t) { raise(SIGKILL); });
  }
#endif
  verbs_set_ops(&ctx->vctx, &kContextOps);
  debug_log("burst: context opened on %s (burstd %s, client %u%s)", device->name, path,
            ctx->client_id, native ? ", native" : "");
  return &ctx->vctx;
}

}  // namespace burst::provider
