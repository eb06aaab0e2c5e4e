#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burstd with the AF_XDP backend in private network namespaces joined by a veth
# pair (2 queues each side; burstd on v0 in namespace A, the peer v1 in B):
#   - `burstd --backend xdp --netdev v0 --workers 2` starts; burstctl status
#     --json shows the XDP mode, 2 queues, 2 workers; workers shows queue 0 on
#     worker 0 and queue 1 on worker 1; devices shows v0's IPv4 GID;
#   - every thread keeps only the xdp capabilities of daemon/burstd/privileges.h
#     (CapPrm = CapEff = CapBnd), NoNewPrivs 1;
#   - RC QPs taken to RTS towards the peer's address with the MAC left to
#     burstd: it resolves v1's MAC from the neighbour table;
#   - a second burstd on the same netdev fails with the busy message (the lock);
#   - a missing netdev fails with a clear message;
#   - SIGTERM: exit 0, XDP detached (`ip link show v0` has no xdp), socket removed;
#   - kill -9 leaves the program attached; the next burstd replaces it.
# Usage: burstd_xdp_test.sh BURSTD BURSTCTL CTL_TEST_CLIENT
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools or AF_XDP missing).
set -uo pipefail

BURSTD=${1:?usage: burstd_xdp_test.sh BURSTD BURSTCTL CTL_TEST_CLIENT}
BURSTCTL=${2:?}
CLIENT=${3:?}

. "$(dirname "$0")/../netns/lib.sh"
. "$(dirname "$0")/caps_lib.sh"

netns_require_root "network namespaces, XDP, AF_XDP"
netns_require_tools "iproute2 util-linux" ip nsenter timeout
for f in "$BURSTD" "$BURSTCTL" "$CLIENT"; do [[ -x $f ]] || fail "not found: $f"; done
netns_pair burstd

ip link add v0 netns "$NA" numrxqueues 2 numtxqueues 2 type veth \
  peer name v1 netns "$NB" numrxqueues 2 numtxqueues 2 || fail "cannot create veth pair"
inA ip link set lo up
inB ip link set lo up
inA ip addr add 10.77.0.1/24 dev v0
inB ip addr add 10.77.0.2/24 dev v1
inA ip link set v0 up
inB ip link set v1 up
sleep 0.5

SOCK=$TMP/a.sock
ctl() { timeout 20 "$BURSTCTL" --socket "$SOCK" "$@"; }
json() { "$CLIENT" json-get "$1"; }
has_xdp() { inA ip link show v0 | grep -q " xdp"; }

# start_burstd LOG: burstd on v0 in namespace A; BPID is its pid.
start_burstd() {
  nsenter --net=/run/netns/"$NA" "$BURSTD" --config /dev/null --backend xdp --netdev v0 \
    --workers 2 --socket "$SOCK" >"$1" 2>&1 &
  BPID=$!
  BG_PIDS+=("$BPID")
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -S $SOCK ]] && timeout 5 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 && return 0
    if ! kill -0 "$BPID" 2>/dev/null; then
      if grep -qiE "cannot create AF_XDP|CONFIG_XDP_SOCKETS|AF_XDP.*(not supported|unsupported)" "$1"; then
        skip "AF_XDP unavailable: $(tail -1 "$1")"
      fi
      cat "$1"
      fail "burstd did not start"
    fi
    sleep 0.1
  done
  cat "$1"
  fail "burstd did not come up"
}

stop_burstd() {  # sends SIGTERM, expects exit 0
  kill -TERM "$BPID"
  local i
  for ((i = 0; i < 100; i++)); do
    kill -0 "$BPID" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$BPID" 2>/dev/null && fail "burstd did not stop within 10 s of SIGTERM"
  wait "$BPID"
  local rc=$?
  [[ $rc == 0 ]] || fail "burstd exit status $rc after SIGTERM"
}

