#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# One-host loopback (issue 14 item 1): unmodified rdma-core and perftest with
# client and server on the same host.
#   1. one burstd (AF_XDP, 1 worker) on l0 in namespace A (peer p0 in B keeps
#      the link up): client and server on burst0, aimed at its own GID (index 1,
#      IPv4-mapped; once index 0, link-local). The frames loop inside burstd:
#      worker.looped grows, the port sends no RoCE frame to the wire (p0 sees
#      none: its rx counter stays put).
#   2. the same with workers=2: the QPs of one pair land on different workers
#      (QPNs are striped), so frames cross the handoff rings both ways.
#   3. two burstd in ONE namespace A, on l0 (10.46.0.1) and l1 (10.46.0.2), the
#      veths' peers bridged in B: burst0 -> burst1 resolves l1's MAC (a local
#      address of another netdev) and goes over the wire through the bridge.
# BURSTD_BACKEND=dpdk runs the same over net_af_packet (netns.provider_loopback_dpdk: parts one, bridge).
#   A: l0 10.46.0.1/24, l1 10.46.0.2/24  <--veth-->  B: p0, p1 in bridge br0
# Usage: loopback_test.sh BURSTCTL BURSTD [PARTS...]  (PARTS: one two bridge; default all)
# BURSTD_BACKEND: xdp (default) or dpdk (net_af_packet on the same veth end).
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools missing, kernel with RDMA).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"
source "$HERE/lib_apps.sh"

