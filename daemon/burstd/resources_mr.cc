// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Memory regions: registrations checked against the client's own maps
// descriptor (app_memory), charged to its RLIMIT_MEMLOCK; zero-copy when the
// client sent the file behind a shared mapping, cross-memory through its
// /proc/self/mem otherwise. REG_MR / DEREG_MR handlers. Control thread only.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "abi/burst_limits.h"
#include "core/qp.h"
#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/log.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {
namespace {

constexpr uint32_t kIbvAccessKnown =
    0x1f;  // LOCAL_WRITE .. MW_BIND (ZERO_BASED and later: not supported)

}  // namespace

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
  const uint64_t bytes = req.length == 0 ? 0
                                         : ((req.addr + req.length + page - 1) & ~(page - 1)) -
                                               (req.addr & ~(page - 1));
  if (int e = charge_memlock(*c, bytes); e != 0) {
    BURSTD_DEBUG("client %u: REG_MR of %llu bytes over RLIMIT_MEMLOCK of pid %d", client,
                 static_cast<unsigned long long>(bytes), static_cast<int>(c->pid));
    return e;
  }
  Mr mr;
  mr.pd = req.pd_handle;
  mr.bytes = bytes;
  const bool writable = (req.access & core::kAccessLocalWrite) != 0;
  if (core::Status s =
          map_app_range(c->maps_fd, file_fd, req.addr, req.length, writable, &mr.mapping);
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
  uint8_t* host =
      zero_copy ? mr.mapping.local : reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(req.addr));
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
  Client* c = nullptr;
  Mr* mr = find_object(client, &Client::mrs, handle, &c);
  if (mr == nullptr) return ENOENT;
  release_mr(*mr);
  c->mr_bytes -= mr->bytes;
  --c->pds[mr->pd].refs;
  c->mrs.erase(handle);
  return 0;
}

int op_reg_mr(Call& c) {
  const auto req = c.request<burst_ctl_reg_mr_req>();
  auto* r = c.response<burst_ctl_reg_mr_resp>();
  const int err = c.res.reg_mr(c.s.id, req, c.in_fds[0], r);  // the file stays with the dispatcher
  c.what = "mr " + std::to_string(r->mr_handle) + " len " + std::to_string(req.length) +
           (r->memory_mode == BURST_CTL_MEM_SHM ? " zero-copy" : " cross-memory");
  return err;
}

int op_dereg_mr(Call& c) { return handle_op(c, &Resources::dereg_mr); }

}  // namespace burst::burstd
