// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Engine micro-benchmarks: nanoseconds per packet on the transport's RX and TX
// paths for a stream of RDMA WRITEs (almost all WRITE_MIDDLE), at MTU 1024 and
// 4096, with and without ICRC verification on receive. The RX time includes
// the payload copy into the MR (the CPU copy engine); ICRC alone is in bench_wire.
#include <benchmark/benchmark.h>

#include "bench/engine_loop.h"

namespace {

using burst::bench::WriteStream;

enum Part { kTx, kRx };

void run(benchmark::State& state, Part part) {
  const auto mtu = state.range(0) == 4096 ? burst::core::Mtu::k4096 : burst::core::Mtu::k1024;
  WriteStream s(mtu, state.range(1) != 0);
  for (int i = 0; i < 200; ++i) s.round();  // warm up: caches, windows, ACK clocking
  uint64_t packets = 0;
  for (auto _ : state) {
    uint64_t tx = 0, rx = 0, ack = 0;
    uint32_t n = 0;
    // Time only the part under test, over enough rounds to be well above the clock's cost.
    for (int r = 0; r < 16; ++r) n += s.round(&tx, &rx, &ack);
    packets += n;
    state.SetIterationTime(static_cast<double>(part == kTx ? tx : rx) / 1e9);
    state.counters["pkts_per_iter"] = n;
  }
  state.counters["ns_per_pkt"] = benchmark::Counter(
      static_cast<double>(packets), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetItemsProcessed(static_cast<int64_t>(packets));
}

void BM_EngineRxWrite(benchmark::State& state) { run(state, kRx); }
void BM_EngineTxWrite(benchmark::State& state) { run(state, kTx); }

// Args: {path MTU, verify ICRC on receive}
BENCHMARK(BM_EngineRxWrite)
    ->Args({1024, 1})
    ->Args({1024, 0})
    ->Args({4096, 1})
    ->Args({4096, 0})
    ->UseManualTime();
BENCHMARK(BM_EngineTxWrite)->Args({1024, 1})->Args({4096, 1})->UseManualTime();

}  // namespace
