#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Unmodified librdmacm binaries between two burstd (docs/cm.md): one burstd per
# network namespace, joined by a veth pair (AF_XDP backend on each end):
#   A: a0 10.47.0.1/24   <--veth-->   B: b0 10.47.0.2/24
# Every application runs under `burstctl run` (its preloaded shim serves
# /dev/infiniband/rdma_cm from burstd); server in A, client in B, both must
# exit 0: rping (data verified), ucmatose, udaddy, rdma_server/client,
# ib_write_bw -R, ib_send_lat -R, rstream, riostream, and when installed
# fi_pingpong (verbs, dgram) and qperf -cm1. Then a connect to a port nobody
# listens on must end in RDMA_CM_EVENT_REJECTED (the peer's CM answers REJ),
# not a timeout, and neither burstd may hold an rdma_cm id or channel after.
# Usage: ucma_test.sh BURSTCTL BURSTD [CASES...]   (CASES: names below; default all)
# BURSTD_WORKERS: workers (and queues) per burstd (default 1).
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools missing, kernel with RDMA,
# burstd without a connection manager).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"
source "$HERE/../provider/lib_apps.sh"
source "$HERE/lib_cm.sh"  # cm_pair, cm_want, cm_counters, cm_finish

BURSTCTL=${1:?usage: ucma_test.sh BURSTCTL BURSTD [CASES...]}
BURSTD=${2:?usage: ucma_test.sh BURSTCTL BURSTD [CASES...]}
shift 2
CASES=("$@")

netns_require_root "network namespaces, veth, XDP"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout stdbuf
netns_require_tools "rdmacm-utils" rping ucmatose udaddy rdma_server rdma_client
netns_require_tools "perftest" ib_write_bw ib_send_lat
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD"

netns_pair burst-ucma
REPORT=${BURST_UCMA_REPORT:-$TMP/report.txt}
: >"$REPORT"
netns_cmd_env

W=${BURSTD_WORKERS:-1}
netns_link_ab a0 10.47.0.1 b0 10.47.0.2 numrxqueues "$W" numtxqueues "$W"
inA ping -c1 -W2 10.47.0.2 >/dev/null || fail "no IP connectivity over the veth"

netns_start_burstd "$NA" "$TMP/a.sock" "$TMP/burstd-a.log" "in $NA" --backend xdp --netdev a0 \
  --workers "$W"
netns_start_burstd "$NB" "$TMP/b.sock" "$TMP/burstd-b.log" "in $NB" --backend xdp --netdev b0 \
  --workers "$W"

runA() { brun_in "$NA" a0 "$TMP/a.sock" "$T" "$@"; }
runB() { brun_in "$NB" b0 "$TMP/b.sock" "$T" "$@"; }

# A burstd without the connection manager answers the channel's open with
# ENODEV: librdmacm then says so. Skip rather than fail every case.
T=20
runB rping -c -a 10.47.0.1 -p 1 -C 1 >"$TMP/probe" 2>&1
if grep -q -E "No RDMA devices|rdma_create_event_channel" "$TMP/probe"; then
  cat "$TMP/probe"
  skip "burstd has no connection manager (rdma_create_event_channel fails: built without cm/)"
fi

CM_CLIENT_ADDR=10.47.0.1
CM_REPORT_RE="bytes sent and checked|usec|^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+|complete|ping data|end 0|^custom| =[0-9]+ "
CM_REPORT_LINES=12

# rping: -V checks every ping's data on both sides, -v prints it.
cm_pair rping 60 rping -s -a 10.47.0.1 -v -V -C 10 -- rping -c -v -V -C 10 -a
cm_pair ucmatose 60 ucmatose -C 10 -- ucmatose -C 10 -s
cm_pair udaddy 60 udaddy -C 10 -- udaddy -C 10 -s
cm_pair rdma_server 60 rdma_server -- rdma_client -s
cm_pair ib_write_bw 90 ib_write_bw -R -d burst0 -n 1000 -- ib_write_bw -R -d burst0 -n 1000
cm_pair ib_send_lat 90 ib_send_lat -R -d burst0 -n 1000 -- ib_send_lat -R -d burst0 -n 1000

