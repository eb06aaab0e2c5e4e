#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Connection rate of the kernel's rdma_cm (Linux rxe) against burst, measured the same way between
# two guests of the same kind (issue 15: ">= 12x the kernel rdma_cm's rate measured the same way
# between two rxe guests"). Two Debian 6.1 guests (tests/interop/lib/guest.sh, 1 vCPU each, TCG
# unless KVM is usable) on the harness's bridge, the host's / shared read-only over 9p
# (INTEROP_HOST_ROOT=1): every tool is the host's own binary run in a chroot of it in the guest.
#   kernel  rdma_rxe on each guest's virtio-net (the harness's rxe0), the tool's server in g1,
#           its client in g2: the kernel's rdma_cm, ib_cm and rxe
#   burst   then the guests' RDMA stack is unloaded (rxe, ib_core: libibverbs would list devices over
#           netlink and never see burstctl run's sysfs tree) and burstd runs in each guest's chroot
#           on its virtio-net over AF_XDP (--backend xdp --netdev eth0); the same tool, same
#           arguments, under `burstctl run` (the shim serves /dev/infiniband/rdma_cm)
# Tools: stock `cmtime` (rdmacm-utils; `cmtime -p PORT` / `cmtime -s G1 -p PORT -c N`: every
# step issued for all N ids at once, timed per step) and bench/cm_rate when it is built
# (CMR_CM_RATE: its path; `cm_rate -s G1 -p PORT` / `cm_rate -c G1 -p PORT -n N -w W`: N
# connections, W in flight, established/s and p50/p99 setup latency, resolve_addr to ESTABLISHED).
# Each tool runs CMR_RUNS times per stack, a fresh server each run (the tools interleaved; the
# stacks are not: every kernel run comes before the guests' RDMA modules are unloaded for burst);
# the table shows medians (min-max) and burst/kernel ratios.
# cmtime's figures: "connect/s" = N / the connect step's total (REQ to ESTABLISHED for all N, the
# CM exchange alone); "setup/s" = N / (create id + resolve addr + resolve route + create qp +
# connect) totals, i.e. the whole client-side setup.
# Usage (root; not in CI): flock /work/guest.lock bench/cm_rate_guests.sh [BUILD_DIR]
# Settings: CMR_N (connections per run, 20), CMR_W (cm_rate window, 8), CMR_RUNS (3),
#   CMR_STACKS ("kernel burst"), CMR_DEADLINE (s, 1800), INTEROP_MEM (MiB, here 768).
# Output: the table on stdout and in $INTEROP_RUN/cm_rate.md (kept with INTEROP_KEEP=1).
# Exit 0 done, 77 skipped (no qemu / kernel image / tools), 1 failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export INTEROP_MEM=${INTEROP_MEM:-768}
source "$HERE/../tests/interop/lib/guest.sh"
BUILD=$(cd "${1:-$HERE/../build/default}" 2>/dev/null && pwd) || iskip "no build directory"
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
CM_RATE=${CMR_CM_RATE:-$BUILD/bench/cm_rate}
N=${CMR_N:-20}
W=${CMR_W:-8}
RUNS=${CMR_RUNS:-3}
STACKS=${CMR_STACKS:-"kernel burst"}
G1_IP=$INTEROP_SUBNET.11
G2_IP=$INTEROP_SUBNET.12
ROOT=/mnt/hostroot
for b in "$BURSTD" "$BURSTCTL"; do [[ -x $b ]] || iskip "build $b first"; done
command -v cmtime >/dev/null || iskip "missing cmtime on the host (apt-get install rdmacm-utils)"
TOOLS=(cmtime)
[[ -x $CM_RATE ]] && TOOLS+=(cm_rate)

interop_require
interop_prepare
export INTEROP_HOST_ROOT=1
interop_netns_up
interop_deadline "${CMR_DEADLINE:-1800}"
LOG=$INTEROP_RUN/cmr
mkdir -p "$LOG"
RESULTS=$INTEROP_RUN/cm_rate.md

# The guest's command line running CMD... in the host root (a clean environment).
in_root() { echo "chroot $ROOT /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp $*"; }
# Under burst, CMD... runs under burstctl run against the guest's burstd.
wrap() {  # STACK CMD...
  local s=$1
  shift
  if [[ $s == burst ]]; then
    in_root "$BURSTCTL run --netdev eth0 --socket /tmp/burstd.sock -- $*"
  else
    in_root "$*"
  fi
}

