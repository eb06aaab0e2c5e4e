// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Region layout, header checks on the provider side, and the memfd region
// (sealing, mapping in a second place).
#include "shm/layout.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "abi/burst_shm_abi.h"
#include "shm/region.h"
#include "shm/shm_ring.h"

extern "C" size_t burst_shm_c_layout(int which);

namespace burst::shm {
namespace {

TEST(ShmAbi, CAndCppAgreeOnLayout) {
  EXPECT_EQ(burst_shm_c_layout(0), sizeof(burst_shm_region));
  EXPECT_EQ(burst_shm_c_layout(1), sizeof(burst_shm_ring));
  EXPECT_EQ(burst_shm_c_layout(2), sizeof(burst_shm_send_wqe));
  EXPECT_EQ(burst_shm_c_layout(3), sizeof(burst_shm_recv_wqe));
  EXPECT_EQ(burst_shm_c_layout(4), sizeof(burst_shm_cqe));
  EXPECT_EQ(burst_shm_c_layout(5), sizeof(burst_shm_doorbell));
  EXPECT_EQ(burst_shm_c_layout(6), offsetof(burst_shm_ring, consumer_index));
  EXPECT_EQ(burst_shm_c_layout(7), offsetof(burst_shm_doorbell, head));
  EXPECT_EQ(burst_shm_c_layout(8), offsetof(burst_shm_send_wqe, remote_qkey));
}

TEST(ShmLayout, EntrySizes) {
  EXPECT_EQ(SendEntrySize(1, 0), 128u);    // 64 + 16 -> 128
  EXPECT_EQ(SendEntrySize(4, 0), 128u);    // 64 + 64
  EXPECT_EQ(SendEntrySize(4, 100), 256u);  // 64 + 100 -> 256
  EXPECT_EQ(SendEntrySize(16, 0), 512u);   // 64 + 256 -> 512
  EXPECT_EQ(SendEntrySize(2, BURST_MAX_INLINE_DATA), 1024u);
  EXPECT_EQ(SendEntrySize(17, 0), 0u);
  EXPECT_EQ(SendEntrySize(1, BURST_MAX_INLINE_DATA + 1), 0u);
  EXPECT_EQ(RecvEntrySize(1), 32u);
  EXPECT_EQ(RecvEntrySize(4), 128u);  // 16 + 64 -> 128
  EXPECT_EQ(RecvEntrySize(16), 512u);
  EXPECT_EQ(RecvEntrySize(17), 0u);
  EXPECT_EQ(Log2Ceil(1), 0u);
  EXPECT_EQ(Log2Ceil(128), 7u);
  EXPECT_EQ(Log2Ceil(129), 8u);
}

TEST(ShmLayout, QpRegionRoundTripThroughTwoMappings) {
  const RingSpec rings[] = {
      {BURST_SHM_RING_SQ, 0x123, RingGeometry{6, SendEntrySize(4, 64)}, 4, 64},
      {BURST_SHM_RING_RQ, 0x123, RingGeometry{7, RecvEntrySize(2)}, 2, 0},
  };
  RegionLayout layout;
  ASSERT_TRUE(LayoutRings(rings, &layout).ok());
  EXPECT_EQ(layout.num_parts, 2u);
  EXPECT_EQ(layout.part_offset[0], sizeof(burst_shm_region));
  EXPECT_EQ(layout.part_offset[1], layout.part_offset[0] + RingBytes(rings[0].geom));
  EXPECT_EQ(layout.size % 4096, 0u);

  ShmRegion daemon_side;
  ASSERT_TRUE(ShmRegion::Create("burst-test-qp", layout.size, &daemon_side).ok());
  InitRingRegion(daemon_side.data(), layout, BURST_SHM_REGION_QP, 0x123, rings);

  // The application maps the fd it was given and checks what burstd wrote.
  ShmRegion app_side;
  ASSERT_TRUE(ShmRegion::Map(daemon_side.fd(), &app_side).ok());
  ASSERT_NE(app_side.data(), daemon_side.data());
  ASSERT_TRUE(CheckRegion(app_side.data(), app_side.size(), BURST_SHM_REGION_QP));
  burst_shm_region region;
  std::memcpy(&region, app_side.data(), sizeof(region));
  RingGeometry sq, rq;
  ASSERT_TRUE(
      CheckRing(app_side.data(), app_side.size(), region.part_offset[0], BURST_SHM_RING_SQ, &sq));
  ASSERT_TRUE(
      CheckRing(app_side.data(), app_side.size(), region.part_offset[1], BURST_SHM_RING_RQ, &rq));
  EXPECT_EQ(sq.log2_entries, 6u);
  EXPECT_EQ(sq.entry_size, rings[0].geom.entry_size);
  EXPECT_EQ(rq.log2_entries, 7u);
  // Asking for the wrong kind fails.
  RingGeometry g;
  EXPECT_FALSE(
      CheckRing(app_side.data(), app_side.size(), region.part_offset[0], BURST_SHM_RING_CQ, &g));

  // Provider produces through its mapping, burstd consumes through its own.
  RingProducer prod(app_side.data(), region.part_offset[0], sq);
  RingConsumer cons(daemon_side.data(), layout.part_offset[0], rings[0].geom);
  for (uint32_t i = 0; i < 200; ++i) {
    ASSERT_EQ(prod.Reserve(1), 1u);
    std::memcpy(prod.Entry(0), &i, sizeof(i));
    prod.Publish(1);
    ASSERT_EQ(cons.Peek(1), 1u);
    std::vector<uint8_t> copy(cons.entry_size());
    cons.CopyEntry(0, copy.data());
    uint32_t got;
    std::memcpy(&got, copy.data(), sizeof(got));
    ASSERT_EQ(got, i);
    cons.Release(1);
  }
}

TEST(ShmLayout, CheckRingRejectsBadHeaders) {
  const RingSpec cq[] = {{BURST_SHM_RING_CQ, 7, RingGeometry{4, kCqEntrySize}, 0, 0}};
  RegionLayout layout;
  ASSERT_TRUE(LayoutRings(cq, &layout).ok());
  std::vector<uint8_t> mem(layout.size);
  InitRingRegion(mem.data(), layout, BURST_SHM_REGION_CQ, 7, cq);
  const uint64_t off = layout.part_offset[0];
  RingGeometry g;
  ASSERT_TRUE(CheckRing(mem.data(), mem.size(), off, BURST_SHM_RING_CQ, &g));

  auto* ring = reinterpret_cast<burst_shm_ring*>(mem.data() + off);
  const burst_shm_ring good = *ring;
  auto expect_rejected = [&](const char* what, auto mutate) {
    *ring = good;
    mutate(ring);
    EXPECT_FALSE(CheckRing(mem.data(), mem.size(), off, BURST_SHM_RING_CQ, &g)) << what;
  };
  expect_rejected("magic", [](burst_shm_ring* r) { r->magic ^= 1; });
  expect_rejected("version", [](burst_shm_ring* r) { r->abi_version += 1; });
  expect_rejected("log2 too large", [](burst_shm_ring* r) { r->log2_entries = 30; });
  expect_rejected("count mismatch", [](burst_shm_ring* r) { r->num_entries = 17; });
  expect_rejected("entry size not pow2", [](burst_shm_ring* r) { r->entry_size = 96; });
  expect_rejected("entry size too large", [](burst_shm_ring* r) { r->entry_size = 4096; });
  expect_rejected("entries offset", [](burst_shm_ring* r) { r->entries_offset = 0; });
  expect_rejected("past the mapping", [](burst_shm_ring* r) {
    r->log2_entries = 14;
    r->num_entries = 1u << 14;
  });
  *ring = good;
  EXPECT_FALSE(CheckRing(mem.data(), off + 100, off, BURST_SHM_RING_CQ, &g)) << "short map";
  EXPECT_FALSE(CheckRing(mem.data(), mem.size(), off + 8, BURST_SHM_RING_CQ, &g)) << "align";
  EXPECT_FALSE(CheckRing(mem.data(), mem.size(), ~uint64_t{0} - 63, BURST_SHM_RING_CQ, &g));
  EXPECT_FALSE(CheckRegion(mem.data(), mem.size(), BURST_SHM_REGION_QP)) << "wrong kind";
  EXPECT_FALSE(CheckRegion(mem.data(), 100, BURST_SHM_REGION_CQ)) << "size beyond map";
}

TEST(ShmLayout, LayoutRejectsInvalidGeometry) {
  RegionLayout layout;
  const RingSpec bad_size[] = {{BURST_SHM_RING_SQ, 1, RingGeometry{4, 100}, 1, 0}};
  EXPECT_FALSE(LayoutRings(bad_size, &layout).ok());
  const RingSpec too_many[] = {{BURST_SHM_RING_SQ, 1, RingGeometry{20, 64}, 1, 0}};
  EXPECT_FALSE(LayoutRings(too_many, &layout).ok());
  EXPECT_FALSE(LayoutRings({}, &layout).ok());
  EXPECT_FALSE(LayoutDoorbell(BURST_SHM_MAX_LOG2_SLOTS + 1, &layout).ok());
  ASSERT_TRUE(LayoutDoorbell(10, &layout).ok());
  EXPECT_GE(layout.size, sizeof(burst_shm_region) + sizeof(burst_shm_doorbell) + 8 * 1024);
}

TEST(ShmLayout, DoorbellHeaderChecks) {
  RegionLayout layout;
  ASSERT_TRUE(LayoutDoorbell(8, &layout).ok());
  std::vector<uint8_t> mem(layout.size);
  InitDoorbellRegion(mem.data(), layout, 3, 8, 1000000);
  uint32_t log2 = 0;
  ASSERT_TRUE(CheckRegion(mem.data(), mem.size(), BURST_SHM_REGION_DOORBELL));
  ASSERT_TRUE(CheckDoorbell(mem.data(), mem.size(), layout.part_offset[0], &log2));
  EXPECT_EQ(log2, 8u);
  auto* db = reinterpret_cast<burst_shm_doorbell*>(mem.data() + layout.part_offset[0]);
  db->log2_slots = 12;  // num_slots no longer matches, and it would not fit
  EXPECT_FALSE(CheckDoorbell(mem.data(), mem.size(), layout.part_offset[0], &log2));
  db->log2_slots = 8;
  EXPECT_FALSE(
      CheckDoorbell(mem.data(), layout.part_offset[0] + 1000, layout.part_offset[0], &log2));
}

TEST(ShmRegion, SizeIsSealedAgainstTheApplication) {
  ShmRegion daemon_side;
  ASSERT_TRUE(ShmRegion::Create("burst-test-seal", 2 * 4096, &daemon_side).ok());
  ShmRegion app_side;
  ASSERT_TRUE(ShmRegion::Map(daemon_side.fd(), &app_side).ok());
  EXPECT_EQ(app_side.size(), 2u * 4096);
  // A hostile application cannot shrink the memfd under burstd's mapping.
  errno = 0;
  EXPECT_NE(ftruncate(app_side.fd(), 4096), 0);
  EXPECT_EQ(errno, EPERM);
  EXPECT_NE(ftruncate(app_side.fd(), 4 * 4096), 0);
  // Writes through one mapping show through the other.
  app_side.data()[5000] = 0x5a;
  EXPECT_EQ(daemon_side.data()[5000], 0x5a);
  EXPECT_FALSE(ShmRegion::Create("burst-test-bad", 100, &daemon_side).ok());
}

TEST(ShmRegion, MapRefusesAnUnsealedFd) {
  const int fd = memfd_create("burst-test-unsealed", MFD_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, 4096), 0);
  ShmRegion r;
  EXPECT_FALSE(ShmRegion::Map(fd, &r).ok());
  close(fd);
}

}  // namespace
}  // namespace burst::shm
