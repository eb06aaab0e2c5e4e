#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# UCX between burst and Linux rxe (issue 14, guest part): ucx_perftest UCT and UCP with one side on
# rxe in a Debian 6.1 guest and the other on burst (burstd over AF_XDP on $INTEROP_BURST_IF, the
# tool under `burstctl run`). The guest boots with the host's / shared read-only over 9p
# (INTEROP_HOST_ROOT) and runs the host's own ucx_perftest in a chroot of it (the guest's /proc,
# /sys, /dev, tmpfs /tmp and /run mounted there), so UCX 1.13.1 and the rxe verbs provider are
# Debian's packages on both sides.
# ucx_perftest's server takes the whole test description from its client, device name included
# (`-d DEV:PORT`, UCX 1.13 sock RTE): both ends must call the device by one name. `ucx_info -d` in
# the guest first lists rxe0:1, then the guest renames its device (`rdma dev set rxe0 name burst0`)
# and both sides run with `-d burst0:1` / UCX_NET_DEVICES=burst0:1.
# Directions: g2b = server on rxe in the guest, client on burst; b2g = server on burst, client on rxe.
# Cases: UCT rc_verbs put_bw (zcopy 64K), get (zcopy 64K), am_bw (bcopy 4K), fadd; ud_verbs am_lat;
# UCP tag_lat 8 B, tag_bw 64K, ucp_put_bw 64K with UCX_TLS=rc_v,self and ud_v,self; -n 100 -w 10
# (TCG). UCX chooses its GID itself on both sides.
# Output: a Markdown table (consumer, command, result, figure) like tests/consumers/consumers_test.sh,
# on stdout and in $INTEROP_RUN/ucx.md (kept with INTEROP_KEEP=1).
# Without UCX_UD_VERBS_ETH_DGID_CHECK=n on the rxe side, UCX there drops every UD datagram from burst
# (UD and every UCP case fail with "UD endpoint ...: unhandled timeout error"; docs/consumers.md):
#   sudo UCX_GUEST_ENV=UCX_UD_VERBS_ETH_DGID_CHECK=n tests/interop/ucx.sh build/default
# Usage (root): tests/interop/ucx.sh [BUILD_DIR]
# Settings: UCX_DIRS ("g2b b2g"), UCX_ITERS ("-n 100 -w 10"), UCX_CASES (labels to run, default all),
#   UCX_INTEROP_DEADLINE (s, 1500), INTEROP_MEM (MiB, here 1024), UCX_EXTRA_ENV (more UCX_ variables,
#   both sides, shown in the table: e.g. UCX_UD_VERBS_ETH_DGID_CHECK=n), UCX_GUEST_ENV (the guest side only).
# Exit 0 every case passed, 77 skipped (no guest, tools missing), 1 a case failed.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export INTEROP_MEM=${INTEROP_MEM:-1024}
source "$HERE/lib/guest.sh"
BUILD=$(cd "${1:-$HERE/../../build/default}" 2>/dev/null && pwd) || iskip "no build directory"
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
DIRS=${UCX_DIRS:-"g2b b2g"}
read -r -a ITERS <<<"${UCX_ITERS:-"-n 100 -w 10"}"
GUEST_IP=$INTEROP_SUBNET.11
ROOT=/mnt/hostroot
for b in "$BURSTD" "$BURSTCTL"; do [[ -x $b ]] || iskip "build $b first"; done
command -v ucx_perftest >/dev/null && command -v ucx_info >/dev/null ||
  iskip "missing ucx_perftest/ucx_info on the host (apt-get install ucx-utils)"

interop_require
interop_prepare
export INTEROP_HOST_ROOT=1
interop_netns_up
interop_deadline "${UCX_INTEROP_DEADLINE:-1500}"
SOCK=$INTEROP_RUN/burstd.sock
RESULTS=$INTEROP_RUN/ucx.md
FAILED=()
BPID=

