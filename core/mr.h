/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Protection domains and memory regions of one device.
//
// Threading contract: the table is written by the control plane (alloc/dealloc
// PD, reg/dereg MR, and by the owning worker for SEND_WITH_INVALIDATE) and read by
// the workers on every packet. Lookups are lock-free array reads that never
// allocate. Today every call runs on one thread; when burstd runs several
// workers, dereg_mr must be handed to the workers through their control rings
// (the entry arrays never move, so a lookup never touches freed memory).
//
// Memory spaces: every MR lives in one space of the table's MemSpaces
// (core/mem_space.h). In MemSpaces::kLocal (the default) its host address is a
// pointer into burst's own memory (the iova itself for in-process users, or
// burstd's zero-copy mapping of an application's shared memory). In a space
// k > 0 it is a virtual address in another process: lookups still return it as
// a uint8_t*, but it must never be dereferenced: every lookup also gives the
// space, and the caller goes through MemSpaces (reads, atomics) or the
// CopyEngine (placement) with it. Attach the space (spaces().attach, with the
// process's own /proc/self/mem descriptor) before
// registering its MRs; deregister them before detaching it.
//
// Keys: lkey == rkey == (index << 8) | generation. The 24-bit index selects the
// entry; the low byte changes on every registration of that entry, so a stale
// key (from a previous registration) misses, as on real RNICs.
//
// Memory windows (IBA 10.6.7) share the entries and the key space with MRs: an
// MW has an rkey only, (index << 8) | key byte, and the key byte is the one the
// consumer chose at each bind (ibv_inc_rkey). Type 1 windows are bound and
// unbound (zero length) by BIND_MW work requests, type 2 (2B: bound to one QP)
// by BIND_MW and freed by LOCAL_INV or a received SEND_WITH_INVALIDATE. A bound
// window holds its MR: deregistering it is kBusy until every window on it is
// unbound, invalidated or deallocated. Bind and invalidate run on the worker
// that owns the QP; alloc and dealloc on the control plane, as reg/dereg.
#pragma once

#include <cstdint>
#include <vector>

#include "core/mem_space.h"
#include "core/status.h"
#include "core/verbs.h"

namespace burst::core {

// A remote range checked once by MrTable::remote_ref (key, PD, access, bounds),
// kept by the responder for the RDMA WRITE in progress so that its later packets
// need only bounds arithmetic. MrTable::still_valid() is one load and compare:
// every registration, deregistration and invalidation of the entry gives it a
// new stamp (from a table-wide 64-bit counter, so a stamp never comes back).
struct MrRef {
  static constexpr uint64_t kNever = 0;  // what a default MrRef points at
  const uint64_t* stamp_at = &kNever;    // into the table's entry (entries never move)
  uint64_t stamp = ~uint64_t{0};         // the entry's stamp when checked (never ~0)
  // A memory window's MR (its stamp when the window was bound): the window
  // stops with it. For an MR, kNever and 0: always equal.
  const uint64_t* parent_at = &kNever;
  uint64_t parent = 0;
};

class MrTable {
 public:
  // Up to max_mrs MRs and max_pds PDs at a time (numbered from 1).
  explicit MrTable(uint32_t max_mrs = BURST_MAX_MR, uint32_t max_pds = BURST_MAX_PD);

  // Control plane.
  uint32_t alloc_pd();             // 0 when no PD is left
  Status dealloc_pd(uint32_t pd);  // kBusy while MRs or QPs use it
  bool pd_valid(uint32_t pd) const;
  // References held by QPs (and other objects) on a PD; used by the engine.
  Status pd_ref(uint32_t pd);
  void pd_unref(uint32_t pd);

  // host_base is where burst touches the bytes: in `space` (see the top of this
  // file); iova is what the peer and the work requests use as addresses.
  // kInvalid when `space` is not attached.
  Status reg_mr(uint32_t pd, uint8_t* host_base, uint64_t iova, uint64_t length, uint32_t access,
                uint32_t* lkey, uint32_t* rkey, uint32_t space = MemSpaces::kLocal);
  Status dereg_mr(uint32_t lkey);  // kBusy while memory windows are bound to it
  // ibv_rereg_mr: the MR `lkey` takes a new PD, range and access at once,
  // checked as reg_mr; with new_key its keys change (a new translation: stale
  // keys miss), else they stay (PD or access only, as rxe). kBusy while windows
  // are bound to it; on any error the MR is unchanged.
  Status rereg_mr(uint32_t lkey, uint32_t pd, uint8_t* host_base, uint64_t iova, uint64_t length,
                  uint32_t access, uint32_t space, bool new_key, uint32_t* out_lkey,
                  uint32_t* out_rkey);
  // SEND_WITH_INVALIDATE and LOCAL_INV: an MR's rkey (and its lkey) stop working
  // until the MR is registered again; a type 2 MW returns to the free state
  // (bindable again). kNotFound for an unknown or not valid key, kPermission for
  // another PD, kInvalid for a type 1 MW or an MR with windows bound.
  Status invalidate_rkey(uint32_t pd, uint32_t rkey);

