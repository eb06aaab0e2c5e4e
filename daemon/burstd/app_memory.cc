// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "daemon/burstd/app_memory.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "abi/burst_kmod.h"

namespace burst::burstd {

namespace {

// One line of /proc/PID/maps.
struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  char perms[5] = {};  // "rw-s"
  uint64_t offset = 0;
  unsigned dev_major = 0;
  unsigned dev_minor = 0;
  uint64_t inode = 0;
};

bool parse_line(const char* line, MapsEntry* e) {
  return std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64, &e->start,
                     &e->end, e->perms, &e->offset, &e->dev_major, &e->dev_minor, &e->inode) == 7;
}

uint64_t align_down(uint64_t v, uint64_t a) { return v & ~(a - 1); }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

// Maps [addr, addr + len) of `m` (a MAP_SHARED mapping of the file `fd`, as the
// application's maps show it) into burstd. False when it cannot (the caller
// falls back to cross-memory): not the file of the mapping, not a regular
// file, opened without write access for a writable MR, or too short.
bool map_shared(int fd, const MapsEntry& m, uint64_t addr, uint64_t len, bool writable,
                AppMapping* out) {
  struct stat st;
  struct statfs fs;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || fstatfs(fd, &fs) != 0) return false;
  if (st.st_ino != m.inode || major(st.st_dev) != m.dev_major || minor(st.st_dev) != m.dev_minor)
    return false;  // not the file mapped there
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || (fl & O_PATH) != 0) return false;
  const int acc = fl & O_ACCMODE;
  if (acc == O_WRONLY || (writable && acc != O_RDWR)) return false;
  // hugetlbfs maps whole huge pages at huge-page-aligned offsets; the
  // application's mapping is aligned the same way.
  uint64_t align = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (fs.f_type == HUGETLBFS_MAGIC && st.st_blksize > 0)
    align = static_cast<uint64_t>(st.st_blksize);
  const uint64_t first = align_down(addr, align);
  const uint64_t last = std::min(align_up(addr + len, align), m.end);
  const uint64_t file_off = m.offset + (first - m.start);
  // Bytes past the end of the file would raise SIGBUS in burstd.
  const uint64_t needed = m.offset + (addr + len - m.start);
  if (first < m.start || needed > static_cast<uint64_t>(st.st_size)) return false;
  const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  void* base = mmap(nullptr, last - first, prot, MAP_SHARED, fd, static_cast<off_t>(file_off));
  if (base == MAP_FAILED) return false;
  out->mode = AppMapping::Mode::kZeroCopy;
  out->map_base = base;
  out->map_len = last - first;
  out->local = static_cast<uint8_t*>(base) + (addr - first);
  return true;
}

// Reads the whole maps file behind `fd` (from offset 0). Empty when the
// address space is gone.
std::string read_maps(int fd) {
  std::string s;
  char buf[16384];
  off_t off = 0;
  for (;;) {
    const ssize_t n = pread(fd, buf, sizeof(buf), off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    s.append(buf, static_cast<size_t>(n));
    off += n;
  }
  return s;
}

}  // namespace

core::Status map_app_range(int maps_fd, int file_fd, uint64_t addr, uint64_t len, bool writable,
                           AppMapping* out) {
  *out = AppMapping{};
  if (len == 0) return core::Status::Ok();
  if (maps_fd < 0) return core::Errc::kNotFound;
  if (len > UINT64_MAX - addr) return core::Errc::kInvalid;
  const uint64_t end = addr + len;

  const std::string maps = read_maps(maps_fd);
  if (maps.empty()) return core::Errc::kNotFound;  // exec'd or exited
  // Walk the mappings in address order, covering [addr, end) with no gap.
  uint64_t cursor = addr;
  MapsEntry whole;  // the one mapping holding the whole range, if any
  bool in_one = false;
  core::Status status = core::Errc::kInvalid;  // not (entirely) mapped
  size_t pos = 0;
  while (pos < maps.size()) {
    size_t nl = maps.find('\n', pos);
    if (nl == std::string::npos) nl = maps.size();
    const std::string line = maps.substr(pos, nl - pos);
    pos = nl + 1;
    MapsEntry e;
    if (!parse_line(line.c_str(), &e) || e.end <= cursor) continue;
    if (e.start > cursor) break;  // a hole
    if (e.perms[0] != 'r' || (writable && e.perms[1] != 'w')) {
      status = core::Errc::kPermission;
      break;
    }
    if (e.start <= addr && end <= e.end) {
      whole = e;
      in_one = true;
    }
    cursor = e.end;
    if (cursor >= end) {
      status = core::Status::Ok();
      break;
    }
  }
  if (!status.ok()) return status;

  // Zero-copy: inside one shared mapping of a file (inode 0: not a file) that
  // the application sent.
  if (file_fd >= 0 && in_one && whole.perms[3] == 's' && whole.inode != 0) {
    map_shared(file_fd, whole, addr, len, writable, out);
  }
  return core::Status::Ok();
}

