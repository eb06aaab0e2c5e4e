// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// core::MemSpaces against a forked child process (reads, writes, atomics, ids,
// the child's exit) and the CopyEngine's placement into other spaces (batching
// into process_vm_writev calls, order, failures reported by tag).
#include "core/mem_space.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "core/copy/copy_engine.h"
#include "core/mr.h"
#include "tests/engine/child_process.h"

namespace burst::test {
namespace {

using core::CopyEngine;
using core::CopyKind;
using core::MemSpaces;

constexpr size_t kChildBytes = 1u << 20;

// A child with kChildBytes of private anonymous memory, filled with 0x5A, and an
// unmapped page right after it. (Not PROT_NONE: /proc/PID/mem may reach a
// PROT_NONE page, as a debugger does, depending on the kernel's
// proc_mem.force_override; an MR's bounds are what keep burst away from it.)
ChildProcess::Values child_buffer() {
  auto* p = static_cast<uint8_t*>(mmap(nullptr, kChildBytes + 4096, PROT_READ | PROT_WRITE,
                                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (p == MAP_FAILED) throw std::runtime_error("mmap");
  std::memset(p, 0x5A, kChildBytes);
  munmap(p + kChildBytes, 4096);
  return {reinterpret_cast<uint64_t>(p)};
}

int self_mem() { return open("/proc/self/mem", O_RDWR | O_CLOEXEC); }

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(MemSpaces, LocalSpaceIsOwnMemory) {
  MemSpaces s;
  std::vector<uint8_t> a = pattern(100, 1), b(100, 0);
  EXPECT_EQ(s.fd(MemSpaces::kLocal), -1);
  EXPECT_TRUE(s.write(MemSpaces::kLocal, b.data(), a.data(), a.size()));
  EXPECT_EQ(a, b);
  std::vector<uint8_t> c(100, 0);
  EXPECT_TRUE(s.read(MemSpaces::kLocal, c.data(), b.data(), b.size()));
  EXPECT_EQ(a, c);
  alignas(8) uint64_t word = 10;
  uint64_t orig = 0;
  EXPECT_TRUE(s.fetch_add(MemSpaces::kLocal, &word, 5, &orig));
  EXPECT_EQ(orig, 10u);
  EXPECT_EQ(word, 15u);
  EXPECT_TRUE(s.compare_swap(MemSpaces::kLocal, &word, 15, 99, &orig));
  EXPECT_EQ(orig, 15u);
  EXPECT_EQ(word, 99u);
  EXPECT_TRUE(s.compare_swap(MemSpaces::kLocal, &word, 15, 7, &orig));  // no match
  EXPECT_EQ(orig, 99u);
  EXPECT_EQ(word, 99u);
}

TEST(MemSpaces, IdsAttachDetach) {
  MemSpaces s;
  const int fa = self_mem();
  const uint32_t a = s.attach(fa);
  const uint32_t b = s.attach(self_mem());
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(s.fd(a), fa);
  EXPECT_EQ(s.attached(), 2u);
  EXPECT_EQ(s.detach(a), fa);  // handed back to the caller
  close(fa);
  EXPECT_EQ(s.fd(a), -1);
  EXPECT_EQ(s.attached(), 1u);
  uint8_t byte = 1;
  EXPECT_FALSE(s.write(a, &byte, &byte, 1));  // detached: fails cleanly
  EXPECT_TRUE(s.write(b, &byte, &byte, 1));   // (our own process through the descriptor)
  EXPECT_EQ(s.detach(a), -1);                 // twice: ignored
  EXPECT_EQ(s.detach(12345), -1);             // never attached: ignored
  EXPECT_EQ(s.fd(0x7FFFF), -1);
  EXPECT_EQ(s.attach(-1), 0u);
}

TEST(MemSpaces, ADetachedIdNeverNamesANewSpace) {
  MemSpaces s;
  // Attach and detach until every entry was used once: the old ids stay dead.
  std::vector<uint32_t> old;
  for (uint32_t i = 0; i < MemSpaces::kMaxSpaces + 10; ++i) {
    const uint32_t id = s.attach(self_mem());
    ASSERT_NE(id, 0u);
    old.push_back(id);
    close(s.detach(id));
  }
  const uint32_t live = s.attach(self_mem());
  for (uint32_t id : old) {
    EXPECT_NE(id, live);
    EXPECT_EQ(s.fd(id), -1);
  }
}

TEST(MemSpaces, TableFull) {
  rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < MemSpaces::kMaxSpaces + 64) {
    rlimit more = rl;
    more.rlim_cur = std::max<rlim_t>(rl.rlim_cur, MemSpaces::kMaxSpaces + 64);
    if (more.rlim_max < more.rlim_cur) more.rlim_max = more.rlim_cur;
    if (setrlimit(RLIMIT_NOFILE, &more) != 0) GTEST_SKIP() << "needs 4200 file descriptors";
  }
  {
    MemSpaces s;
    for (uint32_t i = 1; i < MemSpaces::kMaxSpaces; ++i) ASSERT_NE(s.attach(self_mem()), 0u) << i;
    EXPECT_EQ(s.attach(self_mem()), 0u);  // full (the descriptor is closed)
    EXPECT_EQ(s.attached(), MemSpaces::kMaxSpaces - 1);
  }
  setrlimit(RLIMIT_NOFILE, &rl);
}

TEST(MemSpaces, ChildMemoryReadWriteAtomicsThenExit) {
  ChildProcess child(child_buffer);
  MemSpaces s;
  const uint32_t id = s.attach(child.mem_fd());
  ASSERT_NE(id, 0u);
  EXPECT_GE(s.fd(id), 0);
  uint8_t* base = child.addr();

  // The child's bytes, through the space.
  std::vector<uint8_t> got(4096);
  ASSERT_TRUE(s.read(id, got.data(), base, got.size()));
  EXPECT_EQ(got, std::vector<uint8_t>(4096, 0x5A));
  const std::vector<uint8_t> pat = pattern(300000, 7);
  ASSERT_TRUE(s.write(id, base + 1000, pat.data(), pat.size()));
  EXPECT_EQ(child.bytes(reinterpret_cast<uint64_t>(base) + 1000, pat.size()), pat);
  std::vector<uint8_t> back(pat.size());
  ASSERT_TRUE(s.read(id, back.data(), base + 1000, back.size()));
  EXPECT_EQ(back, pat);

  // Vectored: three pieces in one call.
  uint8_t a[10], b[20], c[30];
  std::memset(a, 1, sizeof(a));
  std::memset(b, 2, sizeof(b));
  std::memset(c, 3, sizeof(c));
  iovec l[3] = {{a, 10}, {b, 20}, {c, 30}};
  iovec r[3] = {{base + 500000, 10}, {base + 600000, 20}, {base + 700000, 30}};
  EXPECT_EQ(s.writev(id, l, r, 3), 60);
  EXPECT_EQ(child.bytes(reinterpret_cast<uint64_t>(base) + 600000, 20),
            std::vector<uint8_t>(20, 2));

  // Atomics.
  const uint64_t w = reinterpret_cast<uint64_t>(base) + 8 * 1000;
  uint64_t v = 40;
  ASSERT_TRUE(child.write(w, &v, 8));
  uint64_t orig = 0;
  ASSERT_TRUE(s.fetch_add(id, reinterpret_cast<void*>(w), 2, &orig));
  EXPECT_EQ(orig, 40u);
  ASSERT_TRUE(s.compare_swap(id, reinterpret_cast<void*>(w), 42, 1000, &orig));
  EXPECT_EQ(orig, 42u);
  ASSERT_TRUE(s.compare_swap(id, reinterpret_cast<void*>(w), 42, 5, &orig));  // no match
  EXPECT_EQ(orig, 1000u);
  ASSERT_TRUE(child.read(w, &v, 8));
  EXPECT_EQ(v, 1000u);

  // Outside the child's memory: the unmapped page, an unmapped address, a
  // range running into the hole.
  uint8_t x = 0;
  EXPECT_FALSE(s.read(id, &x, base + kChildBytes, 1));
  EXPECT_FALSE(s.write(id, base + kChildBytes - 10, pat.data(), 20));  // short transfer
  EXPECT_FALSE(s.write(id, reinterpret_cast<void*>(0x1000), &x, 1));
  EXPECT_FALSE(s.fetch_add(id, base + kChildBytes, 1, &orig));
  EXPECT_FALSE(s.compare_swap(id, reinterpret_cast<void*>(0x1000), 0, 1, &orig));

  // The child goes away: every access fails, nothing crashes.
  child.kill_now();
  EXPECT_FALSE(s.read(id, got.data(), base, 16));
  EXPECT_FALSE(s.write(id, base, pat.data(), 16));
  EXPECT_FALSE(s.fetch_add(id, reinterpret_cast<void*>(w), 1, &orig));
  EXPECT_FALSE(s.compare_swap(id, reinterpret_cast<void*>(w), 1000, 1, &orig));
  EXPECT_LT(s.writev(id, l, r, 3), 0);
  close(s.detach(id));
  EXPECT_FALSE(s.read(id, got.data(), base, 16));
}

// Runs of pieces contiguous in the child move in one call through the bounce
// buffer (also runs longer than it, and a run that ends in the unmapped page:
// the prefix is reported).
TEST(MemSpaces, ContiguousPiecesBothWays) {
  ChildProcess child(child_buffer);
  MemSpaces s;
  const uint32_t id = s.attach(child.mem_fd());
  ASSERT_NE(id, 0u);
  uint8_t* base = child.addr();
  constexpr size_t kPiece = 1000, kPieces = 400;  // 400 KB: more than one bounce run
  const std::vector<uint8_t> pat = pattern(kPiece * kPieces, 11);
  std::vector<iovec> l(kPieces), r(kPieces);
  for (size_t i = 0; i < kPieces; ++i) {
    l[i] = iovec{const_cast<uint8_t*>(pat.data()) + i * kPiece, kPiece};
    r[i] = iovec{base + 4096 + i * kPiece, kPiece};
  }
  ASSERT_EQ(s.writev(id, l.data(), r.data(), kPieces), static_cast<ssize_t>(pat.size()));
  EXPECT_EQ(child.bytes(reinterpret_cast<uint64_t>(base) + 4096, pat.size()), pat);
  std::vector<uint8_t> back(pat.size(), 0);
  for (size_t i = 0; i < kPieces; ++i) l[i] = iovec{back.data() + i * kPiece, kPiece};
  ASSERT_EQ(s.readv(id, l.data(), r.data(), kPieces), static_cast<ssize_t>(pat.size()));
  EXPECT_EQ(back, pat);
  // Four pieces, the last two past the end of the child's memory: 2 whole pieces
  // (and the part of the third that is mapped, if any) are reported.
  uint8_t* end = base + kChildBytes;
  iovec l2[4], r2[4];
  for (int i = 0; i < 4; ++i) {
    l2[i] = iovec{back.data() + i * 512, 512};
    r2[i] = iovec{end - 1024 + i * 512, 512};
  }
  EXPECT_EQ(s.readv(id, l2, r2, 4), 1024);
  EXPECT_EQ(s.writev(id, l2, r2, 4), 1024);
  close(s.detach(id));
}

// Atomics from several threads on one word of the child: burst's own atomics
// are atomic among themselves.
TEST(MemSpaces, ChildAtomicsFromSeveralThreads) {
  ChildProcess child(child_buffer);
  MemSpaces s;
  const uint32_t id = s.attach(child.mem_fd());
  ASSERT_NE(id, 0u);
  void* w = child.addr() + 64;
  uint64_t zero = 0;
  ASSERT_TRUE(child.write(reinterpret_cast<uint64_t>(w), &zero, 8));
  constexpr int kThreads = 4, kAdds = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      uint64_t orig;
      for (int i = 0; i < kAdds; ++i) ASSERT_TRUE(s.fetch_add(id, w, 1, &orig));
    });
  }
  for (auto& t : threads) t.join();
  uint64_t v = 0;
  ASSERT_TRUE(child.read(reinterpret_cast<uint64_t>(w), &v, 8));
  EXPECT_EQ(v, uint64_t{kThreads} * kAdds);
}

