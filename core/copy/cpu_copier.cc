#include <cstring>

#include "core/copy/copy_engine.h"

namespace burst::core {

namespace {
uint32_t round_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v && p < (1u << 30)) p <<= 1;
  return p;
}
}  // namespace

CopyEngine::CopyEngine(CopyKind kind, uint32_t ring_entries)
    : kind_(kind),
      ring_(round_pow2(ring_entries < 2 ? 2 : ring_entries)),
      mask_(static_cast<uint32_t>(ring_.size() - 1)) {
  // Without DSA support compiled in, a kDsa engine runs on the CPU path.
  if (kind_ == CopyKind::kDsa) kind_ = CopyKind::kCpu;
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
  completed_ = done;
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
