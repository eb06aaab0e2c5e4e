#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burst shares a NIC with another XDP program through libxdp's dispatcher (issue 16, item 4), in
# the Debian 6.1 guest (this host's kernel cannot load the dispatcher: locked down, no BTF).
# One guest booted with the host's / shared (INTEROP_HOST_ROOT); in a chroot of it, with bpffs
# mounted: xdp-filter (xdp-tools) loaded on eth0 dropping UDP port 9999, then the host-built burstd
# (AF_XDP) on the same eth0. Checked:
#   1. both programs run under one dispatcher (`xdp-loader status`), burstd does not report legacy;
#   2. RoCE reaches burst: ibv_rc_pingpong, client under burstctl run in the guest, server under
#      burstctl run against a burstd on the host end of the bridge (that one attaches alone, legacy:
#      its log says so);
#   3. xdp-filter still filters: UDP to port 9999 never reaches the guest's stack (Udp NoPorts does
#      not move), UDP to 9998 does;
#   4. stopping burstd removes only burst's program: xdp-filter stays, and still filters;
#   5. kill -9 of burstd leaves its program in the dispatcher; the next burstd replaces it (one
#      burst_steer, reported as replaced), ibv_rc_pingpong passes again, and a clean stop leaves
#      xdp-filter alone.
# Usage (root): tests/interop/xdp_share.sh [BUILD_DIR]
# Exit 0 pass, 77 skipped (no guest, no xdp-tools), 1 fail. Bounded by XDPSHARE_DEADLINE (s, 600).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
BUILD=$(cd "${1:-$HERE/../../build/default}" 2>/dev/null && pwd) || iskip "no build directory"
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
for b in "$BURSTD" "$BURSTCTL"; do [[ -x $b ]] || iskip "build $b first"; done
for c in xdp-filter xdp-loader; do
  command -v $c >/dev/null || iskip "missing '$c' on the host (apt-get install xdp-tools)"
done

interop_require
interop_prepare
export INTEROP_HOST_ROOT=1
interop_netns_up
interop_deadline "${XDPSHARE_DEADLINE:-600}"
GIP=$INTEROP_SUBNET.31
ROOT=/mnt/hostroot
GSOCK=/tmp/burstd.sock
HSOCK=$INTEROP_RUN/burstd.sock
HPID=

xs_cleanup() {
  local rc=$?
  [[ -n $HPID ]] && { kill "$HPID" 2>/dev/null; wait "$HPID" 2>/dev/null; }
  (exit "$rc")
  interop_cleanup
}
trap xs_cleanup EXIT

# The guest's command line running CMD... in the host root (a clean environment).
in_root() { echo "chroot $ROOT /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp $*"; }
status() { guest_run -t 60 vm1 "$(in_root xdp-loader status eth0)"; }
# Number of dispatcher entries (lines " => PRIO NAME ...") whose name starts with NAME in `xdp-loader status`.
entries() { awk -v n="$2" '$1 == "=>" && index($3, n) == 1' <<<"$1" | wc -l; }
noports() { guest_run -t 20 vm1 "grep '^Udp:' /proc/net/snmp | tail -1" | awk '{print $3}'; }

gburstd_start() {  # LOGNAME
  guest_spawn -t 500 vm1 \
    "$(in_root "$BURSTD" --backend xdp --netdev eth0 --workers 1 --socket $GSOCK) >/tmp/$1 2>&1" \
    >/dev/null
  guest_run -t 90 vm1 "i=0; while [ \$i -lt 300 ]; do
      $(in_root timeout 5 "$BURSTCTL" --socket $GSOCK status) >/dev/null 2>&1 && exit 0
      i=\$((i + 1)); sleep 0.2; done; cat /tmp/$1; exit 1" ||
    ifail "burstd did not start on the guest's eth0 next to xdp-filter"
  guest_run -t 10 vm1 "cat /tmp/$1"
}

