#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The main demo of burst: two "hosts" (private network namespaces joined by a
# veth pair, 4 queues, 9000-byte MTU) move data with RDMA over AF_XDP using
# burst-xfer, every byte verified. The XDP program steers only RoCEv2 (UDP
# 4791) to burst; ping and a TCP stream between the same hosts keep working.
# Nothing is configured outside the two namespaces, which are removed at the end.
# Usage (as root, on Debian 12):  ./scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}

[[ $(id -u) -eq 0 ]] || { echo "demo.sh: run as root (apt-get, network namespaces, XDP)" >&2; exit 1; }
./scripts/install-deps.sh
cmake --preset default >/dev/null
cmake --build build/default -j"$JOBS" --target burst-xfer

X=$PWD/build/default/tools/burst-xfer/burst-xfer
A=burst-demo-a
B=burst-demo-b
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip netns del "$A" 2>/dev/null || true
  ip netns del "$B" 2>/dev/null || true
}
trap cleanup EXIT
cleanup

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

# xfer SERVER_ARGS -- CLIENT_ARGS: burst-xfer server in B, client in A.
xfer() {
  local sargs=()
  while [[ $1 != -- ]]; do sargs+=("$1"); shift; done
  shift
  nsenter --net=/run/netns/"$B" timeout 120 "$X" --backend xdp --netdev eth0 "${sargs[@]}" >/tmp/burst-demo-server.log 2>&1 &
  local spid=$!
  echo "+ burst-xfer --backend xdp --netdev eth0 $* 10.77.0.2"
  inA timeout 120 "$X" --backend xdp --netdev eth0 "$@" 10.77.0.2
  wait "$spid" || { cat /tmp/burst-demo-server.log; return 1; }
}

echo
echo "== RDMA over AF_XDP between the hosts (the kernel keeps ping and TCP: a TCP stream runs alongside)"
nsenter --net=/run/netns/"$B" timeout 60 iperf3 -s -1 -p 5201 >/dev/null 2>&1 &
PIDS+=($!)
sleep 0.5
nsenter --net=/run/netns/"$A" timeout 60 iperf3 -c 10.77.0.2 -p 5201 -t 12 >/tmp/burst-demo-iperf.log 2>&1 &
IPERF=$!
PIDS+=("$IPERF")
xfer -- --op write --size 1048576 --qps 2 --mtu 4096 --duration 3 --verify
xfer -- --op read --size 65536 --qps 4 --mtu 4096 --duration 3 --verify
xfer -- --op send --size 4096 --qps 1 --mtu 1024 --duration 2 --verify
xfer --workers 2 -- --op write_imm --size 100000 --qps 8 --workers 2 --mtu 4096 --duration 3 --verify
wait "$IPERF" && echo "TCP alongside RDMA: $(grep -E 'receiver' /tmp/burst-demo-iperf.log | awk '{print $7, $8}')"
inA ping -c 2 -q 10.77.0.2
echo
echo "== done: every transfer above was verified byte for byte; the namespaces are removed on exit"
