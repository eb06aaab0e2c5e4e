// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/copy/copy_engine.h"

namespace burst::core {

namespace {
uint32_t round_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v && p < (1u << 30)) p <<= 1;
  return p;
}
// Bytes per MemSpaces::writev call, well below the kernel's MAX_RW_COUNT.
constexpr size_t kMaxCallBytes = size_t{1} << 30;
}  // namespace

CopyEngine::CopyEngine(CopyKind kind, uint32_t ring_entries)
    : kind_(kind),
      ring_(round_pow2(ring_entries < 2 ? 2 : ring_entries)),
      mask_(static_cast<uint32_t>(ring_.size() - 1)),
      space_q_(ring_.size()),
      space_cur_(ring_.size()),
      space_rest_(ring_.size()),
      iov_local_(MemSpaces::kMaxIov),
      iov_remote_(MemSpaces::kMaxIov) {
  // Without DSA support compiled in, a kDsa engine runs on the CPU path.
  if (kind_ == CopyKind::kDsa) kind_ = CopyKind::kCpu;
}

uint64_t CopyEngine::submit_space(void* dst, const void* src, uint32_t len, uint32_t space,
                                  uint64_t tag) {
  // The caller checked the ring; space_q_ has as many entries as the ring.
  ring_[submitted_ & mask_] = Desc{nullptr, nullptr, 0};
  space_q_[space_n_++] = SpaceDesc{dst, src, len, space, tag};
  return ++submitted_;
}

void CopyEngine::run_cpu() {
  uint64_t done = completed_;
  const uint64_t end = submitted_;
  if (done == end) return;
  uint64_t bytes = 0;
  Desc* ring = ring_.data();
  for (; done != end; ++done) {
    const Desc& d = ring[done & mask_];
    if (d.len != 0) std::memcpy(d.dst, d.src, d.len);
    bytes += d.len;
  }
  bytes_ += bytes;
  if (space_n_ != 0) [[unlikely]] {
    run_spaces();
  }
  completed_ = done;
}

// Groups the copies into other spaces by space, keeping submission order within
// each space, and writes each group with as few system calls as possible.
void CopyEngine::run_spaces() {
  uint32_t* cur = space_cur_.data();
  uint32_t* rest = space_rest_.data();
  uint32_t n = space_n_;
  for (uint32_t i = 0; i < n; ++i) cur[i] = i;
  while (n != 0) {
    const uint32_t space = space_q_[cur[0]].space;
    uint32_t same = 0;
    uint32_t other = 0;
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t q = cur[i];
      if (space_q_[q].space == space) {
        cur[same++] = q;  // same <= i: compacts in place
      } else {
        rest[other++] = q;
      }
    }
    write_batch(space, cur, same);
    std::swap(cur, rest);
    n = other;
  }
  space_n_ = 0;
}

void CopyEngine::write_batch(uint32_t space, const uint32_t* descs, uint32_t n) {
  uint32_t i = 0;
  while (i < n) {
    uint32_t k = 0;
    size_t total = 0;
    while (i + k < n && k < MemSpaces::kMaxIov) {
      const SpaceDesc& d = space_q_[descs[i + k]];
      if (k != 0 && total + d.len > kMaxCallBytes) break;
      iov_local_[k] = iovec{const_cast<void*>(d.src), d.len};
      iov_remote_[k] = iovec{d.dst, d.len};
      total += d.len;
      ++k;
    }
    ssize_t got;
    if (spaces_ != nullptr) {
      got = spaces_->writev(space, iov_local_.data(), iov_remote_.data(), k);
    } else {
      errno = ESRCH;
      got = -1;
    }
    ++space_calls_;
    if (got >= 0 && static_cast<size_t>(got) == total) {
      bytes_ += total;
      i += k;
      continue;
    }
    if (got < 0 && errno != EFAULT) {
      // The process is gone (or the space unknown): every copy left fails.
      for (; i < n; ++i) {
        ++failed_;
        failed_tags_.push_back(space_q_[descs[i]].tag);
      }
      return;
    }
    // The kernel stopped at the first element it could not transfer: the ones
    // before it are done, that one failed, the ones after it were not tried.
    size_t ok = got > 0 ? static_cast<size_t>(got) : 0;
    bytes_ += ok;
    uint32_t j = 0;
    while (j < k && iov_local_[j].iov_len <= ok) {  // zero-length elements cannot fail
      ok -= iov_local_[j].iov_len;
      ++j;
    }
    if (j == k) j = k - 1;  // defensive: a short count with every element whole
    ++failed_;
    failed_tags_.push_back(space_q_[descs[i + j]].tag);
    i += j + 1;
  }
}

uint64_t CopyEngine::poll() {
  switch (kind_) {
    case CopyKind::kCpu:
    case CopyKind::kDsa:
      run_cpu();
      break;
  }
  return completed_;
}

}  // namespace burst::core
