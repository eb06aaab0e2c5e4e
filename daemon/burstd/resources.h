/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The objects clients create (PDs, CQs, QPs), per client, with per-client
// handles: a client can name only what it created. Every operation that touches
// an Engine runs on the worker owning it (WorkerBase::run).
//
//   PD  an entry of the device-wide MrTable.
//   CQ  a daemon object with a depth; the Engine CQ ("shard") is created on a
//       worker when the first QP of that worker uses the CQ, so QPs of one CQ
//       may live on several workers. (How their completions reach one
//       shared-memory CQ ring is the data path's business.)
//   QP  lives on one worker, chosen round-robin; its QPN is global.
//
// Memory and access (docs/security.md): a client's memory is reached only
// through what it handed over (ATTACH_MEMORY: its /proc/self/maps and
// /proc/self/mem; REG_MR: the file behind a shared mapping). check_clients()
// revokes a client whose address space went away (exec) or whose credentials
// changed: its MRs are deregistered, its QPs moved to ERR, and later requests
// other than teardown and queries are refused (EACCES). Non-root users are
// held to the per-user object caps (EAGAIN, like the rdma cgroup) and
// registered bytes to the registering process's RLIMIT_MEMLOCK (ENOMEM, like
// ib_umem_get) unless it holds CAP_IPC_LOCK.
//
// Threading: control thread only (the closures it hands to workers run while it
// waits for them). The member functions are defined per object:
// resources_clients.cc (clients, handles, doorbells, async pipes),
// resources_access.cc, resources_pd.cc, resources_cq.cc, resources_qp.cc,
// resources_mr.cc, resources_ah.cc, resources_srq.cc, qp_attr_wire.cc; each
// object's file also holds its control ops' handlers (ctl_handlers.h).
#pragma once

#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "abi/burst_ctl_proto.h"
#include "core/verbs.h"
#include "daemon/burstd/access.h"
#include "daemon/burstd/app_memory.h"
#include "daemon/burstd/device.h"
#include "daemon/burstd/shm_plane.h"
#include "shm/layout.h"
#include "shm/region.h"

namespace burst::burstd {

class Resources {
 public:
  Resources(Device& device, uint32_t command_timeout_ms, const UserLimits& limits = {});
  ~Resources();  // releases every client still registered

  // A new connection with its SO_PEERCRED credentials (a snapshot of the
  // process's credentials is taken for check_clients).
  void add_client(uint32_t client, pid_t pid, uid_t uid, gid_t gid);
  // Adopts both descriptors (mem_fd -1: none sent). EALREADY when attached
  // before, EBADF when they are not the client's own /proc maps and mem files.
  int attach_memory(uint32_t client, int maps_fd, int mem_fd);
  // Whether the client was revoked (its requests other than teardown fail).
  bool revoked(uint32_t client) const;
  // Revokes every client whose address space is gone (it exec'd or exited
  // while another process keeps the connection) or whose credentials changed
  // since it connected. Returns how many were revoked now.
  uint32_t check_clients();
  // Revokes one client (see the top of this file); `why` goes to the log.
  void revoke_client(uint32_t client, const char* why);
  struct Released {
    uint32_t qps = 0;
    uint32_t cqs = 0;
    uint32_t pds = 0;
    uint64_t flushed = 0;  // completions flushed from the client's CQs
    uint32_t leaked = 0;   // objects a worker did not release in time (logged)
  };
  // Everything the client created: QPs to ERR (outstanding work flushed) and
  // destroyed on their workers, then its CQs, then its PDs.
  Released release_client(uint32_t client);