// MrTable: an MR in another space needs that space attached; every lookup
// reports the space of the MR it found.
TEST(MrTableSpaces, RegistrationAndLookupsCarryTheSpace) {
  ChildProcess child(child_buffer);
  core::MrTable t(16, 4);
  const uint32_t pd = t.alloc_pd();
  uint8_t* base = child.addr();
  const uint64_t iova = reinterpret_cast<uint64_t>(base);
  uint32_t lkey = 0, rkey = 0;
  EXPECT_EQ(t.reg_mr(pd, base, iova, 4096, core::kAccessLocalWrite | core::kAccessRemoteWrite,
                     &lkey, &rkey, 77)
                .errc(),
            core::Errc::kInvalid);  // not attached
  const uint32_t id = t.spaces().attach(child.mem_fd());
  ASSERT_NE(id, 0u);
  ASSERT_TRUE(t.reg_mr(pd, base, iova, 4096, core::kAccessLocalWrite | core::kAccessRemoteWrite,
                       &lkey, &rkey, id)
                  .ok());
  std::vector<uint8_t> own(64);
  uint32_t own_l = 0, own_r = 0;
  ASSERT_TRUE(t.reg_mr(pd, own.data(), 0x1000, 64, core::kAccessLocalWrite, &own_l, &own_r).ok());

  uint32_t space = 12345;
  core::WcStatus err;
  EXPECT_EQ(t.local(pd, lkey, iova + 10, 10, core::kAccessLocalWrite, &err, &space), base + 10);
  EXPECT_EQ(space, id);
  space = 12345;
  EXPECT_EQ(t.remote(pd, rkey, iova + 100, 8, core::kAccessRemoteWrite, &space), base + 100);
  EXPECT_EQ(space, id);
  core::MrRef ref;
  space = 12345;
  EXPECT_NE(t.remote_ref(pd, rkey, iova, 4096, core::kAccessRemoteWrite, &ref, &space), nullptr);
  EXPECT_EQ(space, id);
  EXPECT_TRUE(core::MrTable::still_valid(ref));
  space = 12345;
  EXPECT_NE(t.local_ref(pd, lkey, iova, 16, 0, &err, &ref, &space), nullptr);
  EXPECT_EQ(space, id);
  EXPECT_EQ(t.local(pd, own_l, 0x1000, 64, 0, &err, &space), own.data());
  EXPECT_EQ(space, MemSpaces::kLocal);
  // A failed lookup leaves *space alone.
  space = 12345;
  EXPECT_EQ(t.local(pd, lkey, iova + 4090, 10, 0, &err, &space), nullptr);
  EXPECT_EQ(space, 12345u);
}

