#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Sets up and runs every test of burst: the default build (RelWithDebInfo with
# the test hooks) with all tests, among them release.no_test_hooks (builds the
# release preset's shipped binaries and checks they carry no test hook), the
# ASan+UBSan build of the unit and engine tests, and a bounded libFuzzer run.
# Usage (as root, on Debian 12):  ./scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}

./scripts/install-deps.sh

echo "== default build (RelWithDebInfo, test hooks) + all tests"
cmake --preset default
cmake --build build/default -j"$JOBS"
ctest --preset default -j1 --timeout 900

echo "== ASan + UBSan build + tests"
cmake --preset asan
cmake --build build/asan -j"$JOBS"
ctest --preset asan -j1 --timeout 1800 -LE slow

echo "== libFuzzer targets (bounded runs)"
cmake --preset fuzz
cmake --build build/fuzz -j"$JOBS" --target pcap_to_seeds fuzz_parse_frame fuzz_engine_rx ctl_dispatch_seeds fuzz_ctl_dispatch \
  fuzz_ib_cm
ctest --test-dir build/fuzz -L fuzz --output-on-failure --timeout 300

echo "== all tests passed"
