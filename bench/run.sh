#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The benchmark suite in one command: builds what it needs (build/default, preset "default"),
# runs every part with bounded time, and writes docs/benchmarks.md with its figures
# (docs/benchmarks/*.png) and the machine-readable results (docs/benchmarks/results.jsonl).
#
#   sudo bench/run.sh [--quick] [--runs N] [--seconds S] [--parts "ipp host provider guest"]
#                     [--no-build] [--baseline OLD_RESULTS.jsonl] [--md PATH]
#
# Parts (each skips with a reason when its tools or capabilities are missing):
#   ipp       bench/ipp.sh: instructions per packet on the RX and TX paths (callgrind)
#   host      bench/part_host.sh: one veth pair between two private namespaces: raw AF_XDP
#             (xsk-raw), burst-xfer goodput matrix, 8-byte latency (burst-xfer, udp-pingpong),
#             kernel TCP (iperf3) with and without the XDP program
#   provider  bench/provider_vs_xfer.sh: ib_write_bw through the verbs provider + burstd vs
#             burst-xfer
#   guest     bench/part_guest.sh: rxe vs burst vs raw AF_XDP in two identical QEMU guests
# Defaults: 3 runs of 3 s per point (guests: 5 s), ~20 min in all (the guests' TCG boot included);
# --quick: 1 run of 1 s per point and a smaller matrix (a few minutes), to check the suite.
# Logs of the last run: build/default/bench-run/. Needs root (namespaces, XDP, qemu taps).
# Not part of CI (ctest): CI runs tests only.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 1
BUILD=build/default
QUICK=0
RUNS=
SECS=
PARTS="ipp host provider guest"
DO_BUILD=1
BASELINE=
MD=docs/benchmarks.md
PNG_DIR=docs/benchmarks
ARGS="$*"

usage() { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [[ $# -gt 0 ]]; do
  case $1 in
    --quick) QUICK=1 ;;
    --runs) RUNS=$2; shift ;;
    --seconds) SECS=$2; shift ;;
    --parts) PARTS=$2; shift ;;
    --no-build) DO_BUILD=0 ;;
    --baseline) BASELINE=$2; shift ;;
    --md) MD=$2; shift ;;
    -h|--help) usage 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage 2 ;;
  esac
  shift
done
if [[ $QUICK == 1 ]]; then
  RUNS=${RUNS:-1}
  SECS=${SECS:-1}
else
  RUNS=${RUNS:-3}
  SECS=${SECS:-3}
fi
[[ $RUNS =~ ^[1-9][0-9]*$ && $SECS =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: bad --runs/--seconds" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "run.sh: needs root (network namespaces, XDP, qemu taps)" >&2; exit 1; }
PY=/usr/bin/python3
$PY -c 'import matplotlib' 2>/dev/null ||
  { echo "run.sh: $PY has no matplotlib (apt-get install python3-matplotlib)" >&2; exit 1; }
[[ -z $BASELINE || -f $BASELINE ]] || { echo "run.sh: no baseline file $BASELINE" >&2; exit 2; }

source "$ROOT/bench/lib.sh"
T_START=$SECONDS

# --- Build (only what the suite runs) -------------------------------------------------------
TARGETS=(burst-xfer xsk-raw udp-pingpong engine_ipp burstd burstctl burst_provider burst_shim)
if [[ $DO_BUILD == 1 ]]; then
  if [[ ! -f $BUILD/build.ninja ]]; then
    blog "configuring $BUILD (cmake --preset default)"
    cmake --preset default >/dev/null || { echo "run.sh: cmake --preset default failed" >&2; exit 1; }
  fi
  blog "building ${TARGETS[*]} in $BUILD (-j2)"
  cmake --build "$BUILD" -j2 --target "${TARGETS[@]}" >"$BUILD/bench-build.log" 2>&1 ||
    { tail -30 "$BUILD/bench-build.log" >&2; echo "run.sh: build failed ($BUILD/bench-build.log)" >&2; exit 1; }
fi

WORKDIR=$BUILD/bench-run
rm -rf "$WORKDIR"
mkdir -p "$WORKDIR/logs"
export BUILD RUNS SECS QUICK
export RESULTS=$ROOT/$WORKDIR/results.jsonl
export LOGDIR=$ROOT/$WORKDIR/logs
: >"$RESULTS"
if [[ -n $BASELINE ]]; then cp "$BASELINE" "$WORKDIR/baseline.jsonl"; fi

# --- Machine description --------------------------------------------------------------------
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain 2>/dev/null | wc -l)
[[ $dirty -gt 0 ]] && commit="$commit + $dirty uncommitted file(s)"
cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$BUILD/CMakeCache.txt" 2>/dev/null)
tools="iperf3 $(iperf3 --version 2>/dev/null | head -1 | awk '{print $2}'); perftest $(dpkg-query -W -f='${Version}' perftest 2>/dev/null); qemu $(qemu-system-x86_64 --version 2>/dev/null | head -1 | awk '{print $4}'); valgrind $(valgrind --version 2>/dev/null)"
jrec part=meta date="$(date -u '+%Y-%m-%d %H:%M UTC')" command="bench/run.sh${ARGS:+ $ARGS}" \
  quick="$QUICK" runs="$RUNS" seconds="$SECS" parts="$PARTS" \
  cpu="$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)" nproc="$(nproc)" \
  mem="$(free -g | awk '/^Mem:/ {print $2 " GB"}')" kernel="$(uname -r)" \
  os="$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")" \
  compiler="$("${cxx:-c++}" --version 2>/dev/null | head -1), $btype ($BUILD)" commit:="$commit" \
  tools="$tools" placement="side A on CPU 0, side B on CPU 1 (taskset), one thread doing the work per side" \
  loadavg="$(cut -d' ' -f1-3 /proc/loadavg)" results_file="docs/benchmarks/results.jsonl"

