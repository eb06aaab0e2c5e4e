/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Big-endian wire field types. Each holds the raw bytes (alignment 1), so a
// header struct built from them has no padding and can overlay any frame byte
// without alignment concerns. Values go in and out only through get()/set():
// there is no implicit conversion to or from host integers.
#pragma once

#include <cstdint>
#include <type_traits>

namespace burst::wire {

// Loads and stores of big-endian integers at any address.
constexpr uint16_t load_be16(const uint8_t* p) {
  return static_cast<uint16_t>((uint32_t{p[0]} << 8) | p[1]);
}
constexpr uint32_t load_be24(const uint8_t* p) {
  return (uint32_t{p[0]} << 16) | (uint32_t{p[1]} << 8) | p[2];
}
constexpr uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
constexpr uint64_t load_be64(const uint8_t* p) {
  return (uint64_t{load_be32(p)} << 32) | load_be32(p + 4);
}
constexpr void store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
constexpr void store_be24(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 16);
  p[1] = static_cast<uint8_t>(v >> 8);
  p[2] = static_cast<uint8_t>(v);
}
constexpr void store_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
constexpr void store_be64(uint8_t* p, uint64_t v) {
  store_be32(p, static_cast<uint32_t>(v >> 32));
  store_be32(p + 4, static_cast<uint32_t>(v));
}

struct Be16 {
  constexpr uint16_t get() const { return load_be16(raw); }
  constexpr void set(uint16_t v) { store_be16(raw, v); }
  uint8_t raw[2];
};

// 24-bit field (PSN, QPN, MSN). set() keeps the low 24 bits of its argument.
struct Be24 {
  static constexpr uint32_t kMask = 0xFFFFFF;
  constexpr uint32_t get() const { return load_be24(raw); }
  constexpr void set(uint32_t v) { store_be24(raw, v & kMask); }
  uint8_t raw[3];
};

struct Be32 {
  constexpr uint32_t get() const { return load_be32(raw); }
  constexpr void set(uint32_t v) { store_be32(raw, v); }
  uint8_t raw[4];
};

struct Be64 {
  constexpr uint64_t get() const { return load_be64(raw); }
  constexpr void set(uint64_t v) { store_be64(raw, v); }
  uint8_t raw[8];
};

static_assert(sizeof(Be16) == 2 && alignof(Be16) == 1 && std::is_standard_layout_v<Be16>);
static_assert(sizeof(Be24) == 3 && alignof(Be24) == 1 && std::is_standard_layout_v<Be24>);
static_assert(sizeof(Be32) == 4 && alignof(Be32) == 1 && std::is_standard_layout_v<Be32>);
static_assert(sizeof(Be64) == 8 && alignof(Be64) == 1 && std::is_standard_layout_v<Be64>);
static_assert(std::is_trivially_copyable_v<Be64> && !std::is_convertible_v<Be32, uint32_t> &&
              !std::is_convertible_v<uint32_t, Be32>);

}  // namespace burst::wire
