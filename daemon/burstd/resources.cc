// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/resources.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

#include "abi/burst_limits.h"
#include "core/qp.h"
#include "daemon/burstd/log.h"
#include "net/neigh.h"
#include "shm/layout.h"

namespace burst::burstd {
namespace {

constexpr uint32_t kKnownMask = (core::kQpDestQpn << 1) - 1;  // IBV_QP_STATE .. IBV_QP_DEST_QPN
constexpr uint32_t kMaxQpState = static_cast<uint32_t>(core::QpState::kErr);
constexpr int kResolveTimeoutMs = 1000;
constexpr uint32_t kDoorbellLog2Slots = 12;
// A producer that died between reserve and commit holds up its worker's
// doorbell queue this long (the rings are also swept every millisecond).
constexpr uint64_t kDoorbellReclaimNs = 50'000'000;
constexpr uint32_t kIbvAccessKnown = 0x1f;  // LOCAL_WRITE .. MW_BIND (ZERO_BASED and later: not supported)


bool zero_mac(const std::array<uint8_t, 6>& m) {
  return std::all_of(m.begin(), m.end(), [](uint8_t b) { return b == 0; });
}

burst_ctl_qp_cap cap_to_wire(const core::QpCap& c) {
  burst_ctl_qp_cap w{};
  w.max_send_wr = c.max_send_wr;
  w.max_recv_wr = c.max_recv_wr;
  w.max_send_sge = c.max_send_sge;
  w.max_recv_sge = c.max_recv_sge;
  w.max_inline_data = c.max_inline_data;
  return w;
}

}  // namespace

Resources::Resources(Device& device, uint32_t command_timeout_ms, const UserLimits& limits)
    : device_(device), timeout_ms_(command_timeout_ms), limits_(limits) {
  doorbells_.resize(device_.workers());
  for (uint32_t w = 0; w < device_.workers(); ++w) {
    const AhTable* t = &ahs_;
    (void)device_.worker(w).run([t](WorkerBase& wk) { wk.plane().set_ah_table(t); }, timeout_ms_);
  }
}

void Resources::quiesce_workers() {
  for (uint32_t w = 0; w < device_.workers(); ++w) (void)on_worker(w, [](WorkerBase&) {});
}

shm::ShmRegion* Resources::doorbell(uint32_t w) {
  if (doorbells_[w]) return doorbells_[w].get();
  shm::RegionLayout layout;
  if (!shm::LayoutDoorbell(kDoorbellLog2Slots, &layout).ok()) return nullptr;
  auto region = std::make_unique<shm::ShmRegion>();
  const std::string name = "burst-doorbell-" + std::to_string(w);
  if (core::Status s = shm::ShmRegion::Create(name.c_str(), layout.size, region.get()); !s.ok()) {
    BURSTD_ERROR("doorbell region for worker %u: %s", w, std::strerror(s.to_errno()));
    return nullptr;
  }
  shm::InitDoorbellRegion(region->data(), layout, w, kDoorbellLog2Slots, kDoorbellReclaimNs);
  shm::ShmRegion* r = region.get();
  if (on_worker(w, [r](WorkerBase& wk) {
        wk.plane().set_doorbell(r, kDoorbellLog2Slots, kDoorbellReclaimNs);
      }) != 0) {
    return nullptr;
  }
  doorbells_[w] = std::move(region);
  return r;
}

Resources::~Resources() {
  while (!clients_.empty()) release_client(clients_.begin()->first);
  // The workers outlive this object: they must stop reading the doorbell
  // regions and the AH table before those go away.
  for (uint32_t w = 0; w < device_.workers(); ++w) {
    (void)device_.worker(w).run(
        [](WorkerBase& wk) {
          wk.plane().clear_doorbell();
          wk.plane().set_ah_table(nullptr);
        },
        timeout_ms_);
  }
}

uint32_t Resources::take_handle(Client& c) {
  // In creation order; after 2^32 creations the counter wraps and skips what
  // is still in use (and 0, which names nothing).
  for (;;) {
    const uint32_t h = c.next_handle++;
    if (h != 0 && !c.pds.count(h) && !c.cqs.count(h) && !c.qps.count(h) && !c.mrs.count(h) &&
        !c.ahs.count(h) && !c.srqs.count(h)) {
      return h;
    }
  }
}

uint32_t Resources::take_srqn() {
  if (next_srqn_ < (1u << BURST_SHM_DB_HANDLE_BITS)) return next_srqn_++;
  // All 24-bit numbers were handed out once: reuse the one freed longest ago.
  if (free_srqns_.empty()) return 0;
  const uint32_t n = free_srqns_.front();
  free_srqns_.pop_front();
  return n;
}

Resources::Client* Resources::find(uint32_t client) {
  auto it = clients_.find(client);
  return it == clients_.end() ? nullptr : &it->second;
}

int Resources::on_worker(uint32_t w, const std::function<void(WorkerBase&)>& fn) {
  const int e = device_.worker(w).run(fn, timeout_ms_);
  if (e != 0) {
    BURSTD_ERROR("worker %u did not take a control command within %u ms (%s)", w, timeout_ms_,
                 std::strerror(e));
  }
  return e;
}


// ---------------------------------------------------------------------------
// Attributes

int Resources::attr_from_wire(const burst_ctl_qp_attr& in, uint32_t mask, core::QpAttr* out) {
  if (mask & ~kKnownMask) return EOPNOTSUPP;
  if ((mask & core::kQpState) && in.qp_state > kMaxQpState) return EINVAL;
  if ((mask & core::kQpCurState) && in.cur_qp_state > kMaxQpState) return EINVAL;
  if ((mask & core::kQpPathMtu) && (in.path_mtu < 1 || in.path_mtu > 5)) return EINVAL;
  core::QpAttr a;
  if (mask & core::kQpState) a.qp_state = static_cast<core::QpState>(in.qp_state);
  if (mask & core::kQpCurState) a.cur_qp_state = static_cast<core::QpState>(in.cur_qp_state);
  if (mask & core::kQpPathMtu) a.path_mtu = static_cast<core::Mtu>(in.path_mtu);
  a.qkey = in.qkey;
  a.rq_psn = in.rq_psn;
  a.sq_psn = in.sq_psn;
  a.dest_qp_num = in.dest_qp_num;
  a.qp_access_flags = in.qp_access_flags;
  std::memcpy(a.ah.dgid.data(), in.ah.dgid, 16);
  std::memcpy(a.ah.dmac.data(), in.ah.dmac, 6);
  a.ah.sgid_index = in.ah.sgid_index;
  a.ah.hop_limit = in.ah.hop_limit;
  a.ah.traffic_class = in.ah.traffic_class;
  a.ah.flow_label = in.ah.flow_label;
  a.ah.vlan_id = in.ah.vlan_id;
  a.pkey_index = in.pkey_index;
  a.port_num = in.port_num;
  a.timeout = in.timeout;
  a.retry_cnt = in.retry_cnt;
  a.rnr_retry = in.rnr_retry;
  a.min_rnr_timer = in.min_rnr_timer;
  a.max_rd_atomic = in.max_rd_atomic;
  a.max_dest_rd_atomic = in.max_dest_rd_atomic;
  a.sq_draining = in.sq_draining;
  *out = a;
  return 0;
}

burst_ctl_qp_attr Resources::attr_to_wire(const core::QpAttr& in) {
  burst_ctl_qp_attr w{};
  w.qp_state = static_cast<uint8_t>(in.qp_state);
  w.cur_qp_state = static_cast<uint8_t>(in.cur_qp_state);
  w.path_mtu = static_cast<uint8_t>(in.path_mtu);
  w.qkey = in.qkey;
  w.rq_psn = in.rq_psn;
  w.sq_psn = in.sq_psn;
  w.dest_qp_num = in.dest_qp_num;
  w.qp_access_flags = in.qp_access_flags;
  std::memcpy(w.ah.dgid, in.ah.dgid.data(), 16);
  std::memcpy(w.ah.dmac, in.ah.dmac.data(), 6);
  w.ah.sgid_index = in.ah.sgid_index;
  w.ah.hop_limit = in.ah.hop_limit;
  w.ah.traffic_class = in.ah.traffic_class;
  w.ah.flow_label = in.ah.flow_label;
  w.ah.vlan_id = in.ah.vlan_id;
  w.pkey_index = in.pkey_index;
  w.port_num = in.port_num;
  w.timeout = in.timeout;
  w.retry_cnt = in.retry_cnt;
  w.rnr_retry = in.rnr_retry;
  w.min_rnr_timer = in.min_rnr_timer;
  w.max_rd_atomic = in.max_rd_atomic;
  w.max_dest_rd_atomic = in.max_dest_rd_atomic;
  w.sq_draining = in.sq_draining;
  return w;
}

// The destination MAC of a path (Device::resolve_dmac: kernel neighbours,
// the DPDK port's ARP agent, or the port itself on loopback).
int Resources::resolve_dmac(core::Address* ah) {
  std::string message;
  net::MacAddr mac{};
  if (int e = device_.resolve_dmac(ah->dgid, kResolveTimeoutMs, &mac, &message); e != 0) {
    BURSTD_WARN("MODIFY_QP: %s", message.c_str());
    return e;
  }
  ah->dmac = mac;
  return 0;
}

// ---------------------------------------------------------------------------
// PDs

int Resources::alloc_pd(uint32_t client, uint32_t* handle) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  if (int e = check_cap(*c, Object::kPd); e != 0) return e;
  const uint32_t pd = device_.mrs().alloc_pd();
  if (pd == 0) return ENOMEM;
  *handle = take_handle(*c);
  c->pds[*handle].pd = pd;
  return 0;
}

