#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burst-xfer over AF_XDP between two private network namespaces joined by a
# veth pair (4 queues each side):
#   1. every operation (write, write_imm, read, send) x sizes 1 B .. 64 MB x
#      1 and 8 QPs x RoCE MTU 1024 (1500-byte link) and 4096 (9000-byte link),
#      every byte verified; while they run, ping and a TCP transfer between the
#      same namespaces keep working (the NIC is shared with the kernel);
#   2. RoCEv2 over IPv6; workers: 2 workers against 1 (frames handed between workers);
#   3. kill -9 of a burst-xfer server, then a fresh server on the same
#      interface (the stale XDP program is replaced) serves a client.
# Usage: xfer_test.sh BURST_XFER [quick]
# XFER_BACKEND_A (client) / XFER_BACKEND_B (server): xdp (default) or dpdk
# (net_af_packet on the same veth end): the suite on DPDK, and xdp <-> dpdk.
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools or AF_XDP missing).
set -uo pipefail

X=${1:?usage: xfer_test.sh BURST_XFER [quick]}
QUICK=${2:-}

. "$(dirname "$0")/../lib.sh"

netns_require_root "network namespaces, XDP, AF_XDP"
netns_require_tools "iproute2 util-linux iputils-ping netcat-openbsd" ip nsenter timeout ping nc cmp
[[ -x $X ]] || fail "burst-xfer not found at $X"
BA=${XFER_BACKEND_A:-xdp}
BB=${XFER_BACKEND_B:-xdp}
for b in "$BA" "$BB"; do
  [[ $b == xdp ]] && continue
  "$X" --help 2>&1 | grep -q "dpdk" || skip "burst-xfer was built without the $b backend"
done
netns_pair burst-xfer

ip link add va netns "$NA" numrxqueues 4 numtxqueues 4 type veth \
  peer name vb netns "$NB" numrxqueues 4 numtxqueues 4 || fail "cannot create veth pair"
inA ip link set lo up
inB ip link set lo up
inA ip addr add 10.66.0.1/24 dev va
inB ip addr add 10.66.0.2/24 dev vb
inA ip addr add fd66::1/64 dev va nodad
inB ip addr add fd66::2/64 dev vb nodad

set_mtu() {
  inA ip link set va mtu "$1" up
  inB ip link set vb mtu "$1" up
  sleep 0.5
}

