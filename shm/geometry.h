/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Geometry of the shared-memory regions (abi/burst_shm_abi.h) and the checks
// of their headers: header-only, used by both sides. burstd sizes its regions
// with it (shm/layout.h lays them out and writes the headers); the provider,
// which maps regions burstd handed over, checks every header with CheckRegion,
// CheckRing and CheckDoorbell before using it (the one decoder of those
// headers) and then keeps private copies of the geometry. Neither side ever
// follows a pointer stored in shared memory.
#pragma once

#include <cstdint>
#include <cstring>

#include "abi/burst_shm_abi.h"

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
  if (max_sge > BURST_MAX_SGE || max_inline > BURST_MAX_INLINE_DATA) return 0;
  const uint32_t payload = max_sge * 16 > max_inline ? max_sge * 16 : max_inline;
  return RoundUpPow2(BURST_SHM_SEND_WQE_PAYLOAD + (payload == 0 ? 16 : payload));
}
constexpr uint32_t RecvEntrySize(uint32_t max_sge) {
  if (max_sge > BURST_MAX_SGE) return 0;
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

// Provider: checks the region header of a mapping of mapped_size bytes
// (magic, ABI version, kind, parts, size not beyond the mapping).
inline bool CheckRegion(const void* base, uint64_t mapped_size, burst_shm_region_kind kind) {
  if (base == nullptr || mapped_size < sizeof(burst_shm_region)) return false;
  burst_shm_region r;
  std::memcpy(&r, base, sizeof(r));
  return r.magic == BURST_SHM_REGION_MAGIC && r.abi_version == BURST_SHM_ABI_VERSION &&
         r.kind == kind && r.size <= mapped_size && r.num_parts <= BURST_SHM_REGION_MAX_PARTS;
}

// Provider: checks the ring header at ring_offset (magic, version, kind,
// geometry, SGE and inline limits, bounds against the mapping) and returns its
// geometry.
inline bool CheckRing(const void* base, uint64_t mapped_size, uint64_t ring_offset,
                      burst_shm_ring_kind kind, RingGeometry* geom) {
  if (base == nullptr || ring_offset % BURST_SHM_CACHE_LINE != 0 || ring_offset > mapped_size ||
      mapped_size - ring_offset < sizeof(burst_shm_ring)) {
    return false;
  }
  burst_shm_ring r;
  std::memcpy(&r, static_cast<const uint8_t*>(base) + ring_offset, sizeof(r));
  const RingGeometry g{r.log2_entries, r.entry_size};
  if (r.magic != BURST_SHM_RING_MAGIC || r.abi_version != BURST_SHM_ABI_VERSION || r.kind != kind ||
      !g.valid() || r.num_entries != g.entries() || r.entries_offset != kRingEntriesOffset ||
      r.max_sge > BURST_MAX_SGE || r.max_inline > BURST_MAX_INLINE_DATA) {
    return false;
  }
  if (mapped_size - ring_offset < RingBytes(g)) return false;
  *geom = g;
  return true;
}

// Provider: same for the doorbell queue at offset; returns log2 of the slot count.
inline bool CheckDoorbell(const void* base, uint64_t mapped_size, uint64_t offset,
                          uint32_t* log2_slots) {
  if (base == nullptr || offset % BURST_SHM_CACHE_LINE != 0 || offset > mapped_size ||
      mapped_size - offset < sizeof(burst_shm_doorbell)) {
    return false;
  }
  burst_shm_doorbell d;
  std::memcpy(&d, static_cast<const uint8_t*>(base) + offset, sizeof(d));
  if (d.magic != BURST_SHM_DOORBELL_MAGIC || d.abi_version != BURST_SHM_ABI_VERSION ||
      d.log2_slots > BURST_SHM_MAX_LOG2_SLOTS || d.num_slots != (1u << d.log2_slots) ||
      d.slots_offset != kDoorbellSlotsOffset ||
      mapped_size - offset < DoorbellBytes(d.log2_slots)) {
    return false;
  }
  *log2_slots = d.log2_slots;
  return true;
}

}  // namespace burst::shm