int Resources::dealloc_pd(uint32_t client, uint32_t handle) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto it = c->pds.find(handle);
  if (it == c->pds.end()) return ENOENT;
  if (it->second.refs != 0) return EBUSY;
  if (core::Status s = device_.mrs().dealloc_pd(it->second.pd); !s.ok()) return s.to_errno();
  c->pds.erase(it);
  return 0;
}

// ---------------------------------------------------------------------------
// CQs

int Resources::create_cq(uint32_t client, uint32_t cqe, uint32_t* handle, uint32_t* actual) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  if (cqe == 0 || cqe > BURST_MAX_CQE) return EINVAL;
  if (int e = check_cap(*c, Object::kCq); e != 0) return e;
  *handle = take_handle(*c);
  Cq& cq = c->cqs[*handle];
  cq.cqe = cqe;
  cq.shard.assign(device_.workers(), 0);
  *actual = cqe;
  return 0;
}

int Resources::create_cq(uint32_t client, const burst_ctl_create_cq_req& req, int channel_fd,
                         burst_ctl_create_cq_resp* resp, int* region_fd) {
  auto close_fd = [&] {
    if (channel_fd >= 0) close(channel_fd);
  };
  if ((req.flags & ~BURST_CTL_CQ_F_CHANNEL) != 0 ||
      ((req.flags & BURST_CTL_CQ_F_CHANNEL) != 0) != (channel_fd >= 0)) {
    close_fd();
    return (req.flags & ~BURST_CTL_CQ_F_CHANNEL) != 0 ? EINVAL : EBADF;
  }
  uint32_t handle = 0, actual = 0;
  if (int e = create_cq(client, req.cqe, &handle, &actual); e != 0) {
    close_fd();
    return e;
  }
  std::unique_ptr<ShmCq> ring;
  if (core::Status s = ShmCq::Create(handle, actual, req.user_handle, channel_fd, &ring); !s.ok()) {
    (void)destroy_cq(client, handle);
    return s.to_errno();  // channel_fd is closed by the failed ShmCq
  }
  Cq& cq = find(client)->cqs[handle];
  cq.ring = std::move(ring);
  resp->cq_handle = handle;
  resp->cqe = actual;
  resp->region_size = cq.ring->size();
  *region_fd = cq.ring->fd();
  return 0;
}

