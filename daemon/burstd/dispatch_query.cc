// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The query ops: QUERY_STATUS, QUERY_WORKERS, QUERY_COUNTERS, QUERY_QPS.
// Worker state is copied on each worker's own thread (a command), never read
// from the control thread while a worker writes it.
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "core/counters.h"
#include "core/wire/frame.h"
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

void add(Counters* out, std::string name, uint64_t v) { out->emplace_back(std::move(name), v); }

}  // namespace

void append_counters(const WorkerStats& st, Counters* out) {
  const core::EngineCounters& e = st.engine;
  add(out, "rx_packets", e.rx_packets);
  add(out, "rx_bytes", e.rx_bytes);
  add(out, "tx_packets", e.tx_packets);
  add(out, "tx_bytes", e.tx_bytes);
  for (size_t i = 1; i < e.rx_parse_drop.size(); ++i) {  // 0 is RxDrop::kNone
    add(out, std::string("rx_parse_drop.") + wire::rx_drop_name(static_cast<wire::RxDrop>(i)),
        e.rx_parse_drop[i]);
  }
  for (size_t i = 0; i < e.rx_drop.size(); ++i) {
    add(out, std::string("rx_drop.") + core::drop_name(static_cast<core::Drop>(i)), e.rx_drop[i]);
  }
  const PlaneCounters& p = st.plane;
  add(out, "shm.doorbells", p.doorbells);
  add(out, "shm.send_wqes", p.send_wqes);
  add(out, "shm.recv_wqes", p.recv_wqes);
  add(out, "shm.bad_wqes", p.bad_wqes);
  add(out, "shm.ring_faults", p.ring_faults);
  add(out, "shm.cqes", p.cqes);
  add(out, "shm.sweeps", p.sweeps);
  add(out, "shm.sweep_finds", p.sweep_finds);
  add(out, "shm.doorbell_reclaimed", st.doorbell.reclaimed);
  add(out, "shm.doorbell_corrupt", st.doorbell.corrupt);
  add(out, "shm.doorbell_invalid", st.doorbell.invalid);
  add(out, "shm.doorbell_head_repairs", st.doorbell.head_repairs);
  add(out, "mem_space_write_errors", e.mem_space_write_errors);
  add(out, "mem_space_read_errors", e.mem_space_read_errors);
  add(out, "mem_space_read_ahead", e.mem_space_read_ahead);
  add(out, "mem_space_atomic_errors", e.mem_space_atomic_errors);
  add(out, "rx_ecn_ce", e.rx_ecn_ce);
  add(out, "rx_cnp", e.rx_cnp);
  add(out, "rx_duplicate", e.rx_duplicate);
  add(out, "rx_out_of_sequence", e.rx_out_of_sequence);
  add(out, "acks_sent", e.acks_sent);
  add(out, "rnr_naks_sent", e.rnr_naks_sent);
  for (size_t i = 0; i < core::kNakCodes; ++i) {
    add(out, std::string("naks_sent.") + nak_name(i), e.naks_sent[i]);
  }
  add(out, "read_responses_sent", e.read_responses_sent);
  add(out, "atomic_acks_sent", e.atomic_acks_sent);
  add(out, "read_replays", e.read_replays);
  add(out, "atomic_replays", e.atomic_replays);
  add(out, "ud_received", e.ud_received);
  add(out, "acks_received", e.acks_received);
  add(out, "rnr_naks_received", e.rnr_naks_received);
  for (size_t i = 0; i < core::kNakCodes; ++i) {
    add(out, std::string("naks_received.") + nak_name(i), e.naks_received[i]);
  }
  add(out, "retransmit_events", e.retransmit_events);
  add(out, "retransmitted_packets", e.retransmitted_packets);
  add(out, "timeouts", e.timeouts);
  add(out, "read_out_of_sequence", e.read_out_of_sequence);
  add(out, "ud_sent", e.ud_sent);
  add(out, "cq_overflows", e.cq_overflows);
  add(out, "tx_buffer_too_small", e.tx_buffer_too_small);
  const core::WorkerCounters& l = st.loop;
  add(out, "worker.loops", l.loops);
  add(out, "worker.rx_bursts", l.rx_bursts);
  add(out, "worker.tx_bursts", l.tx_bursts);
  add(out, "worker.tx_no_buffers", l.tx_no_buffers);
  add(out, "worker.tx_backlogged", l.tx_backlogged);
  add(out, "worker.handoff_out", l.handoff_out);
  add(out, "worker.handoff_in", l.handoff_in);
  add(out, "worker.handoff_full", l.handoff_full);
  add(out, "worker.idle_sleeps", st.idle_sleeps);
  add(out, "worker.commands", st.commands);
  for (const auto& [name, v] : st.backend) add(out, name, v);
}

