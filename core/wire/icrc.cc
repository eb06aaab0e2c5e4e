// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
#include "core/wire/icrc.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "core/wire/bth.h"
#include "core/wire/ipv4.h"
#include "core/wire/ipv6.h"
#include "core/wire/udp.h"

namespace burst::wire {
namespace {

constexpr uint32_t kLrhStandIn = 8;          // bytes of 0xFF in front of the IP header
constexpr uint32_t kIpv4MaxHeader = 15 * 4;  // IHL 15
constexpr uint32_t kMaxMasked = kLrhStandIn + kIpv4MaxHeader + sizeof(UdpHdr) + sizeof(Bth);

// Byte offsets of the masked fields.
constexpr uint32_t kIpv4Tos = 1;
constexpr uint32_t kIpv4Ttl = 8;
constexpr uint32_t kIpv4Checksum = 10;
constexpr uint32_t kIpv6HopLimit = 7;
constexpr uint32_t kUdpChecksum = 6;

// ISA-L 2.30's AVX-512 CRC (crc32_gzip_refl_by16_10, used from 256 bytes on)
// returns with dirty upper ZMM state: it never executes vzeroupper. Legacy-SSE
// code that runs afterwards (GCC's default codegen for x86-64, in this file and
// anywhere else in the process) then pays a state-transition penalty: measured
// here, a 1 KB ICRC took 190 ns instead of 34 ns. So every ICRC ends with
// vzeroupper when the CPU has AVX.
inline void clear_upper_state() {
#if defined(__AVX__)
  _mm256_zeroupper();
#elif defined(__x86_64__)
  static const bool has_avx = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx") != 0;
  }();
  if (has_avx) {
    // The compiler holds no 256-bit values in non-AVX code; the clobbers keep it
    // from caching anything in these registers across the instruction anyway.
    asm volatile("vzeroupper" ::
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
                       "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
  }
#endif
}

// Any IP header length, any (even truncated) input: copy the headers to the
// stack byte by byte, mask them, then CRC the rest in place.
uint32_t icrc_generic(const uint8_t* l3, uint32_t l3_len, bool ipv6) {
  uint32_t ip_hdr = sizeof(Ipv6Hdr);
  if (!ipv6) {
    ip_hdr = l3_len > 0 ? uint32_t{l3[0] & 0x0Fu} * 4 : 0;
    ip_hdr = std::max<uint32_t>(ip_hdr, sizeof(Ipv4Hdr));
  }
  // Headers to mask: IP + UDP + BTH, clamped to what is there.
  const uint32_t hdr = std::min<uint32_t>(ip_hdr + sizeof(UdpHdr) + sizeof(Bth), l3_len);

  uint8_t m[kMaxMasked];
  std::memset(m, 0xFF, kLrhStandIn);
  uint8_t* h = m + kLrhStandIn;
  for (uint32_t i = 0; i < hdr; ++i) h[i] = l3[i];
  auto mask = [&](uint32_t off, uint32_t n) {
    for (uint32_t i = off; i < off + n && i < hdr; ++i) h[i] = 0xFF;
  };
  if (ipv6) {
    // The version stays; traffic class and flow label become ones.
    if (hdr > 0) h[0] |= 0x0F;
    mask(1, 3);
    mask(kIpv6HopLimit, 1);
  } else {
    mask(kIpv4Tos, 1);
    mask(kIpv4Ttl, 1);
    mask(kIpv4Checksum, 2);
  }
  mask(ip_hdr + kUdpChecksum, 2);
  mask(ip_hdr + sizeof(UdpHdr) + kBthResv8aOffset, 1);

  uint32_t crc = crc32_gzip_refl(0, m, kLrhStandIn + hdr);
  if (l3_len > hdr) crc = crc32_gzip_refl(crc, l3 + hdr, l3_len - hdr);
  return crc;
}

#if defined(__SSE2__)
// The common frames (IPv4 without options, IPv6), composed in 16-byte registers.
//
// Bytes written with narrow stores and then read back by ISA-L's 16-byte loads
// cannot be store-forwarded: the loads stall until the stores drain, and that
// stall (plus a `rep movs` for a variable-size memcpy) cost more than the CRC of
// a 1 KB frame. Here the masked headers are built with full 16-byte loads, ORs
// and stores, so every ISA-L load reads exactly one earlier store.
//
// The 8 x 0xFF prefix and the header lengths are not multiples of 16; the ICRC is
// rewritten so that they are. With gzip conventions crc32(init, M) = ~R(~init, M)
// for the bare CRC register R, and
//   R(~0, M) = R(0, (M[0..3] ^ FF FF FF FF) || M[4..])   (the state folds into 4 bytes)
//   R(0, 00 || M) = R(0, M)                             (zeros from state 0 are no-ops)
// so ICRC = ~R(~0, FF x8 || H || T) = crc32(~0, 00 x z || FF x4 || H || T) for any z.
//   IPv4 (H = 40 B): 00 x4 FF x4 H[0..8) | H[8..24) | H[24..40)
//   IPv6 (H = 60 B): FF x4 H[0..12) | H[12..28) | H[28..44) | H[44..60)
inline __m128i bytes_at(int pos, uint8_t value) {
  alignas(16) uint8_t b[16] = {};
  b[pos] = value;
  return _mm_load_si128(reinterpret_cast<const __m128i*>(b));
}

inline __m128i load16(const uint8_t* p) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
}

// The CRC of the N composed 16-byte chunks (stored whole, see above), then of
// the l3 bytes after the `hdr` header bytes the chunks stand for.
template <size_t N>
inline uint32_t crc_chunks_then_rest(const __m128i (&chunks)[N], const uint8_t* l3, uint32_t l3_len,
                                     uint32_t hdr) {
  alignas(16) uint8_t m[16 * N];
  for (size_t i = 0; i < N; ++i) _mm_store_si128(reinterpret_cast<__m128i*>(m + 16 * i), chunks[i]);
  const uint32_t crc = crc32_gzip_refl(~0u, m, sizeof(m));
  return l3_len > hdr ? crc32_gzip_refl(crc, l3 + hdr, l3_len - hdr) : crc;
}

uint32_t icrc_ipv4_sse2(const uint8_t* l3, uint32_t l3_len) {
  constexpr uint32_t kHdr = 20 + 8 + 12;
  // chunk 0: 00 x4, FF x4, H[0..8): TOS is H[1] -> byte 9.
  const __m128i prefix = _mm_set_epi32(0, 0, -1, 0);
  const __m128i c0 = _mm_or_si128(
      _mm_unpacklo_epi64(prefix, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(l3))),
      bytes_at(9, 0xFF));
  // chunk 1: H[8..24): TTL H[8] -> 0, checksum H[10..12) -> 2, 3.
  const __m128i m1 = _mm_set_epi32(0, 0, 0, static_cast<int>(0xFFFF00FFu));
  const __m128i c1 = _mm_or_si128(load16(l3 + 8), m1);
  // chunk 2: H[24..40): UDP checksum H[26..28) -> 2, 3; BTH byte 4 is H[32] -> 8.
  const __m128i m2 = _mm_set_epi32(0, 0xFF, 0, static_cast<int>(0xFFFF0000u));
  const __m128i c2 = _mm_or_si128(load16(l3 + 24), m2);
  return crc_chunks_then_rest({c0, c1, c2}, l3, l3_len, kHdr);
}

