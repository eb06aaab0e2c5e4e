#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# service.deb: the Debian package as an operator uses it, in a fresh Debian 12 root
# booted with systemd as PID 1 (systemd-nspawn --boot; its eth0 a veth to a peer
# namespace running a plain burstd). The root, the container and the checks are
# lib_nspawn.sh's (shared with service.systemd). Steps (each timed):
#   install   `apt install ./burst_VERSION_amd64.deb` (the root already holds the
#             package's run-time dependencies: apt resolves them from dpkg's status,
#             no mirror is reached)
#   enable    `systemctl enable --now burstd@eth0`: active; `burstctl status` answers
#   apps      unmodified ibv_rc_pingpong and ib_write_bw against the peer, as a user
#             types them (`burstctl run -- CMD`, the installed provider)
#   dpdk      `backend = dpdk` in /etc/burst/eth0.conf + restart, ib_write_bw (skipped
#             loudly when DPDK cannot start there)
#   twice     a second burstd on eth0 refuses
#   stop      `systemctl stop`: no XDP program left on eth0
#   sigkill   SIGKILL: systemd restarts burstd, which replaces its stale program
#   bad       unknown key, bad value, absent netdev (, dpdk without hugepages): the unit
#             fails with FILE:LINE and the fix in the journal, nothing attached
#   security  `systemd-analyze security burstd@eth0.service`
#   upgrade   a newer build of the package (the same .deb repacked with a higher
#             version): burstd@eth0 restarts (new pid) and an application that had
#             burst0 open (ibv_asyncwatch) gets IBV_EVENT_DEVICE_FATAL, not a hang
#   purge     `apt purge burst`: none of the package's files, no burstd@ unit or
#             enablement link, no /etc/burst, no /run/burst, no XDP program, no user
# Usage: deb_test.sh SOURCE_DIR BUILD_DIR [DEB]   (BUILD_DIR: the build whose burstd is
# the peer; DEB: a burst_*.deb or a directory holding one; default: the package package.deb
# keeps in ${BURST_PACKAGE_DIR:-/tmp/burst-package}/deb, ctest fixture deb_package, skipping
# when there is none). Root; exit 77 naming what is missing.
set -uo pipefail
SRC=${1:?usage: deb_test.sh SOURCE_DIR BUILD_DIR DEB}
BUILD=${2:?usage: deb_test.sh SOURCE_DIR BUILD_DIR DEB}
DEB=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib_nspawn.sh"

BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
PREFIX=deb
CTL_SOCKET=()  # burstctl as a user types it: the only socket in /run/burst
svc_require dpkg-deb
if [[ -z $DEB ]]; then  # package.deb's package (it skips where it cannot build one)
  DEB=$(ls "${BURST_PACKAGE_DIR:-/tmp/burst-package}"/deb/burst_*.deb 2>/dev/null | head -1)
  [[ -f $DEB ]] || skip "no package in ${BURST_PACKAGE_DIR:-/tmp/burst-package}/deb: package.deb (the" \
    "fixture deb_package) did not build one; it says why"
fi
[[ -d $DEB ]] && DEB=$(ls "$DEB"/burst_*.deb 2>/dev/null | head -1)
[[ -f $DEB ]] || { echo "FAIL: no package '$DEB' (scripts/build-deb.sh builds it)"; exit 1; }
svc_init

step "root: the cached Debian 12 root, an overlay of it"
svc_root
version=$(dpkg-deb -f "$DEB" Version)
V1=burst_${version}_amd64.deb V2=burst_${version}+upgrade1_amd64.deb
# The newer build: the same package with the version raised (what an upgrade sees).
mkdir -p "$TMP/v2"
dpkg-deb -R "$DEB" "$TMP/v2/pkg" && sed -i "s/^Version: .*/Version: $version+upgrade1/" "$TMP/v2/pkg/DEBIAN/control" &&
  dpkg-deb -b "$TMP/v2/pkg" "$R/root/$V2" >/dev/null || fail "could not make the newer build"
cp "$DEB" "$R/root/$V1"
# Its run-time dependencies (and the DPDK plugins it recommends) must already be in the
# root: no mirror is reachable there.
missing=()
IFS=',' read -ra deps <<<"$(dpkg-deb -f "$DEB" Depends), $(dpkg-deb -f "$DEB" Recommends)"
for d in "${deps[@]}"; do
  p=$(awk '{print $1}' <<<"$d")
  # burst-dkms (recommended) is this source's other package: apt leaves an unavailable
  # recommendation out, and the service works without the module.
  [[ $p == burst-dkms ]] && continue
  [[ -n $p ]] && ! dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Status}' "$p" 2>/dev/null |
    grep -q 'install ok installed' && missing+=("$p")
