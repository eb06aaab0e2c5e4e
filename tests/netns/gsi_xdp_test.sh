#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# QP1 on the AF_XDP backend: burstd on v0 (namespace A, 2 queues, 2 workers)
# receives the CM MADs Linux rxe sent (tests/fixtures/rxe/cm_rping_mtu1024.pcap,
# readdressed to v0 and resealed by gsi_inject.py from the peer v1 in B, one UDP
# source port per frame so that they spread over both queues):
#   - every good MAD reaches QP1's channel (gsi.rx), whichever queue it came in
#     on (frames on queue 1 are handed to worker 0, which owns QPN 1);
#   - a wrong Q_Key and a 252-byte payload are counted drops (gsi.drop_qkey,
#     gsi.drop_len), nothing else is dropped.
# Then transmit: gsi_xdp_peer (burstd's Device on v0, 2 workers) sends MADs from
# QP1 to v1's address (MAC from the neighbour table); gsi_echo.py on v1 checks
# each frame (UD SEND_ONLY to QP1, P_Key, Q_Key, source QP 1, 256-byte MAD,
# ICRC, IPv4 checksum) and returns it; every MAD comes back intact, in order;
# a MAD to the port's own GID comes back without the wire (one-host loopback).
# Usage: gsi_xdp_test.sh BURSTD BURSTCTL CTL_TEST_CLIENT PCAP GSI_XDP_PEER
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools or AF_XDP missing).
set -uo pipefail

BURSTD=${1:?usage: gsi_xdp_test.sh BURSTD BURSTCTL CTL_TEST_CLIENT PCAP}
BURSTCTL=${2:?}
CLIENT=${3:?}
PCAP=${4:?}
PEER=${5:?}
INJECT=$(dirname "$0")/gsi_inject.py
ECHO=$(dirname "$0")/gsi_echo.py

. "$(dirname "$0")/lib.sh"

netns_require_root "network namespaces, XDP, AF_XDP, raw sockets"
netns_require_tools "iproute2 util-linux python3" ip nsenter timeout python3
netns_require_built "$BURSTD" "$BURSTCTL" "$CLIENT" "$PEER"
netns_pair gsi
netns_link_ab v0 10.78.0.1 v1 10.78.0.2 numrxqueues 2 numtxqueues 2

SOCK=$TMP/a.sock
LOG=$TMP/burstd.log
ctl() { timeout 20 "$BURSTCTL" --socket "$SOCK" "$@"; }
counter() { ctl counters --json >"$TMP/c.json" && "$CLIENT" json-get "/counters/$1" <"$TMP/c.json"; }

nsenter --net=/run/netns/"$NA" "$BURSTD" --config /dev/null --backend xdp --netdev v0 \
  --workers 2 --socket "$SOCK" >"$LOG" 2>&1 &
BURSTD_PID=$!
BG_PIDS+=("$BURSTD_PID")
for ((i = 0; i < 100; i++)); do
  [[ -S $SOCK ]] && ctl status >/dev/null 2>&1 && break
  if ! kill -0 "$BURSTD_PID" 2>/dev/null; then
    grep -qiE "cannot create AF_XDP|CONFIG_XDP_SOCKETS|AF_XDP.*(not supported|unsupported)" "$LOG" &&
      skip "AF_XDP unavailable: $(tail -1 "$LOG")"
    cat "$LOG"
    fail "burstd did not start"
  fi
  sleep 0.1
done
ctl status >/dev/null 2>&1 || { cat "$LOG"; fail "burstd did not come up"; }
MAC=$(inA cat /sys/class/net/v0/address 2>/dev/null || inA ip -br link show v0 | awk '{print $3}')
[[ $MAC =~ ^([0-9a-f]{2}:){5}[0-9a-f]{2}$ ]] || MAC=$(inA ip -br link show v0 | awk '{print $3}')
log "v0 $MAC; injecting rxe's REQ from v1"

GOOD=32
inB python3 "$INJECT" "$PCAP" v1 "$MAC" 10.78.0.2 10.78.0.1 "$GOOD" good || fail "inject good"
inB python3 "$INJECT" "$PCAP" v1 "$MAC" 10.78.0.2 10.78.0.1 1 bad_qkey || fail "inject bad_qkey"
inB python3 "$INJECT" "$PCAP" v1 "$MAC" 10.78.0.2 10.78.0.1 1 short || fail "inject short"

for ((i = 0; i < 100; i++)); do
  [[ $(counter gsi.rx) == "$GOOD" && $(counter gsi.drop_qkey) == 1 && $(counter gsi.drop_len) == 1 ]] &&
    break
  sleep 0.1
done
ctl counters
ctl workers
[[ $(counter gsi.rx) == "$GOOD" ]] || fail "gsi.rx $(counter gsi.rx), want $GOOD"
[[ $(counter gsi.drop_qkey) == 1 ]] || fail "gsi.drop_qkey $(counter gsi.drop_qkey), want 1"
[[ $(counter gsi.drop_len) == 1 ]] || fail "gsi.drop_len $(counter gsi.drop_len), want 1"
for c in gsi.drop_opcode gsi.rx_ring_full rx_parse_drop.bad_icrc rx_drop.unknown_qp; do
  [[ $(counter "$c") == 0 ]] || fail "$c $(counter "$c"), want 0"
done
ctl workers --json >"$TMP/w.json"
log "queue 1 -> worker 0 handoffs: $("$CLIENT" json-get /workers/1/handoff_out <"$TMP/w.json")"

log "transmit: MADs from QP1 to 10.78.0.2 and back"
kill -TERM "$BURSTD_PID"
wait "$BURSTD_PID" || fail "burstd exit status $? after SIGTERM"
inB timeout 30 python3 "$ECHO" v1 64 20 >"$TMP/echo.log" 2>&1 &
ECHO_PID=$!
BG_PIDS+=("$ECHO_PID")
wait_for "$TMP/echo.log" ready 10 || { cat "$TMP/echo.log"; fail "gsi_echo.py did not start"; }
inA timeout 60 "$PEER" v0 10.78.0.2 64 >"$TMP/peer.log" 2>&1
rc=$?
wait "$ECHO_PID"
erc=$?
cat "$TMP/peer.log" "$TMP/echo.log"
[[ $erc == 0 ]] || fail "the peer saw bad or missing QP1 frames"
[[ $rc == 0 ]] || fail "gsi_xdp_peer failed ($rc)"
echo "PASS: gsi.xdp"
