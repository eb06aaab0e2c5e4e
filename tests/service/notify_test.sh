#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burstd's service-manager notifications without systemd: a datagram socket
# stands in for $NOTIFY_SOCKET (what systemd gives a Type=notify unit). burstd
# on the loopback backend with WATCHDOG_USEC=400 ms: READY=1 with STATUS=, then
# WATCHDOG=1 every ~100 ms while its workers move, STOPPING=1 at SIGTERM. With
# the test hook BURST_TEST_STALL_WORKER_MS (default preset) worker 0 hangs after
# 1.5 s: the pings stop, STATUS= and the log name the worker.
# Usage: notify_test.sh BURSTD HOOKS(0|1). No privileges.
set -uo pipefail
BURSTD=${1:?usage: notify_test.sh BURSTD HOOKS}
HOOKS=${2:-0}
fail() { echo "FAIL: $*"; [[ -f ${TMP:-}/burstd.log ]] && { echo "--- burstd.log:"; cat "$TMP/burstd.log"; }; exit 1; }
command -v python3 >/dev/null || { echo "SKIP: needs python3"; exit 77; }
TMP=$(mktemp -d /tmp/burst-notify.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

# listen SOCKET OUT SECONDS: every datagram as "<ms since start> <text with \n as |>".
listen() {
  python3 - "$1" "$2" "$3" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
t0 = time.monotonic(); end = t0 + float(sys.argv[3])
with open(sys.argv[2], "w", buffering=1) as out:
    while time.monotonic() < end:
        s.settimeout(max(0.01, end - time.monotonic()))
        try:
            m = s.recv(4096).decode()
        except socket.timeout:
            break
        out.write("%d %s\n" % ((time.monotonic() - t0) * 1000, m.replace("\n", "|")))
PY
  PIDS+=($!)
  for _ in $(seq 50); do [[ -S $1 ]] && return 0; sleep 0.1; done
  fail "the notify listener did not come up"
}

# run_burstd NAME SECONDS [ENV...]: burstd for SECONDS under a listener, then SIGTERM.
run_burstd() {
  local name=$1 secs=$2
  shift 2
  listen "$TMP/$name.notify" "$TMP/$name.msgs" $((secs + 3))
  env "$@" NOTIFY_SOCKET="$TMP/$name.notify" WATCHDOG_USEC=400000 \
    bash -c 'export WATCHDOG_PID=$$; exec "$0" --backend loopback --workers 2 --socket "$1"' \
    "$BURSTD" "$TMP/$name.sock" >>"$TMP/burstd.log" 2>&1 &
  local pid=$!
  sleep "$secs"
  kill -TERM "$pid"
  timeout 10 tail --pid="$pid" -f /dev/null || fail "$name: burstd did not stop within 10 s"
  sleep 0.3
  echo "$name: $(wc -l <"$TMP/$name.msgs") messages: $(cut -d' ' -f2- "$TMP/$name.msgs" | sort | uniq -c | sort -rn | head -5 | tr -s ' ' | tr '\n' ';')"
}

echo "--- healthy burstd: READY, STATUS, WATCHDOG while the workers move, STOPPING"
run_burstd healthy 3
M=$TMP/healthy.msgs
grep -q ' READY=1|STATUS=serving on ' "$M" || fail "no READY=1 with STATUS=: $(head -3 "$M")"
n=$(grep -c ' WATCHDOG=1$' "$M")
((n >= 10)) || fail "only $n WATCHDOG=1 in 3 s (interval 400 ms: a ping every ~100 ms expected)"
grep -q 'STOPPING=1' "$M" || fail "no STOPPING=1 at SIGTERM"
grep -q "watchdog: every 400 ms systemd hears WATCHDOG=1 while all 2 workers move" "$TMP/burstd.log" ||
  fail "no watchdog line in the log"

echo "--- without WATCHDOG_USEC: READY=1 and no WATCHDOG=1"
listen "$TMP/nowd.notify" "$TMP/nowd.msgs" 3
NOTIFY_SOCKET="$TMP/nowd.notify" "$BURSTD" --backend loopback --socket "$TMP/nowd.sock" >>"$TMP/burstd.log" 2>&1 &
p=$!
sleep 1.5
kill -TERM $p
wait $p
grep -q 'READY=1' "$TMP/nowd.msgs" || fail "no READY=1 without a watchdog"
! grep -q 'WATCHDOG=1' "$TMP/nowd.msgs" || fail "WATCHDOG=1 sent although systemd asked for no watchdog"

if [[ $HOOKS != 1 ]]; then
  echo "SKIP (part): the stalled-worker case needs the test hooks (BURST_TEST_HOOKS=ON, default preset)"
  echo PASS
  exit 0
fi
echo "--- worker 0 hangs after 1.5 s (test hook): the pings stop, STATUS and the log say why"
run_burstd stalled 4 BURST_TEST_STALL_WORKER_MS=1500
M=$TMP/stalled.msgs
before=$(awk '$2 == "WATCHDOG=1" && $1 < 1400' "$M" | wc -l)
after=$(awk '$2 == "WATCHDOG=1" && $1 > 2200' "$M" | wc -l)
((before >= 4)) || fail "only $before WATCHDOG=1 before the stall"
((after == 0)) || fail "$after WATCHDOG=1 after worker 0 hung"
grep -q 'STATUS=worker 0 has not moved for' "$M" || fail "no STATUS= naming the stalled worker"
grep -q 'watchdog: worker 0 has not moved for' "$TMP/burstd.log" || fail "no log line for the stall"
echo PASS
