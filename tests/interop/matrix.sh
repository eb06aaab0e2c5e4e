#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The interop matrix: unmodified rdma-core and perftest tools on both sides, burst (burstd over
# AF_XDP on $INTEROP_BURST_IF, tools under `burstctl run`) against Linux rxe in a guest (one per MTU):
#   tools      ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat ib_send_lat
#              ibv_rc_pingpong ibv_ud_pingpong
#   directions burst client -> rxe server ("b2r"), rxe client -> burst server ("r2b")
#   RoCE MTU   1024 (1500-byte links), 4096 (9000-byte links)
#   loss       none, 1% (netem on the guest's eth0: frames from rxe to burst)
# Each cell passes when both sides exit 0 (perftest and the pingpongs check completions; the
# pingpongs with -c also check the data). Results: a markdown table on stdout and in
# $INTEROP_RUN/matrix.md (kept with INTEROP_KEEP=1), one line per cell with the client's figure.
# Usage (root): tests/interop/matrix.sh [BUILD_DIR]
# Settings: MATRIX_TOOLS, MATRIX_DIRS ("b2r r2b"), MATRIX_MTUS ("1024 4096"), MATRIX_LOSS ("0 1"),
#   MATRIX_DEADLINE (s, default 3000), MATRIX_CAPTURE_DIR (keep the first MATRIX_CAPTURE_FRAMES (24)
#   RoCEv2 frames of each cell there, both directions: the golden fixtures of tests/fixtures/interop;
#   tcpdump is listening before the cell's tools start).
# Exit 0 = every cell passed, 77 = skipped, 1 = a cell failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
BUILD=${1:-$HERE/../../build/default}
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
TOOLS=${MATRIX_TOOLS:-"ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_write_lat ib_read_lat ib_send_lat ibv_rc_pingpong ibv_ud_pingpong"}
DIRS=${MATRIX_DIRS:-"b2r r2b"}
MTUS=${MATRIX_MTUS:-"1024 4096"}
LOSSES=${MATRIX_LOSS:-"0 1"}
GUEST_IP=$INTEROP_SUBNET.11
for b in "$BURSTD" "$BURSTCTL"; do [[ -x $b ]] || iskip "build $b first"; done
command -v ib_write_bw >/dev/null || iskip "perftest missing on the host (apt-get install perftest)"

interop_require
interop_prepare
interop_netns_up
interop_deadline "${MATRIX_DEADLINE:-3000}"
SOCK=$INTEROP_RUN/burstd.sock
RESULTS=$INTEROP_RUN/matrix.md
FAILED=()
BPID=

burstd_start() {
  nsenter --net="/run/netns/$INTEROP_NS" "$BURSTD" --backend xdp --netdev "$INTEROP_BURST_IF" ${MATRIX_BURSTD_ARGS:-} \
    --workers 1 --socket "$SOCK" >>"$INTEROP_RUN/burstd.log" 2>&1 &
  BPID=$!
  for _ in $(seq 100); do
    timeout 5 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$INTEROP_RUN/burstd.log"
  ifail "burstd did not start on $INTEROP_BURST_IF"
}
burstd_stop() {
  [[ -n $BPID ]] || return 0
  kill "$BPID" 2>/dev/null
  wait "$BPID" 2>/dev/null
  BPID=
}
# On any exit (a failed cell, the deadline): a capture and burstd run inside the namespace and
# would outlive its deletion; stop them before the harness's own cleanup.
matrix_cleanup() {
  local rc=$?
  [[ -n ${CAP_PID:-} ]] && { kill "$CAP_PID" 2>/dev/null; wait "$CAP_PID" 2>/dev/null; }
  burstd_stop
  (exit "$rc")
  interop_cleanup
}
trap matrix_cleanup EXIT
set_mtu() {  # link MTU on every link of the namespace's bridge
  innet ip link set "$INTEROP_BURST_IF" mtu "$1"
  innet ip link set iveth-br mtu "$1"
  innet ip link set ibr0 mtu "$1"
}
burst_run() {  # burstctl run in the namespace, bounded
  nsenter --net="/run/netns/$INTEROP_NS" env TMPDIR="$INTEROP_RUN" timeout 150 "$BURSTCTL" run \
    --netdev "$INTEROP_BURST_IF" --socket "$SOCK" -- "$@"
}
host_listening() {  # PORT: a TCP listener in the namespace
  local i
  for ((i = 0; i < 150; i++)); do
    innet ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
    sleep 0.2
  done
  return 1
}

