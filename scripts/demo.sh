#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The main demo of burst: two "hosts" (private network namespaces joined by a
# veth pair, 4 queues, 9000-byte MTU), each running burstd on its eth0 from a
# configuration file, as the service does (docs/architecture.md). Unmodified
# rdma-core and perftest programs (ibv_rc_pingpong, ib_write_bw, ib_read_lat)
# run between the hosts under `burstctl run`, while ping and a TCP stream run
# through the kernel on the same NIC: the XDP program steers only RoCEv2
# (UDP 4791) to burst. Then burstctl shows status and counters, and
# burst-xfer (the benchmark tool) moves verified data over the same NIC.
# Nothing is configured outside the two namespaces, which are removed at the end.
# Usage (as root, on Debian 12):  ./scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}

[[ $(id -u) -eq 0 ]] || { echo "demo.sh: run as root (apt-get, network namespaces, XDP)" >&2; exit 1; }
# BURST_DEMO_BUILD=DIR (the ctest netns.demo): use that build tree as it is, install and build nothing.
BIN=${BURST_DEMO_BUILD:-}
if [[ -z $BIN ]]; then
  ./scripts/install-deps.sh
  cmake --preset default >/dev/null
  cmake --build build/default -j"$JOBS" --target burstd burstctl burst_provider burst_shim burst-xfer
  BIN=$PWD/build/default
fi
BURSTD=$BIN/daemon/burstd/burstd
BURSTCTL=$BIN/tools/burstctl/burstctl
X=$BIN/tools/burst-xfer/burst-xfer
A=burst-demo-a
B=burst-demo-b
RUN=$(mktemp -d /tmp/burst-demo.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
  rm -rf "$RUN"
}
trap cleanup EXIT
ip netns del "$A" 2>/dev/null || true
ip netns del "$B" 2>/dev/null || true

echo "== two hosts: namespaces $A (10.77.0.1) and $B (10.77.0.2), veth with 4 queues, MTU 9000"
ip netns add "$A"
ip netns add "$B"
ip link add eth0 netns "$A" numrxqueues 4 numtxqueues 4 type veth \
  peer name eth0 netns "$B" numrxqueues 4 numtxqueues 4
for ns in "$A" "$B"; do
  ip -n "$ns" link set lo up
  ip -n "$ns" link set eth0 mtu 9000 up
done
ip -n "$A" addr add 10.77.0.1/24 dev eth0
ip -n "$B" addr add 10.77.0.2/24 dev eth0
sleep 1
inA() { nsenter --net=/run/netns/"$A" "$@"; }
inB() { nsenter --net=/run/netns/"$B" "$@"; }
inA ping -c 2 -q 10.77.0.2

# burstd per host, from a configuration file (the keys: daemon/burstd/config.h).
start_burstd() {  # NAMESPACE NAME
  local ns=$1 h=$2 i
  mkdir -p "$RUN/$h"
  cat >"$RUN/$h/burstd.conf" <<EOF
# burstd on host $h: AF_XDP on eth0, two workers
netdev = eth0
backend = xdp
workers = 2
socket = $RUN/$h/burstd.sock
log_level = info
EOF
  echo "+ [$h] burstd --config $RUN/$h/burstd.conf"
  nsenter --net=/run/netns/"$ns" "$BURSTD" --config "$RUN/$h/burstd.conf" >"$RUN/$h/burstd.log" 2>&1 &
  PIDS+=($!)
  for ((i = 0; i < 100; i++)); do
    "$BURSTCTL" --socket "$RUN/$h/burstd.sock" status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$RUN/$h/burstd.log"
  echo "demo.sh: burstd on host $h did not come up" >&2
  return 1
}
echo
echo "== burstd on each host"
start_burstd "$A" a
start_burstd "$B" b
echo "+ [a] burstctl status"
"$BURSTCTL" --socket "$RUN/a/burstd.sock" status