  // Operations. Each returns 0 or an errno value.
  int alloc_pd(uint32_t client, uint32_t* handle);
  int dealloc_pd(uint32_t client, uint32_t handle);
  // Without a region (control-path tests); the data path uses the overload below.
  int create_cq(uint32_t client, uint32_t cqe, uint32_t* handle, uint32_t* actual);
  // channel_fd (-1: none) is adopted. *region_fd stays owned by burstd.
  int create_cq(uint32_t client, const burst_ctl_create_cq_req& req, int channel_fd,
                burst_ctl_create_cq_resp* resp, int* region_fd);
  int destroy_cq(uint32_t client, uint32_t handle);
  // RESIZE_CQ: the CQ's ring replaced by one of at least `cqe` entries holding
  // the completions not polled yet (ShmCq::Resize), its Engine shards resized.
  int resize_cq(uint32_t client, const burst_ctl_resize_cq_req& req, burst_ctl_resize_cq_resp* resp,
                int* region_fd);
  // *region_fd (-1 when the CQs have no rings) stays owned by burstd.
  int create_qp(uint32_t client, const burst_ctl_create_qp_req& req, burst_ctl_create_qp_resp* resp,
                int* region_fd = nullptr);
  int modify_qp(uint32_t client, uint32_t handle, uint32_t mask, const burst_ctl_qp_attr& attr);
  int query_qp(uint32_t client, uint32_t handle, burst_ctl_query_qp_resp* resp);
  int destroy_qp(uint32_t client, uint32_t handle);
  // file_fd (-1: none) is the file behind the range when the request has
  // BURST_CTL_MR_F_FILE; it stays owned by the caller (a mapping keeps it open).
  int reg_mr(uint32_t client, const burst_ctl_reg_mr_req& req, int file_fd,
             burst_ctl_reg_mr_resp* resp);
  int dereg_mr(uint32_t client, uint32_t handle);
  // ibv_reg_dmabuf_mr: `fd` the dma-buf (kept by the caller), mapped zero-copy.
  int reg_dmabuf_mr(uint32_t client, const burst_ctl_reg_dmabuf_mr_req& req, int fd,
                    burst_ctl_reg_mr_resp* resp);
  // ibv_rereg_mr; file_fd as reg_mr. resp->mr_handle is the request's.
  int rereg_mr(uint32_t client, const burst_ctl_rereg_mr_req& req, int file_fd,
               burst_ctl_reg_mr_resp* resp);
  // Memory windows (resources_mw.cc): *rkey is the window's first key.
  int alloc_mw(uint32_t client, uint32_t pd_handle, uint32_t type, uint32_t* handle,
               uint32_t* rkey);
  int dealloc_mw(uint32_t client, uint32_t handle);
  // *region_fd and *wake_fd stay owned by burstd.
  int map_doorbell(uint32_t client, uint32_t worker, burst_ctl_map_doorbell_resp* resp,
                   int* region_fd, int* wake_fd);
  int create_ah(uint32_t client, const burst_ctl_create_ah_req& req, uint32_t* handle);
  int destroy_ah(uint32_t client, uint32_t handle);
  int set_async_fd(uint32_t client, int fd);  // adopts fd
  // *region_fd stays owned by burstd.
  int create_srq(uint32_t client, const burst_ctl_create_srq_req& req,
                 burst_ctl_create_srq_resp* resp, int* region_fd);
  int destroy_srq(uint32_t client, uint32_t handle);
  int modify_srq(uint32_t client, const burst_ctl_modify_srq_req& req);
  int query_srq(uint32_t client, uint32_t handle, burst_ctl_srq_attr* out);
  // UD multicast (resources_mcast.cc). attach: 0 (also when attached already),
  // EINVAL (not a UD QP, not a multicast GID), ENOENT (unknown QP), ENOMEM (a
  // BURST_MAX_MCAST_* limit), or why the netdev join failed. detach: EINVAL
  // when not attached. A QP with attachments cannot be destroyed (EBUSY, as
  // uverbs); a client that goes away loses its attachments.
  int attach_mcast(uint32_t client, const burst_ctl_mcast_req& req);
  int detach_mcast(uint32_t client, const burst_ctl_mcast_req& req);
  uint32_t mcast_group_count() const { return static_cast<uint32_t>(mcast_.size()); }
  // rdma_cm (resources_cm.cc): whether QP `qpn` belongs to a live client of
  // process `pid` (*qp_type: its IBV_QPT_*).
  bool qp_of_pid(pid_t pid, uint32_t qpn, uint8_t* qp_type) const;

  // mr.{cross_memory,zero_copy,pinned}[_bytes]: live MRs by how burstd reaches
  // their memory (burstctl counters).
  void mr_counters(std::vector<std::pair<std::string, uint64_t>>* out) const;

  // QPs with qpn >= start, ascending, at most max; *total = QPs listed in all
  // pages, *next = start of the next page (0 if none). only_uid >= 0: only the
  // QPs of that user's clients (what an unprivileged burstctl sees).
  int list_qps(uint32_t start, uint32_t max, std::vector<burst_ctl_qp_info>* out, uint32_t* total,
               uint32_t* next, int64_t only_uid = -1);

  uint32_t pd_count() const;
  uint32_t cq_count() const;
  uint32_t qp_count() const;
  uint32_t qps_on(uint32_t worker) const;

  // Wire <-> core attribute conversion (1:1, values checked); public for tests.
  static int attr_from_wire(const burst_ctl_qp_attr& in, uint32_t mask, core::QpAttr* out);
  static burst_ctl_qp_attr attr_to_wire(const core::QpAttr& in);