# capture_start PCAP LOG: tcpdump on the bridge side of burst's veth, keeping the first
# MATRIX_CAPTURE_FRAMES RoCEv2 frames; returns once tcpdump reports "listening on" (the filter is
# attached: nothing the tool sends after this is missed) and sets CAP_PID. A short run (200 atomics
# take well under a second) used to finish before a fixed sleep was over, leaving an empty file.
CAP_PID=
capture_start() {
  local pcap=$1 log=$2 i
  : >"$log"
  # nsenter execs tcpdump: $! is tcpdump itself.
  nsenter --net="/run/netns/$INTEROP_NS" tcpdump -i iveth-br -nn -s 0 -U \
    -c "${MATRIX_CAPTURE_FRAMES:-24}" -w "$pcap" 'udp port 4791' 2>"$log" &
  CAP_PID=$!
  for ((i = 0; i < 300; i++)); do  # 30 s: tcpdump is slow to start under emulation load
    grep -q 'listening on' "$log" && return 0
    kill -0 "$CAP_PID" 2>/dev/null || break
    sleep 0.1
  done
  kill "$CAP_PID" 2>/dev/null
  wait "$CAP_PID" 2>/dev/null
  CAP_PID=
  return 1
}

# The command line of TOOL for SIDE (burst|rxe) at MTU.
cmdline() {
  local tool=$1 side=$2 mtu=$3 dev gid
  dev=$([[ $side == burst ]] && echo burst0 || echo rxe0)
  case $tool in
    ib_*_bw)
      local sz="-s 65536"
      [[ $tool == ib_atomic_bw ]] && sz=""
      echo "$tool -d $dev -x 1 -F --report_gbits $sz -n 200" ;;
    ib_*_lat) echo "$tool -d $dev -x 1 -F -s 8 -n 200" ;;
    ibv_rc_pingpong) echo "$tool -d $dev -g 1 -m $mtu -n 50 -c" ;;
    ibv_ud_pingpong) echo "$tool -d $dev -g 1 -s 512 -n 50" ;;
  esac
}
# The client's figure from its output.
figure() {
  local tool=$1 out=$2
  case $tool in
    ib_*_bw) awk '$1 ~ /^[0-9]+$/ && NF >= 5 {l = $4 " Gb/s avg"} END {print l}' "$out" ;;
    ib_*_lat) awk '$1 ~ /^[0-9]+$/ && NF >= 6 {l = "t_typical " $5 " us"} END {print l}' "$out" ;;
    *) grep -m1 -o '[0-9.]* usec/iter' "$out" ;;
  esac
}

