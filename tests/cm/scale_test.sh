#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Many RC connections through rdma_cm on one burstd, and nothing left behind
# (docs/cm.md "Scale"). Two burstd in network namespaces over a veth pair
# (AF_XDP), as netns.cm_ucma:
#   A: a0 10.48.0.1/24 (server)   <--veth-->   B: b0 10.48.0.2/24 (client)
# 1. hold: stock `ucmatose -c N -C 1`; once the client has every connection
#    (it prints "receiving data transfers") both tools are stopped (SIGSTOP),
#    so N RC QPs stay up on each burstd: burstd A's RSS and fds per QP,
#    `burstctl qps` (summary) and `qps --all` times, burstd CPU over HOLD_S
#    seconds with the N QPs idle; then both continue and must exit 0.
# 2. cycles: `ucmatose -c 1 -C 1` CYCLES times; before and after: QPs
#    (`burstctl qps`), burstd's fds (/proc/PID/fd), RSS, cma.ids on both
#    burstd. After: no QP, no cma id, fds back to the count before.
# Usage: scale_test.sh BURSTCTL BURSTD
# SCALE_CONNS (2000), SCALE_CYCLES (200), SCALE_HOLD_S (10), BURSTD_WORKERS (2),
# SCALE_PAIRS (1: ucmatose pairs sharing SCALE_CONNS, each on its own port),
# SCALE_QPS_PER_WORKER (burstd's qps_per_worker; default: enough for SCALE_CONNS).
# Exit: 0 pass, 1 fail, 77 skipped.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"
source "$HERE/../provider/lib_apps.sh"
source "$HERE/lib_cm.sh"  # cm_pair, cm_want, cm_counters, cm_finish

BURSTCTL=${1:?usage: scale_test.sh BURSTCTL BURSTD}
BURSTD=${2:?usage: scale_test.sh BURSTCTL BURSTD}
N=${SCALE_CONNS:-2000}
CYCLES=${SCALE_CYCLES:-200}
HOLD_S=${SCALE_HOLD_S:-10}
W=${BURSTD_WORKERS:-2}
PER_W=${SCALE_QPS_PER_WORKER:-$(((N + W - 1) / W + 64))}

netns_require_root "network namespaces, veth, XDP"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout stdbuf
netns_require_tools "rdmacm-utils" ucmatose
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD"

# Every QP costs burstd a descriptor per region (its rings, each CQ) and the
# application as many: both inherit this limit.
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
netns_pair burst-scale
netns_cmd_env
netns_link_ab a0 10.48.0.1 b0 10.48.0.2 numrxqueues "$W" numtxqueues "$W"
inA ping -c1 -W2 10.48.0.2 >/dev/null || fail "no IP connectivity over the veth"

# ucmatose makes two CQs per connection. SCALE_PLAIN=1: the default table sizes
# (a burstd without these keys).
[[ ${SCALE_PLAIN:-0} == 1 ]] && : >"$TMP/burstd.conf" || cat >"$TMP/burstd.conf" <<EOF
qps_per_worker = $PER_W
cqs_per_worker = $((2 * PER_W))
EOF
netns_start_burstd "$NA" "$TMP/a.sock" "$TMP/burstd-a.log" "in $NA" --backend xdp --netdev a0 \
  --workers "$W" --config "$TMP/burstd.conf"
PID_A=$BURSTD_PID
netns_start_burstd "$NB" "$TMP/b.sock" "$TMP/burstd-b.log" "in $NB" --backend xdp --netdev b0 \
  --workers "$W" --config "$TMP/burstd.conf"
PID_B=$BURSTD_PID

