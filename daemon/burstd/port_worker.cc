// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/port_worker.h"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace burst::burstd {
namespace {

constexpr uint32_t kSpinLoops = 64;    // idle iterations before yielding
constexpr uint32_t kYieldLoops = 256;  // then yields before sleeping
constexpr uint32_t kFirstSleepUs = 10;
constexpr uint32_t kPushRetryUs = 100;

}  // namespace

uint64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000u + uint64_t(ts.tv_nsec);
}

void Command::execute(WorkerBase& w) {
  uint8_t expected = kQueued;
  if (!state_.compare_exchange_strong(expected, kRunning)) return;  // abandoned
  fn_(w);
  std::lock_guard<std::mutex> lock(mu_);
  state_.store(kDone);
  cv_.notify_all();
}

bool Command::wait(uint32_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                   [this] { return state_.load() == kDone; })) {
    return true;
  }
  uint8_t expected = kQueued;
  if (state_.compare_exchange_strong(expected, kAbandoned)) return false;
  // Running: a control closure is short; wait for it to finish.
  cv_.wait(lock, [this] { return state_.load() == kDone; });
  return true;
}

bool CommandQueue::push(std::shared_ptr<Command> c) {
  const uint32_t head = head_.load(std::memory_order_relaxed);
  if (head - tail_.load(std::memory_order_acquire) >= kSlots) return false;
  slots_[head % kSlots] = std::move(c);
  head_.store(head + 1, std::memory_order_release);
  return true;
}

std::shared_ptr<Command> CommandQueue::pop() {
  const uint32_t tail = tail_.load(std::memory_order_relaxed);
  if (head_.load(std::memory_order_acquire) == tail) return nullptr;
  std::shared_ptr<Command> c = std::move(slots_[tail % kSlots]);
  tail_.store(tail + 1, std::memory_order_release);
  return c;
}

WorkerBase::~WorkerBase() {
  // PortWorker's destructor stopped the thread before its members went away.
  if (wake_fd_ >= 0) close(wake_fd_);
}

void WorkerBase::start() {
  if (thread_.joinable()) return;
  stop_.store(false);
  thread_ = std::thread([this] {
    char name[16];
    std::snprintf(name, sizeof(name), "burstd-w%u", index_);
    pthread_setname_np(pthread_self(), name);  // top -H, bench/cm_cpu.sh
    thread_main();
  });
}

void WorkerBase::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true);
  thread_.join();
  // Commands still queued are abandoned by their waiters (run() times out);
  // none can be queued now: run() executes inline once the thread is gone.
  while (std::shared_ptr<Command> c = commands_.pop()) c->execute(*this);
}

int WorkerBase::run(const std::function<void(WorkerBase&)>& fn, uint32_t timeout_ms) {
  if (!thread_.joinable()) {
    fn(*this);
    return 0;
  }
  auto cmd = std::make_shared<Command>(fn);
  const uint64_t deadline = monotonic_ns() + uint64_t{timeout_ms} * 1'000'000u;
  while (!commands_.push(cmd)) {
    if (monotonic_ns() >= deadline) return EAGAIN;
    timespec ts{0, kPushRetryUs * 1000};
    nanosleep(&ts, nullptr);
  }
  wake_for_command();
  const uint64_t now = monotonic_ns();
  const uint32_t left_ms = now >= deadline ? 1 : uint32_t((deadline - now) / 1'000'000u) + 1;
  return cmd->wait(left_ms) ? 0 : ETIMEDOUT;
}

// Control thread, after a push: a sleeping worker is woken at once instead of
// at the end of its sleep (up to idle_sleep_max_us per command). Dekker with
// back_off: each side stores its flag, fences, then reads the other's.
void WorkerBase::wake_for_command() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (cmd_sleeping_.load(std::memory_order_relaxed) == 0 || wake_fd_ < 0) return;
  if (cmd_sleeping_.exchange(0, std::memory_order_relaxed) == 0) return;
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof(one));
}