cell() {  # TOOL DIR MTU LOSS
  local tool=$1 dir=$2 mtu=$3 loss=$4 c s rc_c rc_s out fig
  local name="$tool $dir mtu$mtu loss$loss"
  out=$INTEROP_RUN/cell-$tool-$dir-$mtu-$loss
  if [[ $tool == ibv_ud_pingpong && $loss != 0 ]]; then
    # UD is unreliable and the tool never resends: one lost datagram stalls it for good.
    echo "| $tool | $dir | $mtu | $loss% | n/a (UD: the tool waits forever for a lost datagram) | |" |
      tee -a "$RESULTS"
    return 0
  fi
  local cap=
  if [[ -n ${MATRIX_CAPTURE_DIR:-} ]]; then
    mkdir -p "$MATRIX_CAPTURE_DIR"
    capture_start "$MATRIX_CAPTURE_DIR/${tool}_${dir}_mtu${mtu}.pcap" "$out.tcpdump" ||
      ifail "$name: tcpdump did not start listening (see $out.tcpdump)"
    cap=$CAP_PID
  fi
  if [[ $dir == b2r ]]; then
    s=$(guest_spawn -t 150 "$G" "$(cmdline "$tool" rxe "$mtu")")
    guest_wait_listen "$G" 18515 30
    # shellcheck disable=SC2046
    burst_run $(cmdline "$tool" burst "$mtu") "$GUEST_IP" >"$out.client" 2>&1
    rc_c=$?
    guest_wait "$G" "$s" >"$out.server" 2>&1
    rc_s=$?
  else
    # shellcheck disable=SC2046
    nsenter --net="/run/netns/$INTEROP_NS" env TMPDIR="$INTEROP_RUN" timeout 150 "$BURSTCTL" run \
      --netdev "$INTEROP_BURST_IF" --socket "$SOCK" -- $(cmdline "$tool" burst "$mtu") \
      >"$out.server" 2>&1 &
    local sp=$!
    host_listening 18515
    guest_run -t 150 "$G" "$(cmdline "$tool" rxe "$mtu") $INTEROP_HOST_IP" >"$out.client" 2>&1
    rc_c=$?
    wait "$sp"
    rc_s=$?
  fi
  if [[ -n $cap ]]; then
    kill "$cap" 2>/dev/null
    wait "$cap" 2>/dev/null
    CAP_PID=
    # tcpdump's summary ("N packets captured") is on its stderr after it exits.
    ilog "capture $tool $dir mtu$mtu: $(grep -m1 'packets captured' "$out.tcpdump")"
  fi
  fig=$(figure "$tool" "$out.client")
  if [[ $rc_c -eq 0 && $rc_s -eq 0 ]]; then
    echo "| $tool | $dir | $mtu | $loss% | pass | $fig |" | tee -a "$RESULTS"
  else
    echo "| $tool | $dir | $mtu | $loss% | FAIL (client $rc_c, server $rc_s) | $fig |" | tee -a "$RESULTS"
    FAILED+=("$name")
    { echo "=== $name client:"; tail -15 "$out.client"; echo "=== server:"; tail -15 "$out.server"; } >&2
  fi
}

echo "| tool | direction | RoCE MTU | loss | result | client's figure |" | tee "$RESULTS"
echo "|---|---|---|---|---|---|" | tee -a "$RESULTS"
for mtu in $MTUS; do
  link=$([[ $mtu == 4096 ]] && echo 9000 || echo 1500)
  set_mtu "$link"
  # A fresh guest (and name: a guest's run directory is not reused) per link MTU.
  G=vm$mtu
  guest_start "$G" "$GUEST_IP" "$link" || iskip "cannot boot a guest here; see the console log above"
  guest_run "$G" "ping -c 1 -W 5 $INTEROP_HOST_IP >/dev/null" || ifail "the guest cannot reach burst"
  burstd_start
  for loss in $LOSSES; do
    if [[ $loss != 0 ]]; then
      guest_run "$G" "tc qdisc add dev eth0 root netem loss ${loss}%" || ifail "netem in the guest"
    fi
    for tool in $TOOLS; do
      for dir in $DIRS; do cell "$tool" "$dir" "$mtu" "$loss"; done
    done
    [[ $loss != 0 ]] && guest_run "$G" "tc qdisc del dev eth0 root" >/dev/null
  done
  echo "--- rxe counters (MTU $mtu): $(guest_run "$G" 'rdma statistic show link rxe0/1' | tr ' ' '\n' |
    paste - - | grep -vE '\s0$' | tr '\n' ' ')"
  burstd_stop
  guest_stop "$G"
  INTEROP_GUESTS=()
done
echo "date $(date -u +%F), $(nproc) cores, accel $(interop_accel), $(uname -r)"
[[ ${#FAILED[@]} -eq 0 ]] || ifail "${#FAILED[@]} cell(s) failed: ${FAILED[*]}"
echo "PASS: every cell"
