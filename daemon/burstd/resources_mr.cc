// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Memory regions: registrations checked against the client's own maps
// descriptor (app_memory), charged to its RLIMIT_MEMLOCK; zero-copy when the
// client sent the file behind a shared mapping, cross-memory through its
// /proc/self/mem otherwise; a dma-buf the client sent is mapped zero-copy
// (REG_DMABUF_MR). REG_MR / REREG_MR / REG_DMABUF_MR / DEREG_MR handlers.
// Control thread only.
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

// REG_MR and REREG_MR: access known (EOPNOTSUPP otherwise), remote write or
// atomic only with local write, the range within limits.
int check_mr_args(uint32_t access, uint64_t addr, uint64_t length) {
  if ((access & ~kIbvAccessKnown) != 0) return EOPNOTSUPP;
  // IBA: remote write or atomic access needs local write.
  if ((access & (core::kAccessRemoteWrite | core::kAccessRemoteAtomic)) != 0 &&
      (access & core::kAccessLocalWrite) == 0) {
    return EINVAL;
  }
  if (addr + length < addr || length > BURST_MAX_MR_SIZE) return EINVAL;
  return 0;
}

// What REG_MR reports: kmod for pinned pages, shm for another zero-copy mapping
// (a shared file or a dma-buf), cma through the client's memory space.
uint8_t memory_mode_of(const AppMapping& m, uint32_t space) {
  if (space != 0) return BURST_CTL_MEM_CMA;
  return m.mode == AppMapping::Mode::kPinned ? BURST_CTL_MEM_KMOD : BURST_CTL_MEM_SHM;
}

}  // namespace

void Resources::mr_counters(std::vector<std::pair<std::string, uint64_t>>* out) const {
  uint64_t n[3] = {}, bytes[3] = {};
  for (const auto& [id, c] : clients_) {
    for (const auto& [h, mr] : c.mrs) {
      const auto m = static_cast<size_t>(mr.mapping.mode);
      ++n[m];
      bytes[m] += mr.bytes;
    }
  }
  static constexpr const char* kNames[] = {"cross_memory", "zero_copy", "pinned"};
  for (size_t m = 0; m < 3; ++m) {
    out->emplace_back(std::string("mr.") + kNames[m], n[m]);
    out->emplace_back(std::string("mr.") + kNames[m] + "_bytes", bytes[m]);
  }
}

int Resources::map_mr_range(Client& c, uint64_t addr, uint64_t length, uint32_t access,
                            int file_fd, uint64_t charged, Mr* mr, uint8_t** host) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t bytes =
      length == 0 ? 0 : ((addr + length + page - 1) & ~(page - 1)) - (addr & ~(page - 1));
  // `charged`: what the MR being replaced holds already (REREG_MR).
  if (int e = charge_memlock(c, bytes > charged ? bytes - charged : 0); e != 0) {
    BURSTD_DEBUG("REG_MR of %llu bytes over RLIMIT_MEMLOCK of pid %d",
                 static_cast<unsigned long long>(bytes), static_cast<int>(c.pid));
    return e;
  }
  mr->bytes = bytes;
  const bool writable = (access & core::kAccessLocalWrite) != 0;
  const bool pin = file_fd >= 0 && is_kmod_pin(file_fd);
  if (core::Status s =
          map_app_range(c.maps_fd, pin ? -1 : file_fd, addr, length, writable, &mr->mapping);
      !s.ok()) {
    BURSTD_DEBUG("REG_MR 0x%llx+%llu: %s", static_cast<unsigned long long>(addr),
                 static_cast<unsigned long long>(length), std::strerror(s.to_errno()));
    return EFAULT;
  }
  if (pin && length != 0) {
    // The module's pin of exactly this range of this client, mapped in place;
    // refused to a burstd without a registration: cross-memory then.
    core::Status s = map_pin_range(file_fd, c.pid, addr, length, writable, &mr->mapping);
    if (!s.ok() && s.errc() != core::Errc::kPermission) return EINVAL;
    if (!s.ok()) BURSTD_DEBUG("REG_MR: the pin cannot be mapped (no kmod registration)");
  }
  const bool zero_copy = mr->mapping.mode != AppMapping::Mode::kCrossMemory;
  // Cross-memory needs the client's /proc/self/mem (a client that could not
  // open it can register only the file-backed shared memory it sends).
  if (!zero_copy && length != 0 && c.space == 0) {
    unmap_app_range(&mr->mapping);
    return EACCES;
  }
  *host = zero_copy ? mr->mapping.local : reinterpret_cast<uint8_t*>(static_cast<uintptr_t>(addr));
  return 0;
}

