/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Helpers shared by the shm tests: regions in exact-size heap buffers (so that
// ASan sees any access outside them), doorbell regions in memfds, child
// processes with bounded lifetimes, and a monotonic clock.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <new>
#include <thread>

#include "abi/burst_shm_abi.h"
#include "shm/layout.h"
#include "shm/region.h"

namespace burst::shm::testing {

inline uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// An exact-size, 64-byte aligned, zeroed heap buffer.
class HeapRegion {
 public:
  explicit HeapRegion(uint64_t size)
      : size_(size), data_(static_cast<uint8_t*>(::operator new (size, std::align_val_t{64}))) {
    std::memset(data_, 0, size);
  }
  ~HeapRegion() { ::operator delete (data_, std::align_val_t{64}); }
  HeapRegion(const HeapRegion&) = delete;
  HeapRegion& operator=(const HeapRegion&) = delete;
  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  uint64_t size_;
  uint8_t* data_;
};

// A doorbell region in a memfd (shared with forked children), initialised as burstd would.
struct MemfdDoorbell {
  ShmRegion region;
  uint64_t offset = 0;
  uint32_t log2_slots = 0;
  burst_shm_doorbell* hdr() const {
    return reinterpret_cast<burst_shm_doorbell*>(region.data() + offset);
  }
};

inline bool MakeMemfdDoorbell(uint32_t log2_slots, uint64_t timeout_ns, MemfdDoorbell* out) {
  RegionLayout layout;
  if (!LayoutDoorbell(log2_slots, &layout).ok()) return false;
  if (!ShmRegion::Create("burst-test-doorbell", layout.size, &out->region).ok()) return false;
  InitDoorbellRegion(out->region.data(), layout, 0, log2_slots, timeout_ns);
  out->offset = layout.part_offset[0];
  out->log2_slots = log2_slots;
  return true;
}

// Forks a child that runs fn() and _exits with its result. The child dies with
// the parent (PR_SET_PDEATHSIG) and after `max_seconds` at most (alarm).
inline pid_t ForkChild(const std::function<int()>& fn, unsigned max_seconds = 60) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(120);
  alarm(max_seconds);
  _exit(fn());
}

// Waits up to `timeout` for the child; kills it if it is still running.
// Returns the exit code, 128 + signal if it was killed, or -1 on timeout.
inline int WaitChild(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace burst::shm::testing
