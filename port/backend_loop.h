/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// BackendLoop<B>: the WorkerLoop of one worker over backend B (a QueueSet of a
// port's queues, or a ReflectPort), owning B and the core::Worker<B> over it.
// Included by the backend files only, so that each instantiates the poll loop
// once for its own queue type: every datapath call inside poll_once is direct.
//
// Threading: like WorkerLoop (port.h): the worker's thread.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/worker.h"
#include "datapath/datapath.h"
#include "port/port.h"

namespace burst::port {

template <datapath::Backend B>
class BackendLoop final : public WorkerLoop {
 public:
  // Names the queue ids and counters of worker `w`'s B (worker thread).
  using Stats = void (*)(B& backend, uint32_t w, std::vector<uint32_t>* ids, Counters* out);

  // local_delivery: frames for the port's own MAC loop inside the worker
  // (core::Worker::enable_local_delivery): ports with a real wire.
  BackendLoop(std::unique_ptr<B> backend, core::Engine& engine, core::Handoff* handoff, uint32_t w,
              Stats stats, bool local_delivery)
      : backend_(std::move(backend)), worker_(engine, *backend_, handoff, w), w_(w), stats_(stats) {
    if (local_delivery) worker_.enable_local_delivery();
  }

  void on_thread_start() override {
    if constexpr (requires(B& b) { b.queue(0).on_thread_start(); }) {
      for (size_t i = 0; i < backend_->size(); ++i) backend_->queue(i).on_thread_start();
    }
  }
  bool poll_once(uint64_t now_ns) override { return worker_.poll_once(now_ns); }
  const core::WorkerCounters& counters() const override { return worker_.counters(); }
  void queue_stats(std::vector<uint32_t>* ids, Counters* out) override {
    stats_(*backend_, w_, ids, out);
  }
  std::vector<int> wait_fds() override {
    std::vector<int> fds;
    if constexpr (requires(B& b) { b.queue(0).fd(); }) {
      for (size_t i = 0; i < backend_->size(); ++i) {
        if (backend_->queue(i).fd() >= 0) fds.push_back(backend_->queue(i).fd());
      }
    }
    return fds;
  }

 private:
  // Declared first: outlives the Worker, which frees its transmit backlog into it.
  std::unique_ptr<B> backend_;
  core::Worker<B> worker_;
  const uint32_t w_;
  const Stats stats_;
};

}  // namespace burst::port
