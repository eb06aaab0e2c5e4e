#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Open MPI between burst and Linux rxe (issue 14, guest part): NetPIPE (NPopenmpi, Debian's
# netpipe-openmpi) with rank 0 on burst (burstd over AF_XDP on $INTEROP_BURST_IF, the rank under
# `burstctl run` in the harness' namespace) and rank 1 on rxe0 in a Debian 6.1 guest, which runs the
# host's own Open MPI 4.1.4 + UCX 1.13.1 in a chroot of the host's root shared over 9p
# (INTEROP_HOST_ROOT=1, as tests/interop/ucx.sh).
# mpirun runs in the namespace; its rsh agent (tests/interop/guestrsh.sh) starts orted in the guest
# through the harness' command queue, and in the namespace through tests/consumers/nsrsh.sh. orted
# connects back to mpirun over TCP on the bridge (oob_tcp_if_include $INTEROP_SUBNET.0/24).
# orted (tree spawn) checks that plm_rsh_agent's path exists on its own node: run this script from a
# path the guest sees through the host root (not under /tmp, /run, /dev: the chroot has its own).
# pml ucx is chosen by Open MPI's own device check on both ranks (pml_base_verbose shows
# "selected ucx best priority 51" twice): the one MCA setting is opal_common_ucx_devices, given to
# each side as its own host's configuration would (guestrsh.sh puts it in each orted's environment,
# which the ranks inherit): "mlx*,burst*" on burst (the basename of
# /sys/class/infiniband/burst0/device/driver is "burst"); "any" on rxe: the 6.1 kernel's rxe0 has no
# device/ link (readlink prints nothing), so no pattern (rxe* included) can match it, Open MPI
# rates pml ucx 19 ("transports only") there, below ob1's 20, and the job runs over ob1 + TCP.
# Debian's `pml = ^ucx` is undone with OMPI_MCA_pml= on both sides (docs/consumers.md).
# UCX_TLS=rc_v,self (the transport measured). The rxe side only: UCX_UD_VERBS_ETH_DGID_CHECK=n
# (UCP wires rc_v up through ud_verbs, whose filter on rxe drops burst's datagrams: docs/consumers.md).
# Two runs: NetPIPE -i (integrity: every byte of each message checked; its sizes stop at the last
# 2^n+1 below MPI_MAX) and the performance run, 1 B to MPI_MAX (+3) bytes.
# Usage (root, one guest user at a time):
#   flock /work/guest.lock tests/interop/mpi.sh [BUILD_DIR]
# Settings: MPI_MAX (bytes, 8388608), MPI_NP_ARGS (more NetPIPE arguments, "-n 3"),
#   MPI_BURST_DEVICES ("mlx*,burst*"), MPI_RXE_DEVICES ("any", or the pattern list with the driver's
#   basename when the guest's rxe0 has one), MPI_INTEROP_DEADLINE (s, 1200), MPI_GUEST_ENV (the rxe
#   side's UCX variables, "UCX_UD_VERBS_ETH_DGID_CHECK=n"; set empty for none), INTEROP_MEM (MiB, 1024).
# Output: a Markdown table (consumer, command, result, figure) on stdout and in $INTEROP_RUN/mpi.md.
# Exit 0 pass, 77 skipped (no guest, tools missing), 1 fail.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
export INTEROP_MEM=${INTEROP_MEM:-1024}
source "$HERE/lib/guest.sh"
BUILD=$(cd "${1:-$HERE/../../build/default}" 2>/dev/null && pwd) || iskip "no build directory"
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
MAX=${MPI_MAX:-8388608}
read -r -a NPARGS <<<"${MPI_NP_ARGS:-"-n 3"}"
GUEST_ENV=${MPI_GUEST_ENV-UCX_UD_VERBS_ETH_DGID_CHECK=n}
GUEST_IP=$INTEROP_SUBNET.11
ROOT=/mnt/hostroot
for b in "$BURSTD" "$BURSTCTL"; do [[ -x $b ]] || iskip "build $b first"; done
for c in mpirun:openmpi-bin ompi_info:openmpi-bin NPopenmpi:netpipe-openmpi ucx_info:ucx-utils; do
  command -v "${c%%:*}" >/dev/null || iskip "missing ${c%%:*} on the host (apt-get install ${c#*:})"
done

interop_require
interop_prepare
export INTEROP_HOST_ROOT=1
interop_netns_up
interop_deadline "${MPI_INTEROP_DEADLINE:-1200}"
SOCK=$INTEROP_RUN/burstd.sock
RESULTS=$INTEROP_RUN/mpi.md
BPID=
FAILED=()

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
mpi_cleanup() {
  local rc=$?
  [[ -n $BPID ]] && { kill "$BPID" 2>/dev/null; wait "$BPID" 2>/dev/null; }
  (exit "$rc")
  interop_cleanup
}
trap mpi_cleanup EXIT
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
# What Open MPI's device check reads for rxe0 (the basename is matched against the list).
rxe_driver=$(guest_run vm1 "readlink /sys/class/infiniband/rxe0/device/driver" 2>/dev/null | tail -1)
ilog "guest: /sys/class/infiniband/rxe0/device/driver -> '${rxe_driver:-(none)}'"
# rxe0 has no device/ (readlink prints nothing under the 6.1 kernel): no list of driver names can
# match it, and Open MPI then rates pml ucx 19 ("transports only"), below ob1's 20. The rxe host
# says "any" (is_any_device) in its own setting; burst's host lists burst's driver.
BURST_DEVICES=${MPI_BURST_DEVICES:-"mlx*,burst*"}
RXE_DEVICES=${MPI_RXE_DEVICES:-$([[ -n $rxe_driver ]] && echo "mlx*,burst*,${rxe_driver##*/}" || echo any)}
burstd_start