# xfer NAME SERVER_ARGS -- CLIENT_ARGS: one server/client run, both bounded.
xfer() {
  local name=$1
  shift
  local sargs=() cargs=()
  while [[ $# -gt 0 && $1 != -- ]]; do sargs+=("$1"); shift; done
  shift
  cargs=("$@")
  nsenter --net=/run/netns/"$NB" timeout 120 "$X" --backend "$BB" --netdev vb "${sargs[@]}" >"$TMP/$name.srv" 2>&1 &
  local spid=$!
  BG_PIDS+=("$spid")
  if ! inA timeout 120 "$X" --backend "$BA" --netdev va "${cargs[@]}" "${SERVER:-10.66.0.2}" >"$TMP/$name.cli" 2>&1; then
    cat "$TMP/$name.cli" "$TMP/$name.srv"
    fail "$name: client failed"
  fi
  if ! wait "$spid"; then
    cat "$TMP/$name.srv"
    fail "$name: server failed"
  fi
  grep -q "verify=ok" "$TMP/$name.cli" || { cat "$TMP/$name.cli"; fail "$name: not verified"; }
  grep -q "backend=$BA" "$TMP/$name.cli" || { cat "$TMP/$name.cli"; fail "$name: client not on $BA"; }
  grep -q "peer_verify_failures=0" "$TMP/$name.cli" || { cat "$TMP/$name.cli"; fail "$name: peer verification"; }
  echo "$name: $(grep -o 'msgs=[0-9]* .*goodput=[0-9.]* Gbit/s' "$TMP/$name.cli") $(grep -o ' drops=[0-9]*' "$TMP/$name.cli" | head -1)"
}

probe_xdp() {
  nsenter --net=/run/netns/"$NB" timeout 20 "$X" --backend xdp --netdev vb --port 1 >"$TMP/probe" 2>&1 &
  local p=$!
  sleep 1
  kill "$p" 2>/dev/null
  wait "$p" 2>/dev/null
  if grep -qiE "AF_XDP|XDP.*(not supported|unsupported)|EOPNOTSUPP" "$TMP/probe"; then
    skip "AF_XDP unavailable: $(head -1 "$TMP/probe")"
  fi
}

set_mtu 1500
[[ $BA == xdp || $BB == xdp ]] && probe_xdp

# Background traffic through the kernel on the same veth: ping and a TCP
# transfer must keep working while burst owns UDP 4791.
log "shared NIC: ping and TCP alongside RDMA"
nsenter --net=/run/netns/"$NA" ping -c 400 -i 0.05 -W 1 10.66.0.2 >"$TMP/ping.out" 2>&1 &
PING_PID=$!
BG_PIDS+=("$PING_PID")
head -c 20000000 /dev/urandom >"$TMP/tcp.src"
nsenter --net=/run/netns/"$NB" timeout 120 nc -l -N 10.66.0.2 7001 >"$TMP/tcp.dst" 2>/dev/null &
NC_PID=$!
BG_PIDS+=("$NC_PID")
sleep 0.3
nsenter --net=/run/netns/"$NA" timeout 120 nc -N 10.66.0.2 7001 <"$TMP/tcp.src" &
NCC_PID=$!
BG_PIDS+=("$NCC_PID")

if [[ $QUICK == quick ]]; then
  SIZES_1K="1 4096 1048576"
  SIZES_4K="1 65536"
else
  SIZES_1K="1 4096 65536 1048576"
  SIZES_4K="1 4097 1048576"
fi

# matrix MTU SIZES: every operation x SIZES x 1 and 8 QPs, verified.
matrix() {
  local mtu=$1 op size qps
  for op in write write_imm read send; do
    for size in $2; do
      for qps in 1 8; do
        xfer "mtu$mtu-$op-$size-q$qps" -- --op "$op" --size "$size" --qps "$qps" --depth 4 \
          --iters $((qps * 8)) --mtu "$mtu" --verify
      done
    done
  done
}

log "RoCE MTU 1024 on a 1500-byte link"
matrix 1024 "$SIZES_1K"
xfer "mtu1024-write-64M" -- --op write --size 67108864 --qps 1 --depth 1 --iters 2 --mtu 1024 --verify
xfer "mtu1024-read-64M" -- --op read --size 67108864 --qps 1 --depth 1 --iters 2 --mtu 1024 --verify

wait "$NCC_PID" || fail "TCP transfer failed while RDMA ran"
wait "$NC_PID"
cmp -s "$TMP/tcp.src" "$TMP/tcp.dst" || fail "TCP transfer corrupted or incomplete while RDMA ran"
echo "TCP: 20 MB transferred intact alongside RDMA"
wait "$PING_PID"
received=$(sed -n 's/.* \([0-9]*\) received.*/\1/p' "$TMP/ping.out")
[[ ${received:-0} -ge 390 ]] || { cat "$TMP/ping.out"; fail "ping lost replies while RDMA ran"; }
echo "ping: $received/400 replies"

log "RoCE MTU 4096 on a 9000-byte link (AF_XDP multi-buffer)"
set_mtu 9000
matrix 4096 "$SIZES_4K"
xfer "mtu4096-send-64M" -- --op send --size 67108864 --qps 1 --depth 1 --iters 2 --mtu 4096 --verify
xfer "mtu4096-write_imm-64M" -- --op write_imm --size 67108864 --qps 1 --depth 1 --iters 2 --mtu 4096 --verify

log "RoCEv2 over IPv6 (the server named by its IPv6 address)"
SERVER=fd66::2 xfer "ipv6-send" -- --op send --size 5000 --qps 2 --depth 4 --iters 64 --mtu 4096 --verify
SERVER=fd66::2 xfer "ipv6-read" -- --op read --size 100000 --qps 2 --depth 4 --iters 16 --mtu 4096 --verify

log "workers: server with 2 workers, client with 1 (frames handed over between workers)"
xfer "workers-2v1" --workers 2 -- --op send --size 5000 --qps 8 --depth 4 --iters 400 --mtu 4096 --verify --workers 1
grep -q "handoff=[1-9]" "$TMP/workers-2v1.srv" || { cat "$TMP/workers-2v1.srv"; fail "no frame was handed over between workers"; }
echo "server handoff: $(grep -o 'handoff=[0-9]*' "$TMP/workers-2v1.srv")"

log "kill -9 of a server, then a fresh start on the same interface"
nsenter --net=/run/netns/"$NB" "$X" --backend "$BB" --netdev vb >"$TMP/killed.srv" 2>&1 &
KPID=$!
BG_PIDS+=("$KPID")
sleep 1.5
kill -9 "$KPID"
wait "$KPID" 2>/dev/null
[[ $BB == xdp ]] && { inB ip link show vb | grep -q "xdp" || echo "note: no program left attached after kill -9"; }
xfer "after-kill" -- --op write --size 100000 --qps 2 --depth 4 --iters 50 --mtu 4096 --verify
echo "after kill -9: a fresh server attached and served"

echo "PASS"
