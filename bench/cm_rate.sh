#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The rdma_cm connection rate between two burstd (docs/cm.md "Connection rate"): one burstd
# per network namespace (AF_XDP on a veth pair, A: a0 10.48.0.1 <-> B: b0 10.48.0.2), the
# server `cm_rate -s` in A and the client `cm_rate -c` in B, both under `burstctl run`, for
# every N x W point, RUNS runs each (interleaved), medians with (min-max); then stock
# `cmtime` (rdmacm-utils: every step for all N connections at once) for reference.
#   bench/cm_rate.sh [--runs R] [--n "1000 5000"] [--w "1 16 64 256"] [--build DIR]
#                    [--workers K] [--no-cmtime] [--quick]
# Output: a Markdown table on stdout; raw JSON lines in $OUT (default
# build/default/bench-run/cm_rate.jsonl). Needs root (namespaces, XDP).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=$ROOT/build/default
RUNS=3
NS_LIST="1000 5000"
WS="1 16 64 256"
WORKERS=1
CMTIME=1
while (($#)); do
  case $1 in
    --runs) RUNS=$2; shift 2 ;;
    --n) NS_LIST=$2; shift 2 ;;
    --w) WS=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    --no-cmtime) CMTIME=0; shift ;;
    --quick) RUNS=1; NS_LIST=1000; WS="1 64"; shift ;;
    *) echo "usage: $0 [--runs R] [--n LIST] [--w LIST] [--build DIR] [--workers K] [--no-cmtime] [--quick]" >&2
       exit 2 ;;
  esac
done
source "$ROOT/tests/netns/lib.sh"
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
RATE=$BUILD/bench/cm_rate
netns_require_root "network namespaces, veth, XDP"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout
netns_require_sysfs_path
netns_require_built "$BURSTD" "$BURSTCTL" "$RATE"
command -v cmtime >/dev/null || CMTIME=0
OUT=${OUT:-$BUILD/bench-run/cm_rate.jsonl}
mkdir -p "$(dirname "$OUT")"
: >"$OUT"

netns_pair burst-cmrate
netns_cmd_env
netns_link_ab a0 10.48.0.1 b0 10.48.0.2 numrxqueues "$WORKERS" numtxqueues "$WORKERS"
netns_start_burstd "$NA" "$TMP/a.sock" "$TMP/burstd-a.log" "in $NA" --backend xdp --netdev a0 \
  --workers "$WORKERS"
netns_start_burstd "$NB" "$TMP/b.sock" "$TMP/burstd-b.log" "in $NB" --backend xdp --netdev b0 \
  --workers "$WORKERS"

runIn() {  # NS DEV SOCK SECONDS CMD...: CMD under burstctl run
  local ns=$1 dev=$2 sock=$3 t=$4
  shift 4
  nsenter --net=/run/netns/"$ns" env TMPDIR="$TMP" timeout "$t" "$BURSTCTL" run --netdev "$dev" \
    --socket "$sock" -- "${CMD_ENV[@]}" "$@"
}

# One server for every point (it serves connections until killed).
nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" "$BURSTCTL" run --netdev a0 \
  --socket "$TMP/a.sock" -- "${CMD_ENV[@]}" "$RATE" -s 10.48.0.1 -p 7471 >"$TMP/server.log" 2>&1 &
BG_PIDS+=($!)
wait_for "$TMP/server.log" "listening" 20 || { cat "$TMP/server.log"; fail "cm_rate server did not listen"; }

for ((r = 1; r <= RUNS; r++)); do
  for n in $NS_LIST; do
    for w in $WS; do
      echo "[cm_rate $(date +%H:%M:%S)] run $r n=$n w=$w" >&2
      line=$(runIn "$NB" b0 "$TMP/b.sock" $((60 + n / 50)) "$RATE" -c 10.48.0.1 -p 7471 -n "$n" \
        -w "$w" --json 2>"$TMP/client.err" | head -1)
      [[ $line == \{* ]] || { echo "client failed (n=$n w=$w): $(tail -3 "$TMP/client.err")" >&2; continue; }
      echo "{\"tool\": \"cm_rate\", \"run\": $r, ${line#\{}" >>"$OUT"
    done
  done
done

if ((CMTIME)); then
  nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" "$BURSTCTL" run --netdev a0 \
    --socket "$TMP/a.sock" -- "${CMD_ENV[@]}" cmtime -b 10.48.0.1 -p 7472 >"$TMP/cmtime-s.log" 2>&1 &
  BG_PIDS+=($!)
  sleep 1
  for ((r = 1; r <= RUNS; r++)); do
    for n in $NS_LIST; do
      echo "[cm_rate $(date +%H:%M:%S)] cmtime run $r n=$n" >&2
      runIn "$NB" b0 "$TMP/b.sock" $((60 + n / 20)) cmtime -s 10.48.0.1 -p 7472 -c "$n" \
        >"$TMP/cmtime.log" 2>&1 || { echo "cmtime failed (n=$n): $(tail -3 "$TMP/cmtime.log")" >&2; continue; }
      # total ms of every step from resolve addr to connect (the steps before disconnect)
      awk -v n="$n" -v r="$r" -F: '/^(create id|resolve addr|resolve route|create qp|connect) *:/ {
          split($2, f, " "); ms += f[1]; if ($1 ~ /^connect/) c = f[4] }
        END { if (ms > 0) printf "{\"tool\": \"cmtime\", \"run\": %d, \"n\": %d, \"rate\": %.1f, \"connect_us_per_conn\": %.2f}\n", r, n, n / (ms / 1000), c }' \
        "$TMP/cmtime.log" >>"$OUT"
    done
  done
fi

echo "--- burstd counters (B): $("$BURSTCTL" --socket "$TMP/b.sock" counters 2>&1 |
  grep -E "^ *(cm|cma)\." | tr -s ' ' | paste -sd ' ')" >&2

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
print("| tool | N | W | established/s | setup p50 / p99 us | teardown p50 / p99 us | failed (all runs) |")
print("|---|---|---|---|---|---|---|")
points = []
for r in rows:
    k = (r["tool"], r["n"], r.get("w", "all"))
    if k not in points: points.append(k)
for tool, n, w in points:
    s = [r for r in rows if (r["tool"], r["n"], r.get("w", "all")) == (tool, n, w)]
    if tool == "cmtime":
        print(f"| cmtime | {n} | all at once | {fmt(med([x['rate'] for x in s]))} | - | - | - |")
        continue
    lat = lambda a, b: f"{med([x[a] for x in s])[0]:,.0f} / {med([x[b] for x in s])[0]:,.0f}"
    fails = sum(x["failed"] for x in s)
    print(f"| cm_rate | {n} | {w} | {fmt(med([x['rate'] for x in s]))} | "
          f"{lat('setup_p50_us', 'setup_p99_us')} | {lat('teardown_p50_us', 'teardown_p99_us')} | {fails} |")
PY