echo "| consumer | command | result | figure |" | tee "$RESULTS"
echo "|---|---|---|---|" | tee -a "$RESULTS"

export NSRSH_BURSTCTL=$BURSTCTL NSRSH_SPEC="$INTEROP_NS:$INTEROP_BURST_IF:$SOCK"
export GUESTRSH_GUEST=vm1 GUESTRSH_ROOT=$ROOT GUESTRSH_TIMEOUT=600 INTEROP_RUN
export GUESTRSH_ENV="OMPI_MCA_pml= OMPI_MCA_opal_common_ucx_devices=$RXE_DEVICES $GUEST_ENV"
export GUESTRSH_NS_ENV="OMPI_MCA_opal_common_ucx_devices=$BURST_DEVICES"
# Rank 0 (NetPIPE's transmitter, which writes -o) on burst: the namespace comes first.
HF=$INTEROP_RUN/hostfile
printf '%s slots=1\nvm1 slots=1\n' "$INTEROP_NS" >"$HF"
# shellcheck disable=SC2054  # commas inside MCA values
MCA=(--allow-run-as-root --hostfile "$HF" -np 2 --map-by node --mca plm_rsh_agent "$HERE/guestrsh.sh"
  --mca oob_tcp_if_include "$INTEROP_SUBNET.0/24" --mca btl ^openib --mca rtc_hwloc_vmhole none
  --mca pml_base_verbose 10 --mca opal_common_ucx_verbose 2 -x UCX_TLS=rc_v,self)
mpirun_ns() {  # OUT ARGS...
  local out=$1
  shift
  innet env TMPDIR="$INTEROP_RUN" OMPI_MCA_pml= timeout 560 mpirun "$@" >"$out" 2>&1
}
ilog "NetPIPE integrity run (1 B .. $MAX B)"
mpirun_ns "$INTEROP_RUN/np-i.out" "${MCA[@]}" NPopenmpi -i -u "$MAX" "${NPARGS[@]}" -o "$INTEROP_RUN/np-i.txt"
irc=$?
ilog "NetPIPE performance run (1 B .. $MAX B)"
mpirun_ns "$INTEROP_RUN/np.out" "${MCA[@]}" NPopenmpi -u "$MAX" "${NPARGS[@]}" -o "$INTEROP_RUN/np.txt"
rc=$?
sel_i=$(grep -c "selected ucx best priority 51" "$INTEROP_RUN/np-i.out")
sel=$(grep -c "selected ucx best priority 51" "$INTEROP_RUN/np.out")
ver=$(ompi_info --version | sed -n 's/.*v\([0-9.]*\).*/\1/p' | head -1)
cmd="OMPI_MCA_pml= mpirun -np 2 -x UCX_TLS=rc_v,self NPopenmpi -u $MAX ${NPARGS[*]} (rank 0 on burst: opal_common_ucx_devices = $BURST_DEVICES; rank 1 on rxe: opal_common_ucx_devices = $RXE_DEVICES${GUEST_ENV:+, $GUEST_ENV})"
if [[ $irc -ne 0 || $rc -ne 0 || $sel_i -lt 2 || $sel -lt 2 ]] ||
   grep -qi "integrity.*fail\|mismatch" "$INTEROP_RUN/np-i.out" || [[ ! -s $INTEROP_RUN/np.txt ]]; then
  { echo "=== integrity run ($irc, pml ucx on $sel_i ranks):"; tail -40 "$INTEROP_RUN/np-i.out"
    echo "=== performance run ($rc, pml ucx on $sel ranks):"; tail -40 "$INTEROP_RUN/np.out"; } >&2
  FAILED+=(netpipe)
  row "Open MPI $ver pml ucx, NetPIPE" "$cmd" "FAIL (integrity $irc, perf $rc, pml ucx on $sel_i/$sel ranks)" "-"
else
  ichecked=$(sort -n -k1 "$INTEROP_RUN/np-i.txt" | tail -1 | awk '{print $1}')
  big=$(sort -n -k1 "$INTEROP_RUN/np.txt" | tail -1)
  small=$(sort -n -k1 "$INTEROP_RUN/np.txt" | head -1)
  row "Open MPI $ver pml ucx, NetPIPE" "$cmd" "pass (data checked 1 B..$ichecked B)" \
    "$(awk '{printf "%.0f Mbit/s at %d B", $2, $1}' <<<"$big"); $(awk '{printf "%.1f us at %d B", $3 * 1e6, $1}' <<<"$small")"
fi
grep -h "matched by\|matched both\|support level\|selected ucx\|readlink" "$INTEROP_RUN/np.out" |
  sed 's/^\[\([^:]*\):[0-9]*\]/[\1]/' | sort | uniq -c >&2
kill -0 "$BPID" 2>/dev/null || { FAILED+=("burstd died"); tail -20 "$INTEROP_RUN/burstd.log"; }
echo "date $(date -u +%F), $SECONDS s with the boot, $(nproc) cores, accel $(interop_accel), guest $INTEROP_KVER, host $(uname -r)"
[[ ${#FAILED[@]} -eq 0 ]] || ifail "${#FAILED[@]} case(s) failed: ${FAILED[*]}"
echo "PASS: Open MPI NetPIPE burst <-> rxe"
