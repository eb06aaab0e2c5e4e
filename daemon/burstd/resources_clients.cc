// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Resources: the client table (handles, release of everything a client made),
// the per-worker doorbell regions and the async-event pipes, with the
// MAP_DOORBELL / SET_ASYNC_FD handlers; the helpers every object uses (worker
// commands, ring regions). Control thread only.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/log.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {
namespace {

constexpr uint32_t kDoorbellLog2Slots = 12;
// A producer that died between reserve and commit holds up its worker's
// doorbell queue this long (the rings are also swept every millisecond).
constexpr uint64_t kDoorbellReclaimNs = 50'000'000;

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
        !c.mws.count(h) && !c.ahs.count(h) && !c.srqs.count(h)) {
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

int Resources::on_worker_status(uint32_t w, const std::function<core::Status(WorkerBase&)>& fn) {
  core::Status st;
  if (int e = on_worker(w, [&](WorkerBase& wk) { st = fn(wk); }); e != 0) return e;
  return st.to_errno();
}

int Resources::make_ring_region(const char* prefix, burst_shm_region_kind region_kind,
                                uint32_t handle, std::span<const shm::RingSpec> rings,
                                shm::RegionLayout* layout, std::shared_ptr<shm::ShmRegion>* out) {
  if (!shm::LayoutRings(rings, layout).ok()) return EINVAL;
  auto region = std::make_shared<shm::ShmRegion>();
  const std::string name = prefix + std::to_string(handle);
  if (core::Status s = shm::ShmRegion::Create(name.c_str(), layout->size, region.get()); !s.ok()) {
    return s.to_errno();
  }
  shm::InitRingRegion(region->data(), *layout, region_kind, handle, rings);
  *out = std::move(region);
  return 0;
}

Resources::Released Resources::release_client(uint32_t client) {
  Released r;
  auto cit = clients_.find(client);
  if (cit == clients_.end()) return r;
  mcast_release_client(client);
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
  for (const auto& [h, qp] : c.qps) qp_client_.erase(qp.qpn);
  r.cqs = static_cast<uint32_t>(c.cqs.size());
  for (auto& [h, ah] : c.ahs) ahs_.remove(ah);
  release_mws(c);
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

int Resources::set_async_fd(uint32_t client, int fd) {
  Client* c = find(client);
  if (c == nullptr || c->async) {
    if (fd >= 0) close(fd);
    return c == nullptr ? ENOENT : EBUSY;
  }
  if (fd < 0) {
    // Native mode (abi/burst_kmod.h): the client's async_fd is the kernel's;
    // its events are raised through the module on its shadows.
    if (device_.kmod() == nullptr) return EOPNOTSUPP;
    c->async = std::make_shared<AsyncSink>(device_.kmod(), static_cast<uint32_t>(c->pid));
    return 0;
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

uint32_t Resources::pd_count() const { return count_objects(&Client::pds); }
uint32_t Resources::cq_count() const { return count_objects(&Client::cqs); }
uint32_t Resources::qp_count() const { return count_objects(&Client::qps); }

uint32_t Resources::qps_on(uint32_t worker) const {
  uint32_t n = 0;
  for (const auto& [id, c] : clients_) {
    for (const auto& [h, qp] : c.qps) n += qp.worker == worker ? 1 : 0;
  }
  return n;
}

int op_map_doorbell(Call& c) {
  const auto req = c.request<burst_ctl_map_doorbell_req>();
  c.what = "worker " + std::to_string(req.worker);
  int fd = -1, wake = -1;
  if (int e = c.res.map_doorbell(c.s.id, req.worker, c.response<burst_ctl_map_doorbell_resp>(), &fd,
                                 &wake);
      e != 0) {
    return e;
  }
  c.out_fds->push_back(fd);
  c.out_fds->push_back(wake);
  return 0;
}

int op_set_async_fd(Call& c) {
  const int fd = c.take_fd();  // -1: events through the kernel module (native mode)
  if (fd < 0) c.what = "async events through the kernel module";
  return c.res.set_async_fd(c.s.id, fd);
}

}  // namespace burst::burstd
