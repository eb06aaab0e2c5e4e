#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burstd's choice of control loop (burstd.conf event_loop, --event-loop):
#   - auto where io_uring_setup is refused (a seccomp filter answering EPERM, as
#     a container profile does): one line saying so, then the epoll loop serves
#     (burstctl status, a client's PDs), SIGTERM stops it cleanly;
#   - uring where it is refused: burstd does not start, and says why;
#   - uring where io_uring works: the io_uring loop (skipped without io_uring).
# Usage: burstd_event_loop_test.sh BURSTD BURSTCTL NO_URING_EXEC
# Exit: 0 pass, 1 fail.
set -uo pipefail

BURSTD=${1:?usage: burstd_event_loop_test.sh BURSTD BURSTCTL NO_URING_EXEC}
BURSTCTL=${2:?}
NO_URING=${3:?}

TMP=$(mktemp -d /tmp/burstd-evloop-test.XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 1' INT TERM
fail() { echo "FAIL: $*"; for f in "$TMP"/*.log; do [[ -f $f ]] && { echo "--- $f:"; cat "$f"; }; done; exit 1; }
log() { echo "--- $*"; }

wait_socket() {  # PATH SECONDS
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    [[ -S $1 ]] && timeout 5 "$BURSTCTL" --socket "$1" status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}
stop() {  # PID: SIGTERM, exit 0 within 10 s
  local i
  kill -TERM "$1"
  for ((i = 0; i < 100; i++)); do
    kill -0 "$1" 2>/dev/null || { wait "$1"; return $?; }
    sleep 0.1
  done
  return 124
}

"$NO_URING" true || { echo "SKIP: cannot install a seccomp filter here"; exit 77; }

log "event_loop = auto, io_uring_setup refused (EPERM): falls back to epoll"
"$NO_URING" "$BURSTD" --backend loopback --socket "$TMP/a.sock" --log-level debug 2>"$TMP/a.log" &
A=$!
PIDS+=("$A")
wait_socket "$TMP/a.sock" 10 || fail "burstd did not come up under the filter"
grep -q "io_uring is not available here (io_uring_queue_init: Operation not permitted" "$TMP/a.log" ||
  fail "no fallback line"
[[ $(grep -c "io_uring is not available" "$TMP/a.log") == 1 ]] || fail "more than one fallback line"
grep -q "control loop: epoll" "$TMP/a.log" || fail "not on epoll"
grep "io_uring is not available" "$TMP/a.log"
timeout 10 "$BURSTCTL" --socket "$TMP/a.sock" status >/dev/null || fail "status on the epoll fallback"
stop "$A" || fail "SIGTERM on the epoll fallback: exit $?"

log "event_loop = uring, io_uring_setup refused: burstd does not start"
printf 'backend = loopback\nevent_loop = uring\n' >"$TMP/uring.conf"
timeout 20 "$NO_URING" "$BURSTD" --config "$TMP/uring.conf" --socket "$TMP/b.sock" >"$TMP/b.log" 2>&1
rc=$?
[[ $rc == 1 ]] || fail "event_loop = uring without io_uring: exit $rc, want 1"
grep -q "event_loop = uring: set event_loop = auto or epoll" "$TMP/b.log" || fail "no reason given"
tail -1 "$TMP/b.log" | grep -q "event_loop = uring: set event_loop = auto or epoll" ||
  fail "the reason is not the last line: $(tail -1 "$TMP/b.log")"
grep -q "on a loopback port" "$TMP/b.log" && fail "the port was opened before the check"
tail -1 "$TMP/b.log"
[[ -e $TMP/b.sock ]] && fail "a failed start left its socket behind"

log "--event-loop uring where io_uring works"
"$BURSTD" --config "$TMP/uring.conf" --socket "$TMP/c.sock" 2>"$TMP/c.log" &
C=$!
PIDS+=("$C")
if wait_socket "$TMP/c.sock" 10; then
  grep -q "control loop: io_uring" "$TMP/c.log" || fail "not on io_uring"
  stop "$C" || fail "SIGTERM on io_uring: exit $?"
  grep -q "io_uring: .* requests served in .* io_uring_enter calls" "$TMP/c.log" || fail "no statistics line"
elif grep -q "io_uring is not available here" "$TMP/c.log"; then
  echo "(io_uring unavailable on this machine: $(tail -1 "$TMP/c.log"))"
  echo "SKIP (partly): the io_uring case"
  exit 77
else
  fail "burstd with event_loop = uring did not come up"
fi
echo "PASS"
