// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Memory windows (IBA 10.6.7): ALLOC_MW / DEALLOC_MW handlers. A window is an
// entry of the device's MrTable (core/mr.h) in one of the client's PDs; binding
// and invalidating it are work requests, run by the worker that owns the QP.
// Control thread only.
#include <cerrno>
#include <string>

#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {

int Resources::alloc_mw(uint32_t client, uint32_t pd_handle, uint32_t type, uint32_t* handle,
                        uint32_t* rkey) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  auto pd = c->pds.find(pd_handle);
  if (pd == c->pds.end()) return ENOENT;
  if (type != 1 && type != 2) return EINVAL;  // IBV_MW_TYPE_1, IBV_MW_TYPE_2
  if (c->revoked) return EACCES;
  if (int e = check_cap(*c, Object::kMr); e != 0) return e;  // windows take MR entries
  if (core::Status s = device_.mrs().alloc_mw(pd->second.pd, static_cast<uint8_t>(type), rkey);
      !s.ok()) {
    return s.to_errno();
  }
  *handle = take_handle(*c);
  c->mws[*handle] = Mw{*rkey >> 8, pd_handle};
  ++pd->second.refs;
  return 0;
}

int Resources::dealloc_mw(uint32_t client, uint32_t handle) {
  Client* c = nullptr;
  Mw* mw = find_object(client, &Client::mws, handle, &c);
  if (mw == nullptr) return ENOENT;
  if (mw->index != 0) (void)device_.mrs().dealloc_mw(mw->index);
  --c->pds[mw->pd].refs;
  c->mws.erase(handle);
  return 0;
}

void Resources::release_mws(Client& c) {
  for (auto& [h, mw] : c.mws) {
    if (mw.index != 0) (void)device_.mrs().dealloc_mw(mw.index);
    mw.index = 0;  // a revoked client's DEALLOC_MW then only forgets the handle
  }
}

int op_alloc_mw(Call& c) {
  const auto req = c.request<burst_ctl_alloc_mw_req>();
  auto* r = c.response<burst_ctl_alloc_mw_resp>();
  const int err = c.res.alloc_mw(c.s.id, req.pd_handle, req.type, &r->mw_handle, &r->rkey);
  c.what = "mw " + std::to_string(r->mw_handle) + " type " + std::to_string(req.type);
  return err;
}

int op_dealloc_mw(Call& c) { return handle_op(c, &Resources::dealloc_mw); }

}  // namespace burst::burstd
