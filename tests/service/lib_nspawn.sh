# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# What service.systemd (systemd_test.sh, an installed tree) and service.deb
# (deb_test.sh, the Debian package) share: an overlay of the cached Debian 12 root
# (lib_root.sh) booted by systemd-nspawn with systemd as PID 1 on namespace $NSC
# (eth0 = 10.77.0.1, a veth to p0 = 10.77.0.2 in $NSP, where a plain burstd is the
# peer), the cleanup that also runs on failure, and the checks of burstd@eth0 both
# tests make.
#
# The sourcing script sets PREFIX (names of its namespaces and scratch directory),
# BURSTD and BURSTCTL (the build whose burstd is the peer), then calls svc_init.
# Optional: CLIENT_ENV (array: environment of the container's burstctl), CTL_SOCKET
# (array: burstctl's socket option in the container; default --socket /run/burst/eth0.sock,
# empty for what a user types: burstctl finds the only socket in /run/burst), SVC_EXTRA_PIDS
# (more background processes the cleanup kills).
# Provides: TMP, R (the root), LEADER, C CMD (in the container), step, fail, skip,
# unit_state, xdp_on_eth0, app, and the check_* steps.

. "$(dirname "${BASH_SOURCE[0]}")/lib_root.sh"

skip() { echo "SKIP: $*"; exit 77; }

