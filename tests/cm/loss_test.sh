#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# CM MADs lost in both directions between two burstd (docs/cm.md "Loss"): each burstd
# drops CM_LOSS % (default 25) of the MADs it sends with the test hook of a
# BURST_TEST_HOOKS build (daemon/burstd/gsi.h: BURST_TEST_GSI_TX_LOSS, seeded), so
# REQs, REPs, RTUs, DREQs, DREPs and MRAs are lost on both sides; the IB CM's retries
# must still form and close every connection:
#   A: a0 10.47.0.1/24   <--veth-->   B: b0 10.47.0.2/24
#   rping -V -C 5 (data checked), ucmatose -c 4 -C 5, then both burstd hold no rdma_cm id
#   and each counted gsi.test_tx_dropped > 0 (else the case proves nothing).
# Usage: loss_test.sh BURSTCTL BURSTD
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools missing, a build without test hooks).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"
source "$HERE/../provider/lib_apps.sh"
source "$HERE/lib_cm.sh"  # cm_pair, cm_counters, cm_finish

BURSTCTL=${1:?usage: loss_test.sh BURSTCTL BURSTD}
BURSTD=${2:?usage: loss_test.sh BURSTCTL BURSTD}
CASES=()
LOSS=${CM_LOSS:-25}

netns_require_root "network namespaces, veth, XDP"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout stdbuf
netns_require_tools "rdmacm-utils" rping ucmatose
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD"

netns_pair burst-cmloss
REPORT=$TMP/report.txt
: >"$REPORT"
netns_cmd_env
netns_link_ab a0 10.47.0.1 b0 10.47.0.2
inA ping -c1 -W2 10.47.0.2 >/dev/null || fail "no IP connectivity over the veth"

BURSTD_WRAP="env BURST_TEST_GSI_TX_LOSS=$LOSS BURST_TEST_GSI_TX_SEED=11" \
  netns_start_burstd "$NA" "$TMP/a.sock" "$TMP/burstd-a.log" "in $NA" --backend xdp --netdev a0
BURSTD_WRAP="env BURST_TEST_GSI_TX_LOSS=$LOSS BURST_TEST_GSI_TX_SEED=12" \
  netns_start_burstd "$NB" "$TMP/b.sock" "$TMP/burstd-b.log" "in $NB" --backend xdp --netdev b0

counter() { "$BURSTCTL" --socket "$TMP/$1.sock" counters --all 2>/dev/null | awk -v k="$2" '$1 == k {print $2}'; }
[[ -n $(counter a gsi.test_tx_dropped) ]] ||
  skip "burstd has no MAD-loss hook (a build without BURST_TEST_HOOKS)"

CM_CLIENT_ADDR=10.47.0.1
CM_REPORT_RE="ping data|complete|connect"
# Each lost MAD costs a retry period (~4.3 s for a REQ, DREQ or REP).
cm_pair rping 180 rping -s -a 10.47.0.1 -V -C 5 -- rping -c -V -C 5 -a
cm_pair ucmatose 240 ucmatose -c 4 -C 5 -- ucmatose -c 4 -C 5 -s

for side in a b; do
  d=$(counter "$side" gsi.test_tx_dropped)
  echo "burstd $side: gsi.test_tx_dropped ${d:-?}, cm.retransmits $(counter "$side" cm.retransmits)," \
    "cm.duplicate_req $(counter "$side" cm.duplicate_req)" >>"$REPORT"
  [[ ${d:-0} -gt 0 ]] || { FAILED+=("no-loss-$side"); echo "burstd $side dropped nothing" >>"$REPORT"; }
done
# Nothing left once the timewaits end (~9 s after the last disconnect).
for side in a b; do
  for _ in $(seq 60); do
    [[ $(counter "$side" cma.ids) == 0 && $(counter "$side" cma.channels) == 0 ]] && break
    sleep 0.5
  done
  [[ $(counter "$side" cma.ids) == 0 ]] || FAILED+=("ids-left-$side")
done
cm_counters >>"$REPORT"
cm_finish
