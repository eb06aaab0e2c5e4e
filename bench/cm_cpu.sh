#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burstd's CPU per rdma_cm connection, thread by thread, for several builds of burstd side by
# side (docs/cm.md "burstd's cost per connection"): for every run and every build (alternating,
# same N and W), a fresh pair of burstd (AF_XDP on a veth pair, one namespace each), the
# `cm_rate` server in A and `cm_rate -c -n N -w W` in B, both under `burstctl run`; each burstd
# thread's CPU time over the client's run from /proc/PID/task/TID/schedstat (ns on CPU): the
# control thread (the main thread), worker 0 (QP1's owner), the other workers.
#   bench/cm_cpu.sh [--n N] [--w W] [--runs R] [--workers K] LABEL=BURSTD [LABEL=BURSTD ...]
# Prints one line per run and build, then medians per build; needs root.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=${BUILD:-$ROOT/build/default}
N=1000
W=16
RUNS=3
WORKERS=1
BUILDS=()
while (($#)); do
  case $1 in
    --n) N=$2; shift 2 ;;
    --w) W=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --workers) WORKERS=$2; shift 2 ;;
    *=*) BUILDS+=("$1"); shift ;;
    *) echo "usage: $0 [--n N] [--w W] [--runs R] [--workers K] LABEL=BURSTD..." >&2; exit 2 ;;
  esac
done
((${#BUILDS[@]})) || BUILDS=("this=$BUILD/daemon/burstd/burstd")
source "$ROOT/tests/netns/lib.sh"
BURSTCTL=$BUILD/tools/burstctl/burstctl
RATE=$BUILD/bench/cm_rate
netns_require_root "network namespaces, veth, XDP"
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$RATE"
netns_pair burst-cmcpu
netns_cmd_env
netns_link_ab a0 10.49.0.1 b0 10.49.0.2 numrxqueues "$WORKERS" numtxqueues "$WORKERS"

# cpu_ns PID: "control worker0 others" (ns on CPU so far; TID order = start order: the main
# thread, then worker 0, 1, ...; threads named burstd-w* are workers when named).
cpu_ns() {
  local pid=$1 t c=0 w0=0 o=0 k=0 ns name
  for t in $(ls /proc/"$pid"/task | sort -n); do
    ns=$(cut -d' ' -f1 /proc/"$pid"/task/"$t"/schedstat 2>/dev/null) || continue
    name=$(cat /proc/"$pid"/task/"$t"/comm 2>/dev/null)
    if [[ $t == "$pid" ]]; then
      c=$ns
    elif [[ $name == burstd-w0 ]] || [[ $name != burstd-w* && $k -eq 0 ]]; then
      w0=$ns; k=1
    else
      o=$((o + ns))
    fi
  done
  echo "$c $w0 $o"
}

RES=$TMP/results
: >"$RES"
one_run() {  # LABEL BURSTD RUN
  local label=$1 bin=$2 r=$3 pa pb sp line a0 b0 a1 b1
  BURSTD=$bin
  rm -f "$TMP"/a.sock "$TMP"/b.sock
  netns_start_burstd "$NA" "$TMP/a.sock" "$TMP/a-$label.log" "A" --backend xdp --netdev a0 --workers "$WORKERS"
  pa=$BURSTD_PID
  netns_start_burstd "$NB" "$TMP/b.sock" "$TMP/b-$label.log" "B" --backend xdp --netdev b0 --workers "$WORKERS"
  pb=$BURSTD_PID
  nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" "$BURSTCTL" run --netdev a0 --socket "$TMP/a.sock" \
    -- "${CMD_ENV[@]}" "$RATE" -s 10.49.0.1 -p 7481 >"$TMP/server.log" 2>&1 &
  sp=$!
  wait_for "$TMP/server.log" "listening" 20 || fail "cm_rate server did not listen"
  a0=$(cpu_ns "$pa"); b0=$(cpu_ns "$pb")
  line=$(nsenter --net=/run/netns/"$NB" env TMPDIR="$TMP" timeout $((60 + N / 20)) "$BURSTCTL" run \
    --netdev b0 --socket "$TMP/b.sock" -- "${CMD_ENV[@]}" "$RATE" -c 10.49.0.1 -p 7481 -n "$N" -w "$W" \
    --json 2>"$TMP/client.err" | head -1)
  a1=$(cpu_ns "$pa"); b1=$(cpu_ns "$pb")
  kill -TERM "$sp" 2>/dev/null; timeout 5 tail --pid="$sp" -f /dev/null
  kill -TERM "$pa" "$pb" 2>/dev/null
  timeout 5 tail --pid="$pa" -f /dev/null; timeout 5 tail --pid="$pb" -f /dev/null
  mkdir -p /tmp/cm_cpu.last && cp "$TMP"/*.log "$TMP"/client.err /tmp/cm_cpu.last/ 2>/dev/null
  [[ $line == \{* ]] || { echo "client failed ($label run $r): $(tail -3 "$TMP/client.err")" >&2; return; }
  python3 - "$label" "$r" "$N" "$line" "$a0" "$a1" "$b0" "$b1" >>"$RES" <<'PY'
import json, sys
label, r, n, line = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4])
a0, a1, b0, b1 = ([int(x) for x in s.split()] for s in sys.argv[5:9])
est = max(1, line["established"])
us = lambda x, y, i: (y[i] - x[i]) / 1000 / est
print(json.dumps({"label": label, "run": r, "rate": line["rate"], "failed": line["failed"],
                  "setup_p50_us": line["setup_p50_us"],
                  "a_ctl_us": us(a0, a1, 0), "a_w0_us": us(a0, a1, 1), "a_wx_us": us(a0, a1, 2),
                  "b_ctl_us": us(b0, b1, 0), "b_w0_us": us(b0, b1, 1), "b_wx_us": us(b0, b1, 2)}))
PY
  tail -1 "$RES" >&2
}

for ((r = 1; r <= RUNS; r++)); do
  for b in "${BUILDS[@]}"; do
    echo "[cm_cpu $(date +%H:%M:%S)] run $r ${b%%=*} n=$N w=$W" >&2
    one_run "${b%%=*}" "${b#*=}" "$r"
  done
done

python3 - "$RES" "$N" "$W" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"N={sys.argv[2]} W={sys.argv[3]}; medians of the runs; CPU in us per established connection")
print("| build | runs | established/s | setup p50 us | A control | A worker 0 | A other workers | B control | B worker 0 | B other workers | failed |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
labels = []
for r in rows:
    if r["label"] not in labels: labels.append(r["label"])
for l in labels:
    s = [r for r in rows if r["label"] == l]
    m = lambda k: statistics.median(x[k] for x in s)
    print(f"| {l} | {len(s)} | {m('rate'):,.0f} | {m('setup_p50_us'):,.0f} | " +
          " | ".join(f"{m(k):.1f}" for k in ("a_ctl_us", "a_w0_us", "a_wx_us", "b_ctl_us", "b_w0_us", "b_wx_us")) +
          f" | {sum(x['failed'] for x in s)} |")
PY