int Resources::destroy_cq(uint32_t client, uint32_t handle) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto it = c->cqs.find(handle);
  if (it == c->cqs.end()) return ENOENT;
  Cq& cq = it->second;
  if (cq.refs != 0) return EBUSY;
  for (uint32_t w = 0; w < cq.shard.size(); ++w) {
    if (cq.shard[w] == 0) continue;
    core::Status st;
    const uint32_t id = cq.shard[w];
    if (int e = on_worker(w,
                          [&](WorkerBase& wk) {
                            wk.plane().unbind_cq(id);
                            st = wk.engine().destroy_cq(id);
                          });
        e != 0) {
      return e;
    }
    if (!st.ok()) return st.to_errno();
    cq.shard[w] = 0;
  }
  c->cqs.erase(it);
  return 0;
}

// ---------------------------------------------------------------------------
// QPs

int Resources::create_qp(uint32_t client, const burst_ctl_create_qp_req& req,
                         burst_ctl_create_qp_resp* resp, int* region_fd) {
  if (region_fd != nullptr) *region_fd = -1;
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto pd = c->pds.find(req.pd_handle);
  auto scq = c->cqs.find(req.send_cq_handle);
  auto rcq = c->cqs.find(req.recv_cq_handle);
  if (pd == c->pds.end() || scq == c->cqs.end() || rcq == c->cqs.end()) return ENOENT;
  if (int e = check_cap(*c, Object::kQp); e != 0) return e;
  if (req.qp_type == static_cast<uint8_t>(core::QpType::kUc)) return EOPNOTSUPP;
  if (req.qp_type != static_cast<uint8_t>(core::QpType::kRc) &&
      req.qp_type != static_cast<uint8_t>(core::QpType::kUd)) {
    return EINVAL;
  }
  Srq* srq = nullptr;
  if (req.srq_handle != 0) {
    auto sit = c->srqs.find(req.srq_handle);
    if (sit == c->srqs.end()) return ENOENT;
    srq = &sit->second;
  }
  core::QpInitAttr init;
  init.type = static_cast<core::QpType>(req.qp_type);
  init.pd = pd->second.pd;
  if (srq != nullptr) init.srq = srq->engine_id;
  init.sq_sig_all = req.sq_sig_all != 0;
  init.cap.max_send_wr = req.cap.max_send_wr;
  init.cap.max_recv_wr = req.cap.max_recv_wr;
  init.cap.max_send_sge = req.cap.max_send_sge;
  init.cap.max_recv_sge = req.cap.max_recv_sge;
  init.cap.max_inline_data = req.cap.max_inline_data;

  // A QP on an SRQ lives on the SRQ's worker (the SRQ is one Engine's).
  const uint32_t w = srq != nullptr ? srq->worker : next_worker_++ % device_.workers();
  Cq& send_cq = scq->second;
  Cq& recv_cq = rcq->second;
  core::Status st;
  uint32_t qpn = 0;
  core::QpCap cap;
  const int e = on_worker(w, [&](WorkerBase& wk) {
    core::Engine& eng = wk.engine();
    // The CQs' shards on this worker, created for the first QP that needs them.
    uint32_t made[2] = {0, 0};
    for (Cq* cq : {&send_cq, &recv_cq}) {
      if (cq->shard[w] != 0) continue;
      uint32_t id = 0;
      st = eng.create_cq(cq->cqe, &id);
      if (!st.ok()) break;
      cq->shard[w] = id;
      if (cq->ring) wk.plane().bind_cq(id, cq->ring.get());
      made[cq == &send_cq ? 0 : 1] = id;
    }
    if (st.ok()) {
      init.send_cq = send_cq.shard[w];
      init.recv_cq = recv_cq.shard[w];
      st = eng.create_qp(init, &qpn);
      if (st.ok()) (void)eng.query_qp(qpn, nullptr, &cap);
    }
    if (!st.ok()) {  // undo the shards made for this QP
      for (int i = 0; i < 2; ++i) {
        if (made[i] == 0) continue;
        wk.plane().unbind_cq(made[i]);
        (void)eng.destroy_cq(made[i]);
        (i == 0 ? send_cq : recv_cq).shard[w] = 0;
      }
    }
  });
  if (e != 0) return e;
  if (!st.ok()) return st.to_errno();

  // The application's rings, when its CQs have them (the data path).
  std::shared_ptr<shm::ShmRegion> region;
  if (send_cq.ring && recv_cq.ring) {
    int err = 0;
    ShmQpBinding b;
    shm::RingSpec specs[2];
    specs[0].kind = BURST_SHM_RING_SQ;
    specs[0].handle = qpn;
    specs[0].max_sge = cap.max_send_sge;
    specs[0].max_inline = cap.max_inline_data;  // <= BURST_MAX_INLINE_DATA (Engine::create_qp)
    specs[0].geom.log2_entries = shm::Log2Ceil(std::max<uint32_t>(cap.max_send_wr, 2));
    specs[0].geom.entry_size = shm::SendEntrySize(specs[0].max_sge, specs[0].max_inline);
    specs[1].kind = BURST_SHM_RING_RQ;
    specs[1].handle = qpn;
    specs[1].max_sge = cap.max_recv_sge;
    specs[1].geom.log2_entries = shm::Log2Ceil(std::max<uint32_t>(cap.max_recv_wr, 2));
    specs[1].geom.entry_size = shm::RecvEntrySize(std::max<uint32_t>(specs[1].max_sge, 1));
    const std::span<const shm::RingSpec> rings(specs, srq != nullptr ? 1 : 2);
    shm::RegionLayout layout;
    region = std::make_shared<shm::ShmRegion>();
    const std::string name = "burst-qp-" + std::to_string(qpn);
    if (core::Status s2 = shm::LayoutRings(rings, &layout); !s2.ok()) {
      err = EINVAL;
    } else if (core::Status s3 = shm::ShmRegion::Create(name.c_str(), layout.size, region.get());
               !s3.ok()) {
      err = s3.to_errno();
    } else {
      shm::InitRingRegion(region->data(), layout, BURST_SHM_REGION_QP, qpn, rings);
      b.qpn = qpn;
      b.client = client;
      b.user_handle = req.user_handle;
      b.region = region->data();
      b.sq_offset = layout.part_offset[0];
      b.rq_offset = srq != nullptr ? 0 : layout.part_offset[1];
      b.sq_geom = specs[0].geom;
      b.rq_geom = specs[1].geom;
      b.sq_limits = shm::WqeLimits{specs[0].geom.entry_size, specs[0].max_sge, specs[0].max_inline};
      b.rq_limits = shm::WqeLimits{specs[1].geom.entry_size, specs[1].max_sge, 0};
      b.send_cq = send_cq.ring.get();
      b.recv_cq = recv_cq.ring.get();
      b.async = c->async;
      err = on_worker(w, [&](WorkerBase& wk) { wk.plane().bind_qp(b); });
    }
    if (err != 0) {
      (void)on_worker(w, [&](WorkerBase& wk) { (void)wk.engine().destroy_qp(qpn); });
      return err;
    }
    if (region_fd != nullptr) *region_fd = region->fd();
    resp->region_size = region->size();
  }
  const uint32_t handle = take_handle(*c);
  Qp& qp = c->qps[handle];
  qp.region = region;
  qp.srq = req.srq_handle;
  if (srq != nullptr) ++srq->refs;
  qp.qpn = qpn;
  qp.worker = w;
  qp.type = req.qp_type;
  qp.sq_sig_all = init.sq_sig_all;
  qp.pd = req.pd_handle;
  qp.send_cq = req.send_cq_handle;
  qp.recv_cq = req.recv_cq_handle;
  ++pd->second.refs;
  ++send_cq.refs;
  ++recv_cq.refs;
  resp->qp_handle = handle;
  resp->qpn = qpn;
  resp->worker = w;
  resp->cap = cap_to_wire(cap);
  return 0;
}