gburstd_stop() {  # LOGNAME: SIGTERM, then the end of its log
  guest_run -t 30 vm1 "kill \$(pidof burstd); i=0; while pidof burstd >/dev/null && [ \$i -lt 100 ]; do
    i=\$((i + 1)); sleep 0.1; done; tail -4 /tmp/$1; ! pidof burstd >/dev/null" ||
    ifail "burstd did not stop on SIGTERM"
}

# ibv_rc_pingpong: server under burstctl run on the host's burstd, client in the guest.
pingpong() {  # TAG
  local out=$INTEROP_RUN/pp-$1 spid rc
  nsenter --net="/run/netns/$INTEROP_NS" env TMPDIR="$INTEROP_RUN" timeout 120 "$BURSTCTL" run \
    --netdev "$INTEROP_BURST_IF" --socket "$HSOCK" -- ibv_rc_pingpong -d burst0 -g 1 -m 1024 -n 20 \
    >"$out.server" 2>&1 &
  spid=$!
  for _ in $(seq 100); do innet ss -ltn | grep -q ':18515 ' && break; sleep 0.1; done
  guest_run -t 120 vm1 "$(in_root timeout 110 "$BURSTCTL" run --netdev eth0 --socket $GSOCK -- \
    ibv_rc_pingpong -d burst0 -g 1 -m 1024 -n 20 "$INTEROP_HOST_IP")" >"$out.client" 2>&1
  rc=$?
  wait "$spid"
  local src=$?
  cat "$out.client"
  ((rc == 0 && src == 0)) || { cat "$out.server"; ifail "$1: ibv_rc_pingpong client $rc, server $src"; }
}

# UDP to PORT (COUNT datagrams from the host end): prints how much the guest's Udp NoPorts moved.
udp_probe() {  # PORT COUNT
  local before after
  before=$(noports)
  innet bash -c "for i in \$(seq $2); do echo probe >/dev/udp/$GIP/$1; sleep 0.05; done"
  sleep 1
  after=$(noports)
  echo $((after - before))
}

filters() {  # TAG: 9999 dropped by xdp-filter, 9998 reaches the stack
  local d9 d8
  d9=$(udp_probe 9999 5)
  d8=$(udp_probe 9998 5)
  ilog "$1: UDP 9999 reached the guest's stack $d9 times (xdp-filter drops it), 9998 $d8 times"
  ((d9 == 0)) || ifail "$1: xdp-filter no longer drops UDP 9999"
  ((d8 >= 5)) || ifail "$1: UDP 9998 did not reach the guest's stack ($d8/5)"
}

ilog "burstd on the host end ($INTEROP_BURST_IF): no dispatcher here"
nsenter --net="/run/netns/$INTEROP_NS" "$BURSTD" --backend xdp --netdev "$INTEROP_BURST_IF" \
  --workers 1 --socket "$HSOCK" >"$INTEROP_RUN/host-burstd.log" 2>&1 &
HPID=$!
for _ in $(seq 100); do timeout 5 "$BURSTCTL" --socket "$HSOCK" status >/dev/null 2>&1 && break; sleep 0.1; done
timeout 5 "$BURSTCTL" --socket "$HSOCK" status >/dev/null 2>&1 ||
  { cat "$INTEROP_RUN/host-burstd.log"; ifail "burstd did not start on $INTEROP_BURST_IF"; }
if [[ -d /sys/fs/bpf && $(stat -f -c %T /sys/fs/bpf 2>/dev/null) == bpf_fs ]]; then
  ilog "(bpffs is mounted on the host: whether libxdp's dispatcher loads here depends on the kernel)"
else
  grep "legacy XDP attach" "$INTEROP_RUN/host-burstd.log" ||
    { cat "$INTEROP_RUN/host-burstd.log"; ifail "the host's burstd did not report its legacy attach"; }
fi