mount_root() {  # GUEST
  guest_run -t 60 "$1" "mkdir -p $ROOT &&
    mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot $ROOT &&
    mount -t proc proc $ROOT/proc && mount -t sysfs sysfs $ROOT/sys &&
    mount -t devtmpfs devtmpfs $ROOT/dev && mount -t tmpfs tmpfs $ROOT/dev/shm &&
    mount -t devpts devpts $ROOT/dev/pts && mount -t tmpfs tmpfs $ROOT/tmp &&
    mount -t tmpfs tmpfs $ROOT/run"
}

# The guest's RDMA stack out (module autoloading off first: the guest is disposable), burstd in.
burst_up() {  # GUEST
  local g=$1
  guest_run -t 60 "$g" "echo '' >/proc/sys/kernel/modprobe; rdma link delete rxe0 2>/dev/null
    for m in rdma_ucm ib_umad rdma_rxe rdma_cm iw_cm ib_cm ib_uverbs ib_core; do
      [ -d /sys/module/\$m ] && rmmod \$m; done
    [ ! -d /sys/module/ib_core ]" || ifail "$g: cannot unload the kernel's RDMA stack"
  guest_spawn -t "${CMR_DEADLINE:-1800}" "$g" \
    "$(in_root "$BURSTD" --backend xdp --netdev eth0 --workers 1 --socket /tmp/burstd.sock) >/tmp/burstd.log 2>&1" \
    >"$LOG/burstd-$g.id"
  guest_run -t 90 "$g" "i=0; while [ \$i -lt 300 ]; do
      $(in_root timeout 5 "$BURSTCTL" --socket /tmp/burstd.sock status) >/dev/null 2>&1 && exit 0
      i=\$((i + 1)); sleep 0.2; done; cat /tmp/burstd.log; exit 1" ||
    ifail "$g: burstd did not start on eth0 (AF_XDP)"
}

PORT=7470
# one STACK TOOL RUN: server in g1, client in g2; the client's output in $LOG/STACK-TOOL-RUN.cli.
one() {
  local s=$1 t=$2 r=$3 f=$LOG/$1-$2-$3 scmd ccmd id crc
  PORT=$((PORT + 1))
  if [[ $t == cmtime ]]; then
    scmd="cmtime -p $PORT"
    ccmd="cmtime -s $G1_IP -p $PORT -c $N"
  else
    scmd="$CM_RATE -s $G1_IP -p $PORT"
    ccmd="$CM_RATE -c $G1_IP -p $PORT -n $N -w $W"
  fi
  echo "$scmd / $ccmd" >"$LOG/cmd-$t"
  # The server lives until the client is done (killed then); rdma_cm listeners are invisible to
  # netstat, so the client starts after a pause and is retried once if it found no listener.
  id=$(guest_spawn -t 400 g1 "echo \$\$ >/tmp/srv.pid; exec $(wrap "$s" "$scmd")")
  sleep 4
  for _ in 1 2; do
    guest_run -t 300 g2 "$(wrap "$s" "timeout 280 $ccmd")" >"$f.cli" 2>&1
    crc=$?
    [[ $crc -ne 0 ]] && grep -qiE 'reject|refused' "$f.cli" && { sleep 4; continue; }
    break
  done
  guest_run -t 20 g1 "kill \$(cat /tmp/srv.pid) 2>/dev/null; sleep 1" >/dev/null
  guest_wait g1 "$id" >"$f.srv" 2>&1
  ilog "$s $t run $r: client exit $crc"
  [[ $crc -eq 0 ]] || { echo "=== $s $t run $r client ($crc):"; tail -15 "$f.cli"; } >&2
  echo "$crc" >"$f.rc"
}

