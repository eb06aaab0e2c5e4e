// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Micro-benchmarks of the shared-memory fast paths, single thread (the cost
// of the instructions and atomics, not of cache-line transfers between cores):
//   doorbell post + consume, one at a time and in bursts of 32;
//   SQ ring: produce one 128-byte WQE + consume it (copy-out) per iteration.
// Run: shm_doorbell_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstring>
#include <thread>
#include <vector>

#include "shm/doorbell.h"
#include "shm/layout.h"
#include "shm/shm_ring.h"
#include "shm_test_util.h"

namespace burst::shm {
namespace {

DoorbellRecord Rec(uint32_t i) {
  DoorbellRecord r;
  r.handle = i & 0xffff;
  r.kind = BURST_SHM_DB_SQ;
  r.value = static_cast<uint16_t>(i);
  return r;
}

void BM_DoorbellPostConsume(benchmark::State& state) {
  testing::HeapRegion mem(DoorbellBytes(10));
  auto* hdr = reinterpret_cast<burst_shm_doorbell*>(mem.data());
  const DoorbellProducer prod(hdr, 10);
  DoorbellConsumer cons(hdr, 10, 1'000'000);
  DoorbellRecord out[1];
  uint32_t i = 0;
  for (auto _ : state) {
    if (prod.Post(Rec(i++)) != PostResult::kOk) state.SkipWithError("post failed");
    if (cons.Poll(out, 1, 0) != 1) state.SkipWithError("poll failed");
    benchmark::DoNotOptimize(out[0]);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DoorbellPostConsume);

void BM_DoorbellBurst32(benchmark::State& state) {
  testing::HeapRegion mem(DoorbellBytes(10));
  auto* hdr = reinterpret_cast<burst_shm_doorbell*>(mem.data());
  const DoorbellProducer prod(hdr, 10);
  DoorbellConsumer cons(hdr, 10, 1'000'000);
  DoorbellRecord out[32];
  uint32_t i = 0;
  for (auto _ : state) {
    for (int k = 0; k < 32; ++k) prod.Post(Rec(i++));
    if (cons.Poll(out, 32, 0) != 32) state.SkipWithError("poll failed");
    benchmark::DoNotOptimize(out[31]);
  }
  state.SetItemsProcessed(state.iterations() * 32);
}
BENCHMARK(BM_DoorbellBurst32);

// Two threads: one producer posting, the consumer polling (cross-core traffic).
void BM_DoorbellTwoThreads(benchmark::State& state) {
  testing::HeapRegion mem(DoorbellBytes(10));
  auto* hdr = reinterpret_cast<burst_shm_doorbell*>(mem.data());
  const DoorbellProducer prod(hdr, 10);
  DoorbellConsumer cons(hdr, 10, 1'000'000'000);
  constexpr uint32_t kBatch = 100000;
  for (auto _ : state) {
    std::thread producer([&] {
      for (uint32_t i = 0; i < kBatch;) {
        if (prod.Post(Rec(i)) == PostResult::kOk) ++i;
      }
    });
    DoorbellRecord out[32];
    uint32_t got = 0;
    while (got < kBatch) got += cons.Poll(out, 32, testing::NowNs());
    producer.join();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_DoorbellTwoThreads)->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_SqRingProduceConsume(benchmark::State& state) {
  const RingGeometry g{8, SendEntrySize(4, 0)};  // 256 x 128 B
  testing::HeapRegion mem(RingBytes(g));
  RingProducer prod(mem.data(), 0, g);
  RingConsumer cons(mem.data(), 0, g);
  std::vector<uint8_t> wqe(g.entry_size, 0x5a), copy(g.entry_size);
  for (auto _ : state) {
    if (prod.Reserve(1) != 1) state.SkipWithError("full");
    std::memcpy(prod.Entry(0), wqe.data(), g.entry_size);
    prod.Publish(1);
    if (cons.Peek(1) != 1) state.SkipWithError("empty");
    cons.CopyEntry(0, copy.data());
    cons.Release(1);
    benchmark::DoNotOptimize(copy.data());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SqRingProduceConsume);

}  // namespace
}  // namespace burst::shm
