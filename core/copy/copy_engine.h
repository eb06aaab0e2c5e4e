// Asynchronous copy engine: every receive-side placement of payload goes through
// it, and a completion is posted only after the copy it depends on completed.
//
// submit() queues a copy and returns a ticket (monotonic, starting at 1), or 0
// when the ring is full (call poll() and retry). poll() makes progress and
// returns the highest ticket T such that every copy <= T is complete. drain()
// returns once every submitted copy is complete.
//
// The kind is chosen at construction; the engine branches once per batch, never
// per copy, and has no virtual call. kCpu executes the queued copies with
// memcpy at poll()/drain() time. kDsa is reserved for BURST_WITH_DSA builds.
//
// Threading: one engine per worker; every call on the owning worker.
#pragma once

#include <cstdint>
#include <vector>

namespace burst::core {

enum class CopyKind : uint8_t { kCpu = 0, kDsa = 1 };

class CopyEngine {
 public:
  explicit CopyEngine(CopyKind kind = CopyKind::kCpu, uint32_t ring_entries = 1024);

  uint64_t submit(void* dst, const void* src, uint32_t len) {
    if (submitted_ - completed_ > mask_) return 0;  // ring full
    ring_[submitted_ & mask_] = Desc{dst, src, len};
    return ++submitted_;
  }
  uint64_t poll();
  void drain() { poll(); }

  CopyKind kind() const { return kind_; }
  uint64_t submitted() const { return submitted_; }  // last ticket handed out
  uint64_t completed() const { return completed_; }
  uint64_t bytes_copied() const { return bytes_; }
  bool idle() const { return completed_ == submitted_; }

 private:
  struct Desc {
    void* dst;
    const void* src;
    uint32_t len;
  };
  void run_cpu();

  CopyKind kind_;
  std::vector<Desc> ring_;
  uint32_t mask_;
  uint64_t submitted_ = 0;  // tickets handed out (= descriptors ever queued)
  uint64_t completed_ = 0;  // tickets complete
  uint64_t bytes_ = 0;
};

}  // namespace burst::core