int Resources::reg_mr(uint32_t client, const burst_ctl_reg_mr_req& req, int file_fd,
                      burst_ctl_reg_mr_resp* resp) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto pd = c->pds.find(req.pd_handle);
  if (pd == c->pds.end()) return ENOENT;
  if (int e = check_mr_args(req.access, req.addr, req.length); e != 0) return e;
  if ((req.flags & ~BURST_CTL_MR_F_FILE) != 0 || req.reserved != 0) return EINVAL;
  if (((req.flags & BURST_CTL_MR_F_FILE) != 0) != (file_fd >= 0)) return EBADF;
  // Memory is reached only through what the client handed over (ATTACH_MEMORY).
  if (c->revoked || !c->attached) return EACCES;
  if (int e = check_cap(*c, Object::kMr); e != 0) return e;
  Mr mr;
  mr.pd = req.pd_handle;
  mr.access = req.access;
  uint8_t* host = nullptr;
  if (int e = map_mr_range(*c, req.addr, req.length, req.access, file_fd, 0, &mr, &host); e != 0) {
    return e;
  }
  const bool zero_copy = mr.mapping.mode != AppMapping::Mode::kCrossMemory;
  return install_mr(*c, pd->second, mr, host, req.iova, req.length, zero_copy ? 0 : c->space,
                    resp);
}

// The last step of REG_MR and REG_DMABUF_MR: `mr` (mapped, charged) gets its
// keys and a handle; on failure its mapping is undone. space 0: burst reaches
// the memory directly (zero-copy), else through that client memory space.
int Resources::install_mr(Client& c, Pd& pd, Mr& mr, uint8_t* host, uint64_t iova,
                          uint64_t length, uint32_t space, burst_ctl_reg_mr_resp* resp) {
  uint32_t lkey = 0, rkey = 0;
  core::Status s =
      device_.mrs().reg_mr(pd.pd, host, iova, length, mr.access, &lkey, &rkey, space);
  if (!s.ok()) {
    unmap_app_range(&mr.mapping);
    return s.to_errno();
  }
  mr.lkey = lkey;
  const uint32_t handle = take_handle(c);
  c.mrs[handle] = mr;
  c.mr_bytes += mr.bytes;
  ++pd.refs;
  resp->mr_handle = handle;
  resp->lkey = lkey;
  resp->rkey = rkey;
  resp->memory_mode = memory_mode_of(mr.mapping, space);
  return 0;
}

int Resources::reg_dmabuf_mr(uint32_t client, const burst_ctl_reg_dmabuf_mr_req& req, int fd,
                             burst_ctl_reg_mr_resp* resp) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto pd = c->pds.find(req.pd_handle);
  if (pd == c->pds.end()) return ENOENT;
  if (fd < 0) return EBADF;  // as dma_buf_get(-1)
  if (int e = check_mr_args(req.access, req.offset, req.length); e != 0) return e;
  if (req.reserved != 0) return EINVAL;
  if (c->revoked) return EACCES;
  if (int e = check_cap(*c, Object::kMr); e != 0) return e;
  Mr mr;
  mr.pd = req.pd_handle;
  mr.access = req.access;
  mr.dmabuf = true;
  const bool writable = (req.access & core::kAccessLocalWrite) != 0;
  if (core::Status s = map_dmabuf_range(fd, req.offset, req.length, writable, &mr.mapping);
      !s.ok()) {
    BURSTD_DEBUG("REG_DMABUF_MR %llu+%llu: %s", static_cast<unsigned long long>(req.offset),
                 static_cast<unsigned long long>(req.length), std::strerror(s.to_errno()));
    return s.to_errno();
  }
  // Charged as a zero-copy REG_MR: the whole pages of the range (burstd maps
  // the buffer from its start, see map_dmabuf_range; the pages before the
  // range are not the MR's).
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  mr.bytes = req.length == 0 ? 0
                             : ((req.offset + req.length + page - 1) & ~(page - 1)) -
                                   (req.offset & ~(page - 1));
  if (int e = charge_memlock(*c, mr.bytes); e != 0) {
    unmap_app_range(&mr.mapping);
    return e;
  }
  return install_mr(*c, pd->second, mr, mr.mapping.local, req.iova, req.length, 0, resp);
}

