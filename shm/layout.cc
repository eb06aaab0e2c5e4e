// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "shm/layout.h"

#include <cstring>

namespace burst::shm {
namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMaxRegionBytes = uint64_t{1} << 32;

}  // namespace

core::Status LayoutRings(std::span<const RingSpec> rings, RegionLayout* out) {
  if (rings.empty() || rings.size() > BURST_SHM_REGION_MAX_PARTS) return core::Errc::kInvalid;
  RegionLayout l;
  uint64_t off = sizeof(burst_shm_region);
  for (const RingSpec& r : rings) {
    if (!r.geom.valid() || r.max_sge > BURST_MAX_SGE || r.max_inline > BURST_MAX_INLINE_DATA) {
      return core::Errc::kInvalid;
    }
    l.part_offset[l.num_parts++] = off;
    off += RingBytes(r.geom);
  }
  l.size = AlignUp(off, kPage);
  if (l.size > kMaxRegionBytes) return core::Errc::kInvalid;
  *out = l;
  return core::Status::Ok();
}

core::Status LayoutDoorbell(uint32_t log2_slots, RegionLayout* out) {
  if (log2_slots > BURST_SHM_MAX_LOG2_SLOTS) return core::Errc::kInvalid;
  RegionLayout l;
  l.num_parts = 1;
  l.part_offset[0] = sizeof(burst_shm_region);
  l.size = AlignUp(l.part_offset[0] + DoorbellBytes(log2_slots), kPage);
  *out = l;
  return core::Status::Ok();
}

void InitRingRegion(void* base, const RegionLayout& layout, burst_shm_region_kind kind,
                    uint32_t handle, std::span<const RingSpec> rings) {
  auto* region = static_cast<burst_shm_region*>(base);
  std::memset(region, 0, sizeof(*region));
  region->magic = BURST_SHM_REGION_MAGIC;
  region->abi_version = BURST_SHM_ABI_VERSION;
  region->kind = static_cast<uint16_t>(kind);
  region->size = layout.size;
  region->handle = handle;
  region->num_parts = layout.num_parts;
  for (uint32_t i = 0; i < layout.num_parts && i < rings.size(); ++i) {
    region->part_offset[i] = layout.part_offset[i];
    auto* ring =
        reinterpret_cast<burst_shm_ring*>(static_cast<uint8_t*>(base) + layout.part_offset[i]);
    std::memset(ring, 0, sizeof(*ring));
    ring->magic = BURST_SHM_RING_MAGIC;
    ring->abi_version = BURST_SHM_ABI_VERSION;
    ring->kind = static_cast<uint8_t>(rings[i].kind);
    ring->log2_entries = static_cast<uint8_t>(rings[i].geom.log2_entries);
    ring->num_entries = rings[i].geom.entries();
    ring->entry_size = rings[i].geom.entry_size;
    ring->entries_offset = kRingEntriesOffset;
    ring->handle = rings[i].handle;
    ring->max_sge = rings[i].max_sge;
    ring->max_inline = rings[i].max_inline;
    ring->status = BURST_SHM_RING_OK;
    ring->error_reason = BURST_SHM_RING_ERR_NONE;
  }
}

void InitDoorbellRegion(void* base, const RegionLayout& layout, uint32_t worker,
                        uint32_t log2_slots, uint64_t reclaim_timeout_ns) {
  auto* region = static_cast<burst_shm_region*>(base);
  std::memset(region, 0, sizeof(*region));
  region->magic = BURST_SHM_REGION_MAGIC;
  region->abi_version = BURST_SHM_ABI_VERSION;
  region->kind = BURST_SHM_REGION_DOORBELL;
  region->size = layout.size;
  region->handle = worker;
  region->num_parts = 1;
  region->part_offset[0] = layout.part_offset[0];
  auto* db =
      reinterpret_cast<burst_shm_doorbell*>(static_cast<uint8_t*>(base) + layout.part_offset[0]);
  std::memset(db, 0, sizeof(*db));
  db->magic = BURST_SHM_DOORBELL_MAGIC;
  db->abi_version = BURST_SHM_ABI_VERSION;
  db->log2_slots = static_cast<uint8_t>(log2_slots);
  db->num_slots = 1u << log2_slots;
  db->worker = worker;
  db->slots_offset = kDoorbellSlotsOffset;
  db->reclaim_timeout_ns = reclaim_timeout_ns;
  // Slots: all zero == FREE with lap 0, which is position i's state for slot i.
  std::memset(reinterpret_cast<uint8_t*>(db) + kDoorbellSlotsOffset, 0, uint64_t{8} << log2_slots);
}

}  // namespace burst::shm
