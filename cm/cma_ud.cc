/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// UD ids (RDMA_PS_UDP, RDMA_PS_IB with a UD QP) over SIDR: CONNECT sends a
// SIDR_REQ with the cma_hdr, the passive side's CONNECT_REQUEST, ACCEPT and
// REJECT answer with a SIDR_REP (QPN and Q_Key), and the active side's
// ESTABLISHED carries the UD parameters (cma.c's cma_resolve_ib_udp,
// cma_sidr_rep_handler, cma_send_sidr_rep, cma_set_qkey).
#include <algorithm>
#include <cerrno>
#include <cstring>

#include "cm/cma_impl.h"

namespace burst::cm {

using cma::State;

namespace {

constexpr size_t kSidrReqUserData = kSidrReqPrivateData - cma::kCmaHdrSize;  // 180

}  // namespace

int Cma::Impl::set_qkey(Id* id, uint32_t qkey) {
  if (id->qkey) return (qkey && id->qkey != qkey) ? -EINVAL : 0;
  if (qkey) {
    id->qkey = qkey;
    return 0;
  }
  if (id->ps == RDMA_PS_UDP || id->ps == RDMA_PS_IB) {
    id->qkey = cma::kUdpQkey;
    return 0;
  }
  return -EOPNOTSUPP;  // RDMA_PS_IPOIB takes its Q_Key from an IPoIB broadcast group
}

int Cma::Impl::connect_ud(Id* id, const rdma_ucm_conn_param& p) {
  if (p.private_data_len > kSidrReqUserData) return -EINVAL;
  CmSidrReqParams r;
  r.path = id->path;
  r.service_id = cma::service_id(id->ps, cma::addr_port(id->dst));
  r.timeout_ms_log2 = cma::kCmResponseTimeout - 8;  // 1 << 12 ms, as cma_resolve_ib_udp
  r.max_cm_retries = cma::kMaxCmRetries;
  r.private_data_len = cma::write_request_private(*id, p.private_data, p.private_data_len,
                                                  r.private_data.data());
  const CmHandle h = start_active(id, p.qp_num & 0xFFFFFF);
  if (h == kNoCmHandle) return -ENOMEM;
  if (int rc = ib.send_sidr_req(h, r)) return fail_active(id, h, rc);
  return 0;
}

void Cma::Impl::on_sidr_req(uint64_t sid, CmHandle handle, const CmEvent& ev) {
  const CmSidrReqParams& req = ev.sidr_req;
  sockaddr_storage remote, local;
  if (req.private_data_len < cma::kCmaHdrSize ||
      !cma::read_cma_hdr(req.private_data.data(), &remote, &local)) {
    ib.destroy_id(handle);
    return;
  }
  Id* listener = find_listener(sid, local);
  if (!listener || listener->qp_type != cma::kQptUd || !listener->backlog) {
    ib.destroy_id(handle);  // a SIDR_REP with status REJECT
    return;
  }
  Id* id = new_conn_id(listener, handle, local, remote);
  id->path = req.path;
  id->path.dgid = ev.peer.gid;
  id->path.dmac = ev.peer.mac;
  id->path.sgid = id->sgid;
  id->path.sgid_index = id->sgid_index = ev.peer.sgid_index;

  cma::Event e = make_event(listener, cma::kConnectRequest, 0);
  e.new_id = id->handle;
  e.resp.id = id->handle;
  rdma_ucm_ud_param& u = e.resp.param.ud;
  std::memcpy(u.private_data, req.private_data.data() + cma::kCmaHdrSize, kSidrReqUserData);
  u.private_data_len = static_cast<uint8_t>(kSidrReqUserData);
  if (!queue_event(e)) {
    destroy(id);
    return;
  }
  listener->backlog--;
}

int Cma::Impl::accept_ud(Id* id, const rdma_ucm_conn_param* p) {
  if (id->active) return -EINVAL;
  CmSidrRepParams rep;  // cma_send_sidr_rep(IB_SIDR_SUCCESS)
  if (p) {
    uint8_t qp_type = 0;
    if (!host.qp_of_client(id->client, p->qp_num, &qp_type)) return -EPERM;
    if (qp_type != cma::kQptUd) return -EINVAL;
    if (p->private_data_len > kSidrRepPrivateData) return -EINVAL;
    id->qp_num = p->qp_num & 0xFFFFFF;
    rep.private_data_len = p->private_data_len;
    std::memcpy(rep.private_data.data(), p->private_data, p->private_data_len);
  }
  // The UCMA conn_param's qkey counts only for AF_IB ids (ucma_copy_conn_param).
  if (int r = set_qkey(id, 0)) return r;
  rep.status = SidrStatus::kSuccess;
  rep.qpn = id->qp_num;
  rep.qkey = id->qkey;
  int rc = ib.send_sidr_rep(id->cm, rep);
  return -(rc > 0 ? rc : -rc);
}

int Cma::Impl::reject_ud(Id* id, const uint8_t* data, uint8_t len) {
  if (id->active) return -EINVAL;
  if (len > kSidrRepPrivateData) return -EINVAL;
  CmSidrRepParams rep;
  rep.status = SidrStatus::kReject;
  rep.private_data_len = len;
  std::memcpy(rep.private_data.data(), data, len);
  int rc = ib.send_sidr_rep(id->cm, rep);
  return -(rc > 0 ? rc : -rc);
}

void Cma::Impl::on_sidr_rep(Id* id, const CmEvent& ev) {
  if (id->state != State::kConnect) return;
  cma::Event e = make_event(id, cma::kUnreachable, -ETIMEDOUT);
  rdma_ucm_ud_param& u = e.resp.param.ud;
  if (ev.type == CmEventType::kSidrRepReceived) {
    const CmSidrRepParams& rep = ev.sidr_rep;
    std::memcpy(u.private_data, rep.private_data.data(), kSidrRepPrivateData);
    u.private_data_len = static_cast<uint8_t>(kSidrRepPrivateData);
    if (rep.status != SidrStatus::kSuccess) {
      e.resp.status = static_cast<uint32_t>(rep.status);
    } else if (int r = set_qkey(id, rep.qkey)) {
      e.resp.event = cma::kAddrError;
      e.resp.status = static_cast<uint32_t>(r);
    } else {  // ib_init_ah_attr_from_path
      const CmPath& p = id->path;
      std::memcpy(u.ah_attr.grh.dgid, p.dgid.data(), 16);
      u.ah_attr.grh.flow_label = p.flow_label;
      u.ah_attr.grh.sgid_index = p.sgid_index;
      u.ah_attr.grh.hop_limit = p.hop_limit;
      u.ah_attr.grh.traffic_class = p.traffic_class;
      u.ah_attr.sl = p.sl;
      u.ah_attr.static_rate = p.rate;
      u.ah_attr.is_global = 1;
      u.ah_attr.port_num = 1;
      u.qp_num = rep.qpn;
      u.qkey = rep.qkey;
      e.resp.event = cma::kEstablished;
      e.resp.status = 0;
    }
  }
  queue_event(e);
}

}  // namespace burst::cm
