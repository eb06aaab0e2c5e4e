// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Wire <-> core QP attributes, capabilities and addresses (qp_attr_wire.h).
#include "daemon/burstd/qp_attr_wire.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <tuple>
#include <utility>

#include "core/qp.h"
#include "daemon/burstd/resources.h"

namespace burst::burstd {
namespace {

constexpr uint32_t kKnownMask = (core::kQpDestQpn << 1) - 1;  // IBV_QP_STATE .. IBV_QP_DEST_QPN
constexpr uint32_t kMaxQpState = static_cast<uint32_t>(core::QpState::kErr);

// A (core member, wire member) pair of fields that convert 1:1; a table is a
// tuple of them.
template <class C, class W, class T>
constexpr std::pair<T C::*, T W::*> field(T C::*c, T W::*w) {
  return {c, w};
}

constexpr auto kCapFields =
    std::make_tuple(field(&core::QpCap::max_send_wr, &burst_ctl_qp_cap::max_send_wr),
                    field(&core::QpCap::max_recv_wr, &burst_ctl_qp_cap::max_recv_wr),
                    field(&core::QpCap::max_send_sge, &burst_ctl_qp_cap::max_send_sge),
                    field(&core::QpCap::max_recv_sge, &burst_ctl_qp_cap::max_recv_sge),
                    field(&core::QpCap::max_inline_data, &burst_ctl_qp_cap::max_inline_data));

constexpr auto kAhFields =
    std::make_tuple(field(&core::Address::sgid_index, &burst_ctl_ah::sgid_index),
                    field(&core::Address::hop_limit, &burst_ctl_ah::hop_limit),
                    field(&core::Address::traffic_class, &burst_ctl_ah::traffic_class),
                    field(&core::Address::flow_label, &burst_ctl_ah::flow_label),
                    field(&core::Address::vlan_id, &burst_ctl_ah::vlan_id));

constexpr auto kAttrFields = std::make_tuple(
    field(&core::QpAttr::qkey, &burst_ctl_qp_attr::qkey),
    field(&core::QpAttr::rq_psn, &burst_ctl_qp_attr::rq_psn),
    field(&core::QpAttr::sq_psn, &burst_ctl_qp_attr::sq_psn),
    field(&core::QpAttr::dest_qp_num, &burst_ctl_qp_attr::dest_qp_num),
    field(&core::QpAttr::qp_access_flags, &burst_ctl_qp_attr::qp_access_flags),
    field(&core::QpAttr::pkey_index, &burst_ctl_qp_attr::pkey_index),
    field(&core::QpAttr::port_num, &burst_ctl_qp_attr::port_num),
    field(&core::QpAttr::timeout, &burst_ctl_qp_attr::timeout),
    field(&core::QpAttr::retry_cnt, &burst_ctl_qp_attr::retry_cnt),
    field(&core::QpAttr::rnr_retry, &burst_ctl_qp_attr::rnr_retry),
    field(&core::QpAttr::min_rnr_timer, &burst_ctl_qp_attr::min_rnr_timer),
    field(&core::QpAttr::max_rd_atomic, &burst_ctl_qp_attr::max_rd_atomic),
    field(&core::QpAttr::max_dest_rd_atomic, &burst_ctl_qp_attr::max_dest_rd_atomic),
    field(&core::QpAttr::sq_draining, &burst_ctl_qp_attr::sq_draining));

template <class Table, class C, class W>
void to_wire(const Table& t, const C& c, W* w) {
  std::apply([&](const auto&... f) { ((w->*f.second = c.*f.first), ...); }, t);
}
template <class Table, class C, class W>
void from_wire(const Table& t, const W& w, C* c) {
  std::apply([&](const auto&... f) { ((c->*f.first = w.*f.second), ...); }, t);
}

burst_ctl_ah ah_to_wire(const core::Address& a) {
  burst_ctl_ah w{};
  std::memcpy(w.dgid, a.dgid.data(), 16);
  std::memcpy(w.dmac, a.dmac.data(), 6);
  to_wire(kAhFields, a, &w);
  return w;
}

core::Address ah_from_wire(const burst_ctl_ah& w) {
  core::Address a;
  std::memcpy(a.dgid.data(), w.dgid, 16);
  std::memcpy(a.dmac.data(), w.dmac, 6);
  from_wire(kAhFields, w, &a);
  return a;
}

}  // namespace

bool zero_mac(const std::array<uint8_t, 6>& m) {
  return std::all_of(m.begin(), m.end(), [](uint8_t b) { return b == 0; });
}

burst_ctl_qp_cap cap_to_wire(const core::QpCap& c) {
  burst_ctl_qp_cap w{};
  to_wire(kCapFields, c, &w);
  return w;
}

core::QpCap cap_from_wire(const burst_ctl_qp_cap& w) {
  core::QpCap c;
  from_wire(kCapFields, w, &c);
  return c;
}

int Resources::attr_from_wire(const burst_ctl_qp_attr& in, uint32_t mask, core::QpAttr* out) {
  if (mask & ~kKnownMask) return EOPNOTSUPP;
  if ((mask & core::kQpState) && in.qp_state > kMaxQpState) return EINVAL;
  if ((mask & core::kQpCurState) && in.cur_qp_state > kMaxQpState) return EINVAL;
  if ((mask & core::kQpPathMtu) && (in.path_mtu < 1 || in.path_mtu > 5)) return EINVAL;
  core::QpAttr a;
  if (mask & core::kQpState) a.qp_state = static_cast<core::QpState>(in.qp_state);
  if (mask & core::kQpCurState) a.cur_qp_state = static_cast<core::QpState>(in.cur_qp_state);
  if (mask & core::kQpPathMtu) a.path_mtu = static_cast<core::Mtu>(in.path_mtu);
  from_wire(kAttrFields, in, &a);
  a.ah = ah_from_wire(in.ah);
  *out = a;
  return 0;
}

burst_ctl_qp_attr Resources::attr_to_wire(const core::QpAttr& in) {
  burst_ctl_qp_attr w{};
  w.qp_state = static_cast<uint8_t>(in.qp_state);
  w.cur_qp_state = static_cast<uint8_t>(in.cur_qp_state);
  w.path_mtu = static_cast<uint8_t>(in.path_mtu);
  to_wire(kAttrFields, in, &w);
  w.ah = ah_to_wire(in.ah);
  return w;
}

}  // namespace burst::burstd
