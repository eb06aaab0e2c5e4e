#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Instructions per packet on the transport's RX and TX paths, counted by
# callgrind (repeatable on a noisy machine). The payload copy (memcpy) and the
# ICRC (wire::icrc_compute / icrc_verify, ISA-L inside) are reported separately and excluded from "core".
# Usage: bench/ipp.sh [BUILD_DIR]   (default build/default)
set -euo pipefail
BUILD=${1:-build/default}
BIN=$BUILD/bench/engine_ipp
PKTS=20000
command -v valgrind >/dev/null || { echo "ipp.sh: valgrind is not installed" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf "%-6s %-5s %-4s %10s %10s %10s %10s\n" path mtu icrc total/pkt memcpy/pkt icrc/pkt core/pkt
for path in rx tx; do
  for mtu in 1024 4096; do
    for icrc in 1 0; do
      [[ $path == tx && $icrc == 0 ]] && continue   # TX always computes the ICRC
      out=$tmp/cg.$path.$mtu.$icrc
      valgrind --tool=callgrind --collect-atstart=no --callgrind-out-file="$out" \
        "$BIN" "$mtu" "$icrc" "$PKTS" "$path" >"$tmp/log" 2>&1
      pkts=$(awk '/^packets/ {print $2}' "$tmp/log")
      ann=$(callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null)
      total=$(awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}' <<<"$ann")
      # Inclusive cost of the copy and CRC routines (largest entry of each, as
      # they may appear under several names / call paths).
      mem=$(awk '/:__mem(cpy|move)/ {gsub(",","",$1); if ($1+0>m) m=$1+0} END {print m+0}' <<<"$ann")
      crc=$(awk '/:burst::wire::icrc_(compute|verify)\(/ {gsub(",","",$1); if ($1+0>m) m=$1+0} END {print m+0}' <<<"$ann")
      awk -v p="$path" -v mtu="$mtu" -v i="$icrc" -v t="$total" -v m="$mem" -v c="$crc" -v n="$pkts" \
        'BEGIN {printf "%-6s %-5s %-4s %10.0f %10.0f %10.0f %10.0f\n", p, mtu, i, t/n, m/n, c/n, (t-m-c)/n}'
    done
  done
done
