// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "net/gid_table.h"

#include <algorithm>

namespace burst::net {
namespace {

// The GIDs the netdev's addresses call for, in the kernel's enumeration order.
std::vector<Gid> wanted_gids(const NetdevInfo& info) {
  std::vector<Gid> out;
  out.reserve(1 + info.ipv4.size() + info.ipv6.size());
  out.push_back(gid_link_local_from_mac(info.mac));
  for (const IfAddress& a : info.ipv4) out.push_back(a.addr);
  for (const IfAddress& a : info.ipv6) out.push_back(a.addr);
  return out;
}

}  // namespace

std::vector<Gid> build_gid_table(const NetdevInfo& info, size_t max_entries) {
  GidTable t(max_entries);
  t.update(info);
  return t.entries();
}

int GidTable::find(const Gid& gid) const {
  if (gid_is_zero(gid)) return -1;
  auto it = std::find(entries_.begin(), entries_.end(), gid);
  return it == entries_.end() ? -1 : static_cast<int>(it - entries_.begin());
}

bool GidTable::add(const Gid& gid) {
  if (gid_is_zero(gid) || find(gid) >= 0) return false;  // the kernel refuses zero GIDs
  auto hole = std::find(entries_.begin(), entries_.end(), kZeroGid);
  if (hole != entries_.end()) {
    *hole = gid;
    return true;
  }
  if (entries_.size() >= max_entries_) {
    ++dropped_;
    return false;
  }
  entries_.push_back(gid);
  return true;
}

void GidTable::rebuild(const NetdevInfo& info) {
  entries_.clear();
  dropped_ = 0;
  mac_ = info.mac;
  has_default_ = max_entries_ > 0;
  for (const Gid& g : wanted_gids(info)) add(g);
}

bool GidTable::update(const NetdevInfo& info) {
  if (!has_default_ || info.mac != mac_) {
    std::vector<Gid> before = entries_;
    rebuild(info);
    return entries_ != before;
  }
  const std::vector<Gid> want = wanted_gids(info);
  bool changed = false;
  // Remove what is gone (slot 0 holds the default GID, which stays while the MAC does).
  for (size_t i = 1; i < entries_.size(); ++i) {
    if (gid_is_zero(entries_[i])) continue;
    if (std::find(want.begin(), want.end(), entries_[i]) == want.end()) {
      entries_[i] = kZeroGid;
      changed = true;
    }
  }
  dropped_ = 0;
  for (const Gid& g : want) {
    if (add(g)) changed = true;
  }
  while (!entries_.empty() && gid_is_zero(entries_.back())) entries_.pop_back();
  return changed;
}

}  // namespace burst::net