burstd_start() {
  nsenter --net="/run/netns/$INTEROP_NS" "$BURSTD" --backend xdp --netdev "$INTEROP_BURST_IF" \
    --workers 1 --socket "$SOCK" >>"$INTEROP_RUN/burstd.log" 2>&1 &
  BPID=$!
  for _ in $(seq 100); do
    timeout 5 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$INTEROP_RUN/burstd.log"
  ifail "burstd did not start on $INTEROP_BURST_IF"
}
ucx_cleanup() {
  local rc=$?
  [[ -n $BPID ]] && { kill "$BPID" 2>/dev/null; wait "$BPID" 2>/dev/null; }
  (exit "$rc")
  interop_cleanup
}
trap ucx_cleanup EXIT
burst_run() {  # SECS CMD...: CMD under burstctl run in the namespace
  local t=$1
  shift
  nsenter --net="/run/netns/$INTEROP_NS" env TMPDIR="$INTEROP_RUN" timeout "$t" "$BURSTCTL" run \
    --netdev "$INTEROP_BURST_IF" --socket "$SOCK" -- "$@"
}
host_listening() {  # PORT
  local i
  for ((i = 0; i < 300; i++)); do
    innet ss -ltn 2>/dev/null | grep -q ":$1 " && return 0
    sleep 0.2
  done
  return 1
}
# The guest's command line running CMD... in the host root (a clean environment).
in_root() { echo "chroot $ROOT /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp $*"; }
row() { echo "| $1 | \`$2\` | $3 | $4 |" | tee -a "$RESULTS"; }

guest_start vm1 "$GUEST_IP" || iskip "the guest did not boot (logs above)"
guest_run vm1 "ping -c 1 -W 5 $INTEROP_HOST_IP >/dev/null" || ifail "the guest cannot reach burst"
ilog "host root in the guest at $ROOT"
guest_run -t 60 vm1 "mkdir -p $ROOT &&
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot $ROOT &&
  mount -t proc proc $ROOT/proc && mount -t sysfs sysfs $ROOT/sys &&
  mount -t devtmpfs devtmpfs $ROOT/dev && mount -t tmpfs tmpfs $ROOT/dev/shm &&
  mount -t devpts devpts $ROOT/dev/pts && mount -t tmpfs tmpfs $ROOT/tmp &&
  mount -t tmpfs tmpfs $ROOT/run" || iskip "cannot prepare the host-root chroot in the guest"
burstd_start

echo "| consumer | command | result | figure |" | tee "$RESULTS"
echo "|---|---|---|---|" | tee -a "$RESULTS"
ver=$(ucx_info -v | sed -n 's/^# Version //p' | head -1)
guest_run -t 180 vm1 "$(in_root ucx_info -d)" >"$INTEROP_RUN/ucx_info.guest" 2>&1
if grep -q "Device: rxe0:1" "$INTEROP_RUN/ucx_info.guest" &&
   grep -q "Transport: rc_verbs" "$INTEROP_RUN/ucx_info.guest"; then
  row "UCX $ver (guest, rxe)" "ucx_info -d" pass \
    "rxe0:1: $(grep -o 'Transport: [a-z_]*verbs' "$INTEROP_RUN/ucx_info.guest" | cut -d' ' -f2 | sort -u | paste -sd, | sed 's/,/, /g')"
else
  tail -30 "$INTEROP_RUN/ucx_info.guest"
  FAILED+=(ucx_info_guest)
  row "UCX $ver (guest, rxe)" "ucx_info -d" FAIL "rxe0:1 rc_verbs not listed"
fi
guest_run vm1 "rdma dev set rxe0 name burst0 && ibv_devices" || ifail "cannot rename rxe0 to burst0 in the guest"