int Resources::modify_qp(uint32_t client, uint32_t handle, uint32_t mask,
                         const burst_ctl_qp_attr& wire_attr) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto it = c->qps.find(handle);
  if (it == c->qps.end()) return ENOENT;
  const Qp& qp = it->second;
  core::QpAttr attr;
  if (int e = attr_from_wire(wire_attr, mask, &attr); e != 0) return e;
  if ((mask & core::kQpAv) && qp.type == static_cast<uint8_t>(core::QpType::kRc) &&
      zero_mac(attr.ah.dmac)) {
    if (int e = resolve_dmac(&attr.ah); e != 0) return e;
  }
  core::Status st;
  const uint32_t qpn = qp.qpn;
  if (int e = on_worker(qp.worker,
                        [&](WorkerBase& wk) { st = wk.engine().modify_qp(qpn, attr, mask); });
      e != 0) {
    return e;
  }
  return st.to_errno();
}

int Resources::query_qp(uint32_t client, uint32_t handle, burst_ctl_query_qp_resp* resp) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto it = c->qps.find(handle);
  if (it == c->qps.end()) return ENOENT;
  const Qp& qp = it->second;
  core::Status st;
  core::QpAttr attr;
  core::QpCap cap;
  const uint32_t qpn = qp.qpn;
  if (int e = on_worker(qp.worker,
                        [&](WorkerBase& wk) { st = wk.engine().query_qp(qpn, &attr, &cap); });
      e != 0) {
    return e;
  }
  if (!st.ok()) return st.to_errno();
  resp->qpn = qp.qpn;
  resp->worker = qp.worker;
  resp->qp_type = qp.type;
  resp->sq_sig_all = qp.sq_sig_all ? 1 : 0;
  resp->attr = attr_to_wire(attr);
  resp->cap = cap_to_wire(cap);
  return 0;
}