# rsockets over rdma_cm (librdmacm's own streams; -S all takes minutes here).
cm_pair rstream 60 rstream -b 10.47.0.1 -C 1000 -S 4096 -- rstream -C 1000 -S 4096 -s
cm_pair riostream 60 riostream -b 10.47.0.1 -C 1000 -S 4096 -- riostream -C 1000 -S 4096 -s
# rsockets' preload (librspreload): a plain POSIX TCP program (tests/cm/tcp_check.c: socket, bind,
# listen, accept, connect, read, write, shutdown; no RDMA code) sends 16 MiB from B to A under
# LD_PRELOAD=librspreload.so; the server hashes what it read and the client compares. librspreload
# falls back to the kernel's TCP whenever rsocket() is not taken, so the case also checks that the
# connection went through burst: each burstd's CM counts it (cma.connections_established).
# Common tools fail on rsockets the same way on any RDMA device (rdma-core 44's librspreload):
# iperf3 connects, then stalls (it polls TCP_INFO, which rsockets' getsockopt does not answer);
# OpenBSD nc listens with accept4(), which librspreload does not intercept (ENOTSOCK);
# nc.traditional refuses descriptors above 16 ("Preposterous fd value"); Python adds SOCK_CLOEXEC to
# the socket type, which librspreload leaves to the kernel; a static BusyBox cannot be preloaded.
RSPRELOAD=${CM_RSPRELOAD:-/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so}
TCPCHECK=${CM_TCPCHECK:-$(dirname "$BURSTCTL")/../../tests/cm/tcp_check}
if cm_want rspreload && [[ -f $RSPRELOAD && -x $TCPCHECK ]]; then
  est() { "$BURSTCTL" --socket "$TMP/$1.sock" counters --all 2>/dev/null |
    awk '$1 == "cma.connections_established" {print $2}'; }
  before="$(est a) $(est b)"
  # The address comes last (cm_pair appends it).
  cm_pair rspreload 60 env "RS=$RSPRELOAD" bash -c 'LD_PRELOAD="$LD_PRELOAD $RS" exec "$@"' sh \
    "$TCPCHECK" serve 10.47.0.1 7471 -- \
    env "RS=$RSPRELOAD" bash -c 'LD_PRELOAD="$LD_PRELOAD $RS" exec "$@"' sh "$TCPCHECK" send 7471 16
  after="$(est a) $(est b)"
  if [[ $before == "$after" ]] && ! printf '%s\n' "${FAILED[@]}" | grep -qx rspreload; then
    echo "rspreload: tcp_check passed, but neither burstd's CM counted a connection ($before -> $after)"
    FAILED+=(rspreload)
  fi
  echo "   rspreload: cma.connections_established (a b) $before -> $after" >>"$REPORT"
elif cm_want rspreload; then
  echo "rspreload SKIP (no $RSPRELOAD or $TCPCHECK: apt-get install librdmacm1; build the tests)" \
    >>"$REPORT"
fi

# libfabric's verbs provider opens an rdma_cm event channel even for datagram
# endpoints (it failed at fi_eq_open before the relay). Optional tool.
if command -v fi_pingpong >/dev/null; then
  cm_pair fi_pingpong_dgram 60 fi_pingpong -p verbs -e dgram -d burst0-dgram -I 100 -- \
    fi_pingpong -p verbs -e dgram -d burst0-dgram -I 100
else
  echo "fi_pingpong_dgram SKIP (apt-get install libfabric-bin)" >>"$REPORT"
