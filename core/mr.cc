// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "core/mr.h"

#include <algorithm>
#include <cstddef>

namespace burst::core {

namespace {
constexpr uint32_t kKnownAccess = kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead |
                                  kAccessRemoteAtomic | kAccessMwBind;
constexpr uint32_t kRemoteAccess = kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic;
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
  // The lowest free PD, searched from the lowest that may be free (65536 PDs:
  // no scan of the used ones on every allocation).
  for (uint32_t i = pd_hint_; i < pds_.size(); ++i) {
    pd_hint_ = i + 1;
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
  pd_hint_ = std::min(pd_hint_, pd);
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
  if (Status st = check_reg(pd, host_base, iova, length, access, space); !st.ok()) return st;
  const uint32_t index = take_entry();
  if (index == 0) return Errc::kNoMemory;
  uint8_t gen = ++generation_[index];
  const uint32_t key = (index << 8) | gen;
  mrs_[index] = Mr{host_base, iova, length, pd, access, key, true, ++next_stamp_, space};
  ++pds_[pd].refs;
  ++mr_count_;
  *lkey = key;
  *rkey = key;
  return Status::Ok();
}

Status MrTable::check_reg(uint32_t pd, const uint8_t* host_base, uint64_t iova, uint64_t length,
                          uint32_t access, uint32_t space) const {
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
  return Status::Ok();
}

Status MrTable::rereg_mr(uint32_t lkey, uint32_t pd, uint8_t* host_base, uint64_t iova,
                         uint64_t length, uint32_t access, uint32_t space, bool new_key,
                         uint32_t* out_lkey, uint32_t* out_rkey) {
  const Mr* found = find(lkey);
  if (found == nullptr || found->kind != kMr) return Errc::kNotFound;
  if (found->mw_bound != 0) return Errc::kBusy;
  if (Status st = check_reg(pd, host_base, iova, length, access, space); !st.ok()) return st;
  const uint32_t index = lkey >> 8;
  Mr& e = mrs_[index];
  if (e.pd != pd) {
    pd_unref(e.pd);
    ++pds_[pd].refs;
  }
  const uint32_t key = new_key ? (index << 8) | ++generation_[index] : e.key;
  e = Mr{host_base, iova, length, pd, access, key, true, ++next_stamp_, space};
  *out_lkey = key;
  *out_rkey = key;
  return Status::Ok();
}

uint32_t MrTable::take_entry() {
  if (free_mrs_.empty()) return 0;
  const uint32_t index = free_mrs_.back();
  free_mrs_.pop_back();
  return index;
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
  if (found->kind != kMr) return Errc::kNotFound;
  if (found->mw_bound != 0) return Errc::kBusy;  // IBA 10.6.7.2.6
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
  Mr& e = mrs_[rkey >> 8];
  if (e.kind == kMw1 || e.mw_bound != 0) return Errc::kInvalid;  // o10-37.2.26; 10.6.7.2.6
  if (e.kind == kMw2) {
    unbind(e);
    return Status::Ok();
  }
  e.valid = false;
  e.stamp = ++next_stamp_;
  return Status::Ok();
}

Status MrTable::alloc_mw(uint32_t pd, uint8_t type, uint32_t* rkey) {
  if (!pd_valid(pd)) return Errc::kNotFound;
  if (type != kMw1 && type != kMw2) return Errc::kInvalid;
  const uint32_t index = take_entry();
  if (index == 0) return Errc::kNoMemory;
  const uint32_t key = (index << 8) | ++generation_[index];
  Mr mw;
  mw.pd = pd;
  mw.key = key;
  mw.stamp = ++next_stamp_;
  mw.kind = static_cast<Kind>(type);
  mrs_[index] = mw;
  ++pds_[pd].refs;
  ++mw_count_;
  *rkey = key;
  return Status::Ok();
}

Status MrTable::dealloc_mw(uint32_t index) {
  if (index == 0 || index >= mrs_.size() || mrs_[index].key == 0 || mrs_[index].kind == kMr) {
    return Errc::kNotFound;
  }
  Mr& mw = mrs_[index];
  unbind(mw);
  pd_unref(mw.pd);
  mw = Mr{};
  mw.stamp = ++next_stamp_;
  free_mrs_.push_back(index);
  --mw_count_;
  return Status::Ok();
}

const MrTable::Mr* MrTable::parent_of(const Mr& mw) const {
  if (mw.mr_index == 0) return nullptr;
  const Mr& mr = mrs_[mw.mr_index];
  return mr.stamp == mw.mr_stamp && mr.valid ? &mr : nullptr;
}

void MrTable::unbind(Mr& mw) {
  // (A window whose MR changed under it, deregistered by the control plane
  // racing the bind, no longer counts on any MR.)
  if (parent_of(mw) != nullptr && mrs_[mw.mr_index].mw_bound > 0) --mrs_[mw.mr_index].mw_bound;
  mw.host = nullptr;
  mw.iova = mw.length = 0;
  mw.access = 0;
  mw.valid = false;
  mw.mr_index = mw.qpn = 0;
  mw.mr_stamp = 0;
  mw.space = MemSpaces::kLocal;
  mw.stamp = ++next_stamp_;
}

WcStatus MrTable::bind_mw(uint32_t pd, uint32_t qpn, const MwBind& b) {
  const Mr* found = find(b.mw_rkey);
  if (found == nullptr || found->kind == kMr) return WcStatus::kMwBindErr;
  Mr& mw = mrs_[b.mw_rkey >> 8];
  if ((b.access & ~kKnownAccess) != 0) return WcStatus::kMwBindErr;
  if (mw.kind == kMw2) {
    // o10-37.2.30: only a free window; C10-72: the QP's PD; o10-37.2.40: not to unbind.
    if (mw.valid || mw.pd != pd || b.length == 0) return WcStatus::kMwBindErr;
  }
  const Mr* mr = nullptr;
  if (b.length != 0) {
    mr = find(b.mr_lkey);
    if (mr == nullptr || mr->kind != kMr || !mr->valid || mr->pd != mw.pd) {
      return WcStatus::kMwBindErr;
    }
    if ((mr->access & kAccessMwBind) == 0) return WcStatus::kMwBindErr;  // C10-73
    if ((b.access & (kAccessRemoteWrite | kAccessRemoteAtomic)) != 0 &&
        (mr->access & kAccessLocalWrite) == 0) {
      return WcStatus::kMwBindErr;  // C10-74
    }
    if (!in_bounds(*mr, b.addr, b.length)) return WcStatus::kMwBindErr;  // C10-75
  }
  unbind(mw);
  mw.key = (mw.key & ~0xffu) | (b.new_rkey & 0xffu);
  if (mr != nullptr) {
    const uint32_t mr_index = b.mr_lkey >> 8;
    mw.host = mr->host + (b.addr - mr->iova);
    mw.iova = b.addr;
    mw.length = b.length;
    mw.access = b.access & kRemoteAccess;
    mw.space = mr->space;
    mw.valid = true;
    mw.mr_index = mr_index;
    mw.mr_stamp = mr->stamp;
    ++mrs_[mr_index].mw_bound;
    if (mw.kind == kMw2) mw.qpn = qpn;
  }
  return WcStatus::kSuccess;
}

bool MrTable::in_bounds(const Mr& mr, uint64_t addr, uint64_t len) {
  if (addr < mr.iova) return false;
  const uint64_t off = addr - mr.iova;
  return len <= mr.length && off <= mr.length - len;
}

uint8_t* MrTable::local(uint32_t pd, uint32_t lkey, uint64_t addr, uint32_t len,
                        uint32_t need_access, WcStatus* err, uint32_t* space) const {
  const Mr* mr = find(lkey);
  if (mr == nullptr || !mr->valid || mr->kind != kMr || mr->pd != pd ||
      (mr->access & need_access) != need_access || !in_bounds(*mr, addr, len)) {
    if (err != nullptr) *err = WcStatus::kLocProtErr;
    return nullptr;
  }
  if (space != nullptr) *space = mr->space;
  return mr->host + (addr - mr->iova);
}

uint8_t* MrTable::remote(uint32_t pd, uint32_t rkey, uint64_t va, uint32_t len,
                         uint32_t need_access, uint32_t* space, uint32_t qpn) const {
  const Mr* mr = find(rkey);
  if (mr == nullptr || !mr->valid || mr->pd != pd || (mr->access & need_access) != need_access ||
      need_access == 0 || !in_bounds(*mr, va, len)) {
    return nullptr;
  }
  // A window: a type 2 one only for its QP, and while its MR is valid.
  if (mr->kind != kMr && ((mr->kind == kMw2 && mr->qpn != qpn) || parent_of(*mr) == nullptr)) {
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
                             uint32_t need_access, MrRef* ref, uint32_t* space,
                             uint32_t qpn) const {
  uint8_t* host = remote(pd, rkey, va, len, need_access, space, qpn);
  if (host == nullptr) return nullptr;
  const Mr& mr = mrs_[rkey >> 8];
  ref->stamp_at = &mr.stamp;
  ref->stamp = mr.stamp;
  // A window: also its MR (a later packet stops if either changes).
  ref->parent_at = mr.kind != kMr ? &mrs_[mr.mr_index].stamp : &MrRef::kNever;
  ref->parent = mr.kind != kMr ? mr.mr_stamp : 0;
  return host;
}

}  // namespace burst::core
