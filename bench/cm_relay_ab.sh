#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The rdma_cm relay, two builds side by side (docs/cm.md "Relay fast path"): for every W and run,
# build A then build B (alternating, same N), each with its own burstd pair (AF_XDP on one veth
# pair, one namespace per side) and its own preload shim, `cm_rate -s` / `cm_rate -c` under
# `burstctl run`; per client run: established/s, the client's CPU per connection (on-CPU time,
# `perf stat -e task-clock` of the whole `burstctl run` tree) and each burstd's (utime + stime from
# /proc; "ctl": their main threads, the control loops). Then one `strace -c -f` of the client per
# build: system calls per connection.
#   bench/cm_relay_ab.sh A_BUILD_DIR B_BUILD_DIR [--n N] [--w "1 16 64"] [--runs R]
# A_BUILD_DIR / B_BUILD_DIR hold daemon/burstd/burstd and provider/libburst-shim.so (a build tree,
# or a copy), and provider/libburst-rdmav34.so (the provider) when they have it; burstctl, cm_rate
# (and a provider the directory lacks) come from this tree's build/default.
# Output: a Markdown table on stdout, raw lines in $OUT. Needs root (namespaces, XDP).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
BUILD=$ROOT/build/default
A=$1 B=$2
shift 2
N=1000
WS="1 16 64"
RUNS=3
while (($#)); do
  case $1 in
    --n) N=$2; shift 2 ;;
    --w) WS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    *) echo "usage: $0 A_DIR B_DIR [--n N] [--w LIST] [--runs R]" >&2; exit 2 ;;
  esac
done
source "$ROOT/tests/netns/lib.sh"
BURSTCTL=$BUILD/tools/burstctl/burstctl
RATE=$BUILD/bench/cm_rate
netns_require_root "network namespaces, veth, XDP"
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$RATE" "$A/daemon/burstd/burstd" "$B/daemon/burstd/burstd"
OUT=${OUT:-$BUILD/bench-run/cm_relay_ab.txt}
mkdir -p "$(dirname "$OUT")"
: >"$OUT"

netns_pair burst-cmab
trap 'netns_cleanup' EXIT
netns_cmd_env
# Netdev names of this run: burstd locks /run/burst/NETDEV.lock by name, across namespaces, so a
# fixed a0/b0 collides with another engineer's test using the same names.
DA=ra$(($$ % 100000)) DB=rb$(($$ % 100000))
netns_link_ab "$DA" 10.49.0.1 "$DB" 10.49.0.2

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
ctl_ticks() { awk '{print $14 + $15}' "/proc/$1/task/$1/stat" 2>/dev/null || echo 0; }

# The provider of build dir $1 (BURST_PROVIDER), or burstctl's default.
provider_env() {
  if [[ -f $1/provider/libburst-rdmav34.so ]]; then echo "BURST_PROVIDER=$1/provider/libburst-rdmav34.so"
  else echo "BURST_PROVIDER=$BUILD/provider/libburst-rdmav34.so"; fi
}

runIn() {  # NS DEV SOCK SHIM CMD...: CMD under burstctl run (a program, so GNU time can wrap it)
  local ns=$1 dev=$2 sock=$3 shim=$4
  shift 4
  ${TIME_WRAP:-} nsenter --net=/run/netns/"$ns" env TMPDIR="$TMP" BURST_SHIM="$shim" \
    "$(provider_env "$(dirname "$(dirname "$shim")")")" "$BURSTCTL" run \
    --netdev "$dev" --socket "$sock" -- "${CMD_ENV[@]}" "$@"
}