 private:
  struct Pd {
    uint32_t pd = 0;    // MrTable PD
    uint32_t refs = 0;  // QPs using it
  };
  struct Cq {
    uint32_t cqe = 0;
    uint32_t refs = 0;            // QPs using it (as send or receive CQ)
    std::vector<uint32_t> shard;  // per worker: Engine CQ id, 0 = none yet
    std::shared_ptr<ShmCq> ring;  // the application's CQ ring (null: control-path only)
  };
  struct Qp {
    uint32_t qpn = 0;
    uint32_t worker = 0;
    uint8_t type = 0;
    bool sq_sig_all = false;
    uint32_t pd = 0;  // handles
    uint32_t send_cq = 0;
    uint32_t recv_cq = 0;
    std::shared_ptr<shm::ShmRegion> region;  // SQ + RQ rings (null: control-path only)
    uint32_t srq = 0;                        // handle, 0: none
  };
  struct Srq {
    uint32_t srqn = 0;  // device-wide (doorbell handle)
    uint32_t worker = 0;
    uint32_t engine_id = 0;
    uint32_t pd = 0;    // handle
    uint32_t refs = 0;  // QPs using it
    std::shared_ptr<shm::ShmRegion> region;
  };
  struct Mr {
    uint32_t lkey = 0;   // 0 once revoked (deregistered from the MrTable)
    uint32_t pd = 0;     // handle
    uint64_t bytes = 0;  // charged against RLIMIT_MEMLOCK (whole pages)
    uint32_t access = 0;  // IBV_ACCESS_*
    AppMapping mapping;
    bool dmabuf = false;  // registered by REG_DMABUF_MR (no REREG_MR)
  };
  struct Mw {
    uint32_t index = 0;  // MrTable entry (the rkey's index; its key byte changes at binds)
    uint32_t pd = 0;     // handle
  };
  struct Client {
    pid_t pid = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    ProcessCreds creds;        // at connect (check_clients compares)
    uint32_t next_handle = 1;  // one namespace for PDs, CQs, QPs, MRs, AHs and SRQs (take_handle)
    uint32_t space = 0;        // MemSpaces id of its /proc/self/mem (0: none)
    int maps_fd = -1;          // its /proc/self/maps (-1: ATTACH_MEMORY not done)
    bool attached = false;     // ATTACH_MEMORY done
    bool revoked = false;
    uint64_t mr_bytes = 0;  // sum of its MRs' bytes
    std::shared_ptr<AsyncSink> async;
    std::map<uint32_t, Pd> pds;
    std::map<uint32_t, Cq> cqs;
    std::map<uint32_t, Qp> qps;
    std::map<uint32_t, Mr> mrs;
    std::map<uint32_t, Mw> mws;
    std::map<uint32_t, uint32_t> ahs;  // handle -> AhTable slot
    std::map<uint32_t, Srq> srqs;
    uint64_t path_errors_logged = 0;  // errnos (bit e, e < 64) of path failures already logged
  };

