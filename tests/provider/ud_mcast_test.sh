#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# UD as consumers read it, and UD multicast, through the provider
# (verbs_ud_probe, plain libibverbs under `burstctl run`):
#   1. one loopback burstd in namespace A: ibv_wc of UD receives over the
#      IPv4-mapped GID (index 1) and the link-local one (index 0) as a ConnectX
#      reports it (probe `wc`); attach/detach errnos and limits (probe `rules`);
#   2. two burstd on AF_XDP, one per namespace (B with 2 workers on a 2-queue
#      veth, so its QPs live on both):
#        A: a0 10.47.0.1/24   <--veth-->   B: b0 10.47.0.2/24
#      three UD QPs on B attach to 239.1.2.3 (then to ff0e::1:2:3, sent from the
#      link-local GID); A sends datagrams to the group (DQPN 0xFFFFFF): each QP
#      receives one; burstd B joined the group on b0 (`ip maddr show dev b0`);
#      after the QPs detach nothing reaches them (B counts the datagrams as
#      rx_drop.mcast_unattached) and b0 left the group. Then a QP on B itself
#      sends to a group B's QPs joined: burstd B loops it to them
#      (worker.looped_mcast), as an RNIC loops multicast to its port's QPs.
# Usage: ud_mcast_test.sh BURSTCTL BURSTD PROBE
# Exit: 0 pass, 1 fail, 77 skipped.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"

BURSTCTL=${1:?usage: ud_mcast_test.sh BURSTCTL BURSTD PROBE}
BURSTD=${2:?}
PROBE=${3:?}

netns_require_root "network namespaces, veth, XDP"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout
netns_require_libibverbs
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD" "$PROBE"

netns_pair burst-ud
netns_cmd_env

start_burstd() {  # NS DEV SOCK LOG BACKEND WORKERS
  netns_start_burstd "$1" "$3" "$4" "in $1" --backend "$5" --netdev "$2" --workers "$6"
}
run_in() {  # NS DEV SOCK ARGS...
  local ns=$1 dev=$2 sock=$3
  shift 3
  nsenter --net=/run/netns/"$ns" env TMPDIR="$TMP" timeout 90 "$BURSTCTL" run --netdev "$dev" \
    --socket "$sock" -- "${CMD_ENV[@]}" "$PROBE" "$@"
}
counter() {  # SOCK NAME: summed over the workers
  timeout 20 "$BURSTCTL" --socket "$1" counters |
    awk -v n="$2" '$1 == n || $1 == n":" {s += $NF} END {print s + 0}'
}

# ---- 1. loopback burstd: ibv_wc fields, attach/detach rules
ip link add l0 netns "$NA" type veth peer name l1 netns "$NA" || fail "cannot create veth pair"
inA ip link set lo up
inA ip addr add 10.48.0.1/24 dev l0
inA ip link set l0 up
inA ip link set l1 up
for _ in $(seq 50); do  # the link-local address (GID index 0)
  inA ip -6 addr show dev l0 scope link | grep -q fe80 && break
  sleep 0.1
done
start_burstd "$NA" l0 "$TMP/l.sock" "$TMP/burstd-l.log" loopback 1
log "ibv_wc of UD receives (IPv4-mapped and link-local GIDs)"
run_in "$NA" l0 "$TMP/l.sock" wc || { tail -30 "$TMP/burstd-l.log"; fail "wc probe"; }
log "attach/detach rules"
run_in "$NA" l0 "$TMP/l.sock" rules || { tail -30 "$TMP/burstd-l.log"; fail "rules probe"; }

