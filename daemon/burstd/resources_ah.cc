// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Address handles: slots of the device's AhTable (UD work requests carry the
// slot; the worker checks its owner), and path resolution for AHs and RC QPs.
// CREATE_AH / DESTROY_AH handlers. Control thread only.
#include <cerrno>
#include <string>

#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/log.h"
#include "daemon/burstd/qp_attr_wire.h"
#include "daemon/burstd/resources.h"
#include "net/neigh.h"

namespace burst::burstd {
namespace {

constexpr int kResolveTimeoutMs = 1000;

}  // namespace

// The destination MAC of a path (Device::resolve_dmac: kernel neighbours,
// the DPDK port's ARP agent, or the port itself on loopback).
int Resources::resolve_dmac(Client& c, const char* what, core::Address* ah) {
  std::string message;
  net::MacAddr mac{};
  if (int e = device_.resolve_dmac(ah->dgid, kResolveTimeoutMs, &mac, &message); e != 0) {
    const uint64_t bit = uint64_t{1} << (e > 0 && e < 64 ? e : 63);
    if ((c.path_errors_logged & bit) == 0) {
      c.path_errors_logged |= bit;
      BURSTD_WARN("client pid %d: %s: %s (further failures of this kind for this client are not logged)",
                  static_cast<int>(c.pid), what, message.c_str());
    }
    return e;
  }
  ah->dmac = mac;
  return 0;
}

int Resources::create_ah(uint32_t client, const burst_ctl_create_ah_req& req, uint32_t* handle) {
  Client* c = find(client);
  if (c == nullptr) return ENOENT;
  if (c->pds.find(req.pd_handle) == c->pds.end()) return ENOENT;
  burst_ctl_qp_attr wire{};
  wire.ah = req.ah;
  core::QpAttr a;
  if (int e = attr_from_wire(wire, 0, &a); e != 0) return e;
  if (a.ah.sgid_index >= device_.info().gids.size()) return EINVAL;
  if (zero_mac(a.ah.dmac)) {
    if (int e = resolve_dmac(*c, "CREATE_AH", &a.ah); e != 0) return e;
  }
  const uint32_t slot = ahs_.add(client, a.ah);
  if (slot == 0) return ENOMEM;
  // The handle is the table slot (UD WQEs carry it); the worker checks the owner.
  *handle = slot;
  c->ahs[slot] = slot;
  return 0;
}

int Resources::destroy_ah(uint32_t client, uint32_t handle) {
  Client* c = nullptr;
  const uint32_t* slot = find_object(client, &Client::ahs, handle, &c);
  if (slot == nullptr) return ENOENT;
  ahs_.remove(*slot);
  c->ahs.erase(handle);
  return 0;
}

int op_create_ah(Call& c) {
  const auto req = c.request<burst_ctl_create_ah_req>();
  uint32_t handle = 0;
  const int err = c.res.create_ah(c.s.id, req, &handle);
  if (err == 0) c.response<burst_ctl_create_ah_resp>()->ah_handle = handle;
  c.what = "ah " + std::to_string(handle);
  return err;
}

int op_destroy_ah(Call& c) { return handle_op(c, &Resources::destroy_ah); }

}  // namespace burst::burstd