core::Status map_dmabuf_range(int fd, uint64_t offset, uint64_t len, bool writable,
                              AppMapping* out) {
  *out = AppMapping{};
  struct statfs fs;
  if (fd < 0 || fstatfs(fd, &fs) != 0 || fs.f_type != DMA_BUF_MAGIC) return core::Errc::kInvalid;
  const off_t size = lseek(fd, 0, SEEK_END);
  if (size < 0 || len > UINT64_MAX - offset) return core::Errc::kInvalid;
  if (offset + len > static_cast<uint64_t>(size)) return core::Errc::kInvalid;
  if (len == 0) return core::Status::Ok();
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return core::Errc::kInvalid;
  if (writable && (fl & O_ACCMODE) != O_RDWR) return core::Errc::kPermission;
  // Mapped from the buffer's start: GEM exporters fault pages in by their
  // distance from the mapping's start and ignore a non-zero mmap offset
  // (drm_gem_shmem_fault, so vgem in 6.1; also msm, etnaviv, lima): a mapping
  // at `offset` would show page 0 there.
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t map_len = align_up(offset + len, page);
  const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  void* base = mmap(nullptr, map_len, prot, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return errno == EACCES ? core::Errc::kPermission : core::Errc::kInvalid;
  out->mode = AppMapping::Mode::kZeroCopy;
  out->map_base = base;
  out->map_len = map_len;
  out->local = static_cast<uint8_t*>(base) + offset;
  return core::Status::Ok();
}

bool is_kmod_pin(int fd) {
  constexpr long kAnonInodeFsMagic = 0x09041934;  // ANON_INODE_FS_MAGIC
  static constexpr char kName[] = "anon_inode:[burst-pin]";
  struct statfs fs;
  if (fd < 0 || fstatfs(fd, &fs) != 0 || fs.f_type != kAnonInodeFsMagic) return false;
  char path[64], name[sizeof(kName) + 1];
  std::snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(path, name, sizeof(name));
  return n == static_cast<ssize_t>(sizeof(kName) - 1) && std::memcmp(name, kName, n) == 0;
}

core::Status map_pin_range(int fd, pid_t pid, uint64_t addr, uint64_t len, bool writable,
                           AppMapping* out) {
  *out = AppMapping{};
  burst_kmod_pin_info info{};
  info.size = sizeof(info);
  if (ioctl(fd, BURST_KMOD_PIN_INFO, &info) != 0) return core::Errc::kInvalid;
  if (info.tgid == 0 || static_cast<pid_t>(info.tgid) != pid || info.addr != addr ||
      info.length != len || (writable && (info.flags & BURST_KMOD_PIN_WRITE) == 0)) {
    return core::Errc::kInvalid;
  }
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  if (info.map_length == 0 || info.map_length % page != 0 || info.map_offset >= page ||
      info.map_offset + len > info.map_length) {
    return core::Errc::kInvalid;
  }
  const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
  void* base = mmap(nullptr, info.map_length, prot, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return errno == EPERM ? core::Errc::kPermission : core::Errc::kInvalid;
  out->mode = AppMapping::Mode::kPinned;
  out->map_base = base;
  out->map_len = info.map_length;
  out->local = static_cast<uint8_t*>(base) + info.map_offset;
  return core::Status::Ok();
}

bool address_space_alive(int maps_fd) {
  char c;
  ssize_t n;
  do {
    n = pread(maps_fd, &c, 1, 0);
  } while (n < 0 && errno == EINTR);
  return n == 1;
}

void unmap_app_range(AppMapping* m) {
  if (m->map_base != nullptr) munmap(m->map_base, m->map_len);
  *m = AppMapping{};
}

}  // namespace burst::burstd