# ---- 2. two burstd on AF_XDP: multicast
netns_link_ab a0 10.47.0.1 b0 10.47.0.2 numrxqueues 2 numtxqueues 2
# The sender's kernel route for the group (burstd resolves the multicast MAC itself).
inA ip route add 224.0.0.0/4 dev a0 2>/dev/null
start_burstd "$NA" a0 "$TMP/a.sock" "$TMP/burstd-a.log" xdp 1
start_burstd "$NB" b0 "$TMP/b.sock" "$TMP/burstd-b.log" xdp 2
failhard() {
  echo "--- burstd A log:"; tail -20 "$TMP/burstd-a.log"
  echo "--- burstd B log:"; tail -20 "$TMP/burstd-b.log"
  echo "--- receiver:"; cat "$TMP/recv.out" 2>/dev/null
  echo "--- sender:"; cat "$TMP/send.out" 2>/dev/null
  fail "$*"
}
# mcast_round GROUP TAG [local]: 3 UD QPs on B attach to GROUP, A sends to it
# (local: a QP on B itself sends: burstd B loops the datagram to its members, as
# an RNIC does for the QPs of its port); then they detach.
mcast_round() {
  local group=$1 D=$TMP/sync-$2 local=${3:-} before after looped
  local sns=$NA sdev=a0 ssock=$TMP/a.sock who=A
  [[ -n $local ]] && { sns=$NB sdev=b0 ssock=$TMP/b.sock who="a QP on B itself"; }
  mkdir -p "$D"
  inB ip maddr show dev b0 | grep -qw "$group" && failhard "b0 is in $group before any attach"
  log "3 UD QPs on B attached to $group, $who sends to the group"
  looped=$(counter "$TMP/b.sock" worker.looped_mcast)
  nsenter --net=/run/netns/"$NB" env TMPDIR="$TMP" timeout 120 "$BURSTCTL" run --netdev b0 \
    --socket "$TMP/b.sock" -- "${CMD_ENV[@]}" "$PROBE" recv "$group" 3 "$D" >"$TMP/recv.out" 2>&1 &
  RPID=$!
  BG_PIDS+=("$RPID")
  nsenter --net=/run/netns/"$sns" env TMPDIR="$TMP" timeout 120 "$BURSTCTL" run --netdev "$sdev" \
    --socket "$ssock" -- "${CMD_ENV[@]}" "$PROBE" send "$group" "$D" >"$TMP/send.out" 2>&1 &
  SPID=$!
  BG_PIDS+=("$SPID")
  for _ in $(seq 600); do
    [[ -e $D/received ]] && break
    kill -0 "$RPID" 2>/dev/null || break
    sleep 0.1
  done
  [[ -e $D/received ]] || { touch "$D/stop"; failhard "the attached QPs did not receive the datagrams"; }
  cat "$TMP/recv.out"
  log "burstd B joined $group on b0"
  inB ip maddr show dev b0 >"$TMP/maddr-joined"
  grep -qw "$group" "$TMP/maddr-joined" || { cat "$TMP/maddr-joined"; touch "$D/stop"; failhard "not joined"; }
  grep -w "$group" "$TMP/maddr-joined"
  log "rx_drop.mcast_unattached while attached: $(counter "$TMP/b.sock" rx_drop.mcast_unattached)"

  log "the QPs detach: nothing more reaches them, b0 leaves $group"
  touch "$D/go-detach"
  for _ in $(seq 300); do
    [[ -e $D/detached ]] && break
    sleep 0.1
  done
  [[ -e $D/detached ]] || { touch "$D/stop"; failhard "the receiver did not detach"; }
  if [[ -n $local ]]; then
    after=$(counter "$TMP/b.sock" worker.looped_mcast)
    ((after > looped)) || { touch "$D/stop"; failhard "burstd B looped no multicast datagram"; }
    echo "worker.looped_mcast: $looped -> $after"
    touch "$D/stop"
    wait "$RPID" || failhard "receiver failed"
    wait "$SPID" || failhard "sender failed"
    cat "$TMP/recv.out" "$TMP/send.out" | grep -v "^ok: each"
    return
  fi
  before=$(counter "$TMP/b.sock" rx_drop.mcast_unattached)
  after=$before
  for _ in $(seq 200); do
    after=$(counter "$TMP/b.sock" rx_drop.mcast_unattached)
    ((after > before)) && break
    sleep 0.1
  done
  ((after > before)) || { touch "$D/stop"; failhard "no datagram to the group reached B after detach"; }
  echo "rx_drop.mcast_unattached: $before -> $after"
  inB ip maddr show dev b0 >"$TMP/maddr-left"
  grep -qw "$group" "$TMP/maddr-left" &&
    { cat "$TMP/maddr-left"; touch "$D/stop"; failhard "b0 still in $group"; }
  echo "burstd B handoff (worker.handoff_out): $(counter "$TMP/b.sock" worker.handoff_out)"
  touch "$D/stop"
  wait "$RPID" || failhard "receiver failed"
  wait "$SPID" || failhard "sender failed"
  cat "$TMP/recv.out" "$TMP/send.out" | grep -v "^ok: each"
}
mcast_round 239.1.2.3 v4
mcast_round ff0e::1:2:3 v6
inB ip route add 224.0.0.0/4 dev b0 2>/dev/null
mcast_round 239.1.2.4 v4-local local
mcast_round ff0e::1:2:4 v6-local local
echo "PASS"