done
((${#missing[@]} == 0)) || fail "the root lacks the package's dependencies ${missing[*]}: add them to" \
  "SERVICE_ROOT_PACKAGES in tests/service/lib_root.sh"

step "boot: systemd-nspawn --boot on namespace $NSC (eth0 <-> p0 in $NSP)"
svc_boot
users_before=$(cat "$R/etc/passwd" "$R/etc/group" "$R/etc/shadow" | sha256sum)

step "install: apt install ./$V1"
C sh -c "cd /root && DEBIAN_FRONTEND=noninteractive apt install -y ./$V1" >"$TMP/apt1.log" 2>&1 ||
  { cat "$TMP/apt1.log"; fail "apt install ./$V1"; }
# What the operator sees (apt's progress counter, written without newlines, left out).
sed -e 's/(Reading database \.\.\. [0-9]*%//g' -e '/^$/d' "$TMP/apt1.log"
C dpkg-query -L burst | while read -r f; do [[ (-f $R$f || -L $R$f) && ! -d $R$f ]] && echo "$f"; done >"$TMP/files"
echo "install: $(wc -l <"$TMP/files") files of $(C dpkg-query -W burst)"

step "enable: systemctl enable --now burstd@eth0"
check_enable

step "apps: ibv_rc_pingpong and ib_write_bw, container (burstd@eth0) -> peer"
check_apps
echo "apps: the client as a user sees it: burstctl run -- ib_write_bw -d burst0 -x 1 -F --report_gbits -s 65536 -n 500 10.77.0.2"
cat "$TMP/write_bw.client"

step "dpdk: backend = dpdk in /etc/burst/eth0.conf, restart"
check_dpdk

step "twice: a second burstd on eth0 refuses"
check_twice

step "stop: systemctl stop leaves no XDP program"
check_stop

step "sigkill: SIGKILL, systemd restarts burstd, the stale program is replaced"
check_sigkill

step "bad: configurations that must not start"
check_bad

step "security: systemd-analyze security burstd@eth0.service"
check_security

step "upgrade: apt install ./$V2 while ibv_asyncwatch has burst0 open"
C systemctl start burstd@eth0 && [[ $(unit_state) == active ]] || fail "start before the upgrade"
old=$(C systemctl show -p MainPID --value burstd@eth0)
C timeout 40 burstctl run -- ibv_asyncwatch -d burst0 >"$TMP/watch.log" 2>&1 &
WATCH=$!
SVC_EXTRA_PIDS=$WATCH
for _ in $(seq 100); do grep -q 'async event FD' "$TMP/watch.log" && break; sleep 0.1; done
grep -q 'async event FD' "$TMP/watch.log" || { cat "$TMP/watch.log"; fail "ibv_asyncwatch did not open burst0"; }
C sh -c "cd /root && DEBIAN_FRONTEND=noninteractive apt install -y ./$V2" >"$TMP/apt2.log" 2>&1 ||
  { cat "$TMP/apt2.log"; fail "apt install ./$V2"; }
grep -E "^(Unpacking|Setting up) burst" "$TMP/apt2.log"
new=$old
for _ in $(seq 40); do
  new=$(C systemctl show -p MainPID --value burstd@eth0)
  [[ $new != "$old" && $new != 0 && $(unit_state) == active ]] && break
  sleep 0.5
done
[[ $new != "$old" && $new != 0 ]] || fail "the upgrade did not restart burstd@eth0 (MainPID $old -> $new)"
echo "upgrade: $(C dpkg-query -W burst), burstd pid $old -> $new"
for _ in $(seq 100); do grep -q IBV_EVENT_DEVICE_FATAL "$TMP/watch.log" && break; sleep 0.1; done
grep -m1 'event_type IBV_EVENT_DEVICE_FATAL' "$TMP/watch.log" ||
  { cat "$TMP/watch.log"; fail "ibv_asyncwatch saw no IBV_EVENT_DEVICE_FATAL"; }
app rc_pingpong_v2 60 ibv_rc_pingpong -d burst0 -g 1 -n 100 || fail "ibv_rc_pingpong after the upgrade"

step "purge: apt purge burst"
C env DEBIAN_FRONTEND=noninteractive apt purge -y burst >"$TMP/purge.log" 2>&1 ||
  { cat "$TMP/purge.log"; fail "apt purge burst"; }
grep -E "^(Removing|Purging)" "$TMP/purge.log"
left=()
while read -r f; do [[ -e $R$f || -L $R$f ]] && left+=("$f"); done <"$TMP/files"
((${#left[@]} == 0)) || fail "purge left the package's files: ${left[*]}"
links=$(find "$R/etc/systemd/system" "$R/lib/systemd/system" "$R/run/systemd" -name 'burstd@*' 2>/dev/null)
[[ -z $links ]] || fail "purge left units or enablement links: $links"
[[ ! -e $R/etc/burst ]] || fail "purge left /etc/burst: $(ls -A "$R/etc/burst")"
C test ! -e /run/burst || fail "purge left /run/burst"
[[ -z $(xdp_on_eth0) ]] || fail "purge left $(xdp_on_eth0) on eth0"
units=$(C systemctl list-units --all --no-legend 'burstd@*'; C systemctl list-unit-files --no-legend 'burstd@*')
[[ -z $units ]] || fail "units still known to systemd after purge: $units"
C pgrep -x burstd && fail "a burstd still runs after purge"
[[ $(cat "$R/etc/passwd" "$R/etc/group" "$R/etc/shadow" | sha256sum) == "$users_before" ]] ||
  fail "the package changed users or groups"
echo "purge: nothing of burst left (files, units, links, /etc/burst, /run/burst, XDP program, processes, users)"

step "done"
echo "PASS (total $((SECONDS - T0)) s)"
