// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "core/mem_space.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>

namespace burst::core {

namespace {

constexpr uint32_t kIndexMask = MemSpaces::kMaxSpaces - 1;
constexpr uint32_t kGenerations = 1u << (32 - MemSpaces::kIndexBits);

// Serialises the read-modify-write atomics on other processes' memory, for
// every MemSpaces of the process (two devices may serve the same application).
std::mutex& remote_atomic_mutex() {
  static std::mutex m;
  return m;
}

bool whole(ssize_t got, size_t len) { return got >= 0 && static_cast<size_t>(got) == len; }

// /proc/PID/mem is addressed by file offset = virtual address. Addresses above
// 2^63 (kernel half, never user memory) do not fit an off_t: refused.
bool to_offset(const void* addr, off_t* off) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  if (a > static_cast<uintptr_t>(INT64_MAX)) return false;
  *off = static_cast<off_t>(a);
  return true;
}

// Bytes of the per-thread bounce buffer: a run of several pieces contiguous on
// the space side moves in one pread/pwrite through it.
constexpr size_t kBounceBytes = size_t{256} << 10;

// /proc/PID/mem has no read_iter/write_iter: the kernel serves a preadv or
// pwritev one iovec at a time (a call of mem_rw each: a page allocated, the
// address space taken, the pages looked up), which made a 1 KiB frame cost a
// full call. So a run of pieces that are contiguous on the space side goes
// through one pread/pwrite of the whole run and a local memcpy to or from the
// pieces (about 20 GB/s, next to the kernel's own copy).
uint8_t* bounce() {
  thread_local std::unique_ptr<uint8_t[]> buf;
  if (!buf) buf.reset(new uint8_t[kBounceBytes]);
  return buf.get();
}

// Moves [off, off + len) of the space: a single piece directly, several through
// the bounce buffer. Returns the bytes moved (a prefix), or -1 with errno.
template <bool kWrite>
ssize_t move_run(int fd, const iovec* local, size_t pieces, size_t len, off_t off) {
  ssize_t got;
  if (pieces == 1) {
    do {
      got =
          kWrite ? pwrite(fd, local[0].iov_base, len, off) : pread(fd, local[0].iov_base, len, off);
    } while (got < 0 && errno == EINTR);
    return got;
  }
  uint8_t* b = bounce();
  if constexpr (kWrite) {
    size_t at = 0;
    for (size_t k = 0; k < pieces; ++k) {
      std::memcpy(b + at, local[k].iov_base, local[k].iov_len);
      at += local[k].iov_len;
    }
  }
  do {
    got = kWrite ? pwrite(fd, b, len, off) : pread(fd, b, len, off);
  } while (got < 0 && errno == EINTR);
  if constexpr (!kWrite) {
    size_t at = 0;
    for (size_t k = 0; k < pieces && got > 0 && at < static_cast<size_t>(got); ++k) {
      const size_t n = std::min(local[k].iov_len, static_cast<size_t>(got) - at);
      std::memcpy(local[k].iov_base, b + at, n);
      at += n;
    }
  }
  return got;
}

// One call per run of elements contiguous on the space side (a run of several
// pieces at most kBounceBytes long; a single piece of any length). A short
// transfer ends the call (the prefix is reported). A transfer of 0 bytes for a
// non-empty run means the address space is gone (exec or exit): ESRCH.
template <bool kWrite>
ssize_t transfer(int fd, const iovec* local, const iovec* remote, size_t n) {
  size_t total = 0;
  size_t i = 0;
  while (i < n) {
    if (remote[i].iov_len == 0) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    size_t run = remote[i].iov_len;
    while (j < n && run + remote[j].iov_len <= kBounceBytes &&
           static_cast<const uint8_t*>(remote[j - 1].iov_base) + remote[j - 1].iov_len ==
               remote[j].iov_base) {
      run += remote[j].iov_len;
      ++j;
    }
    off_t off, end;
    if (!to_offset(remote[i].iov_base, &off) ||
        !to_offset(static_cast<const uint8_t*>(remote[i].iov_base) + run, &end)) {
      if (total != 0) return static_cast<ssize_t>(total);
      errno = EFAULT;
      return -1;
    }
    const ssize_t got = move_run<kWrite>(fd, local + i, j - i, run, off);
    if (got <= 0) {
      if (total != 0) return static_cast<ssize_t>(total);
      // EIO from /proc/PID/mem: the first page is not mapped (or not accessible).
      errno = got == 0 ? ESRCH : EFAULT;
      return -1;
    }
    total += static_cast<size_t>(got);
    if (static_cast<size_t>(got) != run) return static_cast<ssize_t>(total);
    i = j;
  }
  return static_cast<ssize_t>(total);
}

// readv (kWrite false: remote -> local) or writev (local -> remote) of
// MemSpaces: memcpy within burst's own memory (`own`), else through fd (-1:
// the space is not attached, ESRCH).
template <bool kWrite>
ssize_t copy_iov(bool own, int fd, const iovec* local, const iovec* remote, size_t n) {
  if (own) {
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      const iovec& from = kWrite ? local[i] : remote[i];
      const iovec& to = kWrite ? remote[i] : local[i];
      if (from.iov_len != 0) std::memcpy(to.iov_base, from.iov_base, from.iov_len);
      total += from.iov_len;
    }
    return static_cast<ssize_t>(total);
  }
  if (fd < 0) {
    errno = ESRCH;
    return -1;
  }
  return transfer<kWrite>(fd, local, remote, n);
}

}  // namespace

