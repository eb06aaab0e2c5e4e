/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// How burstd reaches the memory an application registers (ibv_reg_mr), and
// only through descriptors the application opened itself and sent
// (docs/security.md): its /proc/self/maps (every registration is checked
// against it), its /proc/self/mem, and per MR optionally the file behind a
// shared mapping. burstd never opens anything of another process by pid.
//
// Zero-copy: when [addr, addr + len) lies inside one MAP_SHARED mapping of a
// regular file (memfd, a /dev/shm or other tmpfs file, a hugetlbfs file,
// MAP_SHARED|MAP_ANONYMOUS shared memory) and the application sent that file
// (the maps show the same device and inode there), burstd maps the same pages
// itself at the file offset of the range and registers the MR in
// core::MemSpaces::kLocal with `local` as its host address: placement is
// memcpy and atomics are CPU atomics, coherent with the application's own
// accesses.
//
// Pinned (kmod/, docs/kmod.md "Pinned memory"): the file the application sent
// is a pin of the kernel assistant ("[burst-pin]", BURST_KMOD_PIN of its own
// range): map_pin_range checks with BURST_KMOD_PIN_INFO that it pins exactly
// [addr, addr + len) of the client (its pid as burstd sees it) and maps the
// pinned pages (only a process holding a registration may), zero-copy as above.
//
// Cross-memory: anything else (malloc, stack, private file mappings, no file
// sent, a file that does not match, a range reaching past the end of the
// file): the MR is registered in the application's MemSpaces space (its
// /proc/self/mem) with its own address.
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
// Threading: control plane only (it reads the maps descriptor and calls
// mmap/munmap). unmap_app_range must run only after no worker uses the MR any
// more.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace burst::burstd {

struct AppMapping {
  enum class Mode : uint8_t { kCrossMemory, kZeroCopy, kPinned };
  Mode mode = Mode::kCrossMemory;
  uint8_t* local = nullptr;  // burstd address of `addr` when kZeroCopy or kPinned
  void* map_base = nullptr;  // the burstd mapping (whole pages), nullptr when none
  size_t map_len = 0;
};

// Classifies (and for zero-copy maps) [addr, addr + len) of the address space
// whose /proc/PID/maps descriptor is `maps_fd`; `file_fd` (-1: none) is the
// file the application says backs the range (kept by the caller). Errors:
// kNotFound (the address space is gone: the process exec'd or exited),
// kInvalid (the range wraps or is not entirely mapped), kPermission (part of
// the range is not readable, or not writable when `writable`). *out is reset
// first and left kCrossMemory with nothing mapped on error.
core::Status map_app_range(int maps_fd, int file_fd, uint64_t addr, uint64_t len, bool writable,
                           AppMapping* out);
// ibv_reg_dmabuf_mr: maps [offset, offset + len) of the dma-buf `fd` (kept by
// the caller) MAP_SHARED into burstd, zero-copy. A dma-buf is recognised by its
// file system (fstatfs: DMA_BUF_MAGIC, the kernel's dma-buf pseudo file system,
// where nothing else lives and which no path can name; a readlink of
// "/dmabuf:" or an fdinfo "exp_name:" line could also be a file's name or
// content) and its size is what lseek(SEEK_END) reports (dma-buf's own llseek;
// the size is fixed at export). Errors: kInvalid (not a dma-buf, the range wraps
// or reaches past the buffer's size, or the exporter refuses the mapping),
// kPermission (`writable` over a descriptor without write access). len 0 maps
// nothing (the descriptor is still checked).
core::Status map_dmabuf_range(int fd, uint64_t offset, uint64_t len, bool writable,
                              AppMapping* out);
// Whether `fd` is a pin of the kernel assistant (its anonymous inode is named
// "[burst-pin]"; nothing else is asked of the file before that).
bool is_kmod_pin(int fd);
// Maps the pin `fd` (is_kmod_pin; kept by the caller) for the MR [addr, addr +
// len) of the process `pid`. Errors: kInvalid (the pin is another process's,
// covers another range, or is read-only for a `writable` MR), kPermission (the
// module refuses the mapping: burstd holds no registration; the caller may fall
// back to cross-memory). On success out->mode is kPinned.
core::Status map_pin_range(int fd, pid_t pid, uint64_t addr, uint64_t len, bool writable,
                           AppMapping* out);
// Whether the address space behind `maps_fd` still exists (false once its
// process exec'd or exited: its maps read empty). Cheap: reads one record.
bool address_space_alive(int maps_fd);
// Unmaps what map_app_range mapped (nothing for kCrossMemory) and resets *m.
void unmap_app_range(AppMapping* m);

}  // namespace burst::burstd
