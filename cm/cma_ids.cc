/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// rdma_cm ids: CREATE_ID, DESTROY_ID, BIND_IP / BIND (port spaces, ephemeral
// ports, address conflicts as the kernel's cma_check_port), SET_OPTION and
// MIGRATE_ID (ucma.c and cma.c's rdma_bind_addr / cma_get_port).
#include <cerrno>
#include <cstring>

#include "cm/cma_impl.h"

namespace burst::cm {

using cma::State;

namespace {

constexpr uint16_t kEphemeralLow = 32768;  // ip_local_port_range defaults
constexpr uint16_t kEphemeralHigh = 60999;

bool valid_ps(uint16_t ps) {
  return ps == RDMA_PS_TCP || ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB || ps == RDMA_PS_IB;
}

// ucma_get_qp_type
int qp_type_of(const rdma_ucm_create_id& cmd, uint8_t* qp_type) {
  switch (cmd.ps) {
    case RDMA_PS_TCP: *qp_type = cma::kQptRc; return 0;
    case RDMA_PS_UDP:
    case RDMA_PS_IPOIB: *qp_type = cma::kQptUd; return 0;
    case RDMA_PS_IB:  // UC and XRC ids: not in burst's rdma_cm
      if (cmd.qp_type != cma::kQptRc && cmd.qp_type != cma::kQptUd) return -EOPNOTSUPP;
      *qp_type = cmd.qp_type;
      return 0;
    default: return -EINVAL;
  }
}

uint32_t port_key(uint16_t ps, uint16_t port) { return uint32_t{ps} << 16 | port; }

// The port space an AF_IB bind selects from its service ID (cma_select_ib_ps).
uint16_t ib_port_space(uint16_t id_ps, const sockaddr_storage& a) {
  uint64_t sid, mask;
  std::memcpy(&sid, reinterpret_cast<const uint8_t*>(&a) + 24, 8);
  std::memcpy(&mask, reinterpret_cast<const uint8_t*>(&a) + 32, 8);
  sid = be64toh(sid);
  mask = be64toh(mask);
  sid &= mask;
  if (id_ps == RDMA_PS_IB && sid == (cma::service_id(RDMA_PS_IB, 0) & mask)) return RDMA_PS_IB;
  if ((id_ps == RDMA_PS_IB || id_ps == RDMA_PS_TCP) &&
      sid == (cma::service_id(RDMA_PS_TCP, 0) & mask))
    return RDMA_PS_TCP;
  if ((id_ps == RDMA_PS_IB || id_ps == RDMA_PS_UDP) &&
      sid == (cma::service_id(RDMA_PS_UDP, 0) & mask))
    return RDMA_PS_UDP;
  return 0;
}

}  // namespace

Id* Cma::Impl::find(ChannelId channel, uint32_t handle, int* err) {
  auto it = ids.find(handle);
  if (it == ids.end() || !it->second->reported) {
    *err = -ENOENT;
    return nullptr;
  }
  if (it->second->channel != channel) {
    *err = -EINVAL;
    return nullptr;
  }
  return it->second.get();
}

Id* Cma::Impl::create(ChannelId channel, ClientId client, uint64_t uid, uint16_t ps,
                      uint8_t qp_type) {
  auto id = std::make_unique<Id>();
  while (ids.count(next_handle) || next_handle == 0) next_handle++;
  id->handle = next_handle++;
  id->channel = channel;
  id->client = client;
  id->uid = uid;
  id->ps = ps;
  id->qp_type = qp_type;
  id->seq_num = random24();
  Id* raw = id.get();
  ids.emplace(raw->handle, std::move(id));
  counters.ids_created++;
  return raw;
}

void Cma::Impl::release_port(Id* id) {
  if (!id->port_bound) return;
  auto it = ports.find(port_key(id->ps, cma::addr_port(id->src)));
  if (it != ports.end()) {
    std::erase(it->second, id->handle);
    if (it->second.empty()) ports.erase(it);
  }
  id->port_bound = false;
}

uint32_t Cma::Impl::destroy(Id* id) {
  if (id->state == State::kListen) stop_listen(id);
  if (id->cm != kNoCmHandle) {
    by_cm.erase(id->cm);
    ib.destroy_id(id->cm);  // REJ / DREQ / DREP as its state requires
    id->cm = kNoCmHandle;
  }
  release_port(id);
  drop_mcasts(id);
  drop_events(id);  // and the new ids of unreported connection requests
  uint32_t reported = id->events_reported;
  counters.ids_destroyed++;
  ids.erase(id->handle);
  return reported;
}

// cma_bind_loopback: a loopback address is the host's but no port's; the id
// takes the port's first GID (the kernel: GID index 0 of the first active
// port), its address stays the loopback one. ENODEV if the port has none.
int Cma::Impl::bind_loopback(uint8_t* sgid_index, Gid* sgid) {
  sockaddr_storage any{};
  any.ss_family = AF_INET6;  // the link-local GID, index 0 on a RoCE port
  if (!host.local_address(reinterpret_cast<const sockaddr*>(&any), sgid_index, sgid)) return 0;
  any.ss_family = AF_INET;
  if (!host.local_address(reinterpret_cast<const sockaddr*>(&any), sgid_index, sgid)) return 0;
  return ENODEV;
}

// rdma_bind_addr + cma_get_port.
int Cma::Impl::bind(Id* id, const sockaddr* addr) {
  sockaddr_storage a{};
  socklen_t len = cma::addr_size(addr);
  if (!len) return -EAFNOSUPPORT;
  if (id->state != State::kIdle) return -EINVAL;
  std::memcpy(&a, addr, len);
  uint16_t ps = id->ps;
  uint8_t sgid_index = 0;
  Gid sgid{};
  if (a.ss_family == cma::kAfIb) {
    // AF_IB: only the any-address (what librdmacm's af_ib probe binds).
    if (!cma::addr_any(a)) return -EADDRNOTAVAIL;
    ps = ib_port_space(id->ps, a);
    if (!ps) return -EPROTONOSUPPORT;
  } else if (!cma::addr_any(a)) {
    int r = host.local_address(reinterpret_cast<const sockaddr*>(&a), &sgid_index, &sgid);
    // A loopback address is the host's but no port's: the bind succeeds with no
    // device, as an any-address one (QUERY says node_guid 0, so librdmacm leaves
    // id->verbs NULL); listen and resolve attach it (cma_bind_loopback).
    if (r && !cma::addr_loopback(a)) return -(r > 0 ? r : -r);
  }
  // Without the option an IPv4 bind is AF-only, an IPv6 one not (bindv6only 0).
  bool afonly = id->afonly_set ? id->afonly : a.ss_family == AF_INET;
  uint16_t port = cma::addr_port(a);
  if (port == 0) {
    uint32_t span = kEphemeralHigh - kEphemeralLow + 1;
    uint32_t start = static_cast<uint32_t>(rng() % span);
    for (uint32_t i = 0; i < span && port == 0; ++i) {
      uint16_t p = static_cast<uint16_t>(kEphemeralLow + (start + i) % span);
      if (!ports.count(port_key(ps, p))) port = p;
    }
    if (port == 0) return -EADDRNOTAVAIL;
  } else if (auto it = ports.find(port_key(ps, port)); it != ports.end()) {
    for (uint32_t other : it->second) {  // cma_check_port
      const Id& cur = *ids.at(other);
      if (id->reuseaddr && cur.reuseaddr) continue;
      if (afonly && cur.afonly && a.ss_family != cur.src.ss_family) continue;
      if (cma::addr_any(a) || cma::addr_any(cur.src)) return -EADDRNOTAVAIL;
      if (cma::addr_equal(a, cur.src)) return -EADDRINUSE;
    }
  }
  cma::set_port(&a, port);
  id->ps = ps;
  id->afonly = afonly;
  id->src = a;
  id->dst = sockaddr_storage{};
  id->dst.ss_family = a.ss_family;
  id->has_device = !cma::addr_any(a) && !cma::addr_loopback(a) && a.ss_family != cma::kAfIb;
  id->sgid_index = sgid_index;
  id->sgid = sgid;
  ports[port_key(ps, port)].push_back(id->handle);
  id->port_bound = true;
  id->state = State::kAddrBound;
  return 0;
}

int Cma::Impl::cmd_create_id(ChannelId ch, const void* in, size_t, void* out, size_t) {
  rdma_ucm_create_id cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  uint8_t qp_type;
  if (!valid_ps(cmd.ps)) return -EINVAL;
  if (int r = qp_type_of(cmd, &qp_type)) return r;
  Id* id = create(ch, channels.at(ch).client, cmd.uid, cmd.ps, qp_type);
  rdma_ucm_create_id_resp resp{};
  resp.id = id->handle;
  std::memcpy(out, &resp, sizeof(resp));
  return sizeof(resp);
}

int Cma::Impl::cmd_destroy_id(ChannelId ch, const void* in, size_t, void* out, size_t) {
  rdma_ucm_destroy_id cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  rdma_ucm_destroy_id_resp resp{};
  resp.events_reported = destroy(id);
  std::memcpy(out, &resp, sizeof(resp));
  return sizeof(resp);
}

int Cma::Impl::cmd_bind_ip(ChannelId ch, const void* in, size_t, void*, size_t) {
  rdma_ucm_bind_ip cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  return bind(id, reinterpret_cast<const sockaddr*>(&cmd.addr));
}

int Cma::Impl::cmd_bind(ChannelId ch, const void* in, size_t, void*, size_t) {
  rdma_ucm_bind cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  const sockaddr* addr = reinterpret_cast<const sockaddr*>(&cmd.addr);
  if (cmd.reserved || !cmd.addr_size || cmd.addr_size != cma::addr_size(addr)) return -EINVAL;
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  return bind(id, addr);
}

// SET_OPTION: the option's value follows the struct (the shim copies the
// application's optval there: in_len = sizeof(rdma_ucm_set_option) + optlen).
int Cma::Impl::cmd_set_option(ChannelId ch, const void* in, size_t in_len, void*, size_t) {
  rdma_ucm_set_option cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  if (cmd.optlen > in_len - sizeof(cmd)) return -EINVAL;
  const uint8_t* val = static_cast<const uint8_t*>(in) + sizeof(cmd);
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  if (cmd.level == RDMA_OPTION_IB) return -ENOSYS;  // RDMA_OPTION_IB_PATH (ibacm routes): not yet
  if (cmd.level != RDMA_OPTION_ID) return -ENOSYS;
  int ival = 0;
  if (cmd.optlen == sizeof(int)) std::memcpy(&ival, val, sizeof(int));
  switch (cmd.optname) {
    case RDMA_OPTION_ID_TOS:
      if (cmd.optlen != 1) return -EINVAL;
      id->tos = val[0];
      id->tos_set = true;
      return 0;
    case RDMA_OPTION_ID_REUSEADDR:  // rdma_set_reuseaddr
      if (cmd.optlen != sizeof(int)) return -EINVAL;
      if (!((ival && id->state != State::kListen) || id->state == State::kIdle)) return -EINVAL;
      id->reuseaddr = ival != 0;
      return 0;
    case RDMA_OPTION_ID_AFONLY:  // rdma_set_afonly
      if (cmd.optlen != sizeof(int)) return -EINVAL;
      if (id->state != State::kIdle && id->state != State::kAddrBound) return -EINVAL;
      id->afonly = ival != 0;
      id->afonly_set = true;
      return 0;
    case RDMA_OPTION_ID_ACK_TIMEOUT:  // rdma_set_ack_timeout
      if (cmd.optlen != 1) return -EINVAL;
      if (id->qp_type != cma::kQptRc) return -EINVAL;
      id->ack_timeout = val[0];
      id->ack_timeout_set = true;
      return 0;
    default: return -ENOSYS;
  }
}

// MIGRATE_ID is written to the channel the id moves to; `fd` names (as a
// ChannelId, translated by the shim) the channel it is on now, as the kernel's
// ucma_migrate_id. Only between channels of one client.
int Cma::Impl::cmd_migrate_id(ChannelId ch, const void* in, size_t, void* out, size_t) {
  rdma_ucm_migrate_id cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  if (!channels.count(cmd.fd)) return -ENOENT;
  int err = 0;
  Id* id = find(cmd.fd, cmd.id, &err);
  if (!id) return err;
  if (channels.at(ch).client != id->client) return -EPERM;
  rdma_ucm_migrate_resp resp{};
  resp.events_reported = id->events_reported;
  if (ch != id->channel) move_events(id, ch);
  std::memcpy(out, &resp, sizeof(resp));
  return sizeof(resp);
}

}  // namespace burst::cm
