#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burstd@eth0.service in a fresh Debian 12 root booted with systemd as PID 1
# (systemd-nspawn --boot), its eth0 a veth to a peer namespace running a plain
# burstd. Steps (each timed):
#   root      the cached Debian 12 root (lib_root.sh: built once with mmdebstrap)
#   install   `cmake --install BUILD --prefix /usr` with DESTDIR into an overlay of it
#             (files without an install rule yet are copied, and the test says so)
#   boot      systemd reaches running
#   enable    `systemctl enable --now burstd@eth0`: active; `burstctl status` answers
#   apps      unmodified ibv_rc_pingpong and ib_write_bw under `burstctl run` against the peer
#   dpdk      /etc/burst/eth0.conf `backend = dpdk`, restart, ib_write_bw again (skipped
#             loudly when DPDK cannot start in the container)
#   stop      `systemctl stop`: no XDP program left on eth0
#   sigkill   SIGKILL: systemd restarts burstd, which replaces its stale program
#   twice     a second burstd on eth0 refuses (the lock)
#   watchdog  with BUILD_DIR's burstd (test hooks) and worker 0 hung on purpose:
#             systemd's watchdog kills it (skipped without hooks)
#   bad       unknown key, bad value, absent netdev, dpdk without hugepages: the unit
#             fails, "FILE:LINE: ... (fix: ...)" in the journal, nothing attached
#   security  `systemd-analyze security burstd@eth0.service`
# Usage: systemd_test.sh SOURCE_DIR BUILD_DIR (BUILD_DIR: the build whose burstd runs the
# peer; the container gets $BURST_SERVICE_BUILD, default SOURCE_DIR/build/release when
# built, else BUILD_DIR). Root; exit 77 naming what is missing.
set -uo pipefail
SRC=${1:?usage: systemd_test.sh SOURCE_DIR BUILD_DIR}
BUILD=${2:?usage: systemd_test.sh SOURCE_DIR BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib_root.sh"

skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces, systemd-nspawn, overlay mount)"
for c in systemd-nspawn nsenter ip mount; do
  command -v $c >/dev/null || skip "missing '$c' (apt-get install systemd-container util-linux iproute2)"
done
compgen -G "$SERVICE_ROOT_CACHE/debian12-*/.complete" >/dev/null ||
  command -v mmdebstrap >/dev/null || skip "missing mmdebstrap (apt-get install mmdebstrap) to build the Debian 12 root"
INST=${BURST_SERVICE_BUILD:-$SRC/build/release}
[[ -x $INST/daemon/burstd/burstd ]] || INST=$BUILD
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
for f in "$INST/daemon/burstd/burstd" "$INST/tools/burstctl/burstctl" "$INST/provider/libburst-rdmav34.so" \
  "$INST/provider/libburst-shim.so" \
  "$BURSTD" "$BURSTCTL"; do
  [[ -e $f ]] || { echo "FAIL: $f not built"; exit 1; }
done
command -v ibv_rc_pingpong >/dev/null && command -v ib_write_bw >/dev/null ||
  skip "missing ibv_rc_pingpong / ib_write_bw on the host (apt-get install ibverbs-utils perftest)"