guest_start vm1 "$GIP" || iskip "the guest did not boot (logs above)"
guest_run -t 60 vm1 "mkdir -p $ROOT &&
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot $ROOT &&
  mount -t proc proc $ROOT/proc && mount -t sysfs sysfs $ROOT/sys &&
  mount -t bpf bpf $ROOT/sys/fs/bpf &&
  mount -t devtmpfs devtmpfs $ROOT/dev && mount -t tmpfs tmpfs $ROOT/dev/shm &&
  mount -t devpts devpts $ROOT/dev/pts && mount -t tmpfs tmpfs $ROOT/tmp &&
  mount -t tmpfs tmpfs $ROOT/run" || iskip "cannot prepare the host-root chroot with bpffs in the guest"
# The guest's RDMA stack out (libibverbs would list devices over netlink, not burst's sysfs tree).
guest_run -t 60 vm1 "echo '' >/proc/sys/kernel/modprobe; rdma link delete rxe0 2>/dev/null
  for m in rdma_ucm ib_umad rdma_rxe rdma_cm iw_cm ib_cm ib_uverbs ib_core; do
    [ -d /sys/module/\$m ] && rmmod \$m; done
  [ ! -d /sys/module/ib_core ]" || ifail "cannot unload the guest kernel's RDMA stack"
guest_run vm1 "ping -c 1 -W 5 $INTEROP_HOST_IP >/dev/null" || ifail "the guest cannot reach the host end"

ilog "1. xdp-filter on eth0 (drops UDP 9999), then burstd on eth0"
guest_run -t 60 vm1 "$(in_root xdp-filter load --mode native eth0) &&
  $(in_root xdp-filter port --proto udp 9999)" || ifail "xdp-filter load in the guest"
filters "xdp-filter alone"
gburstd_start burstd1.log >"$INTEROP_RUN/g-burstd1.log" 2>&1
cat "$INTEROP_RUN/g-burstd1.log"
grep -q "legacy XDP attach" "$INTEROP_RUN/g-burstd1.log" && ifail "burstd fell back to a legacy attach in the guest"
st=$(status)
echo "$st"
[[ $(entries "$st" burst_steer) == 1 && $(entries "$st" xdpfilt) == 1 ]] ||
  ifail "expected burst_steer and xdp-filter's program under one dispatcher"

ilog "2. RoCE to burst in the guest, 3. xdp-filter still filters"
pingpong shared
filters "with burstd"
guest_run -t 30 vm1 "$(in_root xdp-filter status)" | grep -iE "9999|udp" | head -5

ilog "4. burstd stopped: only burst's program goes"
gburstd_stop burstd1.log
st=$(status)
echo "$st"
[[ $(entries "$st" burst_steer) == 0 && $(entries "$st" xdpfilt) == 1 ]] ||
  ifail "after stopping burstd: expected xdp-filter alone"
filters "burstd stopped"

ilog "5. kill -9 of burstd, then a restart replaces its stale program"
gburstd_start burstd2.log >/dev/null 2>&1
guest_run -t 30 vm1 "kill -9 \$(pidof burstd); sleep 0.5; ! pidof burstd >/dev/null" || ifail "kill -9 burstd"
st=$(status)
echo "$st"
[[ $(entries "$st" burst_steer) == 1 ]] || ifail "expected the stale burst_steer to survive kill -9 (pinned link)"
gburstd_start burstd3.log >"$INTEROP_RUN/g-burstd3.log" 2>&1
cat "$INTEROP_RUN/g-burstd3.log"
grep -q "replaced stale burst_steer.*libxdp's dispatcher" "$INTEROP_RUN/g-burstd3.log" ||
  ifail "the restarted burstd did not report replacing its stale program"
st=$(status)
echo "$st"
[[ $(entries "$st" burst_steer) == 1 && $(entries "$st" xdpfilt) == 1 ]] ||
  ifail "after the restart: expected one burst_steer (replaced, not duplicated) and xdp-filter"
pingpong restarted
gburstd_stop burstd3.log
st=$(status)
[[ $(entries "$st" burst_steer) == 0 && $(entries "$st" xdpfilt) == 1 ]] ||
  { echo "$st"; ifail "after the last stop: expected xdp-filter alone"; }
filters "end"
guest_run -t 30 vm1 "$(in_root xdp-filter unload eth0)" >/dev/null || ifail "xdp-filter unload"
echo "PASS"
