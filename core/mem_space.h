/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Where the bytes of a memory region live.
//
// Space 0 (kLocal) is burst's own address space: an MR's host address is a
// pointer that burst dereferences. Space k > 0 is another process's address
// space (an application served by burstd), reached ONLY through a descriptor
// that process opened itself and handed over: its /proc/self/mem, opened with
// its own credentials (the kernel checked them at open) and bound to the
// address space it was opened on. An MR in such a space stores that process's
// virtual address as its host address, which burst never dereferences; bytes
// move with pread/pwrite on the descriptor. When the process execs (or exits)
// its old address space dies and every access through the descriptor fails:
// an exec'd image, e.g. a setuid program, is out of reach whatever the pid now
// holds. burst never opens another process's memory by pid (docs/security.md).
// (An application range backed by a file the application handed over is
// mapped by burstd and registered in kLocal, see daemon/burstd/app_memory.h.)
//
// Ids: attach() hands out id = (generation << 12) | index, index 1..4095; the
// generation changes every time an entry is reused, so an id that was detached
// never names another space later: every access with it fails.
//
// Threading: attach/detach are control plane (one thread at a time). fd() and
// every accessor may run on any thread at any time: each entry is one 64-bit
// atomic (id and descriptor together) in a fixed table that never moves.
// detach() does not close the descriptor: it hands it back, and the caller
// closes it once no thread can still be inside an access that read the entry
// before the detach (burstd: after every worker passed a loop boundary), so a
// descriptor number is never reused under a running access.
//
// Atomics: in kLocal they are CPU atomics (std::atomic_ref). In another space
// they are a read and a write under one process-wide mutex: atomic among every
// burst atomic on that address (from any worker, any MrTable), NOT atomic
// against the application's own CPU accesses to the same word (the same as an
// RNIC without PCIe atomics). Memory the application shares with burstd
// (zero-copy) is registered in kLocal and gets real CPU atomics.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace burst::core {

class MemSpaces {
 public:
  static constexpr uint32_t kLocal = 0;
  static constexpr uint32_t kIndexBits = 12;
  static constexpr uint32_t kMaxSpaces = 1u << kIndexBits;  // table entries; entry 0 is kLocal
  static constexpr size_t kMaxIov = 1024;  // IOV_MAX: most iovecs per readv()/writev()

  MemSpaces();
  ~MemSpaces();  // closes the descriptors of spaces still attached
  MemSpaces(const MemSpaces&) = delete;
  MemSpaces& operator=(const MemSpaces&) = delete;

  // Control plane. attach: a new space reached through `mem_fd` (a process's
  // /proc/self/mem, opened by that process; adopted: closed by the table, also
  // when attach fails); returns its id (> 0), or 0 when the table is full or
  // mem_fd < 0. detach: every later access with `id` fails; returns the
  // descriptor, now owned by the caller (see the top of this file), or -1 for
  // an unknown id.
  uint32_t attach(int mem_fd);
  [[nodiscard]] int detach(uint32_t id);
  uint32_t attached() const { return attached_; }

  // Any thread. The descriptor of an attached space; -1 for kLocal or an
  // unknown (detached) id. Owned by the table.
  int fd(uint32_t id) const;

  // Any thread. `dst` / `src` on the space side are addresses in `space`.
  // False when the space is unknown, its address space is gone (the process
  // exec'd or exited), the range is not (entirely) mapped, or the transfer was
  // short.
  bool read(uint32_t space, void* local_dst, const void* space_src, size_t len) const;
  bool write(uint32_t space, void* space_dst, const void* local_src, size_t len) const;

  // Vectored forms: local[i] and remote[i] have the same length, n <= kMaxIov.
  // Runs of elements that are contiguous on the space side travel in one
  // pread/pwrite (through a per-thread bounce buffer of 256 KiB: the kernel
  // serves /proc/PID/mem one iovec per call). They stop at the first element that fails. Return the
  // bytes transferred (a prefix of the elements, possibly ending inside one),
  // or -1 with errno (ESRCH: space unknown or its address space gone; EFAULT:
  // the first element failed).
  ssize_t readv(uint32_t space, const iovec* local, const iovec* remote, size_t n) const;
  ssize_t writev(uint32_t space, const iovec* local, const iovec* remote, size_t n) const;

  // 64-bit atomics on an address in `space` (see the top of this file for what
  // "atomic" means in another process). *orig receives the value found; false
  // (and nothing written) when the word cannot be read and written.
  bool compare_swap(uint32_t space, void* addr, uint64_t compare, uint64_t swap,
                    uint64_t* orig) const;
  bool fetch_add(uint32_t space, void* addr, uint64_t add, uint64_t* orig) const;

 private:
  // state: (id << 32) | fd, 0 while free. Written by the control plane
  // (attach/detach), read by any thread.
  struct Entry {
    std::atomic<uint64_t> state{0};
  };
  int resolve(uint32_t space) const;  // -1 when the id is not attached

  std::unique_ptr<Entry[]> entries_;
  std::vector<uint32_t> generation_;  // per entry, control plane
  uint32_t next_ = 1;                 // control plane: first entry attach() tries
  uint32_t attached_ = 0;
};

}  // namespace burst::core