PORT=21000
# perf DIR LABEL ENV -- ARGS...: ucx_perftest server and client (both must exit 0). The figure is
# the client's: the median latency of a *_lat / atomic test, else the overall bandwidth.
perf() {
  local dir=$1 label=$2 envs=$3${UCX_EXTRA_ENV:+ $UCX_EXTRA_ENV}
  shift 4
  if [[ -n ${UCX_CASES:-} && " $UCX_CASES " != *" $label "* ]]; then return 0; fi
  PORT=$((PORT + 1))
  local so="$INTEROP_RUN/perf-$PORT.server" co="$INTEROP_RUN/perf-$PORT.client" src crc
  ilog "$dir: $label"
  if [[ $dir == g2b ]]; then
    local id
    id=$(guest_spawn -t 240 vm1 "$(in_root $envs ${UCX_GUEST_ENV:-} ucx_perftest -p $PORT)")
    guest_wait_listen vm1 "$PORT" 90
    for _ in $(seq 10); do
      # shellcheck disable=SC2086
      burst_run 200 env $envs ucx_perftest "$GUEST_IP" -p "$PORT" -f "$@" >"$co" 2>&1
      crc=$?
      grep -q "connect() failed" "$co" || break
      sleep 1
    done
    guest_wait vm1 "$id" >"$so" 2>&1
    src=$?
  else
    # shellcheck disable=SC2086
    burst_run 240 env $envs ucx_perftest -p "$PORT" >"$so" 2>&1 &
    local spid=$!
    host_listening "$PORT"
    for _ in $(seq 10); do
      guest_run -t 200 vm1 "$(in_root $envs ${UCX_GUEST_ENV:-} ucx_perftest $INTEROP_HOST_IP -p $PORT -f "$@")" >"$co" 2>&1
      crc=$?
      grep -q "connect() failed" "$co" || break
      sleep 1
    done
    wait "$spid"
    src=$?
  fi
  local where="server on $([[ $dir == g2b ]] && echo rxe || echo burst), client on $([[ $dir == g2b ]] && echo burst || echo rxe)"
  local cmd="${envs:+$envs }ucx_perftest $* ($where${UCX_GUEST_ENV:+; guest only: $UCX_GUEST_ENV})"
  if [[ $src -ne 0 || $crc -ne 0 ]]; then
    { echo "=== $dir $label server ($src):"; tail -20 "$so"; echo "=== client ($crc):"; tail -20 "$co"; } >&2
    FAILED+=("$dir $label")
    row "UCX $label" "$cmd" "FAIL (server $src, client $crc)" "-"
    return 1
  fi
  local last fig
  last=$(grep -E '^ +[0-9]+ +[0-9.]+' "$co" | tail -1)
  if [[ $label == *lat* || $label == *fadd* ]]; then
    fig="$(awk '{print $2}' <<<"$last") us (median)"
  else
    fig="$(awk '{print $6}' <<<"$last") MB/s, $(awk '{print $8}' <<<"$last") msg/s"
  fi
  row "UCX $label" "$cmd" pass "$fig"
}

for dir in $DIRS; do
  perf "$dir" "rc_verbs put_bw 64K" "" -- -t put_bw -x rc_verbs -d burst0:1 -D zcopy -s 65536 "${ITERS[@]}"
  perf "$dir" "rc_verbs get 64K" "" -- -t get -x rc_verbs -d burst0:1 -D zcopy -s 65536 "${ITERS[@]}"
  perf "$dir" "rc_verbs am_bw 4K" "" -- -t am_bw -x rc_verbs -d burst0:1 -D bcopy -s 4096 "${ITERS[@]}"
  perf "$dir" "rc_verbs fadd" "" -- -t fadd -x rc_verbs -d burst0:1 "${ITERS[@]}"
  perf "$dir" "ud_verbs am_lat" "" -- -t am_lat -x ud_verbs -d burst0:1 "${ITERS[@]}"
  for tl in rc_v ud_v; do
    e="UCX_TLS=$tl,self UCX_NET_DEVICES=burst0:1"
    perf "$dir" "UCP $tl tag_lat 8B" "$e" -- -t tag_lat -s 8 "${ITERS[@]}"
    perf "$dir" "UCP $tl tag_bw 64K" "$e" -- -t tag_bw -s 65536 "${ITERS[@]}"
    perf "$dir" "UCP $tl ucp_put_bw 64K" "$e" -- -t ucp_put_bw -s 65536 "${ITERS[@]}"
  done
done
kill -0 "$BPID" 2>/dev/null || { FAILED+=("burstd died"); tail -20 "$INTEROP_RUN/burstd.log"; }
echo "date $(date -u +%F), $(nproc) cores, accel $(interop_accel), guest $INTEROP_KVER, host $(uname -r)"
[[ ${#FAILED[@]} -eq 0 ]] || ifail "${#FAILED[@]} case(s) failed: ${FAILED[*]}"
echo "PASS: UCX burst <-> rxe"
