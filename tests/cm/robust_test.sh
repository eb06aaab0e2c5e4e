#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdma_cm robustness at the burstd level (docs/cm.md): two burstd on a veth pair
#   A: a0 10.47.0.1/24   <--veth-->   B: b0 10.47.0.2/24
# with cm_stall (an rdma_cm application that stops where told) under `burstctl run`:
#   server_killed  the server SIGKILLed after CONNECT_REQUEST, before ACCEPT: the client
#                  gets REJECTED/UNREACHABLE (not a hang)
#   client_killed  the client SIGKILLed after CONNECT, before ESTABLISHED; the server then
#                  accepts: it gets REJECTED/UNREACHABLE/DISCONNECTED or the accept fails
#   flood          CM_FLOOD (64) rdma_connect on one channel to a listener that never
#                  accepts; an rping pair still passes meanwhile; the listener killed, all
#                  get REJECTED;
#                  then 2000 forged REQs (fresh comm IDs) injected on the wire: rejected,
#                  counted (cm.rej_sent_no_listener), rping still passes
#   forged         forged REJs and DREQs naming unknown comm IDs injected during an rping
#                  -C 200: it still passes, counted as cm.dropped_no_match
#   backlog        3 connects to a listener of backlog 1 that reads no event yet: the REQs
#                  beyond the backlog are dropped without a REJ (cma.requests_dropped_backlog,
#                  as the kernel), the clients' CMs retry them, and once the server reads and
#                  accepts, all 3 are ESTABLISHED (none REJECTED)
# after each: cma.ids, cm.ids and cma.channels back to 0 on both burstd (after timewait).
# Usage: robust_test.sh BURSTCTL BURSTD CM_STALL [CASES...]
# Exit: 0 pass, 1 fail, 77 skipped.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"
source "$HERE/../provider/lib_apps.sh"
source "$HERE/lib_cm.sh"  # cm_pair, cm_want, cm_counters, cm_finish

BURSTCTL=${1:?usage: robust_test.sh BURSTCTL BURSTD CM_STALL [CASES...]}
BURSTD=${2:?usage}
STALL=${3:?usage}
shift 3
CASES=("$@")
PCAP=$HERE/../fixtures/rxe/cm_rping_mtu1024.pcap

netns_require_root "network namespaces, veth, XDP"
netns_require_tools "iproute2 util-linux coreutils python3" ip nsenter timeout python3
netns_require_tools "rdmacm-utils" rping
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD" "$STALL"

