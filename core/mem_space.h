// Where the bytes of a memory region live.
//
// Space 0 (kLocal) is burst's own address space: an MR's host address is a
// pointer that burst dereferences. Space k > 0 is another process (an
// application served by burstd), reached with process_vm_readv/writev: an MR in
// such a space stores that process's virtual address as its host address, which
// burst never dereferences. (An application range that burstd could mmap
// itself, see daemon/burstd/app_memory.h, is registered in kLocal instead.)
//
// Ids: attach() hands out id = (generation << 12) | index, index 1..4095; the
// generation changes every time an entry is reused, so an id that was detached
// never names another process later: every access with it fails.
//
// Threading: attach/detach/pidfd are control plane (one thread at a time).
// pid() and every accessor may run on any thread at any time: each entry is one
// 64-bit atomic (id and pid together) in a fixed table that never moves.
// Lifetime: a process that exits makes its accesses fail (ESRCH) while it is a
// zombie; once reaped its pid number may be reused by an unrelated process. The
// control plane must therefore detach a space as soon as its process exits:
// pidfd(id) becomes readable (EPOLLIN) exactly then, before the pid can be
// reused, so burstd watches it in its event loop.
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
  ~MemSpaces();  // closes the pidfds of spaces still attached
  MemSpaces(const MemSpaces&) = delete;
  MemSpaces& operator=(const MemSpaces&) = delete;

  // Control plane. attach: a new space for process `pid`; returns its id (> 0),
  // or 0 when the table is full or no process `pid` exists. Attaching the same
  // pid twice gives two ids. detach: every later access with `id` fails; an
  // unknown id is ignored.
  uint32_t attach(pid_t pid);
  void detach(uint32_t id);
  // A pidfd of the space's process (readable once it exited), -1 for an unknown
  // id. Owned by the table: valid until detach(id); do not close it.
  int pidfd(uint32_t id) const;
  uint32_t attached() const { return attached_; }

  // Any thread. The process of an attached space; 0 for kLocal or an unknown
  // (detached) id.
  pid_t pid(uint32_t id) const;

  // Any thread. `dst` / `src` on the space side are addresses in `space`.
  // False when the space is unknown, the process is gone, the range is not
  // (entirely) mapped with the needed protection, or the transfer was short.
  bool read(uint32_t space, void* local_dst, const void* space_src, size_t len) const;
  bool write(uint32_t space, void* space_dst, const void* local_src, size_t len) const;

  // Vectored forms: local[i] and remote[i] have the same length, n <= kMaxIov.
  // They stop at the first element that fails. Return the bytes transferred
  // (a prefix of the elements, possibly ending inside one), or -1 with errno
  // (ESRCH: process gone or space unknown; EFAULT: the first element failed).
  ssize_t readv(uint32_t space, const iovec* local, const iovec* remote, size_t n) const;
  ssize_t writev(uint32_t space, const iovec* local, const iovec* remote, size_t n) const;

  // 64-bit atomics on an address in `space` (see the top of this file for what
  // "atomic" means in another process). *orig receives the value found; false
  // (and nothing written) when the word cannot be read and written.
  bool compare_swap(uint32_t space, void* addr, uint64_t compare, uint64_t swap,
                    uint64_t* orig) const;
  bool fetch_add(uint32_t space, void* addr, uint64_t add, uint64_t* orig) const;

 private:
  // state: (id << 32) | pid, 0 while free. Written by the control plane
  // (attach/detach), read by any thread.
  struct Entry {
    std::atomic<uint64_t> state{0};
    int pidfd = -1;  // control plane only
  };
  pid_t resolve(uint32_t space) const;  // 0 when the id is not attached

  std::unique_ptr<Entry[]> entries_;
  std::vector<uint32_t> generation_;  // per entry, control plane
  uint32_t next_ = 1;                 // control plane: first entry attach() tries
  uint32_t attached_ = 0;
};

}  // namespace burst::core
