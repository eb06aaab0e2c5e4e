#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/run.sh part "host": everything that runs on one veth pair (4 queues each side) between two
# private network namespaces, side by side in one run:
#   raw    tools/xsk-raw: one AF_XDP sender thread (side A) and one receiver thread (side B) on
#          queue 0, frames the size of burst's WRITE_MIDDLE frames: the link's user-space ceiling
#   goodput  burst-xfer (one worker each side) WRITE/READ/SEND x message sizes x 1 and 8 QPs x
#          RoCE MTU 1024 (1500-byte link) and 4096 (9000-byte link)
#   latency  burst-xfer 8-byte WRITE and SEND, one message in flight (post to completion); kernel
#          UDP ping-pong (tools/udp-pingpong) busy-polling and blocking, 8 bytes
#   tcp    iperf3, one stream, without and with burst's XDP program attached on both ends
# Side A runs on CPU 0, side B on CPU 1 (taskset; BENCH_PIN=0 turns it off). Every process is
# bounded by `timeout`; CPU time (user + system) of both sides comes from /usr/bin/time (wait4
# rusage of each process tree; softirq work done in ksoftirqd is not included).
# Environment: BUILD RESULTS LOGDIR RUNS SECS QUICK (see bench/run.sh); BENCH_SIZES, BENCH_OPS,
# BENCH_QPS, BENCH_MTUS override the goodput matrix; BENCH_HOST_PARTS (raw goodput latency tcp).
# Exit: 0 done, 77 skipped (reason on stdout), 1 failed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/../tests/netns/lib.sh"

part_setup host

netns_require_root "network namespaces, XDP, AF_XDP"
netns_require_tools "iproute2 util-linux coreutils time" ip nsenter timeout taskset /usr/bin/time
for b in "$X" "$XSK" "$UPP"; do [[ -x $b ]] || fail "missing $b (build it first)"; done
"$XSK" --mode probe >/dev/null || skip "AF_XDP unavailable: $("$XSK" --mode probe)"

if [[ $QUICK == 1 ]]; then
  SIZES=${BENCH_SIZES:-4096 1048576}
else
  SIZES=${BENCH_SIZES:-4096 65536 1048576 16777216}
fi
OPS=${BENCH_OPS:-write read send}
QPS_SET=${BENCH_QPS:-1 8}
MTUS=${BENCH_MTUS:-1024 4096}
PARTS=${BENCH_HOST_PARTS:-raw goodput latency tcp}
IP_A=10.57.0.1
IP_B=10.57.0.2

netns_pair burst-bench
host_cleanup() {
  local p
  # Children first: /usr/bin/time would otherwise leave `timeout` and the tool running.
  for p in "${BG_PIDS[@]}"; do pkill -TERM -P "$p" 2>/dev/null; done
  sleep 0.5
  netns_cleanup
}
trap host_cleanup EXIT

ip link add va netns "$NA" numrxqueues 4 numtxqueues 4 type veth \
  peer name vb netns "$NB" numrxqueues 4 numtxqueues 4 || fail "cannot create the veth pair"
inA ip link set lo up
inB ip link set lo up
inA ip addr add $IP_A/24 dev va
inB ip addr add $IP_B/24 dev vb
MAC_B=$(ip -n "$NB" link show dev vb | awk '/link\/ether/ {print $2}')

PIN_A=()
PIN_B=()
if [[ ${BENCH_PIN:-1} == 1 && $(nproc) -ge 2 ]]; then
  PIN_A=(taskset -c 0)
  PIN_B=(taskset -c 1)
fi
NSA=(nsenter --net=/run/netns/"$NA")
NSB=(nsenter --net=/run/netns/"$NB")

LINK_MTU=0
set_link() {  # LINK_MTU
  [[ $LINK_MTU == "$1" ]] && return 0
  inA ip link set va mtu "$1" up
  inB ip link set vb mtu "$1" up
  LINK_MTU=$1
  sleep 0.5
  if command -v ping >/dev/null; then inA ping -c 1 -W 2 $IP_B >/dev/null 2>&1; fi
}
link_of() { [[ $1 == 4096 ]] && echo 9000 || echo 1500; }
frame_of() { echo $(($1 + 58)); }  # WRITE_MIDDLE: Ethernet 14, IPv4 20, UDP 8, BTH 12, payload, ICRC 4

