#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# rdma_cm cases beyond netns.cm_ucma (docs/cm.md, "Loopback, libfabric, IPv6"):
# two burstd on a veth pair, as ucma_test.sh:
#   A: a0 10.47.0.1/24 fd00:47::1/64   <--veth-->   B: b0 10.47.0.2/24 fd00:47::2/64
# Cases (server in A, client in B, both must exit 0):
#   rxm      fi_pingpong -p "verbs;ofi_rxm" -e rdm (its fi_getinfo binds 127.0.0.1)
#   msg      fi_pingpong -p verbs -e msg
#   rping6   rping -V over fd00:47::1
#   rping6ll rping -V over A's link-local address (scope a0 / b0)
# then neither burstd may hold an rdma_cm id or channel.
# Usage: fabric_test.sh BURSTCTL BURSTD [CASES...]
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools missing).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"
source "$HERE/../provider/lib_apps.sh"
source "$HERE/lib_cm.sh"  # cm_pair, cm_want, cm_counters, cm_finish

BURSTCTL=${1:?usage: fabric_test.sh BURSTCTL BURSTD [CASES...]}
BURSTD=${2:?usage: fabric_test.sh BURSTCTL BURSTD [CASES...]}
shift 2
CASES=("$@")

netns_require_root "network namespaces, veth, XDP"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout stdbuf
netns_require_tools "rdmacm-utils" rping
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD"

netns_pair burst-fab
REPORT=$TMP/report.txt
: >"$REPORT"
netns_cmd_env

netns_link_ab a0 10.47.0.1 b0 10.47.0.2
inA ip -6 addr add fd00:47::1/64 dev a0 nodad
inB ip -6 addr add fd00:47::2/64 dev b0 nodad
for _ in $(seq 50); do  # the link-local addresses leave their DAD state
  inA ip -6 addr show dev a0 | grep -q tentative || inB ip -6 addr show dev b0 |
    grep -q tentative || break
  sleep 0.2
done
LLA=$(inA ip -6 addr show dev a0 scope link | awk '/inet6/ {sub("/.*", "", $2); print $2; exit}')
inA ping -c1 -W2 10.47.0.2 >/dev/null || fail "no IP connectivity over the veth"
inB ping -6 -c1 -W2 fd00:47::1 >/dev/null || fail "no IPv6 connectivity over the veth"

netns_start_burstd "$NA" "$TMP/a.sock" "$TMP/burstd-a.log" "in $NA" --backend xdp --netdev a0
netns_start_burstd "$NB" "$TMP/b.sock" "$TMP/burstd-b.log" "in $NB" --backend xdp --netdev b0

# RxM sizes its MSG CQ as (rx + tx size) x universe size = 65536 by default,
# above burst's BURST_MAX_CQE (65535): ibv_create_cq says EINVAL (fi_enable
# -22). A universe of 64 peers keeps it at 16384.
if command -v fi_pingpong >/dev/null; then
  cm_pair rxm 90 env FI_UNIVERSE_SIZE=64 fi_pingpong -p "verbs;ofi_rxm" -e rdm -I 100 -- \
    env FI_UNIVERSE_SIZE=64 fi_pingpong -p "verbs;ofi_rxm" -e rdm -I 100 10.47.0.1
  cm_pair msg 90 fi_pingpong -p verbs -e msg -I 100 -- fi_pingpong -p verbs -e msg -I 100 10.47.0.1
else
  echo "rxm, msg SKIP (apt-get install libfabric-bin)" >>"$REPORT"
fi
cm_pair rping6 60 rping -s -a fd00:47::1 -v -V -C 10 -- rping -c -v -V -C 10 -a fd00:47::1
if [[ -n $LLA ]]; then
  cm_pair rping6ll 60 rping -s -a "$LLA%a0" -v -V -C 10 -- rping -c -v -V -C 10 -a "$LLA%b0"
else
  FAILED+=(rping6ll)
  echo "rping6ll FAIL (a0 has no link-local address)" >>"$REPORT"
fi

if cm_want leftovers; then
  for side in a b; do
    "$BURSTCTL" --socket "$TMP/$side.sock" counters --all >"$TMP/counters-$side" 2>&1
    ids=$(awk '$1 == "cma.ids" {print $2}' "$TMP/counters-$side")
    chans=$(awk '$1 == "cma.channels" {print $2}' "$TMP/counters-$side")
    echo "== burstd $side: cma.ids=$ids cma.channels=$chans" >>"$REPORT"
    [[ $ids == 0 && $chans == 0 ]] || FAILED+=("leftovers-$side")
  done
fi

cm_finish