# --- Parts ----------------------------------------------------------------------------------
PART_PID=
on_signal() {
  trap '' INT TERM
  echo "run.sh: interrupted; stopping the running part" >&2
  [[ -n $PART_PID ]] && kill -TERM "$PART_PID" 2>/dev/null && wait "$PART_PID" 2>/dev/null
  exit 1
}
trap on_signal INT TERM

# run_part NAME LIMIT_SECONDS CMD...: bounded; progress lines ([bench ...]) on stderr.
run_part() {
  local name=$1 limit=$2 t0=$SECONDS rc status reason="" log
  log=$LOGDIR/$name.log
  shift 2
  blog "part $name (limit ${limit} s, log $log)"
  timeout -k 30 "$limit" "$@" > >(tee "$log" | grep --line-buffered -E '^\[bench|^(SKIP|FAIL)' >&2) 2>&1 &
  PART_PID=$!
  wait "$PART_PID"
  rc=$?
  PART_PID=
  sleep 0.2
  case $rc in
    0) status=ok ;;
    77) status=skipped; reason=$(grep -m1 -E '^SKIP' "$log" | sed 's/^SKIP: *//') ;;
    124|137) status=timeout; reason="stopped after $limit s" ;;
    *) status=failed; reason=$(grep -E '^(FAIL|TIMEOUT)|run.sh|error' "$log" | tail -1) ;;
  esac
  jrec part=status name="$name" status="$status" seconds=$((SECONDS - t0)) reason="$reason" \
    log="$WORKDIR/logs/$name.log"
  blog "part $name: $status${reason:+ ($reason)} in $((SECONDS - t0)) s"
}

ipp_part() {
  command -v valgrind >/dev/null || { echo "SKIP: valgrind is not installed (apt-get install valgrind)"; exit 77; }
  local out
  out=$(bash bench/ipp.sh "$BUILD") || { echo "FAIL: bench/ipp.sh"; echo "$out"; exit 1; }
  echo "$out"
  jrec part=cmd name="instructions per packet" cmd="bench/ipp.sh $BUILD"
  awk 'NR > 1 && NF == 7' <<<"$out" | while read -r path mtu icrc total mem crc core; do
    jrec part=ipp path="$path" mtu="$mtu" icrc="$icrc" total="$total" memcpy="$mem" \
      icrc_instr="$crc" core="$core"
  done
}

provider_part() {
  command -v ib_write_bw >/dev/null || { echo "SKIP: perftest is not installed"; exit 77; }
  jrec part=cmd name="provider vs native" cmd="PVX_JSONL=results.jsonl bench/provider_vs_xfer.sh $BUILD $RUNS $SECS"
  PVX_JSONL=$RESULTS bash bench/provider_vs_xfer.sh "$BUILD" "$RUNS" "$SECS"
}

export -f ipp_part provider_part jrec jstr blog
for part in $PARTS; do
  case $part in
    ipp) run_part ipp 600 bash -c ipp_part ;;
    host) run_part host $((600 + RUNS * 60 * (SECS + 30))) bash bench/part_host.sh ;;
    provider) run_part provider $((300 + RUNS * 8 * (SECS + 60))) bash -c provider_part ;;
    guest) run_part guest $((900 + RUNS * 12 * (SECS + 40))) bash bench/part_guest.sh ;;
    *) echo "run.sh: unknown part '$part'" >&2; exit 2 ;;
  esac
done
trap - INT TERM

# --- Report ---------------------------------------------------------------------------------
TOTAL=$((SECONDS - T_START))
jrec part=meta_end total_seconds="$TOTAL"
# total_seconds goes into the meta record the report reads.
$PY - "$RESULTS" "$TOTAL" <<'EOF'
import json, sys
path, total = sys.argv[1], int(sys.argv[2])
lines = [json.loads(l) for l in open(path) if l.strip()]
for r in lines:
    if r.get("part") == "meta":
        r["total_seconds"] = total
lines = [r for r in lines if r.get("part") != "meta_end"]
with open(path, "w") as f:
    for r in lines:
        f.write(json.dumps(r) + "\n")
EOF
mkdir -p "$PNG_DIR"
cp "$RESULTS" "$PNG_DIR/results.jsonl"
$PY bench/report.py --results "$PNG_DIR/results.jsonl" --md "$MD" --png-dir "$PNG_DIR" \
  ${BASELINE:+--baseline "$WORKDIR/baseline.jsonl" --baseline-name "$BASELINE"} ||
  { echo "run.sh: report failed" >&2; exit 1; }
blog "done in $TOTAL s: $MD, $PNG_DIR/*.png, $PNG_DIR/results.jsonl (logs: $WORKDIR)"
