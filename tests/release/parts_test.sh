#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# A plain `cmake -S . -B build` (issue 16): BURST_WITH_XDP/DPDK/DSA default to AUTO.
#   - with no pkg-config module to be found (PKG_CONFIG_LIBDIR empty), configuration
#     succeeds and prints "<PART>: skipped (<what> not found; apt-get install <pkg>)"
#     for each part;
#   - -DBURST_WITH_XDP=ON then fails with the same hint;
#   - with this machine's packages, each part whose module is installed says "built".
# Configuration only (seconds); no build. Usage: parts_test.sh SOURCE_DIR SCRATCH_DIR
set -uo pipefail
SRC=${1:?usage: parts_test.sh SOURCE_DIR SCRATCH_DIR}
DIR=${2:?}
command -v cmake >/dev/null || { echo "SKIP: cmake not found"; exit 77; }
rm -rf "$DIR"
mkdir -p "$DIR/empty-pc"
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check() {  # FILE LINE
  grep -qxF -- "$2" "$1" || { cat "$1"; fail "no line '$2'"; }
}

echo "--- nothing found: every part skipped, saying what to install"
PKG_CONFIG_LIBDIR=$DIR/empty-pc cmake -S "$SRC" -B "$DIR/none" -DBURST_BENCH=OFF \
  -DBURST_BUILD_TESTS=OFF >"$DIR/none.log" 2>&1 || { cat "$DIR/none.log"; fail "configure failed"; }
grep -E -- '-- (XDP|DPDK|DSA):' "$DIR/none.log"
check "$DIR/none.log" "-- XDP: skipped (libxdp, libbpf not found; apt-get install libxdp-dev libbpf-dev)"
check "$DIR/none.log" "-- DPDK: skipped (libdpdk not found; apt-get install dpdk-dev)"
check "$DIR/none.log" "-- DSA: skipped (libaccel-config not found; apt-get install libaccel-config-dev)"

echo "--- explicit ON with the dependency missing fails"
if PKG_CONFIG_LIBDIR=$DIR/empty-pc cmake -S "$SRC" -B "$DIR/on" -DBURST_BENCH=OFF \
  -DBURST_BUILD_TESTS=OFF -DBURST_WITH_DPDK=ON >"$DIR/on.log" 2>&1; then
  cat "$DIR/on.log"
  fail "BURST_WITH_DPDK=ON configured without libdpdk"
fi
grep -A2 "CMake Error" "$DIR/on.log"
tr -s ' \n' ' ' <"$DIR/on.log" | grep -qF "DPDK: BURST_WITH_DPDK=ON but libdpdk not found; apt-get install dpdk-dev" ||
  fail "the failure does not say what to install"

echo "--- this machine's packages"
cmake -S "$SRC" -B "$DIR/auto" -DBURST_BENCH=OFF -DBURST_BUILD_TESTS=OFF >"$DIR/auto.log" 2>&1 ||
  { cat "$DIR/auto.log"; fail "configure failed"; }
grep -E -- '-- (XDP|DPDK|DSA):' "$DIR/auto.log"
for part in XDP:libxdp DPDK:libdpdk DSA:libaccel-config; do
  name=${part%%:*} module=${part#*:}
  if pkg-config --exists "$module"; then
    grep -q -- "^-- $name: built (" "$DIR/auto.log" || fail "$name: $module is installed but not built"
  else
    grep -q -- "^-- $name: skipped (" "$DIR/auto.log" || fail "$name: $module is missing but not skipped"
  fi
done
echo "PASS"