void Dispatcher::query_status(const burst_ctl_hdr& h, std::vector<uint8_t>* out) {
  auto* r = start_response<burst_ctl_status_resp>(out, h, sizeof(burst_ctl_status_resp));
  const DeviceInfo& info = device_.info();
  r->pid = static_cast<uint32_t>(getpid());
  r->workers = device_.workers();
  r->uptime_ms = (monotonic_ns() - start_ns_) / 1'000'000u;
  r->backend = info.backend;
  r->xdp_mode = info.xdp_mode;
  r->zero_copy = info.zero_copy ? 1 : 0;
  r->memory_mode = info.memory_mode;
  r->port_state = device_.port_state();
  r->queues = info.queues;
  r->xdp_prog_id = info.xdp_prog_id;
  r->clients = sessions_;
  r->pds = res_.pd_count();
  r->cqs = res_.cq_count();
  r->qps = res_.qp_count();
  ctl::set_str(r->ibdev, info.ibdev);
  ctl::set_str(r->netdev, info.netdev);
  ctl::set_str(r->version, BURST_VERSION_STRING);
  ctl::set_str(r->socket_path, config_.socket_path);
}

void Dispatcher::query_workers(const burst_ctl_hdr& h, std::vector<uint8_t>* out) {
  const uint32_t n = std::min<uint32_t>(device_.workers(), BURST_CTL_MAX_WORKERS);
  auto* r = start_response<burst_ctl_workers_resp>(out, h,
                                                   ctl::list_length(BURST_CTL_OP_QUERY_WORKERS, n));
  r->count = n;
  for (uint32_t w = 0; w < n; ++w) {
    WorkerStats st;
    if (int e = device_.worker(w).run([&](WorkerBase& wk) { wk.stats(&st); },
                                      config_.command_timeout_ms);
        e != 0) {
      error_response(out, h, e);
      return;
    }
    r = reinterpret_cast<burst_ctl_workers_resp*>(out->data());
    burst_ctl_worker_info& e = r->entries[w];
    e.index = w;
    const std::vector<uint32_t>& q = device_.info().worker_queues[w];
    e.nqueues = static_cast<uint32_t>(q.size());
    for (size_t i = 0; i < q.size() && i < BURST_CTL_WORKER_QUEUES; ++i) e.queue_ids[i] = q[i];
    e.qps = res_.qps_on(w);
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
}

void Dispatcher::query_counters(const burst_ctl_hdr& h, const uint8_t* msg,
                                std::vector<uint8_t>* out) {
  burst_ctl_query_counters_req req;
  std::memcpy(&req, msg, sizeof(req));
  const bool all = req.worker == BURST_CTL_ALL_WORKERS;
  if (!all && req.worker >= device_.workers()) {
    error_response(out, h, EINVAL);
    return;
  }
  // Per worker: the names come out in the same order, so a sum adds by index.
  Counters sum;
  for (uint32_t w = all ? 0 : req.worker; w < (all ? device_.workers() : req.worker + 1); ++w) {
    WorkerStats st;
    if (int e = device_.worker(w).run([&](WorkerBase& wk) { wk.stats(&st); },
                                      config_.command_timeout_ms);
        e != 0) {
      error_response(out, h, e);
      return;
    }
    Counters one;
    append_counters(st, &one);
    if (sum.empty()) {
      sum = std::move(one);
    } else {
      for (size_t i = 0; i < sum.size() && i < one.size(); ++i) sum[i].second += one[i].second;
    }
  }
  if (all) {
    for (auto& c : device_.port_counters()) sum.push_back(std::move(c));
  }
  const uint32_t n = static_cast<uint32_t>(std::min<size_t>(sum.size(), BURST_CTL_MAX_COUNTERS));
  auto* r = start_response<burst_ctl_counters_resp>(
      out, h, ctl::list_length(BURST_CTL_OP_QUERY_COUNTERS, n));
  r->worker = req.worker;
  r->count = n;
  for (uint32_t i = 0; i < n; ++i) {
    ctl::set_str(r->entries[i].name, sum[i].first);
    r->entries[i].value = sum[i].second;
  }
}

void Dispatcher::query_qps(const Session& s, const burst_ctl_hdr& h, const uint8_t* msg,
                           std::vector<uint8_t>* out) {
  burst_ctl_query_qps_req req;
  std::memcpy(&req, msg, sizeof(req));
  const uint32_t max =
      req.max == 0 || req.max > BURST_CTL_QPS_PER_MSG ? BURST_CTL_QPS_PER_MSG : req.max;
  std::vector<burst_ctl_qp_info> qps;
  uint32_t total = 0, next = 0;
  // Other users' QPs (and their pids) only to root and the admin group.
  res_.list_qps(req.start_qpn, max, &qps, &total, &next,
                privileged(s) ? -1 : static_cast<int64_t>(s.uid));
  const uint32_t n = static_cast<uint32_t>(qps.size());
  auto* r = start_response<burst_ctl_qps_resp>(out, h, ctl::list_length(BURST_CTL_OP_QUERY_QPS, n));
  r->total = total;
  r->count = n;
  r->next_qpn = next;
  if (n > 0) std::memcpy(r->entries, qps.data(), n * sizeof(burst_ctl_qp_info));
}

}  // namespace burst::burstd
