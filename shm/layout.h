/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Layout of the shared-memory regions (abi/burst_shm_abi.h), burstd's side:
// burstd computes a layout and initialises the headers of a region it
// created. The geometry both sides use and the checks the provider makes of
// the headers are in shm/geometry.h.
#pragma once

#include <cstdint>
#include <span>

#include "abi/burst_shm_abi.h"
#include "core/status.h"
#include "shm/geometry.h"

namespace burst::shm {

// One ring as burstd describes it when it lays out a region.
struct RingSpec {
  burst_shm_ring_kind kind = BURST_SHM_RING_SQ;
  uint32_t handle = 0;
  RingGeometry geom;
  uint32_t max_sge = 0;
  uint32_t max_inline = 0;
};

struct RegionLayout {
  uint64_t size = 0;  // bytes, a multiple of the page size
  uint32_t num_parts = 0;
  uint64_t part_offset[BURST_SHM_REGION_MAX_PARTS] = {};
};

// burstd: where each ring goes in a region of the given kind (QP: SQ then RQ).
// kInvalid if a geometry is invalid or there are too many rings.
core::Status LayoutRings(std::span<const RingSpec> rings, RegionLayout* out);
core::Status LayoutDoorbell(uint32_t log2_slots, RegionLayout* out);

// burstd: writes the region header and ring headers into zeroed memory of at
// least layout.size bytes. Indices start at 0; entries stay zero.
void InitRingRegion(void* base, const RegionLayout& layout, burst_shm_region_kind kind,
                    uint32_t handle, std::span<const RingSpec> rings);
void InitDoorbellRegion(void* base, const RegionLayout& layout, uint32_t worker,
                        uint32_t log2_slots, uint64_t reclaim_timeout_ns);

}  // namespace burst::shm
