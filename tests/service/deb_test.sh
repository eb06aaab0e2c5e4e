#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The Debian package as an operator uses it, in a fresh Debian 12 root booted with
# systemd as PID 1 (systemd-nspawn --boot; its eth0 a veth to a peer namespace
# running a plain burstd):
#   install   `apt install ./burst_VERSION.deb`
#   enable    `systemctl enable --now burstd@eth0`: active; `burstctl status` answers
#   apps      unmodified ibv_rc_pingpong and ib_write_bw against the peer
#   upgrade   a newer build of the package (the same .deb with a higher version):
#             burstd@eth0 is restarted (new pid) and an application that had the
#             device open (ibv_asyncwatch) gets IBV_EVENT_DEVICE_FATAL, not a hang
#   purge     `apt purge burst`: none of the package's files, no burstd@ unit or
#             enablement link, no XDP program on eth0, no /run/burst, no new user
# Usage: deb_test.sh SOURCE_DIR BUILD_DIR DEB   (BUILD_DIR: the build whose burstd runs the
# peer; DEB: scripts/build-deb.sh's burst_*.deb). Root; exit 77 naming what is missing.
# Not in CI yet (docs/packaging.md): it needs a package build of its own.
set -uo pipefail
SRC=${1:?usage: deb_test.sh SOURCE_DIR BUILD_DIR DEB}
BUILD=${2:?usage}
DEB=${3:?usage}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib_root.sh"

