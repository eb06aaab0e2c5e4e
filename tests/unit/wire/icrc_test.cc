// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
// ICRC: ISA-L against zlib, masking of the variant fields, segment handling.
#include "core/wire/icrc.h"

#include <gtest/gtest.h>
#include <isa-l/crc.h>
#include <zlib.h>

#include <random>
#include <vector>

#include "tests/unit/wire/wire_test_util.h"

namespace burst::wire {
namespace {

std::vector<uint8_t> random_bytes(std::mt19937& rng, size_t n) {
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(Crc32, IsalEqualsZlibIncludingChaining) {
  std::mt19937 rng(1);
  for (size_t n : {0u, 1u, 3u, 7u, 8u, 15u, 16u, 63u, 64u, 65u, 255u, 1024u, 4096u, 9000u}) {
    const auto buf = random_bytes(rng, n);
    const uint32_t z = static_cast<uint32_t>(crc32(0, buf.data(), static_cast<uInt>(n)));
    EXPECT_EQ(crc32_gzip_refl(0, buf.data(), n), z) << n;
    // Split at every position of small buffers, a few positions of big ones.
    for (size_t cut = 0; cut <= n; cut += (n < 100 ? 1 : 97)) {
      uint32_t c = crc32_gzip_refl(0, buf.data(), cut);
      c = crc32_gzip_refl(c, buf.data() + cut, n - cut);
      EXPECT_EQ(c, z) << n << " cut " << cut;
    }
  }
  // A known value: CRC-32 of "123456789" is 0xCBF43926.
  const char* s = "123456789";
  EXPECT_EQ(crc32_gzip_refl(0, reinterpret_cast<const uint8_t*>(s), 9), 0xCBF43926u);
}

// A syntactically plausible L3 datagram of random content: version/IHL set.
std::vector<uint8_t> random_l3(std::mt19937& rng, bool ipv6, uint32_t ihl, uint32_t rest) {
  const uint32_t ip_hdr = ipv6 ? 40 : ihl * 4;
  auto v = random_bytes(rng, ip_hdr + 8 + 12 + rest);
  v[0] = ipv6 ? static_cast<uint8_t>(0x60 | (v[0] & 0x0F)) : static_cast<uint8_t>(0x40 | ihl);
  return v;
}

TEST(Icrc, MatchesReferenceForRandomDatagrams) {
  std::mt19937 rng(2);
  for (int iter = 0; iter < 400; ++iter) {
    const bool ipv6 = iter % 2;
    const uint32_t ihl = 5 + iter % 11;
    const uint32_t rest = static_cast<uint32_t>(rng() % 4200);
    const auto l3 = random_l3(rng, ipv6, ihl, rest);
    const auto len = static_cast<uint32_t>(l3.size());
    EXPECT_EQ(icrc_compute(l3.data(), len, ipv6), test::reference_icrc(l3.data(), len, ipv6))
        << "ipv6=" << ipv6 << " ihl=" << ihl << " len=" << len;
  }
}

TEST(Icrc, MaskedBytesDoNotMatterOthersDo) {
  std::mt19937 rng(3);
  for (bool ipv6 : {false, true}) {
    for (uint32_t ihl : {5u, 7u}) {
      if (ipv6 && ihl != 5) continue;
      const auto l3 = random_l3(rng, ipv6, ihl, 64);
      const uint32_t len = static_cast<uint32_t>(l3.size());
      const uint32_t base = icrc_compute(l3.data(), len, ipv6);
      const uint32_t ip_hdr = ipv6 ? 40 : ihl * 4;
      for (uint32_t pos = 0; pos < len; ++pos) {
        bool masked;
        if (ipv6) {
          masked = pos == 1 || pos == 2 || pos == 3 || pos == 7;
        } else {
          masked = pos == 1 || pos == 8 || pos == 10 || pos == 11;
        }
        masked = masked || pos == ip_hdr + 6 || pos == ip_hdr + 7 || pos == ip_hdr + 8 + 4;
        for (uint8_t flip : {0x01, 0x80, 0xFF}) {
          // IPv6 byte 0: the traffic class nibble is masked, the version is not.
          if (ipv6 && pos == 0) masked = (flip & 0xF0) == 0;
          auto c = l3;
          c[pos] ^= flip;
          EXPECT_EQ(icrc_compute(c.data(), len, ipv6) == base, masked)
              << "ipv6=" << ipv6 << " pos=" << pos << " flip=" << int{flip};
        }
      }
      if (ipv6) {
        // Only the low nibble of byte 0 (traffic class) is masked; the version is not.
        auto c = l3;
        c[0] ^= 0x0F;
        EXPECT_EQ(icrc_compute(c.data(), len, ipv6), base);
        c[0] ^= 0x10;
        EXPECT_NE(icrc_compute(c.data(), len, ipv6), base);
      }
    }
  }
}

TEST(Icrc, VerifyReadsTheLittleEndianTrailer) {
  std::mt19937 rng(4);
  auto l3 = random_l3(rng, false, 5, 100);
  const uint32_t covered = static_cast<uint32_t>(l3.size());
  const uint32_t crc = icrc_compute(l3.data(), covered, false);
  l3.resize(covered + 4);
  icrc_store(l3.data() + covered, crc);
  EXPECT_EQ(l3[covered], crc & 0xFF);
  EXPECT_EQ(l3[covered + 3], crc >> 24);
  EXPECT_EQ(icrc_load(l3.data() + covered), crc);
  EXPECT_TRUE(icrc_verify(l3.data(), covered + 4, false));
  l3[covered + 3] ^= 1;
  EXPECT_FALSE(icrc_verify(l3.data(), covered + 4, false));
  EXPECT_FALSE(icrc_verify(l3.data(), 3, false));
  EXPECT_FALSE(icrc_verify(l3.data(), 0, false));
}

TEST(Icrc, ShortInputsStayInBounds) {
  // Every length from 0 to past the masked headers, from an exactly sized heap
  // buffer each time (ASan reports any read past the end).
  std::mt19937 rng(5);
  for (bool ipv6 : {false, true}) {
    const auto full = random_l3(rng, ipv6, 15, 8);
    for (uint32_t n = 0; n <= full.size(); ++n) {
      std::vector<uint8_t> exact(full.begin(), full.begin() + n);
      const uint32_t crc = icrc_compute(exact.data(), n, ipv6);
      if (n >= (ipv6 ? 40u : 60u) + 8 + 12) {
        EXPECT_EQ(crc, test::reference_icrc(exact.data(), n, ipv6)) << n;
      }
      EXPECT_FALSE(icrc_verify(exact.data(), n, ipv6) && n < 4);
    }
  }
}

}  // namespace
}  // namespace burst::wire