# on HOST CMD...: run an unmodified verbs program on host HOST (a|b) against its burstd.
on() {
  local h=$1 ns
  shift
  [[ $h == a ]] && ns=$A || ns=$B
  nsenter --net=/run/netns/"$ns" timeout 120 "$BURSTCTL" --socket "$RUN/$h/burstd.sock" run -- "$@"
}
# pair LABEL SERVER_CMD... -- CLIENT_CMD...: server on b, client on a.
pair() {
  local label=$1 srv=()
  shift
  while [[ $1 != -- ]]; do srv+=("$1"); shift; done
  shift
  echo
  echo "+ [b] ${srv[*]}"
  echo "+ [a] $*"
  on b "${srv[@]}" >"$RUN/server.log" 2>&1 &
  local spid=$!
  sleep 1
  if ! on a "$@" | tail -"${TAIL:-4}"; then
    cat "$RUN/server.log"
    echo "demo.sh: $label failed" >&2
    return 1
  fi
  wait "$spid" || { cat "$RUN/server.log"; echo "demo.sh: $label server failed" >&2; return 1; }
}

echo
echo "== unmodified rdma-core and perftest between the hosts; ping and TCP run alongside"
inB timeout 90 iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
PIDS+=($!)
sleep 0.5
inA timeout 90 iperf3 -c 10.77.0.2 -p 5201 -t 15 >"$RUN/iperf.log" 2>&1 &
IPERF=$!
PIDS+=("$IPERF")
inA ping -c 15 -i 1 -q 10.77.0.2 >"$RUN/ping.log" 2>&1 &
PING=$!
PIDS+=("$PING")
TAIL=2 pair ibv_rc_pingpong ibv_rc_pingpong -g 1 -n 1000 -s 4096 -c -- \
  ibv_rc_pingpong -g 1 -n 1000 -s 4096 -c 10.77.0.2
TAIL=3 pair ib_write_bw ib_write_bw -x 1 -s 65536 -D 3 -- ib_write_bw -x 1 -s 65536 -D 3 10.77.0.2
TAIL=3 pair ib_read_lat ib_read_lat -x 1 -s 64 -n 1000 -- ib_read_lat -x 1 -s 64 -n 1000 10.77.0.2
echo
wait "$IPERF" || { cat "$RUN/iperf.log"; echo "demo.sh: the TCP stream alongside RDMA failed" >&2; exit 1; }
echo "TCP alongside RDMA: $(grep -E 'receiver' "$RUN/iperf.log" | awk '{print $7, $8}')"
wait "$PING" || { cat "$RUN/ping.log"; echo "demo.sh: ping alongside RDMA lost packets" >&2; exit 1; }
echo "ping alongside RDMA: $(grep -E 'packets' "$RUN/ping.log")"

echo
echo "== what burstd saw (host a): status and counters"
"$BURSTCTL" --socket "$RUN/a/burstd.sock" status
"$BURSTCTL" --socket "$RUN/a/burstd.sock" counters | grep -E '^ *(tx|rx|retrans|rnr|nak|drop)[a-z_.]* +[1-9]' | head -20 || true

echo
echo "== burst-xfer, the benchmark tool (stops burstd: it drives the NIC itself)"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()
inB timeout 60 "$X" --backend xdp --netdev eth0 >"$RUN/xfer-server.log" 2>&1 &
XS=$!
PIDS+=("$XS")
echo "+ burst-xfer --backend xdp --netdev eth0 --op write --size 1048576 --qps 2 --mtu 4096 --duration 3 --verify 10.77.0.2"
inA timeout 60 "$X" --backend xdp --netdev eth0 --op write --size 1048576 --qps 2 --mtu 4096 --duration 3 \
  --verify 10.77.0.2
wait "$XS" || { cat "$RUN/xfer-server.log"; exit 1; }
echo
echo "== done; the namespaces are removed on exit"
