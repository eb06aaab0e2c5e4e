/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// Entry points the provider does not implement yet, following the libibverbs
// convention: a verb returning int returns EOPNOTSUPP, a verb returning a
// pointer sets errno = EOPNOTSUPP and returns NULL. The verb's name goes to
// stderr when BURST_PROVIDER_DEBUG is set, so "which verb did the application
// need" is one environment variable away.
//
//   .alloc_pd = BURST_UNSUPPORTED(alloc_pd),
//
// instantiates a function with exactly the slot's signature.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <type_traits>

#include "provider/provider.h"

namespace burst::provider {

template <size_t N>
struct VerbName {
  constexpr VerbName(const char (&s)[N]) { std::copy_n(s, N, name); }  // NOLINT: implicit by design
  char name[N];
};

template <typename Fn, VerbName kName>
struct Unsupported;

template <VerbName kName, typename R, typename... Args>
struct Unsupported<R (*)(Args...), kName> {
  static R fn(Args...) {
    debug_log("burst: ibv verb '%s' is not implemented yet (EOPNOTSUPP)", kName.name);
    if constexpr (std::is_pointer_v<R>) {
      errno = EOPNOTSUPP;
      return nullptr;
    } else if constexpr (std::is_same_v<R, int>) {
      return EOPNOTSUPP;
    } else {
      static_assert(std::is_void_v<R>);
    }
  }
};

#define BURST_UNSUPPORTED(op) \
  (::burst::provider::Unsupported<decltype(verbs_context_ops::op), #op>::fn)

}  // namespace burst::provider
