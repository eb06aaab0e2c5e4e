#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# net/ against the kernel, in two private network namespaces joined by a
# veth pair (va in A: 10.77.0.1/24, fd77::1/64; vb in B: 10.77.0.2/24, fd77::2/64;
# 4 RX/TX queues, MTU 4000 on va). Nothing outside the two namespaces is touched.
#   1. query: MAC, MTU, queues (against sysfs of the namespace), operstate, addresses,
#      GID table order; ENODEV for a missing netdev; works without privileges.
#   2. resolve: IPv4, IPv6 and IPv6 link-local peers give the peer's MAC; first with
#      an empty neighbour table (resolution triggered), then from the cache; both
#      triggers (netlink NTF_USE, UDP); an unprivileged caller falls back to UDP and
#      a forced netlink trigger says it needs CAP_NET_ADMIN; a STALE entry answers
#      at once and is re-confirmed by the kernel.
#   3. failures, each within its bound: silent on-link address (IPv4, IPv6), no
#      route, route through another netdev, an address of lo; addresses of this
#      host (own, another netdev's) resolve to their netdev's MAC.
#   4. srcgid: the source the kernel picks and its GID index.
#   5. watcher: adding / removing an address is seen; the new GID takes the next slot.
# Usage: net_test.sh NET_PROBE
# Exit: 0 pass, 1 fail, 77 skipped (not root, tools missing).
set -uo pipefail

PROBE=${1:?usage: net_test.sh NET_PROBE}

. "$(dirname "$0")/../lib.sh"

netns_require_root "network namespaces"
netns_require_tools "iproute2 util-linux procps" ip nsenter timeout setpriv sysctl
[[ -x $PROBE ]] || fail "net_probe not found at $PROBE"
netns_pair burst-net

# net_probe in namespace A, bounded; as an unprivileged user with probeU.
probe() { timeout 20 nsenter --net=/run/netns/"$NA" "$PROBE" "$@"; }
probeU() {
  timeout 20 nsenter --net=/run/netns/"$NA" setpriv --reuid=65534 --regid=65534 --clear-groups \
    --inh-caps=-all --bounding-set=-all "$PROBE" "$@"
}

# jget JSON_LINE KEY: the value of a scalar field (quotes removed).
jget() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2- | tr -d '"'; }
# line TYPE TEXT: the first line of type TYPE.
line() { grep -m1 "\"type\":\"$1\"" <<<"$2"; }

expect_eq() {  # WHAT GOT WANT
  [[ "$2" == "$3" ]] || fail "$1: got '$2', want '$3'"
}

