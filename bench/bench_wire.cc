// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// Wire-format micro-benchmarks: ICRC (ISA-L vs zlib), parse_frame, FrameWriter.
#include <benchmark/benchmark.h>
#include <isa-l/crc.h>
#include <zlib.h>

#include <cstring>
#include <vector>

#include "core/wire/frame.h"

namespace burst::wire {
namespace {

PathHeaders bench_path() {
  PathHeaders p{};
  p.smac = {0x52, 0x54, 0x00, 0x99, 0x00, 0x02};
  p.dmac = {0x52, 0x54, 0x00, 0x99, 0x00, 0x01};
  p.sgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 99, 0, 12};
  p.dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 10, 99, 0, 11};
  p.hop_limit = 64;
  p.udp_sport = 0xC0DE;
  return p;
}

// An RC WRITE_MIDDLE frame whose L2 size is frame_len (payload = the rest).
std::vector<uint8_t> write_middle_frame(uint32_t frame_len) {
  const PathHeaders path = bench_path();
  const uint32_t payload = frame_len - frame_bytes(path, op::kRcRdmaWriteMiddle, 0);
  std::vector<uint8_t> f(frame_bytes(path, op::kRcRdmaWriteMiddle, payload));
  FrameWriter w(f.data(), static_cast<uint32_t>(f.size()), path, op::kRcRdmaWriteMiddle, payload);
  w.bth().set_dest_qpn(0x13);
  w.bth().set_psn(Psn(0xC9ECDC));
  for (uint32_t i = 0; i < payload; ++i) w.payload()[i] = static_cast<uint8_t>(i);
  w.finish();
  return f;
}

// The same masked-header ICRC as icrc_compute(), with zlib's crc32 as the CRC.
uint32_t icrc_zlib(const uint8_t* l3, uint32_t l3_len) {
  constexpr uint32_t kHdr = 20 + 8 + 12;
  uint8_t m[8 + kHdr];
  std::memset(m, 0xFF, 8);
  std::memcpy(m + 8, l3, kHdr);
  m[8 + 1] = m[8 + 8] = m[8 + 10] = m[8 + 11] = 0xFF;
  m[8 + 26] = m[8 + 27] = 0xFF;
  m[8 + 32] = 0xFF;
  uLong crc = crc32(0, m, sizeof(m));
  return static_cast<uint32_t>(crc32(crc, l3 + kHdr, l3_len - kHdr));
}