int Resources::rereg_mr(uint32_t client, const burst_ctl_rereg_mr_req& req, int file_fd,
                        burst_ctl_reg_mr_resp* resp) {
  constexpr uint32_t kKnownFlags = 0x7;  // IBV_REREG_MR_CHANGE_TRANSLATION | _PD | _ACCESS
  constexpr uint32_t kTranslation = 0x1, kPd = 0x2, kAccess = 0x4;
  Client* c = nullptr;
  Mr* mr = find_object(client, &Client::mrs, req.mr_handle, &c);
  if (mr == nullptr) return ENOENT;
  if (mr->dmabuf) return EOPNOTSUPP;  // its memory is the dma-buf's, not the client's
  if (req.flags == 0 || (req.flags & ~kKnownFlags) != 0) return EINVAL;
  if ((req.mr_flags & ~BURST_CTL_MR_F_FILE) != 0 || req.reserved != 0) return EINVAL;
  if (((req.mr_flags & BURST_CTL_MR_F_FILE) != 0) != (file_fd >= 0)) return EBADF;
  if (c->revoked || !c->attached || mr->lkey == 0) return EACCES;
  const uint32_t pd_handle = (req.flags & kPd) != 0 ? req.pd_handle : mr->pd;
  auto pd = c->pds.find(pd_handle);
  if (pd == c->pds.end()) return ENOENT;
  const uint32_t access = (req.flags & kAccess) != 0 ? req.access : mr->access;
  if (int e = check_mr_args(access, req.addr, req.length); e != 0) return e;
  // A new translation or new access rights: the range is checked and mapped
  // again (a mapping made read-only may have to become writable).
  Mr next = *mr;
  next.pd = pd_handle;
  next.access = access;
  next.mapping = AppMapping{};
  uint8_t* host = nullptr;
  if (int e = map_mr_range(*c, req.addr, req.length, access, file_fd, mr->bytes, &next, &host);
      e != 0) {
    return e;
  }
  const bool zero_copy = next.mapping.mode != AppMapping::Mode::kCrossMemory;
  uint32_t lkey = 0, rkey = 0;
  core::Status s = device_.mrs().rereg_mr(mr->lkey, pd->second.pd, host, req.iova, req.length,
                                          access, zero_copy ? 0 : c->space,
                                          (req.flags & kTranslation) != 0, &lkey, &rkey);
  if (!s.ok()) {
    unmap_app_range(&next.mapping);
    return s.to_errno();  // EBUSY with windows bound; the MR is as it was
  }
  if (mr->mapping.mode != AppMapping::Mode::kCrossMemory) quiesce_workers();
  unmap_app_range(&mr->mapping);
  next.lkey = lkey;
  c->mr_bytes = c->mr_bytes - mr->bytes + next.bytes;
  --c->pds[mr->pd].refs;
  ++pd->second.refs;
  *mr = next;
  resp->mr_handle = req.mr_handle;
  resp->lkey = lkey;
  resp->rkey = rkey;
  resp->memory_mode = memory_mode_of(next.mapping, zero_copy ? 0 : c->space);
  return 0;
}

void Resources::release_mr(Mr& mr) {
  if (mr.lkey != 0) (void)device_.mrs().dereg_mr(mr.lkey);
  if (mr.mapping.mode != AppMapping::Mode::kCrossMemory) {
    quiesce_workers();  // a worker may hold a pointer into the mapping until its loop ends
  }
  unmap_app_range(&mr.mapping);
}

int Resources::dereg_mr(uint32_t client, uint32_t handle) {
  Client* c = nullptr;
  Mr* mr = find_object(client, &Client::mrs, handle, &c);
  if (mr == nullptr) return ENOENT;
  if (mr->lkey != 0) {
    // EBUSY while memory windows are bound to it (IBA 10.6.7.2.6; rxe: EINVAL).
    if (core::Status s = device_.mrs().dereg_mr(mr->lkey); !s.ok()) return s.to_errno();
    mr->lkey = 0;
  }
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
           (r->memory_mode == BURST_CTL_MEM_KMOD  ? " pinned"
            : r->memory_mode == BURST_CTL_MEM_SHM ? " zero-copy"
                                                  : " cross-memory");
  return err;
}

int op_reg_dmabuf_mr(Call& c) {
  const auto req = c.request<burst_ctl_reg_dmabuf_mr_req>();
  auto* r = c.response<burst_ctl_reg_mr_resp>();
  const int err = c.res.reg_dmabuf_mr(c.s.id, req, c.in_fds[0], r);  // kept by the dispatcher
  c.what = "mr " + std::to_string(r->mr_handle) + " dma-buf " + std::to_string(req.offset) + "+" +
           std::to_string(req.length);
  return err;
}

int op_dereg_mr(Call& c) { return handle_op(c, &Resources::dereg_mr); }

int op_rereg_mr(Call& c) {
  const auto req = c.request<burst_ctl_rereg_mr_req>();
  auto* r = c.response<burst_ctl_reg_mr_resp>();
  const int err = c.res.rereg_mr(c.s.id, req, c.in_fds[0], r);
  c.what = "mr " + std::to_string(req.mr_handle) + " flags " + std::to_string(req.flags) +
           " len " + std::to_string(req.length);
  return err;
}

}  // namespace burst::burstd
