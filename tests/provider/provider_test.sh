#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The burst verbs provider seen by unmodified rdma-core tools, on a kernel
# without RDMA support: in a private network namespace with a veth pair
# (v0: 10.44.0.1/24, fd44::1/64) and `burstd --backend loopback --netdev v0`
# on a private socket, `burstctl run --netdev v0 --socket SOCK -- CMD` must make
#   - ibv_devices list burst0;
#   - ibv_devinfo -v show port 1 PORT_ACTIVE, link layer Ethernet, active_mtu
#     following the netdev MTU (1500 -> 1024, 9000 -> 4096), and the RoCE GID
#     table: GID[0] fe80::EUI-64, GID[1] ::ffff:10.44.0.1, then fd44::1, all RoCE v2;
#   - ibv_devinfo -d burst0 -i 1 exit 0; the port go DOWN when the link does;
#   - opening the device fail cleanly when burstd is not running (errno, one
#     line on stderr naming the socket);
#   - ibv_rc_pingpong -d burst0 -g 1, server and client on the one loopback port;
#   - the verbs probe (legacy query path, async fd, GID table, PD/CQ, EOPNOTSUPP) pass;
#   - the completion-channel probe pass: burstctl preloads libburst-shim.so
#     ahead of the caller's LD_PRELOAD, ibv_create_comp_channel /
#     ibv_get_cq_event / ibv_destroy_comp_channel work through it;
#   - the ibv_qp_ex probe pass: one ibv_wr_* batch (RDMA WRITE, inline SEND,
#     RDMA READ) on an RC QP connected to itself, data and completions checked;
#   - the control-path probe: PD, CQ, RC QP INIT -> RTR -> RTS towards itself,
#     query_qp, listed by `burstctl qps --json` (RTS, PSNs, pid), all destroyed;
#     killed with SIGKILL while it holds the QP: burstd releases it;
# and burstctl itself remove its private tree and pass on the exit status.
# Usage: provider_test.sh BURSTCTL VERBS_PROBE BURSTD CTL_PROBE CTL_TEST_CLIENT [CHANNEL_PROBE [QP_EX_PROBE]]
# Exit: 0 pass, 1 fail, 77 skipped (not root, rdma-core tools missing, kernel with RDMA).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"  # skip, log, netns_cmd_env (fail below adds the burstd log)

BURSTCTL=${1:?usage: provider_test.sh BURSTCTL VERBS_PROBE}
PROBE=${2:?usage: provider_test.sh BURSTCTL VERBS_PROBE BURSTD CTL_PROBE CTL_TEST_CLIENT}
BURSTD=${3:?}
CTL_PROBE=${4:?}
CLIENT=${5:?}
CHANNEL_PROBE=${6:-}
QP_EX_PROBE=${7:-}

fail() {
  echo "FAIL: $*"
  [[ -f ${TMP:-}/burstd.log ]] && { echo "--- burstd log:"; cat "$TMP/burstd.log"; }
  exit 1
}

[[ $(id -u) -eq 0 ]] || skip "needs root (network namespace, veth, /dev/infiniband node)"
for c in ip nsenter timeout; do
  command -v "$c" >/dev/null || skip "missing tool '$c' (apt-get install iproute2 util-linux coreutils)"
done
for c in ibv_devices ibv_devinfo ibv_rc_pingpong; do
  command -v "$c" >/dev/null || skip "missing rdma-core tool '$c' (apt-get install ibverbs-utils)"
done
netns_require_libibverbs
netns_require_sysfs_path
[[ -x $BURSTCTL ]] || fail "burstctl not found at $BURSTCTL"
[[ -x $PROBE ]] || fail "verbs probe not found at $PROBE"
for b in "$BURSTD" "$CTL_PROBE" "$CLIENT" ${CHANNEL_PROBE:+"$CHANNEL_PROBE"} ${QP_EX_PROBE:+"$QP_EX_PROBE"}; do [[ -x $b ]] || fail "$b not built"; done

