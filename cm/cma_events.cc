/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The channels' event queues (ucma.c's event_list): queueing with a limit,
// GET_EVENT (never blocks: EAGAIN when empty), the events of a destroyed id,
// and CmaHost::event_pending kept true exactly while a queue is non-empty.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "cm/cma_impl.h"

namespace burst::cm {

cma::Event Cma::Impl::make_event(Id* id, uint32_t type, int32_t status) {
  cma::Event ev;
  ev.id = id->handle;
  ev.resp.uid = id->uid;
  ev.resp.id = id->handle;
  ev.resp.event = type;
  ev.resp.status = static_cast<uint32_t>(status);
  return ev;
}

bool Cma::Impl::queue(Id* id, uint32_t type, int32_t status, uint32_t new_id) {
  cma::Event ev = make_event(id, type, status);
  ev.new_id = new_id;
  return queue_event(ev);
}

bool Cma::Impl::queue_event(const cma::Event& ev) {
  auto idit = ids.find(ev.id);
  if (idit == ids.end()) return false;
  Id* id = idit->second.get();
  // ucma_event_handler: events of an id the application has no context for
  // yet (a new connection before ACCEPT) are not reported.
  if (ev.resp.event != cma::kConnectRequest && (!id->uid || !id->reported)) return false;
  auto chit = channels.find(id->channel);
  if (chit == channels.end()) return false;
  auto& q = chit->second.events;
  if (q.size() >= cma::kChannelQueueLimit) {
    counters.events_dropped_queue_full++;
    return false;
  }
  q.push_back(ev);
  counters.events_queued++;
  if (q.size() == 1) host.event_pending(id->channel, true);
  return true;
}

void Cma::Impl::drop_events(Id* id) {
  auto chit = channels.find(id->channel);
  if (chit == channels.end()) return;
  auto& q = chit->second.events;
  bool had = !q.empty();
  std::vector<uint32_t> new_ids;
  for (const cma::Event& ev : q) {
    if (ev.id == id->handle && ev.resp.event == cma::kConnectRequest) new_ids.push_back(ev.new_id);
  }
  std::erase_if(q, [&](const cma::Event& ev) { return ev.id == id->handle; });
  if (had && q.empty()) host.event_pending(id->channel, false);
  for (uint32_t h : new_ids) {  // their requests are rejected (ib destroy_id)
    auto it = ids.find(h);
    if (it != ids.end()) destroy(it->second.get());
  }
}

void Cma::Impl::move_events(Id* id, ChannelId to) {
  auto& from_q = channels.at(id->channel).events;
  auto& to_q = channels.at(to).events;
  bool from_had = !from_q.empty(), to_had = !to_q.empty();
  for (const cma::Event& ev : from_q) {
    if (ev.id != id->handle) continue;
    to_q.push_back(ev);
    if (ev.resp.event == cma::kConnectRequest) {
      auto it = ids.find(ev.new_id);
      if (it != ids.end()) it->second->channel = to;
    }
  }
  std::erase_if(from_q, [&](const cma::Event& ev) { return ev.id == id->handle; });
  if (from_had && from_q.empty()) host.event_pending(id->channel, false);
  if (!to_had && !to_q.empty()) host.event_pending(to, true);
  id->channel = to;
}

int Cma::Impl::cmd_get_event(ChannelId ch, const void*, size_t, void* out, size_t out_len) {
  auto& q = channels.at(ch).events;
  if (q.empty()) return -EAGAIN;
  cma::Event ev = q.front();
  q.pop_front();
  if (q.empty()) host.event_pending(ch, false);
  auto it = ids.find(ev.id);
  if (it != ids.end()) {
    it->second->events_reported++;
    if (ev.resp.event == cma::kConnectRequest) it->second->backlog++;
  }
  if (ev.mc) {
    auto mc = mcasts.find(ev.mc);
    if (mc != mcasts.end()) mc->second.events_reported++;
  }
  if (ev.resp.event == cma::kConnectRequest) {
    auto n = ids.find(ev.new_id);
    if (n != ids.end()) n->second->reported = true;
  }
  size_t len = std::min(out_len, sizeof(ev.resp));
  std::memcpy(out, &ev.resp, len);
  return static_cast<int>(len);
}

}  // namespace burst::cm
