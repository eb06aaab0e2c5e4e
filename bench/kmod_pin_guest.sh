#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Provider-path ib_write_bw with malloc'd buffers, the kernel assistant's pins vs today's
# /proc/self/mem path (BURST_KMOD_PIN=0), side by side in one run of one Debian 6.1 guest (the only
# place the module loads; this host's kernel cannot): tests/interop/kmod_pin.sh with
# KMOD_PIN_BENCH=1 runs, after its checks, 64 KiB RDMA WRITEs for 5 s per run, client and server on
# one burstd (--backend loopback, one worker), alternating kmod-pin and mem-fd (KMOD_PIN_ROUNDS
# times, default 2), and
# prints goodput and burstd's CPU time (utime + stime of the whole process) per GB moved.
# Usage (root): flock /work/guest.lock bench/kmod_pin_guest.sh [BUILD_DIR]
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-$HERE/../build/default}
OUT=$(mktemp)
trap 'rm -f "$OUT"' EXIT
KMOD_PIN_BENCH=1 KMOD_PIN_ROUNDS=${KMOD_PIN_ROUNDS:-2} bash "$HERE/../tests/interop/kmod_pin.sh" "$BUILD" | tee "$OUT"
rc=${PIPESTATUS[0]}
echo
echo "| run | goodput (Gb/s) | burstd CPU (s) | GB | burstd CPU s/GB |"
echo "|---|---|---|---|---|"
sed -n 's/^BENCH \([a-z-]*\): goodput \([0-9.]*\) Gb\/s, burstd CPU \([0-9.]*\) s for \([0-9.]*\) GB: \([0-9.]*\) s\/GB/| \1 | \2 | \3 | \4 | \5 |/p' "$OUT"
exit "$rc"