bool WorkerBase::drain_commands() {
  if (commands_.empty()) return false;
  while (std::shared_ptr<Command> c = commands_.pop()) {
    c->execute(*this);
    ++commands_run_;
  }
  return true;
}

WorkerBase::WorkerBase(uint32_t index, const WorkerOptions& options)
    : index_(index), options_(options), wake_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  // Test hook (never in release packages): worker 0 hangs after this many ms,
  // as a worker stuck in a bug would (the watchdog test).
  if (const char* ms = getenv("BURST_TEST_STALL_WORKER_MS"); ms != nullptr && index == 0)
    test_stall_at_ns_ = monotonic_ns() + std::strtoull(ms, nullptr, 10) * 1'000'000;
#endif
}

void WorkerBase::back_off(bool worked) {
  heartbeat_.store(heartbeat_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
#if defined(BURST_TEST_HOOKS) && BURST_TEST_HOOKS
  if (test_stall_at_ns_ != 0 && monotonic_ns() >= test_stall_at_ns_) {
    while (!stop_requested()) usleep(10'000);
    return;
  }
#endif
  if (worked) {
    idle_loops_ = 0;
    sleep_us_ = 0;
    return;
  }
  // Measured (docs/cm.md "burstd's cost per connection"): going back to sleep
  // right after QP1-only or command-only work cost more CPU per connection
  // than this spin/yield phase on a loaded 2-core machine (each wake-up is an
  // eventfd write, a ppoll return and two context switches), so all work
  // restarts it alike.
  ++idle_loops_;
  if (idle_loops_ < kSpinLoops) return;
  if (idle_loops_ < kSpinLoops + kYieldLoops || options_.idle_sleep_max_us == 0) {
    sched_yield();
    return;
  }
  sleep_us_ = sleep_us_ == 0 ? kFirstSleepUs : std::min(sleep_us_ * 2, options_.idle_sleep_max_us);
  sleep_us_ = std::min(sleep_us_, options_.idle_sleep_max_us);
  sleep();
}

// Sleeps until the timeout (timers), a frame on an RX socket, an
// application's kick (its post found need_wakeup set), a frame from another
// worker or a control command.
void WorkerBase::sleep() {
  if (!plane_.prepare_sleep()) return;
  if (handoff_ != nullptr && !handoff_->may_sleep(index_)) {
    plane_.end_sleep();
    return;
  }
  cmd_sleeping_.store(1, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!commands_.empty()) {
    cmd_sleeping_.store(0, std::memory_order_relaxed);
    if (handoff_ != nullptr) handoff_->woke(index_);
    plane_.end_sleep();
    return;
  }
  pollfd pfds[1 + 16];
  nfds_t n = 0;
  if (wake_fd_ >= 0) pfds[n++] = pollfd{wake_fd_, POLLIN, 0};
  for (int fd : sleep_fds_) {
    if (n < std::size(pfds)) pfds[n++] = pollfd{fd, POLLIN, 0};
  }
  timespec ts{0, long(sleep_us_) * 1000};
  if (ppoll(pfds, n, &ts, nullptr) > 0 && wake_fd_ >= 0 && (pfds[0].revents & POLLIN)) {
    uint64_t v;
    (void)!read(wake_fd_, &v, sizeof(v));
  }
  cmd_sleeping_.store(0, std::memory_order_relaxed);
  if (handoff_ != nullptr) handoff_->woke(index_);
  plane_.end_sleep();
  ++idle_sleeps_;
}

void WorkerBase::base_stats(WorkerStats* out) {
  out->idle_sleeps = idle_sleeps_;
  out->commands = commands_run_;
  out->plane = plane_.counters();
  if (const shm::DoorbellStats* d = plane_.doorbell_stats()) out->doorbell = *d;
}

}  // namespace burst::burstd
