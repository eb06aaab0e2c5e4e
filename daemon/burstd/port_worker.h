/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Worker threads of burstd. Each worker owns one transport Engine, its datapath
// queues and the core::Worker poll loop joining them; every call into that
// Engine (datapath and control) runs on the worker's thread. The control thread
// reaches a worker through its command queue: run() posts a closure, the worker
// runs it between two loop iterations, the control thread waits (bounded).
//
//   control thread                      worker thread
//   run(fn) --push--> CommandQueue --pop--> fn(worker) between poll_once() calls
//          <--------- done (mutex + condition variable, off the fast path)
//
// An idle worker backs off: it spins a little, then yields, then sleeps with a
// growing interval up to idle_sleep_max_us (machines with fewer cores than
// threads must not be eaten by polling); any work resets the back-off.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/engine.h"
#include "core/worker.h"
#include "daemon/burstd/shm_plane.h"
#include "port/port.h"

namespace burst::burstd {

class WorkerBase;

// What QUERY_WORKERS and QUERY_COUNTERS report, copied on the worker thread.
struct WorkerStats {
  core::WorkerCounters loop;
  core::EngineCounters engine;
  uint64_t idle_sleeps = 0;
  uint64_t commands = 0;
  PlaneCounters plane;
  shm::DoorbellStats doorbell;
  std::vector<uint32_t> queue_ids;
  std::vector<std::pair<std::string, uint64_t>> backend;  // backend counters by name
};

// One control operation for one worker.
class Command {
 public:
  enum State : uint8_t { kQueued, kRunning, kDone, kAbandoned };
  explicit Command(std::function<void(WorkerBase&)> fn) : fn_(std::move(fn)) {}

  // Worker thread: runs the closure unless the control thread gave up on it.
  void execute(WorkerBase& w);
  // Control thread: waits until done; false (and the closure will never run)
  // when it had not started within timeout_ms.
  bool wait(uint32_t timeout_ms);

 private:
  std::function<void(WorkerBase&)> fn_;
  std::atomic<uint8_t> state_{kQueued};  // written by both threads (CAS), see State
  std::mutex mu_;                        // with cv_: completion notification
  std::condition_variable cv_;
};

// Single producer (control thread), single consumer (the worker).
class CommandQueue {
 public:
  static constexpr uint32_t kSlots = 64;
  bool push(std::shared_ptr<Command> c);  // control thread; false when full
  std::shared_ptr<Command> pop();         // worker thread; nullptr when empty
  bool empty() const {                    // worker thread
    return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_relaxed);
  }

 private:
  std::array<std::shared_ptr<Command>, kSlots> slots_;
  alignas(64) std::atomic<uint32_t> head_{0};  // written by the control thread, read by the worker
  alignas(64) std::atomic<uint32_t> tail_{0};  // written by the worker, read by the control thread
};

struct WorkerOptions {
  uint32_t idle_sleep_max_us = 1000;
};

class WorkerBase {
 public:
  WorkerBase(uint32_t index, const WorkerOptions& options);
  virtual ~WorkerBase();
  WorkerBase(const WorkerBase&) = delete;
  WorkerBase& operator=(const WorkerBase&) = delete;

  uint32_t index() const { return index_; }
  // Loop iterations so far (any thread; the worker bumps it each iteration,
  // busy or idle): the control thread's watchdog sees the worker move.
  uint64_t heartbeat() const { return heartbeat_.load(std::memory_order_relaxed); }

  // Control thread.
  void start();
  void stop();  // asks the loop to end and joins the thread
  bool running() const { return thread_.joinable(); }
  // Runs fn on the worker thread and waits for it. Returns 0, ETIMEDOUT (fn did
  // not start within timeout_ms and never will) or EAGAIN (queue full). Before
  // start() and after stop(), fn runs on the calling thread.
  int run(const std::function<void(WorkerBase&)>& fn, uint32_t timeout_ms);

