/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Cma: the UCMA command table (the role of ucma.c's ucma_cmd_table and
// ucma_write), channels, and the IbCm events routed to their ids.
#include <cerrno>
#include <cstring>
#include <random>
#include <vector>

#include "cm/cma_impl.h"

namespace burst::cm {

// Starting PSNs and ephemeral ports are random, as the kernel's (an off-path
// sender cannot guess them): seeded once from the system's entropy and the clock.
Cma::Impl::Impl(CmaHost& h, IbCm& c)
    : host(h), ib(c), rng((uint64_t{std::random_device{}()} << 32) ^ h.now_ns()) {}

int Cma::Impl::dispatch(ChannelId channel, uint32_t cmd, const void* in, size_t in_len, void* out,
                        size_t out_len) {
  // One row per UCMA command: its handler (null: ENOSYS, as the kernel's empty
  // rows), the request size it needs and the response size it needs at least.
  struct CommandRow {
    int (Impl::*handler)(ChannelId, const void*, size_t, void*, size_t);
    size_t in_size;
    size_t out_size;
  };

  constexpr size_t kEventRespMin =
      sizeof(rdma_ucm_event_resp) - sizeof(uint32_t) - sizeof(rdma_ucm_ece);

  static const CommandRow kCommands[] = {
      /* CREATE_ID */ {&Impl::cmd_create_id, sizeof(rdma_ucm_create_id),
                       sizeof(rdma_ucm_create_id_resp)},
      /* DESTROY_ID */ {&Impl::cmd_destroy_id, sizeof(rdma_ucm_destroy_id),
                        sizeof(rdma_ucm_destroy_id_resp)},
      /* BIND_IP */ {&Impl::cmd_bind_ip, sizeof(rdma_ucm_bind_ip), 0},
      /* RESOLVE_IP */ {&Impl::cmd_resolve_ip, sizeof(rdma_ucm_resolve_ip), 0},
      /* RESOLVE_ROUTE */ {&Impl::cmd_resolve_route, sizeof(rdma_ucm_resolve_route), 0},
      /* QUERY_ROUTE */ {&Impl::cmd_query_route, sizeof(rdma_ucm_query),
                         sizeof(rdma_ucm_query_route_resp)},
      /* CONNECT */ {&Impl::cmd_connect, sizeof(rdma_ucm_connect) - sizeof(rdma_ucm_ece), 0},
      /* LISTEN */ {&Impl::cmd_listen, sizeof(rdma_ucm_listen), 0},
      /* ACCEPT */ {&Impl::cmd_accept, sizeof(rdma_ucm_accept) - sizeof(rdma_ucm_ece), 0},
      /* REJECT */ {&Impl::cmd_reject, sizeof(rdma_ucm_reject), 0},
      /* DISCONNECT */ {&Impl::cmd_disconnect, sizeof(rdma_ucm_disconnect), 0},
      /* INIT_QP_ATTR */ {&Impl::cmd_init_qp_attr, sizeof(rdma_ucm_init_qp_attr),
                          sizeof(ib_uverbs_qp_attr)},
      /* GET_EVENT */ {&Impl::cmd_get_event, sizeof(rdma_ucm_get_event), kEventRespMin},
      /* GET_OPTION */ {nullptr, 0, 0},
      /* SET_OPTION */ {&Impl::cmd_set_option, sizeof(rdma_ucm_set_option), 0},
      /* NOTIFY */ {&Impl::cmd_notify, sizeof(rdma_ucm_notify), 0},
      /* JOIN_IP_MCAST */ {&Impl::cmd_join_ip_mcast, sizeof(rdma_ucm_join_ip_mcast),
                           sizeof(rdma_ucm_create_id_resp)},
      /* LEAVE_MCAST */ {&Impl::cmd_leave_mcast, sizeof(rdma_ucm_destroy_id),
                         sizeof(rdma_ucm_destroy_id_resp)},
      /* MIGRATE_ID */ {&Impl::cmd_migrate_id, sizeof(rdma_ucm_migrate_id),
                        sizeof(rdma_ucm_migrate_resp)},
      /* QUERY */ {&Impl::cmd_query, sizeof(rdma_ucm_query), 0},
      /* BIND */ {&Impl::cmd_bind, sizeof(rdma_ucm_bind), 0},
      /* RESOLVE_ADDR */ {&Impl::cmd_resolve_addr, sizeof(rdma_ucm_resolve_addr), 0},
      /* JOIN_MCAST */ {&Impl::cmd_join_mcast, sizeof(rdma_ucm_join_mcast),
                        sizeof(rdma_ucm_create_id_resp)},
  };
  static_assert(sizeof(kCommands) / sizeof(kCommands[0]) == RDMA_USER_CM_CMD_JOIN_MCAST + 1);
  if (channels.find(channel) == channels.end()) return -EBADF;
  if (cmd >= sizeof(kCommands) / sizeof(kCommands[0]) || !kCommands[cmd].handler) return -ENOSYS;
  if (in_len < kCommands[cmd].in_size || (in_len && !in)) return -EINVAL;
  if (out_len < kCommands[cmd].out_size || (out_len && !out)) return -ENOSPC;
  return (this->*kCommands[cmd].handler)(channel, in, in_len, out, out_len);
}

Cma::Cma(CmaHost& host, IbCm& ib_cm) : impl_(new Impl(host, ib_cm)) {}

Cma::~Cma() {
  std::vector<ChannelId> channels;
  for (auto& [ch, c] : impl_->channels) channels.push_back(ch);
  for (ChannelId ch : channels) close_channel(ch);
  delete impl_;
}

void Cma::open_channel(ChannelId channel, ClientId client) {
  auto& c = impl_->channels[channel];
  c.client = client;
}

void Cma::close_channel(ChannelId channel) {
  auto it = impl_->channels.find(channel);
  if (it == impl_->channels.end()) return;
  // Listeners first: their queued connection requests go with them (REJ).
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<uint32_t> handles;
    for (auto& [h, id] : impl_->ids) {
      if (id->channel != channel || !id->reported) continue;
      if ((pass == 0) == (id->state == cma::State::kListen)) handles.push_back(h);
    }
    for (uint32_t h : handles) {
      auto found = impl_->ids.find(h);
      if (found != impl_->ids.end()) impl_->destroy(found->second.get());
    }
  }
  impl_->channels.erase(channel);
}

int Cma::command(ChannelId channel, uint32_t cmd, const void* in, size_t in_len, void* out,
                 size_t out_len) {
  Impl& m = *impl_;
  int ret = m.dispatch(channel, cmd, in, in_len, out, out_len);
  if (ret < 0 && !(cmd == RDMA_USER_CM_CMD_GET_EVENT && ret == -EAGAIN)) m.counters.commands_refused++;
  return ret;
}

void Cma::cm_event(CmHandle handle, const CmEvent& event) {
  Impl& m = *impl_;
  if (event.type == CmEventType::kReqReceived || event.type == CmEventType::kSidrReqReceived) {
    uint64_t sid = 0;
    bool found = false;
    for (auto& [service, l] : m.listens) {
      if (l.first == event.listen_handle) {
        sid = service;
        found = true;
      }
    }
    if (!found) {  // a listen we no longer have: REJ (or SIDR_REP REJECT)
      m.ib.destroy_id(handle);
      return;
    }
    if (event.type == CmEventType::kReqReceived) m.on_req(sid, handle, event);
    else m.on_sidr_req(sid, handle, event);
    return;
  }
  auto it = m.by_cm.find(handle);
  if (it == m.by_cm.end()) return;  // an id we already destroyed
  auto id = m.ids.find(it->second);
  if (id == m.ids.end()) return;
  if (event.type == CmEventType::kSidrRepReceived || event.type == CmEventType::kSidrReqError) {
    m.on_sidr_rep(id->second.get(), event);
    return;
  }
  m.on_cm_event(id->second.get(), event);
}

uint32_t Cma::hold_backlog(uint32_t listen_id) {
  auto it = impl_->ids.find(listen_id);
  if (it == impl_->ids.end()) return 0;
  if (it->second->backlog > 0) it->second->backlog--;
  return it->second->backlog;
}

void Cma::release_backlog(uint32_t listen_id) {
  auto it = impl_->ids.find(listen_id);
  if (it != impl_->ids.end()) it->second->backlog++;
}

const CmaCounters& Cma::counters() const { return impl_->counters; }

size_t Cma::id_count() const { return impl_->ids.size(); }

}  // namespace burst::cm