int Resources::destroy_qp(uint32_t client, uint32_t handle) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto it = c->qps.find(handle);
  if (it == c->qps.end()) return ENOENT;
  const Qp qp = it->second;
  core::Status st;
  if (int e = on_worker(qp.worker,
                        [&](WorkerBase& wk) {
                          st = wk.engine().destroy_qp(qp.qpn);
                          if (st.ok()) wk.plane().unbind_qp(qp.qpn);
                        });
      e != 0) {
    return e;
  }
  if (!st.ok()) return st.to_errno();
  c->qps.erase(it);
  --c->pds[qp.pd].refs;
  --c->cqs[qp.send_cq].refs;
  --c->cqs[qp.recv_cq].refs;
  if (qp.srq != 0) --c->srqs[qp.srq].refs;
  return 0;
}

// ---------------------------------------------------------------------------
// Clients

Resources::Released Resources::release_client(uint32_t client) {
  Released r;
  auto cit = clients_.find(client);
  if (cit == clients_.end()) return r;
  Client& c = cit->second;
  for (uint32_t w = 0; w < device_.workers(); ++w) {
    std::vector<uint32_t> qpns;
    for (const auto& [h, qp] : c.qps) {
      if (qp.worker == w) qpns.push_back(qp.qpn);
    }
    std::vector<uint32_t> shards;
    for (const auto& [h, cq] : c.cqs) {
      if (cq.shard[w] != 0) shards.push_back(cq.shard[w]);
    }
    std::vector<std::pair<uint32_t, uint32_t>> srqs;  // (srqn, engine id)
    for (const auto& [h, srq] : c.srqs) {
      if (srq.worker == w) srqs.emplace_back(srq.srqn, srq.engine_id);
    }
    if (qpns.empty() && shards.empty() && srqs.empty()) continue;
    uint32_t destroyed_qps = 0, destroyed_cqs = 0;
    uint64_t flushed = 0;
    const int e = on_worker(w, [&](WorkerBase& wk) {
      core::Engine& eng = wk.engine();
      core::Wc wc[64];
      auto drain = [&] {
        for (uint32_t id : shards) {
          int n;
          while ((n = eng.poll_cq(id, wc, 64)) > 0) flushed += static_cast<uint64_t>(n);
        }
      };
      core::QpAttr err;
      err.qp_state = core::QpState::kErr;
      for (uint32_t qpn : qpns) wk.plane().unbind_qp(qpn);  // its rings are read no more
      for (uint32_t id : shards) wk.plane().unbind_cq(id);
      for (const auto& [srqn, id] : srqs) wk.plane().unbind_srq(srqn);
      for (uint32_t qpn : qpns) (void)eng.modify_qp(qpn, err, core::kQpState);
      drain();  // the flushed work requests
      for (uint32_t qpn : qpns) destroyed_qps += eng.destroy_qp(qpn).ok() ? 1 : 0;
      drain();
      for (uint32_t id : shards) destroyed_cqs += eng.destroy_cq(id).ok() ? 1 : 0;
      for (const auto& [srqn, id] : srqs) (void)eng.destroy_srq(id);
    });
    for (const auto& [srqn, id] : srqs) free_srqns_.push_back(srqn);
    if (e != 0) {
      r.leaked += static_cast<uint32_t>(qpns.size() + shards.size());
      continue;
    }
    r.qps += destroyed_qps;
    r.flushed += flushed;
    r.leaked += static_cast<uint32_t>(qpns.size() - destroyed_qps + shards.size() - destroyed_cqs);
  }
  r.cqs = static_cast<uint32_t>(c.cqs.size());
  for (auto& [h, ah] : c.ahs) ahs_.remove(ah);
  for (auto& [h, mr] : c.mrs) {
    if (mr.lkey != 0) (void)device_.mrs().dereg_mr(mr.lkey);
  }
  if (!c.mrs.empty()) {
    quiesce_workers();  // no worker still uses a mapping below
    for (auto& [h, mr] : c.mrs) unmap_app_range(&mr.mapping);
  }
  close_memory(c);
  for (const auto& [h, pd] : c.pds) {
    // QP references are gone with the QPs (unless a worker leaked them).
    if (device_.mrs().dealloc_pd(pd.pd).ok()) {
      ++r.pds;
    } else {
      ++r.leaked;
    }
  }
  clients_.erase(cit);
  return r;
}