netns_pair burst-cmrob
REPORT=$TMP/report.txt
: >"$REPORT"
netns_cmd_env
netns_link_ab a0 10.47.0.1 b0 10.47.0.2
inA ping -c1 -W2 10.47.0.2 >/dev/null || fail "no IP connectivity over the veth"
MAC_A=$(inA ip -o link show a0 | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
[[ -n $MAC_A ]] || fail "no MAC address on a0"
netns_start_burstd "$NA" "$TMP/a.sock" "$TMP/burstd-a.log" "in $NA" --backend xdp --netdev a0
netns_start_burstd "$NB" "$TMP/b.sock" "$TMP/burstd-b.log" "in $NB" --backend xdp --netdev b0

bad() { echo "$1 FAIL: $2" >>"$REPORT"; FAILED+=("$1"); }
counter() { "$BURSTCTL" --socket "$TMP/$1.sock" counters --all 2>/dev/null | awk -v k="$2" '$1 == k {print $2}'; }
cm_line() { "$BURSTCTL" --socket "$TMP/$1.sock" counters 2>&1 | grep -E "^ *(cm|cma)\." | tr -s ' ' | paste -sd ' '; }

# bgA/bgB OUT SECONDS CMD...: an application under burstctl run in the background.
bgA() {
  local out=$1 t=$2
  shift 2
  nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout "$t" "$BURSTCTL" run --netdev a0 \
    --socket "$TMP/a.sock" -- "${CMD_ENV[@]}" "$@" >"$out" 2>&1 &
  BG_PIDS+=($!)
}
bgB() {
  local out=$1 t=$2
  shift 2
  nsenter --net=/run/netns/"$NB" env TMPDIR="$TMP" timeout "$t" "$BURSTCTL" run --netdev b0 \
    --socket "$TMP/b.sock" -- "${CMD_ENV[@]}" "$@" >"$out" 2>&1 &
  BG_PIDS+=($!)
}
# The application's own pid (cm_stall prints "PID n" first).
app_pid() { awk '$1 == "PID" {print $2; exit}' "$1"; }
wait_line() {  # wait_line FILE REGEX TENTHS-OF-SECONDS
  local i
  for ((i = 0; i < $3; i++)); do
    grep -q -E -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

# Nothing left in either burstd once the applications are gone (timewait included).
clean() {
  local name=$1 side ok=0
  for _ in $(seq 60); do
    ok=1
    for side in a b; do
      [[ $(counter $side cma.ids) == 0 && $(counter $side cm.ids) == 0 &&
        $(counter $side cma.channels) == 0 ]] || ok=0
    done
    [[ $ok == 1 ]] && break
    sleep 0.5
  done
  if [[ $ok != 1 ]]; then
    bad "$name" "left behind: A: $(cm_line a) / B: $(cm_line b)"
    return 1
  fi
  echo "== $name: clean (A: $(cm_line a))" >>"$REPORT"
}

rping_pair() {  # rping_pair NAME PORT COUNT: an rping pair must pass
  bgA "$TMP/$1.rs" 60 rping -s -a 10.47.0.1 -p "$2" -C "$3"
  local spid=${BG_PIDS[-1]} rc=1
  sleep 1
  for _ in 1 2 3 4 5; do
    brun_in "$NB" b0 "$TMP/b.sock" 60 rping -c -a 10.47.0.1 -p "$2" -C "$3" >"$TMP/$1.rc" 2>&1
    rc=$?
    [[ $rc -ne 0 ]] && grep -q -E "REJECTED|refused" "$TMP/$1.rc" || break
    sleep 1
  done
  wait "$spid" && [[ $rc -eq 0 ]] && return 0
  cat "$TMP/$1.rs" "$TMP/$1.rc"
  return 1
}

if cm_want server_killed; then
  log "server_killed"
  S=$TMP/sk.server C=$TMP/sk.client
  bgA "$S" 40 "$STALL" server 10.47.0.1 7471 8 "$TMP/sk.go"
  wait_line "$S" LISTENING 100 || bad server_killed "server not listening: $(cat "$S")"
  bgB "$C" 40 "$STALL" client 10.47.0.1 7471
  if wait_line "$S" "^REQ 1" 100; then
    kill -9 "$(app_pid "$S")"
    if wait_line "$C" "^EVENT|TIMEOUT" 300 &&
      grep -q -E "EVENT RDMA_CM_EVENT_(REJECTED|UNREACHABLE)" "$C"; then
      echo "== server_killed: client $(grep -m1 EVENT "$C")" >>"$REPORT"
    else
      bad server_killed "client: $(tr '\n' ' ' <"$C")"
    fi
  else
    bad server_killed "no CONNECT_REQUEST: $(tr '\n' ' ' <"$S") / $(tr '\n' ' ' <"$C")"
  fi
  clean server_killed
fi

if cm_want client_killed; then
  log "client_killed"
  S=$TMP/ck.server C=$TMP/ck.client
  bgA "$S" 40 "$STALL" server 10.47.0.1 7472 8 "$TMP/ck.go"
  wait_line "$S" LISTENING 100 || bad client_killed "server not listening: $(cat "$S")"
  bgB "$C" 40 "$STALL" client 10.47.0.1 7472
  if wait_line "$S" "^REQ 1" 100 && wait_line "$C" CONNECTING 100; then
    kill -9 "$(app_pid "$C")"
    sleep 1
    touch "$TMP/ck.go"
    if wait_line "$S" "^EVENT|TIMEOUT|ACCEPT_ERR" 300 &&
      grep -q -E "EVENT RDMA_CM_EVENT_(REJECTED|UNREACHABLE|DISCONNECTED|CONNECT_ERROR)|ACCEPT_ERR" "$S"; then
      echo "== client_killed: server $(grep -m1 -E "EVENT|ACCEPT_ERR" "$S")" >>"$REPORT"
    else
      bad client_killed "server: $(tr '\n' ' ' <"$S")"
    fi
  else
    bad client_killed "no handshake: $(tr '\n' ' ' <"$S") / $(tr '\n' ' ' <"$C")"
  fi
  clean client_killed
fi

FLOOD=${CM_FLOOD:-64}
if cm_want flood; then
  log "flood: $FLOOD connects to a listener that never accepts"
  S=$TMP/fl.server C=$TMP/fl.client
  bgA "$S" 90 "$STALL" server 10.47.0.1 7473 8 "$TMP/fl.never"
  wait_line "$S" LISTENING 100 || bad flood "server not listening: $(cat "$S")"
  bgB "$C" 150 "$STALL" flood 10.47.0.1 7473 $FLOOD
  wait_line "$S" "^REQ $FLOOD" 600 || bad flood "the server saw $(grep -c ^REQ "$S") of $FLOOD requests"
  rping_pair flood_rping 7474 10 || bad flood "rping failed while $FLOOD requests were pending"
  kill -9 "$(app_pid "$S")"
  wait_line "$C" "^COUNT" 700
  wait "${BG_PIDS[-1]}"
  if grep -q "COUNT RDMA_CM_EVENT_REJECTED $FLOOD" "$C"; then
    echo "== flood: client $(grep COUNT "$C" | paste -sd ' ')" >>"$REPORT"
  else
    bad flood "client: $(tr '\n' ' ' <"$C") server: $(tr '\n' ' ' <"$S")"
  fi
  clean flood
  log "flood: 2000 forged REQs on the wire"
  before=$(counter a cm.rej_sent_no_listener)
  inB python3 "$HERE/cm_inject.py" "$PCAP" b0 "$MAC_A" 10.47.0.2 10.47.0.1 req 2000 >/dev/null ||
    bad flood_inject "cm_inject.py failed"
  sleep 2
  after=$(counter a cm.rej_sent_no_listener)
  echo "== flood_inject: cm.rej_sent_no_listener $before -> $after; A: $(cm_line a)" >>"$REPORT"
  [[ $((after - before)) -gt 0 ]] || bad flood_inject "no REJ counted for the forged REQs"
  rping_pair flood_rping2 7475 10 || bad flood_inject "rping failed after the forged REQs"
  clean flood_inject
fi

if cm_want backlog; then
  log "backlog: 3 connects to a listener of backlog 1 that reads no event yet"
  S=$TMP/bl.server C=$TMP/bl.client
  before=$(counter a cma.requests_dropped_backlog)
  bgA "$S" 120 "$STALL" lazy 10.47.0.1 7477 1 "$TMP/bl.go" 3
  wait_line "$S" LISTENING 100 || bad backlog "server not listening: $(cat "$S")"
  bgB "$C" 120 "$STALL" flood 10.47.0.1 7477 3
  wait_line "$C" "^CONNECTING" 200
  for _ in $(seq 100); do
    [[ $(($(counter a cma.requests_dropped_backlog) - before)) -ge 1 ]] && break
    sleep 0.1
  done
  dropped=$(($(counter a cma.requests_dropped_backlog) - before))
  touch "$TMP/bl.go"
  wait_line "$C" "^COUNT" 700
  wait "${BG_PIDS[-1]}"
  if [[ $dropped -ge 1 ]] && grep -q "COUNT RDMA_CM_EVENT_ESTABLISHED 3" "$C" &&
    ! grep -q REJECTED "$C"; then
    echo "== backlog: dropped $dropped before the server read; client $(grep COUNT "$C" | paste -sd ' ')" >>"$REPORT"
  else
    bad backlog "dropped $dropped; client: $(tr '\n' ' ' <"$C") server: $(tr '\n' ' ' <"$S")"
  fi
  clean backlog
fi

if cm_want forged; then
  log "forged: REJs and DREQs with unknown comm IDs during an rping"
  bgA "$TMP/fo.rs" 90 rping -s -a 10.47.0.1 -p 7476 -C 300
  spid=${BG_PIDS[-1]}
  sleep 1
  (for _ in 1 2 3 4 5; do  # retried while the server is not listening yet
    brun_in "$NB" b0 "$TMP/b.sock" 60 rping -c -a 10.47.0.1 -p 7476 -C 300 >"$TMP/fo.rc" 2>&1
    rc=$?
    [[ $rc -ne 0 ]] && grep -q REJECTED "$TMP/fo.rc" || exit $rc
    sleep 1
  done) &
  cpid=$!
  BG_PIDS+=("$cpid")
  sleep 1
  before=$(counter a cm.dropped_no_match)
  sleep 1
  for kind in rej dreq rej dreq; do
    inB python3 "$HERE/cm_inject.py" "$PCAP" b0 "$MAC_A" 10.47.0.2 10.47.0.1 "$kind" 200 >/dev/null
  done
  after=$(counter a cm.dropped_no_match)
  wait "$cpid"
  crc=$?
  wait "$spid"
  src=$?
  echo "== forged: rping server=$src client=$crc; cm.dropped_no_match $before -> $after" >>"$REPORT"
  [[ $((after - before)) -gt 0 ]] || bad forged "the forged MADs were not counted"
  [[ $src -eq 0 && $crc -eq 0 ]] || bad forged "rping: $(tail -3 "$TMP/fo.rs") / $(tail -3 "$TMP/fo.rc")"
  clean forged
fi

cm_finish
