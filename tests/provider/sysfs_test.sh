#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The burst sysfs tree at the standard path (issue 14 item 2). UCX, NCCL,
# Open MPI and Mooncake read /sys/class/infiniband/<dev>/... by absolute path
# and ignore SYSFS_PATH; under `burstctl run` (a private mount namespace,
# docs/sysfs.md) every such path must answer as for a PCI RoCE NIC bound to its
# netdev, and everything else in /sys must stay what it was. In a private
# network namespace with a veth pair (v0: 10.44.0.1/24, fd44::1/64) and
# `burstd --backend loopback --netdev v0`:
#   - by absolute path inside `burstctl run`: ports/1/gid_attrs/types/I "RoCE v2"
#     and ndevs/I "v0" for the used GIDs, ports/1/rate as ibv_devinfo's width and
#     speed, device/{numa_node,local_cpus,local_cpulist,vendor,device},
#     device/driver (basename "burst"), device/net/v0, realpath of device and of
#     burst0/../.. (the NIC directory), no tc/ unless --traffic-class N, and
#     /sys/class/infiniband_verbs; libibverbs finds burst0 there without SYSFS_PATH;
#   - the rest of /sys unchanged: /sys/class and /sys/class/net list the same,
#     a netdev attribute reads the same through the bind mounts, /sys/class is
#     read-only; under `ip netns exec` (a /sys of the netns) device/net/v0 is
#     the netns's v0;
#   - unprivileged (nobody): the same through a user namespace; with neither
#     CAP_SYS_ADMIN nor user namespaces (a user namespace limited to none
#     nested): one warning line, SYSFS_PATH only, the command still runs;
#   - --no-sysfs-mount: /sys untouched, libibverbs still finds burst0;
#   - outside: no mount left, no /sys/class/infiniband;
#   - ucx_info -d (when installed) lists burst0:1 and UCX finds the NIC directory;
#   - ibv_asyncwatch under burstctl run sees IBV_EVENT_DEVICE_FATAL when burstd
#     is stopped.
# Usage: sysfs_test.sh BURSTCTL BURSTD
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools missing, kernel with RDMA).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"  # skip, log, netns_cmd_env (fail below adds the burstd log)

BURSTCTL=${1:?usage: sysfs_test.sh BURSTCTL BURSTD}
BURSTD=${2:?usage: sysfs_test.sh BURSTCTL BURSTD}

fail() {
  echo "FAIL: $*"
  [[ -f ${TMP:-}/burstd.log ]] && { echo "--- burstd log:"; cat "$TMP/burstd.log"; }
  exit 1
}

[[ $(id -u) -eq 0 ]] || skip "needs root (network namespace, veth, /dev/infiniband node)"
for c in ip nsenter timeout realpath; do
  command -v "$c" >/dev/null || skip "missing tool '$c' (apt-get install iproute2 util-linux coreutils)"
done
for c in ibv_devices ibv_devinfo ibv_asyncwatch; do
  command -v "$c" >/dev/null || skip "missing rdma-core tool '$c' (apt-get install ibverbs-utils)"
done
netns_require_sysfs_path
[[ -d /sys/class/net ]] || skip "no sysfs at /sys"
[[ -x $BURSTCTL && -x $BURSTD ]] || fail "burstctl or burstd not built"