// ---------------------------------------------------------------------------
// MRs, doorbells, AHs, async events

int Resources::reg_mr(uint32_t client, const burst_ctl_reg_mr_req& req, int file_fd,
                      burst_ctl_reg_mr_resp* resp) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto pd = c->pds.find(req.pd_handle);
  if (pd == c->pds.end()) return ENOENT;
  if ((req.access & ~kIbvAccessKnown) != 0) return EOPNOTSUPP;
  if ((req.flags & ~BURST_CTL_MR_F_FILE) != 0 || req.reserved != 0) return EINVAL;
  if (((req.flags & BURST_CTL_MR_F_FILE) != 0) != (file_fd >= 0)) return EBADF;
  // IBA: remote write or atomic access needs local write.
  if ((req.access & (core::kAccessRemoteWrite | core::kAccessRemoteAtomic)) != 0 &&
      (req.access & core::kAccessLocalWrite) == 0) {
    return EINVAL;
  }
  if (req.addr + req.length < req.addr || req.length > BURST_MAX_MR_SIZE) return EINVAL;
  // Memory is reached only through what the client handed over (ATTACH_MEMORY).
  if (c->revoked || !c->attached) return EACCES;
  if (int e = check_cap(*c, Object::kMr); e != 0) return e;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t bytes =
      req.length == 0 ? 0
                      : ((req.addr + req.length + page - 1) & ~(page - 1)) - (req.addr & ~(page - 1));
  if (int e = charge_memlock(*c, bytes); e != 0) {
    BURSTD_DEBUG("client %u: REG_MR of %llu bytes over RLIMIT_MEMLOCK of pid %d", client,
                 static_cast<unsigned long long>(bytes), static_cast<int>(c->pid));
    return e;
  }
  Mr mr;
  mr.pd = req.pd_handle;
  mr.bytes = bytes;
  const bool writable = (req.access & core::kAccessLocalWrite) != 0;
  if (core::Status s = map_app_range(c->maps_fd, file_fd, req.addr, req.length, writable,
                                     &mr.mapping);
      !s.ok()) {
    BURSTD_DEBUG("client %u: REG_MR 0x%llx+%llu: %s", client,
                 static_cast<unsigned long long>(req.addr),
                 static_cast<unsigned long long>(req.length), std::strerror(s.to_errno()));
    return EFAULT;
  }
  const bool zero_copy = mr.mapping.mode == AppMapping::Mode::kZeroCopy;
  // Cross-memory needs the client's /proc/self/mem (a client that could not
  // open it can register only the file-backed shared memory it sends).
  if (!zero_copy && req.length != 0 && c->space == 0) {
    unmap_app_range(&mr.mapping);
    return EACCES;
  }
  uint8_t* host = zero_copy ? mr.mapping.local
                            : reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(req.addr));
  uint32_t lkey = 0, rkey = 0;
  core::Status s = device_.mrs().reg_mr(pd->second.pd, host, req.iova, req.length, req.access,
                                        &lkey, &rkey, zero_copy ? 0 : c->space);
  if (!s.ok()) {
    unmap_app_range(&mr.mapping);
    return s.to_errno();
  }
  mr.lkey = lkey;
  const uint32_t handle = take_handle(*c);
  c->mrs[handle] = mr;
  c->mr_bytes += bytes;
  ++pd->second.refs;
  resp->mr_handle = handle;
  resp->lkey = lkey;
  resp->rkey = rkey;
  resp->memory_mode = zero_copy ? BURST_CTL_MEM_SHM : BURST_CTL_MEM_CMA;
  return 0;
}

void Resources::release_mr(Mr& mr) {
  if (mr.lkey != 0) (void)device_.mrs().dereg_mr(mr.lkey);
  if (mr.mapping.mode == AppMapping::Mode::kZeroCopy) {
    quiesce_workers();  // a worker may hold a pointer into the mapping until its loop ends
  }
  unmap_app_range(&mr.mapping);
}

int Resources::dereg_mr(uint32_t client, uint32_t handle) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto it = c->mrs.find(handle);
  if (it == c->mrs.end()) return ENOENT;
  release_mr(it->second);
  c->mr_bytes -= it->second.bytes;
  --c->pds[it->second.pd].refs;
  c->mrs.erase(it);
  return 0;
}

int Resources::map_doorbell(uint32_t client, uint32_t worker, burst_ctl_map_doorbell_resp* resp,
                            int* region_fd, int* wake_fd) {
  if (find(client) == nullptr) return ENOENT;
  if (worker >= device_.workers()) return EINVAL;
  shm::ShmRegion* r = doorbell(worker);
  if (r == nullptr) return ENOMEM;
  resp->worker = worker;
  resp->region_size = r->size();
  *region_fd = r->fd();
  *wake_fd = device_.worker(worker).wake_fd();
  return *wake_fd >= 0 ? 0 : ENOMEM;
}

