#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The provider's data path against one loopback burstd (the port hears its own
# frames) in a private namespace, with verbs_data_probe (plain libibverbs):
#   - remote access rules (no REMOTE_WRITE / REMOTE_READ, wrong rkey ->
#     IBV_WC_REM_ACCESS_ERR; right rkey: WRITE, READ, FETCH_ADD with data checked);
#   - isolation: another application's lkey in a local SGE -> IBV_WC_LOC_PROT_ERR;
#   - kill -9 of an application mid-transfer: burstd releases its QPs and the
#     next application works;
#   - an application killed between doorbell reserve and commit (the provider's
#     BURST_TEST_DIE_IN_DOORBELL hook; skipped unless BURST_TEST_HOOKS=1, which
#     CMake sets for a -DBURST_TEST_HOOKS=ON build): burstd reclaims the slot and
#     the next application on that worker works;
#   - burstd stopped under an application blocked on its completion channel:
#     the application gets IBV_EVENT_DEVICE_FATAL / a failing poll, never hangs.
# Usage: data_test.sh BURSTCTL BURSTD PROBE
# Exit: 0 pass, 1 fail, 77 skipped.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"

BURSTCTL=${1:?usage: data_test.sh BURSTCTL BURSTD PROBE}
BURSTD=${2:?}
PROBE=${3:?}

netns_require_root "network namespace, veth, /dev/infiniband node"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout
netns_require_libibverbs
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD" "$PROBE"

netns_pair burst-data  # only $NA is used
ip link add v0 netns "$NA" type veth peer name v1 netns "$NA" || fail "cannot create veth pair"
inA ip link set lo up
inA ip addr add 10.46.0.1/24 dev v0
inA ip link set v0 up
inA ip link set v1 up

netns_cmd_env
SOCK=$TMP/burstd.sock
BURSTD_PID=
start_burstd() {
  netns_start_burstd "$NA" "$SOCK" "$TMP/burstd.log" "" --backend loopback --netdev v0
}
ctl() { timeout 20 "$BURSTCTL" --socket "$SOCK" "$@"; }
run() {
  nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" "${ENVS[@]}" timeout 60 "$BURSTCTL" run \
    --netdev v0 --socket "$SOCK" -- "${CMD_ENV[@]}" "$PROBE" "$@"
}
ENVS=()
failhard() {
  echo "--- burstd log:"
  tail -40 "$TMP/burstd.log"
  fail "$*"
}
counter() { ctl counters | awk -v n="$1" '$1 == n || $1 == n":" {print $NF; exit}'; }
qps() { ctl qps --json | grep -o '"qpn"' | wc -l; }

start_burstd

log "remote access rules and data (cross-memory MRs)"
run access >"$TMP/access" 2>&1 || { cat "$TMP/access"; failhard "access probe"; }
cat "$TMP/access"

log "isolation: another application's lkey"
nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout 60 "$BURSTCTL" run --netdev v0 \
  --socket "$SOCK" -- "${CMD_ENV[@]}" "$PROBE" hold "$TMP/keys" >"$TMP/hold" 2>&1 &
HOLD=$!
BG_PIDS+=("$HOLD")
wait_for "$TMP/keys" " " 20 || failhard "hold probe did not register its MR"
read -r LKEY ADDR _ <"$TMP/keys"
run foreign "$LKEY" "$ADDR" >"$TMP/foreign" 2>&1 || { cat "$TMP/foreign"; failhard "foreign lkey"; }
cat "$TMP/foreign"
kill "$HOLD" 2>/dev/null
wait "$HOLD" 2>/dev/null

log "kill -9 of an application mid-transfer"
nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout 60 "$BURSTCTL" run --netdev v0 \
  --socket "$SOCK" -- "${CMD_ENV[@]}" "$PROBE" stream 20 >"$TMP/stream" 2>&1 &
STREAM=$!
BG_PIDS+=("$STREAM")
wait_for "$TMP/stream" streaming 20 || failhard "stream probe did not start"
sleep 1
pkill -9 -f "^$PROBE stream" || failhard "no stream probe to kill"
wait "$STREAM" 2>/dev/null
for _ in $(seq 50); do [[ $(qps) -eq 0 ]] && break; sleep 0.1; done
[[ $(qps) -eq 0 ]] || failhard "burstd kept the killed application's QPs"
kill -0 "$BURSTD_PID" || failhard "burstd died"
run access >"$TMP/access2" 2>&1 || { cat "$TMP/access2"; failhard "access probe after kill -9"; }
echo "ok: burstd released the QPs and serves the next application"

log "an application killed between doorbell reserve and commit (test hook)"
if [[ ${BURST_TEST_HOOKS:-0} != 1 ]]; then
  echo "skipped: the provider has no test hooks (cmake -DBURST_TEST_HOOKS=ON, as the default preset)"
else
  ENVS=(BURST_TEST_DIE_IN_DOORBELL=1)
  run stream 5 >"$TMP/die" 2>&1
  rc=$?
  ENVS=()
  [[ $rc -eq 137 || $rc -eq 9 ]] || { cat "$TMP/die"; failhard "the hook did not kill the probe (exit $rc)"; }
  run access >"$TMP/access3" 2>&1 || { cat "$TMP/access3"; failhard "access probe after a dead producer"; }
  # The next application does not wait for the reclaim (burstd also sweeps every ring each
  # millisecond); the dead slot is reclaimed once it has been stuck for the timeout (50 ms).
  for _ in $(seq 40); do
    reclaimed=$(counter shm.doorbell_reclaimed)
    [[ ${reclaimed:-0} -ge 1 ]] && break
    sleep 0.1
  done
  echo "ok: next application works; doorbell slots reclaimed: ${reclaimed:-0}"
  [[ ${reclaimed:-0} -ge 1 ]] || failhard "no doorbell slot reclaimed (counters omit zero values)"
fi

log "burstd stopped under an application blocked on its completion channel"
nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout 60 "$BURSTCTL" run --netdev v0 \
  --socket "$SOCK" -- "${CMD_ENV[@]}" "$PROBE" events >"$TMP/events" 2>&1 &
EV=$!
BG_PIDS+=("$EV")
wait_for "$TMP/events" waiting 20 || { cat "$TMP/events"; failhard "events probe did not start"; }
kill -TERM "$BURSTD_PID"
wait "$BURSTD_PID" 2>/dev/null
wait "$EV"
rc=$?
cat "$TMP/events"
[[ $rc -eq 0 ]] || fail "the application did not get an error or event when burstd stopped (exit $rc)"
echo "PASS"