# One measurement: LABEL DIR W RUN [strace]
measure() {
  local label=$1 dir=$2 w=$3 run=$4 trace=${5:-}
  local shim=$dir/provider/libburst-shim.so pa pb sp line t0a t0b calls
  BURSTD=$dir/daemon/burstd/burstd
  rm -f "$TMP/a.sock" "$TMP/b.sock"
  netns_start_burstd "$NA" "$TMP/a.sock" "$TMP/burstd-a.log" "A" --backend xdp --netdev "$DA"
  pa=$BURSTD_PID
  netns_start_burstd "$NB" "$TMP/b.sock" "$TMP/burstd-b.log" "B" --backend xdp --netdev "$DB"
  pb=$BURSTD_PID
  : >"$TMP/server.log"
  # nsenter execs burstctl, which forwards TERM to the server: $! is burstctl's pid.
  nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" BURST_SHIM="$shim" "$(provider_env "$dir")" \
    "$BURSTCTL" run --netdev "$DA" \
    --socket "$TMP/a.sock" -- "${CMD_ENV[@]}" ${trace:+strace -c -f -o "$TMP/strace-srv-$label.txt"} \
    "$RATE" -s 10.49.0.1 -p 7481 ${trace:+-n "$N"} >"$TMP/server.log" 2>&1 &
  sp=$!
  BG_PIDS+=("$sp")
  wait_for "$TMP/server.log" "listening" 20 || fail "cm_rate server did not listen"
  t0a=$(cpu_ticks "$pa")
  t0b=$(cpu_ticks "$pb")
  local c0=$(($(ctl_ticks "$pa") + $(ctl_ticks "$pb")))
  if [[ -n $trace ]]; then
    runIn "$NB" "$DB" "$TMP/b.sock" "$shim" strace -c -f -o "$TMP/strace-$label.txt" \
      "$RATE" -c 10.49.0.1 -p 7481 -n "$N" -w "$w" --json >"$TMP/client.out" 2>&1
    calls=$(awk '$NF == "total" {print ($(NF-1) ~ /^[0-9]+$/ && NF == 6) ? $(NF-2) : $(NF-1)}' "$TMP/strace-$label.txt")
    echo "strace $label n=$N w=$w calls=$calls per_conn=$(awk -v c="$calls" -v n="$N" 'BEGIN{printf "%.1f", c/n}')" >>"$OUT"
    grep -E '^ *[0-9]' "$TMP/strace-$label.txt" | sort -k4 -nr | head -12 | sed "s/^/strace $label: /" >>"$OUT"
  else
    TIME_WRAP="perf stat -x, -e task-clock -o $TMP/time.txt" runIn "$NB" "$DB" "$TMP/b.sock" "$shim" \
      "$RATE" -c 10.49.0.1 -p 7481 -n "$N" -w "$w" --json >"$TMP/client.out" 2>&1
    line=$(grep -m1 '^{' "$TMP/client.out")
    local hz cpu da db
    hz=$(getconf CLK_TCK)
    cpu=$(awk -F, '$3 == "task-clock" {print $1 * 1000}' "$TMP/time.txt")  # ms -> us
    da=$(($(cpu_ticks "$pa") - t0a))
    db=$(($(cpu_ticks "$pb") - t0b))
    local dc=$(($(ctl_ticks "$pa") + $(ctl_ticks "$pb") - c0))
    echo "$label w=$w run=$run client_cpu_us=$cpu burstd_a_ticks=$da burstd_b_ticks=$db ctl_ticks=$dc hz=$hz $line" >>"$OUT"
  fi
  [[ -n $trace ]] && timeout 20 tail --pid="$sp" -f /dev/null 2>/dev/null  # exits after N
  kill -TERM "$sp" 2>/dev/null
  timeout 5 tail --pid="$sp" -f /dev/null 2>/dev/null
  if [[ -n $trace && -s $TMP/strace-srv-$label.txt ]]; then  # the server (passive side) too
    calls=$(awk '$NF == "total" {print ($(NF-1) ~ /^[0-9]+$/ && NF == 6) ? $(NF-2) : $(NF-1)}' "$TMP/strace-srv-$label.txt")
    echo "strace server $label n=$N w=$w calls=$calls per_conn=$(awk -v c="$calls" -v n="$N" 'BEGIN{printf "%.1f", c/n}')" >>"$OUT"
    grep -E '^ *[0-9]' "$TMP/strace-srv-$label.txt" | sort -k4 -nr | head -6 | sed "s/^/strace server $label: /" >>"$OUT"
  fi
  kill -TERM "$pa" "$pb" 2>/dev/null
  timeout 10 tail --pid="$pa" -f /dev/null 2>/dev/null
  timeout 10 tail --pid="$pb" -f /dev/null 2>/dev/null
  sleep 1  # the kernel lets go of the AF_XDP sockets asynchronously (EBUSY for the next burstd)
}

for ((r = 1; r <= RUNS; r++)); do
  for w in $WS; do
    echo "[cm_relay_ab $(date +%H:%M:%S)] run $r w=$w" >&2
    measure A "$A" "$w" "$r"
    measure B "$B" "$w" "$r"
  done
done
measure A "$A" 16 0 strace
measure B "$B" 16 0 strace

python3 - "$OUT" "$N" <<'PY'
import json, re, statistics, sys
n = int(sys.argv[2])
rows = {}
for l in open(sys.argv[1]):
    m = re.match(r"(A|B) w=(\d+) run=(\d+) client_cpu_us=(\S+) burstd_a_ticks=(\d+) burstd_b_ticks=(\d+) ctl_ticks=(\d+) hz=(\d+) (\{.*)", l)
    if not m: continue
    j = json.loads(m.group(9))
    hz = int(m.group(8))
    est = max(j.get("established", n), 1)
    rows.setdefault((int(m.group(2)), m.group(1)), []).append((
        j["rate"], float(m.group(4)) / est, (int(m.group(5)) + int(m.group(6))) * 1e6 / hz / est,
        int(m.group(7)) * 1e6 / hz / est, j["failed"]))
def med(v):
    return statistics.median(v)
print("| W | established/s A | B | client CPU us/conn A | B | both burstd CPU us/conn A | B | their control threads A | B | failed A / B |")
print("|---|---|---|---|---|---|---|---|---|---|")
for w in sorted({k[0] for k in rows}):
    a, b = rows.get((w, "A"), []), rows.get((w, "B"), [])
    if not a or not b: continue
    col = lambda s, i: f"{med([x[i] for x in s]):,.0f} ({min(x[i] for x in s):,.0f}-{max(x[i] for x in s):,.0f})"
    print(f"| {w} | {col(a,0)} | {col(b,0)} | {col(a,1)} | {col(b,1)} | {col(a,2)} | {col(b,2)} | "
          f"{col(a,3)} | {col(b,3)} | {sum(x[4] for x in a)} / {sum(x[4] for x in b)} |")
PY
grep '^strace' "$OUT"
