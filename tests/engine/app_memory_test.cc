// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// burstd's classification of application memory (daemon/burstd/app_memory.h),
// through the descriptors a client hands over (its own /proc/self/maps, and the
// file behind a shared mapping): shared file mappings of a child process
// (memfd, MAP_SHARED|MAP_ANONYMOUS, /dev/shm, hugetlbfs) whose file came with
// the request are mapped into this process and coherent with the child;
// anything else (no file, another file) is cross-memory; bad ranges are errors;
// once the child exec'd, nothing is reachable.
#include "daemon/burstd/app_memory.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/engine/child_process.h"

namespace burst::test {
namespace {

using burstd::AppMapping;
using burstd::map_app_range;
using burstd::unmap_app_range;

constexpr size_t kMiB = 1u << 20;

uint8_t* map_or_throw(size_t len, int prot, int flags, int fd, off_t off, void* at = nullptr) {
  void* p = mmap(at, len, prot, flags, fd, off);
  if (p == MAP_FAILED) throw std::runtime_error("mmap");
  return static_cast<uint8_t*>(p);
}

// The file mapped at `addr` in the child (what the provider sends with REG_MR;
// the test, as root, opens it through the child's map_files), -1 when none.
int backing_file(pid_t pid, uint64_t addr, bool writable) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/maps", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return -1;
  char line[4352];
  int fd = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    unsigned long long a = 0, b = 0;
    if (std::sscanf(line, "%llx-%llx", &a, &b) != 2 || addr < a || addr >= b) continue;
    char file[96];
    std::snprintf(file, sizeof(file), "/proc/%d/map_files/%llx-%llx", static_cast<int>(pid), a, b);
    fd = open(file, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    break;
  }
  std::fclose(f);
  return fd;
}

// map_app_range as burstd calls it for REG_MR: the child's own maps descriptor
// and, unless `send_file` is false, the file behind the range.
core::Status map_range(const ChildProcess& child, uint64_t addr, uint64_t len, bool writable,
                       AppMapping* m, bool send_file = true) {
  const int maps = child.maps_fd();
  const int file = send_file ? backing_file(child.pid(), addr, writable) : -1;
  const core::Status st = map_app_range(maps, file, addr, len, writable, m);
  close(maps);
  if (file >= 0) close(file);
  return st;
}

// Writes through the burstd mapping show in the child, and the child's bytes
// show through the mapping.
void expect_coherent(const ChildProcess& child, uint64_t addr, const AppMapping& m, size_t len) {
  ASSERT_EQ(m.mode, AppMapping::Mode::kZeroCopy);
  ASSERT_NE(m.local, nullptr);
  std::vector<uint8_t> mine(len);
  for (size_t i = 0; i < len; ++i) mine[i] = static_cast<uint8_t>(i * 13 + 1);
  std::memcpy(m.local, mine.data(), len);
  EXPECT_EQ(child.bytes(addr, len), mine) << "burstd's writes are not visible in the child";
  std::vector<uint8_t> theirs(len, 0xC3);
  ASSERT_TRUE(child.write(addr, theirs.data(), len));
  EXPECT_EQ(std::memcmp(m.local, theirs.data(), len), 0) << "the child's writes are not visible";
}

TEST(AppMemory, MemfdSharedIsZeroCopy) {
  ChildProcess child([] {
    const int fd = memfd_create("burst-test", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, 4 * kMiB) != 0) throw std::runtime_error("memfd");
    uint8_t* p = map_or_throw(4 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    std::memset(p, 0x11, 4 * kMiB);
    // A second mapping of the same file at file offset 1 MiB.
    uint8_t* q = map_or_throw(kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, kMiB);
    return ChildProcess::Values{reinterpret_cast<uint64_t>(p), reinterpret_cast<uint64_t>(q)};
  });
  const uint64_t p = child.value(0), q = child.value(1);
  AppMapping m;
  ASSERT_TRUE(map_range(child, p + 100, 5000, true, &m).ok());
  ASSERT_EQ(m.mode, AppMapping::Mode::kZeroCopy);
  EXPECT_EQ(m.local[0], 0x11);
  EXPECT_NE(m.map_base, nullptr);
  EXPECT_GE(m.map_len, 5100u);
  EXPECT_EQ(m.map_len % 4096, 0u);
  expect_coherent(child, p + 100, m, 5000);
  unmap_app_range(&m);
  EXPECT_EQ(m.map_base, nullptr);
  EXPECT_EQ(m.mode, AppMapping::Mode::kCrossMemory);

  // Through the offset mapping: the right file pages (q + 8 == p + 1 MiB + 8).
  ASSERT_TRUE(map_range(child, q + 8, 64, true, &m).ok());
  ASSERT_EQ(m.mode, AppMapping::Mode::kZeroCopy);
  std::memset(m.local, 0x99, 64);
  EXPECT_EQ(child.bytes(p + kMiB + 8, 64), std::vector<uint8_t>(64, 0x99));
  unmap_app_range(&m);

  // Read-only registration of a writable mapping: zero-copy, PROT_READ.
  ASSERT_TRUE(map_range(child, p, 4 * kMiB, false, &m).ok());
  EXPECT_EQ(m.mode, AppMapping::Mode::kZeroCopy);
  EXPECT_EQ(m.map_len, 4 * kMiB);
  unmap_app_range(&m);

  // Without the file, or with a file that is not the one mapped there, or
  // opened read-only for a writable MR: cross-memory, nothing mapped.
  ASSERT_TRUE(map_range(child, p + 100, 5000, true, &m, /*send_file=*/false).ok());
  EXPECT_EQ(m.mode, AppMapping::Mode::kCrossMemory);
  const int other = memfd_create("burst-other", MFD_CLOEXEC);
  ASSERT_GE(other, 0);
  ASSERT_EQ(ftruncate(other, 4 * kMiB), 0);
  const int maps = child.maps_fd();
  ASSERT_TRUE(map_app_range(maps, other, p + 100, 5000, true, &m).ok());
  EXPECT_EQ(m.mode, AppMapping::Mode::kCrossMemory);
  const int ro = backing_file(child.pid(), p, false);
  ASSERT_GE(ro, 0);
  ASSERT_TRUE(map_app_range(maps, ro, p + 100, 5000, true, &m).ok());
  EXPECT_EQ(m.mode, AppMapping::Mode::kCrossMemory);
  ASSERT_TRUE(map_app_range(maps, ro, p + 100, 5000, false, &m).ok());
  EXPECT_EQ(m.mode, AppMapping::Mode::kZeroCopy);
  unmap_app_range(&m);
  close(ro);
  close(other);
  close(maps);
}

TEST(AppMemory, SharedAnonymousAndDevShmAreZeroCopy) {
  const std::string shm = "/dev/shm/burst-app-memory-test-" + std::to_string(getpid());
  ChildProcess child([&shm] {
    uint8_t* a = map_or_throw(kMiB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    const int fd = open(shm.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, kMiB) != 0) throw std::runtime_error("/dev/shm");
    uint8_t* s = map_or_throw(kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return ChildProcess::Values{reinterpret_cast<uint64_t>(a), reinterpret_cast<uint64_t>(s)};
  });
  unlink(shm.c_str());
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(i == 0 ? "MAP_SHARED|MAP_ANONYMOUS" : "/dev/shm file");
    AppMapping m;
    ASSERT_TRUE(map_range(child, child.value(i) + 4096 * 3 + 17, 70000, true, &m).ok());
    expect_coherent(child, child.value(i) + 4096 * 3 + 17, m, 70000);
    unmap_app_range(&m);
  }
}

TEST(AppMemory, HugetlbMemfdIsZeroCopy) {
  const int probe = memfd_create("burst-probe", MFD_HUGETLB | MFD_CLOEXEC);
  if (probe < 0) GTEST_SKIP() << "no hugetlbfs memfd";
  void* huge = MAP_FAILED;
  if (ftruncate(probe, 2 * kMiB) == 0) {
    huge = mmap(nullptr, 2 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, probe, 0);
  }
  const bool ok = huge != MAP_FAILED;
  if (ok) munmap(huge, 2 * kMiB);
  close(probe);
  if (!ok) GTEST_SKIP() << "no free 2 MiB huge page";
  ChildProcess child([] {
    const int fd = memfd_create("burst-huge", MFD_HUGETLB | MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, 2 * kMiB) != 0) throw std::runtime_error("memfd");
    uint8_t* p = map_or_throw(2 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    std::memset(p, 0x22, 2 * kMiB);
    return ChildProcess::Values{reinterpret_cast<uint64_t>(p)};
  });
  AppMapping m;
  const core::Status map_status =
      map_range(child, child.value(0) + 12345, 100000, true, &m);
  ASSERT_TRUE(map_status.ok());
  EXPECT_EQ(m.map_len, 2 * kMiB);  // whole huge pages
  expect_coherent(child, child.value(0) + 12345, m, 100000);
  unmap_app_range(&m);
}

TEST(AppMemory, PrivateMemoryIsCrossMemory) {
  ChildProcess child([] {
    auto* heap = static_cast<uint8_t*>(std::malloc(300000));
    if (heap == nullptr) throw std::runtime_error("malloc");
    std::memset(heap, 1, 300000);
    const int fd = memfd_create("burst-private", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, kMiB) != 0) throw std::runtime_error("memfd");
    uint8_t* priv = map_or_throw(kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    uint8_t* anon = map_or_throw(kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return ChildProcess::Values{reinterpret_cast<uint64_t>(heap), reinterpret_cast<uint64_t>(priv),
                                reinterpret_cast<uint64_t>(anon)};
  });
  for (int i = 0; i < 3; ++i) {
    AppMapping m;
    ASSERT_TRUE(map_range(child, child.value(i), 4096, true, &m).ok()) << i;
    EXPECT_EQ(m.mode, AppMapping::Mode::kCrossMemory) << i;
    EXPECT_EQ(m.map_base, nullptr);
    EXPECT_EQ(m.local, nullptr);
    unmap_app_range(&m);  // nothing to unmap
  }
}

TEST(AppMemory, ErrorsAndEdges) {
  ChildProcess child([] {
    // [rw shared memfd 1 MiB][hole 64 KiB][read-only private 64 KiB]; the memfd
    // file is 1 MiB but mapped 2 MiB long (the second MiB is past its end).
    uint8_t* area = map_or_throw(4 * kMiB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    const int fd = memfd_create("burst-edges", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, kMiB) != 0) throw std::runtime_error("memfd");
    map_or_throw(2 * kMiB, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0, area);
    munmap(area + 2 * kMiB, 65536);
    map_or_throw(65536, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0,
                 area + 2 * kMiB + 65536);
    return ChildProcess::Values{reinterpret_cast<uint64_t>(area)};
  });
  const uint64_t area = child.value(0);
  AppMapping m;
  // Unmapped.
  EXPECT_EQ(map_range(child, 0x1000, 16, true, &m).errc(), core::Errc::kInvalid);
  EXPECT_EQ(map_range(child, area + 2 * kMiB + 8, 16, false, &m).errc(),
            core::Errc::kInvalid);
  // Running from mapped memory into the hole.
  EXPECT_EQ(map_range(child, area + 2 * kMiB - 100, 200, false, &m).errc(),
            core::Errc::kInvalid);
  // Wraps.
  EXPECT_EQ(map_range(child, UINT64_MAX - 10, 100, false, &m).errc(),
            core::Errc::kInvalid);
  // Read-only memory registered writable; readable registration is fine.
  const uint64_t ro = area + 2 * kMiB + 65536;
  EXPECT_EQ(map_range(child, ro, 100, true, &m).errc(), core::Errc::kPermission);
  ASSERT_TRUE(map_range(child, ro, 100, false, &m).ok());
  EXPECT_EQ(m.mode, AppMapping::Mode::kCrossMemory);
  // PROT_NONE memory.
  EXPECT_EQ(map_range(child, area + 3 * kMiB, 100, false, &m).errc(),
            core::Errc::kPermission);
  // The part of the shared mapping past the end of the file: cross-memory (no
  // mapping that would SIGBUS); the part inside it: zero-copy.
  ASSERT_TRUE(map_range(child, area + kMiB + 4096, 100, true, &m).ok());
  EXPECT_EQ(m.mode, AppMapping::Mode::kCrossMemory);
  ASSERT_TRUE(map_range(child, area + kMiB - 4096, 4096, true, &m).ok());
  EXPECT_EQ(m.mode, AppMapping::Mode::kZeroCopy);
  unmap_app_range(&m);
  ASSERT_TRUE(map_range(child, area + kMiB - 100, 200, true, &m).ok());
  EXPECT_EQ(m.mode, AppMapping::Mode::kCrossMemory);  // straddles the end of the file
  // Length 0: legal, nothing mapped, even at an unmapped address.
  ASSERT_TRUE(map_range(child, 0x1000, 0, true, &m).ok());
  EXPECT_EQ(m.mode, AppMapping::Mode::kCrossMemory);
  EXPECT_EQ(m.map_base, nullptr);
  // No descriptor.
  EXPECT_EQ(map_app_range(-1, -1, area, 16, false, &m).errc(), core::Errc::kNotFound);
  // The child is gone: its maps read empty.
  const int maps = child.maps_fd();
  EXPECT_TRUE(burstd::address_space_alive(maps));
  child.kill_now();
  EXPECT_FALSE(burstd::address_space_alive(maps));
  EXPECT_EQ(map_app_range(maps, -1, area, 16, false, &m).errc(), core::Errc::kNotFound);
  close(maps);
}

// The descriptors a process sent stay bound to the address space they were
// opened on: after the process execs, its old maps and mem reach nothing,
// whatever the new image maps at the same addresses.
TEST(AppMemory, DescriptorsDieWithTheAddressSpace) {
  int up[2];
  ASSERT_EQ(pipe(up), 0);
  static char page[4096] __attribute__((aligned(4096)));
  std::memset(page, 0x42, sizeof(page));
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(up[1]);
    char c;
    (void)!read(up[0], &c, 1);  // until the parent took the descriptors
    execl("/bin/sleep", "sleep", "5", static_cast<char*>(nullptr));
    _exit(127);
  }
  close(up[0]);
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/maps", static_cast<int>(pid));
  // Opened here on the child's address space (the test is root); what matters
  // is the binding to that address space, not who opened it.
  const int maps = open(path, O_RDONLY | O_CLOEXEC);
  std::snprintf(path, sizeof(path), "/proc/%d/mem", static_cast<int>(pid));
  const int mem = open(path, O_RDWR | O_CLOEXEC);
  ASSERT_GE(maps, 0);
  ASSERT_GE(mem, 0);
  uint8_t got = 0;
  EXPECT_EQ(pread(mem, &got, 1, reinterpret_cast<off_t>(page)), 1);
  EXPECT_EQ(got, 0x42);
  EXPECT_TRUE(burstd::address_space_alive(maps));
  AppMapping m;
  EXPECT_TRUE(map_app_range(maps, -1, reinterpret_cast<uint64_t>(page), 4096, true, &m).ok());
  close(up[1]);  // the child execs
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = !burstd::address_space_alive(maps);
    if (!gone) usleep(10'000);
  }
  EXPECT_TRUE(gone) << "the maps of the exec'd process still read";
  EXPECT_EQ(pread(mem, &got, 1, reinterpret_cast<off_t>(page)), 0);  // nothing reachable
  EXPECT_EQ(map_app_range(maps, -1, reinterpret_cast<uint64_t>(page), 4096, true, &m).errc(),
            core::Errc::kNotFound);
  close(maps);
  close(mem);
  kill(pid, SIGKILL);
  int st;
  waitpid(pid, &st, 0);
}

// A pin of the kernel assistant is recognised by its anonymous inode's name
// before any ioctl goes to a client's file: other anonymous inodes, memfds and
// regular files are not pins, and map_pin_range refuses what the module does
// not answer for (the module itself runs only in the guest: kmod_pin.sh).
TEST(AppMemory, KmodPinRecognisedOnlyByItsName) {
  const int efd = eventfd(0, EFD_CLOEXEC);  // "anon_inode:[eventfd]"
  const int mfd = memfd_create("anon_inode:[burst-pin]", MFD_CLOEXEC);
  ASSERT_GE(efd, 0);
  ASSERT_GE(mfd, 0);
  EXPECT_FALSE(burstd::is_kmod_pin(efd));
  EXPECT_FALSE(burstd::is_kmod_pin(mfd));
  EXPECT_FALSE(burstd::is_kmod_pin(-1));
  AppMapping m;
  EXPECT_EQ(burstd::map_pin_range(efd, getpid(), 4096, 4096, false, &m).errc(),
            core::Errc::kInvalid);
  EXPECT_EQ(m.mode, AppMapping::Mode::kCrossMemory);
  EXPECT_EQ(m.map_base, nullptr);
  close(efd);
  close(mfd);
}

}  // namespace
}  // namespace burst::test