skip() { echo "SKIP: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "needs root"
for c in systemd-nspawn nsenter ip mount dpkg-deb; do
  command -v $c >/dev/null || skip "missing '$c'"
done
[[ -f $DEB ]] || { echo "FAIL: no package $DEB (scripts/build-deb.sh builds it)"; exit 1; }
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl

TMP=$(mktemp -d /var/tmp/burst-deb.XXXXXX)
NSC=bdeb-c$$ NSP=bdeb-p$$
NSPAWN_PID= LEADER= PEER_PID= WATCH=
T0=$SECONDS
cleanup() {
  [[ -n $PEER_PID ]] && kill "$PEER_PID" 2>/dev/null
  if [[ -n $NSPAWN_PID ]] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
    kill -TERM "$NSPAWN_PID" 2>/dev/null
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
C() { timeout 120 nsenter -t "$LEADER" -a "$@"; }
fail() {
  echo "FAIL: $*"
  [[ -n $LEADER ]] && C journalctl --no-pager -n 30 -u 'burstd@*' 2>&1 | tail -30
  exit 1
}
step() { echo "--- [$((SECONDS - T0)) s] $*"; }
xdp_on_eth0() { ip -n "$NSC" -d link show eth0 | grep -oE 'prog/xdp[a-z]* id [0-9]+' | head -1; }
unit_state() { C systemctl is-active burstd@eth0 2>/dev/null; }

step "root: the cached Debian 12 root, an overlay of it"
ROOT=$(service_root_build) || fail "could not build the Debian 12 root"
mkdir -p "$TMP"/{upper,work,root}
mount -t overlay overlay -o "lowerdir=$ROOT,upperdir=$TMP/upper,workdir=$TMP/work" "$TMP/root" ||
  fail "overlay mount"
R=$TMP/root
# The newer build: the same package with the version raised (what an upgrade sees).
version=$(dpkg-deb -f "$DEB" Version)
mkdir -p "$TMP/v2"
dpkg-deb -R "$DEB" "$TMP/v2/pkg" && sed -i "s/^Version: .*/Version: $version+upgrade1/" "$TMP/v2/pkg/DEBIAN/control" &&
  dpkg-deb -b "$TMP/v2/pkg" "$R/root/burst_v2.deb" >/dev/null || fail "could not make the newer build"
cp "$DEB" "$R/root/burst_v1.deb"
getent_before=$(cat "$R/etc/passwd" "$R/etc/group" | sha256sum)

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
[[ $s == running || $s == degraded ]] || fail "systemd did not finish booting: $s"
nsenter --net=/run/netns/"$NSP" "$BURSTD" --config-dir "$TMP" --backend xdp --netdev p0 \
  --socket "$TMP/peer.sock" >"$TMP/peer.log" 2>&1 &
PEER_PID=$!

step "install: apt install ./burst_v1.deb ($version)"
C env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-download /root/burst_v1.deb >"$TMP/apt1.log" 2>&1 ||
  C env DEBIAN_FRONTEND=noninteractive dpkg -i /root/burst_v1.deb >>"$TMP/apt1.log" 2>&1 ||
  { cat "$TMP/apt1.log"; fail "installing the package"; }
tail -2 "$TMP/apt1.log"
C dpkg-query -L burst | while read -r f; do [[ -f $R$f ]] && echo "$f"; done >"$TMP/files"
echo "install: $(wc -l <"$TMP/files") files"

step "enable: systemctl enable --now burstd@eth0"
C systemctl enable --now burstd@eth0 || fail "systemctl enable --now burstd@eth0"
[[ $(unit_state) == active ]] || fail "burstd@eth0 is $(unit_state)"
C burstctl --socket /run/burst/eth0.sock status | head -4 || fail "burstctl status"
timeout 10 bash -c "until $BURSTCTL --socket $TMP/peer.sock status >/dev/null 2>&1; do sleep 0.2; done" ||
  fail "the peer burstd did not come up"

app() {  # NAME SECONDS CMD...: server on the peer, client in the container
  local name=$1 t=$2
  shift 2
  nsenter --net=/run/netns/"$NSP" env TMPDIR="$TMP" timeout "$t" "$BURSTCTL" run --netdev p0 \
    --socket "$TMP/peer.sock" -- "$@" >"$TMP/$name.server" 2>&1 &
  local spid=$! crc=1
  sleep 0.5
  for _ in 1 2 3 4 5; do
    C timeout "$t" burstctl --socket /run/burst/eth0.sock run -- "$@" 10.77.0.2 >"$TMP/$name.client" 2>&1
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
step "apps: ibv_rc_pingpong and ib_write_bw, as a user types them"
app rc_pingpong 60 ibv_rc_pingpong -d burst0 -g 1 -n 200 || fail "ibv_rc_pingpong"
app write_bw 90 ib_write_bw -d burst0 -x 1 -F --report_gbits -s 65536 -n 500 || fail "ib_write_bw"

step "upgrade: apt install ./burst_v2.deb while an application has burst0 open"
old=$(C systemctl show -p MainPID --value burstd@eth0)
C timeout 60 burstctl --socket /run/burst/eth0.sock run -- ibv_asyncwatch -d burst0 >"$TMP/watch.log" 2>&1 &
WATCH=$!
sleep 2
C env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-download /root/burst_v2.deb >"$TMP/apt2.log" 2>&1 ||
  C env DEBIAN_FRONTEND=noninteractive dpkg -i /root/burst_v2.deb >>"$TMP/apt2.log" 2>&1 ||
  { cat "$TMP/apt2.log"; fail "upgrading the package"; }
new=$old
for _ in $(seq 40); do
  new=$(C systemctl show -p MainPID --value burstd@eth0)
  [[ $new != "$old" && $new != 0 && $(unit_state) == active ]] && break
  sleep 0.5
done
[[ $new != "$old" && $new != 0 ]] || fail "the upgrade did not restart burstd@eth0 (MainPID $old -> $new)"
echo "upgrade: $(C dpkg-query -W burst), burstd pid $old -> $new"
for _ in $(seq 40); do grep -q DEVICE_FATAL "$TMP/watch.log" && break; sleep 0.5; done
grep -m1 DEVICE_FATAL "$TMP/watch.log" || { cat "$TMP/watch.log"; fail "ibv_asyncwatch saw no IBV_EVENT_DEVICE_FATAL"; }
kill "$WATCH" 2>/dev/null
wait "$WATCH" 2>/dev/null
app rc_pingpong_v2 60 ibv_rc_pingpong -d burst0 -g 1 -n 100 || fail "ibv_rc_pingpong after the upgrade"

step "purge: apt purge burst"
C env DEBIAN_FRONTEND=noninteractive apt-get purge -y burst >"$TMP/purge.log" 2>&1 ||
  { cat "$TMP/purge.log"; fail "apt purge burst"; }
left=()
while read -r f; do [[ -e $R$f ]] && left+=("$f"); done <"$TMP/files"
((${#left[@]} == 0)) || fail "purge left the package's files: ${left[*]}"
links=$(find "$R/etc/systemd/system" -name 'burstd@*' 2>/dev/null)
[[ -z $links ]] || fail "purge left units or enablement links: $links"
[[ ! -e $R/etc/burst ]] || fail "purge left /etc/burst: $(ls -A "$R/etc/burst")"
[[ ! -e $R/run/burst ]] || C test ! -e /run/burst || fail "purge left /run/burst"
[[ -z $(xdp_on_eth0) ]] || fail "purge left $(xdp_on_eth0) on eth0"
C systemctl list-units --all --no-legend 'burstd@*' | grep -q . && fail "units still loaded after purge"
[[ $(cat "$R/etc/passwd" "$R/etc/group" | sha256sum) == "$getent_before" ]] || fail "purge changed users or groups"
echo "purge: nothing of burst left (files, units, links, /etc/burst, /run/burst, XDP program, users)"
echo "PASS (total $((SECONDS - T0)) s)"
