#include "daemon/burstd/resources.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/qp.h"
#include "daemon/burstd/log.h"
#include "daemon/net/neigh.h"

namespace burst::burstd {
namespace {

constexpr uint32_t kKnownMask = (core::kQpDestQpn << 1) - 1;  // IBV_QP_STATE .. IBV_QP_DEST_QPN
constexpr uint32_t kMaxQpState = static_cast<uint32_t>(core::QpState::kErr);
constexpr int kResolveTimeoutMs = 1000;

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

Resources::Resources(Device& device, uint32_t command_timeout_ms)
    : device_(device), timeout_ms_(command_timeout_ms) {}

Resources::~Resources() {
  while (!clients_.empty()) release_client(clients_.begin()->first);
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

void Resources::add_client(uint32_t client, pid_t pid) { clients_[client].pid = pid; }

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

// The destination MAC of an RC path: the neighbour table for a netdev, the
// port's own MAC for the loopback backend (every frame comes back to it).
int Resources::resolve_dmac(core::Address* ah) {
  const DeviceInfo& info = device_.info();
  if (info.backend == BURST_CTL_BACKEND_LOOPBACK) {
    ah->dmac = info.mac;
    return 0;
  }
  net::ResolveOptions opts;
  opts.timeout_ms = kResolveTimeoutMs;
  net::ResolveInfo ri;
  net::MacAddr mac{};
  net::Status s = net::resolve_neighbour(info.ifindex, ah->dgid, &mac, opts, &ri);
  if (!s.ok()) {
    BURSTD_WARN("MODIFY_QP: %s", s.message().c_str());
    return s.code() != 0 ? s.code() : EHOSTUNREACH;
  }
  ah->dmac = mac;
  return 0;
}

// ---------------------------------------------------------------------------
// PDs

int Resources::alloc_pd(uint32_t client, uint32_t* handle) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  const uint32_t pd = device_.mrs().alloc_pd();
  if (pd == 0) return ENOMEM;
  *handle = c->next_handle++;
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
  constexpr uint32_t kMaxCqe = 1u << 20;  // the Engine's largest CQ
  if (cqe == 0 || cqe > kMaxCqe) return EINVAL;
  *handle = c->next_handle++;
  Cq& cq = c->cqs[*handle];
  cq.cqe = cqe;
  cq.shard.assign(device_.workers(), 0);
  *actual = cqe;
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
    if (int e = on_worker(w, [&](WorkerBase& wk) { st = wk.engine().destroy_cq(id); }); e != 0) {
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
                         burst_ctl_create_qp_resp* resp) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto pd = c->pds.find(req.pd_handle);
  auto scq = c->cqs.find(req.send_cq_handle);
  auto rcq = c->cqs.find(req.recv_cq_handle);
  if (pd == c->pds.end() || scq == c->cqs.end() || rcq == c->cqs.end()) return ENOENT;
  if (req.qp_type == static_cast<uint8_t>(core::QpType::kUc)) return EOPNOTSUPP;
  if (req.qp_type != static_cast<uint8_t>(core::QpType::kRc) &&
      req.qp_type != static_cast<uint8_t>(core::QpType::kUd)) {
    return EINVAL;
  }
  core::QpInitAttr init;
  init.type = static_cast<core::QpType>(req.qp_type);
  init.pd = pd->second.pd;
  init.sq_sig_all = req.sq_sig_all != 0;
  init.cap.max_send_wr = req.cap.max_send_wr;
  init.cap.max_recv_wr = req.cap.max_recv_wr;
  init.cap.max_send_sge = req.cap.max_send_sge;
  init.cap.max_recv_sge = req.cap.max_recv_sge;
  init.cap.max_inline_data = req.cap.max_inline_data;

  const uint32_t w = next_worker_++ % device_.workers();
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
        (void)eng.destroy_cq(made[i]);
        (i == 0 ? send_cq : recv_cq).shard[w] = 0;
      }
    }
  });
  if (e != 0) return e;
  if (!st.ok()) return st.to_errno();
  const uint32_t handle = c->next_handle++;
  Qp& qp = c->qps[handle];
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
  if (int e = on_worker(qp.worker, [&](WorkerBase& wk) { st = wk.engine().destroy_qp(qp.qpn); });
      e != 0) {
    return e;
  }
  if (!st.ok()) return st.to_errno();
  c->qps.erase(it);
  --c->pds[qp.pd].refs;
  --c->cqs[qp.send_cq].refs;
  --c->cqs[qp.recv_cq].refs;
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
    if (qpns.empty() && shards.empty()) continue;
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
      for (uint32_t qpn : qpns) (void)eng.modify_qp(qpn, err, core::kQpState);
      drain();  // the flushed work requests
      for (uint32_t qpn : qpns) destroyed_qps += eng.destroy_qp(qpn).ok() ? 1 : 0;
      drain();
      for (uint32_t id : shards) destroyed_cqs += eng.destroy_cq(id).ok() ? 1 : 0;
    });
    if (e != 0) {
      r.leaked += static_cast<uint32_t>(qpns.size() + shards.size());
      continue;
    }
    r.qps += destroyed_qps;
    r.flushed += flushed;
    r.leaked += static_cast<uint32_t>(qpns.size() - destroyed_qps + shards.size() - destroyed_cqs);
  }
  r.cqs = static_cast<uint32_t>(c.cqs.size());
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

int Resources::list_qps(uint32_t start, uint32_t max, std::vector<burst_ctl_qp_info>* out,
                        uint32_t* total, uint32_t* next) {
  struct Ref {
    const Qp* qp;
    uint32_t client;
    pid_t pid;
    uint32_t handle;
  };
  std::vector<Ref> all;
  for (const auto& [id, c] : clients_) {
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
