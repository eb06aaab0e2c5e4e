#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Unmodified rdma-core and perftest binaries between two burstd, one per
# network namespace, joined by a veth pair (AF_XDP backend on each end):
#   A: a0 10.45.0.1/24   <--veth-->   B: b0 10.45.0.2/24
# Each application runs under `burstctl run --netdev <dev> --socket <sock>`,
# which makes libibverbs find burst0 (GID index 1 = the IPv4 address). Every
# pair (server in A, client in B) must exit 0; the figures each tool prints are
# collected into $BURST_APPS_REPORT (default: printed at the end).
# Usage: apps_test.sh BURSTCTL BURSTD [CASES...]   (CASES: names below; default all)
# BURSTD_BACKEND_A / BURSTD_BACKEND_B: xdp (default) or dpdk (net_af_packet on
# the same veth end) for the daemon in A / B: the suite on DPDK, and xdp <-> dpdk.
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools missing, kernel with RDMA).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"
source "$HERE/lib_apps.sh"

BURSTCTL=${1:?usage: apps_test.sh BURSTCTL BURSTD [CASES...]}
BURSTD=${2:?usage: apps_test.sh BURSTCTL BURSTD [CASES...]}
shift 2
CASES=("$@")

netns_require_root "network namespaces, veth, XDP"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout
netns_require_tools "ibverbs-utils" ibv_devices ibv_devinfo ibv_rc_pingpong ibv_ud_pingpong \
  ibv_srq_pingpong
netns_require_tools "perftest" ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD"

netns_pair burst-apps
REPORT=${BURST_APPS_REPORT:-$TMP/report.txt}
: >"$REPORT"
netns_cmd_env

netns_link_ab a0 10.45.0.1 b0 10.45.0.2
inA ping -c1 -W2 10.45.0.2 >/dev/null || fail "no IP connectivity over the veth"

start_burstd() {  # NS DEV SOCK LOG BACKEND
  netns_start_burstd "$1" "$3" "$4" "in $1" --backend "$5" --netdev "$2" --workers 1
}
start_burstd "$NA" a0 "$TMP/a.sock" "$TMP/burstd-a.log" "${BURSTD_BACKEND_A:-xdp}"
start_burstd "$NB" b0 "$TMP/b.sock" "$TMP/burstd-b.log" "${BURSTD_BACKEND_B:-xdp}"

runA() { brun_in "$NA" a0 "$TMP/a.sock" "$T" "$@"; }

