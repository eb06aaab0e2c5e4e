#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Several NICs on one host (issue 16, docs/devices.md): a host namespace H with
# two veth links, m0 (10.46.0.1) to peer namespace P0 and m1 (10.46.1.1) to P1,
# one burstd (AF_XDP) per netdev in H with its socket in one directory as the
# service lays them out (RUN/m0.sock, RUN/m1.sock, plus a stale socket file of
# a burstd that is gone), and a burstd on p1 in P1. Then:
#   - `burstctl devices` lists burst0 on m0 and burst1 on m1 with their sockets,
#     backend and state, and the stale socket as not answering (table and JSON);
#   - under `burstctl run` (no --netdev, no --socket) ibv_devices lists burst0
#     and burst1, bound to m0 and m1 (gid_attrs/ndevs, burst_socket, the
#     IPv4 GID of each), and ibv_devinfo -d burst1 answers;
#   - `ibv_rc_pingpong -d burst1 -g 1` and `ib_write_bw -d burst1 -x 1` (when
#     perftest is installed) from H against P1 (server under `burstctl run
#     --socket P1-SOCK`, netdev taken from its burstd) pass;
#   - `burstctl run` without --netdev works with one burstd while both
#     Ethernet interfaces are up (a socket directory holding only m1's socket,
#     and --socket alone): burst0 is m1;
#   - --netdev m1 restricts the run to m1's burstd (burst0 = m1);
#   - `burstctl status` without --socket takes the directory's only socket, and
#     with several asks for --socket, naming them;
#   - `device_name = burst7` in m0's burstd config pins its name: devices, run
#     (burst0 is then m1, burst7 m0), ibv_devinfo -d burst7 and status use it.
# Usage: multi_nic_test.sh BURSTCTL BURSTD
# Exit: 0 pass, 1 fail, 77 skipped (not root, rdma-core tools missing, kernel with RDMA).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"

BURSTCTL=${1:?usage: multi_nic_test.sh BURSTCTL BURSTD}
BURSTD=${2:?usage: multi_nic_test.sh BURSTCTL BURSTD}

netns_require_root "network namespaces, veth, AF_XDP, /dev/infiniband node"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout
netns_require_tools "ibverbs-utils" ibv_devices ibv_devinfo ibv_rc_pingpong
netns_require_tools "python3" python3
netns_require_libibverbs
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD"

# H = $NA (the host with two NICs), P1 = $NB, P0 = $NC.
netns_pair burst-multi
NC=burst-multi-$$-c
ip netns add "$NC" || fail "cannot create network namespace $NC"
trap 'ip netns del "$NC" 2>/dev/null; netns_cleanup' EXIT
inC() { nsenter --net=/run/netns/"$NC" "$@"; }
netns_cmd_env

netns_link_ab m1 10.46.1.1 p1 10.46.1.2
ip link add m0 netns "$NA" type veth peer name p0 netns "$NC" || fail "cannot create veth m0-p0"
inA ip addr add 10.46.0.1/24 dev m0
inC ip addr add 10.46.0.2/24 dev p0
inC ip link set lo up
inA ip link set m0 up
inC ip link set p0 up
for _ in $(seq 50); do
  inA ip link show m0 | grep -q LOWER_UP && break
  sleep 0.1
done
inA ping -c1 -W2 10.46.1.2 >/dev/null || fail "no IP connectivity m1 -> p1"
inA ping -c1 -W2 10.46.0.2 >/dev/null || fail "no IP connectivity m0 -> p0"

RUN=$TMP/run
mkdir -p "$RUN" "$TMP/one" "$TMP/tmpdir"
NETNS_FAIL_LOG=$TMP/burstd-m1.log
start() {  # NS DEV SOCK
  netns_start_burstd "$1" "$3" "$TMP/burstd-$2.log" "on $2" --backend xdp --netdev "$2" --workers 1
}
# m1's burstd first: the names follow the netdevs, not the start order or the socket names.
start "$NA" m1 "$RUN/m1.sock"
start "$NA" m0 "$RUN/m0.sock"
M0_PID=$BURSTD_PID
start "$NB" p1 "$TMP/p1.sock"
# A socket file whose burstd is gone (bound, never listened, closed).
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.bind(sys.argv[1])' \
  "$RUN/stale.sock" || fail "cannot make the stale socket file"
