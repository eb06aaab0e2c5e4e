/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// A shared-memory region: a memfd mapped MAP_SHARED. burstd creates it
// (Create), sizes it and seals its size so that an application can neither
// shrink it under burstd's mapping (which would turn burstd's accesses into
// SIGBUS) nor grow it; the application maps the fd it received (Map).
#pragma once

#include <cstdint>

#include "core/status.h"

namespace burst::shm {

class ShmRegion {
 public:
  ShmRegion() = default;
  ~ShmRegion();
  ShmRegion(ShmRegion&& other) noexcept;
  ShmRegion& operator=(ShmRegion&& other) noexcept;
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  // burstd: a new zero-filled memfd of `size` bytes (a multiple of the page
  // size), sealed against shrinking, growing and further sealing, mapped
  // read-write. `name` shows in /proc/PID/fd and /proc/PID/maps.
  static core::Status Create(const char* name, uint64_t size, ShmRegion* out);

  // Application: maps a region fd received from burstd. Takes a duplicate of
  // `fd` (the caller keeps its own). Refuses an fd whose size is not sealed.
  static core::Status Map(int fd, ShmRegion* out);

  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }
  // burstd, once the descriptor is on its way to the application: hands it
  // to the caller (who closes it) and keeps only the mapping. A process holds
  // at most RLIMIT_NOFILE descriptors (20,000 hard here), and a QP with its two
  // CQs would otherwise keep three for its life.
  int release_fd() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  bool valid() const { return data_ != nullptr; }

 private:
  void Reset();

  uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  int fd_ = -1;
};

}  // namespace burst::shm