log "burstd --backend xdp --netdev v0 --workers 2"
start_burstd "$TMP/a.log"
has_xdp || fail "no XDP program on v0 while burstd runs"
want=$(caps_expected cap_net_admin)
caps_check "$BPID" "$want" "$want" 1 || { cat "$TMP/a.log"; fail "capabilities after start-up"; }
grep "capabilities after start-up" "$TMP/a.log" || fail "no capability line"
ctl status || fail "burstctl status"
ctl status --json >"$TMP/status.json" || fail "burstctl status --json"
[[ $(json /backend <"$TMP/status.json") == xdp ]] || fail "backend"
mode=$(json /xdp_mode <"$TMP/status.json")
[[ $mode == native || $mode == generic ]] || fail "xdp_mode '$mode'"
[[ $(json /queues <"$TMP/status.json") == 2 ]] || fail "queues"
[[ $(json /workers <"$TMP/status.json") == 2 ]] || fail "workers"
[[ $(json /netdev <"$TMP/status.json") == v0 ]] || fail "netdev"
[[ $(json /port_state <"$TMP/status.json") == ACTIVE ]] || fail "port state"
[[ $(json /xdp_prog_id <"$TMP/status.json") != 0 ]] || fail "program id"
ctl workers --json >"$TMP/workers.json" || fail "burstctl workers --json"
[[ $(json /workers/0/queues <"$TMP/workers.json") == "[0]" ]] || fail "worker 0 queues"
[[ $(json /workers/1/queues <"$TMP/workers.json") == "[1]" ]] || fail "worker 1 queues"
ctl devices --json >"$TMP/dev.json" || fail "burstctl devices --json"
grep -q '"gid": "10.77.0.1"' "$TMP/dev.json" || fail "v0's IPv4 GID missing: $(cat "$TMP/dev.json")"
ctl counters --json >"$TMP/counters.json" || fail "burstctl counters --json"
json /counters/xdp.steered <"$TMP/counters.json" >/dev/null || fail "XDP steering counters"

log "QPs towards the peer: burstd resolves its MAC"
timeout 60 "$CLIENT" scenario "$SOCK" --dgid 10.77.0.2 >"$TMP/scenario.out" 2>&1 ||
  { cat "$TMP/scenario.out" "$TMP/a.log"; fail "scenario"; }
cat "$TMP/scenario.out"
peer_mac=$(inB ip -o link show v1 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
grep -q "dmac $peer_mac" "$TMP/scenario.out" || fail "dmac is not v1's MAC ($peer_mac)"

log "a second burstd on v0 fails with the busy message"
inA timeout 20 "$BURSTD" --config /dev/null --backend xdp --netdev v0 --socket "$TMP/b.sock" \
  >"$TMP/b.log" 2>&1 && fail "second burstd on v0 started"
cat "$TMP/b.log"
# The netdev lock (/run/burst/v0.lock) refuses it first; the XDP program's owner
# check stays behind it (a burstd with another /run).
grep -q -E "netdev 'v0' is served by another burstd \(pid $BPID\)|'v0' is busy: burst's XDP program \(id [0-9]*\) belongs to running process $BPID" "$TMP/b.log" ||
  fail "busy message"
[[ -e $TMP/b.sock ]] && fail "the failed burstd left its socket behind"
has_xdp || fail "the failed burstd detached the running one's program"

log "missing netdev"
inA timeout 20 "$BURSTD" --config /dev/null --backend xdp --netdev nosuch0 --socket "$TMP/c.sock" \
  >"$TMP/c.log" 2>&1 && fail "burstd on a missing netdev started"
grep -q "netdev 'nosuch0' not found in this network namespace" "$TMP/c.log" ||
  fail "missing-netdev message: $(cat "$TMP/c.log")"

log "SIGTERM detaches XDP"
stop_burstd
has_xdp && fail "XDP still attached to v0 after SIGTERM"
[[ -e $SOCK ]] && fail "socket not removed"
grep -q "stopped; control socket" "$TMP/a.log" || fail "no stop line"

log "kill -9, then a new burstd replaces the stale program"
start_burstd "$TMP/d.log"
kill -9 "$BPID"
wait "$BPID" 2>/dev/null
has_xdp || echo "(the program went away with the process: nothing stale to replace)"
start_burstd "$TMP/e.log"
if grep -q "replaced stale" "$TMP/e.log"; then grep "replaced stale" "$TMP/e.log"; fi
grep -q "replaced the stale control socket" "$TMP/e.log" || fail "stale socket not replaced"
stop_burstd
has_xdp && fail "XDP still attached after the last SIGTERM"
echo "PASS"
