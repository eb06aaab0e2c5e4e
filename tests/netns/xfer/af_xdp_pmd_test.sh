#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# DPDK's net_af_xdp on a veth end, with burst's steering program handed to the
# PMD (xdp_prog): burst-xfer server on --backend dpdk (net_af_xdp), client on
# --backend xdp. Only UDP 4791 reaches DPDK; ping and the TCP side channel stay
# with the kernel on the same interface. RoCE MTU 1024 (22.11's net_af_xdp has
# no multi-buffer frames). net_af_xdp needs hugepage-backed mbufs: the test
# reserves 256 2 MB pages when fewer are free and gives them back at the end.
# Usage: af_xdp_pmd_test.sh BURST_XFER
# Exit: 0 pass, 1 fail, 77 skipped.
set -uo pipefail
X=${1:?usage: af_xdp_pmd_test.sh BURST_XFER}
. "$(dirname "$0")/../lib.sh"
netns_require_root "network namespaces, XDP, DPDK"
netns_require_tools "iproute2 util-linux iputils-ping" ip nsenter timeout ping
[[ -x $X ]] || fail "burst-xfer not found at $X"
"$X" --help 2>&1 | grep -q -- "--dpdk-port" || skip "burst-xfer was built without DPDK"
HP_BEFORE=$(cat /proc/sys/vm/nr_hugepages)
restore_hugepages() { echo "$HP_BEFORE" >/proc/sys/vm/nr_hugepages; }
netns_pair burst-afxdp
trap 'restore_hugepages; netns_cleanup' EXIT
free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
if ((free < 256)); then
  echo $((HP_BEFORE + 256 - free)) >/proc/sys/vm/nr_hugepages
  free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
  ((free >= 128)) || skip "cannot reserve 2 MB hugepages for net_af_xdp's UMEM ($free free)"
fi

ip link add va netns "$NA" type veth peer name vb netns "$NB" || fail "cannot create veth pair"
inA ip link set lo up
inB ip link set lo up
inA ip addr add 10.69.0.1/24 dev va
inB ip addr add 10.69.0.2/24 dev vb
inA ip link set va up
inB ip link set vb up
sleep 0.5
PORT="net_af_xdp0,iface=vb,start_queue=0,queue_count=1"

for spec in "write 65536 1" "write 1048576 4" "read 65536 2" "send 100000 2" "write_imm 1 1"; do
  read -r op size qps <<<"$spec"
  name="afxdp-$op-$size-q$qps"
  nsenter --net=/run/netns/"$NB" timeout 60 "$X" --backend dpdk --netdev vb --dpdk-port "$PORT" \
    >"$TMP/$name.srv" 2>&1 &
  spid=$!
  BG_PIDS+=("$spid")
  if ! inA timeout 60 "$X" --backend xdp --netdev va --op "$op" --size "$size" --qps "$qps" \
      --depth 4 --iters $((qps * 16)) --mtu 1024 --verify 10.69.0.2 >"$TMP/$name.cli" 2>&1; then
    cat "$TMP/$name.cli" "$TMP/$name.srv"
    fail "$name: client failed"
  fi
  wait "$spid" || { cat "$TMP/$name.srv"; fail "$name: server failed"; }
  grep -q "pmd=net_af_xdp" "$TMP/$name.srv" || { cat "$TMP/$name.srv"; fail "$name: server not on net_af_xdp"; }
  grep -q "verify=ok" "$TMP/$name.cli" && grep -q "peer_verify_failures=0" "$TMP/$name.cli" ||
    { cat "$TMP/$name.cli"; fail "$name: not verified"; }
  # The PMD sees RoCE only: nothing else reached burst's queues.
  grep -q " drops=0" "$TMP/$name.srv" || { cat "$TMP/$name.srv"; fail "$name: non-RoCE frames reached DPDK"; }
  echo "$name: $(grep -o 'msgs=[0-9]* .*goodput=[0-9.]* Gbit/s' "$TMP/$name.cli")"
done
# The kernel kept everything else on vb while the PMD's program was attached.
nsenter --net=/run/netns/"$NB" timeout 30 "$X" --backend dpdk --netdev vb --dpdk-port "$PORT" >"$TMP/held.srv" 2>&1 &
hp=$!
BG_PIDS+=("$hp")
sleep 2
inA ping -c 5 -i 0.2 -W 2 10.69.0.2 >"$TMP/ping" 2>&1 || { cat "$TMP/ping" "$TMP/held.srv"; fail "ping through the kernel failed while net_af_xdp held vb"; }
echo "ping: $(grep -o '[0-9]* received' "$TMP/ping") while net_af_xdp held vb"
kill "$hp" 2>/dev/null
wait "$hp" 2>/dev/null
echo "PASS"