  // Worker thread (inside run()).
  virtual core::Engine& engine() = 0;
  virtual void stats(WorkerStats* out) = 0;
  // The shared-memory data path of this worker (bind/unbind inside run()).
  ShmPlane& plane() { return plane_; }
  // Applications write 1 here to wake the worker when it sleeps (see
  // burst_shm_doorbell.need_wakeup); -1 if the eventfd could not be created.
  int wake_fd() const { return wake_fd_; }

 protected:
  virtual void thread_main() = 0;
  bool stop_requested() const { return stop_.load(std::memory_order_relaxed); }
  ShmPlane plane_;  // worker thread (and commands)
  // Descriptors that end an idle sleep besides wake_fd (the backend's RX
  // sockets); set before start().
  std::vector<int> sleep_fds_;
  // The port's handoff rings (nullptr: none): a sleep is skipped while they
  // hold frames for this worker, and producers wake it; set before start().
  core::Handoff* handoff_ = nullptr;
  bool drain_commands();              // worker thread; true when it ran any
  void back_off(bool worked);  // worker thread
  void base_stats(WorkerStats* out);  // worker thread

 private:
  const uint32_t index_;
  const WorkerOptions options_;
  void sleep();             // worker thread
  void wake_for_command();  // control thread, after queueing a command
  int wake_fd_ = -1;
  std::thread thread_;
  // 1 while the worker sleeps: written by the worker (and cleared by run()'s
  // wake), read by the control thread in run().
  std::atomic<uint32_t> cmd_sleeping_{0};
  std::atomic<bool> stop_{false};  // written by the control thread, read by the worker
  std::atomic<uint64_t> heartbeat_{0};  // written by the worker (plain store), read by others
  CommandQueue commands_;
  // Written and read by the worker thread only.
  uint32_t idle_loops_ = 0;
  uint32_t sleep_us_ = 0;
  uint64_t idle_sleeps_ = 0;
  uint64_t commands_run_ = 0;
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  uint64_t test_stall_at_ns_ = 0;  // BURST_TEST_STALL_WORKER_MS: the loop hangs from then on
#endif
};

uint64_t monotonic_ns();

// A worker over one port's queues: the port assembly (port/port.h) hands it
// its WorkerLoop (the queues and the core::Worker<B> over them, instantiated
// once per backend: direct calls inside; one virtual call per loop iteration).
// Owns its copy engine, Engine and loop, destroyed in that reverse order.
class PortWorker final : public WorkerBase {
 public:
  PortWorker(uint32_t index, const WorkerOptions& options, const core::EngineConfig& config,
             core::MrTable& mrs, port::Port& port)
      : WorkerBase(index, options),
        engine_(config, mrs, copier_),
        loop_(port.make_loop(index, engine_)) {
    sleep_fds_ = loop_->wait_fds();
    handoff_ = port.handoff();  // frames from other workers (and looped ones) end a sleep
    if (handoff_ != nullptr) handoff_->set_wake_fd(index, wake_fd());
  }
  ~PortWorker() override { stop(); }

  core::Engine& engine() override { return engine_; }
  void stats(WorkerStats* out) override {
    base_stats(out);
    out->loop = loop_->counters();
    out->engine = engine_.counters();
    loop_->queue_stats(&out->queue_ids, &out->backend);
  }

 private:
  void thread_main() override {
    loop_->on_thread_start();
    while (!stop_requested()) {
      bool worked = drain_commands();
      const uint64_t now = monotonic_ns();
      worked |= plane_.poll(engine_, now);  // applications' work requests
      worked |= loop_->poll_once(now);
      worked |= plane_.deliver(engine_);  // completions to the applications' CQ rings
      back_off(worked);
    }
  }

  core::CopyEngine copier_;
  core::Engine engine_;
  std::unique_ptr<port::WorkerLoop> loop_;
};

}  // namespace burst::burstd