# Root, the host tools and the cached root (or mmdebstrap to build it).
svc_require() {
  [[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces, systemd-nspawn, overlay mount)"
  local c
  for c in systemd-nspawn nsenter ip mount "$@"; do
    command -v "$c" >/dev/null || skip "missing '$c' (apt-get install systemd-container util-linux iproute2)"
  done
  compgen -G "$SERVICE_ROOT_CACHE/debian12-*/.complete" >/dev/null ||
    command -v mmdebstrap >/dev/null || skip "missing mmdebstrap (apt-get install mmdebstrap) to build the Debian 12 root"
  [[ -x $BURSTD && -x $BURSTCTL ]] || { echo "FAIL: $BURSTD or $BURSTCTL not built"; exit 1; }
}

svc_init() {
  TMP=$(mktemp -d "/var/tmp/burst-$PREFIX.XXXXXX")
  NSC=b$PREFIX-c$$ NSP=b$PREFIX-p$$
  NSPAWN_PID= LEADER= PEER_PID= R=$TMP/root
  T0=$SECONDS TSTEP=$SECONDS
  declare -p CLIENT_ENV >/dev/null 2>&1 || CLIENT_ENV=()
  declare -p CTL_SOCKET >/dev/null 2>&1 || CTL_SOCKET=(--socket /run/burst/eth0.sock)
  trap svc_cleanup EXIT
}

# Also on failure: the container (halted, killed after 15 s), the overlay, both
# namespaces (the veth and any XDP program on it go with them), the scratch files.
svc_cleanup() {
  local p
  for p in $PEER_PID ${SVC_EXTRA_PIDS:-}; do kill "$p" 2>/dev/null; done
  if [[ -n $NSPAWN_PID ]] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
    kill -TERM "$NSPAWN_PID" 2>/dev/null  # nspawn asks the container's systemd to halt
    timeout 15 tail --pid="$NSPAWN_PID" -f /dev/null || {
      [[ -n $LEADER ]] && kill -KILL "$LEADER" 2>/dev/null
      kill -KILL "$NSPAWN_PID" 2>/dev/null
    }
  fi
  wait 2>/dev/null
  mountpoint -q "$R" && umount -l "$R"
  ip netns del "$NSC" 2>/dev/null
  ip netns del "$NSP" 2>/dev/null
  rm -rf "$TMP"
}

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
C() { timeout 120 nsenter -t "$LEADER" -a "$@"; }  # a command in the container
unit_state() {  # burstd@eth0's state; asked again when the answer is empty (nsenter under load)
  local s=
  for _ in 1 2 3; do
    s=$(C systemctl is-active burstd@eth0 2>/dev/null)
    [[ -n $s ]] && break
    sleep 0.5
  done
  echo "$s"
}
xdp_on_eth0() { ip -n "$NSC" -d link show eth0 | grep -oE 'prog/xdp[a-z]* id [0-9]+' | head -1; }

# An overlay of the cached root at $R (the cache stays pristine).
svc_root() {
  local root
  root=$(service_root_build) || fail "could not build the Debian 12 root"
  echo "root: $root"
  mkdir -p "$TMP"/{upper,work,root}
  mount -t overlay overlay -o "lowerdir=$root,upperdir=$TMP/upper,workdir=$TMP/work" "$R" ||
    fail "overlay mount"
}

# The namespaces, systemd-nspawn --boot on $NSC until systemd runs, the peer burstd.
svc_boot() {
  ip netns add "$NSC" && ip netns add "$NSP" || fail "ip netns add"
  ip link add eth0 netns "$NSC" type veth peer name p0 netns "$NSP" || fail "veth"
  ip -n "$NSC" addr add 10.77.0.1/24 dev eth0
  ip -n "$NSP" addr add 10.77.0.2/24 dev p0
  local ns s=
  for ns in "$NSC" "$NSP"; do ip -n "$ns" link set lo up; done
  ip -n "$NSC" link set eth0 up
  ip -n "$NSP" link set p0 up
  systemd-nspawn --boot --register=no --keep-unit -D "$R" --network-namespace-path=/run/netns/"$NSC" \
    --console=passive --capability=CAP_BPF,CAP_IPC_LOCK,CAP_NET_ADMIN \
    --system-call-filter='bpf io_uring_setup io_uring_enter io_uring_register' >"$TMP/nspawn.log" 2>&1 &
  NSPAWN_PID=$!
  # The container's PID 1 (systemd), not nspawn's short-lived intermediate child.
  for _ in $(seq 150); do
    LEADER=$(ps -o pid=,comm= --ppid "$NSPAWN_PID" 2>/dev/null | awk '$2 == "systemd" {print $1; exit}')
    [[ -n $LEADER ]] && break
    kill -0 "$NSPAWN_PID" 2>/dev/null || break
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
}

# systemctl enable --now burstd@eth0: active, burstctl status answers, the peer is up.
check_enable() {
  C systemctl enable --now burstd@eth0 || fail "systemctl enable --now burstd@eth0"
  [[ $(unit_state) == active ]] || fail "burstd@eth0 is $(unit_state)"
  C burstctl "${CTL_SOCKET[@]}" status >"$TMP/status" 2>&1 || { cat "$TMP/status"; fail "burstctl status"; }
  head -5 "$TMP/status"
  echo "enable: program on eth0: $(xdp_on_eth0)"
  timeout 10 bash -c "until $BURSTCTL --socket $TMP/peer.sock status >/dev/null 2>&1; do sleep 0.2; done" ||
    fail "the peer burstd did not come up"
}

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
    C env "${CLIENT_ENV[@]}" timeout "$t" burstctl "${CTL_SOCKET[@]}" run -- "$@" 10.77.0.2 \
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

check_apps() {
  app rc_pingpong 60 ibv_rc_pingpong -d burst0 -g 1 -n 200 || fail "ibv_rc_pingpong"
  app write_bw 90 ib_write_bw -d burst0 -x 1 -F --report_gbits -s 65536 -n 500 || fail "ib_write_bw"
}

# backend = dpdk in /etc/burst/eth0.conf, restart, ib_write_bw; skipped loudly when
# DPDK cannot start in the container. Back to xdp after.
check_dpdk() {
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
}

check_twice() {
  C timeout 20 burstd --netdev eth0 --socket /run/burst/second.sock >"$TMP/second.log" 2>&1
  local rc=$?
  tail -1 "$TMP/second.log"
  ((rc != 0)) && grep -q "is served by another burstd" "$TMP/second.log" || fail "the second burstd: exit $rc"
  local st
  st=$(unit_state)
  [[ $st == active ]] || fail "the first instance is '$st' after the second burstd"
}

check_stop() {
  C systemctl stop burstd@eth0
  [[ -z $(xdp_on_eth0) ]] || fail "after stop: $(xdp_on_eth0) still on eth0"
  echo "stop: eth0 has no XDP program"
}

# SIGKILL: systemd restarts burstd, which replaces its stale program; an application
# runs again. Leaves the unit stopped.
check_sigkill() {
  C systemctl start burstd@eth0 || fail "start"
  local old new prog
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
  C env "${CLIENT_ENV[@]}" burstctl "${CTL_SOCKET[@]}" status >/dev/null || fail "status after the restart"
  app rc_pingpong_again 60 ibv_rc_pingpong -d burst0 -g 1 -n 100 || fail "ibv_rc_pingpong after the restart"
  C systemctl stop burstd@eth0
}

# bad NAME UNIT PATTERN FILE LINES...: UNIT fails, PATTERN in its journal, eth0 untouched.
bad() {
  local name=$1 unit=$2 pattern=$3 file=$4
  shift 4
  [[ $file != - ]] && printf '%s\n' "$@" >"$R$file"
  local since line
  C systemctl reset-failed "$unit" 2>/dev/null  # the earlier steps' starts count against StartLimitBurst
  since=$(C date '+%Y-%m-%d %H:%M:%S')
  sleep 1
  if C systemctl start "$unit" 2>/dev/null; then
    fail "$name: $unit started"
  fi
  C systemctl stop "$unit" 2>/dev/null  # no restarts meanwhile
  line=$(C journalctl --no-pager -u "$unit" --since "$since" -o cat | grep -m1 -E "$pattern")
  [[ -n $line ]] || { C journalctl --no-pager -u "$unit" --since "$since" -o cat | tail; fail "$name: no '$pattern' in the journal"; }
  echo "bad $name: $line"
  [[ -z $(xdp_on_eth0) ]] || fail "$name: an XDP program is attached"
  C systemctl reset-failed "$unit" 2>/dev/null
  [[ $file != - ]] && rm -f "$R$file"
  return 0
}

# Unknown key, bad value (in the installed burstd.conf, restored after), absent netdev,
# dpdk without hugepages (when the host has none free). Expects the unit stopped.
check_bad() {
  bad unknown-key burstd@eth0 "/etc/burst/eth0.conf:2: unknown key 'wokers' \(fix: did you mean 'workers'" \
    /etc/burst/eth0.conf "# two workers" "wokers = 2"
  cp -p "$R/etc/burst/burstd.conf" "$TMP/burstd.conf.orig" && echo "xdp_mode = fast" >>"$R/etc/burst/burstd.conf" ||
    fail "bad-value: cannot edit /etc/burst/burstd.conf"
  bad bad-value burstd@eth0 "/etc/burst/burstd.conf:[0-9]+: 'xdp_mode = fast' is not valid \(fix:" -
  cp -p "$TMP/burstd.conf.orig" "$R/etc/burst/burstd.conf"
  bad no-netdev burstd@nosuch0 "netdev 'nosuch0' not found in this network namespace: it does not exist \(fix:" -
  if awk '/HugePages_Free/ {exit !($2 == 0)}' /proc/meminfo; then
    bad dpdk-hugepages burstd@eth0 "eth0.conf:2: dpdk_hugepages = on: DPDK needs [0-9]+ free 2 MB hugepages.*\(fix: .sysctl -w vm.nr_hugepages=" /etc/burst/eth0.conf \
      "backend = dpdk" "dpdk_hugepages = on"
  else
    echo "SKIP (case dpdk-hugepages): this host has free hugepages"
  fi
}

check_security() {
  C systemd-analyze security --no-pager burstd@eth0.service >"$TMP/security" 2>&1
  grep -E "^→ Overall exposure level" "$TMP/security" || { tail -5 "$TMP/security"; fail "systemd-analyze security"; }
  grep -E "^✗" "$TMP/security" | cut -c1-110 | head -40
}