MemSpaces::MemSpaces()
    : entries_(std::make_unique<Entry[]>(kMaxSpaces)), generation_(kMaxSpaces, 0) {}

MemSpaces::~MemSpaces() {
  for (uint32_t i = 1; i < kMaxSpaces; ++i) {
    const uint64_t s = entries_[i].state.load(std::memory_order_relaxed);
    if (s != 0) close(static_cast<int>(static_cast<uint32_t>(s)));
  }
}

uint32_t MemSpaces::attach(int mem_fd) {
  if (mem_fd < 0) return 0;
  // Round robin from the last entry handed out: a detached index comes back as
  // late as possible (its generation changes anyway).
  for (uint32_t n = 0; n < kMaxSpaces - 1; ++n) {
    const uint32_t index = 1 + (next_ - 1 + n) % (kMaxSpaces - 1);
    Entry& e = entries_[index];
    if (e.state.load(std::memory_order_relaxed) != 0) continue;
    const uint32_t gen = generation_[index] = (generation_[index] + 1) % kGenerations;
    const uint32_t id = (gen << kIndexBits) | index;
    e.state.store((uint64_t{id} << 32) | static_cast<uint32_t>(mem_fd), std::memory_order_release);
    next_ = index % (kMaxSpaces - 1) + 1;
    ++attached_;
    return id;
  }
  close(mem_fd);
  return 0;
}

int MemSpaces::detach(uint32_t id) {
  if (id == kLocal) return -1;
  Entry& e = entries_[id & kIndexMask];
  const uint64_t s = e.state.load(std::memory_order_relaxed);
  if (s == 0 || static_cast<uint32_t>(s >> 32) != id) return -1;
  e.state.store(0, std::memory_order_release);
  --attached_;
  return static_cast<int>(static_cast<uint32_t>(s));
}

int MemSpaces::resolve(uint32_t space) const {
  const uint64_t s = entries_[space & kIndexMask].state.load(std::memory_order_acquire);
  if (s == 0 || static_cast<uint32_t>(s >> 32) != space) return -1;
  return static_cast<int>(static_cast<uint32_t>(s));
}

int MemSpaces::fd(uint32_t id) const { return id == kLocal ? -1 : resolve(id); }

ssize_t MemSpaces::readv(uint32_t space, const iovec* local, const iovec* remote, size_t n) const {
  return copy_iov<false>(space == kLocal, space == kLocal ? -1 : resolve(space), local, remote, n);
}

ssize_t MemSpaces::writev(uint32_t space, const iovec* local, const iovec* remote, size_t n) const {
  return copy_iov<true>(space == kLocal, space == kLocal ? -1 : resolve(space), local, remote, n);
}

bool MemSpaces::read(uint32_t space, void* local_dst, const void* space_src, size_t len) const {
  if (len == 0) return space == kLocal || resolve(space) >= 0;
  const iovec l{local_dst, len};
  const iovec r{const_cast<void*>(space_src), len};
  return whole(readv(space, &l, &r, 1), len);
}

bool MemSpaces::write(uint32_t space, void* space_dst, const void* local_src, size_t len) const {
  if (len == 0) return space == kLocal || resolve(space) >= 0;
  const iovec l{const_cast<void*>(local_src), len};
  const iovec r{space_dst, len};
  return whole(writev(space, &l, &r, 1), len);
}

bool MemSpaces::compare_swap(uint32_t space, void* addr, uint64_t compare, uint64_t swap,
                             uint64_t* orig) const {
  if (space == kLocal) {
    std::atomic_ref<uint64_t> target(*static_cast<uint64_t*>(addr));
    uint64_t found = compare;
    target.compare_exchange_strong(found, swap);
    *orig = found;
    return true;
  }
  std::lock_guard<std::mutex> lock(remote_atomic_mutex());
  uint64_t found;
  if (!read(space, &found, addr, sizeof(found))) return false;
  if (found == compare && !write(space, addr, &swap, sizeof(swap))) return false;
  *orig = found;
  return true;
}

bool MemSpaces::fetch_add(uint32_t space, void* addr, uint64_t add, uint64_t* orig) const {
  if (space == kLocal) {
    *orig = std::atomic_ref<uint64_t>(*static_cast<uint64_t*>(addr)).fetch_add(add);
    return true;
  }
  std::lock_guard<std::mutex> lock(remote_atomic_mutex());
  uint64_t found;
  if (!read(space, &found, addr, sizeof(found))) return false;
  const uint64_t sum = found + add;
  if (!write(space, addr, &sum, sizeof(sum))) return false;
  *orig = found;
  return true;
}

}  // namespace burst::core