NS=burst-sysfs-$$
TMP=$(mktemp -d /tmp/burst-sysfs-test.XXXXXX)
chmod 0755 "$TMP"
BPID=
WATCH=
cleanup() {
  [[ -n $WATCH ]] && kill -TERM "$WATCH" 2>/dev/null && wait "$WATCH" 2>/dev/null
  if [[ -n $BPID ]]; then
    kill -9 "$BPID" 2>/dev/null
    wait "$BPID" 2>/dev/null
  fi
  ip netns del "$NS" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 1' INT TERM

inns() { nsenter --net=/run/netns/"$NS" "$@"; }
SOCK=$TMP/burstd.sock
mkdir -p "$TMP/tmpdir"
chmod 1777 "$TMP/tmpdir"
# Sanitizer builds: the instrumented provider needs the ASan runtime first.
netns_cmd_env
# brun [burstctl run options] -- CMD...
brun() {
  local opts=()
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  inns env TMPDIR="$TMP/tmpdir" timeout 60 "$BURSTCTL" run --netdev v0 --socket "$SOCK" \
    "${opts[@]}" -- "${CMD_ENV[@]}" "$@"
}
# expect NAME GOT WANT
expect() { [[ $2 == "$3" ]] || fail "$1: got '$2', expected '$3'"; }
# check NAME FILE REGEX: FILE must contain a line matching REGEX (grep -E).
check() {
  grep -Eq -- "$3" "$2" || { echo "=== $2"; cat "$2"; fail "$1: no line matching '$3'"; }
}

ip netns add "$NS" || fail "cannot create network namespace"
ip link add v0 netns "$NS" type veth peer name v1 netns "$NS" || fail "cannot create veth pair"
inns ip link set lo up
inns ip addr add 10.44.0.1/24 dev v0
inns ip addr add fd44::1/64 dev v0 nodad
inns ip link set v0 up
inns ip link set v1 up
nsenter --net=/run/netns/"$NS" "$BURSTD" --backend loopback --netdev v0 --socket "$SOCK" \
  >"$TMP/burstd.log" 2>&1 &
BPID=$!
for _ in $(seq 100); do
  [[ -S $SOCK ]] && timeout 20 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 && break
  sleep 0.1
done
timeout 20 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 || fail "burstd did not come up"

# What /sys looks like here (the test's own mount namespace), before and after.
outside() {
  ls /sys/class
  echo "net: $(ls /sys/class/net | tr '\n' ' ')"
  echo "lo: $(cat /sys/class/net/lo/mtu) $(readlink -f /sys/class/net/lo)"
}
outside >"$TMP/outside.before"

# Everything a consumer reads, by absolute path, from inside the command.
# shellcheck disable=SC2016
PROBE='I=/sys/class/infiniband/burst0; P=$I/ports/1
for i in 0 1 2; do echo "type$i: $(cat $P/gid_attrs/types/$i)"; echo "ndev$i: $(cat $P/gid_attrs/ndevs/$i)"; done
echo "ndev3: $(cat $P/gid_attrs/ndevs/3 2>&1 >/dev/null | grep -c "No such file")"
echo "rate: $(cat $P/rate)"
for f in numa_node local_cpus local_cpulist vendor device; do echo "$f: $(cat $I/device/$f)"; done
echo "driver: $(basename "$(readlink $I/device/driver)")"
echo "net: $(ls $I/device/net)"
echo "net-ifindex: $(cat $I/device/net/v0/ifindex)"
echo "device-real: $(realpath $I/device)"
echo "dotdot-real: $(realpath $I/../..)"
echo "tc: $(cat $I/tc/1/traffic_class 2>/dev/null || echo none)"
echo "verbs-abi: $(cat /sys/class/infiniband_verbs/abi_version)"
echo "verbs-ibdev: $(cat /sys/class/infiniband_verbs/uverbs*/ibdev)"
echo "class-ro: $(touch /sys/class/x 2>&1 | grep -c "Read-only")"
echo "possible: $(cat /sys/devices/system/cpu/possible)"'
INSIDE_SYS='ls /sys/class | grep -vx -e infiniband -e infiniband_verbs
echo "net: $(ls /sys/class/net | tr "\n" " ")"
echo "lo: $(cat /sys/class/net/lo/mtu) $(readlink -f /sys/class/net/lo)"'

log "absolute /sys/class/infiniband paths inside burstctl run"
brun -- sh -c "$PROBE" >"$TMP/probe" 2>&1 || { cat "$TMP/probe"; fail "probe under burstctl run failed"; }
cat "$TMP/probe"
for i in 0 1 2; do
  check "gid type $i" "$TMP/probe" "^type$i: RoCE v2\$"
  check "gid ndev $i" "$TMP/probe" "^ndev$i: v0\$"
done
check "unused GID slot has no ndev" "$TMP/probe" '^ndev3: 1$'
check "numa_node" "$TMP/probe" '^numa_node: -1$'  # a veth has no device
check "local_cpus" "$TMP/probe" '^local_cpus: [0-9a-f]+(,[0-9a-f]{8})*$'
possible=$(sed -n 's/^possible: //p' "$TMP/probe")
check "local_cpulist" "$TMP/probe" "^local_cpulist: $possible\$"
check "vendor" "$TMP/probe" '^vendor: 0x627374$'
check "device" "$TMP/probe" '^device: 0x0001$'
check "driver basename" "$TMP/probe" '^driver: burst$'
check "device/net" "$TMP/probe" '^net: v0$'
# (nsenter keeps the host's /sys, which does not show v0: the tree names it.)
check "device/net/v0" "$TMP/probe" "^net-ifindex: $(inns ip -o link show v0 | cut -d: -f1)\$"
check "realpath device" "$TMP/probe" "^device-real: $TMP/tmpdir/burst-sysfs\.[^/]+/devices/burst0\$"
dev_real=$(sed -n 's/^device-real: //p' "$TMP/probe")
check "realpath burst0/../.." "$TMP/probe" "^dotdot-real: $dev_real\$"
check "no tc/ by default" "$TMP/probe" '^tc: none$'
check "infiniband_verbs/abi_version" "$TMP/probe" '^verbs-abi: 6$'
check "infiniband_verbs/uverbsN/ibdev" "$TMP/probe" '^verbs-ibdev: burst0$'
check "/sys/class read-only" "$TMP/probe" '^class-ro: 1$'

log "ports/1/rate agrees with ibv_devinfo"
brun -- ibv_devinfo -v -d burst0 >"$TMP/devinfo" 2>&1 || { cat "$TMP/devinfo"; fail "ibv_devinfo -v"; }
width=$(sed -n 's/.*active_width:[[:space:]]*\([0-9]*\)X.*/\1/p' "$TMP/devinfo")
gbps=$(sed -n 's/.*active_speed:[[:space:]]*\([0-9.]*\) Gbps.*/\1/p' "$TMP/devinfo")
rate=$(sed -n 's/^rate: //p' "$TMP/probe")
[[ $rate =~ ^([0-9.]+)\ Gb/sec\ \(([0-9]+)X\ [A-Z]+\)$ ]] || fail "rate '$rate' not in the kernel's format"
expect "rate width" "${BASH_REMATCH[2]}" "$width"
awk -v t="${BASH_REMATCH[1]}" -v w="$width" -v s="$gbps" 'BEGIN { exit !(t + 0 == w * s) }' ||
  fail "rate '$rate' is not ${width}X $gbps Gbps"
check "devinfo GID types" "$TMP/devinfo" 'GID\[  1\]:[[:space:]]+::ffff:10\.44\.0\.1, RoCE v2'

log "libibverbs finds burst0 at /sys without SYSFS_PATH"
brun -- env -u SYSFS_PATH ibv_devinfo -v -d burst0 >"$TMP/devinfo-sys" 2>&1 ||
  { cat "$TMP/devinfo-sys"; fail "ibv_devinfo without SYSFS_PATH"; }
check "devinfo via /sys" "$TMP/devinfo-sys" 'GID\[  1\]:[[:space:]]+::ffff:10\.44\.0\.1, RoCE v2'

log "the rest of /sys unchanged inside"
brun -- sh -c "$INSIDE_SYS" >"$TMP/inside" 2>&1 || { cat "$TMP/inside"; fail "listing /sys inside"; }
inns sh -c 'ls /sys/class; echo "net: $(ls /sys/class/net | tr "\n" " ")"
  echo "lo: $(cat /sys/class/net/lo/mtu) $(readlink -f /sys/class/net/lo)"' >"$TMP/inns"
diff "$TMP/inns" "$TMP/inside" || fail "/sys inside burstctl run differs from outside (diff above)"

log "--traffic-class 106: tc/1/traffic_class"
brun --traffic-class 106 -- cat /sys/class/infiniband/burst0/tc/1/traffic_class >"$TMP/tc" 2>&1
check "traffic_class" "$TMP/tc" '^Global tclass=106$'

log "ip netns exec (a /sys of the network namespace): device/net/v0 is that netdev"
ip netns exec "$NS" env TMPDIR="$TMP/tmpdir" timeout 60 "$BURSTCTL" run --netdev v0 \
  --socket "$SOCK" -- sh -c 'D=/sys/class/infiniband/burst0/device/net/v0
    echo "link: $(readlink -f $D)"; echo "real: $(readlink -f /sys/class/net/v0)"
    echo "operstate: $(cat $D/operstate)"; echo "lo: $(ls /sys/class/net | tr "\n" " ")"' \
  >"$TMP/netnsexec" 2>&1 || { cat "$TMP/netnsexec"; fail "under ip netns exec"; }
cat "$TMP/netnsexec"
expect "device/net/v0 target" "$(sed -n 's/^link: //p' "$TMP/netnsexec")" \
  "$(sed -n 's/^real: //p' "$TMP/netnsexec")"
check "device/net/v0 operstate" "$TMP/netnsexec" '^operstate: up$'

log "--no-sysfs-mount: /sys untouched, SYSFS_PATH still works"
brun --no-sysfs-mount -- sh -c 'ls -d /sys/class/infiniband 2>/dev/null; ibv_devices' \
  >"$TMP/nomount" 2>&1 || { cat "$TMP/nomount"; fail "--no-sysfs-mount"; }
grep -q '^/sys/class/infiniband' "$TMP/nomount" && fail "--no-sysfs-mount showed /sys/class/infiniband"
check "--no-sysfs-mount ibv_devices" "$TMP/nomount" '^[[:space:]]+burst0[[:space:]]'

log "unprivileged (nobody): the tree through a user namespace"
if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups \
  test -x "$BURSTCTL"; then
  inns env TMPDIR="$TMP/tmpdir" timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups \
    "$BURSTCTL" run --netdev v0 -- "${CMD_ENV[@]}" sh -c \
    'id -u; cat /sys/class/infiniband/burst0/ports/1/gid_attrs/types/1 2>&1; ibv_devices' \
    >"$TMP/nobody" 2>&1
  rc=$?
  cat "$TMP/nobody"
  [[ $rc -eq 0 ]] || fail "burstctl run as nobody exited $rc"
  check "as nobody: still nobody" "$TMP/nobody" '^65534$'
  check "as nobody: ibv_devices" "$TMP/nobody" '^[[:space:]]+burst0[[:space:]]'
  if setpriv --reuid=65534 --regid=65534 --clear-groups unshare --user --map-current-user \
    --mount true 2>/dev/null; then
    check "as nobody: GID type through a user namespace" "$TMP/nobody" '^RoCE v2$'
    grep -q 'warning' "$TMP/nobody" && fail "as nobody: a warning although user namespaces work"
  else
    echo "(user namespaces not allowed here: expecting the fallback)"
    [[ $(grep -c 'burstctl run: warning: .*SYSFS_PATH' "$TMP/nobody") -eq 1 ]] ||
      fail "as nobody without user namespaces: not exactly one warning line"
  fi
else
  echo "(skipped: no setpriv, or nobody cannot reach $BURSTCTL)"
fi

log "no CAP_SYS_ADMIN and no user namespace allowed: one warning, SYSFS_PATH only"
# A user namespace whose own limit forbids nested ones, capabilities dropped.
inns env TMPDIR="$TMP/tmpdir" timeout 60 unshare --user --map-root-user sh -c \
  'echo 0 >/proc/sys/user/max_user_namespaces 2>/dev/null || { echo NO-LIMIT; exit 0; }
   exec setpriv --bounding-set=-all --inh-caps=-all "$@"' \
  sh "$BURSTCTL" run --netdev v0 -- "${CMD_ENV[@]}" sh -c \
  'ls -d /sys/class/infiniband 2>/dev/null; ibv_devices' >"$TMP/nons" 2>&1
rc=$?
cat "$TMP/nons"
if grep -q '^NO-LIMIT$' "$TMP/nons" || { [[ $rc -ne 0 ]] && ! grep -q 'burstctl run' "$TMP/nons"; }; then
  echo "(skipped: cannot make a user namespace that forbids nested ones here)"
else
  [[ $rc -eq 0 ]] || fail "burstctl run without any namespace exited $rc"
  [[ $(grep -c '^burstctl run: warning: .*SYSFS_PATH' "$TMP/nons") -eq 1 ]] ||
    fail "without any namespace: not exactly one warning line"
  grep -q '^/sys/class/infiniband' "$TMP/nons" && fail "without any namespace: /sys/class/infiniband shown"
  check "without any namespace: ibv_devices" "$TMP/nons" '^[[:space:]]+burst0[[:space:]]'
fi

if command -v ucx_info >/dev/null; then
  log "ucx_info -d lists burst0:1 and UCX finds the NIC directory"
  brun -- env UCX_LOG_LEVEL=debug ucx_info -d >"$TMP/ucx" 2>&1 ||
    { cat "$TMP/ucx"; fail "ucx_info -d"; }
  grep -E 'Device: burst0|burst0' "$TMP/ucx" | grep -E 'Device:|sysfs path|gid_index|vendor_id' | sort -u
  check "ucx_info burst0:1" "$TMP/ucx" 'Device: burst0:1'
  check "UCX sysfs path" "$TMP/ucx" "burst0: PF sysfs path is '.*/devices/burst0'"
else
  echo "(ucx_info not installed: UCX check skipped; apt-get install ucx-utils)"
fi

log "ibv_asyncwatch sees IBV_EVENT_DEVICE_FATAL when burstd stops"
# nsenter directly (it execs): $! must be the timeout process, not a subshell.
nsenter --net=/run/netns/"$NS" env TMPDIR="$TMP/tmpdir" timeout 60 "$BURSTCTL" run --netdev v0 \
  --socket "$SOCK" -- "${CMD_ENV[@]}" ibv_asyncwatch -d burst0 >"$TMP/async" 2>&1 &
WATCH=$!
for _ in $(seq 200); do grep -q 'async event FD' "$TMP/async" && break; sleep 0.05; done
grep -q 'async event FD' "$TMP/async" || { cat "$TMP/async"; fail "ibv_asyncwatch did not open burst0"; }
kill -TERM "$BPID"
wait "$BPID"
BPID=
for _ in $(seq 200); do grep -q 'IBV_EVENT_DEVICE_FATAL' "$TMP/async" && break; sleep 0.05; done
kill -TERM "$WATCH" 2>/dev/null
wait "$WATCH" 2>/dev/null
WATCH=
cat "$TMP/async"
check "ibv_asyncwatch" "$TMP/async" 'event_type IBV_EVENT_DEVICE_FATAL \(8\), port'

log "outside: nothing changed, nothing left"
outside >"$TMP/outside.after"
diff "$TMP/outside.before" "$TMP/outside.after" || fail "/sys changed outside burstctl run"
[[ -e /sys/class/infiniband ]] && fail "/sys/class/infiniband appeared outside"
grep -q ' - tmpfs burst-sysfs ' /proc/self/mountinfo && fail "burstctl's tmpfs is mounted in this namespace"
grep -q ' /sys/class ' /proc/self/mountinfo && fail "something is mounted on /sys/class here"
[[ -z $(ls -A "$TMP/tmpdir") ]] || fail "sysfs tree left behind: $(ls -A "$TMP/tmpdir")"

echo "PASS"
