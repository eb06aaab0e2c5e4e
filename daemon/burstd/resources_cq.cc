// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Completion queues: a daemon object with a depth and the application's ring;
// its Engine CQs ("shards") are made per worker by the QPs that use it
// (resources_qp.cc). CREATE_CQ / DESTROY_CQ / RESIZE_CQ handlers. Control
// thread only.
#include <unistd.h>

#include <cerrno>
#include <string>

#include "abi/burst_limits.h"
#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {

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
  constexpr uint32_t kKnown = BURST_CTL_CQ_F_CHANNEL | BURST_CTL_CQ_F_KMOD;
  const bool kmod_events = (req.flags & BURST_CTL_CQ_F_KMOD) != 0;
  if ((req.flags & ~kKnown) != 0 || req.flags == kKnown ||
      ((req.flags & BURST_CTL_CQ_F_CHANNEL) != 0) != (channel_fd >= 0)) {
    close_fd();
    return (req.flags & ~kKnown) != 0 || req.flags == kKnown ? EINVAL : EBADF;
  }
  // Native mode: events through the kernel module, on the provider's shadow CQ
  // (abi/burst_kmod.h); only a burstd that registered its device can raise them.
  if (kmod_events && device_.kmod() == nullptr) return EOPNOTSUPP;
  uint32_t handle = 0, actual = 0;
  if (int e = create_cq(client, req.cqe, &handle, &actual); e != 0) {
    close_fd();
    return e;
  }
  std::unique_ptr<ShmCq> ring;
  const Client* owner = find(client);
  if (core::Status s = ShmCq::Create(handle, actual, req.user_handle, channel_fd, &ring,
                                     kmod_events ? device_.kmod() : nullptr,
                                     static_cast<uint32_t>(owner->pid));
      !s.ok()) {
    (void)destroy_cq(client, handle);
    return s.to_errno();  // channel_fd is closed by the failed ShmCq
  }
  Cq& cq = find(client)->cqs[handle];
  cq.ring = std::move(ring);
  resp->cq_handle = handle;
  resp->cqe = actual;
  resp->region_size = cq.ring->size();
  *region_fd = cq.ring->release_fd();  // closed once sent (Session::sent_fds)
  return 0;
}

int Resources::destroy_cq(uint32_t client, uint32_t handle) {
  Client* c = nullptr;
  Cq* cq = nullptr;
  if (int e = find_unused(client, &Client::cqs, handle, &c, &cq); e != 0) return e;
  for (uint32_t w = 0; w < cq->shard.size(); ++w) {
    if (cq->shard[w] == 0) continue;
    const uint32_t id = cq->shard[w];
    if (int e = on_worker_status(w,
                                 [id](WorkerBase& wk) {
                                   wk.plane().unbind_cq(id);
                                   return wk.engine().destroy_cq(id);
                                 });
        e != 0) {
      return e;
    }
    cq->shard[w] = 0;
  }
  c->cqs.erase(handle);
  return 0;
}

int Resources::resize_cq(uint32_t client, const burst_ctl_resize_cq_req& req,
                         burst_ctl_resize_cq_resp* resp, int* region_fd) {
  Client* c = nullptr;
  Cq* cq = find_object(client, &Client::cqs, req.cq_handle, &c);
  if (cq == nullptr) return ENOENT;
  if (req.cqe == 0 || req.cqe > BURST_MAX_CQE || !cq->ring) return EINVAL;
  if (core::Status s = cq->ring->Resize(req.cqe); !s.ok()) return s.to_errno();
  cq->cqe = req.cqe;  // shards made from now on
  for (uint32_t w = 0; w < cq->shard.size(); ++w) {
    if (cq->shard[w] == 0) continue;
    const uint32_t id = cq->shard[w];
    const uint32_t depth = req.cqe;
    // Only the overflow bound of the completions waiting on that worker: the
    // ring switched already, so the answer is a success either way.
    (void)on_worker_status(
        w, [id, depth](WorkerBase& wk) { return wk.engine().resize_cq(id, depth); });
  }
  resp->cqe = req.cqe;
  resp->region_size = cq->ring->size();
  *region_fd = cq->ring->release_fd();  // closed once sent (Session::sent_fds)
  return 0;
}

int op_create_cq(Call& c) {
  const auto req = c.request<burst_ctl_create_cq_req>();
  auto* r = c.response<burst_ctl_create_cq_resp>();
  int fd = -1;
  if (int e = c.res.create_cq(c.s.id, req, c.take_fd(), r, &fd); e != 0) return e;
  c.out_fds->push_back(fd);
  c.s.sent_fds.push_back(fd);
  c.what = "cq " + std::to_string(r->cq_handle) + " (" + std::to_string(r->cqe) + " entries" +
           ((req.flags & BURST_CTL_CQ_F_CHANNEL) ? ", channel)"
            : (req.flags & BURST_CTL_CQ_F_KMOD)  ? ", kernel channel)"
                                                 : ")");
  return 0;
}

int op_destroy_cq(Call& c) { return handle_op(c, &Resources::destroy_cq); }

int op_resize_cq(Call& c) {
  const auto req = c.request<burst_ctl_resize_cq_req>();
  auto* r = c.response<burst_ctl_resize_cq_resp>();
  int fd = -1;
  if (int e = c.res.resize_cq(c.s.id, req, r, &fd); e != 0) return e;
  c.out_fds->push_back(fd);
  c.s.sent_fds.push_back(fd);
  c.what =
      "cq " + std::to_string(req.cq_handle) + " resized to " + std::to_string(r->cqe) + " entries";
  return 0;
}

}  // namespace burst::burstd