# Every measured process runs in the background (so that a signal reaches this script's trap
# within 0.1 s) and is waited for with a bound. spawn CMD... starts one and sets BG (its PID).
spawn() {
  "$@" &
  BG=$!
  BG_PIDS+=("$BG")
}
# wait_bounded PID SECONDS: wait for a process started by spawn; stop it (TERM to its children,
# then KILL) when it outlives the bound; forget its PID once reaped.
wait_bounded() {
  local pid=$1 secs=$2 i keep=()
  for ((i = 0; i < secs * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    pkill -TERM -P "$pid" 2>/dev/null
    sleep 1
    kill -9 "$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null
  for i in "${BG_PIDS[@]}"; do [[ $i == "$pid" ]] || keep+=("$i"); done
  BG_PIDS=("${keep[@]}")
}

# pair_run SRV CLI CLI_OUT SRV_SECS CLI_SECS GAP SRV_WAIT SRV_CMD CLI_CMD: the command in the array
# named SRV_CMD in side B (output SRV, CPU time SRV.cpu; `timeout` SRV_SECS), GAP seconds later the
# one named CLI_CMD in side A (CPU time CLI.cpu; output CLI, or CLI_OUT with errors in CLI.err when
# CLI_OUT is not empty; `timeout` CLI_SECS); waits for the client (CLI_SECS + 10 s at most), then for
# the server (SRV_WAIT s at most).
pair_run() {
  local srv=$1 cli=$2 cli_out=$3 srv_secs=$4 cli_secs=$5 gap=$6 srv_wait=$7 spid
  local -n srv_cmd=$8 cli_cmd=$9
  spawn "${TIMEF[@]}" "$srv.cpu" timeout -k 5 "$srv_secs" "${NSB[@]}" "${PIN_B[@]}" "${srv_cmd[@]}" \
    >"$srv" 2>&1
  spid=$BG
  sleep "$gap"
  if [[ -n $cli_out ]]; then
    spawn "${TIMEF[@]}" "$cli.cpu" timeout -k 5 "$cli_secs" "${NSA[@]}" "${PIN_A[@]}" "${cli_cmd[@]}" \
      >"$cli_out" 2>"$cli.err"
  else
    spawn "${TIMEF[@]}" "$cli.cpu" timeout -k 5 "$cli_secs" "${NSA[@]}" "${PIN_A[@]}" "${cli_cmd[@]}" \
      >"$cli" 2>&1
  fi
  wait_bounded "$BG" $((cli_secs + 10))
  wait_bounded "$spid" "$srv_wait"
}

# ---------------------------------------------------------------------------------------------
# Raw AF_XDP: xsk-raw tx (A, queue 0) -> veth -> roce_steer -> xsk-raw rx (B, queue 0).
raw_run() {  # MTU RUN
  local mtu=$1 r=$2 frame f
  frame=$(frame_of "$mtu")
  f=$LOG/raw-$mtu-$r
  # The receiver sleeps 200 us after 1000 empty polls, so its CPU time before and after the
  # sender's run stays small; while frames arrive it polls without pause.
  local rxcmd=("$XSK" --netdev vb --mode rx --queues 0 --frames 16384 --backoff-us 200
               --duration $((SECS + 2)))
  local txcmd=("$XSK" --netdev va --mode tx --queues 0 --frames 16384 --size "$frame"
               --duration "$SECS" --dst-mac "$MAC_B")
  pair_run "$f.rx" "$f.tx" "" $((SECS + 20)) $((SECS + 20)) 1 25 rxcmd txcmd
  bench_cmd "raw AF_XDP receiver (side B)" "${NSB[*]} ${PIN_B[*]} ${rxcmd[*]}"
  bench_cmd "raw AF_XDP sender (side A)" "${NSA[*]} ${PIN_A[*]} ${txcmd[*]}"
  local txg rxg pps bytes secs err=""
  txg=$(sfield "$f.tx" 'tx total' gbps)
  rxg=$(sfield "$f.rx" 'rx total' gbps)
  pps=$(sfield "$f.tx" 'tx total' pps)
  bytes=$(sfield "$f.tx" 'tx total' bytes)
  secs=$(sfield "$f.tx" 'tx total' seconds)
  [[ -n $txg ]] || err="sender: $(tail -1 "$f.tx")"
  local payload
  # The ceiling is what arrives: the receiver's rate when it is lower (the
  # sender may outrun the receiving socket, which then counts drops).
  payload=$(awk -v t="${txg:-0}" -v r="${rxg:-}" -v m="$mtu" -v fr="$frame" \
    'BEGIN {g = t; if (r != "" && r + 0 < g) g = r; printf "%.3f", g * m / fr}')
  jrec part=raw mtu="$mtu" link_mtu="$(link_of "$mtu")" frame="$frame" run="$r" \
    tx_gbps="${txg:-}" rx_gbps="${rxg:-}" payload_gbps="$payload" tx_pps="${pps:-}" \
    bytes="${bytes:-0}" seconds="${secs:-0}" cpu_tx="$(cpu_secs "$f.tx.cpu")" \
    cpu_rx="$(cpu_secs "$f.rx.cpu")" rx_drops="$(sfield "$f.rx" 'queue 0:' k_rx_dropped)" \
    ${err:+error="$err"}
  blog "raw mtu=$mtu run=$r: tx ${txg:-?} Gbit/s (payload $payload), rx ${rxg:-?}"
}

# ---------------------------------------------------------------------------------------------
# burst-xfer: server in B, client in A. Sets XFER_OUT to the client's output file.
xfer_run() {  # TAG RUN CLIENT_ARGS...
  local tag=$1 r=$2 f
  shift 2
  f=$LOG/$tag-$r
  # --spin: each side has a core of its own (taskset), and polls it like the
  # busy-polling UDP baseline instead of yielding when idle.
  local scmd=("$X" --backend xdp --netdev vb --spin)
  local ccmd=("$X" --backend xdp --netdev va --spin "$@" "$IP_B")
  pair_run "$f.srv" "$f.cli" "" $((SECS + 60)) $((SECS + 50)) 0.3 15 scmd ccmd
  XFER_OUT=$f.cli
  XFER_CPU=$(awk -v a="$(cpu_secs "$f.cli.cpu")" -v b="$(cpu_secs "$f.srv.cpu")" \
    'BEGIN {if (a != "" && b != "") printf "%.3f", a + b}')
  XFER_CMD_S="${NSB[*]} ${PIN_B[*]} ${scmd[*]}"
  XFER_CMD_C="${NSA[*]} ${PIN_A[*]} ${ccmd[*]}"
  XFER_ERR=""
  grep -q '^burst-xfer backend=' "$f.cli" ||
    XFER_ERR=$(pair_error "$f.cli" "$f.srv")
}

depth_of() {  # SIZE -> messages in flight per QP: at most 8 MB, between 1 and 64
  local d=$((8388608 / ($1 > 0 ? $1 : 1)))
  ((d > 64)) && d=64
  ((d < 1)) && d=1
  echo $d
}

goodput_run() {  # OP SIZE QPS MTU RUN
  local op=$1 size=$2 qps=$3 mtu=$4 r=$5 depth
  depth=$(depth_of "$size")
  xfer_run "gp-$op-$size-q$qps-m$mtu" "$r" --op "$op" --size "$size" --qps "$qps" \
    --depth "$depth" --mtu "$mtu" --duration "$SECS"
  bench_cmd "burst-xfer server (side B)" "$XFER_CMD_S"
  bench_cmd "burst-xfer goodput client (side A)" "$XFER_CMD_C"
  local g msgs t
  g=$(sfield "$XFER_OUT" '^burst-xfer' goodput)
  msgs=$(sfield "$XFER_OUT" '^burst-xfer' msgs)
  t=$(sfield "$XFER_OUT" '^burst-xfer' time)
  jrec part=goodput op="$op" size="$size" qps="$qps" mtu="$mtu" link_mtu="$(link_of "$mtu")" \
    depth="$depth" run="$r" gbps="${g:-}" msgs="${msgs:-0}" seconds="${t%s}" \
    bytes=$((${msgs:-0} * size)) cpu="$XFER_CPU" drops="$(sfield "$XFER_OUT" '^burst-xfer' drops)" \
    xsk_drops="$(sfield "$XFER_OUT" '^burst-xfer' xsk_drops)" ${XFER_ERR:+error="$XFER_ERR"}
  blog "goodput $op size=$size qps=$qps mtu=$mtu run=$r: ${g:-FAILED} Gbit/s${XFER_ERR:+ ($XFER_ERR)}"
}

latency_burst_run() {  # OP RUN
  local op=$1 r=$2 samples=$LOG/lat-burst-$1-$2.samples
  xfer_run "lat-$op" "$r" --op "$op" --size 8 --qps 1 --depth 1 --mtu 1024 --duration "$SECS" \
    --lat-out "$samples"
  bench_cmd "burst-xfer latency client (side A)" "$XFER_CMD_C"
  local p50 p99 msgs q="[]"
  p50=$(sfield "$XFER_OUT" '^burst-xfer' p50)
  p99=$(sfield "$XFER_OUT" '^burst-xfer' p99)
  msgs=$(sfield "$XFER_OUT" '^burst-xfer' msgs)
  [[ -s $samples ]] && q=$(quantiles "$samples")
  jrec part=latency impl=burst op="$op" size=8 run="$r" p50_us="${p50:-}" p99_us="${p99:-}" \
    msgs="${msgs:-0}" quantiles_us="$q" cpu="$XFER_CPU" ${XFER_ERR:+error="$XFER_ERR"}
  blog "latency burst $op run=$r: p50 ${p50:-?} us p99 ${p99:-?} us"
}

latency_udp_run() {  # MODE(busy|blocking) RUN
  local mode=$1 r=$2 f busy=()
  f=$LOG/lat-udp-$mode-$r
  [[ $mode == busy ]] && busy=(--busy)
  local scmd=("$UPP" --server "${busy[@]}" --duration $((SECS + 30)))
  local ccmd=("$UPP" "$IP_B" --size 8 "${busy[@]}" --duration "$SECS" --samples "$f.samples")
  pair_run "$f.srv" "$f.cli" "" $((SECS + 40)) $((SECS + 30)) 0.3 10 scmd ccmd
  bench_cmd "udp-pingpong server (side B)" "${NSB[*]} ${PIN_B[*]} ${scmd[*]}"
  bench_cmd "udp-pingpong client (side A)" "${NSA[*]} ${PIN_A[*]} ${ccmd[*]}"
  local p50 p99 msgs q="[]" err=""
  p50=$(sfield "$f.cli" '^udp-pingpong size' p50)
  p99=$(sfield "$f.cli" '^udp-pingpong size' p99)
  msgs=$(sfield "$f.cli" '^udp-pingpong size' msgs)
  [[ -n $p50 ]] || err="$(tail -1 "$f.cli")"
  [[ -s $f.samples ]] && q=$(quantiles "$f.samples")
  jrec part=latency impl=udp op="$mode" size=8 run="$r" p50_us="${p50:-}" p99_us="${p99:-}" \
    msgs="${msgs:-0}" lost="$(sfield "$f.cli" '^udp-pingpong size' lost)" quantiles_us="$q" \
    ${err:+error="$err"}
  blog "latency udp $mode run=$r: p50 ${p50:-?} us p99 ${p99:-?} us"
}

# ---------------------------------------------------------------------------------------------
# Kernel TCP: iperf3 one stream A -> B, without / with burst's XDP program on both ends (two idle
# burst-xfer servers hold it: attached, AF_XDP sockets bound, no thread polling).
tcp_run() {  # LINK_MTU XDP(0|1) RUN
  local link=$1 xdp=$2 r=$3 f ha hb
  f=$LOG/tcp-$link-x$xdp-$r
  if [[ $xdp == 1 ]]; then
    spawn timeout -k 5 $((SECS + 60)) "${NSA[@]}" "$X" --backend xdp --netdev va --frames 1024 \
      >"$f.holdA" 2>&1
    ha=$BG
    spawn timeout -k 5 $((SECS + 60)) "${NSB[@]}" "$X" --backend xdp --netdev vb --frames 1024 \
      >"$f.holdB" 2>&1
    hb=$BG
    local i
    for ((i = 0; i < 50; i++)); do
      inA ip link show va | grep -q ' xdp' && inB ip link show vb | grep -q ' xdp' && break
      sleep 0.1
    done
  fi
  local attached
  attached=$(inB ip link show vb | grep -c ' xdp')
  local scmd=(iperf3 -s -1 -p 5201)
  local ccmd=(iperf3 -c "$IP_B" -p 5201 -t "$SECS" -J)
  pair_run "$f.srv" "$f.cli" "$f.json" $((SECS + 30)) $((SECS + 20)) 0.5 10 scmd ccmd
  if [[ $xdp == 1 ]]; then
    kill -TERM "$ha" "$hb" 2>/dev/null  # timeout passes TERM on: burst-xfer detaches XDP
    wait_bounded "$ha" 5
    wait_bounded "$hb" 5
  fi
  bench_cmd "iperf3 server (side B)" "${NSB[*]} ${PIN_B[*]} ${scmd[*]}"
  bench_cmd "iperf3 client (side A)" "${NSA[*]} ${PIN_A[*]} ${ccmd[*]}"
  bench_cmd "XDP program holder for iperf3 with XDP (both sides, idle)" \
    "${NSB[*]} $X --backend xdp --netdev vb --frames 1024"
  local vals
  vals=$(/usr/bin/python3 -c '
import json, sys
try:
    e = json.load(open(sys.argv[1]))["end"]["sum_received"]
    print(e["bits_per_second"] / 1e9, e["bytes"], e["seconds"])
except Exception as ex:
    print("")' "$f.json")
  local g="" bytes=0 secs=0 err="" cpu
  [[ -n $vals ]] && read -r g bytes secs <<<"$vals"
  [[ -n $g ]] || err="iperf3: $(grep -o '"error":.*' "$f.json" | head -1)$(tail -1 "$f.cli.err")"
  cpu=$(awk -v a="$(cpu_secs "$f.cli.cpu")" -v b="$(cpu_secs "$f.srv.cpu")" \
    'BEGIN {if (a != "" && b != "") printf "%.3f", a + b}')
  jrec part=tcp link_mtu="$link" xdp="$xdp" xdp_attached="$attached" run="$r" gbps="$g" \
    bytes="$bytes" seconds="$secs" cpu="$cpu" ${err:+error="$err"}
  blog "tcp link=$link xdp=$xdp (attached=$attached) run=$r: ${g:-FAILED} Gbit/s"
}

# ---------------------------------------------------------------------------------------------
T0=$SECONDS
set_link 1500
has() { [[ " $PARTS " == *" $1 "* ]]; }
if has tcp && ! command -v iperf3 >/dev/null; then
  blog "no iperf3 (apt-get install iperf3): kernel TCP not measured"
  PARTS=${PARTS//tcp/}
fi
for part in $PARTS; do
  case $part in raw|goodput|latency|tcp) ;; *) fail "unknown host part '$part'" ;; esac
done
# Run r of every point, then run r + 1: a slow phase of the shared machine hits every point a
# little instead of one point a lot. Within a run, the raw ceiling, burst's points and kernel TCP
# on the same link follow each other, so their ratios compare neighbours in time.
for ((r = 1; r <= RUNS; r++)); do
  for mtu in $MTUS; do
    set_link "$(link_of "$mtu")"
    has raw && raw_run "$mtu" "$r"
    if has goodput; then
      for op in $OPS; do
        for size in $SIZES; do
          for qps in $QPS_SET; do goodput_run "$op" "$size" "$qps" "$mtu" "$r"; done
        done
      done
    fi
    if has tcp; then
      tcp_run "$LINK_MTU" 0 "$r"
      tcp_run "$LINK_MTU" 1 "$r"
    fi
  done
  if has latency; then
    set_link 1500
    latency_burst_run write "$r"
    latency_burst_run send "$r"
    latency_udp_run busy "$r"
    latency_udp_run blocking "$r"
  fi
done
blog "host part done in $((SECONDS - T0)) s"
exit 0
