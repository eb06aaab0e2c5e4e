/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Internal types of the burst verbs provider (libburst-rdmav34.so), loaded by
// libibverbs into the application's process. Error convention: errno values,
// as libibverbs expects (an int verb returns it, a pointer verb sets errno and
// returns NULL); nothing here throws (the library builds with -fno-exceptions).
#pragma once

#include <net/if.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "provider/burst_verbs_abi.h"
#include "provider/ctl_conn.h"
#include "shm/doorbell.h"
#include "shm/shm_ring.h"

namespace burst::provider {

// One burst device as libibverbs sees it. Allocated by alloc_device,
// freed by uninit_device when libibverbs drops its last reference.
struct Device {
  verbs_device vdev;         // must be first: libibverbs hands back &vdev.device
  char netdev[IF_NAMESIZE];  // the port's netdev (sysfs ports/1/gid_attrs/ndevs/0), may be empty
  char socket[108];          // its burstd's socket (sysfs burst_socket), "" = ctl_socket_path()
  uint64_t node_guid_be;     // as ibv_device_attr carries them (network order)
  uint64_t sys_image_guid_be;
};
static_assert(offsetof(Device, vdev) == 0);

// A region burstd handed over (a memfd), mapped MAP_SHARED.
struct Mapping {
  uint8_t* base = nullptr;
  size_t size = 0;
};

// A burstd worker's doorbell queue, mapped on first use by a QP of that worker.
struct Doorbell {
  Mapping map;
  shm::DoorbellProducer producer;
  burst_shm_doorbell* hdr = nullptr;
  int wake_fd = -1;  // the worker's eventfd: written when it sleeps (need_wakeup)
  bool ready = false;
};

struct Cq;

// The device limits burstd reported in HELLO (its abi/burst_limits.h): what
// query_device and query_port report and what the provider checks before
// asking burstd. The provider has no limit of its own.
struct Limits {
  uint32_t max_qp, max_qp_wr, max_sge, max_cq, max_cqe, max_pd, max_inline_data, max_qp_rd_atom;
  uint32_t max_mr, max_ah, max_srq, max_srq_wr, max_srq_sge, max_res_rd_atom, max_msg_sz;
  uint64_t max_mr_size;
  uint32_t max_mcast_grp, max_mcast_qp_attach, max_total_mcast_qp_attach;
};

// One ibv_open_device(). Allocated by libibverbs (_verbs_init_and_alloc_context)
// at our size, freed by free_context.
struct Context {
  verbs_context vctx;  // must be first
  // The async-event pipe: context.async_fd is the read end (libibverbs reads
  // 16-byte burst_async_event_desc records from it and closes it); this is the
  // write end, kept for the events burstd will report (QP fatal, device fatal).
  int async_write_fd;
  CtlConn ctl;          // to burstd; everything below was created through it
  uint32_t client_id;   // burstd's name for this connection (burstctl qps "client")
  uint32_t workers;     // burstd's workers (doorbell queues)
  Limits limits;        // from HELLO
  pthread_mutex_t mu;   // doorbells[] setup and the channel-CQ list
  Doorbell* doorbells;  // [workers]
  Cq* channel_cqs;      // CQs with a completion channel (woken when burstd dies)
  // The watcher thread: waits for burstd to close the connection, then reports
  // IBV_EVENT_DEVICE_FATAL, wakes every completion channel and fails the data path.
  pthread_t watcher;
  bool watcher_running;
  int watcher_wake_fd;  // eventfd: free_context stops the watcher
  bool dead;            // burstd went away (atomic accesses)
  // Native mode (native_mode.h): cmd_fd is the kernel assistant's uverbs device;
  // async_fd and the completion channels are the kernel's, every PD/CQ/QP/SRQ
  // has a kernel shadow (its k* handle below) and async_write_fd is -1.
  bool native;
};
static_assert(offsetof(Context, vctx) == 0);

// The objects, each the full structure libibverbs expects with burstd's handle
// (per connection, see burst_ctl_proto.h) alongside. Allocated by the create
// verb, freed by the destroy verb.
struct Pd {
  ibv_pd pd;  // must be first
  uint32_t handle;
  uint32_t khandle;  // native mode: the kernel shadow's handle
};
struct Cq {
  verbs_cq vcq;  // must be first; ibv_cq_ex-sized, also for ibv_create_cq
  uint32_t handle;
  Mapping map;
  shm::RingConsumer ring;  // the CQ ring (burstd produces); under lock
  burst_shm_ring* hdr;     // for arm_sequence and status; replaced under lock and arm_lock
  pthread_spinlock_t lock;
  pthread_spinlock_t arm_lock;  // req_notify_cq vs resize_cq (the arm word moves to the new ring)
  int channel_peer;  // the shim's other end of the completion channel, -1: none
  uint32_t khandle;  // native mode: the kernel shadow's handle
  Cq* next_channel;  // Context::channel_cqs list
  // ibv_cq_ex polling state (start_poll / next_poll / read_*): under lock.
  burst_shm_cqe cur;
  uint32_t empty_polls;  // consecutive empty ibv_poll_cq calls (racy by design: a hint)
};
struct QpEx;  // qp_ex.cc: the ibv_qp_ex work-request builder state
struct Qp {
  verbs_qp vqp;  // must be first (libibverbs reads verbs_qp.comp_mask)
  uint32_t handle;
  uint32_t worker;  // the burstd worker that owns it
  bool sq_sig_all;
  QpEx* ex;  // non-null when created through ibv_create_qp_ex with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS
  Mapping map;
  shm::RingProducer sq, rq;  // under sq_lock / rq_lock
  burst_shm_ring* sq_hdr;
  burst_shm_ring* rq_hdr;  // nullptr with an SRQ
  pthread_spinlock_t sq_lock, rq_lock;
  uint32_t max_send_sge, max_recv_sge, max_inline;
  const Doorbell* db;
  uint32_t khandle;  // native mode: the kernel shadow's handle
  // The last INIT transition burstd made (its mask and attributes; init_mask 0:
  // none since the last other transition). librdmacm's rdma_accept repeats it
  // with the same attributes: answered here (qp_control.cc modify_qp).
  uint32_t init_mask;
  burst_ctl_qp_attr init_attr;
};
struct Mr {
  verbs_mr vmr;  // must be first (ibv_dereg_mr reads verbs_mr)
  uint32_t handle;
};
struct Ah {
  ibv_ah ah;  // must be first
  uint32_t handle;
};
// A shared receive queue: the ring lives on the burstd worker that owns the
// SRQ (every QP on the SRQ lives there too).
struct Srq {
  ibv_srq srq;  // must be first
  uint32_t handle;
  uint32_t srqn;  // doorbell handle
  Mapping map;
  shm::RingProducer ring;  // under lock
  burst_shm_ring* hdr;
  pthread_spinlock_t lock;
  uint32_t max_sge;
  const Doorbell* db;
  uint32_t khandle;  // native mode: the kernel shadow's handle
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

// shm_regions.cc: the regions burstd hands over, mapped into the application.
int map_region(int fd, uint64_t size, burst_shm_region_kind kind, Mapping* out);  // closes fd
void unmap_region(Mapping* m);
const Doorbell* doorbell_for(Context* ctx, uint32_t worker);      // nullptr + errno
int attach_cq_ring(Context* ctx, Cq* cq, int fd, uint64_t size);  // takes fd
void detach_cq_ring(Context* ctx, Cq* cq);
// After RESIZE_CQ, under the CQ's locks: the CQ moves to the new ring (the old
// one is unmapped). On failure the old ring is marked failed (burstd produces
// into the new one now), so that polls report EIO instead of waiting forever.
int replace_cq_ring(Cq* cq, int fd, uint64_t size);                                 // takes fd
int attach_qp_rings(Context* ctx, Qp* qp, int fd, uint64_t size, uint32_t worker);  // takes fd
void detach_qp_rings(Qp* qp);
int attach_srq_ring(Context* ctx, Srq* srq, int fd, uint64_t size, uint32_t worker);  // takes fd
void detach_srq_ring(Srq* srq);

// cq_events.cc: completion channels, arming, and the watcher of burstd's death.
int start_watcher(Context* ctx);
void stop_watcher(Context* ctx);
int cq_channel_peer(ibv_comp_channel* channel);  // -1 without the preload shim
void add_channel_cq(Context* ctx, Cq* cq);       // a CQ with a channel_peer: woken on death
void remove_channel_cq(Context* ctx, Cq* cq);
int req_notify_cq(ibv_cq* cq, int solicited_only);

// poll_cq.cc: reading completions from the CQ ring.
int poll_cq(ibv_cq* cq, int ne, ibv_wc* wc);
void init_cq_ex_ops(Cq* cq);
// Drops every completion of QP qp_num not yet polled from cq (under its lock).
void clean_cq(Cq* cq, uint32_t qp_num);

// mr_ah_control.cc: memory regions and address handles through burstd.
ibv_mr* reg_mr(ibv_pd* pd, void* addr, size_t length, uint64_t hca_va, int access);
int dereg_mr(verbs_mr* mr);
int rereg_mr(verbs_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access);
ibv_mr* reg_dmabuf_mr(ibv_pd* pd, uint64_t offset, size_t length, uint64_t iova, int fd,
                      int access);
ibv_ah* create_ah(ibv_pd* pd, ibv_ah_attr* attr);
// mw_control.cc: memory windows through burstd; binding them is a work request.
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type);
int dealloc_mw(ibv_mw* mw);
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind);
int destroy_ah(ibv_ah* ah);
// mr_file.cc: a new descriptor (owned by the caller) of the file mapped
// MAP_SHARED at [addr, addr + len), opened with this process's rights and
// enough access for a `writable` MR; -1 when there is none (cross-memory).
int shared_file_for(const void* addr, size_t len, bool writable);
// The descriptor that gives burstd [addr, addr + len) in place: the shared
// file (shared_file_for), else a pin of the kernel assistant; *fd -1: none
// (cross-memory). 0, or ibv_reg_mr's errno: ENOMEM (RLIMIT_MEMLOCK), EFAULT.
int memory_fd_for(const void* addr, size_t len, bool writable, int* fd);

