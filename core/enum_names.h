/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Names of an enum's values from one constexpr table instead of a switch. The
// table lists one name per enumerator in declaration order (values 0..N-1);
// static_assert its size against the enum's count next to it, so that adding
// an enumerator without its name does not build.
#pragma once

#include <cstddef>
#include <string_view>

namespace burst {

// names[e], or `fallback` for a value outside the table.
template <typename E, std::size_t N>
constexpr const char* enum_name(const char* const (&names)[N], E e, const char* fallback = "?") {
  const auto i = static_cast<std::size_t>(e);
  return i < N ? names[i] : fallback;
}

// The value whose name is `s`, in *out; false when no name matches.
template <typename E, std::size_t N>
constexpr bool enum_parse(const char* const (&names)[N], std::string_view s, E* out) {
  for (std::size_t i = 0; i < N; ++i) {
    if (s == names[i]) {
      *out = static_cast<E>(i);
      return true;
    }
  }
  return false;
}

}  // namespace burst
