// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Queue pairs: each lives on one worker (round-robin, or its SRQ's worker),
// its QPN is global; the application's SQ/RQ rings in one region. The
// CREATE_QP / MODIFY_QP / QUERY_QP / DESTROY_QP handlers and the QP listing of
// QUERY_QPS. Control thread only; the closures run on the QP's worker.
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <string>

#include "core/qp.h"
#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/qp_attr_wire.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {

int Resources::create_qp_on_worker(uint32_t w, core::QpInitAttr init, Cq& send_cq, Cq& recv_cq,
                                   uint32_t* qpn, core::QpCap* cap) {
  return on_worker_status(w, [&](WorkerBase& wk) {
    core::Engine& eng = wk.engine();
    core::Status st;
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
      st = eng.create_qp(init, qpn);
      if (st.ok()) (void)eng.query_qp(*qpn, nullptr, cap);
    }
    if (!st.ok()) {  // undo the shards made for this QP
      for (int i = 0; i < 2; ++i) {
        if (made[i] == 0) continue;
        wk.plane().unbind_cq(made[i]);
        (void)eng.destroy_cq(made[i]);
        (i == 0 ? send_cq : recv_cq).shard[w] = 0;
      }
    }
    return st;
  });
}

int Resources::bind_qp_rings(uint32_t client, const burst_ctl_create_qp_req& req, uint32_t w,
                             uint32_t qpn, const core::QpCap& cap, bool with_srq,
                             std::shared_ptr<shm::ShmRegion>* out) {
  Client& c = clients_.at(client);
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
  shm::RegionLayout layout;
  if (int e = make_ring_region("burst-qp-", BURST_SHM_REGION_QP, qpn,
                               {specs, with_srq ? size_t{1} : size_t{2}}, &layout, out);
      e != 0) {
    return e;
  }
  ShmQpBinding b;
  b.qpn = qpn;
  b.client = client;
  b.user_handle = req.user_handle;
  b.region = (*out)->data();
  b.sq_offset = layout.part_offset[0];
  b.rq_offset = with_srq ? 0 : layout.part_offset[1];
  b.sq_geom = specs[0].geom;
  b.rq_geom = specs[1].geom;
  b.sq_limits = shm::WqeLimits{specs[0].geom.entry_size, specs[0].max_sge, specs[0].max_inline};
  b.rq_limits = shm::WqeLimits{specs[1].geom.entry_size, specs[1].max_sge, 0};
  b.send_cq = c.cqs.at(req.send_cq_handle).ring.get();
  b.recv_cq = c.cqs.at(req.recv_cq_handle).ring.get();
  b.async = c.async;
  return on_worker(w, [&](WorkerBase& wk) { wk.plane().bind_qp(b); });
}

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
  init.cap = cap_from_wire(req.cap);
  // A QP on an SRQ lives on the SRQ's worker (the SRQ is one Engine's).
  const uint32_t w = srq != nullptr ? srq->worker : next_worker_++ % device_.workers();
  Cq& send_cq = scq->second;
  Cq& recv_cq = rcq->second;
  uint32_t qpn = 0;
  core::QpCap cap;
  if (int e = create_qp_on_worker(w, init, send_cq, recv_cq, &qpn, &cap); e != 0) return e;
  // The application's rings, when its CQs have them (the data path).
  std::shared_ptr<shm::ShmRegion> region;
  if (send_cq.ring && recv_cq.ring) {
    if (int e = bind_qp_rings(client, req, w, qpn, cap, srq != nullptr, &region); e != 0) {
      (void)on_worker(w, [&](WorkerBase& wk) { (void)wk.engine().destroy_qp(qpn); });
      return e;
    }
    if (region_fd != nullptr) *region_fd = region->release_fd();  // closed once sent
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
  qp_client_[qpn] = QpOwner{client, req.qp_type};
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
  Client* c = nullptr;
  const Qp* qp = find_object(client, &Client::qps, handle, &c);
  if (qp == nullptr) return ENOENT;
  core::QpAttr attr;
  if (int e = attr_from_wire(wire_attr, mask, &attr); e != 0) return e;
  if ((mask & core::kQpAv) && qp->type == static_cast<uint8_t>(core::QpType::kRc) &&
      zero_mac(attr.ah.dmac)) {
    if (int e = resolve_dmac(*c, "MODIFY_QP", &attr.ah); e != 0) return e;
  }
  const uint32_t qpn = qp->qpn;
  return on_worker_status(qp->worker,
                          [&](WorkerBase& wk) { return wk.engine().modify_qp(qpn, attr, mask); });
}

