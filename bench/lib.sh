# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# shellcheck shell=bash
# Shared pieces of bench/run.sh and its parts (sourced, not run).
#   jrec KEY=VALUE ...        append one JSON object to $RESULTS (numbers stay numbers; a value
#                             starting with '[' or '{' is copied as JSON; KEY:=VALUE is always
#                             a string)
#   jstr STRING               STRING as a JSON string (quotes and backslashes escaped)
#   cpu_secs FILE             user + system seconds from a `/usr/bin/time -f '%U %S' -o FILE` record
#   quantiles FILE            JSON list of the 0th..100th percentiles, then p99.9 and p99.99, in
#                             microseconds, of the nanosecond samples in FILE (one per line)
#   sfield FILE PATTERN NAME  value of NAME=... on the first line of FILE matching PATTERN
#   bench_cmd NAME CMD...     record CMD (the exact command of a measurement) once per NAME
#   blog MSG                  progress line on stderr
#   part_setup NAME           a part's start: X, XSK, UPP (burst-xfer, xsk-raw, udp-pingpong of
#                             $BUILD) and its log directory LOG=$LOGDIR/NAME, created
#   last_line FILE            the last non-empty line of FILE (a failed run's message)
#   pair_error CLI SRV        "client: <last line of CLI> / server: <last line of SRV>"
# Environment of every part: BUILD, RESULTS, LOGDIR, RUNS, SECS, QUICK (0/1).
# For the standalone comparisons (backends.sh, provider_ab.sh, provider_vs_xfer.sh):
#   median                    the median of the numbers on stdin ("nan" when there are none)
#   stop_pids SIGNAL          send SIGNAL to the processes in PIDS, reap them, empty PIDS
#   veth_netns TAG SUBNET     private namespaces NA=burst-TAG-PID-a and NB=burst-TAG-PID-b joined by
#                             the veth pair va (SUBNET.1/24) / vb (SUBNET.2/24), loopbacks up, va and
#                             vb left down; TMP a new directory; on exit the processes in PIDS get
#                             signal $PAIR_KILL (default KILL) and are reaped, NA, NB and TMP removed

# shellcheck disable=SC2034  # used by the parts
TIMEF=(/usr/bin/time -f '%U %S' -o)

blog() { echo "[bench $(date +%H:%M:%S)] $*" >&2; }

part_setup() {
  X=$BUILD/tools/burst-xfer/burst-xfer
  XSK=$BUILD/tools/xsk-raw/xsk-raw
  UPP=$BUILD/tools/udp-pingpong/udp-pingpong
  LOG=$LOGDIR/$1
  mkdir -p "$LOG"
}

last_line() { grep -v '^$' "$1" | tail -1; }
pair_error() { echo "client: $(last_line "$1") / server: $(last_line "$2")"; }

jstr() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/ }
  s=${s//$'\n'/ }
  printf '"%s"' "$s"
}

jrec() {
  local kv k v out=""
  for kv in "$@"; do
    k=${kv%%=*}
    v=${kv#*=}
    if [[ $k == *: ]]; then
      k=${k%:}
      v=$(jstr "$v")
    elif [[ $v =~ ^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]]; then
      :
    elif [[ $v == \[* || $v == \{* ]]; then
      :
    else
      v=$(jstr "$v")
    fi
    out+="${out:+, }\"$k\": $v"
  done
  echo "{$out}" >>"$RESULTS"
}

cpu_secs() {
  [[ -s $1 ]] || { echo ""; return; }
  tail -1 "$1" | awk 'NF == 2 && $1 ~ /^[0-9.]+$/ {printf "%.3f", $1 + $2}'
}

quantiles() {
  sort -n "$1" | awk '{a[NR] = $1}
    END {
      if (NR == 0) { print "[]"; exit }
      s = "["
      for (p = 0; p <= 100; p++) s = s sprintf("%.3f,", a[int(p / 100 * (NR - 1)) + 1] / 1000)
      s = s sprintf("%.3f,%.3f]", a[int(0.999 * (NR - 1)) + 1] / 1000, a[int(0.9999 * (NR - 1)) + 1] / 1000)
      print s
    }'
}

sfield() { grep -m1 -- "$2" "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$3=//p" | head -1; }

declare -A BENCH_CMDS_SEEN
bench_cmd() {
  local name=$1
  shift
  [[ -n ${BENCH_CMDS_SEEN[$name]:-} ]] && return 0
  BENCH_CMDS_SEEN[$name]=1
  jrec part=cmd name="$name" cmd="$*"
}

median() { sort -g | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)]; else print "nan"}'; }

stop_pids() {
  local p
  for p in "${PIDS[@]}"; do kill -s "$1" "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  PIDS=()
}

veth_netns_cleanup() {
  stop_pids "${PAIR_KILL:-KILL}"
  ip netns del "$NA" 2>/dev/null
  ip netns del "$NB" 2>/dev/null
  rm -rf "$TMP"
}

veth_netns() {
  NA=burst-$1-$$-a
  NB=burst-$1-$$-b
  TMP=$(mktemp -d)
  PIDS=()
  trap veth_netns_cleanup EXIT
  ip netns add "$NA" && ip netns add "$NB" || exit 1
  ip -n "$NA" link add va type veth peer name vb netns "$NB" || exit 1
  ip -n "$NA" link set lo up
  ip -n "$NB" link set lo up
  ip -n "$NA" addr add "$2.1/24" dev va
  ip -n "$NB" addr add "$2.2/24" dev vb
}
