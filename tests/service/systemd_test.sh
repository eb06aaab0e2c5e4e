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
# The root, the container and these checks are tests/service/lib_nspawn.sh's (shared with
# deb_test.sh, which makes them on the Debian package).
# Usage: systemd_test.sh SOURCE_DIR BUILD_DIR (BUILD_DIR: the build whose burstd runs the
# peer; the container gets $BURST_SERVICE_BUILD, default SOURCE_DIR/build/release when
# built, else BUILD_DIR). Root; exit 77 naming what is missing.
set -uo pipefail
SRC=${1:?usage: systemd_test.sh SOURCE_DIR BUILD_DIR}
BUILD=${2:?usage: systemd_test.sh SOURCE_DIR BUILD_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib_nspawn.sh"

INST=${BURST_SERVICE_BUILD:-$SRC/build/release}
[[ -x $INST/daemon/burstd/burstd ]] || INST=$BUILD
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
PREFIX=svc
svc_require
for f in "$INST/daemon/burstd/burstd" "$INST/tools/burstctl/burstctl" "$INST/provider/libburst-rdmav34.so" \
  "$INST/provider/libburst-shim.so"; do
  [[ -e $f ]] || { echo "FAIL: $f not built"; exit 1; }
done
command -v ibv_rc_pingpong >/dev/null && command -v ib_write_bw >/dev/null ||
  skip "missing ibv_rc_pingpong / ib_write_bw on the host (apt-get install ibverbs-utils perftest)"
LIBDIR=/usr/lib/x86_64-linux-gnu/libibverbs
# burstctl run finds the provider through $BURST_PROVIDER where its build default is not /usr.
CLIENT_ENV=(BURST_PROVIDER=$LIBDIR/libburst)
svc_init

step "root: the cached Debian 12 root, an overlay of it"
svc_root

step "install: cmake --install $INST --prefix /usr (DESTDIR = the overlay)"
DESTDIR=$R cmake --install "$INST" --prefix /usr >"$TMP/install.log" 2>&1 || {
  cat "$TMP/install.log"
  fail "cmake --install"
}
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

step "boot: systemd-nspawn --boot on namespace $NSC (eth0 <-> p0 in $NSP)"
svc_boot

step "enable: systemctl enable --now burstd@eth0"
check_enable
echo "enable: $(C systemctl show -p WatchdogUSec -p MainPID -p StatusText burstd@eth0 | tr '\n' ' ')"
# systemd hears WATCHDOG=1 (its timestamp moves) and the worker-aware STATUS=.
w1=$(C systemctl show -p WatchdogTimestampMonotonic --value burstd@eth0)
sleep 3
w2=$(C systemctl show -p WatchdogTimestampMonotonic --value burstd@eth0)
[[ -n $w1 && $w1 != 0 && $w2 -gt $w1 ]] || fail "no WATCHDOG=1 reached systemd ($w1 -> $w2)"
echo "enable: watchdog pings reach systemd (WatchdogTimestampMonotonic $w1 -> $w2);" \
  "$(C systemctl show -p StatusText burstd@eth0)"

step "apps: ibv_rc_pingpong and ib_write_bw, container (burstd@eth0) -> peer"
check_apps

step "dpdk: backend = dpdk in /etc/burst/eth0.conf, restart"
check_dpdk

step "twice: a second burstd on eth0 refuses"
check_twice

step "stop: systemctl stop leaves no XDP program"
check_stop

step "sigkill: SIGKILL, systemd restarts burstd, the stale program is replaced"
check_sigkill

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
check_bad

step "security: systemd-analyze security burstd@eth0.service"
check_security

step "done"
echo "PASS (total $((SECONDS - T0)) s)"
