// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The query ops' handlers: QUERY_STATUS, QUERY_WORKERS, QUERY_COUNTERS, QUERY_QPS.
// Worker state is copied on each worker's own thread (a command), never read
// from the control thread while a worker writes it.
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/counters.h"
#include "core/wire/frame.h"
#include "daemon/burstd/cm_service.h"
#include "daemon/burstd/dispatch.h"
#include "daemon/burstd/log.h"
#include "daemon/ctl/ctl_codec.h"

#ifndef BURST_VERSION_STRING
#define BURST_VERSION_STRING "unknown"
#endif

namespace burst::burstd {
namespace {

const char* nak_name(size_t code) {
  static constexpr const char* kNames[] = {"psn_seq_error", "invalid_request",
                                           "remote_access_error", "remote_op_error",
                                           "invalid_rd_request"};
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == core::kNakCodes);
  return code < core::kNakCodes ? kNames[code] : "unknown";
}

using Counters = std::vector<std::pair<std::string, uint64_t>>;

// One counter of a struct S, by name.
template <class S>
struct Field {
  const char* name;
  uint64_t S::*value;
};

template <class S, size_t N>
void add_fields(Counters* out, const S& s, const Field<S> (&fields)[N]) {
  for (const Field<S>& f : fields) out->emplace_back(f.name, s.*f.value);
}

// An array of counters indexed by a reason, named prefix + name(i), from `first`.
template <class A, class NameFn>
void add_array(Counters* out, const char* prefix, const A& values, size_t first, NameFn name) {
  for (size_t i = first; i < values.size(); ++i) {
    out->emplace_back(std::string(prefix) + name(i), values[i]);
  }
}

using E = core::EngineCounters;
constexpr Field<E> kEngineTraffic[] = {{"rx_packets", &E::rx_packets},
                                       {"rx_bytes", &E::rx_bytes},
                                       {"tx_packets", &E::tx_packets},
                                       {"tx_bytes", &E::tx_bytes}};
constexpr Field<PlaneCounters> kPlane[] = {{"shm.doorbells", &PlaneCounters::doorbells},
                                           {"shm.send_wqes", &PlaneCounters::send_wqes},
                                           {"shm.recv_wqes", &PlaneCounters::recv_wqes},
                                           {"shm.bad_wqes", &PlaneCounters::bad_wqes},
                                           {"shm.ring_faults", &PlaneCounters::ring_faults},
                                           {"shm.cqes", &PlaneCounters::cqes},
                                           {"shm.sweeps", &PlaneCounters::sweeps},
                                           {"shm.sweep_visits", &PlaneCounters::sweep_visits},
                                           {"shm.sweep_finds", &PlaneCounters::sweep_finds}};
constexpr Field<shm::DoorbellStats> kDoorbell[] = {
    {"shm.doorbell_reclaimed", &shm::DoorbellStats::reclaimed},
    {"shm.doorbell_corrupt", &shm::DoorbellStats::corrupt},
    {"shm.doorbell_invalid", &shm::DoorbellStats::invalid},
    {"shm.doorbell_head_repairs", &shm::DoorbellStats::head_repairs}};
constexpr Field<E> kEngineResponder[] = {{"mem_space_write_errors", &E::mem_space_write_errors},
                                         {"mem_space_read_errors", &E::mem_space_read_errors},
                                         {"mem_space_read_ahead", &E::mem_space_read_ahead},
                                         {"mem_space_atomic_errors", &E::mem_space_atomic_errors},
                                         {"rx_ecn_ce", &E::rx_ecn_ce},
                                         {"rx_cnp", &E::rx_cnp},
                                         {"rx_duplicate", &E::rx_duplicate},
                                         {"rx_out_of_sequence", &E::rx_out_of_sequence},
                                         {"acks_sent", &E::acks_sent},
                                         {"rnr_naks_sent", &E::rnr_naks_sent}};
constexpr Field<E> kEngineRequester[] = {{"read_responses_sent", &E::read_responses_sent},
                                         {"atomic_acks_sent", &E::atomic_acks_sent},
                                         {"read_replays", &E::read_replays},
                                         {"atomic_replays", &E::atomic_replays},
                                         {"ud_received", &E::ud_received},
                                         {"acks_received", &E::acks_received},
                                         {"rnr_naks_received", &E::rnr_naks_received}};
constexpr Field<E> kEngineTail[] = {{"retransmit_events", &E::retransmit_events},
                                    {"retransmitted_packets", &E::retransmitted_packets},
                                    {"timeouts", &E::timeouts},
                                    {"read_out_of_sequence", &E::read_out_of_sequence},
                                    {"ud_sent", &E::ud_sent},
                                    {"cq_overflows", &E::cq_overflows},
                                    {"tx_buffer_too_small", &E::tx_buffer_too_small}};
using L = core::WorkerCounters;
constexpr Field<L> kLoop[] = {{"worker.loops", &L::loops},
                              {"worker.rx_bursts", &L::rx_bursts},
                              {"worker.tx_bursts", &L::tx_bursts},
                              {"worker.tx_no_buffers", &L::tx_no_buffers},
                              {"worker.tx_backlogged", &L::tx_backlogged},
                              {"worker.handoff_out", &L::handoff_out},
                              {"worker.handoff_in", &L::handoff_in},
                              {"worker.handoff_full", &L::handoff_full},
                              {"worker.looped", &L::looped},
                              {"worker.looped_mcast", &L::looped_mcast},
                              {"worker.loop_full", &L::loop_full}};
constexpr Field<WorkerStats> kWorker[] = {{"worker.idle_sleeps", &WorkerStats::idle_sleeps},
                                          {"worker.commands", &WorkerStats::commands}};

// A snapshot of worker w's statistics, copied on its own thread.
int worker_stats(Call& c, uint32_t w, WorkerStats* st) {
  return c.d.device().worker(w).run([st](WorkerBase& wk) { wk.stats(st); },
                                    c.d.config().command_timeout_ms);
}

}  // namespace

