#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdma_cm interoperability: stock librdmacm tools on both sides, burst (burstd over AF_XDP on
# $INTEROP_BURST_IF, tools under `burstctl run`, whose shim relays /dev/infiniband/rdma_cm to
# burstd's connection manager, docs/cm.md) against the kernel's rdma_cm on Linux rxe in a guest:
#   tools      rping -V -C 10 (data checked), ucmatose, udaddy (UD over SIDR), ib_write_bw -R
#   directions burst client -> rxe server ("b2r"), rxe client -> burst server ("r2b")
#   reject     a connect to a port nobody listens on ends in RDMA_CM_EVENT_REJECTED, both ways
# RoCE MTU 1024 (1500-byte links). Results: a markdown table on stdout.
# CM_LOSS=N: netem in the guest drops N% of the frames rxe sends, and burstd drops N% of the CM
# MADs it sends (the host kernel here has no sch_netem: burstd's BURST_TEST_HOOKS drop,
# BURST_TEST_GSI_TX_LOSS, daemon/burstd/gsi.h; gsi.test_tx_dropped counts it; a build without the
# hooks drops nothing in that direction and says so). Both CMs then retry their own MADs: REQ,
# REP, DREQ (burst's and the kernel's), and answer duplicates (REP/RTU/DREP again); the
# connections must still form. udaddy's UD data is never resent: left out under loss;
# ib_write_bw sends 1 KiB messages then.
# Usage (root): tests/interop/cm.sh [BUILD_DIR]
# Settings: CM_TOOLS ("rping ucmatose udaddy ib_write_bw reject"), CM_DIRS ("b2r r2b"),
#   CM_LOSS (%, default 0), CM_DEADLINE (s, default 900).
# Exit 0 = every cell passed, 77 = skipped, 1 = a cell failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
BUILD=${1:-$HERE/../../build/default}
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
TOOLS=${CM_TOOLS:-"rping ucmatose udaddy ib_write_bw reject"}
DIRS=${CM_DIRS:-"b2r r2b"}
GUEST_IP=$INTEROP_SUBNET.11
for b in "$BURSTD" "$BURSTCTL"; do [[ -x $b ]] || iskip "build $b first"; done
for c in rping ucmatose udaddy ib_write_bw; do
  command -v "$c" >/dev/null || iskip "missing '$c' on the host (rdmacm-utils, perftest)"
done

interop_require
interop_prepare
interop_netns_up
interop_deadline "${CM_DEADLINE:-900}"
SOCK=$INTEROP_RUN/burstd.sock
FAILED=()
BPID=

burstd_start() {
  nsenter --net="/run/netns/$INTEROP_NS" env ${BURSTD_ENV:-} "$BURSTD" --backend xdp --netdev "$INTEROP_BURST_IF" \
    --workers 1 --socket "$SOCK" >>"$INTEROP_RUN/burstd.log" 2>&1 &
  BPID=$!
  for _ in $(seq 100); do
    timeout 5 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$INTEROP_RUN/burstd.log"
  ifail "burstd did not start on $INTEROP_BURST_IF"
}
cm_cleanup() {
  local rc=$?
  [[ -n $BPID ]] && { kill "$BPID" 2>/dev/null; wait "$BPID" 2>/dev/null; }
  (exit "$rc")
  interop_cleanup
}
trap cm_cleanup EXIT
burst_run() {  # burstctl run in the namespace, bounded
  nsenter --net="/run/netns/$INTEROP_NS" env TMPDIR="$INTEROP_RUN" timeout 120 "$BURSTCTL" run \
    --netdev "$INTEROP_BURST_IF" --socket "$SOCK" -- "$@"
}

# The server's and the client's command lines of TOOL for SIDE (burst|rxe); the client's
# ends where the server's address goes. rping and udaddy bind the server's address.
server_cmd() {
  local tool=$1 side=$2 addr=$3 dev
  dev=$([[ $side == burst ]] && echo burst0 || echo rxe0)
  case $tool in
    rping) echo "rping -s -a $addr -V -C 10" ;;
    ucmatose) echo "ucmatose -C 10" ;;
    udaddy) echo "udaddy -C 10 -b $addr" ;;
    ib_write_bw) echo "ib_write_bw -R -d $dev -F -s $BW_SIZE -n 200" ;;
  esac
}
client_cmd() {
  local tool=$1 side=$2 addr=$3 dev
  dev=$([[ $side == burst ]] && echo burst0 || echo rxe0)
  case $tool in
    rping) echo "rping -c -a $addr -V -C 10" ;;
    ucmatose) echo "ucmatose -C 10 -s $addr" ;;
    udaddy) echo "udaddy -C 10 -s $addr" ;;
    ib_write_bw) echo "ib_write_bw -R -d $dev -F -s $BW_SIZE -n 200 $addr" ;;
    reject) echo "rping -c -a $addr -p 9 -C 1" ;;
  esac
}

