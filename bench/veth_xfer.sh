#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Issue-3 figures, measured side by side in one run on one veth pair between
# two private namespaces (4 queues): the raw AF_XDP frame rate of the link
# (tools/xsk-raw: one sender and one receiver thread on queue 0, frames the size of burst's WRITE_MIDDLE frames)
# and burst-xfer RDMA WRITE goodput of 1 MB messages at RoCE MTU 1024 (1500-byte
# link, 1082-byte frames) and 4096 (9000-byte link, 4154-byte frames), 1 and 8
# QPs, RUNS runs each; medians, and burst goodput / raw payload rate.
# Usage: bench/veth_xfer.sh [BUILD_DIR] [RUNS] [SECONDS]      (root)
set -uo pipefail
BUILD=${1:-build/default}
RUNS=${2:-3}
SECS=${3:-4}
X=$BUILD/tools/burst-xfer/burst-xfer
XSK=$BUILD/tools/xsk-raw/xsk-raw
[[ $(id -u) -eq 0 ]] || { echo "veth_xfer.sh: needs root" >&2; exit 77; }
[[ -x $X && -x $XSK ]] || { echo "veth_xfer.sh: build burst-xfer and xsk-raw first" >&2; exit 1; }

NA=burst-bench-$$-a
NB=burst-bench-$$-b
TMP=$(mktemp -d)
cleanup() {
  pkill -f "burst-xfer --backend xdp --netdev vb" 2>/dev/null
  ip netns del "$NA" 2>/dev/null
  ip netns del "$NB" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
ip netns add "$NA" && ip netns add "$NB" || exit 1
ip -n "$NA" link add va numtxqueues 4 numrxqueues 4 type veth \
  peer name vb numtxqueues 4 numrxqueues 4 netns "$NB" || exit 1
ip -n "$NA" addr add 10.55.0.1/24 dev va
ip -n "$NB" addr add 10.55.0.2/24 dev vb
MAC_B=$(ip -n "$NB" link show dev vb | awk '/link\/ether/ {print $2}')
val() { grep -m1 -- "$2" "$1" | tr ' ' '\n' | sed -n "s/^$3=//p" | head -1; }
median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }

set_mtu() {
  ip -n "$NA" link set va mtu "$1" up
  ip -n "$NB" link set vb mtu "$1" up
  sleep 1
}

raw() {  # SIZE -> "median sender Gbit/s, median receiver Gbit/s" over RUNS
  local size=$1 r
  for ((r = 1; r <= RUNS; r++)); do
    nsenter --net=/run/netns/"$NB" "$XSK" --netdev vb --mode rx --queues 0 --frames 16384 \
      --duration $((SECS + 3)) >"$TMP/rx" 2>&1 &
    local rx=$!
    sleep 1
    timeout $((SECS + 10)) nsenter --net=/run/netns/"$NA" "$XSK" --netdev va --mode tx \
      --queues 0 --frames 16384 --size "$size" --duration "$SECS" --dst-mac "$MAC_B" >"$TMP/tx" 2>&1
    wait "$rx"
    echo "$(val "$TMP/tx" 'tx total' gbps) $(val "$TMP/rx" 'rx total' gbps)"
  done >"$TMP/raw"
  echo "$(cut -d' ' -f1 "$TMP/raw" | median) $(cut -d' ' -f2 "$TMP/raw" | median)"
}

xfer() {  # MTU QPS -> median client goodput over RUNS
  local mtu=$1 qps=$2 r
  for ((r = 1; r <= RUNS; r++)); do
    nsenter --net=/run/netns/"$NB" timeout 60 "$X" --backend xdp --netdev vb >"$TMP/srv" 2>&1 &
    local s=$!
    sleep 0.5
    nsenter --net=/run/netns/"$NA" timeout 60 "$X" --backend xdp --netdev va --op write \
      --size 1048576 --qps "$qps" --mtu "$mtu" --duration "$SECS" 10.55.0.2 >"$TMP/cli" 2>&1
    wait "$s"
    grep -o 'goodput=[0-9.]*' "$TMP/cli" | cut -d= -f2
  done | median
}

echo "| RoCE MTU | link MTU | frame | raw AF_XDP sent Gbit/s (payload) | raw received | QPs | burst WRITE 1 MB goodput Gbit/s | burst / raw sent payload |"
echo "|---|---|---|---|---|---|---|---|"
for c in 1024:1500:1082 4096:9000:4154; do
  IFS=: read -r mtu link frame <<<"$c"
  set_mtu "$link"
  read -r tx rx <<<"$(raw "$frame")"
  payload=$(awk -v r="$tx" -v m="$mtu" -v f="$frame" 'BEGIN {printf "%.2f", r * m / f}')
  for qps in 1 8; do
    g=$(xfer "$mtu" "$qps")
    ratio=$(awk -v g="$g" -v p="$payload" 'BEGIN {if (p > 0) printf "%.2f", g / p; else print "nan"}')
    echo "| $mtu | $link | $frame | $tx ($payload) | $rx | $qps | $g | $ratio |"
  done
done
echo
echo "runs=$RUNS seconds=$SECS (medians); $(nproc) cores shared by sender and receiver; $(uname -r)"
echo "raw: an unthrottled xsk-raw sender and receiver on queue 0 (16384 UMEM frames). When the receiver is overrun"
echo "(its socket drops frames), 'raw received' is the delivered rate under overload, not the"
echo "link's capacity; the sender's rate is the ceiling burst is compared with."