  // Memory windows. alloc_mw (control plane): type 1 or 2, *rkey its first
  // key; dealloc_mw takes the rkey's index (the key byte changes at each bind)
  // and unbinds the window first.
  Status alloc_mw(uint32_t pd, uint8_t type, uint32_t* rkey);
  Status dealloc_mw(uint32_t index);
  // BIND_MW on a QP (pd, qpn) of the owning worker: kSuccess, or
  // kMwBindErr with the window unchanged (unknown window or MR key, type 2 not
  // free or of another PD or zero length, MR without MW_BIND, of another PD or
  // not valid, remote write/atomic on an MR without local write, range outside
  // the MR).
  WcStatus bind_mw(uint32_t pd, uint32_t qpn, const MwBind& b);

  // Worker lookups. Both check key (index + generation), PD, access and bounds
  // (overflow-safe) and return the host address of addr in the MR's space, or
  // nullptr; *space (when not null) receives that space on success.
  // local(): need_access is kAccessLocalWrite for placement, 0 for gather; *err
  // is kLocProtErr on any failure.
  uint8_t* local(uint32_t pd, uint32_t lkey, uint64_t addr, uint32_t len, uint32_t need_access,
                 WcStatus* err, uint32_t* space = nullptr) const;
  // remote(): rkey of an MR or of a bound MW (in the QP's PD; a type 2 window
  // only for the QP `qpn` it is bound to).
  uint8_t* remote(uint32_t pd, uint32_t rkey, uint64_t va, uint32_t len, uint32_t need_access,
                  uint32_t* space = nullptr, uint32_t qpn = 0) const;

  // local() / remote() that also fill *ref for still_valid() (unchanged on failure).
  uint8_t* local_ref(uint32_t pd, uint32_t lkey, uint64_t addr, uint32_t len, uint32_t need_access,
                     WcStatus* err, MrRef* ref, uint32_t* space = nullptr) const;
  uint8_t* remote_ref(uint32_t pd, uint32_t rkey, uint64_t va, uint32_t len, uint32_t need_access,
                      MrRef* ref, uint32_t* space = nullptr, uint32_t qpn = 0) const;
  // True while the MR that remote_ref() checked is registered, valid and
  // unchanged; false for a default MrRef.
  static bool still_valid(const MrRef& ref) {
    return *ref.stamp_at == ref.stamp && *ref.parent_at == ref.parent;
  }

  uint32_t mr_count() const { return mr_count_; }
  uint32_t mw_count() const { return mw_count_; }

  // The spaces MRs of this table live in (attach/detach: control plane).
  MemSpaces& spaces() { return spaces_; }
  const MemSpaces& spaces() const { return spaces_; }

 private:
  // Every field below is written by the control plane (reg/dereg/alloc) and read
  // by the workers; Mr::valid is also written by a worker (SEND_WITH_INVALIDATE).
  enum Kind : uint8_t { kMr = 0, kMw1 = 1, kMw2 = 2 };
  // An MR, or an MW (host/iova/length/access/space: the bound window, `valid`
  // while bound with a non-zero length).
  struct Mr {
    uint8_t* host = nullptr;
    uint64_t iova = 0;
    uint64_t length = 0;
    uint32_t pd = 0;
    uint32_t access = 0;
    uint32_t key = 0;    // current key; 0 while the entry is free
    bool valid = false;  // registered and not invalidated
    uint64_t stamp = 0;  // new value on every reg / dereg / invalidate (see MrRef)
    // The memory space `host` points into (see the top of this file).
    uint32_t space = MemSpaces::kLocal;
    Kind kind = kMr;
    uint32_t mw_bound = 0;  // MR: windows bound to it
    uint32_t mr_index = 0;  // bound MW: its MR's entry
    uint32_t qpn = 0;       // bound type 2 MW: its QP
    uint64_t mr_stamp = 0;  // bound MW: its MR's stamp at the bind (the same registration)
  };
  struct Pd {
    bool in_use = false;
    uint32_t refs = 0;  // MRs and QPs using the PD
  };

  const Mr* find(uint32_t key) const;
  uint32_t take_entry();  // 0 when none is free
  Status check_reg(uint32_t pd, const uint8_t* host_base, uint64_t iova, uint64_t length,
                   uint32_t access, uint32_t space) const;
  void unbind(Mr& mw);
  // The MR a bound window was bound to, while it is that registration, valid.
  const Mr* parent_of(const Mr& mw) const;
  static bool in_bounds(const Mr& mr, uint64_t addr, uint64_t len);

  std::vector<Mr> mrs_;              // index 0 unused, so no key is 0
  std::vector<uint32_t> free_mrs_;   // free entry indices
  std::vector<uint8_t> generation_;  // per entry, survives dereg
  std::vector<Pd> pds_;              // index 0 unused
  uint32_t pd_hint_ = 1;             // no free PD below this index
  uint32_t mr_count_ = 0;
  uint32_t mw_count_ = 0;
  uint64_t next_stamp_ = 0;  // last stamp handed out
  MemSpaces spaces_;
};

}  // namespace burst::core
