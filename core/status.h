/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
// The error convention of the C++ core: every fallible call returns a Status.
// Errc values map one-to-one onto the errno values the verbs layer reports
// (to_errno()), so the control plane can hand them to libibverbs unchanged.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace burst::core {

enum class Errc : uint8_t {
  kOk = 0,
  kInvalid,       // EINVAL: bad argument or attribute
  kNoMemory,      // ENOMEM: table or queue full
  kNotFound,      // ENOENT: no such object
  kBusy,          // EBUSY: object still in use
  kNotSupported,  // EOPNOTSUPP
  kState,         // EINVAL: operation not allowed in the object's current state
  kPermission,    // EACCES
};

class [[nodiscard]] Status {
 public:
  constexpr Status() = default;
  constexpr Status(Errc e) : errc_(e) {}  // NOLINT(google-explicit-constructor): `return Errc::kX;`
  static constexpr Status Ok() { return Status(); }

  constexpr bool ok() const { return errc_ == Errc::kOk; }
  constexpr Errc errc() const { return errc_; }
  constexpr int to_errno() const {
    const auto i = static_cast<size_t>(errc_);
    return i < std::size(kErrno) ? kErrno[i] : EINVAL;
  }
  constexpr bool operator==(const Status&) const = default;

 private:
  // The errno of each Errc, in declaration order.
  static constexpr int kErrno[] = {0, EINVAL, ENOMEM, ENOENT, EBUSY, EOPNOTSUPP, EINVAL, EACCES};
  static_assert(std::size(kErrno) == static_cast<size_t>(Errc::kPermission) + 1);

  Errc errc_ = Errc::kOk;
};

}  // namespace burst::core