REPORT=$TMP/report.txt
: >"$REPORT"
FAILED=()
rep() { echo "$*" | tee -a "$REPORT"; }

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
nfds() { ls "/proc/$1/fd" | wc -l; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
counter() { "$BURSTCTL" --socket "$TMP/$1.sock" counters --all 2>/dev/null | awk -v k="$2" '$1 == k {print $2}'; }
qp_count() { timeout 20 "$BURSTCTL" --socket "$TMP/$1.sock" qps 2>/dev/null |
  awk '$2 == "QPs" {print $1}'; }
snapshot() {  # LABEL: one line per burstd
  local side pid
  for side in a b; do
    pid=$PID_A
    [[ $side == b ]] && pid=$PID_B
    rep "$1 burstd-$side: qps=$(qp_count "$side") fds=$(nfds "$pid") rss_kb=$(rss_kb "$pid")" \
      "cma.ids=$(counter "$side" cma.ids) cma.ids_created=$(counter "$side" cma.ids_created)"
  done
}
ms_of() {  # CMD...: wall milliseconds
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}

# ---- 1. N connections held
log "hold: ucmatose -c $N -C 1"
snapshot "before-hold"
C0=$(cpu_ticks "$PID_A")
sleep "$HOLD_S"
IDLE0_MS=$((($(cpu_ticks "$PID_A") - C0) * 1000 / $(getconf CLK_TCK)))
RSS0=$(rss_kb "$PID_A")
FD0=$(nfds "$PID_A")
T=$((120 + N / 20))
# PAIRS ucmatose pairs of N/PAIRS connections each, on ports 7471...: one
# rdma_cm channel handles its events one at a time, and with thousands in
# flight on a loaded machine its RTUs come later than the server's CM waits.
PAIRS=${SCALE_PAIRS:-1}
PER=$((N / PAIRS))
SPIDS=() CPIDS=()
# tools_of PORT: the pids of the ucmatose pair on PORT (children of timeout / burstctl run).
tools_of() {
  (ip netns pids "$NA"; ip netns pids "$NB") | xargs -r ps -o pid=,args= -p |
    awk -v p="-p $1" '$2 ~ /ucmatose$/ && index($0, p) {print $1}'
}
# One pair at a time (thousands of address resolutions at once outlast
# ucmatose's 2 s timeout here); each is stopped (SIGSTOP) as soon as its client
# has every connection (it prints "receiving data transfers"), before it could
# exchange data and disconnect; then all of them are held together.
stopped=0 TOOLS=""
for ((k = 0; k < PAIRS; k++)); do
  port=$((7471 + k))
  nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout "$T" "$BURSTCTL" run --netdev a0 \
    --socket "$TMP/a.sock" -- "${CMD_ENV[@]}" stdbuf -oL -eL ucmatose -c "$PER" -C 1 -p "$port" \
    >"$TMP/hold.server.$k" 2>&1 &
  SPIDS+=($!)
  BG_PIDS+=($!)
  sleep 1
  brun_in "$NB" b0 "$TMP/b.sock" "$T" stdbuf -oL -eL ucmatose -c "$PER" -C 1 -p "$port" \
    -s 10.48.0.1 >"$TMP/hold.client.$k" 2>&1 &
  CPIDS+=($!)
  BG_PIDS+=($!)
  for ((t = 0; t < T * 10; t++)); do
    if grep -q "receiving data transfers" "$TMP/hold.client.$k" 2>/dev/null; then
      pids=$(tools_of "$port")
      kill -STOP $pids 2>/dev/null
      TOOLS="$TOOLS $pids"
      stopped=$((stopped + 1))
      break
    fi
    kill -0 "${CPIDS[$k]}" 2>/dev/null || break
    sleep 0.1
  done
  log "pair $k: $(qp_count a) QPs on burstd-a"
done
if [[ $stopped -eq $PAIRS ]]; then
  sleep 1
  QPS=$(qp_count a)
  RSS1=$(rss_kb "$PID_A")
  FD1=$(nfds "$PID_A")
  rep "held ($PAIRS x ucmatose -c $PER): burstd-a qps=$QPS rss_kb=$RSS0->$RSS1 fds=$FD0->$FD1" \
    "per QP: $(((RSS1 - RSS0) * 1024 / (QPS > 0 ? QPS : 1))) B RSS," \
    "$(awk -v a="$FD0" -v b="$FD1" -v q="$QPS" 'BEGIN {printf "%.2f", (b - a) / (q > 0 ? q : 1)}') fds"
  rep "held: burstctl qps (summary) $(ms_of "$BURSTCTL" --socket "$TMP/a.sock" qps) ms," \
    "qps --all $(ms_of "$BURSTCTL" --socket "$TMP/a.sock" qps --all) ms"
  "$BURSTCTL" --socket "$TMP/a.sock" qps | head -5 | tee -a "$REPORT"
  C0A=$(cpu_ticks "$PID_A")
  C0B=$(cpu_ticks "$PID_B")
  V0=$(counter a shm.sweep_visits)
  sleep "$HOLD_S"
  C1A=$(cpu_ticks "$PID_A")
  C1B=$(cpu_ticks "$PID_B")
  HZ=$(getconf CLK_TCK)
  rep "idle $QPS QPs for ${HOLD_S}s: burstd-a cpu $(((C1A - C0A) * 1000 / HZ)) ms," \
    "burstd-b cpu $(((C1B - C0B) * 1000 / HZ)) ms; burstd-a idle before any QP:" \
    "$IDLE0_MS ms; sweep visits in the ${HOLD_S}s: $(($(counter a shm.sweep_visits) - V0))"
  [[ ${QPS:-0} -ge $((PER * PAIRS)) ]] || FAILED+=("held-qps=$QPS")
  kill -CONT $TOOLS 2>/dev/null
else
  FAILED+=(hold-connect)
  kill -CONT $TOOLS 2>/dev/null  # the pairs that were held, so they can end
  grep -h -E "error|warn" "$TMP"/burstd-[ab].log | tail -n 20
  for side in a b; do
    rep "burstd-$side CM counters: $("$BURSTCTL" --socket "$TMP/$side.sock" counters --all 2>/dev/null |
      grep -E "^ *(cm|gsi)\." | grep -v " 0$" | tr -s ' ' | paste -sd ' ')"
  done