ln -s "$RUN/m1.sock" "$TMP/one/m1.sock"

check() {  # NAME FILE REGEX
  grep -Eq -- "$3" "$2" || { echo "=== $2"; cat "$2"; fail "$1: no line matching '$3'"; }
}
hrun() {  # burstctl run in H with the socket directory RUN; extra burstctl options before --
  local opts=()
  while [[ $# -gt 0 && $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  nsenter --net=/run/netns/"$NA" env -u BURST_SOCKET TMPDIR="$TMP/tmpdir" timeout 60 \
    "$BURSTCTL" run "${opts[@]}" -- "${CMD_ENV[@]}" "$@"
}

log "burstctl devices (table)"
inA env -u BURST_SOCKET timeout 30 "$BURSTCTL" --socket-dir "$RUN" devices >"$TMP/devices" 2>&1 ||
  { cat "$TMP/devices"; fail "burstctl devices exited non-zero"; }
cat "$TMP/devices"
check "devices" "$TMP/devices" '^DEVICE +NETDEV +SOCKET +BACKEND +STATE$'
check "devices" "$TMP/devices" "^burst0 +m0 +$RUN/m0.sock +xdp +ACTIVE\$"
check "devices" "$TMP/devices" "^burst1 +m1 +$RUN/m1.sock +xdp +ACTIVE\$"
check "devices" "$TMP/devices" "^- +- +$RUN/stale.sock +- +no answer\$"

log "burstctl devices --json"
inA env -u BURST_SOCKET BURST_SOCKET_DIR="$RUN" timeout 30 "$BURSTCTL" devices --json \
  >"$TMP/devices.json" 2>&1 || { cat "$TMP/devices.json"; fail "burstctl devices --json"; }
python3 - "$TMP/devices.json" "$RUN" <<'PY' || fail "burstctl devices --json: unexpected content"
import json, sys
j = json.load(open(sys.argv[1]))
run = sys.argv[2]
d = {x["socket"]: x for x in j["devices"]}
assert j["socket_dir"] == run, j
assert d[run + "/m0.sock"]["ibdev"] == "burst0" and d[run + "/m0.sock"]["netdev"] == "m0", d
assert d[run + "/m1.sock"]["ibdev"] == "burst1" and d[run + "/m1.sock"]["netdev"] == "m1", d
assert d[run + "/m1.sock"]["backend"] == "xdp" and d[run + "/m1.sock"]["port_state"] == "ACTIVE"
assert d[run + "/stale.sock"]["answered"] is False and d[run + "/stale.sock"]["ibdev"] == ""
print("devices --json ok")
PY

log "ibv_devices under burstctl run: burst0 and burst1"
hrun --socket-dir "$RUN" -- ibv_devices >"$TMP/ibv_devices" 2>&1 ||
  { cat "$TMP/ibv_devices"; fail "ibv_devices exited non-zero"; }
cat "$TMP/ibv_devices"
check "ibv_devices" "$TMP/ibv_devices" '^[[:space:]]+burst0[[:space:]]+[0-9a-f]{16}$'
check "ibv_devices" "$TMP/ibv_devices" '^[[:space:]]+burst1[[:space:]]+[0-9a-f]{16}$'

log "each device bound to its netdev and burstd"
hrun --socket-dir "$RUN" -- sh -c 'for d in burst0 burst1; do
    p=/sys/class/infiniband/$d
    echo "$d ndev=$(cat $p/ports/1/gid_attrs/ndevs/0) socket=$(cat $p/burst_socket) gid1=$(cat $p/ports/1/gids/1)"
  done' >"$TMP/bind" 2>&1 || { cat "$TMP/bind"; fail "reading the trees failed"; }
cat "$TMP/bind"
check "binding" "$TMP/bind" "^burst0 ndev=m0 socket=$RUN/m0.sock gid1=0000:0000:0000:0000:0000:ffff:0a2e:0001\$"
check "binding" "$TMP/bind" "^burst1 ndev=m1 socket=$RUN/m1.sock gid1=0000:0000:0000:0000:0000:ffff:0a2e:0101\$"

log "ibv_devinfo -d burst1 (the provider talks to m1's burstd)"
hrun --socket-dir "$RUN" -- ibv_devinfo -d burst1 -v >"$TMP/devinfo1" 2>&1 ||
  { cat "$TMP/devinfo1"; fail "ibv_devinfo -d burst1 failed"; }
check "devinfo burst1" "$TMP/devinfo1" $'^hca_id:\tburst1$'
check "devinfo burst1" "$TMP/devinfo1" 'GID\[  1\]:[[:space:]]+::ffff:10\.46\.1\.1, RoCE v2'
grep "^burst: " "$TMP/devinfo1" && fail "the provider warned (netdev mismatch?)"

# pair_p1 NAME SERVER-ARGS... -- CLIENT-ARGS...: the server in P1 under `burstctl run
# --socket P1-SOCK` (no --netdev: p1 from HELLO), the client in H under `burstctl run`
# with the socket directory RUN against 10.46.1.2; both must exit 0.
pair_p1() {
  local name=$1 sargs=() cargs=() spid rc attempt
  shift
  while [[ $1 != -- ]]; do sargs+=("$1"); shift; done
  shift
  cargs=("$@")
  for attempt in 1 2 3; do  # a client that came before the server listened: again
    nsenter --net=/run/netns/"$NB" env -u BURST_SOCKET TMPDIR="$TMP/tmpdir" timeout 60 "$BURSTCTL" \
      run --socket "$TMP/p1.sock" -- "${CMD_ENV[@]}" "${sargs[@]}" >"$TMP/$name-server" 2>&1 &
    spid=$!
    BG_PIDS+=("$spid")
    sleep 1
    hrun --socket-dir "$RUN" -- "${cargs[@]}" 10.46.1.2 >"$TMP/$name-client" 2>&1
    rc=$?
    [[ $rc -eq 0 ]] && break
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    grep -Eqi "couldn't connect|unable to (connect|open)" "$TMP/$name-client" || break
  done
  cat "$TMP/$name-client"
  [[ $rc -eq 0 ]] || { cat "$TMP/$name-server"; fail "$name: the client exited $rc"; }
  wait "$spid" || { cat "$TMP/$name-server"; fail "$name: the server in P1 failed"; }
}

log "ibv_rc_pingpong -d burst1 -g 1 against the peer behind m1"
pair_p1 pingpong ibv_rc_pingpong -d burst0 -g 1 -n 200 -- ibv_rc_pingpong -d burst1 -g 1 -n 200
check "pingpong" "$TMP/pingpong-client" 'bytes in .* seconds'

if command -v ib_write_bw >/dev/null; then
  log "ib_write_bw -d burst1 -x 1 against the peer behind m1"
  pair_p1 write_bw ib_write_bw -d burst0 -x 1 -F -n 500 -- ib_write_bw -d burst1 -x 1 -F -n 500
  check "ib_write_bw" "$TMP/write_bw-client" '^ *65536 +500 +'
else
  log "ib_write_bw: perftest not installed, not run"
fi

log "one burstd, two Ethernet interfaces up: burstctl run without --netdev"
hrun --socket-dir "$TMP/one" -- sh -c 'cat /sys/class/infiniband/burst0/ports/1/gid_attrs/ndevs/0;
  ls /sys/class/infiniband' >"$TMP/one.out" 2>&1 || { cat "$TMP/one.out"; fail "run with one burstd failed"; }
cat "$TMP/one.out"
[[ $(head -1 "$TMP/one.out") == m1 && $(tail -1 "$TMP/one.out") == burst0 ]] ||
  fail "with only m1's burstd, burst0 is not m1 (or other devices are listed)"
hrun --socket "$RUN/m1.sock" -- ibv_devinfo -d burst0 >"$TMP/sock.out" 2>&1 ||
  { cat "$TMP/sock.out"; fail "burstctl run --socket without --netdev failed"; }
hrun --socket-dir "$RUN" --netdev m1 -- sh -c 'cat $SYSFS_PATH/class/infiniband/burst0/ports/1/gid_attrs/ndevs/0;
  ls $SYSFS_PATH/class/infiniband' >"$TMP/nd.out" 2>&1 || { cat "$TMP/nd.out"; fail "--netdev m1 failed"; }
[[ $(tr '\n' ' ' <"$TMP/nd.out") == "m1 burst0 " ]] || { cat "$TMP/nd.out"; fail "--netdev m1 did not restrict to m1"; }

log "burstctl status without --socket: the only socket of the directory, else a list"
inA env -u BURST_SOCKET timeout 30 "$BURSTCTL" --socket-dir "$TMP/one" status >"$TMP/status1" 2>&1 ||
  { cat "$TMP/status1"; fail "burstctl status with one socket in the directory failed"; }
check "status" "$TMP/status1" '^device +burst0 on m1, port ACTIVE$'
if inA env -u BURST_SOCKET timeout 30 "$BURSTCTL" --socket-dir "$RUN" status >"$TMP/status2" 2>&1; then
  cat "$TMP/status2"
  [[ -S /run/burst/burstd.sock ]] || fail "burstctl status chose one of several burstd"
else
  check "status" "$TMP/status2" "several burstd sockets in $RUN, choose one with --socket"
fi

log "device_name pins a name: m0's burstd restarted as burst7; m1's is then burst0"
kill "$M0_PID"
wait "$M0_PID" 2>/dev/null
printf 'device_name = burst7\n' >"$TMP/m0.conf"
netns_start_burstd "$NA" "$RUN/m0.sock" "$TMP/burstd-m0-pinned.log" "on m0 (pinned)" --backend xdp \
  --netdev m0 --workers 1 --config "$TMP/m0.conf"
inA env -u BURST_SOCKET BURST_SOCKET_DIR="$RUN" timeout 30 "$BURSTCTL" devices --json \
  >"$TMP/devices2.json" 2>&1 || { cat "$TMP/devices2.json"; fail "burstctl devices --json (pinned)"; }
python3 - "$TMP/devices2.json" "$RUN" <<'PY' || fail "burstctl devices --json: the pinned name is not used"
import json, sys
j = json.load(open(sys.argv[1]))
d = {x["socket"]: x for x in j["devices"]}
run = sys.argv[2]
assert d[run + "/m0.sock"]["ibdev"] == "burst7" and d[run + "/m0.sock"]["netdev"] == "m0", d
assert d[run + "/m1.sock"]["ibdev"] == "burst0" and d[run + "/m1.sock"]["netdev"] == "m1", d
print("pinned devices --json ok")
PY
hrun --socket-dir "$RUN" -- sh -c 'ls /sys/class/infiniband; cat /sys/class/infiniband/burst7/ports/1/gid_attrs/ndevs/0' \
  >"$TMP/pinned.out" 2>&1 || { cat "$TMP/pinned.out"; fail "run with a pinned device failed"; }
[[ $(tr '\n' ' ' <"$TMP/pinned.out") == "burst0 burst7 m0 " ]] ||
  { cat "$TMP/pinned.out"; fail "the run does not show burst0 and burst7 = m0"; }
hrun --socket-dir "$RUN" -- ibv_devinfo -d burst7 >"$TMP/pinned_devinfo" 2>&1 ||
  { cat "$TMP/pinned_devinfo"; fail "ibv_devinfo -d burst7 failed"; }
check "devinfo burst7" "$TMP/pinned_devinfo" 'PORT_ACTIVE'
inA timeout 30 "$BURSTCTL" --socket "$RUN/m0.sock" status >"$TMP/status3" 2>&1 ||
  { cat "$TMP/status3"; fail "burstctl status (pinned)"; }
check "status (pinned)" "$TMP/status3" '^device +burst7 on m0, port ACTIVE$'

log "PASS"
exit 0
