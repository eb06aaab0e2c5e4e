#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Real RDMA software nobody on the team wrote, from Debian 12's packages, over burst
# (issue 14 acceptance): UCX (ucx_info, ucx_perftest UCT and UCP), Open MPI 4.1 with
# pml ucx (NetPIPE), ibv_asyncwatch, with perftest's figures from the same run beside them.
#   A: a0 10.47.0.1/24   <--veth-->   B: b0 10.47.0.2/24      (one burstd per namespace, AF_XDP)
# Placements: "two" (server in A, client in B) and "one" (both on A's burst0: one-host loopback).
# GIDs: UCX's own choice, and the IPv4-mapped GID forced (UCX_IB_GID_INDEX=1).
# Every application runs unmodified under `burstctl run`; the only UCX variables set are
# UCX_TLS / UCX_NET_DEVICES (which transport to test) and UCX_IB_GID_INDEX (the forced GID).
# Open MPI picks pml ucx through its own device check (priority 51 against ob1's 20) with the MCA
# settings a burst user adds (docs/consumers.md): opal_common_ucx_devices = mlx*,burst*, and, since
# Debian's /etc/openmpi/openmpi-mca-params.conf excludes pml ucx (pml = ^ucx), that exclusion undone
# (here OMPI_MCA_pml set empty, as if the line were removed; an include list such as "ob1,ucx" makes
# Open MPI 4.1.4 skip ucx: "not in the include list"); nothing forces `--mca pml ucx`.
# Usage: consumers_test.sh BURSTCTL BURSTD [CASES...]
#   CASES: info ucx_two ucx_one ucx_two_gid1 ucx_one_gid1 mpi_two mpi_one asyncwatch perftest
#   (default: all). BURST_CONSUMERS_FULL=1 runs the full size sweeps (8 B .. 4 MiB, NetPIPE to
#   8 MiB with its own repeat counts) instead of the bounded CI subset.
# The table (consumer, command, result, figure) goes to $BURST_CONSUMERS_REPORT (default: printed).
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools missing, kernel with RDMA).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"

BURSTCTL=${1:?usage: consumers_test.sh BURSTCTL BURSTD [CASES...]}
BURSTD=${2:?usage: consumers_test.sh BURSTCTL BURSTD [CASES...]}
shift 2
CASES=("$@")
FULL=${BURST_CONSUMERS_FULL:-0}

netns_require_root "network namespaces, veth, XDP"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout
netns_require_tools "ucx-utils" ucx_info ucx_perftest
netns_require_tools "openmpi-bin" mpirun ompi_info
netns_require_tools "netpipe-openmpi" NPopenmpi
netns_require_tools "ibverbs-utils perftest" ibv_asyncwatch ib_write_bw ib_write_lat
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD"

netns_pair burst-cons
REPORT=${BURST_CONSUMERS_REPORT:-$TMP/report.md}
{
  echo "| consumer | command | result | figure |"
  echo "|---|---|---|---|"
} >"$REPORT"
ADDR_A=10.47.0.1
netns_link_ab a0 $ADDR_A b0 10.47.0.2
inA ping -c1 -W2 10.47.0.2 >/dev/null || fail "no IP connectivity over the veth"

BURSTD_PID_A=
start_burstd() {  # NS DEV SOCK LOG
  netns_start_burstd "$1" "$3" "$4" "in $1" --backend xdp --netdev "$2" --workers 1
}
start_burstd "$NA" a0 "$TMP/a.sock" "$TMP/burstd-a.log"
BURSTD_PID_A=$BURSTD_PID
start_burstd "$NB" b0 "$TMP/b.sock" "$TMP/burstd-b.log"

# in NS T CMD...: CMD in namespace A or B under burstctl run, bounded by T seconds.
in_ns() {
  local ns=$1 t=$2
  shift 2
  if [[ $ns == A ]]; then
    nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout "$t" "$BURSTCTL" run --netdev a0 \
      --socket "$TMP/a.sock" -- "$@"
  else
    nsenter --net=/run/netns/"$NB" env TMPDIR="$TMP" timeout "$t" "$BURSTCTL" run --netdev b0 \
      --socket "$TMP/b.sock" -- "$@"
  fi
}