// Copies into two child processes and local memory, interleaved: every byte
// lands, in submission order within a space (later copies to the same bytes
// win), with few system calls.
TEST(CopyEngineSpaces, BatchesPerSpaceInOrder) {
  ChildProcess c1(child_buffer), c2(child_buffer);
  MemSpaces spaces;
  const uint32_t s1 = spaces.attach(c1.mem_fd()), s2 = spaces.attach(c2.mem_fd());
  ASSERT_NE(s1, 0u);
  ASSERT_NE(s2, 0u);
  CopyEngine ce(CopyKind::kCpu, 4096);
  ce.bind_spaces(&spaces);
  const std::vector<uint8_t> src = pattern(3000 * 200, 11);
  std::vector<uint8_t> local(3000 * 100, 0);
  std::vector<uint8_t> want1(kChildBytes, 0x5A), want2(kChildBytes, 0x5A);
  uint64_t last = 0;
  for (uint32_t i = 0; i < 3000; ++i) {
    const uint8_t* s = src.data() + size_t{i} * 200;
    switch (i % 3) {
      case 0: {  // child 1; every 4th copy overwrites the previous one's bytes
        const size_t off = size_t{i % 12 == 0 ? i - (i ? 3 : 0) : i} * 300;
        last = ce.submit(c1.addr() + off, s, 200, s1, i);
        std::memcpy(want1.data() + off, s, 200);
        break;
      }
      case 1:
        last = ce.submit(c2.addr() + size_t{i} * 300, s, 150, s2, i);
        std::memcpy(want2.data() + size_t{i} * 300, s, 150);
        break;
      default:
        last = ce.submit(local.data() + size_t{i} * 100, s, 100);
        break;
    }
    ASSERT_NE(last, 0u);
  }
  EXPECT_EQ(c1.bytes(reinterpret_cast<uint64_t>(c1.addr()), 64), std::vector<uint8_t>(64, 0x5A))
      << "nothing runs before poll()";
  EXPECT_EQ(ce.poll(), last);
  EXPECT_TRUE(ce.idle());
  EXPECT_EQ(ce.failed(), 0u);
  EXPECT_TRUE(ce.failed_tags().empty());
  // 1000 copies per child: one process_vm_writev each (up to 1024 iovecs).
  EXPECT_EQ(ce.space_calls(), 2u);
  EXPECT_EQ(c1.bytes(reinterpret_cast<uint64_t>(c1.addr()), kChildBytes), want1);
  EXPECT_EQ(c2.bytes(reinterpret_cast<uint64_t>(c2.addr()), kChildBytes), want2);
  for (uint32_t i = 2; i < 3000; i += 3) {
    ASSERT_EQ(std::memcmp(local.data() + size_t{i} * 100, src.data() + size_t{i} * 200, 100), 0);
  }
  EXPECT_EQ(ce.bytes_copied(), 1000u * 200 + 1000u * 150 + 1000u * 100);
}