void append_counters(const WorkerStats& st, Counters* out) {
  const core::EngineCounters& e = st.engine;
  add_fields(out, e, kEngineTraffic);
  add_array(out, "rx_parse_drop.", e.rx_parse_drop, 1, [](size_t i) {  // 0 is RxDrop::kNone
    return wire::rx_drop_name(static_cast<wire::RxDrop>(i));
  });
  add_array(out, "rx_drop.", e.rx_drop, 0,
            [](size_t i) { return core::drop_name(static_cast<core::Drop>(i)); });
  add_fields(out, st.plane, kPlane);
  add_fields(out, st.doorbell, kDoorbell);
  add_fields(out, e, kEngineResponder);
  add_array(out, "naks_sent.", e.naks_sent, 0, nak_name);
  add_fields(out, e, kEngineRequester);
  add_array(out, "naks_received.", e.naks_received, 0, nak_name);
  add_fields(out, e, kEngineTail);
  add_fields(out, st.loop, kLoop);
  add_fields(out, st, kWorker);
  for (const auto& [name, v] : st.backend) out->emplace_back(name, v);
}

int op_query_status(Call& c) {
  auto* r = c.response<burst_ctl_status_resp>();
  Device& device = c.d.device();
  const DeviceInfo& info = device.info();
  r->pid = static_cast<uint32_t>(getpid());
  r->workers = device.workers();
  r->uptime_ms = c.d.uptime_ms();
  r->backend = info.backend;
  r->xdp_mode = info.xdp_mode;
  r->zero_copy = info.zero_copy ? 1 : 0;
  r->memory_mode = info.memory_mode;
  r->port_state = device.port_state();
  r->queues = info.queues;
  r->xdp_prog_id = info.xdp_prog_id;
  r->clients = c.d.sessions();
  r->pds = c.res.pd_count();
  r->cqs = c.res.cq_count();
  r->qps = c.res.qp_count();
  ctl::set_str(r->ibdev, info.ibdev);
  ctl::set_str(r->netdev, info.netdev);
  ctl::set_str(r->version, BURST_VERSION_STRING);
  ctl::set_str(r->socket_path, c.d.config().socket_path);
  return 0;
}

