// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Shared receive queues: one Engine's (its QPs live on its worker), a
// device-wide SRQ number (the doorbell handle), the application's ring in its
// own region. CREATE_SRQ / DESTROY_SRQ / MODIFY_SRQ / QUERY_SRQ handlers.
// Control thread only; the closures run on the SRQ's worker.
#include <algorithm>
#include <cerrno>
#include <string>

#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {
namespace {

burst_ctl_srq_attr srq_attr_to_wire(const core::SrqAttr& a) {
  burst_ctl_srq_attr w{};
  w.max_wr = a.max_wr;
  w.max_sge = a.max_sge;
  w.srq_limit = a.srq_limit;
  return w;
}

}  // namespace

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
  uint32_t id = 0;
  core::SrqAttr got;
  if (int e = on_worker_status(w,
                               [&](WorkerBase& wk) {
                                 core::Status st = wk.engine().create_srq(attr, &id);
                                 if (st.ok()) (void)wk.engine().query_srq(id, &got);
                                 return st;
                               });
      e != 0) {
    return e;
  }
  const uint32_t srqn = take_srqn();
  shm::RingSpec spec;
  spec.kind = BURST_SHM_RING_SRQ;
  spec.handle = srqn;
  spec.max_sge = got.max_sge;
  spec.geom.log2_entries = shm::Log2Ceil(std::max<uint32_t>(got.max_wr, 2));
  spec.geom.entry_size = shm::RecvEntrySize(std::max<uint32_t>(got.max_sge, 1));
  std::shared_ptr<shm::ShmRegion> region;
  shm::RegionLayout layout;
  int err =
      make_ring_region("burst-srq-", BURST_SHM_REGION_SRQ, srqn, {&spec, 1}, &layout, &region);
  if (err == 0) {
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
  resp->attr = srq_attr_to_wire(got);
  resp->region_size = region->size();
  *region_fd = region->release_fd();  // closed once sent (Session::sent_fds)
  return 0;
}

int Resources::destroy_srq(uint32_t client, uint32_t handle) {
  Client* c = nullptr;
  Srq* srq = nullptr;
  if (int e = find_unused(client, &Client::srqs, handle, &c, &srq); e != 0) return e;
  if (int e = on_worker_status(srq->worker,
                               [srq](WorkerBase& wk) {
                                 core::Status st = wk.engine().destroy_srq(srq->engine_id);
                                 if (st.ok()) wk.plane().unbind_srq(srq->srqn);
                                 return st;
                               });
      e != 0) {
    return e;
  }
  --c->pds[srq->pd].refs;
  free_srqns_.push_back(srq->srqn);
  c->srqs.erase(handle);
  return 0;
}

int Resources::modify_srq(uint32_t client, const burst_ctl_modify_srq_req& req) {
  const Srq* srq = find_object(client, &Client::srqs, req.srq_handle);
  if (srq == nullptr) return ENOENT;
  if (req.attr_mask & ~(BURST_CTL_SRQ_MAX_WR | BURST_CTL_SRQ_LIMIT)) return EINVAL;
  if (req.attr_mask & BURST_CTL_SRQ_MAX_WR) return EOPNOTSUPP;  // no resizing
  if (!(req.attr_mask & BURST_CTL_SRQ_LIMIT)) return 0;
  const uint32_t id = srq->engine_id, limit = req.attr.srq_limit;
  return on_worker_status(srq->worker,
                          [=](WorkerBase& wk) { return wk.engine().modify_srq(id, limit); });
}

int Resources::query_srq(uint32_t client, uint32_t handle, burst_ctl_srq_attr* out) {
  const Srq* srq = find_object(client, &Client::srqs, handle);
  if (srq == nullptr) return ENOENT;
  core::SrqAttr a;
  const uint32_t id = srq->engine_id;
  if (int e = on_worker_status(srq->worker,
                               [&](WorkerBase& wk) { return wk.engine().query_srq(id, &a); });
      e != 0) {
    return e;
  }
  *out = srq_attr_to_wire(a);
  return 0;
}

int op_create_srq(Call& c) {
  const auto req = c.request<burst_ctl_create_srq_req>();
  auto* r = c.response<burst_ctl_create_srq_resp>();
  int fd = -1;
  const int err = c.res.create_srq(c.s.id, req, r, &fd);
  if (err == 0) {
    c.out_fds->push_back(fd);
    c.s.sent_fds.push_back(fd);
  }
  c.what = "srq " + std::to_string(r->srq_handle) + " srqn " + std::to_string(r->srqn);
  return err;
}

int op_destroy_srq(Call& c) { return handle_op(c, &Resources::destroy_srq); }

int op_modify_srq(Call& c) {
  const auto req = c.request<burst_ctl_modify_srq_req>();
  c.what = "srq " + std::to_string(req.srq_handle);
  return c.res.modify_srq(c.s.id, req);
}

int op_query_srq(Call& c) {
  const auto req = c.request<burst_ctl_handle_req>();
  c.what = "srq " + std::to_string(req.handle);
  burst_ctl_srq_attr a{};
  if (int e = c.res.query_srq(c.s.id, req.handle, &a); e != 0) return e;
  c.response<burst_ctl_query_srq_resp>()->attr = a;
  return 0;
}

}  // namespace burst::burstd