int Resources::query_qp(uint32_t client, uint32_t handle, burst_ctl_query_qp_resp* resp) {
  const Qp* qp = find_object(client, &Client::qps, handle);
  if (qp == nullptr) return ENOENT;
  core::QpAttr attr;
  core::QpCap cap;
  const uint32_t qpn = qp->qpn;
  if (int e = on_worker_status(
          qp->worker, [&](WorkerBase& wk) { return wk.engine().query_qp(qpn, &attr, &cap); });
      e != 0) {
    return e;
  }
  resp->qpn = qp->qpn;
  resp->worker = qp->worker;
  resp->qp_type = qp->type;
  resp->sq_sig_all = qp->sq_sig_all ? 1 : 0;
  resp->attr = attr_to_wire(attr);
  resp->cap = cap_to_wire(cap);
  return 0;
}

int Resources::destroy_qp(uint32_t client, uint32_t handle) {
  Client* c = nullptr;
  const Qp* found = find_object(client, &Client::qps, handle, &c);
  if (found == nullptr) return ENOENT;
  if (qp_in_mcast(client, handle)) return EBUSY;  // detach first (uverbs_free_qp)
  const Qp qp = *found;
  if (int e = on_worker_status(qp.worker,
                               [&](WorkerBase& wk) {
                                 core::Status st = wk.engine().destroy_qp(qp.qpn);
                                 if (st.ok()) wk.plane().unbind_qp(qp.qpn);
                                 return st;
                               });
      e != 0) {
    return e;
  }
  c->qps.erase(handle);
  qp_client_.erase(qp.qpn);
  --c->pds[qp.pd].refs;
  --c->cqs[qp.send_cq].refs;
  --c->cqs[qp.recv_cq].refs;
  if (qp.srq != 0) --c->srqs[qp.srq].refs;
  return 0;
}

// One command per worker for the QPs of the page it owns: their state.
void Resources::fill_qp_states(std::vector<burst_ctl_qp_info>* page) {
  for (uint32_t w = 0; w < device_.workers(); ++w) {
    std::vector<size_t> mine;
    for (size_t i = 0; i < page->size(); ++i) {
      if ((*page)[i].worker == w) mine.push_back(i);
    }
    if (mine.empty()) continue;
    (void)on_worker(w, [&](WorkerBase& wk) {
      for (size_t i : mine) {
        burst_ctl_qp_info& e = (*page)[i];
        core::QpAttr a;
        if (!wk.engine().query_qp(e.qpn, &a, nullptr).ok()) continue;
        e.qp_state = static_cast<uint8_t>(a.qp_state);
        e.path_mtu = static_cast<uint8_t>(a.path_mtu);
        e.sq_psn = a.sq_psn;
        e.rq_psn = a.rq_psn;
        e.dest_qp_num = a.dest_qp_num;
      }
    });
  }
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
  fill_qp_states(out);
  return 0;
}

int op_create_qp(Call& c) {
  const auto req = c.request<burst_ctl_create_qp_req>();
  auto* r = c.response<burst_ctl_create_qp_resp>();
  int fd = -1;
  if (int e = c.res.create_qp(c.s.id, req, r, &fd); e != 0) return e;
  if (fd >= 0) {
    c.out_fds->push_back(fd);
    c.s.sent_fds.push_back(fd);
  }
  c.what = std::string(ctl::qp_type_name(req.qp_type)) + " qp " + std::to_string(r->qp_handle) +
           " qpn " + std::to_string(r->qpn) + " on worker " + std::to_string(r->worker);
  return 0;
}

int op_modify_qp(Call& c) {
  const auto req = c.request<burst_ctl_modify_qp_req>();
  char mask[16];
  std::snprintf(mask, sizeof(mask), "0x%x", req.attr_mask);
  c.what = "qp " + std::to_string(req.qp_handle) + " mask " + mask;
  if (req.attr_mask & core::kQpState) {
    c.what += std::string(" -> ") + ctl::qp_state_name(req.attr.qp_state);
  }
  return c.res.modify_qp(c.s.id, req.qp_handle, req.attr_mask, req.attr);
}

int op_query_qp(Call& c) {
  const auto req = c.request<burst_ctl_query_qp_req>();
  c.what = "qp " + std::to_string(req.qp_handle);
  return c.res.query_qp(c.s.id, req.qp_handle, c.response<burst_ctl_query_qp_resp>());
}

int op_destroy_qp(Call& c) { return handle_op(c, &Resources::destroy_qp); }

}  // namespace burst::burstd