TMP=$(mktemp -d /var/tmp/burst-service.XXXXXX)
NSC=bsvc-c$$ NSP=bsvc-p$$
NSPAWN_PID= LEADER= PEER_PID= FAILED=()
T0=$SECONDS TSTEP=$SECONDS
cleanup() {
  [[ -n $PEER_PID ]] && kill "$PEER_PID" 2>/dev/null
  if [[ -n $NSPAWN_PID ]] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
    kill -TERM "$NSPAWN_PID" 2>/dev/null  # nspawn asks the container's systemd to halt
    timeout 15 tail --pid="$NSPAWN_PID" -f /dev/null || {
      [[ -n $LEADER ]] && kill -KILL "$LEADER" 2>/dev/null
      kill -KILL "$NSPAWN_PID" 2>/dev/null
    }
  fi
  wait 2>/dev/null
  mountpoint -q "$TMP/root" && umount -l "$TMP/root"
  ip netns del "$NSC" 2>/dev/null
  ip netns del "$NSP" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  if [[ -n $LEADER ]]; then
    echo "--- journal of burstd@*:"
    C journalctl --no-pager -n 40 -u 'burstd@*' 2>&1 | tail -40
  fi
  [[ -f $TMP/peer.log ]] && { echo "--- peer burstd:"; tail -20 "$TMP/peer.log"; }
  exit 1
}
step() {
  echo "--- [$((SECONDS - T0)) s] $* (previous step: $((SECONDS - TSTEP)) s)"
  TSTEP=$SECONDS
}
C() { timeout 90 nsenter -t "$LEADER" -a "$@"; }  # a command in the container
unit_state() { C systemctl is-active burstd@eth0 2>/dev/null; }
xdp_on_eth0() { ip -n "$NSC" -d link show eth0 | grep -oE 'prog/xdp[a-z]* id [0-9]+' | head -1; }

step "root: the cached Debian 12 root"
ROOT=$(service_root_build) || fail "could not build the Debian 12 root"
echo "root: $ROOT"

step "install: cmake --install $INST --prefix /usr (DESTDIR = an overlay of the root)"
mkdir -p "$TMP"/{upper,work,root}
mount -t overlay overlay -o "lowerdir=$ROOT,upperdir=$TMP/upper,workdir=$TMP/work" "$TMP/root" ||
  fail "overlay mount"
R=$TMP/root
DESTDIR=$R cmake --install "$INST" --prefix /usr >"$TMP/install.log" 2>&1 || {
  cat "$TMP/install.log"
  fail "cmake --install"
}
LIBDIR=/usr/lib/x86_64-linux-gnu/libibverbs
# place SRC DEST: what cmake --install did not put there (no install rule on this branch yet).
place() {
  [[ -e $R$2 ]] && return 0
  mkdir -p "$(dirname "$R$2")" && cp "$1" "$R$2" || fail "install: cannot copy $1"
  echo "install: $2 copied by the test (no install rule)"
}
place "$INST/daemon/burstd/burstd" /usr/sbin/burstd
place "$INST/tools/burstctl/burstctl" /usr/bin/burstctl
place "$INST/provider/libburst-rdmav34.so" $LIBDIR/libburst-rdmav34.so
place "$INST/provider/libburst-shim.so" $LIBDIR/libburst-shim.so
place "$SRC/packaging/systemd/burstd@.service" /lib/systemd/system/burstd@.service
place "$SRC/packaging/etc/burst/burstd.conf" /etc/burst/burstd.conf
# burstctl run finds the provider through $BURST_PROVIDER where its build default is not /usr.
PROV=(env BURST_PROVIDER=$LIBDIR/libburst)

step "boot: systemd-nspawn --boot on namespace $NSC (eth0 <-> p0 in $NSP)"
ip netns add "$NSC" && ip netns add "$NSP" || fail "ip netns add"
ip link add eth0 netns "$NSC" type veth peer name p0 netns "$NSP" || fail "veth"
ip -n "$NSC" addr add 10.77.0.1/24 dev eth0
ip -n "$NSP" addr add 10.77.0.2/24 dev p0
for ns in "$NSC" "$NSP"; do ip -n "$ns" link set lo up; done
ip -n "$NSC" link set eth0 up
ip -n "$NSP" link set p0 up
systemd-nspawn --boot --register=no --keep-unit -D "$R" --network-namespace-path=/run/netns/"$NSC" \
  --console=passive --capability=CAP_BPF,CAP_IPC_LOCK,CAP_NET_ADMIN \
  --system-call-filter='bpf io_uring_setup io_uring_enter io_uring_register' >"$TMP/nspawn.log" 2>&1 &
NSPAWN_PID=$!
for _ in $(seq 100); do
  LEADER=$(ps -o pid= --ppid "$NSPAWN_PID" 2>/dev/null | head -1 | tr -d ' ')
  [[ -n $LEADER ]] && break
  sleep 0.2
