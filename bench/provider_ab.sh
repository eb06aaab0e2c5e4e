#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The provider path of two builds side by side (A/B): stock perftest through the
# verbs provider and two burstd (one per private namespace, one worker each) on
# one veth pair (link MTU 1500, RoCE MTU 1024, AF_XDP), for build A and build B,
# interleaved run by run (run 1 of A, run 1 of B, run 2 of A, ...) so both see
# the same machine. Application buffers are perftest's malloc'd memory: the
# cross-memory path (burstd reaches them through the application's memory
# descriptor; before issue 12 with process_vm_readv/writev by pid).
# Cases: ib_write_bw and ib_read_bw, 64 KiB and 1 MiB, 1 QP (Gbit/s, median);
# ib_write_lat and ib_read_lat, 64 bytes (typical latency, us, median).
# Usage: bench/provider_ab.sh BUILD_A BUILD_B [RUNS] [SECONDS]      (root)
# Example (the cost of a change): git worktree add /tmp/base HEAD~1, build it,
#   bench/provider_ab.sh /tmp/base/build/default build/default 3 4
set -uo pipefail
A=${1:?usage: provider_ab.sh BUILD_A BUILD_B [RUNS] [SECONDS]}
B=${2:?}
RUNS=${3:-3}
SECS=${4:-4}
[[ $(id -u) -eq 0 ]] || { echo "provider_ab.sh: needs root" >&2; exit 77; }
for d in "$A" "$B"; do
  for b in daemon/burstd/burstd tools/burstctl/burstctl; do
    [[ -x $d/$b ]] || { echo "build $d/$b first" >&2; exit 1; }
  done
done
for t in ib_write_bw ib_read_bw ib_write_lat ib_read_lat; do
  command -v $t >/dev/null || { echo "apt-get install perftest" >&2; exit 77; }
done

source "$(dirname "$0")/lib.sh"
veth_netns pab 10.57.0
trap 'exit 130' INT TERM
stop_daemons() { stop_pids TERM; }
ip -n "$NA" link set va up
ip -n "$NB" link set vb up
sleep 1

start_pair() {  # BUILD
  local d=$1 ns dev sock
  for ns in a b; do
    dev=v$ns
    sock=$TMP/$ns.sock
    nsenter --net=/run/netns/burst-pab-$$-$ns "$d/daemon/burstd/burstd" --backend xdp --netdev "$dev" \
      --workers 1 --socket "$sock" >"$TMP/burstd-$ns.log" 2>&1 &
    PIDS+=($!)
  done
  for ns in a b; do
    for _ in $(seq 100); do
      timeout 5 "$d/tools/burstctl/burstctl" --socket "$TMP/$ns.sock" status >/dev/null 2>&1 && break
      sleep 0.1
    done
  done
}

one() {  # BUILD TOOL SIZE -> one figure (bw: Gbit/s average; lat: typical us)
  local d=$1 tool=$2 size=$3 c=$1/tools/burstctl/burstctl extra=(-D "$SECS" --report_gbits)
  [[ $tool == *_lat ]] && extra=(-n 2000)
  nsenter --net=/run/netns/"$NB" timeout 60 "$c" run --netdev vb --socket "$TMP/b.sock" -- \
    "$tool" -d burst0 -x 1 -F -s "$size" "${extra[@]}" >"$TMP/srv" 2>&1 &
  local s=$!
  sleep 0.5
  nsenter --net=/run/netns/"$NA" timeout 60 "$c" run --netdev va --socket "$TMP/a.sock" -- \
    "$tool" -d burst0 -x 1 -F -s "$size" "${extra[@]}" 10.57.0.2 >"$TMP/cli" 2>&1
  wait "$s"
  if [[ $tool == *_lat ]]; then
    # #bytes #iterations t_min t_max t_typical ...
    awk -v s="$size" '$1 == s && NF >= 5 {print $5}' "$TMP/cli" | tail -1
  else
    awk -v s="$size" '$1 == s && NF >= 5 {print $4}' "$TMP/cli" | tail -1
  fi
}

CASES=("ib_write_bw 65536" "ib_write_bw 1048576" "ib_read_bw 65536" "ib_read_bw 1048576"
       "ib_write_lat 64" "ib_read_lat 64")
declare -A VALS
for ((r = 1; r <= RUNS; r++)); do
  for side in A B; do
    d=$A
    [[ $side == B ]] && d=$B
    start_pair "$d"
    for c in "${CASES[@]}"; do
      read -r tool size <<<"$c"
      v=$(one "$d" "$tool" "$size")
      VALS["$side $c"]+="${v:-nan} "
    done
    stop_daemons
    sleep 0.5
  done
done

echo "| test | size | A | B | B / A |"
echo "|---|---|---|---|---|"
for c in "${CASES[@]}"; do
  read -r tool size <<<"$c"
  a=$(tr ' ' '\n' <<<"${VALS["A $c"]}" | grep -v '^$' | median)
  b=$(tr ' ' '\n' <<<"${VALS["B $c"]}" | grep -v '^$' | median)
  unit="Gbit/s"
  [[ $tool == *_lat ]] && unit="us"
  ratio=$(awk -v a="$a" -v b="$b" 'BEGIN {if (a > 0) printf "%.2f", b / a; else print "nan"}')
  echo "| $tool | $size | $a $unit | $b $unit | $ratio |"
done
echo
echo "A = $A, B = $B; $RUNS runs each, interleaved (A, B, A, B ...); bandwidth tests ${SECS} s,"
echo "latency 2000 iterations; medians; RoCE MTU 1024 on a 1500-byte veth; one burstd worker per side;"
echo "$(nproc) cores shared by both sides and the applications; $(uname -r). Every run:"
for c in "${CASES[@]}"; do echo "  $c: A ${VALS["A $c"]}| B ${VALS["B $c"]}"; done
