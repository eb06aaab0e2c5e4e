/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Words of the configuration and the log for enum values, as constexpr tables
// read both ways: the value of a word (parsing), the word of a value (names).
#pragma once

#include <cstddef>
#include <string_view>

namespace burst::burstd {

template <class T>
struct Word {
  const char* word;
  T value;
};

// The value of `word` in the table; false when the table does not have it.
template <class T, size_t N>
bool find_word(const Word<T> (&table)[N], std::string_view word, T* out) {
  for (const Word<T>& w : table) {
    if (word == w.word) {
      *out = w.value;
      return true;
    }
  }
  return false;
}

// The word of `value`; `fallback` when the table does not have it.
template <class T, size_t N>
const char* word_of(const Word<T> (&table)[N], T value, const char* fallback) {
  for (const Word<T>& w : table) {
    if (w.value == value) return w.word;
  }
  return fallback;
}

}  // namespace burst::burstd
