/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// RC connections over REQ/REP/RTU: CONNECT, LISTEN, the CONNECT_REQUEST of a
// new passive id, ACCEPT (REP, or the active side's RTU), REJECT, DISCONNECT,
// NOTIFY, and the IbCm events turned into rdma_cm events (cma.c's
// cma_connect_ib, cma_ib_req_handler, cma_accept_ib, cma_rep_recv, cma_ib_handler).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cm/cma_impl.h"

namespace burst::cm {

using cma::State;

namespace {

constexpr size_t kReqUserData = kReqPrivateData - cma::kCmaHdrSize;  // 56

// The connect / accept struct as far as the application wrote it (the ECE
// tail is optional, as older librdmacm omit it).
template <typename T>
T read_cmd(const void* in, size_t in_len) {
  T cmd{};
  std::memcpy(&cmd, in, std::min(in_len, sizeof(T)));
  return cmd;
}

bool same_family_any(const sockaddr_storage& listen, const sockaddr_storage& local) {
  if (listen.ss_family == local.ss_family) return true;
  return listen.ss_family == AF_INET6;  // a v6 any-address hears IPv4 too
}

}  // namespace

int Cma::Impl::cmd_connect(ChannelId ch, const void* in, size_t in_len, void*, size_t) {
  auto cmd = read_cmd<rdma_ucm_connect>(in, in_len);
  if (!cmd.conn_param.valid) return -EINVAL;
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  if (id->state != State::kRouteResolved) return -EINVAL;
  uint8_t qp_type = 0;
  if (!host.qp_of_client(id->client, cmd.conn_param.qp_num, &qp_type)) return -EPERM;
  if (qp_type != id->qp_type) return -EINVAL;
  return id->qp_type == cma::kQptUd ? connect_ud(id, cmd.conn_param)
                                    : connect_rc(id, cmd.conn_param);
}

int Cma::Impl::connect_rc(Id* id, const rdma_ucm_conn_param& p) {
  if (p.private_data_len > kReqUserData) return -EINVAL;
  CmReqParams r;
  r.path = id->path;
  r.service_id = cma::service_id(id->ps, cma::addr_port(id->dst));
  r.qpn = p.qp_num & 0xFFFFFF;
  r.qp_type = CmQpType::kRc;
  r.starting_psn = id->seq_num;
  r.responder_resources = p.responder_resources;
  r.initiator_depth = p.initiator_depth;
  r.remote_cm_response_timeout = cma::kCmResponseTimeout;
  r.local_cm_response_timeout = cma::kCmResponseTimeout;
  r.max_cm_retries = cma::kMaxCmRetries;
  r.retry_count = std::min<uint8_t>(7, p.retry_count);
  r.rnr_retry_count = std::min<uint8_t>(7, p.rnr_retry_count);
  r.flow_control = p.flow_control != 0;
  r.srq = p.srq != 0;
  r.private_data_len = cma::write_request_private(*id, p.private_data, p.private_data_len,
                                                  r.private_data.data());
  const CmHandle h = start_active(id, r.qpn);
  if (h == kNoCmHandle) return -ENOMEM;
  id->srq = r.srq;
  id->responder_resources = r.responder_resources;
  id->initiator_depth = r.initiator_depth;
  id->retry_count = r.retry_count;
  id->rnr_retry_count = r.rnr_retry_count;
  id->ack_timeout_qp = static_cast<uint8_t>(id->path.packet_life_time + 1);
  if (int rc = ib.send_req(h, r)) return fail_active(id, h, rc);
  return 0;
}

CmHandle Cma::Impl::start_active(Id* id, uint32_t qp_num) {
  const CmHandle h = ib.create_id(id->handle);
  if (h == kNoCmHandle) return h;
  by_cm[h] = id->handle;
  id->cm = h;
  id->state = State::kConnect;
  id->active = true;
  id->qp_num = qp_num;
  return h;
}

int Cma::Impl::fail_active(Id* id, CmHandle h, int rc) {
  by_cm.erase(h);
  id->cm = kNoCmHandle;
  id->state = State::kRouteResolved;
  id->active = false;
  ib.destroy_id(h);
  return -(rc > 0 ? rc : -rc);
}

int Cma::Impl::cmd_listen(ChannelId ch, const void* in, size_t, void*, size_t) {
  rdma_ucm_listen cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  if (id->state == State::kIdle) {  // rdma_listen binds an unbound id to IPv4 any
    sockaddr_storage any{};
    any.ss_family = AF_INET;
    if (int r = bind(id, reinterpret_cast<const sockaddr*>(&any))) return r;
  }
  if (id->state != State::kAddrBound) return -EINVAL;
  if (id->src.ss_family == cma::kAfIb) return -EAFNOSUPPORT;
  if (id->reuseaddr) {  // cma_check_port(.., reuseaddr = 0)
    for (uint32_t other : ports[uint32_t{id->ps} << 16 | cma::addr_port(id->src)]) {
      if (other == id->handle) continue;
      const Id& cur = *ids.at(other);
      if (cma::addr_any(id->src) || cma::addr_any(cur.src)) return -EADDRNOTAVAIL;
      if (cma::addr_equal(id->src, cur.src)) return -EADDRINUSE;
    }
  }
  uint64_t sid = cma::service_id(id->ps, cma::addr_port(id->src));
  auto it = listens.find(sid);
  if (it == listens.end()) {
    CmHandle h = ib.create_id(0);
    if (h == kNoCmHandle) return -ENOMEM;
    if (int rc = ib.listen(h, sid, ~0ULL)) {
      ib.destroy_id(h);
      return -(rc > 0 ? rc : -rc);
    }
    listens[sid] = {h, 1};
  } else {
    it->second.second++;
  }
  id->backlog = cmd.backlog > 0 && cmd.backlog < cma::kMaxBacklog ? cmd.backlog : cma::kMaxBacklog;
  id->state = State::kListen;
  return 0;
}

void Cma::Impl::stop_listen(Id* id) {
  auto it = listens.find(cma::service_id(id->ps, cma::addr_port(id->src)));
  if (it != listens.end() && --it->second.second == 0) {
    ib.destroy_id(it->second.first);
    listens.erase(it);
  }
  id->state = State::kAddrBound;
}

Id* Cma::Impl::find_listener(uint64_t sid, const sockaddr_storage& local) {
  auto holders = ports.find(static_cast<uint32_t>(sid));  // (port space << 16 | port)
  if (holders == ports.end() || (sid >> 32) != 0) return nullptr;
  Id* any = nullptr;
  for (uint32_t h : holders->second) {
    Id* id = ids.at(h).get();
    if (id->state != State::kListen) continue;
    if (cma::addr_equal(id->src, local)) return id;
    if (cma::addr_any(id->src) && same_family_any(id->src, local) &&
        !(id->afonly && id->src.ss_family != local.ss_family))
      any = id;
  }
  return any;
}

void Cma::Impl::refuse_request(CmHandle handle) {
  ib.destroy_id(handle);  // a REJ, consumer defined, as cm_destroy_id after a handler error
}

Id* Cma::Impl::new_conn_id(Id* listener, CmHandle handle, const sockaddr_storage& local,
                           const sockaddr_storage& remote) {
  Id* id = create(listener->channel, listener->client, 0, listener->ps, listener->qp_type);
  id->reported = false;
  id->listener = listener->handle;
  id->src = local;
  cma::set_port(&id->src, cma::addr_port(listener->src));
  id->dst = remote;
  id->has_device = true;
  if (host.local_address(reinterpret_cast<const sockaddr*>(&id->src), &id->sgid_index, &id->sgid))
    id->sgid = cma::ip_to_gid(id->src);
  id->state = State::kConnect;
  id->cm = handle;
  by_cm[handle] = id->handle;
  return id;
}

void Cma::Impl::on_req(uint64_t sid, CmHandle handle, const CmEvent& ev) {
  const CmReqParams& req = ev.req;
  sockaddr_storage remote, local;
  if (req.private_data_len < cma::kCmaHdrSize ||
      !cma::read_cma_hdr(req.private_data.data(), &remote, &local)) {
    refuse_request(handle);
    return;
  }
  Id* listener = find_listener(sid, local);
  if (!listener || req.qp_type != CmQpType::kRc || listener->qp_type != cma::kQptRc) {
    refuse_request(handle);
    return;
  }
  if (!listener->backlog) {  // ucma_event_handler: -ENOMEM, so no REJ (the peer retries)
    counters.requests_dropped_backlog++;
    ib.drop_request(handle);
    return;
  }
  Id* id = new_conn_id(listener, handle, local, remote);
  id->sgid_index = ev.peer.sgid_index;
  id->path = req.path;  // cma_ib_new_conn_id: the REQ's primary path is the id's route
  id->route_resolved = true;
  id->path_from_req = true;
  id->path.dgid = ev.peer.gid;
  id->path.dmac = ev.peer.mac;
  id->path.sgid = id->sgid;
  id->path.sgid_index = ev.peer.sgid_index;
  id->remote_qpn = req.qpn;
  id->sq_psn = req.starting_psn;
  id->remote_known = true;
  id->responder_resources = req.initiator_depth;  // cm_req_handler's view
  id->initiator_depth = req.responder_resources;
  id->retry_count = req.retry_count;
  id->rnr_retry_count = req.rnr_retry_count;
  id->srq = req.srq;
  id->ack_timeout_qp = cma::ack_timeout(cma::kCaAckDelay, req.path.packet_life_time);

  cma::Event e = make_event(listener, cma::kConnectRequest, 0);
  e.new_id = id->handle;
  e.resp.id = id->handle;
  rdma_ucm_conn_param& c = e.resp.param.conn;
  size_t len = kReqPrivateData - cma::kCmaHdrSize;
  std::memcpy(c.private_data, req.private_data.data() + cma::kCmaHdrSize, len);
  c.private_data_len = static_cast<uint8_t>(len);
  c.responder_resources = req.responder_resources;
  c.initiator_depth = req.initiator_depth;
  c.flow_control = req.flow_control;
  c.retry_count = req.retry_count;
  c.rnr_retry_count = req.rnr_retry_count;
  c.srq = req.srq;
  c.qp_num = req.qpn;
  if (!queue_event(e)) {  // the channel's queue is full: dropped as for the backlog
    counters.requests_dropped_backlog++;
    by_cm.erase(handle);
    id->cm = kNoCmHandle;
    ib.drop_request(handle);
    destroy(id);
    return;
  }
  listener->backlog--;
}

int Cma::Impl::cmd_accept(ChannelId ch, const void* in, size_t in_len, void*, size_t) {
  auto cmd = read_cmd<rdma_ucm_accept>(in, in_len);
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  if (id->state != State::kConnect || id->cm == kNoCmHandle) return -EINVAL;
  const rdma_ucm_conn_param& p = cmd.conn_param;
  if (id->qp_type == cma::kQptUd) {
    int r = accept_ud(id, p.valid ? &p : nullptr);
    if (!r && p.valid) id->uid = cmd.uid;
    return r;
  }
  if (!p.valid) {  // the active side after CONNECT_RESPONSE: cma_rep_recv
    int rc = id->active ? ib.send_rtu(id->cm, nullptr, 0) : EINVAL;
    if (rc) {
      ib.send_rej(id->cm, RejReason::kConsumerReject, nullptr, 0, nullptr, 0);
      return -(rc > 0 ? rc : -rc);
    }
    counters.connections_established++;
    return 0;
  }
  uint8_t qp_type = 0;
  if (!host.qp_of_client(id->client, p.qp_num, &qp_type)) return -EPERM;
  if (qp_type != id->qp_type) return -EINVAL;
  if (p.private_data_len > kRepPrivateData) return -EINVAL;
  CmRepParams rep;  // cma_accept_ib
  rep.qpn = p.qp_num & 0xFFFFFF;
  rep.starting_psn = id->seq_num;
  rep.responder_resources = p.responder_resources;
  rep.initiator_depth = p.initiator_depth;
  rep.target_ack_delay = cma::kCaAckDelay;
  rep.failover_accepted = 0;
  rep.flow_control = p.flow_control != 0;
  rep.rnr_retry_count = std::min<uint8_t>(7, p.rnr_retry_count);
  rep.srq = p.srq != 0;
  rep.private_data_len = p.private_data_len;
  std::memcpy(rep.private_data.data(), p.private_data, p.private_data_len);
  if (int rc = ib.send_rep(id->cm, rep)) return -(rc > 0 ? rc : -rc);
  id->qp_num = rep.qpn;
  id->srq = rep.srq;
  id->responder_resources = rep.responder_resources;
  id->initiator_depth = rep.initiator_depth;
  id->uid = cmd.uid;
  return 0;
}

int Cma::Impl::cmd_reject(ChannelId ch, const void* in, size_t, void*, size_t) {
  rdma_ucm_reject cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  uint8_t reason = cmd.reason ? cmd.reason : static_cast<uint8_t>(RejReason::kConsumerReject);
  if (reason != static_cast<uint8_t>(RejReason::kConsumerReject) &&
      reason != static_cast<uint8_t>(RejReason::kVendorOptionNotSupported))
    return -EINVAL;
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  if (id->cm == kNoCmHandle) return -EINVAL;
  if (id->qp_type == cma::kQptUd) return reject_ud(id, cmd.private_data, cmd.private_data_len);
  if (cmd.private_data_len > kRejPrivateData) return -EINVAL;
  int rc = ib.send_rej(id->cm, static_cast<RejReason>(reason), nullptr, 0, cmd.private_data,
                       cmd.private_data_len);
  return -(rc > 0 ? rc : -rc);
}

int Cma::Impl::cmd_disconnect(ChannelId ch, const void* in, size_t, void*, size_t) {
  rdma_ucm_disconnect cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  if (id->cm == kNoCmHandle) return -EINVAL;
  // Initiate, or answer a DREQ (rdma_disconnect ignores what the CM says).
  if (id->got_dreq || ib.send_dreq(id->cm, nullptr, 0) != 0) ib.send_drep(id->cm, nullptr, 0);
  return 0;
}

int Cma::Impl::cmd_notify(ChannelId ch, const void* in, size_t, void*, size_t) {
  rdma_ucm_notify cmd;
  std::memcpy(&cmd, in, sizeof(cmd));
  int err = 0;
  Id* id = find(ch, cmd.id, &err);
  if (!id) return err;
  if (id->cm == kNoCmHandle) return -EINVAL;
  if (cmd.event == 6) return -EOPNOTSUPP;  // IB_EVENT_PATH_MIG: no alternate paths in burst
  if (static_cast<int>(cmd.event) != cma::kCommEst) return -EINVAL;
  int rc = ib.establish(id->cm);
  return -(rc > 0 ? rc : -rc);
}

void Cma::Impl::on_cm_event(Id* id, const CmEvent& ev) {
  bool tw = ev.type == CmEventType::kTimewaitExit;
  if ((!tw && id->state != State::kConnect) || (tw && id->state != State::kDisconnect)) return;
  cma::Event e = make_event(id, 0, 0);
  rdma_ucm_conn_param& c = e.resp.param.conn;
  switch (ev.type) {
    case CmEventType::kReqError:
    case CmEventType::kRepError:
      e.resp.event = cma::kUnreachable;
      e.resp.status = static_cast<uint32_t>(-ETIMEDOUT);
      break;
    case CmEventType::kRepReceived: {
      const CmRepParams& rep = ev.rep;
      id->remote_qpn = rep.qpn;
      id->sq_psn = rep.starting_psn;
      id->remote_known = true;
      id->initiator_depth = rep.responder_resources;
      id->responder_resources = rep.initiator_depth;
      id->rnr_retry_count = rep.rnr_retry_count;
      id->ack_timeout_qp = cma::ack_timeout(rep.target_ack_delay, id->path.packet_life_time);
      e.resp.event = cma::kConnectResponse;
      std::memcpy(c.private_data, rep.private_data.data(), kRepPrivateData);
      c.private_data_len = static_cast<uint8_t>(kRepPrivateData);
      c.responder_resources = rep.responder_resources;
      c.initiator_depth = rep.initiator_depth;
      c.flow_control = rep.flow_control;
      c.rnr_retry_count = rep.rnr_retry_count;
      c.srq = rep.srq;
      c.qp_num = rep.qpn;
      break;
    }
    case CmEventType::kRtuReceived:
    case CmEventType::kUserEstablished:
      e.resp.event = cma::kEstablished;
      counters.connections_established++;
      break;
    case CmEventType::kDreqError:
      e.resp.status = static_cast<uint32_t>(-ETIMEDOUT);
      [[fallthrough]];
    case CmEventType::kDreqReceived:
    case CmEventType::kDrepReceived:
      if (ev.type == CmEventType::kDreqReceived) id->got_dreq = true;
      id->state = State::kDisconnect;
      e.resp.event = cma::kDisconnected;
      break;
    case CmEventType::kTimewaitExit:
      e.resp.event = cma::kTimewaitExit;
      break;
    case CmEventType::kRejReceived:
      e.resp.event = cma::kRejected;
      e.resp.status = static_cast<uint32_t>(ev.rej_reason);
      std::memcpy(c.private_data, ev.private_data.data(), kRejPrivateData);
      c.private_data_len = static_cast<uint8_t>(kRejPrivateData);
      break;
    default:  // MRA: nothing for the application
      return;
  }
  queue_event(e);
}

}  // namespace burst::cm