fi
for ((k = 0; k < PAIRS; k++)); do
  wait "${CPIDS[$k]}"
  crc=$?
  wait "${SPIDS[$k]}"
  src=$?
  if [[ $src -ne 0 || $crc -ne 0 ]]; then
    tail -n 5 "$TMP/hold.server.$k" "$TMP/hold.client.$k" 2>&1
    FAILED+=("hold-$k server=$src client=$crc")
  fi
done
snapshot "after-hold"

# ---- 2. connect/disconnect cycles
log "cycles: $CYCLES x ucmatose -c 1 -C 1"
sleep 1
snapshot "before-cycles"
FDC0=$(nfds "$PID_A")
FDC0B=$(nfds "$PID_B")
nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout $((60 + CYCLES)) "$BURSTCTL" run \
  --netdev a0 --socket "$TMP/a.sock" -- "${CMD_ENV[@]}" sh -c \
  "i=0; while [ \$i -lt $CYCLES ]; do ucmatose -c 1 -C 1 >/dev/null || exit 1; i=\$((i+1)); done" \
  >"$TMP/cycles.server" 2>&1 &
SPID=$!
BG_PIDS+=("$SPID")
sleep 1
ok=0
for ((i = 0; i < CYCLES; i++)); do
  for _ in 1 2 3 4 5; do
    brun_in "$NB" b0 "$TMP/b.sock" 30 ucmatose -c 1 -C 1 -s 10.48.0.1 >"$TMP/cycle.client" 2>&1 &&
      break
    sleep 0.2
  done
  grep -q "data transfers complete" "$TMP/cycle.client" && ok=$((ok + 1))
done
wait "$SPID"
src=$?
sleep 1
snapshot "after-cycles"
rep "cycles: $ok/$CYCLES completed"
[[ $src -eq 0 && $ok -eq $CYCLES ]] || FAILED+=("cycles ok=$ok server=$src")
for side in a b; do
  q=$(qp_count "$side")
  ids=$(counter "$side" cma.ids)
  [[ $q == 0 && $ids == 0 ]] || FAILED+=("leftovers-$side qps=$q cma.ids=$ids")
done
[[ $(nfds "$PID_A") -le $FDC0 && $(nfds "$PID_B") -le $FDC0B ]] || FAILED+=(fds)

cm_finish
