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

uint64_t CopyEngine::submit(void* dst, const void* src, uint32_t len) {
  if (submitted_ - completed_ >= ring_.size()) return 0;
  ring_[submitted_ & mask_] = Desc{dst, src, len};
  return ++submitted_;
}

void CopyEngine::run_cpu() {
  while (completed_ != submitted_) {
    const Desc& d = ring_[completed_ & mask_];
    if (d.len != 0) std::memcpy(d.dst, d.src, d.len);
    bytes_ += d.len;
    ++completed_;
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
