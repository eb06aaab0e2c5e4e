#include "core/mem_space.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

int pidfd_open(pid_t pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0u)); }

bool whole(ssize_t got, size_t len) { return got >= 0 && static_cast<size_t>(got) == len; }

}  // namespace

MemSpaces::MemSpaces()
    : entries_(std::make_unique<Entry[]>(kMaxSpaces)), generation_(kMaxSpaces, 0) {}

MemSpaces::~MemSpaces() {
  for (uint32_t i = 1; i < kMaxSpaces; ++i) {
    if (entries_[i].pidfd >= 0) close(entries_[i].pidfd);
  }
}

uint32_t MemSpaces::attach(pid_t pid) {
  if (pid <= 0) return 0;
  // Round robin from the last entry handed out: a detached index comes back as
  // late as possible (its generation changes anyway).
  for (uint32_t n = 0; n < kMaxSpaces - 1; ++n) {
    const uint32_t index = 1 + (next_ - 1 + n) % (kMaxSpaces - 1);
    Entry& e = entries_[index];
    if (e.state.load(std::memory_order_relaxed) != 0) continue;
    const int fd = pidfd_open(pid);
    if (fd < 0) return 0;  // no such process
    const uint32_t gen = generation_[index] = (generation_[index] + 1) % kGenerations;
    const uint32_t id = (gen << kIndexBits) | index;
    e.pidfd = fd;
    e.state.store((uint64_t{id} << 32) | static_cast<uint32_t>(pid), std::memory_order_release);
    next_ = index % (kMaxSpaces - 1) + 1;
    ++attached_;
    return id;
  }
  return 0;
}

void MemSpaces::detach(uint32_t id) {
  if (id == kLocal) return;
  Entry& e = entries_[id & kIndexMask];
  const uint64_t s = e.state.load(std::memory_order_relaxed);
  if (s == 0 || static_cast<uint32_t>(s >> 32) != id) return;
  e.state.store(0, std::memory_order_release);
  if (e.pidfd >= 0) close(e.pidfd);
  e.pidfd = -1;
  --attached_;
}

int MemSpaces::pidfd(uint32_t id) const {
  if (resolve(id) == 0) return -1;
  return entries_[id & kIndexMask].pidfd;
}

pid_t MemSpaces::resolve(uint32_t space) const {
  const uint64_t s = entries_[space & kIndexMask].state.load(std::memory_order_acquire);
  if (static_cast<uint32_t>(s >> 32) != space || s == 0) return 0;
  return static_cast<pid_t>(static_cast<uint32_t>(s));
}

pid_t MemSpaces::pid(uint32_t id) const { return id == kLocal ? 0 : resolve(id); }

ssize_t MemSpaces::readv(uint32_t space, const iovec* local, const iovec* remote, size_t n) const {
  if (space == kLocal) {
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      if (remote[i].iov_len != 0)
        std::memcpy(local[i].iov_base, remote[i].iov_base, remote[i].iov_len);
      total += remote[i].iov_len;
    }
    return static_cast<ssize_t>(total);
  }
  const pid_t p = resolve(space);
  if (p == 0) {
    errno = ESRCH;
    return -1;
  }
  return process_vm_readv(p, local, n, remote, n, 0);
}

ssize_t MemSpaces::writev(uint32_t space, const iovec* local, const iovec* remote, size_t n) const {
  if (space == kLocal) {
    size_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      if (local[i].iov_len != 0)
        std::memcpy(remote[i].iov_base, local[i].iov_base, local[i].iov_len);
      total += local[i].iov_len;
    }
    return static_cast<ssize_t>(total);
  }
  const pid_t p = resolve(space);
  if (p == 0) {
    errno = ESRCH;
    return -1;
  }
  return process_vm_writev(p, local, n, remote, n, 0);
}

bool MemSpaces::read(uint32_t space, void* local_dst, const void* space_src, size_t len) const {
  if (len == 0) return space == kLocal || resolve(space) != 0;
  const iovec l{local_dst, len};
  const iovec r{const_cast<void*>(space_src), len};
  return whole(readv(space, &l, &r, 1), len);
}

bool MemSpaces::write(uint32_t space, void* space_dst, const void* local_src, size_t len) const {
  if (len == 0) return space == kLocal || resolve(space) != 0;
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
