// Internal types of the burst verbs provider (libburst-rdmav34.so), loaded by
// libibverbs into the application's process. Error convention: errno values,
// as libibverbs expects (an int verb returns it, a pointer verb sets errno and
// returns NULL); nothing here throws (the library builds with -fno-exceptions).
#pragma once

#include <net/if.h>

#include <cstddef>
#include <cstdint>

#include "provider/burst_verbs_abi.h"
#include "provider/ctl_conn.h"

namespace burst::provider {

// One burst device as libibverbs sees it. Allocated by alloc_device,
// freed by uninit_device when libibverbs drops its last reference.
struct Device {
  verbs_device vdev;         // must be first: libibverbs hands back &vdev.device
  char netdev[IF_NAMESIZE];  // the port's netdev (sysfs ports/1/gid_attrs/ndevs/0), may be empty
  uint64_t node_guid_be;     // as ibv_device_attr carries them (network order)
  uint64_t sys_image_guid_be;
};
static_assert(offsetof(Device, vdev) == 0);

// One ibv_open_device(). Allocated by libibverbs (_verbs_init_and_alloc_context)
// at our size, freed by free_context.
struct Context {
  verbs_context vctx;  // must be first
  // The async-event pipe: context.async_fd is the read end (libibverbs reads
  // 16-byte burst_async_event_desc records from it and closes it); this is the
  // write end, kept for the events burstd will report (QP fatal, device fatal).
  int async_write_fd;
  CtlConn ctl;         // to burstd; everything below was created through it
  uint32_t client_id;  // burstd's name for this connection (burstctl qps "client")
};
static_assert(offsetof(Context, vctx) == 0);

// The objects, each the full structure libibverbs expects with burstd's handle
// (per connection, see burst_ctl_proto.h) alongside. Allocated by the create
// verb, freed by the destroy verb.
struct Pd {
  ibv_pd pd;  // must be first
  uint32_t handle;
};
struct Cq {
  verbs_cq vcq;  // must be first; ibv_cq_ex-sized, also for ibv_create_cq
  uint32_t handle;
};
struct Qp {
  verbs_qp vqp;  // must be first (libibverbs reads verbs_qp.comp_mask)
  uint32_t handle;
  uint32_t worker;  // the burstd worker that owns it
  bool sq_sig_all;
};
static_assert(offsetof(Pd, pd) == 0 && offsetof(Cq, vcq) == 0 && offsetof(Qp, vqp) == 0);

inline Device* to_device(ibv_device* dev) { return reinterpret_cast<Device*>(dev); }
inline Context* to_context(ibv_context* ctx) {
  return reinterpret_cast<Context*>(reinterpret_cast<char*>(ctx) -
                                    offsetof(verbs_context, context));
}

// What the port reports, read from the netdev at query time (in the caller's
// network namespace).
struct NetdevState {
  bool exists = false;
  bool up = false;          // IFF_UP
  bool running = false;     // IFF_RUNNING (carrier)
  uint32_t mtu = 0;         // L3 MTU
  uint32_t speed_mbps = 0;  // 0 when the driver does not say
};
NetdevState query_netdev_state(const char* ifname);

inline Pd* to_pd(ibv_pd* pd) { return reinterpret_cast<Pd*>(pd); }
inline Cq* to_cq(ibv_cq* cq) { return reinterpret_cast<Cq*>(cq); }
inline Qp* to_qp(ibv_qp* qp) { return reinterpret_cast<Qp*>(qp); }

// context.cc
verbs_context* alloc_context(ibv_device* device, int cmd_fd, void* private_data);

// pd_cq.cc: PDs and CQs through burstd.
ibv_pd* alloc_pd(ibv_context* ctx);
int dealloc_pd(ibv_pd* pd);
ibv_cq* create_cq(ibv_context* ctx, int cqe, ibv_comp_channel* channel, int comp_vector);
ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr);
int destroy_cq(ibv_cq* cq);

// qp.cc: QPs through burstd (RC and UD).
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr);
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr);
int destroy_qp(ibv_qp* qp);

// A destroy verb's result: after the connection to burstd is lost, burstd has
// already released the object (it frees everything of a closed connection), so
// the provider frees its half and reports success.
inline int destroy_result(const Context* ctx, int err) {
  return err != 0 && ctl_conn_lost(&ctx->ctl) ? 0 : err;
}

// Writes a line to stderr when BURST_PROVIDER_DEBUG is set in the environment.
void debug_log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace burst::provider