int Resources::create_ah(uint32_t client, const burst_ctl_create_ah_req& req, uint32_t* handle) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  if (c->pds.find(req.pd_handle) == c->pds.end()) return ENOENT;
  burst_ctl_qp_attr wire{};
  wire.ah = req.ah;
  core::QpAttr a;
  if (int e = attr_from_wire(wire, 0, &a); e != 0) return e;
  if (a.ah.sgid_index >= device_.info().gids.size()) return EINVAL;
  if (zero_mac(a.ah.dmac)) {
    if (int e = resolve_dmac(&a.ah); e != 0) return e;
  }
  const uint32_t slot = ahs_.add(client, a.ah);
  if (slot == 0) return ENOMEM;
  // The handle is the table slot (UD WQEs carry it); the worker checks the owner.
  *handle = slot;
  c->ahs[slot] = slot;
  return 0;
}

int Resources::destroy_ah(uint32_t client, uint32_t handle) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto it = c->ahs.find(handle);
  if (it == c->ahs.end()) return ENOENT;
  ahs_.remove(it->second);
  c->ahs.erase(it);
  return 0;
}

int Resources::set_async_fd(uint32_t client, int fd) {
  Client* c = find(client);
  if (c == nullptr || c->async) {
    close(fd);
    return c == nullptr ? ENOENT : EBUSY;
  }
  // burstd's workers write events into it: never block on a client that does
  // not read (an event that does not fit is counted as dropped).
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
    close(fd);
    return EBADF;
  }
  c->async = std::make_shared<AsyncSink>(fd);
  return 0;
}

// ---------------------------------------------------------------------------
// SRQs

int Resources::create_srq(uint32_t client, const burst_ctl_create_srq_req& req,
                          burst_ctl_create_srq_resp* resp, int* region_fd) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto pd = c->pds.find(req.pd_handle);
  if (pd == c->pds.end()) return ENOENT;
  if (next_srqn_ >= (1u << BURST_SHM_DB_HANDLE_BITS) && free_srqns_.empty()) return ENOMEM;
  const uint32_t w = next_worker_++ % device_.workers();
  core::SrqAttr attr;
  attr.max_wr = req.attr.max_wr;
  attr.max_sge = req.attr.max_sge;
  attr.srq_limit = req.attr.srq_limit;
  core::Status st;
  uint32_t id = 0;
  core::SrqAttr got;
  if (int e = on_worker(w,
                        [&](WorkerBase& wk) {
                          st = wk.engine().create_srq(attr, &id);
                          if (st.ok()) (void)wk.engine().query_srq(id, &got);
                        });
      e != 0) {
    return e;
  }
  if (!st.ok()) return st.to_errno();
  const uint32_t srqn = take_srqn();
  shm::RingSpec spec;
  spec.kind = BURST_SHM_RING_SRQ;
  spec.handle = srqn;
  spec.max_sge = got.max_sge;
  spec.geom.log2_entries = shm::Log2Ceil(std::max<uint32_t>(got.max_wr, 2));
  spec.geom.entry_size = shm::RecvEntrySize(std::max<uint32_t>(got.max_sge, 1));
  auto region = std::make_shared<shm::ShmRegion>();
  shm::RegionLayout layout;
  int err = 0;
  const std::string name = "burst-srq-" + std::to_string(srqn);
  if (!shm::LayoutRings({&spec, 1}, &layout).ok()) {
    err = EINVAL;
  } else if (core::Status s2 = shm::ShmRegion::Create(name.c_str(), layout.size, region.get());
             !s2.ok()) {
    err = s2.to_errno();
  } else {
    shm::InitRingRegion(region->data(), layout, BURST_SHM_REGION_SRQ, srqn, {&spec, 1});
    ShmSrqBinding b;
    b.srqn = srqn;
    b.engine_id = id;
    b.user_handle = req.user_handle;
    b.region = region->data();
    b.ring_offset = layout.part_offset[0];
    b.geom = spec.geom;
    b.limits = shm::WqeLimits{spec.geom.entry_size, spec.max_sge, 0};
    b.async = c->async;
    err = on_worker(w, [&](WorkerBase& wk) { wk.plane().bind_srq(b); });
  }
  if (err != 0) {
    (void)on_worker(w, [&](WorkerBase& wk) { (void)wk.engine().destroy_srq(id); });
    free_srqns_.push_back(srqn);
    return err;
  }
  const uint32_t handle = take_handle(*c);
  Srq& srq = c->srqs[handle];
  srq.srqn = srqn;
  srq.worker = w;
  srq.engine_id = id;
  srq.pd = req.pd_handle;
  srq.region = region;
  ++pd->second.refs;
  resp->srq_handle = handle;
  resp->srqn = srqn;
  resp->worker = w;
  resp->attr.max_wr = got.max_wr;
  resp->attr.max_sge = got.max_sge;
  resp->attr.srq_limit = got.srq_limit;
  resp->region_size = region->size();
  *region_fd = region->fd();
  return 0;
}

int Resources::destroy_srq(uint32_t client, uint32_t handle) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto it = c->srqs.find(handle);
  if (it == c->srqs.end()) return ENOENT;
  Srq& srq = it->second;
  if (srq.refs != 0) return EBUSY;
  core::Status st;
  if (int e = on_worker(srq.worker,
                        [&](WorkerBase& wk) {
                          st = wk.engine().destroy_srq(srq.engine_id);
                          if (st.ok()) wk.plane().unbind_srq(srq.srqn);
                        });
      e != 0) {
    return e;
  }
  if (!st.ok()) return st.to_errno();
  --c->pds[srq.pd].refs;
  free_srqns_.push_back(srq.srqn);
  c->srqs.erase(it);
  return 0;
}