// srq_control.cc: shared receive queues through burstd.
ibv_srq* create_srq(ibv_pd* pd, ibv_srq_init_attr* attr);
int destroy_srq(ibv_srq* srq);
int modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask);
int query_srq(ibv_srq* srq, ibv_srq_attr* attr);
inline Srq* to_srq(ibv_srq* srq) { return reinterpret_cast<Srq*>(srq); }

// pd_cq.cc: PDs and CQs through burstd.
ibv_pd* alloc_pd(ibv_context* ctx);
int dealloc_pd(ibv_pd* pd);
ibv_cq* create_cq(ibv_context* ctx, int cqe, ibv_comp_channel* channel, int comp_vector);
ibv_cq_ex* create_cq_ex(ibv_context* ctx, ibv_cq_init_attr_ex* attr);
int destroy_cq(ibv_cq* cq);
int resize_cq(ibv_cq* cq, int cqe);

// qp_control.cc: QPs through burstd (RC and UD), and the address conversion.
ibv_qp* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
ibv_qp* create_qp_ex(ibv_context* ctx, ibv_qp_init_attr_ex* attr);
int modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask);
int query_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask, ibv_qp_init_attr* init_attr);
int destroy_qp(ibv_qp* qp);
int ah_to_wire(const ibv_ah_attr& ah, burst_ctl_ah* out);

