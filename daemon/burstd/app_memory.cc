#include "daemon/burstd/app_memory.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace burst::burstd {

namespace {

// One line of /proc/PID/maps.
struct MapsEntry {
  uint64_t start = 0;
  uint64_t end = 0;
  char perms[5] = {};  // "rw-s"
  uint64_t offset = 0;
  uint64_t inode = 0;
};

bool parse_line(const char* line, MapsEntry* e) {
  unsigned dev_major = 0, dev_minor = 0;
  return std::sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64, &e->start,
                     &e->end, e->perms, &e->offset, &dev_major, &dev_minor, &e->inode) == 7;
}

uint64_t align_down(uint64_t v, uint64_t a) { return v & ~(a - 1); }
uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) & ~(a - 1); }

// Maps [addr, addr + len) of `m` (a MAP_SHARED mapping of a file) into burstd.
// False when it cannot (the caller falls back to cross-memory).
bool map_shared(pid_t pid, const MapsEntry& m, uint64_t addr, uint64_t len, bool writable,
                AppMapping* out) {
  char path[96];
  std::snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
                static_cast<int>(pid), m.start, m.end);
  const int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return false;  // e.g. without CAP_SYS_ADMIN
  bool ok = false;
  struct stat st;
  struct statfs fs;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && fstatfs(fd, &fs) == 0) {
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
    if (first >= m.start && needed <= static_cast<uint64_t>(st.st_size)) {
      const int prot = PROT_READ | (writable ? PROT_WRITE : 0);
      void* base = mmap(nullptr, last - first, prot, MAP_SHARED, fd, static_cast<off_t>(file_off));
      if (base != MAP_FAILED) {
        out->mode = AppMapping::Mode::kZeroCopy;
        out->map_base = base;
        out->map_len = last - first;
        out->local = static_cast<uint8_t*>(base) + (addr - first);
        ok = true;
      }
    }
  }
  close(fd);
  return ok;
}

}  // namespace

core::Status map_app_range(pid_t pid, uint64_t addr, uint64_t len, bool writable, AppMapping* out) {
  *out = AppMapping{};
  if (len == 0) return core::Status::Ok();
  if (pid <= 0) return core::Errc::kNotFound;
  if (len > UINT64_MAX - addr) return core::Errc::kInvalid;
  const uint64_t end = addr + len;

  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/maps", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return core::Errc::kNotFound;
  // Walk the mappings in address order, covering [addr, end) with no gap.
  uint64_t cursor = addr;
  MapsEntry whole;  // the one mapping holding the whole range, if any
  bool in_one = false;
  bool lines = false;
  core::Status status = core::Errc::kInvalid;  // not (entirely) mapped
  char line[4096 + 256];
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    lines = true;
    const size_t n = std::strlen(line);
    if (n > 0 && line[n - 1] != '\n' && !std::feof(f)) {
      // A path longer than the buffer: drop the rest of the line.
      int c;
      while ((c = std::fgetc(f)) != EOF && c != '\n') {
      }
    }
    MapsEntry e;
    if (!parse_line(line, &e) || e.end <= cursor) continue;
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
  std::fclose(f);
  if (!lines) return core::Errc::kNotFound;  // the process exited while we read
  if (!status.ok()) return status;

  // Zero-copy: inside one shared mapping of a file (inode 0: not a file).
  if (in_one && whole.perms[3] == 's' && whole.inode != 0) {
    map_shared(pid, whole, addr, len, writable, out);
  }
  return core::Status::Ok();
}

void unmap_app_range(AppMapping* m) {
  if (m->map_base != nullptr) munmap(m->map_base, m->map_len);
  *m = AppMapping{};
}

}  // namespace burst::burstd