# wait_until SECONDS CMD...: polls CMD every 0.1 s.
wait_until() {
  local t=$1 i
  shift
  for ((i = 0; i < t * 10; i++)); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

log "setup: namespaces $NA, $NB"
for ns in "$NA" "$NB"; do
  # No DAD: addresses (the link-local ones too) are usable as soon as the link is up.
  nsenter --net=/run/netns/"$ns" sysctl -qw net.ipv6.conf.default.accept_dad=0 \
    net.ipv6.conf.all.accept_dad=0 || fail "sysctl accept_dad"
  nsenter --net=/run/netns/"$ns" ip link set lo up || fail "lo up"
done
ip link add va netns "$NA" numrxqueues 4 numtxqueues 4 type veth \
  peer name vb netns "$NB" numrxqueues 4 numtxqueues 4 || fail "veth pair"
inA ip link set va mtu 4000 || fail "mtu"
inA ip addr add 10.77.0.1/24 dev va || fail "addr"
inB ip addr add 10.77.0.2/24 dev vb || fail "addr"
inA ip addr add fd77::1/64 dev va nodad || fail "addr"
inB ip addr add fd77::2/64 dev vb nodad || fail "addr"
# A short DELAY state, so a kicked STALE entry is re-confirmed quickly (section 2).
inA sysctl -qw net.ipv4.neigh.va.delay_first_probe_time=1 || fail "sysctl delay_first_probe_time"
inA ip link set va up || fail "va up"
inB ip link set vb up || fail "vb up"
no_tentative() { [[ -z $(inA ip -6 addr show dev va tentative) && -z $(inB ip -6 addr show dev vb tentative) ]]; }
wait_until 10 no_tentative || fail "IPv6 addresses still tentative after 10 s"
has_ll() { inB ip -6 addr show dev vb scope link | grep -q fe80; }
wait_until 10 has_ll || fail "no link-local address on vb"
inA ip neigh flush dev va
inB ip neigh flush dev vb

# ---------------------------------------------------------------- 1. query
log "1. query"
OUT=$(probe query va) || fail "query va: $OUT"
echo "$OUT"
QB=$(inB "$PROBE" query vb) || fail "query vb: $QB"
ND=$(line netdev "$OUT")
# /sys under nsenter shows the root namespace: read through ip instead.
MAC_A=$(inA ip -o link show dev va | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
MAC_B=$(inB ip -o link show dev vb | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
[[ -n $MAC_A && -n $MAC_B ]] || fail "cannot read the veth MACs"
expect_eq "name" "$(jget "$ND" name)" va
expect_eq "ifindex" "$(jget "$ND" ifindex)" "$(inA ip -o link show dev va | cut -d: -f1)"
expect_eq "mac" "$(jget "$ND" mac)" "$MAC_A"
expect_eq "mac of vb" "$(jget "$(line netdev "$QB")" mac)" "$MAC_B"
expect_eq "mtu" "$(jget "$ND" mtu)" 4000
expect_eq "operstate" "$(jget "$ND" operstate)" up
expect_eq "link_type" "$(jget "$ND" link_type)" 1
# ip netns exec mounts the namespace's own /sys: count the queue directories there.
SYS_RX=$(ip netns exec "$NA" sh -c 'ls -d /sys/class/net/va/queues/rx-* | wc -l')
SYS_TX=$(ip netns exec "$NA" sh -c 'ls -d /sys/class/net/va/queues/tx-* | wc -l')
expect_eq "sysfs rx queues (setup)" "$SYS_RX" 4
expect_eq "rx_queues" "$(jget "$ND" rx_queues)" "$SYS_RX"
expect_eq "tx_queues" "$(jget "$ND" tx_queues)" "$SYS_TX"
ADDRS=$(grep '"type":"addr"' <<<"$OUT" | sed 's/.*"addr":"\([^"]*\)","prefix":\([0-9]*\).*/\1\/\2/' | tr '\n' ' ')
LL_A=$(inA ip -6 -o addr show dev va scope link | grep -o 'fe80::[0-9a-f:]*' | head -1)
LL_B=$(inB ip -6 -o addr show dev vb scope link | grep -o 'fe80::[0-9a-f:]*' | head -1)
expect_eq "addresses" "$ADDRS" "10.77.0.1/24 fd77::1/64 $LL_A/64 "
GIDS=$(grep -o '"gids":\[[^]]*\]' <<<"$OUT" | head -1)
expect_eq "GID table" "$GIDS" "\"gids\":[\"$LL_A\",\"10.77.0.1\",\"fd77::1\"]"

ERR=$(probe query nope0)
rc=$?
expect_eq "query nope0 exit" "$rc" 2
expect_eq "query nope0 errno" "$(jget "$ERR" error)" ENODEV
grep -q "netdev 'nope0' not found" <<<"$ERR" || fail "query nope0: unclear message: $ERR"
OUTU=$(probeU query va) || fail "query va unprivileged: $OUTU"
expect_eq "unprivileged query" "$(grep -o '"gids":\[[^]]*\]' <<<"$OUTU")" "$GIDS"

# ---------------------------------------------------------------- 2. resolve
log "2. resolve"
# resolve_ok DST WANT_MAC WANT_TRIGGERED [ARGS...]: prints the neigh line.
resolve_ok() {
  local dst=$1 mac=$2 trig=$3 r
  shift 3
  r=$(probe resolve va "$dst" "$@") || fail "resolve $dst $*: $r"
  echo "$r"
  expect_eq "resolve $dst mac" "$(jget "$r" mac)" "$mac"
  expect_eq "resolve $dst triggered" "$(jget "$r" triggered)" "$trig"
  RES=$r
}
neigh_empty() { [[ -z $(inA ip neigh show dev va | grep -v FAILED) ]]; }

inA ip neigh flush dev va
neigh_empty || fail "neighbour table not empty after flush: $(inA ip neigh show dev va)"
resolve_ok 10.77.0.2 "$MAC_B" true
expect_eq "trigger" "$(jget "$RES" trigger)" netlink
resolve_ok 10.77.0.2 "$MAC_B" false
inA ip neigh show dev va | grep -q "10.77.0.2 lladdr $MAC_B" || fail "kernel table lacks 10.77.0.2"
resolve_ok fd77::2 "$MAC_B" true
resolve_ok fd77::2 "$MAC_B" false
resolve_ok "$LL_B" "$MAC_B" true
resolve_ok "$LL_B" "$MAC_B" false

log "2a. through a gateway: the next hop is resolved"
inA ip route add 198.51.100.0/24 via 10.77.0.2 dev va || fail "route via gateway"
inA ip -6 route add 2001:db8:77::/64 via fd77::2 dev va || fail "IPv6 route via gateway"
inA ip neigh flush dev va
resolve_ok 198.51.100.7 "$MAC_B" true
expect_eq "next hop" "$(jget "$RES" next_hop)" 10.77.0.2
resolve_ok 2001:db8:77::7 "$MAC_B" true
expect_eq "next hop" "$(jget "$RES" next_hop)" fd77::2

log "2b. UDP trigger"
inA ip neigh flush dev va
resolve_ok 10.77.0.2 "$MAC_B" true --trigger udp
expect_eq "trigger" "$(jget "$RES" trigger)" udp
resolve_ok fd77::2 "$MAC_B" true --trigger udp
expect_eq "trigger" "$(jget "$RES" trigger)" udp

log "2c. unprivileged: falls back to UDP; a forced netlink trigger explains EPERM"
inA ip neigh flush dev va
R=$(probeU resolve va 10.77.0.2) || fail "unprivileged resolve: $R"
echo "$R"
expect_eq "unprivileged mac" "$(jget "$R" mac)" "$MAC_B"
expect_eq "unprivileged trigger" "$(jget "$R" trigger)" udp
inA ip neigh flush dev va
R=$(probeU resolve va fd77::2 --trigger netlink)
expect_eq "forced netlink unprivileged exit" "$?" 2
expect_eq "forced netlink errno" "$(jget "$R" error)" EPERM
grep -q "CAP_NET_ADMIN" <<<"$R" || fail "EPERM message does not name CAP_NET_ADMIN: $R"

log "2d. STALE entry answers at once and is re-confirmed"
inA ip neigh flush dev va
resolve_ok 10.77.0.2 "$MAC_B" true
inA ip neigh change 10.77.0.2 dev va lladdr "$MAC_B" nud stale || fail "set stale"
inA ip neigh show 10.77.0.2 dev va | grep -q STALE || fail "entry not STALE: $(inA ip neigh show dev va)"
resolve_ok 10.77.0.2 "$MAC_B" false
expect_eq "stale state" "$(jget "$RES" state)" stale
reachable() { inA ip neigh show 10.77.0.2 dev va | grep -q REACHABLE; }
wait_until 8 reachable || fail "STALE entry not re-confirmed: $(inA ip neigh show 10.77.0.2 dev va)"

# ---------------------------------------------------------------- 3. failures
log "3. failures within their bound"
# A second netdev in A (a veth whose peer idles in B) owns 10.78.0.0/24.
ip link add vc netns "$NA" type veth peer name vd netns "$NB" || fail "second veth pair"
inA ip addr add 10.78.0.1/24 dev vc || fail "vc addr"
inA ip link set vc up || fail "vc up"
inB ip link set vd up || fail "vd up"
# resolve_fail DST TIMEOUT_MS MAX_MS PATTERN
resolve_fail() {
  local r rc el
  r=$(probe resolve va "$1" --timeout-ms "$2")
  rc=$?
  echo "$r"
  expect_eq "resolve $1 exit" "$rc" 2
  expect_eq "resolve $1 errno" "$(jget "$r" error)" EHOSTUNREACH
  grep -q -- "$4" <<<"$r" || fail "resolve $1: message lacks '$4': $r"
  el=$(jget "$r" elapsed_ms)
  ((el <= $3)) || fail "resolve $1 took $el ms (bound $3 ms)"
  FAIL_MS=$el
}
resolve_fail 10.77.0.99 800 1500 "no ARP answer within 800 ms"
((FAIL_MS >= 750)) || fail "10.77.0.99 gave up early ($FAIL_MS ms)"
resolve_fail fd77::99 800 1500 "no neighbour discovery answer within 800 ms"
resolve_fail 192.0.2.1 800 300 "no route to 192.0.2.1"
resolve_fail 2001:db8::1 800 300 "no route to 2001:db8::1"
resolve_fail 10.78.0.5 800 300 "leaves through 'vc', not 'va'"
resolve_fail 127.0.0.1 800 300 "is an address of this host on 'lo'"
# Addresses of this host (one-host loopback): va's own resolve to va's MAC, vc's
# (another netdev of the namespace) to vc's, without asking the neighbours.
MAC_C=$(inA ip -o link show dev vc | grep -o 'link/ether [0-9a-f:]*' | cut -d' ' -f2)
resolve_ok 10.77.0.1 "$MAC_A" false
resolve_ok fd77::1 "$MAC_A" false
resolve_ok 10.78.0.1 "$MAC_C" false
# The failed neighbours do not break the good ones.
resolve_ok 10.77.0.2 "$MAC_B" false

# ---------------------------------------------------------------- 4. source GID
log "4. source GID"
srcgid_ok() {
  local r
  r=$(probe srcgid va "$1") || fail "srcgid $1: $r"
  echo "$r"
  expect_eq "srcgid $1" "$(jget "$r" gid)" "$2"
  expect_eq "srcgid $1 index" "$(jget "$r" index)" "$3"
}
srcgid_ok 10.77.0.2 10.77.0.1 1
srcgid_ok fd77::2 fd77::1 2
srcgid_ok "$LL_B" "$LL_A" 0
srcgid_ok 198.51.100.7 10.77.0.1 1
R=$(probe srcgid va 10.78.0.5)
expect_eq "srcgid via vc errno" "$(jget "$R" error)" EHOSTUNREACH

# ---------------------------------------------------------------- 5. watcher
log "5. watcher"
# watch GID ARGS...: starts net_probe watch in the background, waits for "ready".
WATCH_N=0
watch_start() {
  local f=$TMP/watch.$((++WATCH_N)).out
  : >"$f"
  timeout 20 nsenter --net=/run/netns/"$NA" "$PROBE" watch va "$@" --timeout-ms 5000 >"$f" 2>&1 &
  WATCH_PID=$!
  BG_PIDS+=("$WATCH_PID")
  WATCH_OUT=$f
  wait_until 5 grep -q '"type":"ready"' "$f" || { cat "$f"; fail "watcher did not start"; }
}
watch_start 10.77.0.5
inA ip addr add 10.77.0.5/24 dev va || fail "add 10.77.0.5"
wait "$WATCH_PID"
rc=$?
cat "$WATCH_OUT"
expect_eq "watch add exit" "$rc" 0
D=$(line done "$(cat "$WATCH_OUT")")
expect_eq "new GID index" "$(jget "$D" index)" 3
grep -q '"gids_changed":true' "$WATCH_OUT" || fail "watcher reported no change"

# A fresh watcher enumerates like a fresh device: IPv4 (kernel order) before IPv6.
watch_start 10.77.0.5 --absent
grep -q "\"gids\":\[\"$LL_A\",\"10.77.0.1\",\"10.77.0.5\",\"fd77::1\"\]" "$WATCH_OUT" ||
  fail "unexpected initial table: $(cat "$WATCH_OUT")"
inA ip addr del 10.77.0.5/24 dev va || fail "del 10.77.0.5"
wait "$WATCH_PID"
rc=$?
cat "$WATCH_OUT"
expect_eq "watch del exit" "$rc" 0
# The removed address leaves a hole; the others keep their slots.
grep -q "\"gids\":\[\"$LL_A\",\"10.77.0.1\",\"\",\"fd77::1\"\]" "$WATCH_OUT" ||
  fail "unexpected table after removal"

# A MAC change replaces the default GID (fe80:: + EUI-64 of the new MAC).
watch_start fe80::ff:fe77:1
inA ip link set va address 02:00:00:77:00:01 || fail "set MAC"
wait "$WATCH_PID"
rc=$?
cat "$WATCH_OUT"
expect_eq "watch MAC change exit" "$rc" 0
expect_eq "default GID index" "$(jget "$(line done "$(cat "$WATCH_OUT")")" index)" 0
grep -q '"link_changed":true' "$WATCH_OUT" || fail "MAC change not reported as a link change"

# Nothing happens: the watcher times out (the test can fail).
timeout 20 nsenter --net=/run/netns/"$NA" "$PROBE" watch va 10.77.0.77 --timeout-ms 300 >"$TMP/idle.out"
expect_eq "idle watcher exit" "$?" 1

echo "PASS"
exit 0
