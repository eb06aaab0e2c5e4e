/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// QueueSet<B>: several queues of one port served by one worker, presented as
// one Backend. A NIC (or veth) spreads received frames over all its queues by
// RSS, so every queue that can receive RoCE traffic needs a socket even when
// there are fewer workers than queues: worker w of N serves queues w, w+N, ...
//
//   rx_burst    takes a burst from one queue, starting after the queue served
//               last (round robin), moving on while queues are empty;
//   rx_release  returns the frames of that burst to the queue they came from
//               (the Worker pairs every rx_burst with one rx_release);
//   tx_*        transmit on the worker's first queue;
//   flush/refill act on every queue.
//
// Threading: like its queues, owned by one worker thread.
#pragma once

#include <cstdint>
#include <vector>

#include "datapath/datapath.h"

namespace burst::datapath {

template <Backend B>
class QueueSet {
 public:
  static constexpr uint32_t kMaxBurst = B::kMaxBurst;

  explicit QueueSet(std::vector<B*> queues) : q_(std::move(queues)) {}

  uint32_t rx_burst(Frame* frames, uint32_t n) {
    const size_t count = q_.size();
    for (size_t i = 0; i < count; ++i) {
      next_ = next_ + 1 == count ? 0 : next_ + 1;
      const uint32_t got = q_[next_]->rx_burst(frames, n);
      if (got > 0) {
        rx_from_ = next_;
        return got;
      }
    }
    return 0;
  }
  void rx_release(Frame* frames, uint32_t n) { q_[rx_from_]->rx_release(frames, n); }
  uint32_t tx_alloc(Frame* frames, uint32_t n) { return q_[0]->tx_alloc(frames, n); }
  uint32_t tx_burst(Frame* frames, uint32_t n) { return q_[0]->tx_burst(frames, n); }
  void tx_free(Frame* frames, uint32_t n) { q_[0]->tx_free(frames, n); }
  void flush() {
    for (B* q : q_) q->flush();
  }
  void refill() {
    for (B* q : q_) q->refill();
  }
  uint32_t mtu() const { return q_[0]->mtu(); }
  uint32_t headroom() const { return q_[0]->headroom(); }
  uint32_t queue_count() const { return q_[0]->queue_count(); }
  bool zero_copy() const { return q_[0]->zero_copy(); }

  size_t size() const { return q_.size(); }
  B& queue(size_t i) { return *q_[i]; }

 private:
  std::vector<B*> q_;
  size_t next_ = 0;
  size_t rx_from_ = 0;
};

}  // namespace burst::datapath