FAILED=()
want() {  # is this case selected?
  [[ ${#CASES[@]} -eq 0 ]] && return 0
  local c
  for c in "${CASES[@]}"; do [[ $c == "$1" ]] && return 0; done
  return 1
}

# pair NAME SECONDS SERVER-ARGS... -- CLIENT-ARGS...: server in A (background),
# client in B against 10.45.0.1; both must exit 0.
PAIR_REPORT_RE="bytes in|usec/iter|^Final:|^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+"
PAIR_REPORT_LINES=40
pair() {
  local name=$1 t=$2
  shift 2
  want "$name" || return 0
  apps_pair "$name" "$t" "$NA" a0 "$TMP/a.sock" "$NB" b0 "$TMP/b.sock" 10.45.0.1 "$@"
}

if want devices; then
  log "ibv_devices / ibv_devinfo -v"
  T=30
  runA ibv_devices >"$TMP/devices" 2>&1 || { cat "$TMP/devices"; FAILED+=(devices); }
  grep -q burst0 "$TMP/devices" || { cat "$TMP/devices"; FAILED+=(devices-list); }
  runA ibv_devinfo -v >"$TMP/devinfo" 2>&1 || { cat "$TMP/devinfo"; FAILED+=(devinfo); }
  grep -q PORT_ACTIVE "$TMP/devinfo" || FAILED+=(devinfo-active)
fi

G=(-d burst0 -g 1)
pair rc_pingpong 60 ibv_rc_pingpong "${G[@]}" -n 200 -- ibv_rc_pingpong "${G[@]}" -n 200
pair rc_pingpong_events 60 ibv_rc_pingpong "${G[@]}" -n 200 -e -- ibv_rc_pingpong "${G[@]}" -n 200 -e
pair rc_pingpong_chk 60 ibv_rc_pingpong "${G[@]}" -n 200 -c -- ibv_rc_pingpong "${G[@]}" -n 200 -c
pair srq_pingpong 60 ibv_srq_pingpong "${G[@]}" -n 200 -- ibv_srq_pingpong "${G[@]}" -n 200
pair ud_pingpong 60 ibv_ud_pingpong "${G[@]}" -n 200 -- ibv_ud_pingpong "${G[@]}" -n 200
P=(-d burst0 -x 1 -F --report_gbits)
pair write_bw 120 ib_write_bw "${P[@]}" -s 65536 -n 500 -- ib_write_bw "${P[@]}" -s 65536 -n 500
pair write_bw_1m 120 ib_write_bw "${P[@]}" -s 1048576 -n 50 -- ib_write_bw "${P[@]}" -s 1048576 -n 50
pair write_bw_q8 120 ib_write_bw "${P[@]}" -s 65536 -n 200 -q 8 -- ib_write_bw "${P[@]}" -s 65536 -n 200 -q 8
pair write_bw_sweep 300 ib_write_bw "${P[@]}" -a -n 50 -- ib_write_bw "${P[@]}" -a -n 50
pair read_bw 120 ib_read_bw "${P[@]}" -s 65536 -n 500 -- ib_read_bw "${P[@]}" -s 65536 -n 500
pair read_bw_q8 120 ib_read_bw "${P[@]}" -s 65536 -n 200 -q 8 -- ib_read_bw "${P[@]}" -s 65536 -n 200 -q 8
pair read_bw_sweep 300 ib_read_bw "${P[@]}" -a -n 50 -- ib_read_bw "${P[@]}" -a -n 50
pair send_bw 120 ib_send_bw "${P[@]}" -s 65536 -n 500 -- ib_send_bw "${P[@]}" -s 65536 -n 500
pair send_bw_q8 120 ib_send_bw "${P[@]}" -s 65536 -n 200 -q 8 -- ib_send_bw "${P[@]}" -s 65536 -n 200 -q 8
pair send_bw_sweep 300 ib_send_bw "${P[@]}" -a -n 50 -- ib_send_bw "${P[@]}" -a -n 50
# UD multicast (perftest -g: on Ethernet no SA join, only ibv_attach_mcast): the
# server's QP attaches to 239.1.2.4 (-M takes 16 decimal bytes), the client
# sends to it with DQPN 0xFFFFFF.
MG=0:0:0:0:0:0:0:0:0:0:255:255:239:1:2:4
pair send_bw_mcast 120 ib_send_bw "${P[@]}" -c UD -g -M "$MG" -s 1024 -n 200 -- \
  ib_send_bw "${P[@]}" -c UD -g -M "$MG" -s 1024 -n 200
# UCX 1.13 ud_verbs over the IPv4-mapped GID: its receive filter takes wc.sl & 7
# as the L3 type (2 = IPv4) to find the destination GID in the GRH area.
if command -v ucx_perftest >/dev/null; then
  U=(env UCX_IB_GID_INDEX=1 UCX_NET_DEVICES=burst0:1 ucx_perftest -d burst0:1 -x ud_verbs -n 1000)
  pair ucx_ud_am_lat 120 "${U[@]}" -t am_lat -- "${U[@]}" -t am_lat
fi
pair atomic_bw 120 ib_atomic_bw "${P[@]}" -n 500 -- ib_atomic_bw "${P[@]}" -n 500
pair atomic_bw_cas 120 ib_atomic_bw "${P[@]}" -A CMP_AND_SWAP -n 200 -- ib_atomic_bw "${P[@]}" -A CMP_AND_SWAP -n 200
pair atomic_bw_q8 120 ib_atomic_bw "${P[@]}" -n 200 -q 8 -- ib_atomic_bw "${P[@]}" -n 200 -q 8
pair write_lat 120 ib_write_lat "${P[@]}" -s 8 -n 500 -- ib_write_lat "${P[@]}" -s 8 -n 500
pair read_lat 120 ib_read_lat "${P[@]}" -s 8 -n 500 -- ib_read_lat "${P[@]}" -s 8 -n 500
pair send_lat 120 ib_send_lat "${P[@]}" -s 8 -n 500 -- ib_send_lat "${P[@]}" -s 8 -n 500

echo "=== figures"
cat "$REPORT"
for ns in A B; do
  if grep -qiE "error|assert" "$TMP/burstd-${ns,,}.log"; then
    echo "--- burstd $ns log (errors):"; grep -iE "error|assert" "$TMP/burstd-${ns,,}.log" | head -20
  fi
done
if [[ ${#FAILED[@]} -ne 0 ]]; then
  echo "--- burstd A log:"; tail -30 "$TMP/burstd-a.log"
  echo "--- burstd B log:"; tail -30 "$TMP/burstd-b.log"
  fail "failed: ${FAILED[*]}"
fi
echo "PASS"
