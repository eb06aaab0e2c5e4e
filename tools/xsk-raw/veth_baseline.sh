#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Raw AF_XDP "line rate" of a veth pair between two private network namespaces:
# xsk-raw tx (one queue) -> veth -> roce_steer -> xsk-raw rx (same queue).
# Prints one line per (MTU, frame size, run) with the sender's and the
# receiver's rates; the receiver's rate covers its first to last frame.
#
# Usage: [BASELINE_CASES="1500:1024 9000:4000"] veth_baseline.sh XSK_RAW [RUNS] [SECONDS]
#        [extra xsk-raw args for both sides]
#   e.g. veth_baseline.sh build/default/tools/xsk-raw/xsk-raw 3 3 --frames 16384
# Needs root. Cleans up its namespaces on exit.
set -uo pipefail

XSK=${1:?usage: veth_baseline.sh XSK_RAW [RUNS] [SECONDS] [xsk-raw args...]}
RUNS=${2:-3}
SECS=${3:-3}
shift $(($# < 3 ? $# : 3))
EXTRA=("$@")

[[ $(id -u) -eq 0 ]] || { echo "veth_baseline.sh: needs root" >&2; exit 77; }
NA=burst-base-$$-a
NB=burst-base-$$-b
RX_PID=
cleanup() {
  [[ -n $RX_PID ]] && kill -9 "$RX_PID" 2>/dev/null
  ip netns del "$NA" 2>/dev/null
  ip netns del "$NB" 2>/dev/null
  rm -f /tmp/burst-base-$$.rx /tmp/burst-base-$$.tx
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ip netns add "$NA" && ip netns add "$NB" || exit 1
ip -n "$NA" link add va numtxqueues 4 numrxqueues 4 type veth \
  peer name vb numtxqueues 4 numrxqueues 4 netns "$NB" || exit 1
ip -n "$NA" link set va up
ip -n "$NB" link set vb up
MAC_B=$(ip -n "$NB" link show dev vb | awk '/link\/ether/ {print $2}')

val() { grep -m1 -- "$2" "$1" | tr ' ' '\n' | sed -n "s/^$3=//p" | head -1; }

run() {  # MTU SIZE
  local mtu=$1 size=$2 r
  ip -n "$NA" link set va mtu "$mtu"
  ip -n "$NB" link set vb mtu "$mtu"
  for ((r = 1; r <= RUNS; r++)); do
    nsenter --net=/run/netns/"$NB" "$XSK" --netdev vb --mode rx --queues 0 \
      --duration $((SECS + 3)) "${EXTRA[@]}" >/tmp/burst-base-$$.rx 2>&1 &
    RX_PID=$!
    sleep 1
    timeout $((SECS + 10)) nsenter --net=/run/netns/"$NA" "$XSK" --netdev va --mode tx \
      --queues 0 --size "$size" --duration "$SECS" --dst-mac "$MAC_B" "${EXTRA[@]}" \
      >/tmp/burst-base-$$.tx 2>&1
    wait "$RX_PID"
    RX_PID=
    printf 'mtu=%-5s size=%-5s run=%d  tx: %8s pps %7s Gbit/s   rx: %8s pps %7s Gbit/s  rx_drop=%s mb=%s\n' \
      "$mtu" "$size" "$r" \
      "$(val /tmp/burst-base-$$.tx 'tx total' pps)" "$(val /tmp/burst-base-$$.tx 'tx total' gbps)" \
      "$(val /tmp/burst-base-$$.rx 'rx total' pps)" "$(val /tmp/burst-base-$$.rx 'rx total' gbps)" \
      "$(val /tmp/burst-base-$$.rx 'queue 0:' k_rx_dropped)" \
      "$(grep -o 'multi_buffer=[a-z]*' /tmp/burst-base-$$.rx | cut -d= -f2)"
  done
}

# Cases: "MTU:SIZE ..." from BASELINE_CASES, or all of them.
for c in ${BASELINE_CASES:-1500:1024 3500:3000 9000:3000 9000:4000 9000:9014}; do
  run "${c%%:*}" "${c##*:}"
done
