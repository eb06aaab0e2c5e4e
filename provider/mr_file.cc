// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// The file behind a shared mapping, for zero-copy registrations
// (daemon/burstd/app_memory.h, docs/security.md). burstd maps application
// memory only from a file the application itself hands over; this finds that
// file for [addr, addr + len), with this process's own rights:
//   1. /proc/self/map_files/START-END (needs CAP_SYS_ADMIN or
//      CAP_CHECKPOINT_RESTORE: works for privileged applications, and for
//      MAP_SHARED|MAP_ANONYMOUS memory it is the only way);
//   2. an open descriptor of this process on the same file (device and inode),
//      opened with enough access: the memfd or /dev/shm file the application
//      still holds;
//   3. the mapping's path, when the file still has one (not "(deleted)").
// Anything else is pinned by the kernel assistant when /dev/burst opens
// (kmod/, docs/kmod.md "Pinned memory"): the pin's descriptor goes to burstd,
// which maps the pinned pages. Without the module, or with BURST_KMOD_PIN=0,
// no file: burstd reaches the memory through this process's /proc/self/mem
// (cross-memory, one copy per access).
#include <dirent.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "abi/burst_kmod.h"
#include "provider/provider.h"

namespace burst::provider {
namespace {

struct SelfMapping {
  uint64_t start = 0;
  uint64_t end = 0;
  char perms[5] = {};
  unsigned dev_major = 0;
  unsigned dev_minor = 0;
  uint64_t inode = 0;
  char path[512] = {};
};

// The mapping of this process that holds addr; false if none.
bool find_mapping(uint64_t addr, SelfMapping* out) {
  FILE* f = fopen("/proc/self/maps", "re");
  if (f == nullptr) return false;
  char line[4096 + 256];
  bool found = false;
  while (fgets(line, sizeof(line), f) != nullptr) {
    const size_t n = strlen(line);
    if (n > 0 && line[n - 1] != '\n' && !feof(f)) {
      int c;
      while ((c = fgetc(f)) != EOF && c != '\n') {
      }
    }
    SelfMapping m;
    uint64_t offset = 0;
    int used = 0;
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 "%n", &m.start, &m.end,
               m.perms, &offset, &m.dev_major, &m.dev_minor, &m.inode, &used) != 7) {
      continue;
    }
    if (addr < m.start || addr >= m.end) continue;
    const char* p = line + used;
    while (*p == ' ' || *p == '\t') ++p;
    snprintf(m.path, sizeof(m.path), "%s", p);
    const size_t pl = strlen(m.path);
    if (pl > 0 && m.path[pl - 1] == '\n') m.path[pl - 1] = '\0';
    *out = m;
    found = true;
    break;
  }
  fclose(f);
  return found;
}

bool same_file(int fd, const SelfMapping& m) {
  struct stat st;
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == m.inode &&
         major(st.st_dev) == m.dev_major && minor(st.st_dev) == m.dev_minor;
}

bool access_ok(int fd, bool writable) {
  const int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || (fl & O_PATH) != 0) return false;
  const int acc = fl & O_ACCMODE;
  return writable ? acc == O_RDWR : acc != O_WRONLY;
}

// /dev/burst, opened once per process; -1 without the module (or when
// BURST_KMOD_PIN=0 asks for the cross-memory path).
int kmod_fd() {
  static const int fd = [] {
    const char* env = getenv("BURST_KMOD_PIN");
    if (env != nullptr && strcmp(env, "0") == 0) return -1;
    return open(BURST_KMOD_DEVICE_PATH, O_RDWR | O_CLOEXEC);
  }();
  return fd;
}

}  // namespace

int memory_fd_for(const void* addr, size_t len, bool writable, int* fd) {
  *fd = shared_file_for(addr, len, writable);
  if (*fd >= 0 || len == 0 || kmod_fd() < 0) return 0;
  burst_kmod_pin pin{};
  pin.size = sizeof(pin);
  pin.flags = writable ? BURST_KMOD_PIN_WRITE : 0;
  pin.addr = reinterpret_cast<uintptr_t>(addr);
  pin.length = len;
  if (ioctl(kmod_fd(), BURST_KMOD_PIN, &pin) == 0) {
    *fd = pin.fd;
    debug_log("burst: pin %llu of %zu bytes at %p", static_cast<unsigned long long>(pin.id), len,
              addr);
    return 0;
  }
  // What an RNIC's ibv_reg_mr answers: ENOMEM beyond RLIMIT_MEMLOCK, EFAULT for
  // memory not mapped (or not writable for a writable MR). Anything else (a
  // module of another ABI): the cross-memory path.
  const int e = errno;
  debug_log("burst: BURST_KMOD_PIN of %zu bytes at %p: %s", len, addr, strerror(e));
  return e == ENOMEM || e == EFAULT ? e : 0;
}

int shared_file_for(const void* addr, size_t len, bool writable) {
  if (len == 0) return -1;
  const auto a = reinterpret_cast<uintptr_t>(addr);
  SelfMapping m;
  if (!find_mapping(a, &m) || m.perms[3] != 's' || m.inode == 0 || a + len > m.end) return -1;
  const int mode = (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC;
  char path[96];
  snprintf(path, sizeof(path), "/proc/self/map_files/%" PRIx64 "-%" PRIx64, m.start, m.end);
  int fd = open(path, mode);
  if (fd >= 0) {
    if (same_file(fd, m)) return fd;
    close(fd);
  }
  if (DIR* d = opendir("/proc/self/fd")) {
    const int self = dirfd(d);
    int found = -1;
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      const long n = strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0' || n == self) continue;
      const int cand = static_cast<int>(n);
      if (same_file(cand, m) && access_ok(cand, writable)) {
        found = fcntl(cand, F_DUPFD_CLOEXEC, 0);
        if (found >= 0) break;
      }
    }
    closedir(d);
    if (found >= 0) return found;
  }
  const size_t pl = strlen(m.path);
  static constexpr char kDeleted[] = " (deleted)";
  if (m.path[0] == '/' &&
      !(pl >= sizeof(kDeleted) - 1 && strcmp(m.path + pl - (sizeof(kDeleted) - 1), kDeleted) == 0)) {
    fd = open(m.path, mode | O_NOFOLLOW);
    if (fd >= 0) {
      if (same_file(fd, m)) return fd;
      close(fd);
    }
  }
  return -1;
}

}  // namespace burst::provider