TEST(CopyEngineSpaces, MoreThanIovMaxSplitsCalls) {
  ChildProcess c(child_buffer);
  MemSpaces spaces;
  const uint32_t id = spaces.attach(c.mem_fd());
  CopyEngine ce(CopyKind::kCpu, 4096);
  ce.bind_spaces(&spaces);
  const std::vector<uint8_t> src = pattern(2500 * 64, 5);
  for (uint32_t i = 0; i < 2500; ++i) {
    ASSERT_NE(ce.submit(c.addr() + size_t{i} * 64, src.data() + size_t{i} * 64, 64, id, i), 0u);
  }
  ce.drain();
  EXPECT_EQ(ce.space_calls(), 3u);  // 1024 + 1024 + 452
  EXPECT_EQ(c.bytes(reinterpret_cast<uint64_t>(c.addr()), src.size()), src);
}

// A copy into an unmapped range fails alone: it is reported with its tag, the
// copies after it in the same call still land.
TEST(CopyEngineSpaces, FailedCopyIsReportedByTag) {
  ChildProcess c(child_buffer);
  MemSpaces spaces;
  const uint32_t id = spaces.attach(c.mem_fd());
  CopyEngine ce(CopyKind::kCpu, 64);
  ce.bind_spaces(&spaces);
  const std::vector<uint8_t> src = pattern(4096, 9);
  uint8_t* base = c.addr();
  ce.submit(base, src.data(), 100, id, 1);
  ce.submit(base + kChildBytes - 50, src.data(), 100, id, 2);  // runs into the guard page
  ce.submit(base + 200, src.data() + 100, 100, id, 3);
  ce.submit(reinterpret_cast<void*>(0x1000), src.data(), 10, id, 4);  // unmapped
  ce.submit(base + 400, src.data() + 200, 100, id, 5);
  const uint64_t last = ce.submit(base + 600, src.data() + 300, 100, 0xBAD, 6);  // unknown space
  EXPECT_EQ(ce.poll(), last);
  EXPECT_TRUE(ce.idle());
  EXPECT_EQ(ce.failed(), 3u);
  ASSERT_EQ(ce.failed_tags().size(), 3u);
  EXPECT_EQ(ce.failed_tags()[0], 2u);
  EXPECT_EQ(ce.failed_tags()[1], 4u);
  EXPECT_EQ(ce.failed_tags()[2], 6u);
  const uint64_t b = reinterpret_cast<uint64_t>(base);
  EXPECT_EQ(c.bytes(b, 100), std::vector<uint8_t>(src.begin(), src.begin() + 100));
  EXPECT_EQ(c.bytes(b + 200, 100), std::vector<uint8_t>(src.begin() + 100, src.begin() + 200));
  EXPECT_EQ(c.bytes(b + 400, 100), std::vector<uint8_t>(src.begin() + 200, src.begin() + 300));
  ce.clear_failed_tags();
  EXPECT_TRUE(ce.failed_tags().empty());
}

