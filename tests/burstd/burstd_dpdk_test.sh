#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burstd on the DPDK backend: bad input gives one clear error and exit 1 (never
# a crash, never a half-started daemon), and a good configuration comes up.
#   - backend dpdk with neither dpdk_port nor netdev; a port without netdev and
#     no address; a vdev no PMD knows; EAL arguments the EAL refuses;
#     dpdk_hugepages = on with no free hugepages
#   - two burstd on one memif link (no kernel netdev): each reports backend
#     dpdk; RC QPs on one towards the other's GID (ctl_test_client) get the MAC
#     from burst's own ARP agent (arp.requests_answered moves on the other side);
#     every thread of each (the EAL's too) keeps only the capabilities of a DPDK
#     port with no kernel netdev (daemon/burstd/privileges.h), NoNewPrivs 1
# Usage: burstd_dpdk_test.sh BURSTD BURSTCTL CTL_TEST_CLIENT
# Exit: 0 pass, 1 fail, 77 skipped (not root).
set -uo pipefail
BURSTD=${1:?usage: burstd_dpdk_test.sh BURSTD BURSTCTL}
BURSTCTL=${2:?usage}
CLIENT=${3:?usage}
. "$(dirname "$0")/../netns/lib.sh"
. "$(dirname "$0")/caps_lib.sh"
netns_require_root "DPDK EAL, network namespace"
[[ -x $BURSTD && -x $BURSTCTL ]] || fail "burstd/burstctl not built"
netns_pair burstd-dpdk
inA ip link set lo up

# expect_error NAME PATTERN CONFIG-LINES...: burstd exits 1 within 30 s, its
# output names the problem.
expect_error() {
  local name=$1 pattern=$2
  shift 2
  printf '%s\n' "$@" >"$TMP/$name.conf"
  inA timeout 30 "$BURSTD" --config "$TMP/$name.conf" --socket "$TMP/$name.sock" >"$TMP/$name.log" 2>&1
  local rc=$?
  [[ $rc -eq 1 ]] || { cat "$TMP/$name.log"; fail "$name: exit $rc, expected 1"; }
  grep -qiE "$pattern" "$TMP/$name.log" || { cat "$TMP/$name.log"; fail "$name: no message matching '$pattern'"; }
  [[ -S $TMP/$name.sock ]] && ! timeout 2 "$BURSTCTL" --socket "$TMP/$name.sock" status >/dev/null 2>&1 ||
    true
  echo "$name: $(grep -iE "$pattern" "$TMP/$name.log" | head -1 | cut -c1-160)"
}

log "bad input"
expect_error no-port "backend dpdk needs a port" "backend = dpdk"
expect_error no-address "needs its addresses" "backend = dpdk" "dpdk_port = net_memif0,role=server,socket=bd$$"
expect_error bad-address "IPv4 addresses" "backend = dpdk" "dpdk_port = net_ring0" "address = 10.1.1.300/24"
expect_error unknown-pmd "could not be created" "backend = dpdk" "dpdk_port = net_nosuchpmd0" "address = 10.1.1.1/24"
expect_error bad-eal "EAL initialisation failed" "backend = dpdk" "dpdk_port = net_ring0" \
  "address = 10.1.1.1/24" "dpdk_eal = --no-such-eal-flag"
if [[ $(cat /proc/sys/vm/nr_hugepages) -eq 0 ]]; then
  expect_error no-hugepages "free 2 MB hugepages.*nr_hugepages" "backend = dpdk" "dpdk_port = net_ring0" \
    "address = 10.1.1.1/24" "dpdk_hugepages = on"
else
  echo "no-hugepages: skipped, this machine has hugepages reserved"
fi

log "two burstd on memif, ARP by burst"
SOCKNAME="burstd-memif-$$"
start() {  # NAME ROLE ADDRESS
  printf '%s\n' "backend = dpdk" "dpdk_port = net_memif0,role=$2,socket=$SOCKNAME,id=0" \
    "address = $3" "dpdk_hugepages = off" "idle_sleep_max_us = 200" >"$TMP/$1.conf"
  nsenter --net=/run/netns/"$NA" "$BURSTD" --config "$TMP/$1.conf" --socket "$TMP/$1.sock" \
    >"$TMP/$1.log" 2>&1 &
  BG_PIDS+=($!)
  eval "PID_$1=$!"
  local i
  for ((i = 0; i < 100; i++)); do
    [[ -S $TMP/$1.sock ]] && timeout 5 "$BURSTCTL" --socket "$TMP/$1.sock" status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$TMP/$1.log"
  fail "burstd $1 did not come up"
}
start srv server 10.98.0.1/24
start cli client 10.98.0.2/24
for n in srv cli; do
  st=$(timeout 5 "$BURSTCTL" --socket "$TMP/$n.sock" status)
  grep -q "backend  dpdk" <<<"$st" || { echo "$st"; fail "$n does not report backend dpdk"; }
  grep -q "net_memif" "$TMP/$n.log" || { cat "$TMP/$n.log"; fail "$n: the log does not name the PMD"; }
done
echo "both report: $(timeout 5 "$BURSTCTL" --socket "$TMP/srv.sock" status | grep '^backend')"
want=$(caps_expected)  # memif, no kernel netdev: none
caps_check "$PID_srv" "$want" "$want" 1 || { cat "$TMP/srv.log"; fail "server's capabilities"; }
caps_check "$PID_cli" "$want" "$want" 1 || { cat "$TMP/cli.log"; fail "client's capabilities"; }
grep "capabilities after start-up" "$TMP/srv.log" || fail "no capability line"
echo "log: $(grep -o 'DPDK port [^,]*' "$TMP/srv.log" | head -1)"
# RC QPs on the client daemon towards the server's GID: burstd resolves the
# MAC with its ARP agent over memif, the server's agent answers.
inA timeout 60 "$CLIENT" scenario "$TMP/cli.sock" --dgid 10.98.0.1 >"$TMP/scenario.log" 2>&1 ||
  { cat "$TMP/scenario.log" "$TMP/cli.log"; fail "QPs to the memif peer could not be connected"; }
answered=$(timeout 5 "$BURSTCTL" --socket "$TMP/srv.sock" counters | awk '$1=="arp.requests_answered"{print $2}')
learned=$(timeout 5 "$BURSTCTL" --socket "$TMP/cli.sock" counters | awk '$1=="arp.learned"{print $2}')
[[ ${answered:-0} -ge 1 && ${learned:-0} -ge 1 ]] ||
  { timeout 5 "$BURSTCTL" --socket "$TMP/srv.sock" counters; fail "ARP over memif: answered=${answered:-0} learned=${learned:-0}"; }
echo "ARP over memif: server answered $answered, client learned $learned; QPs connected"
echo "PASS"