result() {  # NAME DIR RC_CLIENT RC_SERVER OUT
  local name=$1 dir=$2 rc_c=$3 rc_s=$4 out=$5 fig
  fig=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {l = $4 " MB/s avg"} END {print l}' "$out.client")
  if [[ $rc_c -eq 0 && $rc_s -eq 0 ]]; then
    echo "| $name | $dir | pass | $fig |"
  else
    echo "| $name | $dir | FAIL (client $rc_c, server $rc_s) | |"
    FAILED+=("$name $dir")
    { echo "=== $name $dir client:"; tail -15 "$out.client"; echo "=== server:"; tail -15 "$out.server"; } >&2
  fi
}

cell() {  # TOOL DIR
  local tool=$1 dir=$2 out=$INTEROP_RUN/cell-$1-$2 rc_c rc_s s
  if [[ $tool == reject ]]; then
    if [[ $dir == b2r ]]; then
      burst_run $(client_cmd reject burst "$GUEST_IP") >"$out.client" 2>&1
    else
      guest_run -t 60 "$G" "$(client_cmd reject rxe "$INTEROP_HOST_IP")" >"$out.client" 2>&1
    fi
    : >"$out.server"
    grep -q RDMA_CM_EVENT_REJECTED "$out.client" && rc_c=0 || rc_c=1
    result reject "$dir" "$rc_c" 0 "$out"
    return
  fi
  if [[ $dir == b2r ]]; then
    s=$(guest_spawn -t 120 "$G" "$(server_cmd "$tool" rxe "$GUEST_IP")")
    sleep 3  # no TCP listener to wait for: rdma_cm ports are the CM's
    # A server in the TCG guest may still be starting (perftest sets up its buffers
    # before rdma_listen): the guest's CM then answers REJ "invalid service ID" and
    # the server never hears of it, so the client tries again (at most 4 times).
    local try
    for try in 1 2 3 4; do
      # shellcheck disable=SC2046
      burst_run $(client_cmd "$tool" burst "$GUEST_IP") >"$out.client" 2>&1
      rc_c=$?
      ((rc_c != 0)) && grep -q "REJECTED" "$out.client" || break
      echo "--- $tool b2r: REJECTED on try $try (the guest's server not listening yet); again" >&2
      sleep 3
    done
    guest_wait "$G" "$s" >"$out.server" 2>&1
    rc_s=$?
  else
    # shellcheck disable=SC2046
    burst_run $(server_cmd "$tool" burst "$INTEROP_HOST_IP") >"$out.server" 2>&1 &
    local sp=$!
    sleep 3
    guest_run -t 120 "$G" "$(client_cmd "$tool" rxe "$INTEROP_HOST_IP")" >"$out.client" 2>&1
    rc_c=$?
    wait "$sp"
    rc_s=$?
  fi
  result "$tool" "$dir" "$rc_c" "$rc_s" "$out"
}

G=vmcm
guest_start "$G" "$GUEST_IP" 1500 || iskip "cannot boot a guest here; see the console log above"
guest_run "$G" "ping -c 1 -W 5 $INTEROP_HOST_IP >/dev/null" || ifail "the guest cannot reach burst"
LOSS=${CM_LOSS:-0}
BURSTD_ENV=
[[ $LOSS != 0 ]] && BURSTD_ENV="BURST_TEST_GSI_TX_LOSS=$LOSS BURST_TEST_GSI_TX_SEED=${CM_LOSS_SEED:-7}"
burstd_start
BW_SIZE=65536
if [[ $LOSS != 0 ]]; then
  # One packet per message: at 10% loss a 64-packet message hardly ever gets through whole
  # within the RC retry count (go-back-N), which says nothing about the CM.
  BW_SIZE=1024
  guest_run "$G" "tc qdisc add dev eth0 root netem loss ${LOSS}%" || ifail "netem in the guest"
  TOOLS=${TOOLS//udaddy/}
  echo "loss: ${LOSS}% of the frames rxe sends"
  if "$BURSTCTL" --socket "$SOCK" counters --all | grep -q gsi.test_tx_dropped; then
    echo "loss: ${LOSS}% of the CM MADs burstd sends"
  else
    echo "loss: none in the burst -> rxe direction (burstd built without BURST_TEST_HOOKS)"
  fi
fi
echo "| tool | direction | result | client's figure |"
echo "|---|---|---|---|"
for tool in $TOOLS; do
  for dir in $DIRS; do cell "$tool" "$dir"; done
done
echo "--- burstd counters: $("$BURSTCTL" --socket "$SOCK" counters | grep -E '^ *(cm|cma|gsi)\.' |
  tr -s ' ' | paste -sd ' ')"
echo "date $(date -u +%F), $(nproc) cores, accel $(interop_accel), $(uname -r)"
[[ ${#FAILED[@]} -eq 0 ]] || ifail "${#FAILED[@]} cell(s) failed: ${FAILED[*]}"
echo "PASS: every cell"
