// Worker<Backend>: the poll loop that joins one transport Engine to one datapath
// queue. Instantiated once per backend type; every call to the backend is a
// direct call (no virtual dispatch per packet), as DESIGN.md §3 asks.
//
// Threading: a Worker, its Engine and its backend queue belong to one thread;
// poll_once() must only be called from that thread.
#pragma once

#include <cstdint>

#include "core/engine.h"
#include "datapath/datapath.h"

namespace burst::core {

struct WorkerCounters {
  uint64_t loops = 0;
  uint64_t rx_bursts = 0;
  uint64_t tx_bursts = 0;
  uint64_t tx_no_buffers = 0;  // the backend had no free tx buffer when the engine had work
  uint64_t tx_backlogged = 0;  // built frames the backend did not take at once (kept, retried)
};

template <datapath::Backend B>
class Worker {
 public:
  static constexpr uint32_t kBurst = B::kMaxBurst;

  Worker(Engine& engine, B& port) : engine_(engine), port_(port) {}
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() {
    if (backlog_n_ > 0) port_.tx_free(backlog_ + backlog_head_, backlog_n_);
  }

  // One iteration: receive a burst, run timers, transmit what the engine has.
  // `now_ns` is the one clock read of this iteration. Returns true when it did
  // any work (the caller backs off when it did none).
  bool poll_once(uint64_t now_ns) {
    bool worked = false;
    ++counters_.loops;

    datapath::Frame rx[kBurst];
    const uint32_t n = port_.rx_burst(rx, kBurst);
    if (n > 0) {
      engine_.rx_burst(rx, n, now_ns);
      port_.rx_release(rx, n);
      ++counters_.rx_bursts;
      worked = true;
    }
    port_.refill();

    engine_.tick(now_ns);

    worked |= send_backlog();
    if (backlog_n_ == 0) {
      while (engine_.tx_pending()) {
        datapath::Frame tx[kBurst];
        const uint32_t got = port_.tx_alloc(tx, kBurst);
        if (got == 0) {
          ++counters_.tx_no_buffers;
          break;
        }
        const uint32_t built = engine_.tx_build(tx, got, now_ns);
        if (built < got) port_.tx_free(tx + built, got - built);
        if (built == 0) break;
        worked = true;
        const uint32_t sent = port_.tx_burst(tx, built);
        ++counters_.tx_bursts;
        if (sent < built) {
          // Keep what the device did not take, in order; nothing is dropped.
          for (uint32_t i = sent; i < built; ++i) backlog_[backlog_n_++] = tx[i];
          backlog_head_ = 0;
          counters_.tx_backlogged += built - sent;
          break;
        }
      }
    }
    port_.flush();
    return worked;
  }

  const WorkerCounters& counters() const { return counters_; }
  Engine& engine() { return engine_; }
  B& port() { return port_; }

 private:
  bool send_backlog() {
    if (backlog_n_ == 0) return false;
    const uint32_t sent = port_.tx_burst(backlog_ + backlog_head_, backlog_n_);
    backlog_head_ += sent;
    backlog_n_ -= sent;
    if (backlog_n_ == 0) backlog_head_ = 0;
    return sent > 0;
  }

  Engine& engine_;
  B& port_;
  datapath::Frame backlog_[kBurst];
  uint32_t backlog_head_ = 0;
  uint32_t backlog_n_ = 0;
  WorkerCounters counters_;
};

}  // namespace burst::core