done
[[ -n $LEADER ]] || { cat "$TMP/nspawn.log"; fail "the container did not start"; }
for _ in $(seq 120); do
  s=$(C systemctl is-system-running 2>/dev/null)
  [[ $s == running || $s == degraded ]] && break
  sleep 0.5
done
echo "boot: systemd is '$s' (leader pid $LEADER)"
[[ $s == running || $s == degraded ]] || fail "systemd did not finish booting: $s"

# The peer: a plain burstd (AF_XDP on p0), as on another host.
nsenter --net=/run/netns/"$NSP" "$BURSTD" --config-dir "$TMP" --backend xdp --netdev p0 \
  --socket "$TMP/peer.sock" >"$TMP/peer.log" 2>&1 &
PEER_PID=$!

step "enable: systemctl enable --now burstd@eth0"
C systemctl enable --now burstd@eth0 || fail "systemctl enable --now burstd@eth0"
[[ $(unit_state) == active ]] || fail "burstd@eth0 is $(unit_state)"
C burstctl --socket /run/burst/eth0.sock status >"$TMP/status" 2>&1 || { cat "$TMP/status"; fail "burstctl status"; }
head -5 "$TMP/status"
echo "enable: $(C systemctl show -p WatchdogUSec -p MainPID -p StatusText burstd@eth0 | tr '\n' ' ')"
echo "enable: program on eth0: $(xdp_on_eth0)"
# systemd hears WATCHDOG=1 (its timestamp moves) and the worker-aware STATUS=.
w1=$(C systemctl show -p WatchdogTimestampMonotonic --value burstd@eth0)
sleep 3
w2=$(C systemctl show -p WatchdogTimestampMonotonic --value burstd@eth0)
[[ -n $w1 && $w1 != 0 && $w2 -gt $w1 ]] || fail "no WATCHDOG=1 reached systemd ($w1 -> $w2)"
echo "enable: watchdog pings reach systemd (WatchdogTimestampMonotonic $w1 -> $w2);" \
  "$(C systemctl show -p StatusText burstd@eth0)"
timeout 10 bash -c "until $BURSTCTL --socket $TMP/peer.sock status >/dev/null 2>&1; do sleep 0.2; done" ||
  fail "the peer burstd did not come up"

# app NAME SECONDS CMD...: CMD's server under `burstctl run` on the peer, its client in
# the container against 10.77.0.2 (both unmodified rdma-core / perftest binaries).
app() {
  local name=$1 t=$2
  shift 2
  nsenter --net=/run/netns/"$NSP" env TMPDIR="$TMP" timeout "$t" "$BURSTCTL" run --netdev p0 \
    --socket "$TMP/peer.sock" -- "$@" >"$TMP/$name.server" 2>&1 &
  local spid=$! crc=1
  sleep 0.5
  for _ in 1 2 3 4 5; do
    C "${PROV[@]}" timeout "$t" burstctl --socket /run/burst/eth0.sock run --netdev eth0 -- "$@" 10.77.0.2 \
      >"$TMP/$name.client" 2>&1
    crc=$?
    grep -q -E "Couldn't connect|Connection refused|Unable to init the socket" "$TMP/$name.client" || break
    sleep 0.5
  done
  wait $spid
  local src=$?
  if ((src != 0 || crc != 0)); then
    echo "=== server ($src):"; cat "$TMP/$name.server"; echo "=== client ($crc):"; cat "$TMP/$name.client"
    return 1
  fi
  grep -E "bytes in|^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+" "$TMP/$name.client" | head -3
}

step "apps: ibv_rc_pingpong and ib_write_bw, container (burstd@eth0) -> peer"
app rc_pingpong 60 ibv_rc_pingpong -d burst0 -g 1 -n 200 || fail "ibv_rc_pingpong"
app write_bw 90 ib_write_bw -d burst0 -x 1 -F --report_gbits -s 65536 -n 500 || fail "ib_write_bw"