FAILED=()
want() {
  [[ ${#CASES[@]} -eq 0 ]] && return 0
  local c
  for c in "${CASES[@]}"; do [[ $c == "$1" ]] && return 0; done
  return 1
}
row() { echo "| $1 | \`$2\` | $3 | $4 |" >>"$REPORT"; }

# --- ucx_info -------------------------------------------------------------------------------
if want info; then
  log "ucx_info -d"
  in_ns A 60 ucx_info -d >"$TMP/ucx_info" 2>&1
  if grep -q "Device: burst0:1" "$TMP/ucx_info" &&
    grep -q "Transport: rc_verbs" "$TMP/ucx_info" && grep -q "Transport: ud_verbs" "$TMP/ucx_info"; then
    row "UCX $(ucx_info -v | sed -n 's/^# Version //p' | head -1)" "ucx_info -d" pass \
      "burst0:1: rc_verbs, ud_verbs"
  else
    cat "$TMP/ucx_info"
    FAILED+=(ucx_info)
    row UCX "ucx_info -d" FAIL "burst0:1 rc_verbs/ud_verbs not listed"
  fi
fi

# --- ucx_perftest ---------------------------------------------------------------------------
PORT=20000
# perf PLACEMENT LABEL ENV -- ARGS...: server in A, client in B (two) or A (one); both exit 0.
# The figure: the median latency (usec) of a *_lat test, else the overall bandwidth (MB/s).
perf() {
  local placement=$1 label=$2 envs=$3
  shift 4
  PORT=$((PORT + 1))
  local so="$TMP/perf-$PORT.server" co="$TMP/perf-$PORT.client" cns=B
  [[ $placement == one ]] && cns=A
  # shellcheck disable=SC2086
  in_ns A 120 env $envs ucx_perftest -p "$PORT" >"$so" 2>&1 &
  local spid=$!
  BG_PIDS+=("$spid")
  local crc=1
  for _ in $(seq 20); do
    sleep 0.3
    # shellcheck disable=SC2086
    in_ns "$cns" 120 env $envs ucx_perftest "$ADDR_A" -p "$PORT" -f "$@" >"$co" 2>&1
    crc=$?
    grep -q "connect() failed" "$co" || break
  done
  wait "$spid"
  local src=$?
  local cmd="${envs:+$envs }ucx_perftest $* ($placement host$([[ $placement == two ]] && echo s)$([[ $envs != *GID_INDEX* ]] && echo ", UCX's GID"))"
  if [[ $src -ne 0 || $crc -ne 0 ]]; then
    echo "=== server ($src):"; tail -20 "$so"; echo "=== client ($crc):"; tail -20 "$co"
    FAILED+=("$label")
    row "UCX $label" "$cmd" "FAIL (server $src, client $crc)" "-"
    return 1
  fi
  local last fig
  last=$(grep -E '^ +[0-9]+ +[0-9.]+' "$co" | tail -1)
  if [[ $label == *lat* || $label == *fadd* || $label == *swap* ]]; then
    fig="$(awk '{print $2}' <<<"$last") us (median)"
  else
    fig="$(awk '{print $6}' <<<"$last") MB/s, $(awk '{print $8}' <<<"$last") msg/s"
  fi
  row "UCX $label" "$cmd" pass "$fig"
}

# One placement and GID choice: UCT rc_verbs put/get/am/atomics, ud_verbs am_lat, UCP tag and
# put over rc_v and ud_v.
ucx_suite() {  # PLACEMENT GIDENV
  local p=$1 g=$2 tl sizes s
  local uct="$g"
  local n=(-n 400 -w 40)
  [[ $FULL == 1 ]] && n=(-n 5000 -w 500)
  log "ucx_perftest: $p host(s) ${g:-(UCX chooses the GID)}"
  perf "$p" "rc_verbs put_bw 64K" "$uct" -- -t put_bw -x rc_verbs -d burst0:1 -D zcopy -s 65536 "${n[@]}"
  perf "$p" "rc_verbs get 64K" "$uct" -- -t get -x rc_verbs -d burst0:1 -D zcopy -s 65536 "${n[@]}"
  perf "$p" "rc_verbs am_bw 4K" "$uct" -- -t am_bw -x rc_verbs -d burst0:1 -D bcopy -s 4096 "${n[@]}"
  perf "$p" "rc_verbs put_lat 8B" "$uct" -- -t put_lat -x rc_verbs -d burst0:1 -s 8 "${n[@]}"
  perf "$p" "rc_verbs fadd" "$uct" -- -t fadd -x rc_verbs -d burst0:1 "${n[@]}"
  perf "$p" "rc_verbs cswap" "$uct" -- -t cswap -x rc_verbs -d burst0:1 "${n[@]}"
  perf "$p" "rc_verbs add_mr" "$uct" -- -t add_mr -x rc_verbs -d burst0:1 "${n[@]}"
  perf "$p" "ud_verbs am_lat" "$uct" -- -t am_lat -x ud_verbs -d burst0:1 "${n[@]}"
  sizes=(8 65536 4194304)
  [[ $FULL == 1 ]] && sizes=(8 1024 65536 1048576 4194304)
  for tl in rc_v ud_v; do
    local e="UCX_TLS=$tl,self UCX_NET_DEVICES=burst0:1${g:+ $g}"
    perf "$p" "UCP $tl tag_lat 8B" "$e" -- -t tag_lat -s 8 "${n[@]}"
    for s in "${sizes[@]}"; do
      local it=("${n[@]}")
      ((s >= 1048576)) && it=(-n 20 -w 2)
      perf "$p" "UCP $tl tag_bw $s" "$e" -- -t tag_bw -s "$s" "${it[@]}"
    done
    perf "$p" "UCP $tl ucp_put_bw 64K" "$e" -- -t ucp_put_bw -s 65536 "${n[@]}"
  done
}
want ucx_two && ucx_suite two ""
want ucx_one && ucx_suite one ""
want ucx_two_gid1 && ucx_suite two "UCX_IB_GID_INDEX=1"
want ucx_one_gid1 && ucx_suite one "UCX_IB_GID_INDEX=1"

# --- Open MPI: NetPIPE over pml ucx ---------------------------------------------------------
# mpirun runs in A; its rsh agent (nsrsh.sh) starts orted in the named namespace under
# burstctl run. The hosts are the namespaces' names.
export NSRSH_BURSTCTL=$BURSTCTL
export NSRSH_SPEC="$NA:a0:$TMP/a.sock $NB:b0:$TMP/b.sock"
# mpirun_ns OUT ARGS...: mpirun in A (output to OUT), after the daemons of the previous run
# are gone. ORTE's own daemon wire-up (before MPI_Init, no RDMA involved) now and then fails
# right after a previous job ("ORTE does not know how to route a message to the specified
# daemon", exit 213; 2 runs in 6 under load): that one launcher failure is retried once,
# and the retry is said in the output.
mpirun_ns() {
  local out=$1 rc i
  shift
  for i in 1 2; do
    for _ in $(seq 100); do pgrep -x orted >/dev/null || break; sleep 0.1; done
    nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" OMPI_MCA_pml= timeout 300 mpirun "$@" \
      >"$out" 2>&1
    rc=$?
    [[ $rc -ne 0 && $i -eq 1 ]] && grep -q "ORTE does not know how to route" "$out" || break
    echo "--- mpirun: ORTE's daemon wire-up failed (exit $rc); retrying once" | tee "$out.retry"
  done
  return "$rc"
}
mpi() {  # PLACEMENT
  local p=$1 hf="$TMP/hostfile.$1" out="$TMP/mpi.$1"
  if [[ $p == two ]]; then
    printf '%s slots=1\n%s slots=1\n' "$NA" "$NB" >"$hf"
  else
    printf '%s slots=2\n' "$NA" >"$hf"
  fi
  local np=(-u 8388608 -n 3)
  [[ $FULL == 1 ]] && np=(-u 8388608)
  # rtc_hwloc_vmhole none: Open MPI 4.1.4's orted otherwise segfaults now and then in
  # hwloc_shmem_topology_write while sharing its topology (5 of 40 `mpirun hostname` runs with
  # two rsh-started daemons and no burst at all; 0 of 40 with this); ranks then read the topology
  # themselves. Nothing RDMA runs at that point.
  local mca=(--allow-run-as-root --hostfile "$hf" -np 2 --mca plm_rsh_agent "$HERE/nsrsh.sh"
    --mca oob_tcp_if_include 10.47.0.0/24 --mca btl ^openib --mca rtc_hwloc_vmhole none
    --mca opal_common_ucx_devices 'mlx*,burst*' --mca pml_base_verbose 10
    -x UCX_NET_DEVICES=burst0:1 -x UCX_TLS=rc_v,self)
  log "Open MPI NetPIPE: $p host(s), integrity check"
  mpirun_ns "$out.i" "${mca[@]}" NPopenmpi -i "${np[@]}" -o "$TMP/np-i.$p"
  local irc=$?
  log "Open MPI NetPIPE: $p host(s), performance"
  mpirun_ns "$out" "${mca[@]}" NPopenmpi "${np[@]}" -o "$TMP/np.$p"
  local rc=$?
  local cmd="OMPI_MCA_pml= mpirun -np 2 --mca opal_common_ucx_devices 'mlx*,burst*' NPopenmpi ${np[*]} ($p host$([[ $p == two ]] && echo s))"
  # pml ucx must have been chosen by Open MPI's own selection, on every rank.
  local sel
  sel=$(grep -c "selected ucx best priority 51" "$out")
  if [[ $irc -ne 0 || $rc -ne 0 || $sel -lt 2 ]] || grep -qi "integrity.*fail\|mismatch" "$out.i"; then
    echo "=== integrity run ($irc):"; tail -30 "$out.i"; echo "=== perf run ($rc):"; tail -30 "$out"
    FAILED+=("mpi_$p")
    row "Open MPI $(ompi_info --version | sed -n 's/.*v\([0-9.]*\).*/\1/p' | head -1) pml ucx" "$cmd" \
      "FAIL (integrity $irc, perf $rc, pml ucx selected on $sel ranks)" "-"
    return 1
  fi
  # NetPIPE's file: bytes, Mbit/s, seconds per transfer per line. Largest message's rate; smallest's latency.
  local big small
  big=$(sort -n -k1 "$TMP/np.$p" | tail -1)
  small=$(sort -n -k1 "$TMP/np.$p" | head -1)
  row "Open MPI pml ucx, NetPIPE" "$cmd" "pass (data checked 1 B..8 MiB)" \
    "$(awk '{printf "%.0f Mbit/s at %d B", $2, $1}' <<<"$big"); $(awk '{printf "%.1f us at %d B", $3 * 1e6, $1}' <<<"$small")"
}
want mpi_two && mpi two
want mpi_one && mpi one

# --- perftest beside them (same run, same hosts) --------------------------------------------
pt() {  # LABEL PLACEMENT TOOL ARGS...
  local label=$1 p=$2 tool=$3
  shift 3
  local cns=B so="$TMP/pt-$label.s" co="$TMP/pt-$label.c"
  [[ $p == one ]] && cns=A
  in_ns A 120 "$tool" -d burst0 -x 1 -F "$@" >"$so" 2>&1 &
  local spid=$!
  BG_PIDS+=("$spid")
  local crc=1
  for _ in $(seq 20); do
    sleep 0.3
    in_ns "$cns" 120 "$tool" -d burst0 -x 1 -F "$@" "$ADDR_A" >"$co" 2>&1
    crc=$?
    grep -q -E "Couldn't connect|Unable to init" "$co" || break
  done
  wait "$spid"
  local src=$?
  local line
  line=$(grep -E '^ *[0-9]+ +[0-9]+ +[0-9.]+' "$co" | tail -1)
  if [[ $src -ne 0 || $crc -ne 0 ]]; then
    tail -20 "$co"
    FAILED+=("perftest_$label")
    row perftest "$tool $* ($p)" FAIL "-"
    return 1
  fi
  if [[ $tool == *lat ]]; then
    row perftest "$tool $* ($p host$([[ $p == two ]] && echo s))" pass "$(awk '{print $5}' <<<"$line") us (typical)"
  else
    row perftest "$tool $* ($p host$([[ $p == two ]] && echo s))" pass "$(awk '{print $4}' <<<"$line") Gb/s (average)"
  fi
}
if want perftest; then
  log "perftest beside them"
  pt write_bw_two two ib_write_bw -s 65536 -n 500 --report_gbits
  pt write_lat_two two ib_write_lat -s 8 -n 1000
  if want ucx_one || want mpi_one || [[ ${#CASES[@]} -eq 0 ]]; then
    pt write_bw_one one ib_write_bw -s 65536 -n 500 --report_gbits
    pt write_lat_one one ib_write_lat -s 8 -n 1000
  fi
fi

# --- ibv_asyncwatch: IBV_EVENT_DEVICE_FATAL when burstd stops (last: it stops A's burstd) ---
if want asyncwatch; then
  log "ibv_asyncwatch sees IBV_EVENT_DEVICE_FATAL when burstd stops"
  in_ns A 30 ibv_asyncwatch -d burst0 >"$TMP/asyncwatch" 2>&1 &
  awpid=$!
  BG_PIDS+=("$awpid")
  wait_for "$TMP/asyncwatch" "burst0: async event FD" 10 || sleep 1
  sleep 0.5
  kill -TERM "$BURSTD_PID_A"
  for _ in $(seq 50); do
    grep -q "event_type.*DEVICE_FATAL" "$TMP/asyncwatch" && break
    sleep 0.1
  done
  kill "$awpid" 2>/dev/null
  if grep -q "event_type.*DEVICE_FATAL" "$TMP/asyncwatch"; then
    row "rdma-core $(dpkg-query -W -f='${Version}' ibverbs-utils 2>/dev/null)" \
      "ibv_asyncwatch -d burst0; burstd stopped" pass "$(grep -m1 'event_type' "$TMP/asyncwatch" | tr -d '|')"
  else
    cat "$TMP/asyncwatch"
    FAILED+=(asyncwatch)
    row rdma-core "ibv_asyncwatch -d burst0; burstd stopped" FAIL "no IBV_EVENT_DEVICE_FATAL"
  fi
fi

echo "=== consumers over burst"
cat "$REPORT"
if [[ ${#FAILED[@]} -gt 0 ]]; then
  fail "failed: ${FAILED[*]}"
fi
echo "PASS: consumers"
