// Geometry and layout of the shared-memory regions (shm/burst_shm_abi.h):
// burstd computes a layout and initialises the headers of a region it
// created; the provider checks the headers of a region it was given before
// using them. Neither side ever follows a pointer stored in shared memory.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "shm/burst_shm_abi.h"

namespace burst::shm {

// Private geometry of one ring. burstd builds it from its own records (never
// from the ring header); the provider takes it from a header CheckRing accepted.
struct RingGeometry {
  uint32_t log2_entries = 0;
  uint32_t entry_size = 0;  // bytes, power of two

  constexpr uint32_t entries() const { return 1u << log2_entries; }
  constexpr uint32_t mask() const { return entries() - 1; }
  constexpr uint64_t entry_bytes() const { return uint64_t{entry_size} << log2_entries; }
  constexpr bool valid() const {
    return log2_entries <= BURST_SHM_MAX_LOG2_ENTRIES && entry_size >= 16 &&
           entry_size <= BURST_SHM_MAX_ENTRY_SIZE && (entry_size & (entry_size - 1)) == 0;
  }
};

// Entries start right after the 192-byte ring header.
inline constexpr uint64_t kRingEntriesOffset = sizeof(burst_shm_ring);
// Doorbell slots start right after the 192-byte doorbell header.
inline constexpr uint64_t kDoorbellSlotsOffset = sizeof(burst_shm_doorbell);
static_assert(kRingEntriesOffset % BURST_SHM_CACHE_LINE == 0);
static_assert(kDoorbellSlotsOffset % BURST_SHM_CACHE_LINE == 0);

constexpr uint32_t RoundUpPow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}
constexpr uint32_t Log2Ceil(uint32_t v) {
  uint32_t l = 0;
  while ((1u << l) < v) ++l;
  return l;
}
constexpr uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

// Entry sizes; 0 when the request exceeds the ABI limits.
constexpr uint32_t SendEntrySize(uint32_t max_sge, uint32_t max_inline) {
  if (max_sge > BURST_SHM_MAX_SGE || max_inline > BURST_SHM_MAX_INLINE) return 0;
  const uint32_t payload = max_sge * 16 > max_inline ? max_sge * 16 : max_inline;
  return RoundUpPow2(BURST_SHM_SEND_WQE_PAYLOAD + (payload == 0 ? 16 : payload));
}
constexpr uint32_t RecvEntrySize(uint32_t max_sge) {
  if (max_sge > BURST_SHM_MAX_SGE) return 0;
  return RoundUpPow2(BURST_SHM_RECV_WQE_PAYLOAD + (max_sge == 0 ? 1 : max_sge) * 16);
}
inline constexpr uint32_t kCqEntrySize = sizeof(burst_shm_cqe);

// Bytes of one ring (header + entries), a multiple of a cache line.
constexpr uint64_t RingBytes(const RingGeometry& g) {
  return AlignUp(kRingEntriesOffset + g.entry_bytes(), BURST_SHM_CACHE_LINE);
}
constexpr uint64_t DoorbellBytes(uint32_t log2_slots) {
  return AlignUp(kDoorbellSlotsOffset + (uint64_t{8} << log2_slots), BURST_SHM_CACHE_LINE);
}

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

// Provider: checks the region header of a mapping of mapped_size bytes.
core::Status CheckRegion(const void* base, uint64_t mapped_size, burst_shm_region_kind kind);
// Provider: checks the ring header at ring_offset (magic, version, kind,
// geometry, bounds against the mapping) and returns its geometry.
core::Status CheckRing(const void* base, uint64_t mapped_size, uint64_t ring_offset,
                       burst_shm_ring_kind kind, RingGeometry* geom);
// Provider: same for the doorbell queue; returns log2 of the slot count.
core::Status CheckDoorbell(const void* base, uint64_t mapped_size, uint64_t offset,
                           uint32_t* log2_slots);

}  // namespace burst::shm
