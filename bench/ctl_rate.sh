#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burstd's control plane, event_loop = uring vs epoll side by side: bench/ctl_rate
# (K connections x D requests in flight, QUERY_STATUS or ALLOC_PD/DEALLOC_PD) against
# a fresh burstd (loopback backend, 1 worker) per point and loop; runs interleaved
# (every point and loop once, then again), medians over the runs with (min-max).
# The uring column also gives requests per io_uring_enter (burstd's own count).
#   bench/ctl_rate.sh [--runs N] [--seconds S] [--build DIR] [--quick]
# Output: a Markdown table on stdout; raw JSON lines in $OUT (default
# build/default/bench-run/ctl_rate.jsonl). No root needed.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=$ROOT/build/default
RUNS=3
SECONDS_PER=2
POINTS=("status 1 1" "status 8 1" "status 8 16" "status 32 4" "pd 1 1" "pd 8 4")
while (($#)); do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --seconds) SECONDS_PER=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --quick) RUNS=1; SECONDS_PER=0.5; POINTS=("status 1 1" "status 8 16" "pd 8 4"); shift ;;
    *) echo "usage: $0 [--runs N] [--seconds S] [--build DIR] [--quick]" >&2; exit 2 ;;
  esac
done
BURSTD=$BUILD/daemon/burstd/burstd
RATE=$BUILD/bench/ctl_rate
for b in "$BURSTD" "$RATE"; do [[ -x $b ]] || { echo "$b not built (ninja -C $BUILD burstd ctl_rate)" >&2; exit 1; }; done
OUT=${OUT:-$BUILD/bench-run/ctl_rate.jsonl}
mkdir -p "$(dirname "$OUT")"
: >"$OUT"

TMP=$(mktemp -d /tmp/ctl-rate.XXXXXX)
BPID=
cleanup() { [[ -n $BPID ]] && kill -9 "$BPID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

one() {  # LOOP OP K D RUN: one burstd, one ctl_rate run, one JSON line
  local loop=$1 op=$2 k=$3 d=$4 run=$5 sock=$TMP/s-$1 i line waits
  "$BURSTD" --backend loopback --workers 1 --socket "$sock" --event-loop "$loop" \
    2>"$TMP/burstd.log" &
  BPID=$!
  for ((i = 0; i < 100; i++)); do [[ -S $sock ]] && break; sleep 0.05; done
  # The control thread (burstd's main thread, tid = pid): ns on a CPU, schedstat field 1.
  local cpu0 cpu1
  read -r cpu0 _ </proc/"$BPID"/task/"$BPID"/schedstat
  line=$(timeout 60 "$RATE" --socket "$sock" --op "$op" --clients "$k" --depth "$d" \
    --seconds "$SECONDS_PER") || { echo "ctl_rate failed ($loop $op $k $d)" >&2; cat "$TMP/burstd.log" >&2; exit 1; }
  read -r cpu1 _ </proc/"$BPID"/task/"$BPID"/schedstat
  kill -TERM "$BPID"
  wait "$BPID" || true
  BPID=
  waits=$(grep -o 'io_uring: [0-9]* requests served in [0-9]* io_uring_enter' "$TMP/burstd.log" |
    awk '{print $2 / $6}' || true)
  echo "{\"loop\": \"$loop\", \"run\": $run, \"per_wait\": ${waits:-null}, \"ctl_cpu_ns\": $((cpu1 - cpu0)), ${line#\{}" >>"$OUT"
}

for ((r = 1; r <= RUNS; r++)); do
  for p in "${POINTS[@]}"; do
    read -r op k d <<<"$p"
    for loop in uring epoll; do one "$loop" "$op" "$k" "$d" "$r"; done
  done
done

python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(vals):
    vals = sorted(vals)
    return statistics.median(vals), vals[0], vals[-1]
def fmt(v, nd=0):
    m, lo, hi = v
    f = "{:,.%df}" % nd
    return f"{f.format(m)} ({f.format(lo)}-{f.format(hi)})"
points = []
for r in rows:
    key = (r["op"], r["clients"], r["depth"])
    if key not in points: points.append(key)
print("| op | K conns x D in flight | uring req/s | epoll req/s | uring/epoll | uring p50 / p99 us | epoll p50 / p99 us | control thread CPU ns/req uring / epoll | uring req per enter |")
print("|---|---|---|---|---|---|---|---|---|")
for op, k, d in points:
    sel = {l: [r for r in rows if (r["op"], r["clients"], r["depth"]) == (op, k, d) and r["loop"] == l] for l in ("uring", "epoll")}
    u, e = sel["uring"], sel["epoll"]
    ru, re_ = med([x["rate"] for x in u]), med([x["rate"] for x in e])
    ratio = med([a["rate"] / b["rate"] for a, b in zip(sorted(u, key=lambda x: x["run"]), sorted(e, key=lambda x: x["run"]))])
    lat = lambda s: f'{med([x["p50_us"] for x in s])[0]:.1f} / {med([x["p99_us"] for x in s])[0]:.1f}'
    pw = [x["per_wait"] for x in u if x["per_wait"] is not None]
    per = f"{statistics.median(pw):.2f}" if pw else "-"
    cpu = lambda s: statistics.median([x["ctl_cpu_ns"] / max(1, x["all_requests"]) for x in s])
    name = "QUERY_STATUS" if op == "status" else "ALLOC_PD+DEALLOC_PD"
    print(f"| {name} | {k} x {d} | {fmt(ru)} | {fmt(re_)} | {ratio[0]:.2f} | {lat(u)} | {lat(e)} | {cpu(u):,.0f} / {cpu(e):,.0f} | {per} |")
PY
