#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# package.install_tree: the cheap check of the install rules (packaging/
# CMakeLists.txt) for every build: `cmake --install` of this build tree into a
# scratch DESTDIR puts each file the package ships where the package puts it
# (relative to the prefix; package.deb checks the real package).
# Usage: install_tree_test.sh BUILD_DIR
set -uo pipefail
BUILD=${1:?usage: install_tree_test.sh BUILD_DIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! DESTDIR="$tmp" cmake --install "$BUILD" >"$tmp.log" 2>&1; then
  echo "FAIL: cmake --install"; cat "$tmp.log"; rm -f "$tmp.log"; exit 1
fi
rm -f "$tmp.log"
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$BUILD/CMakeCache.txt")
fail=0
have() {  # have PATTERN: exactly one installed file matches (a find -path pattern)
  local n
  n=$(find "$tmp" -type f -path "$tmp$1" | wc -l)
  if [[ $n == 1 ]]; then echo "ok: $1"; else echo "FAIL: $1 ($n files)"; fail=1; fi
}
have "$prefix/sbin/burstd"
have "$prefix/bin/burstctl"
have "$prefix/bin/burst-xfer"
have "$prefix/lib*/libibverbs/libburst-rdmav34.so"
have "$prefix/lib*/libibverbs/libburst-shim.so"
have "*/etc/libibverbs.d/burst.driver"
have "$prefix/share/man/man8/burstd.8"
have "$prefix/share/man/man8/burstctl.8"
have "$prefix/share/man/man5/burstd.conf.5"
have "$prefix/share/man/man1/burst-xfer.1"
echo "== installed:"; (cd "$tmp" && find . -type f | sort)
exit $fail
