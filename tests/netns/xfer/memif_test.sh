#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Two burst-xfer joined by DPDK memif: no kernel netdev on the RoCE path at
# all. Each port knows only its --address; the client resolves the server's
# MAC with its own ARP agent (checked against the MAC the server announced on
# the side channel), the server's agent answers. Both processes run inside one
# private network namespace (the TCP side channel uses its loopback), the memif
# control socket is an abstract unix socket named after this run.
#   every operation x {1 B, 64 KiB, 1 MiB} x {1, 4 QPs}, RoCE MTU 1024 and 4096,
#   every byte verified.
# Usage: memif_test.sh BURST_XFER
# Exit: 0 pass, 1 fail, 77 skipped (not root, burst-xfer without DPDK).
set -uo pipefail
X=${1:?usage: memif_test.sh BURST_XFER}
. "$(dirname "$0")/../lib.sh"

netns_require_root "network namespaces, DPDK EAL"
netns_require_tools "iproute2 util-linux" ip nsenter timeout ss
[[ -x $X ]] || fail "burst-xfer not found at $X"
"$X" --help 2>&1 | grep -q -- "--dpdk-port" || skip "burst-xfer was built without DPDK"
netns_pair burst-memif
inA ip link set lo up
SOCK="burst-memif-$$"

# pair NAME ARGS...: server (memif role=server) and client in namespace A.
pair() {
  local name=$1
  shift
  inA timeout 120 "$X" --backend dpdk --address 10.99.0.2/24 --port 18777 \
    --dpdk-port "net_memif0,role=server,socket=$SOCK,id=0" >"$TMP/$name.srv" 2>&1 &
  local spid=$!
  BG_PIDS+=("$spid")
  # The server has its memif socket once it listens on the side channel.
  local i
  for ((i = 0; i < 100; i++)); do
    inA ss -ltn 'sport = :18777' | grep -q LISTEN && break
    sleep 0.1
  done
  if ! inA timeout 120 "$X" --backend dpdk --address 10.99.0.1/24 --port 18777 \
      --dpdk-port "net_memif0,role=client,socket=$SOCK,id=0" "$@" 127.0.0.1 >"$TMP/$name.cli" 2>&1; then
    cat "$TMP/$name.cli" "$TMP/$name.srv"
    fail "$name: client failed"
  fi
  wait "$spid" || { cat "$TMP/$name.srv"; fail "$name: server failed"; }
  grep -q "verify=ok" "$TMP/$name.cli" || { cat "$TMP/$name.cli"; fail "$name: not verified"; }
  grep -q "peer_verify_failures=0" "$TMP/$name.cli" || { cat "$TMP/$name.cli"; fail "$name: peer verification"; }
  grep -q "pmd=net_memif" "$TMP/$name.cli" || { cat "$TMP/$name.cli"; fail "$name: not on memif"; }
  echo "$name: $(grep -o 'msgs=[0-9]* .*goodput=[0-9.]* Gbit/s' "$TMP/$name.cli") $(grep -o 'arp_[a-z]*=[0-9]*' "$TMP/$name.srv" | tr '\n' ' ')"
}

for mtu in 1024 4096; do
  log "RoCE MTU $mtu over memif"
  for op in write write_imm read send; do
    for size in 1 65536 1048576; do
      for qps in 1 4; do
        pair "memif-$mtu-$op-$size-q$qps" --op "$op" --size "$size" --qps "$qps" --depth 4 \
          --iters $((qps * 8)) --mtu "$mtu" --verify
      done
    done
  done
done
# The server's agent answered the client's ARP request at least once per run.
grep -q "arp_answered=[1-9]" "$TMP/memif-1024-write-1-q1.srv" ||
  { cat "$TMP/memif-1024-write-1-q1.srv"; fail "the server's ARP agent answered nothing"; }
echo "PASS"