void set_per_kb(benchmark::State& state, uint32_t bytes) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  // Seconds per KB (printed with an SI prefix: "15n" = 15 ns per KB).
  state.counters["per_KB"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * bytes / 1024.0,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// ICRC of a whole frame (IP header .. pad), frame sizes 256 B .. 4 KB.
void BM_IcrcIsal(benchmark::State& state) {
  const auto f = write_middle_frame(static_cast<uint32_t>(state.range(0)));
  const uint32_t covered = static_cast<uint32_t>(f.size()) - 14 - 4;
  for (auto _ : state) benchmark::DoNotOptimize(icrc_compute(f.data() + 14, covered, false));
  set_per_kb(state, covered);
}
void BM_IcrcZlib(benchmark::State& state) {
  const auto f = write_middle_frame(static_cast<uint32_t>(state.range(0)));
  const uint32_t covered = static_cast<uint32_t>(f.size()) - 14 - 4;
  if (icrc_zlib(f.data() + 14, covered) != icrc_compute(f.data() + 14, covered, false)) {
    state.SkipWithError("zlib and ISA-L ICRC differ");
    return;
  }
  for (auto _ : state) benchmark::DoNotOptimize(icrc_zlib(f.data() + 14, covered));
  set_per_kb(state, covered);
}
// The bare CRC-32 over the same bytes (no masking), for reference.
void BM_Crc32Isal(benchmark::State& state) {
  const std::vector<uint8_t> b(static_cast<size_t>(state.range(0)), 0x5A);
  for (auto _ : state) benchmark::DoNotOptimize(crc32_gzip_refl(0, b.data(), b.size()));
  set_per_kb(state, static_cast<uint32_t>(b.size()));
}
void BM_Crc32Zlib(benchmark::State& state) {
  const std::vector<uint8_t> b(static_cast<size_t>(state.range(0)), 0x5A);
  for (auto _ : state) {
    benchmark::DoNotOptimize(crc32(0, b.data(), static_cast<uInt>(b.size())));
  }
  set_per_kb(state, static_cast<uint32_t>(b.size()));
}
BENCHMARK(BM_IcrcIsal)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Arg(4096);
BENCHMARK(BM_IcrcZlib)->Arg(256)->Arg(512)->Arg(1024)->Arg(2048)->Arg(4096);
BENCHMARK(BM_Crc32Isal)->Arg(256)->Arg(1024)->Arg(4096);
BENCHMARK(BM_Crc32Zlib)->Arg(256)->Arg(1024)->Arg(4096);

// Arguments {mtu, flag} for MTUs 1024 and 4096, the flag off and on.
void mtu_by(benchmark::internal::Benchmark* b, const char* flag) {
  b->ArgNames({"mtu", flag});
  for (int64_t mtu : {1024, 4096}) {
    for (int64_t on : {0, 1}) b->Args({mtu, on});
  }
}
void mtu_by_icrc(benchmark::internal::Benchmark* b) { mtu_by(b, "icrc"); }
void mtu_by_memcpy(benchmark::internal::Benchmark* b) { mtu_by(b, "memcpy"); }

// parse_frame of a WRITE_MIDDLE frame carrying an MTU of payload; arg 1 = verify ICRC.
void BM_ParseWriteMiddle(benchmark::State& state) {
  const PathHeaders path = bench_path();
  const auto mtu = static_cast<uint32_t>(state.range(0));
  const auto f = write_middle_frame(frame_bytes(path, op::kRcRdmaWriteMiddle, mtu));
  const bool verify = state.range(1) != 0;
  PacketView v{};
  for (auto _ : state) {
    const RxDrop r = parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v, verify);
    benchmark::DoNotOptimize(r);
    benchmark::DoNotOptimize(v.payload_len);
  }
  if (parse_frame(f.data(), static_cast<uint32_t>(f.size()), &v, true) != RxDrop::kNone) {
    state.SkipWithError("frame does not parse");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ParseWriteMiddle)->Apply(mtu_by_icrc);

// FrameWriter: headers + BTH fields + finish (ICRC over the payload included);
// arg 1 = also memcpy the payload from a source buffer. kFromTemplate: each
// frame started from a FrameTemplate saved from the first one, what the
// requester does for the MIDDLE packets of a message.
template <bool kFromTemplate>
void BM_BuildWriteMiddle(benchmark::State& state) {
  const PathHeaders path = bench_path();
  const auto mtu = static_cast<uint32_t>(state.range(0));
  const bool copy = state.range(1) != 0;
  const std::vector<uint8_t> src(mtu, 0xA5);
  std::vector<uint8_t> buf(frame_bytes(path, op::kRcRdmaWriteMiddle, mtu));
  const auto buf_len = static_cast<uint32_t>(buf.size());
  FrameTemplate tmpl;
  if constexpr (kFromTemplate) {
    FrameWriter(buf.data(), buf_len, path, op::kRcRdmaWriteMiddle, mtu).save(&tmpl);
  }
  uint32_t psn = 0;
  for (auto _ : state) {
    FrameWriter w = [&] {
      if constexpr (kFromTemplate)
        return FrameWriter(buf.data(), buf_len, tmpl);
      else
        return FrameWriter(buf.data(), buf_len, path, op::kRcRdmaWriteMiddle, mtu);
    }();
    w.bth().set_dest_qpn(0x13);
    w.bth().set_psn(Psn(psn++));
    if (copy) std::memcpy(w.payload(), src.data(), mtu);
    benchmark::DoNotOptimize(w.finish());
    benchmark::ClobberMemory();
  }
  PacketView v{};
  if (parse_frame(buf.data(), buf_len, &v) != RxDrop::kNone) {
    state.SkipWithError("built frame does not parse");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BuildWriteMiddle<false>)->Name("BM_BuildWriteMiddle")->Apply(mtu_by_memcpy);
BENCHMARK(BM_BuildWriteMiddle<true>)->Name("BM_BuildWriteMiddleTemplate")->Apply(mtu_by_memcpy);

// Header-only cost: a zero-payload ACK (no payload to checksum).
void BM_BuildAck(benchmark::State& state) {
  const PathHeaders path = bench_path();
  std::vector<uint8_t> buf(frame_bytes(path, op::kRcAcknowledge, 0));
  uint32_t msn = 0;
  for (auto _ : state) {
    FrameWriter w(buf.data(), static_cast<uint32_t>(buf.size()), path, op::kRcAcknowledge, 0);
    w.bth().set_dest_qpn(0x13);
    w.aeth().set_syndrome(AethSyndrome::ack());
    w.aeth().set_msn(++msn);
    benchmark::DoNotOptimize(w.finish());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BuildAck);

}  // namespace
}  // namespace burst::wire
