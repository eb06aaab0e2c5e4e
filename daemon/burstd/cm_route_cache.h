/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// CmService's cache of resolved routes (docs/cm.md "Connection rate"): RESOLVE_ADDR of a
// destination asks the kernel twice over rtnetlink (source address toward it, then its
// neighbour entry), each on a new socket; a run of connections to the same peer asks once
// per kTtlNs. Only successful answers are kept; a few entries, scanned linearly.
// Threading: burstd's control thread only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "net/addr.h"

namespace burst::burstd {

class CmRouteCache {
 public:
  static constexpr uint64_t kTtlNs = 1'000'000'000;  // 1 s: a changed neighbour is seen soon
  static constexpr size_t kEntries = 16;

  // src_index: the GID index the caller asked for (-1: any, the kernel's choice).
  bool find(const net::Gid& dgid, int src_index, uint64_t now, int* sgid_index,
            net::MacAddr* dmac) const {
    for (const Entry& e : entries_) {
      if (e.expires > now && e.src_index == src_index && e.dgid == dgid) {
        *sgid_index = e.sgid_index;
        *dmac = e.dmac;
        return true;
      }
    }
    return false;
  }

  void insert(const net::Gid& dgid, int src_index, uint64_t now, int sgid_index,
              const net::MacAddr& dmac) {
    Entry* slot = &entries_[next_];
    for (Entry& e : entries_) {
      if (e.expires > 0 && e.src_index == src_index && e.dgid == dgid) slot = &e;
    }
    if (slot == &entries_[next_]) next_ = (next_ + 1) % kEntries;
    *slot = Entry{dgid, dmac, now + kTtlNs, src_index, sgid_index};
  }

  uint64_t hits = 0;
  uint64_t misses = 0;

 private:
  struct Entry {
    net::Gid dgid{};
    net::MacAddr dmac{};
    uint64_t expires = 0;
    int src_index = -1;
    int sgid_index = -1;
  };
  Entry entries_[kEntries];
  size_t next_ = 0;
};

}  // namespace burst::burstd