fi
# qperf -cm1: RC through rdma_cm (qperf cannot use RoCE without it). The
# server runs until it is killed. Optional tool.
if cm_want qperf && command -v qperf >/dev/null; then
  log "qperf: qperf  <->  qperf -cm1 10.47.0.1 rc_bw rc_lat"
  nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout 60 "$BURSTCTL" run --netdev a0 \
    --socket "$TMP/a.sock" -- "${CMD_ENV[@]}" qperf >"$TMP/qperf.server" 2>&1 &
  qpid=$!
  BG_PIDS+=("$qpid")
  sleep 1
  T=60
  if runB qperf -cm1 10.47.0.1 -t 2 rc_bw rc_lat >"$TMP/qperf.client" 2>&1 &&
    grep -q "latency" "$TMP/qperf.client"; then
    { echo "== qperf -cm1 rc_bw rc_lat"; grep -E "bw|latency" "$TMP/qperf.client"; } >>"$REPORT"
  else
    cat "$TMP/qperf.server" "$TMP/qperf.client"
    FAILED+=(qperf)
    echo "qperf FAIL" >>"$REPORT"
  fi
  kill "$qpid" 2>/dev/null
  wait "$qpid" 2>/dev/null
elif cm_want qperf; then
  echo "qperf SKIP (apt-get install qperf)" >>"$REPORT"
fi

# Events the application has not read yet (pushed by burstd, docs/cm.md "Relay fast path"):
# rdma_migrate_id moves them, rdma_destroy_id drops them, neither hangs (cm_pushcheck.c).
PUSHCHECK=${CM_PUSHCHECK:-$(dirname "$BURSTCTL")/../../tests/cm/cm_pushcheck}
if cm_want push && [[ -x $PUSHCHECK ]]; then
  log "push: unread events through rdma_migrate_id and rdma_destroy_id"
  T=40
  runB "$PUSHCHECK" 10.47.0.1 >"$TMP/push" 2>&1
  if grep -q "PASS migrate" "$TMP/push" && grep -q "PASS destroy" "$TMP/push"; then
    echo "== push: $(grep PASS "$TMP/push" | paste -sd ' ')" >>"$REPORT"
  else
    cat "$TMP/push"
    FAILED+=(push)
  fi
elif cm_want push; then
  echo "== push: skipped (cm_pushcheck not built)" >>"$REPORT"
fi

# Nobody listens on port 9: the peer's CM rejects the REQ (IBA: invalid
# service ID), well before the connect could time out.
if cm_want reject; then
  log "reject: rping -c to a port nobody listens on"
  T=20
  runB rping -c -a 10.47.0.1 -p 9 -C 1 -v >"$TMP/reject" 2>&1
  if grep -q "RDMA_CM_EVENT_REJECTED" "$TMP/reject"; then
    echo "== reject: $(grep -m1 RDMA_CM_EVENT_REJECTED "$TMP/reject")" >>"$REPORT"
  else
    cat "$TMP/reject"
    FAILED+=(reject)
    echo "reject FAIL (no RDMA_CM_EVENT_REJECTED)" >>"$REPORT"
  fi
fi

# Every application has exited: neither burstd holds an rdma_cm id or a
# channel (the sessions' teardown destroyed whatever was left).
if cm_want leftovers; then
  log "leftovers: cma.ids and cma.channels back to 0 on both burstd"
  for side in a b; do
    "$BURSTCTL" --socket "$TMP/$side.sock" counters --all >"$TMP/counters-$side" 2>&1
    ids=$(awk '$1 == "cma.ids" {print $2}' "$TMP/counters-$side")
    chans=$(awk '$1 == "cma.channels" {print $2}' "$TMP/counters-$side")
    made=$(awk '$1 == "cma.ids_created" {print $2}' "$TMP/counters-$side")
    echo "== burstd $side: cma.ids_created=$made cma.ids=$ids cma.channels=$chans" >>"$REPORT"
    grep -E "^ *(cm|cma)\." "$TMP/counters-$side" | tr -s ' ' | paste -sd ' ' >>"$REPORT"
    if [[ $ids != 0 || $chans != 0 ]]; then
      cat "$TMP/counters-$side"
      FAILED+=("leftovers-$side")
    fi
  done
fi

cm_finish