TEST(CopyEngineSpaces, ChildGoneFailsEveryCopy) {
  ChildProcess c(child_buffer);
  MemSpaces spaces;
  const uint32_t id = spaces.attach(c.mem_fd());
  CopyEngine ce(CopyKind::kCpu, 64);
  ce.bind_spaces(&spaces);
  std::vector<uint8_t> src(64, 1), local(64, 0);
  c.kill_now();
  for (uint64_t i = 0; i < 10; ++i) ce.submit(c.addr() + i * 64, src.data(), 64, id, 100 + i);
  ce.submit(local.data(), src.data(), 64);
  ce.drain();
  EXPECT_TRUE(ce.idle());
  EXPECT_EQ(ce.failed(), 10u);
  ASSERT_EQ(ce.failed_tags().size(), 10u);
  for (uint64_t i = 0; i < 10; ++i) EXPECT_EQ(ce.failed_tags()[i], 100 + i);
  EXPECT_EQ(local, src);            // local copies are unaffected
  EXPECT_EQ(ce.space_calls(), 1u);  // ESRCH: the rest of the batch is not retried
}

TEST(CopyEngineSpaces, UnboundEngineFailsSpaceCopies) {
  CopyEngine ce(CopyKind::kCpu, 8);
  uint8_t a = 1, b = 0;
  ce.submit(&b, &a, 1, 5, 42);
  ce.drain();
  EXPECT_EQ(ce.failed(), 1u);
  EXPECT_EQ(b, 0);
}

}  // namespace
}  // namespace burst::test