uint32_t icrc_ipv6_sse2(const uint8_t* l3, uint32_t l3_len) {
  constexpr uint32_t kHdr = 40 + 8 + 12;
  // chunk 0: FF x4, H[0..12): TC/flow label H[0] low nibble, H[1..4) -> 4..7;
  // hop limit H[7] -> 11.
  const __m128i m0 =
      _mm_set_epi32(0, static_cast<int>(0xFF000000u), static_cast<int>(0xFFFFFF0Fu), -1);
  const __m128i c0 = _mm_or_si128(_mm_slli_si128(load16(l3), 4), m0);
  const __m128i c1 = load16(l3 + 12);
  const __m128i c2 = load16(l3 + 28);
  // chunk 3: H[44..60): UDP checksum H[46..48) -> 2, 3; BTH byte 4 is H[52] -> 8.
  const __m128i m3 = _mm_set_epi32(0, 0xFF, 0, static_cast<int>(0xFFFF0000u));
  const __m128i c3 = _mm_or_si128(load16(l3 + 44), m3);
  return crc_chunks_then_rest({c0, c1, c2, c3}, l3, l3_len, kHdr);
}
#endif

}  // namespace

uint32_t icrc_compute(const uint8_t* l3, uint32_t l3_len, bool ipv6) {
  uint32_t crc;
#if defined(__SSE2__)
  if (ipv6 && l3_len >= 40 + 8 + 12) {
    crc = icrc_ipv6_sse2(l3, l3_len);
  } else if (!ipv6 && l3_len >= 20 + 8 + 12 && (l3[0] & 0x0F) == 5) {
    crc = icrc_ipv4_sse2(l3, l3_len);
  } else {
    crc = icrc_generic(l3, l3_len, ipv6);
  }
#else
  crc = icrc_generic(l3, l3_len, ipv6);
#endif
  clear_upper_state();
  return crc;
}

bool icrc_verify(const uint8_t* l3, uint32_t l3_len_incl_icrc, bool ipv6) {
  if (l3_len_incl_icrc < kIcrcBytes) return false;
  const uint32_t covered = l3_len_incl_icrc - kIcrcBytes;
  return icrc_compute(l3, covered, ipv6) == icrc_load(l3 + covered);
}

}  // namespace burst::wire
