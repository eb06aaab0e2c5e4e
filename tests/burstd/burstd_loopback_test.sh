#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burstd with the loopback backend, driven over its control socket (no root):
#   - start-up: config file + flag overrides, sd_notify READY=1 to $NOTIFY_SOCKET;
#   - the control protocol end to end (ctl_test_client scenario): HELLO, PD, CQ,
#     RC QPs to RTS, QUERY_QP, UD QP, per-client isolation, bad requests;
#   - cleanup on disconnect: a client killed with -9 loses its QPs (burstctl qps);
#   - burstctl status / devices / workers / counters / qps, tables and --json;
#   - socket rules: a second burstd on a live socket fails, a stale socket is
#     replaced, a path that is not a socket is never removed;
#   - clear start-up errors (bad config key with its line, no netdev for xdp);
#   - SIGTERM: exit 0, socket removed.
# Usage: burstd_loopback_test.sh BURSTD BURSTCTL CTL_TEST_CLIENT [EVENT_LOOP]
#   EVENT_LOOP (auto, uring or epoll; default auto): burstd.conf event_loop, and
#   the control loop burstd must report ("auto": whichever it chose).
# Exit: 0 pass, 1 fail.
set -uo pipefail

BURSTD=${1:?usage: burstd_loopback_test.sh BURSTD BURSTCTL CTL_TEST_CLIENT}
BURSTCTL=${2:?}
CLIENT=${3:?}
EVENT_LOOP=${4:-auto}

fail() { echo "FAIL: $*"; [[ -f ${TMP:-}/burstd.log ]] && { echo "--- burstd log:"; cat "$TMP/burstd.log"; }; exit 1; }
log() { echo "--- $*"; }

TMP=$(mktemp -d /tmp/burstd-loopback-test.XXXXXX)
PIDS=()  # background processes (started directly, so $! is their pid), killed at exit
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 1' INT TERM

SOCK=$TMP/run/burstd.sock  # the directory does not exist yet: burstd creates it
ctl() { timeout 20 "$BURSTCTL" --socket "$SOCK" "$@"; }
json() { "$CLIENT" json-get "$1"; }  # stdin: JSON

wait_socket() {  # PATH SECONDS
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [[ -S $1 ]] && timeout 5 "$BURSTCTL" --socket "$1" status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

# wait_exit PID SECONDS: waits for the process; RC = its exit status, or "timeout".
wait_exit() {
  local i
  RC=timeout
  for ((i = 0; i < $2 * 10; i++)); do
    if ! kill -0 "$1" 2>/dev/null; then
      wait "$1"
      RC=$?
      return 0
    fi
    sleep 0.1
  done
}

log "start-up: config file, flag overrides, sd_notify"
cat >"$TMP/burstd.conf" <<CONF
# test configuration
backend = loopback
workers = 3          # overridden by --workers 2
log_level = debug
idle_sleep_max_us = 2000
event_loop = $EVENT_LOOP
CONF
timeout 20 "$CLIENT" notify-listen "$TMP/notify" 15000 >"$TMP/notify.out" 2>&1 &
NPID=$!
PIDS+=("$NPID")
for ((i = 0; i < 50; i++)); do [[ -S $TMP/notify ]] && break; sleep 0.1; done
NOTIFY_SOCKET=$TMP/notify "$BURSTD" --config "$TMP/burstd.conf" --workers 2 \
  --socket "$SOCK" >"$TMP/burstd.out" 2>"$TMP/burstd.log" &
BPID=$!
PIDS+=("$BPID")
wait_socket "$SOCK" 10 || fail "burstd did not come up"
wait "$NPID" || fail "no sd_notify message: $(cat "$TMP/notify.out")"
grep -q "READY=1" "$TMP/notify.out" || fail "sd_notify without READY=1: $(cat "$TMP/notify.out")"
[[ $(stat -c %a "$SOCK") == 666 ]] || fail "socket mode $(stat -c %a "$SOCK"), want 666"
case $EVENT_LOOP in
  uring) want_loop="io_uring" ;;
  epoll) want_loop="epoll" ;;
  *) want_loop="" ;;
esac
grep -q "control loop: $want_loop" "$TMP/burstd.log" || fail "control loop is not '$want_loop'"
grep "control loop:" "$TMP/burstd.log"