NS=burst-provider-$$
TMP=$(mktemp -d /tmp/burst-provider-test.XXXXXX)
BPID=
cleanup() {
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
# Sanitizer builds: the instrumented provider needs the ASan runtime preloaded.
netns_cmd_env
# Every burstctl run gets a private TMPDIR, so a leaked tree would show.
SOCK=$TMP/burstd.sock
brun() {
  inns env TMPDIR="$TMP/tmpdir" timeout 60 "$BURSTCTL" run --netdev v0 --socket "$SOCK" -- \
    "${CMD_ENV[@]}" "$@"
}
ctl() { timeout 20 "$BURSTCTL" --socket "$SOCK" "$@"; }
json() { "$CLIENT" json-get "$1"; }  # stdin: JSON
mkdir -p "$TMP/tmpdir"

ip netns add "$NS" || fail "cannot create network namespace"
ip link add v0 netns "$NS" type veth peer name v1 netns "$NS" || fail "cannot create veth pair"
inns ip link set lo up
inns ip addr add 10.44.0.1/24 dev v0
inns ip addr add fd44::1/64 dev v0 nodad
inns ip link set v0 up
inns ip link set v1 up
for _ in $(seq 50); do
  [[ $(inns cat /sys/class/net/v0/operstate 2>/dev/null) == up ]] && break
  inns ip link show v0 | grep -q 'LOWER_UP' && break
  sleep 0.1
done

# burstd on the veth (loopback backend: the port hears its own frames; no XDP needed).
# nsenter directly (it execs without forking for --net): $! must be burstd
# itself, not a subshell, or the cleanup's kill would leave burstd running.
nsenter --net=/run/netns/"$NS" "$BURSTD" --backend loopback --netdev v0 --socket "$SOCK" \
  >"$TMP/burstd.log" 2>&1 &
BPID=$!
for _ in $(seq 100); do
  [[ -S $SOCK ]] && ctl status >/dev/null 2>&1 && break
  sleep 0.1
done
ctl status >/dev/null 2>&1 || fail "burstd did not come up"

# check NAME FILE REGEX: FILE must contain a line matching REGEX (grep -E).
check() {
  grep -Eq -- "$3" "$2" || { echo "=== $2"; cat "$2"; fail "$1: no line matching '$3'"; }
}

log "ibv_devices"
brun ibv_devices >"$TMP/devices" 2>&1 || { cat "$TMP/devices"; fail "ibv_devices exited $?"; }
cat "$TMP/devices"
check "ibv_devices" "$TMP/devices" '^[[:space:]]+burst0[[:space:]]+[0-9a-f]{16}$'

log "ibv_devinfo -v"
brun ibv_devinfo -v >"$TMP/devinfo" 2>&1 || { cat "$TMP/devinfo"; fail "ibv_devinfo -v failed"; }
cat "$TMP/devinfo"
check "devinfo" "$TMP/devinfo" $'^hca_id:\tburst0$'
check "devinfo" "$TMP/devinfo" 'fw_ver:[[:space:]]+burst 0\.1$'
check "devinfo" "$TMP/devinfo" 'atomic_cap:[[:space:]]+ATOMIC_HCA \(1\)'
check "devinfo" "$TMP/devinfo" "num_comp_vectors:[[:space:]]+$(getconf _NPROCESSORS_CONF)\$"
check "devinfo" "$TMP/devinfo" 'state:[[:space:]]+PORT_ACTIVE \(4\)'
check "devinfo" "$TMP/devinfo" 'max_mtu:[[:space:]]+4096 \(5\)'
check "devinfo" "$TMP/devinfo" 'active_mtu:[[:space:]]+1024 \(3\)'
check "devinfo" "$TMP/devinfo" 'link_layer:[[:space:]]+Ethernet'
check "devinfo" "$TMP/devinfo" 'gid_tbl_len:[[:space:]]+256'
check "devinfo" "$TMP/devinfo" 'GID\[  0\]:[[:space:]]+fe80::[0-9a-f:]+, RoCE v2'
check "devinfo" "$TMP/devinfo" 'GID\[  1\]:[[:space:]]+::ffff:10\.44\.0\.1, RoCE v2'
check "devinfo" "$TMP/devinfo" 'GID\[ +[0-9]+\]:[[:space:]]+fd44::1, RoCE v2'
# GID[0] is the modified EUI-64 of v0's MAC, the netdev's own link-local address.
mac=$(inns cat /sys/class/net/v0/address 2>/dev/null || inns ip -o link show v0 | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
IFS=: read -r m0 m1 m2 m3 m4 m5 <<<"$mac"
# Each group printed as inet_ntop does (no leading zeros).
eui=$(printf '%x:%x:%x:%x' $((((0x$m0 ^ 2) << 8) | 0x$m1)) $(((0x$m2 << 8) | 0xff)) \
  $((0xfe00 | 0x$m3)) $(((0x$m4 << 8) | 0x$m5)))
grep -Eq "GID\[  0\]:[[:space:]]+fe80::$eui, RoCE v2" "$TMP/devinfo" ||
  fail "GID[0] is not fe80::$eui (MAC $mac)"

log "ibv_devinfo -d burst0 -i 1"
brun ibv_devinfo -d burst0 -i 1 >"$TMP/port" 2>&1 || { cat "$TMP/port"; fail "ibv_devinfo -d burst0 -i 1 exited non-zero"; }
check "devinfo -i 1" "$TMP/port" 'port:[[:space:]]+1$'

log "active_mtu follows the netdev MTU (9000 -> 4096)"
inns ip link set v0 mtu 9000
inns ip link set v1 mtu 9000
brun ibv_devinfo -d burst0 -i 1 >"$TMP/port9k" 2>&1 || fail "ibv_devinfo at MTU 9000 failed"
check "devinfo mtu 9000" "$TMP/port9k" 'active_mtu:[[:space:]]+4096 \(5\)'
inns ip link set v0 mtu 1500
inns ip link set v1 mtu 1500

log "port goes DOWN with the link"
inns ip link set v1 down
sleep 0.2
brun ibv_devinfo -d burst0 -i 1 >"$TMP/portdown" 2>&1 || fail "ibv_devinfo with the link down failed"
check "devinfo link down" "$TMP/portdown" 'state:[[:space:]]+PORT_DOWN \(1\)'
inns ip link set v1 up
sleep 0.2

log "no burstd: opening the device fails cleanly, saying why"
inns env TMPDIR="$TMP/tmpdir" timeout 60 "$BURSTCTL" run --netdev v0 --socket "$TMP/nosock" -- \
  "${CMD_ENV[@]}" ibv_devinfo -d burst0 >"$TMP/nod" 2>&1
rc=$?
cat "$TMP/nod"
[[ $rc -ne 0 && $rc -lt 124 ]] || fail "ibv_devinfo without burstd: exit $rc (expected a clean failure)"
check "no burstd" "$TMP/nod" "^burst: burst0: cannot connect to burstd at $TMP/nosock: No such file"
[[ $(grep -c '^burst: ' "$TMP/nod") -eq 1 ]] || fail "the provider's message is not printed once"

log "ibv_rc_pingpong -d burst0 -g 1: server and client on the one loopback port"
nsenter --net=/run/netns/"$NS" env TMPDIR="$TMP/tmpdir" timeout 60 "$BURSTCTL" run --netdev v0 \
  --socket "$SOCK" -- "${CMD_ENV[@]}" ibv_rc_pingpong -d burst0 -g 1 -n 100 >"$TMP/pp-server" 2>&1 &
PP=$!
sleep 0.5
brun ibv_rc_pingpong -d burst0 -g 1 -n 100 10.44.0.1 >"$TMP/pingpong" 2>&1
rc=$?
wait "$PP"
src=$?
cat "$TMP/pingpong"
[[ $rc -eq 0 && $src -eq 0 ]] || { cat "$TMP/pp-server"; fail "ibv_rc_pingpong: client $rc, server $src"; }
check "ibv_rc_pingpong" "$TMP/pingpong" "100 iters in"

log "control path: PD, CQ, RC QP to RTS, listed by burstctl qps, destroyed"
qps_total() { ctl qps --json | json /total; }
[[ $(qps_total) == 0 ]] || fail "burstd has QPs before the probe"
rm -f "$TMP/qpn" "$TMP/go"
brun "$CTL_PROBE" --qpn-file "$TMP/qpn" --hold-until "$TMP/go" >"$TMP/ctlprobe" 2>&1 &
RUNPID=$!
for _ in $(seq 200); do [[ -s $TMP/qpn ]] && break; kill -0 "$RUNPID" 2>/dev/null || break; sleep 0.05; done
[[ -s $TMP/qpn ]] || { cat "$TMP/ctlprobe"; fail "control-path probe did not reach RTS"; }
qpn=$(cat "$TMP/qpn")
ctl qps --json >"$TMP/qps.json" || fail "burstctl qps --json"
cat "$TMP/qps.json"
[[ $(json /total <"$TMP/qps.json") == 1 ]] || fail "burstctl qps: not exactly the probe's QP"
[[ $(json /qps/0/qpn <"$TMP/qps.json") == "$qpn" ]] || fail "burstctl qps: QPN is not $qpn"
[[ $(json /qps/0/type <"$TMP/qps.json") == RC ]] || fail "burstctl qps: type"
[[ $(json /qps/0/state <"$TMP/qps.json") == RTS ]] || fail "burstctl qps: state is not RTS"
[[ $(json /qps/0/dest_qpn <"$TMP/qps.json") == "$qpn" ]] || fail "burstctl qps: dest_qpn"
[[ $(json /qps/0/sq_psn <"$TMP/qps.json") == $((0x654321)) ]] || fail "burstctl qps: sq_psn"
[[ $(json /qps/0/rq_psn <"$TMP/qps.json") == $((0x123456)) ]] || fail "burstctl qps: rq_psn"
[[ $(json /qps/0/path_mtu <"$TMP/qps.json") == 1024 ]] || fail "burstctl qps: path_mtu"
touch "$TMP/go"
wait "$RUNPID"
rc=$?
cat "$TMP/ctlprobe"
[[ $rc -eq 0 ]] || fail "control-path probe failed ($rc)"
check "control-path probe" "$TMP/ctlprobe" '^PASS$'
[[ $(qps_total) == 0 ]] || fail "QPs left in burstd after the probe destroyed everything"

log "control path: the probe killed with SIGKILL while holding its QP; burstd releases it"
rm -f "$TMP/qpn" "$TMP/go"
brun "$CTL_PROBE" --qpn-file "$TMP/qpn" --hold-until "$TMP/go" >"$TMP/ctlprobe2" 2>&1 &
RUNPID=$!
for _ in $(seq 200); do [[ -s $TMP/qpn ]] && break; kill -0 "$RUNPID" 2>/dev/null || break; sleep 0.05; done
[[ -s $TMP/qpn ]] || { cat "$TMP/ctlprobe2"; fail "control-path probe (kill case) did not reach RTS"; }
ctl qps --json >"$TMP/qps2.json" || fail "burstctl qps --json"
[[ $(json /qps/0/qpn <"$TMP/qps2.json") == "$(cat "$TMP/qpn")" ]] || fail "the probe's QP is not listed"
victim=$(json /qps/0/pid <"$TMP/qps2.json")
[[ $(cat /proc/"$victim"/comm 2>/dev/null) == verbs_ctl_probe ]] ||
  fail "burstctl qps pid $victim is not the probe"
kill -9 "$victim"
wait "$RUNPID"
rc=$?
[[ $rc -eq 137 ]] || fail "burstctl run did not report the SIGKILL (exit $rc)"
for _ in $(seq 100); do [[ $(qps_total) == 0 ]] && break; sleep 0.05; done
[[ $(qps_total) == 0 ]] || fail "burstd kept the QP of a killed client"
ctl status --json >"$TMP/status.json" || fail "burstd gone after the client was killed"
[[ $(json /pds <"$TMP/status.json") == 0 && $(json /cqs <"$TMP/status.json") == 0 ]] ||
  fail "burstd kept PDs/CQs of a killed client: $(cat "$TMP/status.json")"
grep -q "pid $victim.*disconnected" "$TMP/burstd.log" || fail "burstd did not log the disconnect"

log "verbs probe"
brun env BURST_PROBE_NETDEV=v0 "$PROBE" >"$TMP/probe" 2>&1
rc=$?
cat "$TMP/probe"
[[ $rc -eq 0 ]] || fail "verbs probe failed ($rc)"
grep -q 'SKIPPED' "$TMP/probe" && fail "verbs probe did not see burst0"

if [[ -n $CHANNEL_PROBE ]]; then
  log "completion channels through the preloaded shim; the caller's LD_PRELOAD is kept"
  # Any library of the probe's own ELF class will do as "the caller's preload".
  keep=$(ldd "$CHANNEL_PROBE" | awk '/libibverbs\.so/ {print $3; exit}')
  [[ -f $keep ]] || fail "cannot find the probe's libibverbs ($keep)"
  # (burstctl itself starts with that LD_PRELOAD: a sanitizer build of it must not insist on
  # its runtime coming first.)
  inns env TMPDIR="$TMP/tmpdir" LD_PRELOAD="$keep" ASAN_OPTIONS=verify_asan_link_order=0 \
    timeout 60 "$BURSTCTL" run --netdev v0 \
    --socket "$SOCK" -- "${CMD_ENV[@]}" env BURST_PROBE_KEEP_PRELOAD="$keep" "$CHANNEL_PROBE" \
    >"$TMP/chanprobe" 2>&1
  rc=$?
  cat "$TMP/chanprobe"
  [[ $rc -eq 0 ]] || fail "completion-channel probe failed ($rc)"
  check "completion-channel probe" "$TMP/chanprobe" '^PASS$'
  # BURST_SHIM= (empty): no shim, and libibverbs gets /dev/full's ENOSPC again.
  inns env TMPDIR="$TMP/tmpdir" BURST_SHIM= timeout 60 "$BURSTCTL" run --netdev v0 \
    --socket "$SOCK" -- "${CMD_ENV[@]}" env BURST_PROBE_NO_SHIM=1 "$CHANNEL_PROBE" \
    >"$TMP/chanprobe2" 2>&1
  rc=$?
  cat "$TMP/chanprobe2"
  [[ $rc -eq 0 ]] || fail "completion-channel probe without the shim failed ($rc)"
fi

if [[ -n $QP_EX_PROBE ]]; then
  log "ibv_qp_ex: one ibv_wr_* batch through the data path"
  brun "$QP_EX_PROBE" >"$TMP/qpexprobe" 2>&1
  rc=$?
  cat "$TMP/qpexprobe"
  [[ $rc -eq 0 ]] || fail "ibv_qp_ex probe failed ($rc)"
  check "ibv_qp_ex probe" "$TMP/qpexprobe" '^PASS$'
fi

log "burstctl: private tree removed, --root kept, exit status passed on"
[[ -z $(ls -A "$TMP/tmpdir") ]] || fail "private sysfs tree left behind: $(ls -A "$TMP/tmpdir")"
inns "$BURSTCTL" run --netdev v0 --root "$TMP/root" -- true || fail "burstctl --root failed"
[[ $(cat "$TMP/root/class/infiniband/burst0/ports/1/gid_attrs/ndevs/0") == v0 ]] ||
  fail "--root tree missing or wrong"
brun false
[[ $? -eq 1 ]] || fail "exit status of the command not passed on"
brun sh -c 'kill -TERM $$'
[[ $? -eq 143 ]] || fail "death by signal not reported as 128+N"
brun /nonexistent/command 2>/dev/null
[[ $? -eq 127 ]] || fail "missing command not reported as 127"
inns "$BURSTCTL" run --netdev nosuchdev -- true 2>"$TMP/nodev"
[[ $? -eq 125 ]] || fail "unknown netdev not reported as a setup failure (125)"
check "unknown netdev" "$TMP/nodev" "nosuchdev"

echo "PASS"
