// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "core/mr.h"

#include <cstddef>

namespace burst::core {

namespace {
constexpr uint32_t kKnownAccess =
    kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
constexpr uint32_t kMaxIndex = (1u << 24) - 1;
}  // namespace

MrTable::MrTable(uint32_t max_mrs, uint32_t max_pds) {
  if (max_mrs > kMaxIndex) max_mrs = kMaxIndex;
  mrs_.resize(size_t{max_mrs} + 1);
  generation_.resize(size_t{max_mrs} + 1, 0);
  free_mrs_.reserve(max_mrs);
  for (uint32_t i = max_mrs; i >= 1; --i) free_mrs_.push_back(i);
  pds_.resize(size_t{max_pds} + 1);
}

uint32_t MrTable::alloc_pd() {
  for (uint32_t i = 1; i < pds_.size(); ++i) {
    if (!pds_[i].in_use) {
      pds_[i] = Pd{true, 0};
      return i;
    }
  }
  return 0;
}

bool MrTable::pd_valid(uint32_t pd) const { return pd != 0 && pd < pds_.size() && pds_[pd].in_use; }

Status MrTable::dealloc_pd(uint32_t pd) {
  if (!pd_valid(pd)) return Errc::kNotFound;
  if (pds_[pd].refs != 0) return Errc::kBusy;
  pds_[pd].in_use = false;
  return Status::Ok();
}

Status MrTable::pd_ref(uint32_t pd) {
  if (!pd_valid(pd)) return Errc::kNotFound;
  ++pds_[pd].refs;
  return Status::Ok();
}

void MrTable::pd_unref(uint32_t pd) {
  if (pd_valid(pd) && pds_[pd].refs > 0) --pds_[pd].refs;
}

Status MrTable::reg_mr(uint32_t pd, uint8_t* host_base, uint64_t iova, uint64_t length,
                       uint32_t access, uint32_t* lkey, uint32_t* rkey, uint32_t space) {
  if (!pd_valid(pd)) return Errc::kNotFound;
  if (space != MemSpaces::kLocal && spaces_.fd(space) < 0) return Errc::kInvalid;
  if ((access & ~kKnownAccess) != 0) return Errc::kInvalid;
  // As libibverbs: remote write or atomic access needs local write.
  if ((access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 &&
      (access & kAccessLocalWrite) == 0) {
    return Errc::kInvalid;
  }
  if (host_base == nullptr && length != 0) return Errc::kInvalid;
  if (length > UINT64_MAX - iova) return Errc::kInvalid;  // iova + length must not wrap
  if (free_mrs_.empty()) return Errc::kNoMemory;
  const uint32_t index = free_mrs_.back();
  free_mrs_.pop_back();
  uint8_t gen = ++generation_[index];
  const uint32_t key = (index << 8) | gen;
  mrs_[index] = Mr{host_base, iova, length, pd, access, key, true, ++next_stamp_, space};
  ++pds_[pd].refs;
  ++mr_count_;
  *lkey = key;
  *rkey = key;
  return Status::Ok();
}

const MrTable::Mr* MrTable::find(uint32_t key) const {
  const uint32_t index = key >> 8;
  if (index == 0 || index >= mrs_.size()) return nullptr;
  const Mr& mr = mrs_[index];
  if (mr.key != key || mr.key == 0) return nullptr;
  return &mr;
}

Status MrTable::dereg_mr(uint32_t lkey) {
  const Mr* found = find(lkey);
  if (found == nullptr) return Errc::kNotFound;
  const uint32_t index = lkey >> 8;
  pd_unref(mrs_[index].pd);
  mrs_[index] = Mr{};
  mrs_[index].stamp = ++next_stamp_;
  free_mrs_.push_back(index);
  --mr_count_;
  return Status::Ok();
}

Status MrTable::invalidate_rkey(uint32_t pd, uint32_t rkey) {
  const Mr* found = find(rkey);
  if (found == nullptr || !found->valid) return Errc::kNotFound;
  if (found->pd != pd) return Errc::kPermission;
  mrs_[rkey >> 8].valid = false;
  mrs_[rkey >> 8].stamp = ++next_stamp_;
  return Status::Ok();
}

bool MrTable::in_bounds(const Mr& mr, uint64_t addr, uint64_t len) {
  if (addr < mr.iova) return false;
  const uint64_t off = addr - mr.iova;
  return len <= mr.length && off <= mr.length - len;
}

uint8_t* MrTable::local(uint32_t pd, uint32_t lkey, uint64_t addr, uint32_t len,
                        uint32_t need_access, WcStatus* err, uint32_t* space) const {
  const Mr* mr = find(lkey);
  if (mr == nullptr || !mr->valid || mr->pd != pd || (mr->access & need_access) != need_access ||
      !in_bounds(*mr, addr, len)) {
    if (err != nullptr) *err = WcStatus::kLocProtErr;
    return nullptr;
  }
  if (space != nullptr) *space = mr->space;
  return mr->host + (addr - mr->iova);
}

uint8_t* MrTable::remote(uint32_t pd, uint32_t rkey, uint64_t va, uint32_t len,
                         uint32_t need_access, uint32_t* space) const {
  const Mr* mr = find(rkey);
  if (mr == nullptr || !mr->valid || mr->pd != pd || (mr->access & need_access) != need_access ||
      need_access == 0 || !in_bounds(*mr, va, len)) {
    return nullptr;
  }
  if (space != nullptr) *space = mr->space;
  return mr->host + (va - mr->iova);
}

uint8_t* MrTable::local_ref(uint32_t pd, uint32_t lkey, uint64_t addr, uint32_t len,
                            uint32_t need_access, WcStatus* err, MrRef* ref,
                            uint32_t* space) const {
  uint8_t* host = local(pd, lkey, addr, len, need_access, err, space);
  if (host == nullptr) return nullptr;
  const Mr& mr = mrs_[lkey >> 8];
  ref->stamp_at = &mr.stamp;
  ref->stamp = mr.stamp;
  return host;
}

uint8_t* MrTable::remote_ref(uint32_t pd, uint32_t rkey, uint64_t va, uint32_t len,
                             uint32_t need_access, MrRef* ref, uint32_t* space) const {
  uint8_t* host = remote(pd, rkey, va, len, need_access, space);
  if (host == nullptr) return nullptr;
  const Mr& mr = mrs_[rkey >> 8];
  ref->stamp_at = &mr.stamp;
  ref->stamp = mr.stamp;
  return host;
}

}  // namespace burst::core