step "dpdk: backend = dpdk in /etc/burst/eth0.conf, restart"
printf 'backend = dpdk\n' >"$R/etc/burst/eth0.conf"
if C systemctl restart burstd@eth0 && [[ $(unit_state) == active ]]; then
  C journalctl --no-pager -u burstd@eth0 -n 30 | grep -m1 -E "DPDK port|backend dpdk" | cut -c1-200
  [[ -z $(xdp_on_eth0) ]] || fail "an XDP program stayed on eth0 under the dpdk backend"
  app write_bw_dpdk 90 ib_write_bw -d burst0 -x 1 -F --report_gbits -s 65536 -n 500 ||
    fail "ib_write_bw with backend = dpdk"
else
  echo "SKIP (step dpdk): burstd@eth0 with backend = dpdk did not start in the container:"
  C journalctl --no-pager -u burstd@eth0 -n 5 | sed 's/^/    /'
  C systemctl reset-failed burstd@eth0
fi
rm -f "$R/etc/burst/eth0.conf"
C systemctl restart burstd@eth0 && [[ $(unit_state) == active ]] || fail "back to xdp: not active"
[[ -n $(xdp_on_eth0) ]] || fail "backend xdp again: no program on eth0"

step "twice: a second burstd on eth0 refuses"
C timeout 20 burstd --netdev eth0 --socket /run/burst/second.sock >"$TMP/second.log" 2>&1
rc=$?
cat "$TMP/second.log" | tail -1
((rc != 0)) && grep -q "is served by another burstd" "$TMP/second.log" || fail "the second burstd: exit $rc"
[[ $(unit_state) == active ]] || fail "the first instance died"

step "stop: systemctl stop leaves no XDP program"
C systemctl stop burstd@eth0
[[ -z $(xdp_on_eth0) ]] || fail "after stop: $(xdp_on_eth0) still on eth0"
echo "stop: eth0 has no XDP program"

step "sigkill: SIGKILL, systemd restarts burstd, the stale program is replaced"
C systemctl start burstd@eth0 || fail "start"
old=$(C systemctl show -p MainPID --value burstd@eth0)
prog=$(xdp_on_eth0)
C systemctl kill -s KILL burstd@eth0
new=$old
for _ in $(seq 60); do
  new=$(C systemctl show -p MainPID --value burstd@eth0)
  [[ $new != "$old" && $new != 0 && $(unit_state) == active ]] && break
  sleep 0.5
done
[[ $new != "$old" && $new != 0 ]] || fail "no restart after SIGKILL (MainPID $old -> $new)"
C journalctl --no-pager -u burstd@eth0 _PID="$new" | grep -m1 "replaced stale" | cut -c1-220 ||
  fail "the restarted burstd did not report replacing the stale program"
echo "sigkill: pid $old -> $new, $prog -> $(xdp_on_eth0)"
C "${PROV[@]}" burstctl --socket /run/burst/eth0.sock status >/dev/null || fail "status after the restart"
app rc_pingpong_again 60 ibv_rc_pingpong -d burst0 -g 1 -n 100 || fail "ibv_rc_pingpong after the restart"
C systemctl stop burstd@eth0

step "watchdog: a worker that hangs (test hook) makes systemd kill and restart burstd"
if grep -q -a BURST_TEST_STALL_WORKER_MS "$BURSTD"; then
  install -D "$BURSTD" "$R/usr/local/sbin/burstd-hooks"
  D=$R/etc/systemd/system/burstd@eth0.service.d
  mkdir -p "$D"
  printf '%s\n' "[Service]" "Environment=BURST_TEST_STALL_WORKER_MS=1500" "WatchdogSec=2" "ExecStart=" \
    "ExecStart=/usr/local/sbin/burstd-hooks --netdev %i --socket /run/burst/%i.sock" >"$D/stall.conf"
  C systemctl daemon-reload
  C systemctl reset-failed burstd@eth0 2>/dev/null
  C systemctl start burstd@eth0 || fail "start with the stall hook"
  first=$(C systemctl show -p MainPID --value burstd@eth0)
  hit=
  for _ in $(seq 40); do
    hit=$(C journalctl --no-pager -u burstd@eth0 -o cat | grep -m1 -E "Watchdog timeout")
    [[ -n $hit ]] && break
    sleep 0.5
  done
  [[ -n $hit ]] || fail "no watchdog timeout although worker 0 hung"
  echo "watchdog: $(C journalctl --no-pager -u burstd@eth0 -o cat | grep -m1 'has not moved for')"
  echo "watchdog: $hit"
  rm -rf "$D"
  C systemctl daemon-reload
  C systemctl stop burstd@eth0
  C systemctl reset-failed burstd@eth0 2>/dev/null
  echo "watchdog: pid $first was killed by systemd's watchdog"
  # The killed burstd could not detach its program: the next start replaces it, a stop removes it.
  C systemctl start burstd@eth0 && [[ $(unit_state) == active ]] || fail "start after the watchdog kill"
  C systemctl stop burstd@eth0
  [[ -z $(xdp_on_eth0) ]] || fail "after the watchdog kill, start and stop: $(xdp_on_eth0) on eth0"
