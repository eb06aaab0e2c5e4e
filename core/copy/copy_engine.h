/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Asynchronous copy engine: every receive-side placement of payload goes through
// it, and a completion is posted only after the copy it depends on completed.
//
// submit() queues a copy and returns a ticket (monotonic, starting at 1), or 0
// when the ring is full (call poll() and retry). poll() makes progress and
// returns the highest ticket T such that every copy <= T is complete (done or
// failed). drain() returns once every submitted copy is complete.
//
// Memory spaces (core/mem_space.h): the source is always in burst's own memory;
// the destination is in `space`. kLocal copies are memcpy. Copies into another
// process are gathered per space, in submission order, into MemSpaces::writev
// calls of up to MemSpaces::kMaxIov iovecs (one call per space per poll() in the
// common case), so that copies into the same space land in submission order;
// copies into different spaces touch disjoint memory. A copy into another space
// that fails (process gone, range unmapped, short transfer) is complete but
// failed (part of its bytes may have been written): failed() counts it and
// failed_tags() lists the `tag` it was submitted with (grouped by space, in
// submission order within a space) until clear_failed_tags(). The tag is opaque here;
// the transport encodes the QP and the operation in it and turns a failure into
// an error completion (core/copy_failure.cc). Remote copies need the table of
// spaces: bind_spaces() (Engine's constructor binds its MrTable's); without it
// they fail. (So a CopyEngine serves the engines of one MrTable.)
//
// The kind is chosen at construction; the engine branches once per batch, never
// per copy, and has no virtual call. kCpu executes the queued copies with
// memcpy / MemSpaces::writev (pwritev on the space's descriptor) at poll()/drain() time. kDsa is reserved for
// BURST_WITH_DSA builds.
//
// Threading: one engine per worker; every call on the owning worker. The bound
// MemSpaces is read only (any thread may read it).
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <vector>

#include "core/mem_space.h"

namespace burst::core {

enum class CopyKind : uint8_t { kCpu = 0, kDsa = 1 };

class CopyEngine {
 public:
  explicit CopyEngine(CopyKind kind = CopyKind::kCpu, uint32_t ring_entries = 1024);

  void bind_spaces(const MemSpaces* spaces) { spaces_ = spaces; }

  uint64_t submit(void* dst, const void* src, uint32_t len, uint32_t space = MemSpaces::kLocal,
                  uint64_t tag = 0) {
    if (submitted_ - completed_ > mask_) return 0;  // ring full
    if (space != MemSpaces::kLocal) [[unlikely]] {
      return submit_space(dst, src, len, space, tag);
    }
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

  // Copies into other spaces: system calls made, copies that failed.
  uint64_t space_calls() const { return space_calls_; }
  uint64_t failed() const { return failed_; }
  std::span<const uint64_t> failed_tags() const { return failed_tags_; }
  void clear_failed_tags() { failed_tags_.clear(); }

 private:
  struct Desc {
    void* dst;
    const void* src;
    uint32_t len;
  };
  // A copy into another space: its ring slot holds an empty Desc (which the
  // memcpy loop skips at no extra cost), the copy itself waits here, in
  // submission order, until the poll() that completes its ticket.
  struct SpaceDesc {
    void* dst;
    const void* src;
    uint32_t len;
    uint32_t space;
    uint64_t tag;
  };
  uint64_t submit_space(void* dst, const void* src, uint32_t len, uint32_t space, uint64_t tag);
  void run_cpu();
  void run_spaces();
  void write_batch(uint32_t space, const uint32_t* descs, uint32_t n);

  CopyKind kind_;
  std::vector<Desc> ring_;
  uint32_t mask_;
  uint64_t submitted_ = 0;  // tickets handed out (= descriptors ever queued)
  uint64_t completed_ = 0;  // tickets complete
  uint64_t bytes_ = 0;
  const MemSpaces* spaces_ = nullptr;
  // Copies into other spaces since the last poll (ring size entries, space_n_
  // used) and run_spaces' scratch (positions in it, grouped per space); all
  // sized at construction.
  std::vector<SpaceDesc> space_q_;
  uint32_t space_n_ = 0;
  std::vector<uint32_t> space_cur_;
  std::vector<uint32_t> space_rest_;
  std::vector<iovec> iov_local_;
  std::vector<iovec> iov_remote_;
  uint64_t space_calls_ = 0;
  uint64_t failed_ = 0;
  std::vector<uint64_t> failed_tags_;  // grows only when copies fail
};

}  // namespace burst::core
