#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Issue 12: who may use burst, and how much. One burstd (loopback backend on a
# veth in a private network namespace) with small per-user caps
# (max_qps_per_user 4, max_cqs_per_user 4, max_mrs_per_user 8,
# max_pds_per_user 2), admin_group = a free gid, client_check_ms 200. Clients
# are limits_probe processes (public libibverbs through the provider, under
# `burstctl run`), as root or as nobody (setpriv), driven one command at a time
# over a pipe, so the order across processes is the test's:
#   caps:    nobody creates up to each cap, the next one fails with EAGAIN; a
#            second process of nobody shares the caps (EAGAIN while the first
#            holds them, success once the first exits); root exceeds every cap;
#   memlock: nobody with a 1 MiB RLIMIT_MEMLOCK: 512 KiB registers, 768 KiB more
#            fails with ENOMEM, a second process has its own budget, after
#            ibv_dereg_mr of the 512 KiB the 768 KiB registers; root (CAP_IPC_LOCK)
#            registers both under the same limit, root without CAP_IPC_LOCK
#            does not;
#   qps:     `burstctl qps` (table and --json) as nobody lists only nobody's
#            QPs (no root pid), as root both, as nobody with admin_group as a
#            supplementary group both;
#   revoke:  a root client with an MR and an RTS QP calls setresuid(65534, ...)
#            and stays: within ~1 s IBV_EVENT_QP_FATAL arrives for its QP, the
#            QP is in ERR, ibv_reg_mr / ibv_create_qp / ibv_alloc_pd fail with
#            EACCES, burstd logs "... revoked"; clients (root, nobody) that keep
#            their credentials are not revoked over 3 s.
# One line per check ("caps: nobody 5th QP: EAGAIN (expected EAGAIN)"); a
# mismatch is marked "<-- FAIL" and the test goes on, failing at the end.
# Usage: limits_test.sh BURSTCTL BURSTD LIMITS_PROBE
# Exit: 0 pass, 1 fail, 77 skipped (not root, no libibverbs, no user nobody, ...).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"

BURSTCTL=${1:?usage: limits_test.sh BURSTCTL BURSTD LIMITS_PROBE}
BURSTD=${2:?}
PROBE=${3:?}
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
MEMLOCK=1048576  # the small RLIMIT_MEMLOCK (soft and hard) of the memlock clients
KIB512=524288
KIB768=786432
SECONDS=0

netns_require_root "network namespace, veth, /dev/infiniband node, clients as other users"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout setpriv prlimit mkfifo getent
ldconfig -p | grep 'libibverbs\.so\.1 ' >/dev/null || skip "libibverbs missing (apt-get install libibverbs1)"
[[ -d /sys/class/infiniband ]] &&
  skip "this kernel has RDMA support: libibverbs lists devices over netlink and ignores SYSFS_PATH"
id nobody >/dev/null 2>&1 && getent group nogroup >/dev/null || skip "no user nobody / group nogroup"
for b in "$BURSTCTL" "$BURSTD" "$PROBE"; do
  [[ -x $b ]] || fail "$b not built"
done
"${NOBODY[@]}" test -x "$PROBE" ||
  skip "user nobody cannot execute $PROBE (a directory on its path is not traversable)"
"${NOBODY[@]}" test -x "$BURSTCTL" ||
  skip "user nobody cannot execute $BURSTCTL (a directory on its path is not traversable)"
