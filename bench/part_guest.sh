#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# bench/run.sh part "guest": Linux rxe against burst under the same emulation. Two identical
# Debian 6.1 guests (tests/interop/lib/guest.sh: QEMU, 1 vCPU, 512 MB each) on a bridge in a
# private namespace; netdev MTU 3800 (the 6.1 guest's AF_XDP takes one 4 KB chunk per frame: at
# most 3840 bytes with the kernel's headroom, so no multi-buffer), RoCE MTU 2048 for everyone:
#   raw    xsk-raw sender (g1) -> receiver (g2) on the guests' virtio_net, native XDP,
#          2106-byte frames (a WRITE_MIDDLE at MTU 2048): the guests' AF_XDP ceiling
#   rxe    ib_write_bw / ib_write_lat on rdma_rxe (perftest; server g2, client g1)
#   burst  burst-xfer (AF_XDP in the guests, one worker), same sizes, one QP
# burst-xfer, xsk-raw and the libraries they need go into the guest image as a second initramfs
# archive appended to the interop one (the kernel unpacks both); the interop image is not changed.
# Environment: BUILD RESULTS LOGDIR RUNS SECS QUICK; BENCH_GUEST_SIZES (default 65536 1048576,
# quick 65536), BENCH_GUEST_SECS (seconds per run); INTEROP_* settings of guest.sh. Exit: 0 done, 77 skipped (reason), 1 failed.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
source "$HERE/../tests/interop/lib/guest.sh"

part_setup guest
for b in "$X" "$XSK"; do [[ -x $b ]] || ifail "missing $b (build it first)"; done
if [[ $QUICK == 1 ]]; then
  SIZES=${BENCH_GUEST_SIZES:-65536}
  LAT_ITERS=1000
else
  SIZES=${BENCH_GUEST_SIZES:-65536 1048576}
  LAT_ITERS=5000
fi
# Emulated guests: setup dominates short runs, and the emulator is noisy: at least 3 s (quick)
# or 5 s per run.
if [[ $QUICK == 1 ]]; then GMIN=3; else GMIN=5; fi
GSECS=${BENCH_GUEST_SECS:-$((SECS < GMIN ? GMIN : SECS))}
NETDEV_MTU=3800
ROCE_MTU=2048
FRAME=$((ROCE_MTU + 58))
G1_IP=10.99.0.11
G2_IP=10.99.0.12
G2_MAC=52:54:00:99:00:$(printf '%02x' 12)  # guest_start: 52:54:00:99:00:<last octet>

interop_require
interop_prepare

