// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Protection domains: an entry of the device-wide MrTable per PD, and the
// ALLOC_PD / DEALLOC_PD handlers. Control thread only.
#include <cerrno>
#include <string>

#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {

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
  Client* c = nullptr;
  Pd* pd = nullptr;
  if (int e = find_unused(client, &Client::pds, handle, &c, &pd); e != 0) return e;
  if (core::Status s = device_.mrs().dealloc_pd(pd->pd); !s.ok()) return s.to_errno();
  c->pds.erase(handle);
  return 0;
}

int op_alloc_pd(Call& c) {
  uint32_t handle = 0;
  if (int e = c.res.alloc_pd(c.s.id, &handle); e != 0) return e;
  c.response<burst_ctl_alloc_pd_resp>()->pd_handle = handle;
  c.what = "pd " + std::to_string(handle);
  return 0;
}

int op_dealloc_pd(Call& c) { return handle_op(c, &Resources::dealloc_pd); }

}  // namespace burst::burstd