  Client* find(uint32_t client);
  // The client's object `handle` in one of its tables; nullptr (ENOENT) when
  // the client or the object is unknown. *owner: the client (may be null).
  template <class T>
  T* find_object(uint32_t client, std::map<uint32_t, T> Client::*table, uint32_t handle,
                 Client** owner = nullptr) {
    Client* c = find(client);
    if (owner != nullptr) *owner = c;
    if (c == nullptr) return nullptr;
    auto it = (c->*table).find(handle);
    return it == (c->*table).end() ? nullptr : &it->second;
  }
  // The object `handle` that no QP uses any more, for destruction: 0, or
  // ENOENT (unknown) / EBUSY (still used).
  template <class T>
  int find_unused(uint32_t client, std::map<uint32_t, T> Client::*table, uint32_t handle,
                  Client** owner, T** out) {
    *out = find_object(client, table, handle, owner);
    if (*out == nullptr) return ENOENT;
    return (*out)->refs != 0 ? EBUSY : 0;
  }
  // Objects of one kind over every client.
  template <class T>
  uint32_t count_objects(std::map<uint32_t, T> Client::*table) const {
    uint32_t n = 0;
    for (const auto& [id, c] : clients_) n += static_cast<uint32_t>((c.*table).size());
    return n;
  }
  uint32_t take_handle(Client& c);  // a handle the client does not use (never 0)
  uint32_t take_srqn();             // 0: every 24-bit number in use
  // Per-user caps and the memlock budget (0 or an errno value).
  enum class Object : uint8_t { kPd, kCq, kQp, kMr };
  int check_cap(const Client& c, Object what) const;
  int charge_memlock(const Client& c, uint64_t bytes) const;
  void close_memory(Client& c);  // detaches the space, closes the descriptors
  int on_worker(uint32_t w, const std::function<void(WorkerBase&)>& fn);
  // fn on worker w (it must run there): the worker's errno, else fn's status as errno.
  int on_worker_status(uint32_t w, const std::function<core::Status(WorkerBase&)>& fn);
  // The QP's Engine objects on worker w: the CQs' shards there (made for the
  // first QP that needs them; undone when the QP cannot be created) and the QP.
  int create_qp_on_worker(uint32_t w, core::QpInitAttr init, Cq& send_cq, Cq& recv_cq,
                          uint32_t* qpn, core::QpCap* cap);
  // The application's SQ (+ RQ without an SRQ) rings of a new QP, bound on its worker.
  int bind_qp_rings(uint32_t client, const burst_ctl_create_qp_req& req, uint32_t w, uint32_t qpn,
                    const core::QpCap& cap, bool with_srq, std::shared_ptr<shm::ShmRegion>* out);
  // The state of each QP of a QUERY_QPS page, one command per worker.
  void fill_qp_states(std::vector<burst_ctl_qp_info>* page);
  // A shared-memory region named prefix-handle holding `rings`, initialised.
  static int make_ring_region(const char* prefix, burst_shm_region_kind region_kind,
                              uint32_t handle, std::span<const shm::RingSpec> rings,
                              shm::RegionLayout* layout, std::shared_ptr<shm::ShmRegion>* out);
  // The destination MAC of a path for `c` (CREATE_AH, MODIFY_QP: `what`).
  // A failure is logged once per client and errno (a consumer's GID probe may
  // try hundreds of paths), the errno always returned.
  int resolve_dmac(Client& c, const char* what, core::Address* ah);
  void quiesce_workers();  // every worker passed a loop boundary
  void release_mr(Mr& mr);
  // Multicast (resources_mcast.cc): whether the QP has attachments; dropping a
  // client's (before its QPs are destroyed); one member less in group g.
  bool qp_in_mcast(uint32_t client, uint32_t handle) const;
  void mcast_release_client(uint32_t client);
  struct McastGroup;
  void mcast_remove(const std::array<uint8_t, 16>& g, McastGroup& group, size_t member);
  // REG_MR / REG_DMABUF_MR's last step (resources_mr.cc).
  int install_mr(Client& c, Pd& pd, Mr& mr, uint8_t* host, uint64_t iova, uint64_t length,
                 uint32_t space, burst_ctl_reg_mr_resp* resp);
  // Checks and maps [addr, addr + length) for an MR of `access` (REG_MR,
  // REREG_MR): *mr gets the mapping and bytes, *host where burst reaches it.
  int map_mr_range(Client& c, uint64_t addr, uint64_t length, uint32_t access, int file_fd,
                   uint64_t charged, Mr* mr, uint8_t** host);
  void release_mws(Client& c);  // deallocated (unbound) before the MRs go
  shm::ShmRegion* doorbell(uint32_t worker);  // created on first use; nullptr on failure

  Device& device_;
  uint32_t timeout_ms_;
  UserLimits limits_;
  uint32_t next_worker_ = 0;
  uint32_t next_srqn_ = 1;           // device-wide SRQ numbers (24 bits, doorbell handles)
  std::deque<uint32_t> free_srqns_;  // destroyed ones, reused (oldest first) once all were used
  std::map<uint32_t, Client> clients_;
  // Every live QP by its (device-wide) QPN: its client (qp_of_pid: rdma_cm's
  // CONNECT / ACCEPT name a QP by number). Control thread.
  struct QpOwner {
    uint32_t client = 0;
    uint8_t type = 0;
  };
  std::unordered_map<uint32_t, QpOwner> qp_client_;
  std::vector<std::unique_ptr<shm::ShmRegion>> doorbells_;  // per worker
  AhTable ahs_;
  // Multicast groups with an attached QP: the members and the kernel's
  // membership on the netdev (a UDP socket joined to the group; -1: no netdev).
  struct McastMember {
    uint32_t client = 0;
    uint32_t qp_handle = 0;
    uint32_t qpn = 0;
    uint32_t worker = 0;
  };
  struct McastGroup {
    std::vector<McastMember> members;
    int join_fd = -1;
  };
  std::map<std::array<uint8_t, 16>, McastGroup> mcast_;
  uint32_t mcast_members_ = 0;              // attachments over every group
  std::vector<uint32_t> mcast_per_worker_;  // attachments per worker (Handoff member bits)
};

}  // namespace burst::burstd