log "burstctl status (table and JSON)"
ctl status >"$TMP/status.txt" || fail "burstctl status"
cat "$TMP/status.txt"
grep -q "^backend  loopback, 2 queues, 2 workers" "$TMP/status.txt" || fail "status table"
ctl status --json >"$TMP/status.json" || fail "burstctl status --json"
[[ $(json /backend <"$TMP/status.json") == loopback ]] || fail "status JSON backend"
[[ $(json /workers <"$TMP/status.json") == 2 ]] || fail "status JSON workers"
[[ $(json /xdp_mode <"$TMP/status.json") == none ]] || fail "status JSON xdp_mode"
[[ $(json /memory_mode <"$TMP/status.json") == cma ]] || fail "status JSON memory_mode"
[[ $(json /pid <"$TMP/status.json") == "$BPID" ]] || fail "status JSON pid"
# --socket after the subcommand, and $BURST_SOCKET, work too.
timeout 20 "$BURSTCTL" status --socket "$SOCK" --json >/dev/null || fail "--socket after the subcommand"
BURST_SOCKET=$SOCK timeout 20 "$BURSTCTL" status >/dev/null || fail "\$BURST_SOCKET"

log "control protocol scenario"
timeout 60 "$CLIENT" scenario "$SOCK" || fail "scenario"

log "cleanup when a client dies (kill -9)"
"$CLIENT" hold "$SOCK" 3 "$TMP/held" >"$TMP/hold.out" 2>&1 &
HPID=$!
PIDS+=("$HPID")
for ((i = 0; i < 100; i++)); do [[ -s $TMP/held ]] && break; sleep 0.1; done
[[ -s $TMP/held ]] || fail "holder did not create its QPs: $(cat "$TMP/hold.out")"
ctl qps --json >"$TMP/qps.json" || fail "burstctl qps --json"
[[ $("$CLIENT" json-count /qps <"$TMP/qps.json") == 3 ]] || fail "3 QPs expected: $(cat "$TMP/qps.json")"
[[ $(json /qps/0/pid <"$TMP/qps.json") == "$HPID" ]] || fail "QP owner pid"
[[ $(json /qps/0/state <"$TMP/qps.json") == RTS ]] || fail "QP state RTS"
while read -r qpn; do
  grep -q "\"qpn\": $qpn," "$TMP/qps.json" || fail "QPN $qpn not listed"
done <"$TMP/held"
ctl qps | tee "$TMP/qps.txt"
grep -q "RTS" "$TMP/qps.txt" || fail "qps table"
ctl workers --json >"$TMP/workers.json" || fail "burstctl workers --json"
[[ $("$CLIENT" json-count /workers <"$TMP/workers.json") == 2 ]] || fail "2 workers expected"
q0=$(json /workers/0/qps <"$TMP/workers.json")
q1=$(json /workers/1/qps <"$TMP/workers.json")
[[ $((q0 + q1)) == 3 && $q0 -ge 1 && $q1 -ge 1 ]] || fail "QPs spread over the workers: $q0 + $q1"
kill -9 "$HPID"
wait "$HPID" 2>/dev/null
gone=0
for ((i = 0; i < 50; i++)); do
  ctl qps --json >"$TMP/qps.json" 2>/dev/null
  if [[ $(json /total <"$TMP/qps.json") == 0 ]]; then gone=1; break; fi
  sleep 0.1
done
((gone)) || fail "the dead client's QPs are still there: $(cat "$TMP/qps.json")"
grep -q "released 3 QPs" "$TMP/burstd.log" || fail "no cleanup line in the log"
grep "released 3 QPs" "$TMP/burstd.log"

log "burstctl devices / workers / counters (table and JSON)"
ctl devices || fail "burstctl devices"
ctl devices --json >"$TMP/dev.json" || fail "burstctl devices --json"
[[ $(json /devices/0/ibdev <"$TMP/dev.json") == burst0 ]] || fail "devices JSON ibdev"
[[ $(json /devices/0/gids/1/gid <"$TMP/dev.json") == 127.0.0.1 ]] || fail "devices JSON GID 1"
ctl workers || fail "burstctl workers"
ctl counters || fail "burstctl counters"
ctl counters --all --worker 1 | grep -q "rx_drop.unknown_qp" || fail "counters --all --worker 1"
ctl counters --json >"$TMP/counters.json" || fail "burstctl counters --json"
json /counters/rx_parse_drop.bad_icrc <"$TMP/counters.json" >/dev/null || fail "counter by name"
[[ $(json /worker <"$TMP/counters.json") == all ]] || fail "counters JSON worker"
ctl counters --worker 7 >/dev/null 2>&1 && fail "counters of a worker that does not exist"

