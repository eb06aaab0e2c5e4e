# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Shared scaffolding of the network-namespace tests (sourced, not run).
#   netns_require_root REASON          skip (exit 77) unless root
#   netns_require_tools "HINT" CMD...  skip unless every command exists
#   netns_pair PREFIX                  two namespaces $NA and $NB (not yet linked),
#                                      a temp dir $TMP, BG_PIDS, and a cleanup trap
#                                      that kills BG_PIDS and deletes both namespaces
#                                      (with every veth and XDP program in them)
#   netns_require_sysfs_path           skip on a kernel with RDMA (SYSFS_PATH is ignored there)
#   netns_require_libibverbs           skip unless libibverbs.so.1 is installed
#   netns_require_built FILE...        fail unless every FILE is executable
#   netns_link_ab DEV_A ADDR_A DEV_B ADDR_B [VETH-OPTS...]
#                                      veth DEV_A in A <-> DEV_B in B (VETH-OPTS on both
#                                      ends), addresses (/24), both up, wait for LOWER_UP
#                                      (brings lo up in both namespaces)
#   inA / inB CMD...                   run CMD in namespace A / B (nsenter: keeps the
#                                      mounts, so /sys/fs/bpf stays visible)
#   field FILE PATTERN NAME            value of NAME=... on the first line matching PATTERN
#   wait_for FILE PATTERN SECONDS      wait until PATTERN appears in FILE
#   netns_cmd_env                      CMD_ENV: the prefix for commands that load the
#                                      provider (sanitizer builds: ASan runtime first)
#   netns_one_burstd PREFIX ADDR4 [ADDR6]
#                                      one namespace $NS with a veth pair v0 <-> v1 inside
#                                      (v0: ADDR4/24 [+ ADDR6/64]), both up; $TMP, BG_PIDS and
#                                      the cleanup trap as netns_pair; CMD_ENV; burstd
#                                      --backend loopback --netdev v0 on $SOCK, log
#                                      $TMP/burstd.log, pid $BPID
#   inns CMD... / brun CMD... / ctl ARGS...
#                                      CMD in $NS; CMD under `burstctl run --netdev v0` on
#                                      $SOCK (CMD_ENV first, a private TMPDIR, at most
#                                      $BRUN_TIMEOUT s, default 60); burstctl on $SOCK
#   netns_start_burstd NS SOCK LOG WHAT ARGS...
#                                      $BURSTD ARGS --socket SOCK in NS (under
#                                      $BURSTD_WRAP), output appended to LOG; BURSTD_PID,
#                                      BG_PIDS; fails "burstd WHAT did not come up"
#                                      unless `$BURSTCTL status` answers within 10 s
# Background processes must be started with nsenter directly (not inA/inB, which
# are functions: `inA cmd &` forks a subshell and $! would not be the process).

skip() { echo "SKIP: $*"; exit 77; }
# fail also shows $NETNS_FAIL_LOG (netns_one_burstd sets it to burstd's log).
fail() {
  echo "FAIL: $*"
  [[ -n ${NETNS_FAIL_LOG:-} && -f $NETNS_FAIL_LOG ]] && { echo "--- $NETNS_FAIL_LOG:"; cat "$NETNS_FAIL_LOG"; }
  exit 1
}
log() { echo "--- $*"; }

netns_require_root() {
  [[ $(id -u) -eq 0 ]] || skip "needs root ($1)"
}

netns_require_tools() {
  local hint=$1 c
  shift
  for c in "$@"; do
    command -v "$c" >/dev/null || skip "missing tool '$c' (apt-get install $hint)"
  done
}

netns_require_sysfs_path() {
  [[ -d /sys/class/infiniband ]] &&
    skip "this kernel has RDMA support: libibverbs lists devices over netlink and ignores SYSFS_PATH"
  return 0
}

netns_require_libibverbs() {
  # (not grep -q: under pipefail, ldconfig would die of SIGPIPE and the test skip)
  ldconfig -p | grep 'libibverbs\.so\.1 ' >/dev/null || skip "libibverbs missing (apt-get install libibverbs1)"
}

netns_require_built() {
  local b
  for b in "$@"; do [[ -x $b ]] || fail "$b not built"; done
}

netns_pair() {
  NA=$1-$$-a
  NB=$1-$$-b
  TMP=$(mktemp -d "/tmp/$1-test.XXXXXX")
  BG_PIDS=()
  trap netns_cleanup EXIT
  trap 'echo "interrupted"; exit 1' INT TERM
  ip netns add "$NA" || fail "cannot create network namespace $NA"
  ip netns add "$NB" || fail "cannot create network namespace $NB"
}

