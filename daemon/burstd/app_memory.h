// How burstd reaches the memory an application registers (ibv_reg_mr).
//
// Zero-copy: when [addr, addr + len) lies inside one MAP_SHARED mapping of a
// regular file of the application (memfd, a /dev/shm or other tmpfs file, a
// hugetlbfs file, MAP_SHARED|MAP_ANONYMOUS shared memory), burstd maps the same
// pages itself (the mapping's file through /proc/PID/map_files, at the file
// offset of the range) and registers the MR in core::MemSpaces::kLocal with
// `local` as its host address: placement is memcpy and atomics are CPU atomics,
// coherent with the application's own accesses.
//
// Cross-memory: anything else (malloc, stack, private file mappings, ...), and
// a zero-copy candidate that cannot be mapped (not a regular file, the range
// reaching past the end of the file, map_files not accessible): the MR is
// registered in the application's MemSpaces space with its own address and
// burst reaches it with process_vm_readv/writev.
//
// Either way the whole range must be mapped in the application, readable, and
// writable when `writable` (as the kernel requires for ibv_reg_mr); len 0 is
// legal and maps nothing.
//
// Caveat (zero-copy): an application that shrinks the file under a registered
// range (ftruncate of its memfd or /dev/shm file) makes burstd's accesses to
// the lost pages raise SIGBUS in burstd. Memfds sealed with F_SEAL_SHRINK and
// MAP_SHARED|MAP_ANONYMOUS memory cannot shrink; for the others burstd needs a
// policy (require the seal, or a SIGBUS guard around workers' copies).
//
// Threading: control plane only (it reads /proc and calls mmap/munmap).
// unmap_app_range must run only after no worker uses the MR any more.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace burst::burstd {

struct AppMapping {
  enum class Mode : uint8_t { kCrossMemory, kZeroCopy };
  Mode mode = Mode::kCrossMemory;
  uint8_t* local = nullptr;  // burstd address of `addr` when kZeroCopy
  void* map_base = nullptr;  // the burstd mapping (whole pages), nullptr when none
  size_t map_len = 0;
};

// Classifies (and for zero-copy maps) [addr, addr + len) of process `pid`.
// Errors: kNotFound (no process `pid`, or its maps are not readable),
// kInvalid (the range wraps or is not entirely mapped), kPermission (part of
// the range is not readable, or not writable when `writable`). *out is reset
// first and left kCrossMemory with nothing mapped on error.
core::Status map_app_range(pid_t pid, uint64_t addr, uint64_t len, bool writable, AppMapping* out);
// Unmaps what map_app_range mapped (nothing for kCrossMemory) and resets *m.
void unmap_app_range(AppMapping* m);

}  // namespace burst::burstd