// mcast_control.cc: UD multicast attachments through burstd.
int attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);
int detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid);

// post_wr.cc: posting work requests on the shared-memory rings.
int post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad_wr);
int post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);
int post_srq_recv(ibv_srq* srq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr);

// qp_ex.cc: the ibv_qp_ex "wr_*" builder (ibv_wr_start ... ibv_wr_complete), on
// top of post_send. init_qp_ex sets qp->ex and the ibv_qp_ex callbacks for the
// operations in send_ops_flags (EOPNOTSUPP for flags burst does not carry);
// fini_qp_ex frees qp->ex (nullptr is fine).
int init_qp_ex(Qp* qp, uint64_t send_ops_flags);
void fini_qp_ex(Qp* qp);

// burstd went away (written once by the watcher thread, read by every verb).
inline bool context_dead(const Context* ctx) {
  return __atomic_load_n(&ctx->dead, __ATOMIC_ACQUIRE);
}

// burstd stopped serving this ring (written by burstd, read by post and poll).
inline bool ring_failed(const burst_shm_ring* r) {
  return __atomic_load_n(&r->status, __ATOMIC_ACQUIRE) != BURST_SHM_RING_OK;
}

// A destroy verb's result: after the connection to burstd is lost, burstd has
// already released the object (it frees everything of a closed connection), so
// the provider frees its half and reports success.
inline int destroy_result(const Context* ctx, int err) {
  return err != 0 && ctl_conn_lost(&ctx->ctl) ? 0 : err;
}

// One control request to burstd on the context's connection: req and resp are
// the protocol's structs (abi/burst_ctl_proto.h). 0 or an errno value (ctl_call).
template <typename Req, typename Resp>
int ctl_request(Context* ctx, uint16_t op, Req* req, Resp* resp) {
  return ctl_call(&ctx->ctl, op, req, sizeof(*req), resp, sizeof(*resp));
}

// The same with descriptors (ctl_call_fd): send_fd (-1: none) goes with the
// request, a descriptor that comes back lands in *recv_fd (nullptr: none wanted).
template <typename Req, typename Resp>
int ctl_request_fd(Context* ctx, uint16_t op, Req* req, Resp* resp, int send_fd, int* recv_fd) {
  return ctl_call_fd(&ctx->ctl, op, req, sizeof(*req), resp, sizeof(*resp), send_fd, recv_fd);
}

// Destroys the object `handle` in burstd (op: DESTROY_*, DEALLOC_PD, DEREG_MR),
// with destroy_result's convention. Also how a create verb that failed after
// burstd answered takes the object back (the result is then ignored).
inline int ctl_destroy(Context* ctx, uint16_t op, uint32_t handle) {
  burst_ctl_handle_req req{};
  req.handle = handle;
  burst_ctl_empty_resp resp{};
  return destroy_result(ctx, ctl_request(ctx, op, &req, &resp));
}

// The zeroed provider half of an object a create verb makes; nullptr with
// errno ENOMEM.
template <typename T>
T* alloc_object() {
  auto* p = static_cast<T*>(calloc(1, sizeof(T)));
  if (p == nullptr) errno = ENOMEM;
  return p;
}

// How a pointer verb fails: errno = e, NULL.
inline std::nullptr_t verb_error(int e) {
  errno = e;
  return nullptr;
}

// Writes a line to stderr when BURST_PROVIDER_DEBUG is set in the environment.
void debug_log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace burst::provider