int op_query_workers(Call& c) {
  Device& device = c.d.device();
  const uint32_t n = std::min<uint32_t>(device.workers(), BURST_CTL_MAX_WORKERS);
  auto* r = c.response<burst_ctl_workers_resp>(ctl::list_length(BURST_CTL_OP_QUERY_WORKERS, n));
  r->count = n;
  for (uint32_t w = 0; w < n; ++w) {
    WorkerStats st;
    if (int e = worker_stats(c, w, &st); e != 0) return e;
    burst_ctl_worker_info& e = r->entries[w];
    e.index = w;
    const std::vector<uint32_t>& q = device.info().worker_queues[w];
    e.nqueues = static_cast<uint32_t>(q.size());
    for (size_t i = 0; i < q.size() && i < BURST_CTL_WORKER_QUEUES; ++i) e.queue_ids[i] = q[i];
    e.qps = c.res.qps_on(w);
    e.loops = st.loop.loops;
    e.idle_sleeps = st.idle_sleeps;
    e.commands = st.commands;
    e.rx_packets = st.engine.rx_packets;
    e.rx_bytes = st.engine.rx_bytes;
    e.tx_packets = st.engine.tx_packets;
    e.tx_bytes = st.engine.tx_bytes;
    e.rx_bursts = st.loop.rx_bursts;
    e.tx_bursts = st.loop.tx_bursts;
    e.tx_no_buffers = st.loop.tx_no_buffers;
    e.tx_backlogged = st.loop.tx_backlogged;
    e.handoff_out = st.loop.handoff_out;
    e.handoff_in = st.loop.handoff_in;
    e.handoff_full = st.loop.handoff_full;
  }
  return 0;
}

int op_query_counters(Call& c) {
  const auto req = c.request<burst_ctl_query_counters_req>();
  Device& device = c.d.device();
  const bool all = req.worker == BURST_CTL_ALL_WORKERS;
  if (!all && req.worker >= device.workers()) return EINVAL;
  // Per worker: the names come out in the same order, so a sum adds by index.
  Counters sum;
  for (uint32_t w = all ? 0 : req.worker; w < (all ? device.workers() : req.worker + 1); ++w) {
    WorkerStats st;
    if (int e = worker_stats(c, w, &st); e != 0) return e;
    Counters one;
    append_counters(st, &one);
    if (sum.empty()) {
      sum = std::move(one);
    } else {
      for (size_t i = 0; i < sum.size() && i < one.size(); ++i) sum[i].second += one[i].second;
    }
  }
  if (all) {
    for (auto& pc : device.port_counters()) sum.push_back(std::move(pc));
    if (c.d.cm() != nullptr) c.d.cm()->counters(&sum);  // cm.*, cma.*
    c.res.mr_counters(&sum);                             // mr.*: memory modes
  }
  const uint32_t n = static_cast<uint32_t>(std::min<size_t>(sum.size(), BURST_CTL_MAX_COUNTERS));
  auto* r = c.response<burst_ctl_counters_resp>(ctl::list_length(BURST_CTL_OP_QUERY_COUNTERS, n));
  r->worker = req.worker;
  r->count = n;
  for (uint32_t i = 0; i < n; ++i) {
    ctl::set_str(r->entries[i].name, sum[i].first);
    r->entries[i].value = sum[i].second;
  }
  return 0;
}

int op_query_qps(Call& c) {
  const auto req = c.request<burst_ctl_query_qps_req>();
  const uint32_t max =
      req.max == 0 || req.max > BURST_CTL_QPS_PER_MSG ? BURST_CTL_QPS_PER_MSG : req.max;
  std::vector<burst_ctl_qp_info> qps;
  uint32_t total = 0, next = 0;
  // Other users' QPs (and their pids) only to root and the admin group.
  c.res.list_qps(req.start_qpn, max, &qps, &total, &next,
                 c.d.privileged(c.s) ? -1 : static_cast<int64_t>(c.s.uid));
  const uint32_t n = static_cast<uint32_t>(qps.size());
  auto* r = c.response<burst_ctl_qps_resp>(ctl::list_length(BURST_CTL_OP_QUERY_QPS, n));
  r->total = total;
  r->count = n;
  r->next_qpn = next;
  if (n > 0) std::memcpy(r->entries, qps.data(), n * sizeof(burst_ctl_qp_info));
  return 0;
}

}  // namespace burst::burstd