# Root's memlock exemption is CAP_IPC_LOCK; a shell without it cannot show it.
ROOT_IPC_LOCK=1
(( (16#$(awk '$1 == "CapEff:" { print $2 }' /proc/$$/status) >> 14) & 1 )) || ROOT_IPC_LOCK=0
# admin_group: a gid no group has (nothing on the system is given to it).
ADMIN_GID=
for g in $(seq 48620 48720); do
  getent group "$g" >/dev/null || { ADMIN_GID=$g; break; }
done
[[ -n $ADMIN_GID ]] || skip "no free gid in 48620..48720 for admin_group"

netns_pair burst-limits
PROBE_PIDS=()
limits_cleanup() {
  local p
  for p in "${PROBE_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  netns_cleanup
}
trap limits_cleanup EXIT
trap '' PIPE  # a probe that died must not take the test with it (write: EPIPE)
# burstctl run puts its sysfs tree under $TMPDIR (= $TMP), the socket is there:
# nobody traverses it.
chmod 0755 "$TMP"
SOCK=$TMP/burstd.sock

CMD_ENV=()
if [[ -n ${BURST_TEST_PRELOAD:-} ]]; then
  # burstctl run preloads its shim: keep it behind the sanitizer runtime.
  CMD_ENV=(sh -c 'LD_PRELOAD="$0${LD_PRELOAD:+:$LD_PRELOAD}" ASAN_OPTIONS=detect_leaks=0 exec "$@"'
           "$BURST_TEST_PRELOAD")
fi

ip link add v0 netns "$NA" type veth peer name v1 netns "$NA" || fail "cannot create veth pair"
inA ip link set lo up
inA ip addr add 10.49.0.1/24 dev v0
inA ip link set v0 up
inA ip link set v1 up

cat >"$TMP/burstd.conf" <<CONF
backend = loopback
netdev = v0
workers = 1
max_qps_per_user = 4
max_cqs_per_user = 4
max_mrs_per_user = 8
max_pds_per_user = 2
admin_group = $ADMIN_GID
client_check_ms = 200
CONF
log "burstd: loopback on v0, caps QPs 4 CQs 4 MRs 8 PDs 2 per user, admin_group $ADMIN_GID"
nsenter --net=/run/netns/"$NA" "$BURSTD" --config "$TMP/burstd.conf" --socket "$SOCK" \
  >"$TMP/burstd.log" 2>&1 &
BG_PIDS+=($!)
for _ in $(seq 100); do
  [[ -S $SOCK ]] && timeout 5 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 && break
  sleep 0.1
done
timeout 5 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 || {
  cat "$TMP/burstd.log"
  fail "burstd did not come up"
}

# ---- driving the probes ---------------------------------------------------------
declare -A P_IN P_OUT P_PID P_BG
FAILED=()

# probe_start NAME [WRAPPER...]: limits_probe under burstctl run, run through
# WRAPPER (setpriv, prlimit); waits for its "ready" line. P_PID[NAME]: its pid.
probe_start() {
  local name=$1
  shift
  local in=$TMP/$name.in out=$TMP/$name.out fd_in fd_out line
  mkfifo -m 0600 "$in" "$out"
  (
    # Not the other probes' pipes: each must see the end of its own input.
    for f in "${P_IN[@]}" "${P_OUT[@]}"; do eval "exec $f>&-"; done
    exec nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout 100 "$BURSTCTL" run \
      --netdev v0 --socket "$SOCK" -- "$@" "${CMD_ENV[@]}" "$PROBE" <"$in" >"$out" \
      2>"$TMP/$name.err"
  ) &
  P_BG[$name]=$!
  BG_PIDS+=($!)
  exec {fd_in}>"$in"
  exec {fd_out}<"$out"
  P_IN[$name]=$fd_in
  P_OUT[$name]=$fd_out
  if ! read -r -t 20 -u "$fd_out" line || [[ $line != ready* ]]; then
    cat "$TMP/$name.err"
    fail "probe $name did not start: ${line:-no output}"
  fi
  P_PID[$name]=$(sed -n 's/.*pid=\([0-9]*\).*/\1/p' <<<"$line")
  PROBE_PIDS+=("${P_PID[$name]}")
  echo "    ($name: $line)"
}

# call NAME CMD: sends CMD to probe NAME; R = its answer ("no answer" after 10 s).
call() {
  R="no answer"
  { echo "$2" >&"${P_IN[$1]}"; } 2>/dev/null || { R="probe gone"; return 0; }
  read -r -t 10 -u "${P_OUT[$1]}" R || R="no answer"
  echo "[$1] $2 -> $R ($EPOCHREALTIME)" >>"$TMP/transcript"
}

# calls NAME N CMD: CMD N times; R = the first words of the answers.
calls() {
  local i out=()
  for ((i = 0; i < $2; ++i)); do
    call "$1" "$3"
    out+=("${R%% *}")
  done
  R="${out[*]}"
}

# expect LABEL GOT WANT: one line; the first word of GOT (a probe's answer:
# "ok 3" -> ok, "IBV_EVENT_QP_FATAL qp=0 ms=210" -> IBV_EVENT_QP_FATAL) must be
# WANT. expect_all: all of GOT (a list).
expect() { check_line "$1" "$2" "${2%% *}" "$3"; }
expect_all() { check_line "$1" "$2" "$2" "$3"; }
check_line() {  # LABEL GOT COMPARED WANT
  if [[ $3 == "$4" ]]; then
    echo "$1: $3 (expected $4)"
  else
    echo "$1: ${2:-(nothing)} (expected $4) <-- FAIL"
    FAILED+=("$1")
  fi
}

# setup NAME CMD...: commands that must answer ok (their failure is a check too).
setup() {
  local name=$1 c
  shift
  for c in "$@"; do
    call "$name" "$c"
    [[ ${R%% *} == ok ]] || {
      echo "setup: $name '$c': $R (expected ok) <-- FAIL"
      FAILED+=("setup $name $c")
    }
  done
}

clients() {
  timeout 5 "$BURSTCTL" --socket "$SOCK" status --json 2>/dev/null |
    sed -n 's/^ *"clients": *\([0-9]*\).*/\1/p'
}

# probe_quit NAME: "quit", closes its pipes, waits (bounded) for it to exit
# and for burstd to release its connection.
probe_quit() {
  local name=$1 before i
  before=$(clients)
  local fd_in=${P_IN[$name]} fd_out=${P_OUT[$name]}
  call "$name" quit
  exec {fd_in}>&- {fd_out}<&-
  unset "P_IN[$name]" "P_OUT[$name]"
  for ((i = 0; i < 50; ++i)); do
    [[ -d /proc/${P_PID[$name]} ]] || break
    sleep 0.1
  done
  kill -9 "${P_PID[$name]}" 2>/dev/null
  wait "${P_BG[$name]}" 2>/dev/null
  for ((i = 0; i < 50; ++i)); do
    local now
    now=$(clients)
    [[ -n $now && -n $before ]] && ((now < before)) && return 0
    sleep 0.1
  done
  echo "release: burstd still counts $(clients) clients 5 s after $name exited <-- FAIL"
  FAILED+=("release $name")
}

# pids_json FILE: the distinct pids in `burstctl qps --json` output.
pids_json() { sed -n 's/^ *"pid": *\([0-9]*\).*/\1/p' "$1" | sort -un | tr '\n' ' ' | sed 's/ $//'; }
# pids_table FILE: the distinct values of the PID column of `burstctl qps`.
pids_table() {
  awk 'NR == 1 { for (i = 1; i <= NF; ++i) if ($i == "PID") c = i; next }
       c && NF >= c && $1 ~ /^0x/ { print $c }' "$1" | sort -un | tr '\n' ' ' | sed 's/ $//'
}
sorted() { printf '%s\n' "$@" | sort -un | tr '\n' ' ' | sed 's/ $//'; }

# ---- 1. per-user caps ------------------------------------------------------------
log "caps: nobody up to each cap, a second process of nobody, root"
probe_start n1 "${NOBODY[@]}"
setup n1 pd cq
calls n1 4 qp
expect_all "caps: nobody QPs 1-4" "$R" "ok ok ok ok"
call n1 qp
expect "caps: nobody 5th QP" "$R" EAGAIN
calls n1 3 cq
expect_all "caps: nobody CQs 2-4" "$R" "ok ok ok"
call n1 cq
expect "caps: nobody 5th CQ" "$R" EAGAIN
calls n1 8 "mr 4096"
expect_all "caps: nobody MRs 1-8" "$R" "ok ok ok ok ok ok ok ok"
call n1 "mr 4096"
expect "caps: nobody 9th MR" "$R" EAGAIN
call n1 pd
expect "caps: nobody 2nd PD" "$R" ok
call n1 pd
expect "caps: nobody 3rd PD" "$R" EAGAIN

probe_start n2 "${NOBODY[@]}"
call n2 pd
expect "caps: 2nd nobody process, PD while the 1st holds 2/2" "$R" EAGAIN
call n2 cq
expect "caps: 2nd nobody process, CQ while the 1st holds 4/4" "$R" EAGAIN
setup n1 free-pd free-cq  # the 1st now holds 1 PD, 3 CQs, 4 QPs, 8 MRs
call n2 pd
expect "caps: 2nd nobody process, PD after the 1st freed one" "$R" ok
call n2 pd
expect "caps: 2nd nobody process, 2nd PD (2/2 over both)" "$R" EAGAIN
call n2 cq
expect "caps: 2nd nobody process, CQ after the 1st freed one" "$R" ok
call n2 cq
expect "caps: 2nd nobody process, 2nd CQ (4/4 over both)" "$R" EAGAIN
call n2 qp
expect "caps: 2nd nobody process, QP while the 1st holds 4/4" "$R" EAGAIN
call n2 "mr 4096"
expect "caps: 2nd nobody process, MR while the 1st holds 8/8" "$R" EAGAIN
probe_quit n1
call n2 qp
expect "caps: 2nd nobody process, QP after the 1st exited" "$R" ok
call n2 "mr 4096"
expect "caps: 2nd nobody process, MR after the 1st exited" "$R" ok
call n2 cq
expect "caps: 2nd nobody process, CQ after the 1st exited" "$R" ok
call n2 pd
expect "caps: 2nd nobody process, PD after the 1st exited" "$R" ok

probe_start r1  # root, while nobody holds objects
calls r1 3 pd
expect_all "caps: root 3 PDs (cap 2)" "$R" "ok ok ok"
calls r1 5 cq
expect_all "caps: root 5 CQs (cap 4)" "$R" "ok ok ok ok ok"
calls r1 5 qp
expect_all "caps: root 5 QPs (cap 4)" "$R" "ok ok ok ok ok"
calls r1 9 "mr 4096"
expect_all "caps: root 9 MRs (cap 8)" "$R" "ok ok ok ok ok ok ok ok ok"
probe_quit r1
probe_quit n2

# ---- 2. RLIMIT_MEMLOCK ----------------------------------------------------------
log "memlock: RLIMIT_MEMLOCK $MEMLOCK bytes (prlimit), nobody and root"
probe_start m1 "${NOBODY[@]}" prlimit --memlock="$MEMLOCK" --
setup m1 pd
call m1 "mr $KIB512"
expect "memlock: nobody 512 KiB under 1 MiB" "$R" ok
call m1 "mr $KIB768"
expect "memlock: nobody 768 KiB more (1.25 MiB)" "$R" ENOMEM
probe_start m2 "${NOBODY[@]}" prlimit --memlock="$MEMLOCK" --
setup m2 pd
call m2 "mr $KIB768"
expect "memlock: 2nd nobody process 768 KiB (its own budget)" "$R" ok
call m1 "dereg 0"
expect "memlock: nobody ibv_dereg_mr of the 512 KiB" "$R" ok
call m1 "mr $KIB768"
expect "memlock: nobody 768 KiB after the dereg" "$R" ok
probe_quit m1
probe_quit m2
if ((ROOT_IPC_LOCK)); then
  probe_start mr prlimit --memlock="$MEMLOCK" --
  setup mr pd
  call mr "mr $KIB512"
  expect "memlock: root (CAP_IPC_LOCK) 512 KiB under 1 MiB" "$R" ok
  call mr "mr $KIB768"
  expect "memlock: root (CAP_IPC_LOCK) 768 KiB more (1.25 MiB)" "$R" ok
  call mr "mr 4194304"
  expect "memlock: root (CAP_IPC_LOCK) 4 MiB more" "$R" ok
  probe_quit mr
  # The exemption is the capability, not uid 0.
  probe_start mx setpriv --bounding-set=-ipc_lock prlimit --memlock="$MEMLOCK" --
  setup mx pd
  call mx "mr $KIB512"
  expect "memlock: root without CAP_IPC_LOCK 512 KiB" "$R" ok
  call mx "mr $KIB768"
  expect "memlock: root without CAP_IPC_LOCK 768 KiB more" "$R" ENOMEM
  probe_quit mx
else
  echo "memlock: root (CAP_IPC_LOCK) checks skipped: this shell has no CAP_IPC_LOCK"
fi

# ---- 3. burstctl qps ------------------------------------------------------------
log "qps: QPs of root and of nobody; burstctl qps as nobody, root, nobody in admin_group"
probe_start qr
setup qr pd cq qp qp
probe_start qn "${NOBODY[@]}"
setup qn pd cq qp
ROOT_PID=${P_PID[qr]}
NOB_PID=${P_PID[qn]}
BOTH=$(sorted "$ROOT_PID" "$NOB_PID")
echo "    (root's client pid $ROOT_PID, nobody's $NOB_PID)"
ctl_as() {  # FILE WRAPPER... -- burstctl qps arguments come from QPS_ARGS
  local f=$1
  shift
  timeout 10 "$@" "$BURSTCTL" --socket "$SOCK" qps "${QPS_ARGS[@]}" >"$f" 2>&1
}
QPS_ARGS=()
ctl_as "$TMP/qps-nobody.txt" "${NOBODY[@]}"
expect_all "qps: nobody's burstctl qps, PIDs listed" "$(pids_table "$TMP/qps-nobody.txt")" "$NOB_PID"
QPS_ARGS=(--json)
ctl_as "$TMP/qps-nobody.json" "${NOBODY[@]}"
expect_all "qps: nobody's burstctl qps --json, pids" "$(pids_json "$TMP/qps-nobody.json")" "$NOB_PID"
expect_all "qps: nobody's burstctl qps --json, total" \
  "$(sed -n 's/^ *"total": *\([0-9]*\).*/\1/p' "$TMP/qps-nobody.json")" 1
ctl_as "$TMP/qps-root.json" env
expect_all "qps: root's burstctl qps --json, pids" "$(pids_json "$TMP/qps-root.json")" "$BOTH"
QPS_ARGS=()
ctl_as "$TMP/qps-root.txt" env
expect_all "qps: root's burstctl qps, PIDs listed" "$(pids_table "$TMP/qps-root.txt")" "$BOTH"
ADMIN=(setpriv --reuid=nobody --regid=nogroup --groups="$ADMIN_GID")
ctl_as "$TMP/qps-admin.txt" "${ADMIN[@]}"
expect_all "qps: nobody in admin_group, burstctl qps, PIDs listed" \
  "$(pids_table "$TMP/qps-admin.txt")" "$BOTH"
QPS_ARGS=(--json)
ctl_as "$TMP/qps-admin.json" "${ADMIN[@]}"
expect_all "qps: nobody in admin_group, burstctl qps --json, pids" \
  "$(pids_json "$TMP/qps-admin.json")" "$BOTH"
for f in nobody.txt nobody.json root.json root.txt admin.txt admin.json; do
  echo "=== burstctl qps ($f)" >>"$TMP/transcript"
  cat "$TMP/qps-$f" >>"$TMP/transcript"
done
probe_quit qr
probe_quit qn

# ---- 4. credential change -------------------------------------------------------
log "revoke: a root client drops to uid 65534 and stays; controls keep their credentials"
probe_start c1
setup c1 pd cq qp "rts 0" "mr 4096"
probe_start c2
setup c2 pd cq qp "rts 0" "mr 4096"
probe_start c3 "${NOBODY[@]}"
setup c3 pd cq qp "rts 0" "mr 4096"
CONTROL_START=$SECONDS
C1_PID=${P_PID[c1]}
call c1 "setresuid 65534"
expect "revoke: root client setresuid(65534, 65534, 65534)" "$R" ok
call c1 "async 3000"
expect "revoke: async event after setresuid" "$R" "IBV_EVENT_QP_FATAL"
ev_qp=$(sed -n 's/.* qp=\([-0-9]*\).*/\1/p' <<<"$R")
ev_ms=$(sed -n 's/.* ms=\([0-9]*\).*/\1/p' <<<"$R")
expect "revoke: the event's QP (our QP 0)" "${ev_qp:-none}" 0
if [[ -n $ev_ms ]] && ((ev_ms <= 1500)); then
  echo "revoke: event within 1.5 s: ${ev_ms} ms (expected <= 1500)"
else
  echo "revoke: event within 1.5 s: ${ev_ms:-none} ms (expected <= 1500) <-- FAIL"
  FAILED+=("revoke: event time")
fi
call c1 "qpstate 0"
expect "revoke: its QP state" "$R" ERR
call c1 "mr 4096"
expect "revoke: ibv_reg_mr after the revoke" "$R" EACCES
call c1 qp
expect "revoke: ibv_create_qp after the revoke" "$R" EACCES
call c1 pd
expect "revoke: ibv_alloc_pd after the revoke" "$R" EACCES
call c1 "dereg 0"
expect "revoke: ibv_dereg_mr (teardown still allowed)" "$R" ok
REVOKE_LINE="pid $C1_PID uid 0): the credentials of the connecting process changed: revoked"
if wait_for "$TMP/burstd.log" "$REVOKE_LINE" 2; then
  expect "revoke: burstd log" "revoked" revoked
else
  expect "revoke: burstd log" "no line with '$REVOKE_LINE'" revoked
fi
# The controls: 3 s after they connected, with the same credentials.
while ((SECONDS - CONTROL_START < 3)); do sleep 0.2; done
for c in c2 c3; do
  who=root
  [[ $c == c3 ]] && who=nobody
  call "$c" "async 0"
  expect "revoke: control ($who, same credentials, 3 s) async event" "$R" none
  call "$c" "qpstate 0"
  expect "revoke: control ($who) QP state" "$R" RTS
  call "$c" "mr 4096"
  expect "revoke: control ($who) ibv_reg_mr" "$R" ok
  if grep -q "(pid ${P_PID[$c]} uid [0-9]*):.*revoked" "$TMP/burstd.log"; then
    expect_all "revoke: control ($who) in burstd's log" "revoked" "not revoked"
  else
    expect_all "revoke: control ($who) in burstd's log" "not revoked" "not revoked"
  fi
done
probe_quit c1
probe_quit c2
probe_quit c3

if grep -qiE "error|assert|warn" "$TMP/burstd.log"; then
  echo "--- burstd log (errors, warnings):"
  grep -iE "error|assert|warn" "$TMP/burstd.log" | head -20
fi
echo "=== ${SECONDS} s"
# LIMITS_VERBOSE=1: the transcript also when every check passed.
if ((${#FAILED[@]} != 0)) || [[ -n ${LIMITS_VERBOSE:-} ]]; then
  echo "--- probe transcript:"
  cat "$TMP/transcript"
  for n in "${!P_PID[@]}"; do
    [[ -s $TMP/$n.err ]] && { echo "--- $n stderr:"; cat "$TMP/$n.err"; }
  done
fi
if ((${#FAILED[@]} != 0)); then
  printf 'failed: %s\n' "${FAILED[@]}"
  fail "${#FAILED[@]} checks failed"
fi
echo "PASS"
