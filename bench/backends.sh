#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# AF_XDP against DPDK, side by side in one run on one veth pair between two
# private namespaces: burst-xfer (native transport, no provider) with both ends
# on --backend xdp, then both on --backend dpdk (net_af_packet on the same veth
# ends: the vdev DPDK offers a kernel netdev), then the mixed pair (client xdp,
# server dpdk); and, as the kernel-free reference, two DPDK ends on memif.
# Each cell: RUNS runs of SECONDS, median and min..max of the client's goodput.
# Usage: bench/backends.sh [BUILD_DIR] [RUNS] [SECONDS]   (root; prints a markdown table)
set -uo pipefail
BUILD=${1:-build/default}
RUNS=${2:-3}
SECS=${3:-3}
X=$BUILD/tools/burst-xfer/burst-xfer
[[ $(id -u) -eq 0 ]] || { echo "backends.sh: needs root" >&2; exit 77; }
[[ -x $X ]] || { echo "backends.sh: build burst-xfer first ($X)" >&2; exit 1; }
"$X" --help | grep -q -- --dpdk-port || { echo "backends.sh: burst-xfer built without DPDK" >&2; exit 77; }

source "$(dirname "$0")/lib.sh"
# shellcheck disable=SC2034  # read by veth_netns_cleanup (lib.sh)
PAIR_KILL=TERM  # burst-xfer detaches its XDP program on TERM
veth_netns bk 10.56.0
gbps() { grep -o 'goodput=[0-9.]*' "$1" | head -1 | cut -d= -f2; }

set_mtu() {
  ip -n "$NA" link set va mtu "$1" up
  ip -n "$NB" link set vb mtu "$1" up
  sleep 1
}

# one CLIENT_BACKEND SERVER_BACKEND ARGS... -> client goodput (Gbit/s) or "fail"
one() {
  local cb=$1 sb=$2
  shift 2
  nsenter --net=/run/netns/"$NB" timeout $((SECS + 30)) "$X" --backend "$sb" --netdev vb \
    >"$TMP/srv" 2>&1 &
  local sp=$!
  PIDS+=("$sp")
  sleep 0.5
  if nsenter --net=/run/netns/"$NA" timeout $((SECS + 30)) "$X" --backend "$cb" --netdev va \
      --duration "$SECS" "$@" 10.56.0.2 >"$TMP/cli" 2>&1 && wait "$sp"; then
    gbps "$TMP/cli"
  else
    wait "$sp" 2>/dev/null
    echo fail
  fi
}

memif_one() {  # ARGS... -> client goodput over memif (both ends in namespace A)
  local s="burst-bk-memif-$$"
  nsenter --net=/run/netns/"$NA" timeout $((SECS + 30)) "$X" --backend dpdk --address 10.57.0.2/24 \
    --port 18790 --dpdk-port "net_memif0,role=server,socket=$s,id=0" >"$TMP/msrv" 2>&1 &
  local sp=$! i
  PIDS+=("$sp")
  for ((i = 0; i < 100; i++)); do  # its memif socket exists once it listens
    ip netns exec "$NA" ss -ltn 'sport = :18790' | grep -q LISTEN && break
    sleep 0.1
  done
  if nsenter --net=/run/netns/"$NA" timeout $((SECS + 30)) "$X" --backend dpdk --address 10.57.0.1/24 \
      --port 18790 --dpdk-port "net_memif0,role=client,socket=$s,id=0" --duration "$SECS" "$@" \
      127.0.0.1 >"$TMP/mcli" 2>&1 && wait "$sp"; then
    gbps "$TMP/mcli"
  else
    wait "$sp" 2>/dev/null
    echo fail
  fi
}

cell() {  # KIND ARGS... -> "median (min..max)"
  local kind=$1 r v
  shift
  : >"$TMP/vals"
  for ((r = 1; r <= RUNS; r++)); do
    case $kind in
      xdp) v=$(one xdp xdp "$@") ;;
      dpdk) v=$(one dpdk dpdk "$@") ;;
      mixed) v=$(one xdp dpdk "$@") ;;
      memif) v=$(memif_one "$@") ;;
    esac
    [[ $v == fail ]] && { echo "fail"; return; }
    echo "$v" >>"$TMP/vals"
  done
  echo "$(median <"$TMP/vals") ($(sort -g "$TMP/vals" | head -1)..$(sort -g "$TMP/vals" | tail -1))"
}

echo "burst-xfer goodput, Gbit/s: median (min..max) of $RUNS x ${SECS} s; one worker per side;"
echo "$(nproc) CPUs shared by both ends and the kernel's veth; $(date -u +%F)"
echo
echo "| link MTU | RoCE MTU | op | size | QPs | xdp<->xdp | dpdk<->dpdk (af_packet) | dpdk/xdp | xdp->dpdk | dpdk memif<->memif |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for mtu in 1500 9000; do
  set_mtu "$mtu"
  roce=$([[ $mtu == 1500 ]] && echo 1024 || echo 4096)
  for spec in "write 65536 1" "write 1048576 1" "write 1048576 8" "read 1048576 1" "send 1048576 1"; do
    read -r op size qps <<<"$spec"
    args=(--op "$op" --size "$size" --qps "$qps" --depth 8 --mtu "$roce")
    x=$(cell xdp "${args[@]}")
    d=$(cell dpdk "${args[@]}")
    m=$(cell mixed "${args[@]}")
    f=$(cell memif "${args[@]}")
    ratio=$(awk -v a="${d%% *}" -v b="${x%% *}" 'BEGIN { if (b > 0 && a ~ /^[0-9.]+$/) printf "%.2f", a / b; else print "n/a" }')
    echo "| $mtu | $roce | $op | $size | $qps | $x | $d | $ratio | $m | $f |"
  done
done