netns_cleanup() {
  local p
  for p in "${BG_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  for p in "${BG_PIDS[@]}"; do wait "$p" 2>/dev/null; done
  [[ -n ${NA:-} ]] && ip netns del "$NA" 2>/dev/null
  [[ -n ${NB:-} ]] && ip netns del "$NB" 2>/dev/null
  [[ -n ${NS:-} ]] && ip netns del "$NS" 2>/dev/null
  rm -rf "$TMP"
}

inA() { nsenter --net=/run/netns/"$NA" "$@"; }
inB() { nsenter --net=/run/netns/"$NB" "$@"; }

field() {
  grep -m1 -- "$2" "$1" | tr ' ' '\n' | sed -n "s/^$3=//p" | head -1
}

wait_for() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

netns_cmd_env() {
  CMD_ENV=()
  [[ -n ${BURST_TEST_PRELOAD:-} ]] || return 0
  # burstctl run preloads its shim: keep it behind the sanitizer runtime
  # (BURST_TEST_PRELOAD, set by CMake in sanitizer builds).
  CMD_ENV=(sh -c 'LD_PRELOAD="$0${LD_PRELOAD:+:$LD_PRELOAD}" ASAN_OPTIONS=detect_leaks=0 exec "$@"'
           "$BURST_TEST_PRELOAD")
}

netns_start_burstd() {
  local ns=$1 sock=$2 logf=$3 what=$4 i
  shift 4
  nsenter --net=/run/netns/"$ns" ${BURSTD_WRAP:-} "$BURSTD" "$@" --socket "$sock" >>"$logf" 2>&1 &
  BURSTD_PID=$!
  BG_PIDS+=("$BURSTD_PID")
  for ((i = 0; i < 100; i++)); do
    [[ -S $sock ]] && timeout 5 "$BURSTCTL" --socket "$sock" status >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  cat "$logf"
  fail "burstd${what:+ $what} did not come up"
}

netns_link_ab() {
  local da=$1 aa=$2 db=$3 ab=$4
  shift 4
  ip link add "$da" netns "$NA" "$@" type veth peer name "$db" netns "$NB" "$@" ||
    fail "cannot create veth pair"
  inA ip link set lo up
  inB ip link set lo up
  inA ip addr add "$aa/24" dev "$da"
  inB ip addr add "$ab/24" dev "$db"
  inA ip link set "$da" up
  inB ip link set "$db" up
  for _ in $(seq 50); do
    inA ip link show "$da" | grep -q LOWER_UP && inB ip link show "$db" | grep -q LOWER_UP && break
    sleep 0.1
  done
}

netns_one_burstd() {
  local i
  NS=$1-$$
  TMP=$(mktemp -d "/tmp/$1-test.XXXXXX")
  BG_PIDS=()
  trap netns_cleanup EXIT
  trap 'echo "interrupted"; exit 1' INT TERM
  ip netns add "$NS" || fail "cannot create network namespace $NS"
  ip link add v0 netns "$NS" type veth peer name v1 netns "$NS" || fail "cannot create veth pair"
  inns ip link set lo up
  inns ip addr add "$2/24" dev v0
  [[ -n ${3:-} ]] && inns ip addr add "$3/64" dev v0 nodad
  inns ip link set v0 up
  inns ip link set v1 up
  for ((i = 0; i < 50; i++)); do
    inns ip link show v0 | grep -q 'LOWER_UP' && break
    sleep 0.1
  done
  netns_cmd_env
  SOCK=$TMP/burstd.sock
  mkdir -p "$TMP/tmpdir"
  # The loopback backend: the port hears its own frames; no XDP needed.
  NETNS_FAIL_LOG=$TMP/burstd.log
  netns_start_burstd "$NS" "$SOCK" "$TMP/burstd.log" "" --backend loopback --netdev v0
  BPID=$BURSTD_PID
}

inns() { nsenter --net=/run/netns/"$NS" "$@"; }
brun() {
  inns env TMPDIR="$TMP/tmpdir" timeout "${BRUN_TIMEOUT:-60}" "$BURSTCTL" run --netdev v0 \
    --socket "$SOCK" -- "${CMD_ENV[@]}" "$@"
}
ctl() { timeout 20 "$BURSTCTL" --socket "$SOCK" "$@"; }