BURSTCTL=${1:?usage: loopback_test.sh BURSTCTL BURSTD [PARTS...]}
BURSTD=${2:?usage: loopback_test.sh BURSTCTL BURSTD [PARTS...]}
shift 2
PARTS=("$@")
[[ ${#PARTS[@]} -eq 0 ]] && PARTS=(one two bridge)

netns_require_root "network namespaces, veth, XDP"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout
netns_require_tools "ibverbs-utils" ibv_rc_pingpong ibv_ud_pingpong
netns_require_tools "perftest" ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD"

BACKEND=${BURSTD_BACKEND:-xdp}
TX_FRAMES=$([[ $BACKEND == xdp ]] && echo xsk.tx_frames || echo dpdk.tx_frames)
netns_pair burst-loop
REPORT=${BURST_LOOP_REPORT:-$TMP/report.txt}
: >"$REPORT"
netns_cmd_env

# Two queues on l0: burstd with workers=2 needs one per worker.
ip link add l0 netns "$NA" numrxqueues 2 numtxqueues 2 type veth \
  peer name p0 netns "$NB" numrxqueues 2 numtxqueues 2 || fail "cannot create veth pair"
ip link add l1 netns "$NA" type veth peer name p1 netns "$NB" || fail "cannot create veth pair"
inA ip link set lo up
inB ip link set lo up
inA ip addr add 10.46.0.1/24 dev l0
inA ip addr add 10.46.0.2/24 dev l1
inB ip link add br0 type bridge || fail "cannot create a bridge"
inB ip link set p0 master br0
inB ip link set p1 master br0
for d in br0 p0 p1; do inB ip link set "$d" up; done
inA ip link set l0 up
inA ip link set l1 up
for _ in $(seq 50); do
  inA ip link show l0 | grep -q LOWER_UP && inA ip link show l1 | grep -q LOWER_UP && break
  sleep 0.1
done
# The link-local address (GID 0) must have finished DAD to be an address.
for _ in $(seq 50); do
  inA ip -6 addr show dev l0 scope link | grep -q tentative || break
  sleep 0.1
done

start_burstd() {  # DEV SOCK LOG WORKERS
  netns_start_burstd "$NA" "$2" "$3" "on $1" --backend "$BACKEND" --netdev "$1" --workers "$4"
}
stop_burstd() {  # PID SOCK
  kill "$1" 2>/dev/null
  wait "$1" 2>/dev/null
  rm -f "$2"
}
counter() {  # SOCK NAME: the sum over the workers
  "$BURSTCTL" --socket "$1" counters --all | awk -v n="$2" '$1 == n { print $2; exit }'
}
p0_rx() { inB ip -s link show p0 | awk '/RX:/ { getline; print $2; exit }'; }

FAILED=()
# pair NAME SECONDS SERVER_DEV SERVER_SOCK CLIENT_DEV CLIENT_SOCK DEST SERVER-ARGS... -- CLIENT-ARGS...
PAIR_REPORT_RE="bytes in|usec/iter|^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+"
PAIR_REPORT_LINES=20
pair() {
  local name=$1 t=$2 sdev=$3 ssock=$4 cdev=$5 csock=$6 dest=$7
  shift 7
  apps_pair "$name" "$t" "$NA" "$sdev" "$ssock" "$NA" "$cdev" "$csock" "$dest" "$@"
}

G1=(-d burst0 -g 1)
G0=(-d burst0 -g 0)
P=(-d burst0 -x 1 -F --report_gbits)
# The suite on one device: client and server both on burst0 of SOCK.
one_device_suite() {  # TAG SOCK
  local tag=$1 s=$2 d=l0 ip=10.46.0.1
  pair "$tag-rc_pingpong" 60 $d "$s" $d "$s" $ip ibv_rc_pingpong "${G1[@]}" -n 200 -- \
    ibv_rc_pingpong "${G1[@]}" -n 200
  pair "$tag-rc_pingpong_ll" 60 $d "$s" $d "$s" $ip ibv_rc_pingpong "${G0[@]}" -n 200 -- \
    ibv_rc_pingpong "${G0[@]}" -n 200
  pair "$tag-ud_pingpong" 60 $d "$s" $d "$s" $ip ibv_ud_pingpong "${G1[@]}" -n 200 -- \
    ibv_ud_pingpong "${G1[@]}" -n 200
  pair "$tag-write_bw" 120 $d "$s" $d "$s" $ip ib_write_bw "${P[@]}" -s 65536 -n 500 -- \
    ib_write_bw "${P[@]}" -s 65536 -n 500
  pair "$tag-write_bw_ll" 120 $d "$s" $d "$s" $ip ib_write_bw -d burst0 -x 0 -F -s 65536 -n 200 -- \
    ib_write_bw -d burst0 -x 0 -F -s 65536 -n 200
  pair "$tag-read_bw" 120 $d "$s" $d "$s" $ip ib_read_bw "${P[@]}" -s 65536 -n 500 -- \
    ib_read_bw "${P[@]}" -s 65536 -n 500
  pair "$tag-send_bw" 120 $d "$s" $d "$s" $ip ib_send_bw "${P[@]}" -s 65536 -n 500 -- \
    ib_send_bw "${P[@]}" -s 65536 -n 500
  pair "$tag-atomic_bw" 120 $d "$s" $d "$s" $ip ib_atomic_bw "${P[@]}" -n 500 -- \
    ib_atomic_bw "${P[@]}" -n 500
  pair "$tag-write_lat" 120 $d "$s" $d "$s" $ip ib_write_lat "${P[@]}" -s 8 -n 500 -- \
    ib_write_lat "${P[@]}" -s 8 -n 500
}

# check_looped TAG SOCK P0_RX_BEFORE: frames looped, none to the wire.
check_looped() {
  local looped full rx_now tx
  looped=$(counter "$2" worker.looped)
  full=$(counter "$2" worker.loop_full)
  tx=$(counter "$2" "$TX_FRAMES")
  rx_now=$(p0_rx)
  echo "$1: worker.looped=$looped worker.loop_full=$full $TX_FRAMES=$tx p0 rx $3 -> $rx_now" |
    tee -a "$REPORT"
  [[ ${looped:-0} -gt 1000 ]] || FAILED+=("$1-not-looped")
  [[ ${tx:-1} -eq 0 ]] || FAILED+=("$1-wire-frames")
  # p0 may see the kernel's own chatter (IPv6 router/neighbour solicitations),
  # never thousands of RoCE frames.
  (((rx_now - $3) < 100)) || FAILED+=("$1-p0-received")
}

has() { local p; for p in "${PARTS[@]}"; do [[ $p == "$1" ]] && return 0; done; return 1; }

for w in 1 2; do
  tag=$([[ $w == 1 ]] && echo one || echo two)
  has "$tag" || continue
  log "== one device, workers=$w"
  S="$TMP/$tag.sock"
  start_burstd l0 "$S" "$TMP/burstd-$tag.log" "$w"
  rx0=$(p0_rx)
  one_device_suite "$tag" "$S"
  check_looped "$tag" "$S" "$rx0"
  if [[ $w == 1 && -n ${BURST_AH_PROBE:-} ]]; then
    # A consumer's AH probing (UCX's GID choice): own GIDs resolve; 3 x 100 failures
    # answer with their errno, and burstd logs one line for the unreachable kind.
    log "one: address-handle probing"
    nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout 120 "$BURSTCTL" run --netdev l0 \
      --socket "$S" -- "$BURST_AH_PROBE" 100 192.0.2.1 >"$TMP/ah_probe" 2>&1 || {
      cat "$TMP/ah_probe"; FAILED+=(ah_probe); }
    lines=$(grep -c "CREATE_AH" "$TMP/burstd-$tag.log")
    echo "one: ah_probe: $(tail -1 "$TMP/ah_probe"); burstd CREATE_AH log lines: $lines" | tee -a "$REPORT"
    [[ $lines -eq 1 ]] || { grep CREATE_AH "$TMP/burstd-$tag.log" | head -5; FAILED+=(ah_probe-log-lines); }
  fi
  if [[ $w == 2 ]]; then
    # Both workers carried traffic, so frames crossed between them.
    for k in 0 1; do
      lk=$("$BURSTCTL" --socket "$S" counters --all --worker $k | awk '$1 == "worker.looped" { print $2 }')
      echo "two: worker $k looped=$lk" | tee -a "$REPORT"
      [[ ${lk:-0} -gt 0 ]] || FAILED+=("two-worker$k-idle")
    done
  fi
  stop_burstd "$BURSTD_PID" "$S"
done

if has bridge; then
  log "== two burstd in one namespace, l0 -> bridge -> l1"
  S0="$TMP/b0.sock" S1="$TMP/b1.sock"
  start_burstd l0 "$S0" "$TMP/burstd-b0.log" 1
  pid0=$BURSTD_PID
  start_burstd l1 "$S1" "$TMP/burstd-b1.log" 1
  pid1=$BURSTD_PID
  # server on burst1 (l1, 10.46.0.2), client on burst0 (l0)
  pair bridge-write_bw 120 l1 "$S1" l0 "$S0" 10.46.0.2 ib_write_bw "${P[@]}" -s 65536 -n 500 -- \
    ib_write_bw "${P[@]}" -s 65536 -n 500
  pair bridge-rc_pingpong 60 l1 "$S1" l0 "$S0" 10.46.0.2 ibv_rc_pingpong "${G1[@]}" -n 200 -- \
    ibv_rc_pingpong "${G1[@]}" -n 200
  for s in "$S0" "$S1"; do
    tx=$(counter "$s" "$TX_FRAMES")
    looped=$(counter "$s" worker.looped)
    echo "bridge $(basename "$s"): $TX_FRAMES=$tx worker.looped=$looped" | tee -a "$REPORT"
    [[ ${tx:-0} -gt 1000 ]] || FAILED+=("bridge-$(basename "$s")-no-wire")
    [[ ${looped:-1} -eq 0 ]] || FAILED+=("bridge-$(basename "$s")-looped")
  done
  stop_burstd "$pid1" "$S1"
  stop_burstd "$pid0" "$S0"
fi

echo "=== figures"
cat "$REPORT"
for f in "$TMP"/burstd-*.log; do
  if grep -qiE "error|assert" "$f"; then
    echo "--- $f (errors):"; grep -iE "error|assert" "$f" | head -20
  fi
done
if [[ ${#FAILED[@]} -ne 0 ]]; then
  for f in "$TMP"/burstd-*.log; do echo "--- $f:"; tail -20 "$f"; done
  fail "failed: ${FAILED[*]}"
fi
echo "PASS"
