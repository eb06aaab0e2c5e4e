#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The provider's cost, measured side by side in one run on one veth pair
# between two private namespaces (link MTU 1500, RoCE MTU 1024, AF_XDP):
#   - stock ib_write_bw (perftest) through the verbs provider and two burstd
#     (one per namespace, one worker each), under `burstctl run`;
#   - burst-xfer (the transport driven natively, no provider, no daemon), one
#     worker per side;
# RDMA WRITE of 64 KiB and 1 MiB messages, 1 and 8 QPs, RUNS runs of SECONDS
# each; medians, and provider / native.
# Usage: bench/provider_vs_xfer.sh [BUILD_DIR] [RUNS] [SECONDS]      (root)
# With PVX_JSONL=FILE every run is also appended to FILE as one JSON object (bench/run.sh).
set -uo pipefail
BUILD=${1:-build/default}
RUNS=${2:-3}
SECS=${3:-4}
X=$BUILD/tools/burst-xfer/burst-xfer
D=$BUILD/daemon/burstd/burstd
C=$BUILD/tools/burstctl/burstctl
[[ $(id -u) -eq 0 ]] || { echo "provider_vs_xfer.sh: needs root" >&2; exit 77; }
for b in "$X" "$D" "$C"; do [[ -x $b ]] || { echo "build $b first" >&2; exit 1; }; done
command -v ib_write_bw >/dev/null || { echo "apt-get install perftest" >&2; exit 77; }

source "$(dirname "$0")/lib.sh"
veth_netns pvx 10.56.0
ip -n "$NA" link set va up
ip -n "$NB" link set vb up
sleep 1
jsonl() {  # IMPL SIZE QPS RUN VALUE: one run for bench/run.sh's results file
  [[ -n ${PVX_JSONL:-} ]] || return 0
  printf '{"part": "provider", "impl": "%s", "op": "write", "size": %s, "qps": %s, "mtu": 1024, "run": %s, "gbps": %s}\n' \
    "$1" "$2" "$3" "$4" "${5:-null}" >>"$PVX_JSONL"
}

start_burstd() {  # NS DEV SOCK
  nsenter --net=/run/netns/"$1" "$D" --backend xdp --netdev "$2" --workers 1 --socket "$3" \
    >"$TMP/burstd-$2.log" 2>&1 &
  PIDS+=($!)
  for _ in $(seq 100); do
    timeout 5 "$C" --socket "$3" status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "burstd in $1 did not start" >&2
  cat "$TMP/burstd-$2.log" >&2
  exit 1
}

perftest() {  # SIZE QPS -> median BW average Gbit/s
  local size=$1 qps=$2 r
  for ((r = 1; r <= RUNS; r++)); do
    nsenter --net=/run/netns/"$NB" timeout 60 "$C" run --netdev vb --socket "$TMP/b.sock" -- \
      ib_write_bw -d burst0 -x 1 -F --report_gbits -s "$size" -q "$qps" -D "$SECS" \
      >"$TMP/srv" 2>&1 &
    local s=$!
    sleep 0.5
    nsenter --net=/run/netns/"$NA" timeout 60 "$C" run --netdev va --socket "$TMP/a.sock" -- \
      ib_write_bw -d burst0 -x 1 -F --report_gbits -s "$size" -q "$qps" -D "$SECS" 10.56.0.2 \
      >"$TMP/cli" 2>&1
    wait "$s"
    local v
    v=$(awk -v s="$size" '$1 == s && NF >= 5 {print $4}' "$TMP/cli" | tail -1)
    jsonl perftest_provider "$size" "$qps" "$r" "$v"
    echo "$v"
  done | median
}

xfer() {  # SIZE QPS -> median goodput Gbit/s
  local size=$1 qps=$2 r
  for ((r = 1; r <= RUNS; r++)); do
    nsenter --net=/run/netns/"$NB" timeout 60 "$X" --backend xdp --netdev vb --workers 1 \
      >"$TMP/srv" 2>&1 &
    local s=$!
    sleep 0.5
    nsenter --net=/run/netns/"$NA" timeout 60 "$X" --backend xdp --netdev va --workers 1 \
      --op write --size "$size" --qps "$qps" --mtu 1024 --duration "$SECS" 10.56.0.2 \
      >"$TMP/cli" 2>&1
    wait "$s"
    local v
    v=$(grep -o 'goodput=[0-9.]*' "$TMP/cli" | cut -d= -f2)
    jsonl burst_xfer "$size" "$qps" "$r" "$v"
    echo "$v"
  done | median
}

CASES=("65536 1" "65536 8" "1048576 1" "1048576 8")
declare -A P
start_burstd "$NA" va "$TMP/a.sock"
start_burstd "$NB" vb "$TMP/b.sock"
for c in "${CASES[@]}"; do P[$c]=$(perftest $c); done
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
PIDS=()
sleep 1

echo "| message | QPs | ib_write_bw via provider + burstd, Gbit/s | burst-xfer native, Gbit/s | provider / native |"
echo "|---|---|---|---|---|"
for c in "${CASES[@]}"; do
  read -r size qps <<<"$c"
  n=$(xfer "$size" "$qps")
  ratio=$(awk -v a="${P[$c]}" -v b="$n" 'BEGIN {if (b > 0 && a != "") printf "%.2f", a / b; else print "nan"}')
  echo "| $size | $qps | ${P[$c]} | $n | $ratio |"
done
echo
echo "runs=$RUNS seconds=$SECS (medians); RoCE MTU 1024 on a 1500-byte veth; one burstd worker"
echo "(and one burst-xfer worker) per side; $(nproc) cores shared by both sides and the applications;"
echo "application buffers are malloc'd (cross-memory: pread/pwrite on the application's /proc/self/mem); $(uname -r)"