log "socket rules"
timeout 20 "$BURSTD" --backend loopback --socket "$SOCK" >"$TMP/second.out" 2>&1
rc=$?
[[ $rc == 1 ]] || fail "second burstd on a live socket: exit $rc"
grep -q "is in use by a running burstd (pid $BPID)" "$TMP/second.out" || fail "busy message: $(cat "$TMP/second.out")"
touch "$TMP/not-a-socket"
timeout 20 "$BURSTD" --backend loopback --socket "$TMP/not-a-socket" >"$TMP/nsock.out" 2>&1 &&
  fail "burstd on a regular file"
grep -q "exists and is not a socket" "$TMP/nsock.out" || fail "not-a-socket message: $(cat "$TMP/nsock.out")"
[[ -f $TMP/not-a-socket ]] || fail "the regular file was removed"
"$BURSTD" --backend loopback --socket "$TMP/s2" --workers 1 >"$TMP/s2.out" 2>&1 &
S2=$!
PIDS+=("$S2")
wait_socket "$TMP/s2" 10 || fail "burstd on s2"
kill -9 "$S2"
wait "$S2" 2>/dev/null
[[ -S $TMP/s2 ]] || fail "kill -9 should leave a stale socket behind"
"$BURSTD" --backend loopback --socket "$TMP/s2" --workers 1 >"$TMP/s2b.out" 2>&1 &
S2=$!
PIDS+=("$S2")
wait_socket "$TMP/s2" 10 || fail "burstd on a stale socket: $(cat "$TMP/s2b.out")"
grep -q "replaced the stale control socket" "$TMP/s2b.out" || fail "stale socket not reported"
kill -TERM "$S2"
wait_exit "$S2" 10
[[ $RC == 0 ]] || fail "second instance did not stop cleanly: $RC"

log "start-up errors"
printf 'backend = loopback\nbogus = 1\n' >"$TMP/bad.conf"
timeout 20 "$BURSTD" --config "$TMP/bad.conf" --socket "$TMP/s3" >"$TMP/bad.out" 2>&1 && fail "bad config accepted"
grep -q "bad.conf:2: unknown key 'bogus'" "$TMP/bad.out" || fail "bad config message: $(cat "$TMP/bad.out")"
timeout 20 "$BURSTD" --config "$TMP/absent.conf" --backend loopback --socket "$TMP/s3" >"$TMP/abs.out" 2>&1 &&
  fail "missing --config accepted"
grep -q "cannot read config file" "$TMP/abs.out" || fail "missing config message: $(cat "$TMP/abs.out")"
timeout 20 "$BURSTD" --backend xdp --config /dev/null --socket "$TMP/s3" >"$TMP/nonetdev.out" 2>&1 &&
  fail "xdp without a netdev accepted"
grep -q "needs a netdev" "$TMP/nonetdev.out" || fail "no-netdev message: $(cat "$TMP/nonetdev.out")"
[[ -e $TMP/s3 ]] && fail "a failed start left its socket behind"
timeout 20 "$BURSTCTL" --socket "$TMP/nobody.sock" status >"$TMP/nobody.out" 2>&1 && fail "status without burstd"
grep -q "cannot connect to burstd" "$TMP/nobody.out" || fail "no-daemon message: $(cat "$TMP/nobody.out")"

log "SIGTERM"
# A client still connected when burstd stops: its objects are released too.
"$CLIENT" hold "$SOCK" 2 "$TMP/held2" >/dev/null 2>&1 &
HPID=$!
PIDS+=("$HPID")
for ((i = 0; i < 100; i++)); do [[ -s $TMP/held2 ]] && break; sleep 0.1; done
kill -TERM "$BPID"
wait_exit "$BPID" 10
[[ $RC == 0 ]] || fail "burstd exit after SIGTERM: $RC"
[[ -e $SOCK ]] && fail "socket not removed"
grep -q "burstd is stopping: released 2 QPs" "$TMP/burstd.log" || fail "connected client not released at stop"
grep -q "stopped; control socket" "$TMP/burstd.log" || fail "no stop line"
echo "PASS"