else
  echo "SKIP (step watchdog): $BURSTD has no test hooks (BURST_TEST_HOOKS=OFF); service.notify covers the pings"
fi

step "bad: configurations that must not start"
# bad NAME UNIT PATTERN FILE LINES...: UNIT fails, PATTERN in its journal, eth0 untouched.
bad() {
  local name=$1 unit=$2 pattern=$3 file=$4
  shift 4
  [[ $file != - ]] && printf '%s\n' "$@" >"$R$file"
  local since
  C systemctl reset-failed "$unit" 2>/dev/null  # the earlier steps' starts count against StartLimitBurst
  since=$(C date '+%Y-%m-%d %H:%M:%S')
  sleep 1
  if C systemctl start "$unit" 2>/dev/null; then
    fail "$name: $unit started"
  fi
  C systemctl stop "$unit" 2>/dev/null  # no restarts meanwhile
  local line
  line=$(C journalctl --no-pager -u "$unit" --since "$since" -o cat | grep -m1 -E "$pattern")
  [[ -n $line ]] || { C journalctl --no-pager -u "$unit" --since "$since" -o cat | tail; fail "$name: no '$pattern' in the journal"; }
  echo "bad $name: $line"
  [[ -z $(xdp_on_eth0) ]] || fail "$name: an XDP program is attached"
  C systemctl reset-failed "$unit" 2>/dev/null
  [[ $file != - ]] && rm -f "$R$file"
  return 0
}
bad unknown-key burstd@eth0 "/etc/burst/eth0.conf:2: unknown key 'wokers' \(fix: did you mean 'workers'" \
  /etc/burst/eth0.conf "# two workers" "wokers = 2"
bad bad-value burstd@eth0 "/etc/burst/burstd.conf:[0-9]+: 'xdp_mode = fast' is not valid \(fix:" \
  /etc/burst/burstd.conf "$(cat "$SRC/packaging/etc/burst/burstd.conf")" "xdp_mode = fast"
cp "$SRC/packaging/etc/burst/burstd.conf" "$R/etc/burst/burstd.conf"
bad no-netdev burstd@nosuch0 "netdev 'nosuch0' not found in this network namespace: it does not exist \(fix:" -
if awk '/HugePages_Free/ {exit !($2 == 0)}' /proc/meminfo; then
  bad dpdk-hugepages burstd@eth0 "eth0.conf:2: dpdk_hugepages = on: DPDK needs [0-9]+ free 2 MB hugepages.*\(fix: .sysctl -w vm.nr_hugepages=" /etc/burst/eth0.conf \
    "backend = dpdk" "dpdk_hugepages = on"
else
  echo "SKIP (case dpdk-hugepages): this host has free hugepages"
fi

step "security: systemd-analyze security burstd@eth0.service"
C systemd-analyze security --no-pager burstd@eth0.service >"$TMP/security" 2>&1
grep -E "^→ Overall exposure level" "$TMP/security" || { tail -5 "$TMP/security"; fail "systemd-analyze security"; }
grep -E "^✗" "$TMP/security" | cut -c1-110 | head -40

step "done"
echo "PASS (total $((SECONDS - T0)) s)"