# cmtime's per-step table -> "connect_per_s setup_per_s connect_us_per_conn"; cm_rate's
# "cm_rate mode=client ..." line -> "rate setup_p50_us setup_p99_us".
figures() {  # FILE TOOL
  if [[ $2 == cmtime ]]; then
    awk -v n="$N" -F: '
      /^(create id|resolve addr|resolve route|create qp|connect) *:/ {
        split($2, v, " "); step = $1; sub(/ +$/, "", step); ms[step] = v[1] }
      END {
        if (!("connect" in ms) || ms["connect"] <= 0) exit 1
        s = ms["create id"] + ms["resolve addr"] + ms["resolve route"] + ms["create qp"] + ms["connect"]
        printf "%.1f %.1f %.0f\n", n * 1000 / ms["connect"], n * 1000 / s, ms["connect"] * 1000 / n }' "$1"
  else
    awk '$1 == "cm_rate" && $2 == "mode=client" {
           for (i = 3; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
         END { if (!("rate" in f)) exit 1; print f["rate"], f["setup_p50_us"], f["setup_p99_us"] }' "$1"
  fi
}

# median (min-max) of column COL over the runs of STACK TOOL
stat() {  # STACK TOOL COL
  local r v vals=()
  for ((r = 1; r <= RUNS; r++)); do
    [[ $(cat "$LOG/$1-$2-$r.rc" 2>/dev/null) == 0 ]] || continue
    v=$(figures "$LOG/$1-$2-$r.cli" "$2" | awk -v c="$3" '{print $c}') && [[ -n $v ]] && vals+=("$v")
  done
  [[ ${#vals[@]} -gt 0 ]] || { echo "-"; return; }
  printf '%s\n' "${vals[@]}" | sort -g | awk '{a[NR] = $1} END {
    m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
    printf "%s (%s-%s, %d/'"$RUNS"')\n", f(m), f(a[1]), f(a[NR]), NR }
    function f(x) { return x >= 100 ? sprintf("%.0f", x) : sprintf("%.3g", x) }'
}

guest_start g1 "$G1_IP" || iskip "the guest did not boot (logs above)"
guest_start g2 "$G2_IP" || ifail "the second guest did not boot"
guest_run g2 "ping -c 1 -W 5 $G1_IP >/dev/null" || ifail "g2 cannot reach g1"
for g in g1 g2; do mount_root "$g" || iskip "cannot prepare the host-root chroot in $g"; done

for s in $STACKS; do
  [[ $s == burst ]] && { burst_up g1; burst_up g2; }
  for ((r = 1; r <= RUNS; r++)); do
    for t in "${TOOLS[@]}"; do one "$s" "$t" "$r"; done
  done
done

{
  echo "| tool | figure | kernel rdma_cm (rxe) | burst (burstd, AF_XDP) | burst / kernel |"
  echo "|---|---|---|---|---|"
  for t in "${TOOLS[@]}"; do
    if [[ $t == cmtime ]]; then cols=("1 connect/s" "2 setup/s" "3 connect us/conn"); else cols=("1 established/s" "2 setup p50 us" "3 setup p99 us"); fi
    for c in "${cols[@]}"; do
      k=$(stat kernel "$t" "${c%% *}")
      b=$(stat burst "$t" "${c%% *}")
      ratio=$(awk -v k="${k%% *}" -v b="${b%% *}" -v lower="$([[ $c == *us* ]] && echo 1)" 'BEGIN {
        if (k == "-" || b == "-" || k <= 0 || b <= 0) { print "-"; exit }
        printf "%.3gx\n", lower ? k / b : b / k }')
      echo "| $t | ${c#* } | $k | $b | $ratio |"
    done
  done
  echo
  for t in "${TOOLS[@]}"; do echo "$t: \`$(cat "$LOG/cmd-$t")\` (server in g1 / client in g2), N=$N$([[ $t == cm_rate ]] && echo ", W=$W")"; done
  echo "date $(date -u +%F), host $(nproc) cores, accel $(interop_accel), guests 1 vCPU $INTEROP_MEM MiB, kernel $INTEROP_KVER"
} | tee "$RESULTS"
if [[ " $STACKS " == *" burst "* ]]; then
  for g in g1 g2; do
    guest_run -t 10 "$g" "pidof burstd >/dev/null" || { ilog "$g: burstd died"; echo 1 >"$LOG/burstd-$g.rc"; }
    # burstd's CM counters (retransmits, drops) after every burst run, for the record.
    guest_run -t 30 "$g" "$(in_root "$BURSTCTL" --socket /tmp/burstd.sock counters)" 2>&1 |
      grep -E '^ *(cm|cma)\.' | paste -sd' ' | sed "s/^/$g burstd: /" | tr -s ' ' >&2
    # burstd's CPU time per thread (utime + stime, seconds) over the whole burst phase.
    guest_run -t 10 "$g" "p=\$(pidof burstd); for t in /proc/\$p/task/*; do
        echo \"\$(cat \$t/comm) \$(cut -d' ' -f14,15 \$t/stat)\"; done" 2>&1 |
      awk -v g="$g" -v hz="$(getconf CLK_TCK)" '{ s = s sprintf(" %s %.2f", $1, ($2 + $3) / hz) }
        END { print g " burstd CPU s per thread:" s }' >&2
  done
fi
fails=$(cat "$LOG"/*.rc | grep -cv '^0$')
[[ $fails -eq 0 ]] || ifail "$fails run(s) failed (their output above)"
echo "PASS: cm rate kernel vs burst in guests"