# The bench archive: /opt/burst/{burst-xfer,xsk-raw} (debug info stripped) and their libraries
# at the paths ldd names. Built per run (seconds), never into the shared interop cache.
WORK=$(mktemp -d /tmp/burst-bench-guest.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
build_bench_archive() {
  local root=$WORK/root f lib
  mkdir -p "$root/opt/burst"
  for f in "$X" "$XSK"; do
    objcopy --strip-debug "$f" "$root/opt/burst/$(basename "$f")" || return 1
    for lib in $(ldd "$f" | grep -oE '/[^ ]+\.so[^ ]*'); do
      mkdir -p "$root$(dirname "$lib")"
      [[ -e $root$lib ]] || cp -L "$lib" "$root$lib" || return 1
    done
  done
  (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$WORK/bench.cpio.gz" || return 1
  cat "$INTEROP_INITRD" "$WORK/bench.cpio.gz" >"$WORK/initrd.cpio.gz"
}
build_bench_archive || ifail "cannot build the guest archive with burst-xfer"
INTEROP_INITRD=$WORK/initrd.cpio.gz
export INTEROP_INITRD

interop_netns_up
guest_cleanup() {
  local rc=$?
  interop_cleanup
  rm -rf "$WORK"
  return $rc
}
trap guest_cleanup EXIT
# Bounded as a whole: boot (TCG) plus every run with its setup.
NSIZES=$(wc -w <<<"$SIZES")
interop_deadline $((300 + RUNS * (GSECS + 15 + NSIZES * 2 * (GSECS + 25) + 2 * (GSECS + 30))))

T0=$SECONDS
guest_start g1 $G1_IP $NETDEV_MTU || iskip "cannot boot a guest here ($(interop_accel)); see the console log above"
BOOT1=$GUEST_BOOT_SECONDS
guest_start g2 $G2_IP $NETDEV_MTU || ifail "the second guest did not boot"
BOOT2=$GUEST_BOOT_SECONDS
guest_run g1 "ping -c 1 -W 5 $G2_IP >/dev/null" || ifail "g1 cannot reach g2 over the bridge"
guest_run g1 "/opt/burst/xsk-raw --mode probe" >"$LOG/probe" 2>&1 ||
  iskip "AF_XDP unusable in the guest: $(tail -1 "$LOG/probe")"
jrec part=guest_info accel="$(interop_accel)" boot_s_g1="$BOOT1" boot_s_g2="$BOOT2" \
  kernel="$INTEROP_KVER" mem_mb="$INTEROP_MEM" smp="$INTEROP_SMP" netdev_mtu=$NETDEV_MTU \
  roce_mtu=$ROCE_MTU frame=$FRAME
blog "guests up: g1 $BOOT1 s, g2 $BOOT2 s ($(interop_accel))"

SHARE1=$INTEROP_RUN/guest-g1/share

# guest_pair F SECS SERVER_CMD CLIENT_CMD: SERVER_CMD on g2, then (once it listens, or after 30 s)
# CLIENT_CMD on g1 into F.cli, then the server's output into F.srv; each bounded by SECS.
guest_pair() {
  local f=$1 secs=$2 id
  id=$(guest_spawn -t "$secs" g2 "$3")
  guest_wait_listen g2 18515 30 || true
  guest_run -t "$secs" g1 "$4" >"$f.cli" 2>&1
  guest_wait g2 "$id" >"$f.srv" 2>&1
}

raw_run() {  # RUN
  local r=$1 f=$LOG/raw-$1 id
  local rxcmd="/opt/burst/xsk-raw --netdev eth0 --mode rx --queues 0 --frames 4096 --backoff-us 200 --xdp-mode native --duration $((GSECS + 6))"
  local txcmd="/opt/burst/xsk-raw --netdev eth0 --mode tx --queues 0 --frames 4096 --xdp-mode native --size $FRAME --duration $GSECS --dst-mac $G2_MAC"
  id=$(guest_spawn -t $((GSECS + 30)) g2 "$rxcmd")
  sleep 3
  guest_run -t $((GSECS + 30)) g1 "$txcmd" >"$f.tx" 2>&1
  guest_wait g2 "$id" >"$f.rx" 2>&1
  bench_cmd "guest raw AF_XDP receiver (g2)" "$rxcmd"
  bench_cmd "guest raw AF_XDP sender (g1)" "$txcmd"
  local txg rxg payload err=""
  txg=$(sfield "$f.tx" 'tx total' gbps)
  rxg=$(sfield "$f.rx" 'rx total' gbps)
  [[ -n $txg ]] || err="sender: $(tail -1 "$f.tx")"
  payload=$(awk -v g="${rxg:-0}" -v m=$ROCE_MTU -v fr=$FRAME 'BEGIN {printf "%.4f", g * m / fr}')
  jrec part=guest impl=raw run="$r" size=$FRAME tx_gbps="${txg:-}" rx_gbps="${rxg:-}" \
    payload_gbps="$payload" tx_pps="$(sfield "$f.tx" 'tx total' pps)" \
    rx_pps="$(sfield "$f.rx" 'rx total' pps)" rx_drops="$(sfield "$f.rx" 'queue 0:' k_rx_dropped)" \
    ${err:+error="$err"}
  blog "guest raw run=$r: tx ${txg:-?} rx ${rxg:-?} Gbit/s (payload at rx $payload)"
}

rxe_bw_run() {  # SIZE RUN
  local size=$1 r=$2 f=$LOG/rxe-bw-$1-$2
  local cmd="ib_write_bw -d rxe0 -x 1 -F -m $ROCE_MTU -s $size -D $GSECS --report_gbits"
  guest_pair "$f" $((GSECS + 60)) "$cmd" "$cmd $G2_IP"
  bench_cmd "guest rxe ib_write_bw server (g2) / client (g1, + server address)" "$cmd"
  local g err=""
  g=$(awk -v s="$size" '$1 == s && NF >= 5 {print $4}' "$f.cli" | tail -1)
  [[ -n $g ]] || err=$(last_line "$f.cli")
  jrec part=guest impl=rxe op=write size="$size" run="$r" gbps="${g:-}" ${err:+error="$err"}
  blog "guest rxe write size=$size run=$r: ${g:-FAILED} Gbit/s"
}

burst_bw_run() {  # SIZE RUN
  local size=$1 r=$2 f=$LOG/burst-bw-$1-$2
  local scmd="/opt/burst/burst-xfer --backend xdp --netdev eth0 --xdp-mode native --frames 4096"
  local ccmd="$scmd --op write --size $size --qps 1 --depth 16 --mtu $ROCE_MTU --duration $GSECS $G2_IP"
  guest_pair "$f" $((GSECS + 60)) "$scmd" "$ccmd"
  bench_cmd "guest burst-xfer server (g2)" "$scmd"
  bench_cmd "guest burst-xfer goodput client (g1)" "$ccmd"
  local g err=""
  g=$(sfield "$f.cli" '^burst-xfer' goodput)
  [[ -n $g ]] || err=$(pair_error "$f.cli" "$f.srv")
  jrec part=guest impl=burst op=write size="$size" run="$r" gbps="${g:-}" \
    drops="$(sfield "$f.cli" '^burst-xfer' drops)" xdp="$(sfield "$f.cli" '^burst-xfer' xdp)" \
    ${err:+error="$err"}
  blog "guest burst write size=$size run=$r: ${g:-FAILED} Gbit/s${err:+ ($err)}"
}

rxe_lat_run() {  # RUN
  local r=$1 f=$LOG/rxe-lat-$1
  local cmd="ib_write_lat -d rxe0 -x 1 -F -m $ROCE_MTU -s 8 -n $LAT_ITERS"
  guest_pair "$f" 120 "$cmd" "$cmd $G2_IP"
  bench_cmd "guest rxe ib_write_lat server (g2) / client (g1, + server address)" "$cmd"
  # #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
  local line p50="" p99="" err=""
  line=$(awk '$1 == 8 && NF >= 9' "$f.cli" | tail -1)
  [[ -n $line ]] && read -r _ _ _ _ p50 _ _ p99 _ <<<"$line"
  [[ -n $p50 ]] || err=$(last_line "$f.cli")
  jrec part=guest_lat impl=rxe op=write size=8 run="$r" p50_us="$p50" p99_us="$p99" \
    ${err:+error="$err"}
  blog "guest rxe write_lat run=$r: typical ${p50:-?} us, 99% ${p99:-?} us"
}

burst_lat_run() {  # RUN
  local r=$1 f=$LOG/burst-lat-$1
  local scmd="/opt/burst/burst-xfer --backend xdp --netdev eth0 --xdp-mode native --frames 4096"
  local ccmd="$scmd --op write --size 8 --qps 1 --depth 1 --mtu $ROCE_MTU --duration $GSECS --lat-out /host/lat-$r.samples $G2_IP"
  guest_pair "$f" $((GSECS + 60)) "$scmd" "$ccmd"
  bench_cmd "guest burst-xfer latency client (g1)" "$ccmd"
  local p50 p99 q="[]" err=""
  p50=$(sfield "$f.cli" '^burst-xfer' p50)
  p99=$(sfield "$f.cli" '^burst-xfer' p99)
  [[ -n $p50 ]] || err=$(last_line "$f.cli")
  if [[ -s $SHARE1/lat-$r.samples ]]; then
    mv "$SHARE1/lat-$r.samples" "$f.samples"
    q=$(quantiles "$f.samples")
  fi
  jrec part=guest_lat impl=burst op=write size=8 run="$r" p50_us="${p50:-}" p99_us="${p99:-}" \
    quantiles_us="$q" ${err:+error="$err"}
  blog "guest burst write latency run=$r: p50 ${p50:-?} us p99 ${p99:-?} us"
}

for ((r = 1; r <= RUNS; r++)); do
  raw_run "$r"
  for size in $SIZES; do
    rxe_bw_run "$size" "$r"
    burst_bw_run "$size" "$r"
  done
  rxe_lat_run "$r"
  burst_lat_run "$r"
done
blog "guest part done in $((SECONDS - T0)) s (after the image build)"
exit 0
