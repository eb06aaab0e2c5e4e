// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The connection manager's control ops (abi/burst_ctl_cm.h): CM_OPEN_CHANNEL
// and CM_COMMAND, relayed to the CmService (cm_service.h); and the QP
// ownership check rdma_cm needs (CONNECT / ACCEPT name a QP by number).
// Control thread only.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

#include "daemon/burstd/cm_service.h"
#include "daemon/burstd/ctl_handlers.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {

bool Resources::qp_of_pid(pid_t pid, uint32_t qpn, uint8_t* qp_type) const {
  auto owner = qp_client_.find(qpn);  // O(1): 10,000 QPs in one process are common
  if (owner == qp_client_.end()) return false;
  auto cit = clients_.find(owner->second.client);
  if (cit == clients_.end() || cit->second.pid != pid || cit->second.revoked) return false;
  *qp_type = owner->second.type;
  return true;
}

int op_cm_open_channel(Call& c) {
  const int fd = c.take_fd(0);
  CmChannels* cm = c.d.cm();
  if (cm == nullptr) {
    if (fd >= 0) close(fd);
    return EOPNOTSUPP;  // this device runs no connection manager
  }
  const auto req = c.request<burst_ctl_cm_open_channel_req>();
  if ((req.flags & ~BURST_CTL_CM_OPEN_PUSH) != 0 || req.reserved != 0) {
    if (fd >= 0) close(fd);
    return EINVAL;
  }
  const int e = (req.flags & BURST_CTL_CM_OPEN_PUSH) != 0
                    ? cm->open_push_channel(c.s.id, c.s.pid, fd)
                    : cm->open_channel(c.s.id, c.s.pid, fd);
  if (e != 0) return e;  // fd adopted
  auto* r = c.response<burst_ctl_cm_open_channel_resp>();
  r->channel_id = c.s.id;
  r->abi_version = BURST_CTL_CM_ABI_VERSION;
  c.what = "channel " + std::to_string(c.s.id);
  return 0;
}

int op_cm_command(Call& c) {
  CmChannels* cm = c.d.cm();
  if (cm == nullptr) return EOPNOTSUPP;
  // The request is read in place (1 KiB): c.msg holds exactly its size.
  const auto* req = reinterpret_cast<const burst_ctl_cm_command_req*>(c.msg);
  if (req->in_len > BURST_CTL_CM_MAX_IN) return EINVAL;
  const size_t out_len = std::min<size_t>(req->out_len, BURST_CTL_CM_MAX_OUT);
  auto* r = c.response<burst_ctl_cm_command_resp>();
  const int n = cm->command(c.s.id, req->cmd, req->in, req->in_len, r->out, out_len);
  c.what = "cmd " + std::to_string(req->cmd);
  if (n < 0) return -n;
  r->out_len = static_cast<uint32_t>(std::min<size_t>(static_cast<size_t>(n), out_len));
  return 0;
}

// CM_COMMAND_EX: a push channel's command with its acknowledgement; the
// response lists the pushed events the shim drops (a list op: only the used
// entries are sent).
int op_cm_command_ex(Call& c) {
  CmChannels* cm = c.d.cm();
  if (cm == nullptr) return EOPNOTSUPP;
  const auto* req = reinterpret_cast<const burst_ctl_cm_command_ex_req*>(c.msg);
  if (req->in_len > BURST_CTL_CM_MAX_IN) return EINVAL;
  const size_t out_len = std::min<size_t>(req->out_len, BURST_CTL_CM_MAX_OUT);
  uint8_t out[BURST_CTL_CM_MAX_OUT];
  uint64_t dead[2 * BURST_CTL_CM_PUSH_WINDOW];
  CmChannels::ExResult ex{dead, 2 * BURST_CTL_CM_PUSH_WINDOW};
  const int n = cm->command_ex(c.s.id, req->cmd, req->consumed, req->source_consumed, req->in,
                               req->in_len, out, out_len, &ex);
  if (n < 0) return -n;
  auto* r = c.response<burst_ctl_cm_command_ex_resp>(
      offsetof(burst_ctl_cm_command_ex_resp, entries) + ex.n_dead * sizeof(uint64_t));
  r->out_len = static_cast<uint32_t>(std::min<size_t>(static_cast<size_t>(n), out_len));
  std::memcpy(r->out, out, r->out_len);
  r->count = static_cast<uint32_t>(ex.n_dead);
  std::memcpy(r->entries, dead, ex.n_dead * sizeof(uint64_t));
  return 0;
}

}  // namespace burst::burstd