int Resources::modify_srq(uint32_t client, const burst_ctl_modify_srq_req& req) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto it = c->srqs.find(req.srq_handle);
  if (it == c->srqs.end()) return ENOENT;
  if (req.attr_mask & ~(BURST_CTL_SRQ_MAX_WR | BURST_CTL_SRQ_LIMIT)) return EINVAL;
  if (req.attr_mask & BURST_CTL_SRQ_MAX_WR) return EOPNOTSUPP;  // no resizing
  if (!(req.attr_mask & BURST_CTL_SRQ_LIMIT)) return 0;
  core::Status st;
  const Srq& srq = it->second;
  if (int e = on_worker(srq.worker,
                        [&](WorkerBase& wk) {
                          st = wk.engine().modify_srq(srq.engine_id, req.attr.srq_limit);
                        });
      e != 0) {
    return e;
  }
  return st.to_errno();
}

int Resources::query_srq(uint32_t client, uint32_t handle, burst_ctl_srq_attr* out) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto it = c->srqs.find(handle);
  if (it == c->srqs.end()) return ENOENT;
  core::Status st;
  core::SrqAttr a;
  const Srq& srq = it->second;
  if (int e = on_worker(srq.worker,
                        [&](WorkerBase& wk) { st = wk.engine().query_srq(srq.engine_id, &a); });
      e != 0) {
    return e;
  }
  if (!st.ok()) return st.to_errno();
  out->max_wr = a.max_wr;
  out->max_sge = a.max_sge;
  out->srq_limit = a.srq_limit;
  return 0;
}

int Resources::list_qps(uint32_t start, uint32_t max, std::vector<burst_ctl_qp_info>* out,
                        uint32_t* total, uint32_t* next, int64_t only_uid) {
  struct Ref {
    const Qp* qp;
    uint32_t client;
    pid_t pid;
    uint32_t handle;
  };
  std::vector<Ref> all;
  for (const auto& [id, c] : clients_) {
    if (only_uid >= 0 && static_cast<int64_t>(c.uid) != only_uid) continue;
    for (const auto& [h, qp] : c.qps) all.push_back(Ref{&qp, id, c.pid, h});
  }
  *total = static_cast<uint32_t>(all.size());
  std::sort(all.begin(), all.end(),
            [](const Ref& a, const Ref& b) { return a.qp->qpn < b.qp->qpn; });
  std::vector<Ref> page;
  *next = 0;
  for (const Ref& r : all) {
    if (r.qp->qpn < start) continue;
    if (page.size() == max) {
      *next = r.qp->qpn;
      break;
    }
    page.push_back(r);
  }
  out->assign(page.size(), burst_ctl_qp_info{});
  for (size_t i = 0; i < page.size(); ++i) {
    burst_ctl_qp_info& e = (*out)[i];
    e.qpn = page[i].qp->qpn;
    e.worker = page[i].qp->worker;
    e.client_id = page[i].client;
    e.pid = static_cast<uint32_t>(page[i].pid);
    e.qp_type = page[i].qp->type;
    e.qp_state = 0xff;  // unknown unless the worker answers
    e.handle = page[i].handle;
  }
  // One command per worker for the QPs of this page it owns.
  for (uint32_t w = 0; w < device_.workers(); ++w) {
    std::vector<size_t> mine;
    for (size_t i = 0; i < page.size(); ++i) {
      if (page[i].qp->worker == w) mine.push_back(i);
    }
    if (mine.empty()) continue;
    (void)on_worker(w, [&](WorkerBase& wk) {
      for (size_t i : mine) {
        core::QpAttr a;
        if (!wk.engine().query_qp((*out)[i].qpn, &a, nullptr).ok()) continue;
        (*out)[i].qp_state = static_cast<uint8_t>(a.qp_state);
        (*out)[i].path_mtu = static_cast<uint8_t>(a.path_mtu);
        (*out)[i].sq_psn = a.sq_psn;
        (*out)[i].rq_psn = a.rq_psn;
        (*out)[i].dest_qp_num = a.dest_qp_num;
      }
    });
  }
  return 0;
}

uint32_t Resources::pd_count() const {
  uint32_t n = 0;
  for (const auto& [id, c] : clients_) n += static_cast<uint32_t>(c.pds.size());
  return n;
}

uint32_t Resources::cq_count() const {
  uint32_t n = 0;
  for (const auto& [id, c] : clients_) n += static_cast<uint32_t>(c.cqs.size());
  return n;
}

uint32_t Resources::qp_count() const {
  uint32_t n = 0;
  for (const auto& [id, c] : clients_) n += static_cast<uint32_t>(c.qps.size());
  return n;
}

uint32_t Resources::qps_on(uint32_t worker) const {
  uint32_t n = 0;
  for (const auto& [id, c] : clients_) {
    for (const auto& [h, qp] : c.qps) n += qp.worker == worker ? 1 : 0;
  }
  return n;
}

}  // namespace burst::burstd
