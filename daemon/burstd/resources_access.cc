// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Resources: the client's memory descriptors, revocation, per-user caps and
// the memlock budget (resources.h, docs/security.md); the ATTACH_MEMORY handler.
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/log.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {

void Resources::add_client(uint32_t client, pid_t pid, uid_t uid, gid_t gid) {
  Client& c = clients_[client];
  c.pid = pid;
  c.uid = uid;
  c.gid = gid;
  c.creds = read_creds(pid);
}

int Resources::attach_memory(uint32_t client, int maps_fd, int mem_fd) {
  auto fail = [&](int e) {
    if (maps_fd >= 0) close(maps_fd);
    if (mem_fd >= 0) close(mem_fd);
    return e;
  };
  Client* c = find(client);
  if (c == nullptr) return fail(ENOENT);
  if (c->revoked) return fail(EACCES);
  if (c->attached) return fail(EALREADY);
  long maps_pid = 0, mem_pid = 0;
  std::string maps_name, mem_name;
  if (!proc_file_of(maps_fd, &maps_pid, &maps_name) || maps_name != "maps") return fail(EBADF);
  if (mem_fd >= 0 &&
      (!proc_file_of(mem_fd, &mem_pid, &mem_name) || mem_name != "mem" || mem_pid != maps_pid)) {
    return fail(EBADF);
  }
  if (!address_space_alive(maps_fd)) return fail(ESRCH);
  if (mem_fd >= 0) {
    c->space = device_.mrs().spaces().attach(mem_fd);  // adopts mem_fd
    if (c->space == 0) {
      close(maps_fd);
      return ENOMEM;
    }
  }
  c->maps_fd = maps_fd;
  c->attached = true;
  return 0;
}

bool Resources::revoked(uint32_t client) const {
  auto it = clients_.find(client);
  return it != clients_.end() && it->second.revoked;
}

void Resources::close_memory(Client& c) {
  if (c.space != 0) {
    const int fd = device_.mrs().spaces().detach(c.space);
    c.space = 0;
    // A worker may be inside an access that read the entry before the detach:
    // the descriptor number must not be reused under it.
    quiesce_workers();
    if (fd >= 0) close(fd);
  }
  if (c.maps_fd >= 0) close(c.maps_fd);
  c.maps_fd = -1;
}

uint32_t Resources::check_clients() {
  std::vector<std::pair<uint32_t, const char*>> revoke;
  for (auto& [id, c] : clients_) {
    if (c.revoked) continue;
    if (c.maps_fd >= 0 && !address_space_alive(c.maps_fd)) {
      revoke.emplace_back(id, "its address space is gone (exec or exit) while the connection stays");
      continue;
    }
    if (!c.creds.valid) continue;
    const ProcessCreds now = read_creds(c.pid);
    if (!(now == c.creds)) {
      revoke.emplace_back(id, now.valid ? "the credentials of the connecting process changed"
                                        : "the connecting process is gone while the connection "
                                          "stays");
    }
  }
  for (const auto& [id, why] : revoke) revoke_client(id, why);
  return static_cast<uint32_t>(revoke.size());
}

void Resources::revoke_client(uint32_t client, const char* why) {
  Client* c = find(client);
  if (c == nullptr || c->revoked) return;
  c->revoked = true;
  // Registrations first: from here on remote requests are NAKed (remote access
  // error) and local work requests fail (local protection error).
  uint32_t mrs = 0;
  release_mws(*c);
  for (auto& [h, mr] : c->mrs) {
    if (mr.lkey == 0) continue;
    (void)device_.mrs().dereg_mr(mr.lkey);
    mr.lkey = 0;
    ++mrs;
  }
  // Its QPs to ERR on their workers: rings no longer read, outstanding work
  // flushed, IBV_EVENT_QP_FATAL.
  uint32_t qps = 0;
  for (uint32_t w = 0; w < device_.workers(); ++w) {
    std::vector<uint32_t> qpns;
    for (const auto& [h, qp] : c->qps) {
      if (qp.worker == w) qpns.push_back(qp.qpn);
    }
    if (qpns.empty()) continue;
    if (on_worker(w, [&](WorkerBase& wk) {
          for (uint32_t qpn : qpns) wk.plane().revoke_qp(wk.engine(), qpn);
        }) == 0) {
      qps += static_cast<uint32_t>(qpns.size());
    }
  }
  quiesce_workers();  // no worker still uses a mapping or the descriptors below
  for (auto& [h, mr] : c->mrs) unmap_app_range(&mr.mapping);
  close_memory(*c);
  BURSTD_WARN("client %u (pid %d uid %u): %s: revoked (%u MRs deregistered, %u QPs in error)",
              client, static_cast<int>(c->pid), static_cast<unsigned>(c->uid), why, mrs, qps);
}

int Resources::check_cap(const Client& c, Object what) const {
  if (c.uid == 0) return 0;
  const uint32_t cap = what == Object::kPd   ? limits_.max_pds
                       : what == Object::kCq ? limits_.max_cqs
                       : what == Object::kQp ? limits_.max_qps
                                             : limits_.max_mrs;
  if (cap == 0) return 0;
  size_t n = 0;
  for (const auto& [id, o] : clients_) {
    if (o.uid != c.uid) continue;
    n += what == Object::kPd   ? o.pds.size()
         : what == Object::kCq ? o.cqs.size()
         : what == Object::kQp ? o.qps.size()
                               : o.mrs.size() + o.mws.size();  // windows take MR entries
  }
  return n >= cap ? EAGAIN : 0;
}

int Resources::charge_memlock(const Client& c, uint64_t bytes) const {
  if (bytes == 0) return 0;
  // As the kernel asks capable(CAP_IPC_LOCK) at every registration: now, not
  // at connect (a process may have dropped it since).
  if (has_cap(read_creds(c.pid), kCapIpcLock)) return 0;
  uint64_t limit = 0;
  if (!read_memlock_limit(c.pid, &limit)) return ESRCH;
  if (limit == UINT64_MAX) return 0;
  // Every connection of the same process shares its budget (one mm).
  uint64_t used = 0;
  for (const auto& [id, o] : clients_) {
    if (o.pid == c.pid) used += o.mr_bytes;
  }
  return used + bytes > limit || used + bytes < used ? ENOMEM : 0;
}

int op_attach_memory(Call& c) {
  const auto req = c.request<burst_ctl_attach_memory_req>();
  const bool with_mem = (req.flags & BURST_CTL_ATTACH_F_MEM) != 0;
  c.what = with_mem ? "maps + mem" : "maps only";
  if ((req.flags & ~BURST_CTL_ATTACH_F_MEM) != 0 || req.reserved != 0) return EINVAL;
  if (c.in_fds[0] < 0 || (c.in_fds[1] >= 0) != with_mem) return EBADF;
  const int maps = c.take_fd(0);
  return c.res.attach_memory(c.s.id, maps, with_mem ? c.take_fd(1) : -1);
}

}  // namespace burst::burstd
