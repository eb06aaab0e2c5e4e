#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The provider's native mode (issue 17, item 1; docs/kmod.md "Native mode") in the Debian 6.1 guest:
# the kernel assistant (kmod/, built here against the guest kernel's headers) loaded next to the
# guest's ib_core and ib_uverbs; the host-built burstd (AF_XDP on the guest's eth0, kmod = auto)
# registers burst0 with ib_core. In a chroot of the host's / (INTEROP_HOST_ROOT) whose
# /etc/libibverbs.d also names burst's provider (what the package installs), with an empty
# environment, no preload and no burstctl run:
#   1. stock ibv_devices lists burst0, ibv_devinfo -v shows it (port active, RoCE v2 GIDs of eth0),
#      rdma link shows it;
#   2. ibv_rc_pingpong -e (completion events through the kernel's completion channel, raised by
#      burstd through the module) between burst0 in the guest and a burstd on the host end of the
#      bridge (the server under burstctl run there, as tests/interop/xdp_share.sh);
#   3. ibv_asyncwatch on burst0 gets IBV_EVENT_DEVICE_FATAL when burstd is killed (kill -9: the
#      registration goes with burstd's descriptor) and burst0 disappears from ibv_devices.
# Usage (root): tests/interop/kmod_native.sh [BUILD_DIR]
# Exit 0 pass, 77 skipped (no guest, no kernel headers, no module source), 1 fail. Bounded by
# KMODNATIVE_DEADLINE (s, 600). Guests are shared: run under `flock /work/guest.lock` by hand.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
source "$HERE/lib/guest.sh"
BUILD=$(cd "${1:-$HERE/../../build/default}" 2>/dev/null && pwd) || iskip "no build directory"
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
PROVIDER=$BUILD/provider/libburst-rdmav34.so
for b in "$BURSTD" "$BURSTCTL" "$PROVIDER"; do [[ -e $b ]] || iskip "build $b first"; done
[[ -f $SRC/kmod/burst_ibdev.c ]] || iskip "no kmod/burst_ibdev.c in this tree (the module's device part)"

interop_require
interop_prepare
HDRS=/usr/src/linux-headers-$INTEROP_KVER
[[ -d $HDRS ]] || iskip "no kernel headers for the guest's $INTEROP_KVER (apt-get install linux-headers-$INTEROP_KVER)"
export INTEROP_HOST_ROOT=1
interop_netns_up
interop_deadline "${KMODNATIVE_DEADLINE:-600}"

# The module, built out of tree in a scratch copy (kmod/ includes ../abi).
KSRC=$INTEROP_RUN/src
mkdir -p "$KSRC" && cp -r "$SRC/kmod" "$SRC/abi" "$KSRC/" || ifail "cannot copy kmod/ and abi/"
if [[ ! -f $KSRC/kmod/burst_pin.c ]]; then  # pinning is another branch's part: not needed here
  printf '%s\n' '// SPDX-License-Identifier: GPL-2.0-only' '#include "burst.h"' \
    'int burst_pin_create(void __user *arg) { return -EOPNOTSUPP; }' \
    'int burst_pin_init(void) { return 0; }' 'void burst_pin_exit(void) { }' >"$KSRC/kmod/burst_pin.c"
fi
make -s -C "$HDRS" M="$KSRC/kmod" modules >"$INTEROP_RUN/kbuild.log" 2>&1 ||
  { tail -30 "$INTEROP_RUN/kbuild.log"; ifail "the module does not build against $HDRS"; }
KO=$KSRC/kmod/burst.ko
GIP=$INTEROP_SUBNET.41
ROOT=/mnt/hostroot
GSOCK=/tmp/burstd.sock
HSOCK=$INTEROP_RUN/burstd.sock
HPID=

kn_cleanup() {
  local rc=$?
  [[ -n $HPID ]] && { kill "$HPID" 2>/dev/null; wait "$HPID" 2>/dev/null; }
  (exit "$rc")
  interop_cleanup
}
trap kn_cleanup EXIT

# The guest's command line running CMD... in the host root with an empty environment.
in_root() { echo "chroot $ROOT /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp $*"; }

ilog "burstd on the host end ($INTEROP_BURST_IF)"
nsenter --net="/run/netns/$INTEROP_NS" "$BURSTD" --backend xdp --netdev "$INTEROP_BURST_IF" \
  --workers 1 --socket "$HSOCK" >"$INTEROP_RUN/host-burstd.log" 2>&1 &
HPID=$!
for _ in $(seq 100); do timeout 5 "$BURSTCTL" --socket "$HSOCK" status >/dev/null 2>&1 && break; sleep 0.1; done
timeout 5 "$BURSTCTL" --socket "$HSOCK" status >/dev/null 2>&1 ||
  { cat "$INTEROP_RUN/host-burstd.log"; ifail "burstd did not start on $INTEROP_BURST_IF"; }

guest_start vm1 "$GIP" || iskip "the guest did not boot (logs above)"
# The host root, with a writable /etc/libibverbs.d holding the host's driver files and burst's
# (the build's provider by absolute path, as a package's burst.driver names the installed one).
guest_run -t 60 vm1 "mkdir -p $ROOT &&
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot $ROOT &&
  mount -t proc proc $ROOT/proc && mount -t sysfs sysfs $ROOT/sys &&
  mount -t bpf bpf $ROOT/sys/fs/bpf &&
  mount -t devtmpfs devtmpfs $ROOT/dev && mount -t tmpfs tmpfs $ROOT/dev/shm &&
  mount -t devpts devpts $ROOT/dev/pts && mount -t tmpfs tmpfs $ROOT/tmp &&
  mount -t tmpfs tmpfs $ROOT/run &&
  mkdir -p /run/drv && cp $ROOT/etc/libibverbs.d/*.driver /run/drv/ &&
  echo 'driver ${PROVIDER%-rdmav34.so}' >/run/drv/burst.driver &&
  mount --bind /run/drv $ROOT/etc/libibverbs.d" ||
  iskip "cannot prepare the host-root chroot in the guest"
ilog "rxe0 out, the module in (next to ib_core and ib_uverbs)"
guest_run -t 60 vm1 "rdma link delete rxe0 2>/dev/null; rmmod rdma_rxe 2>/dev/null
  [ -d /sys/module/ib_uverbs ] || { echo 'no ib_uverbs in the guest'; exit 1; }
  modprobe ib_uverbs && insmod $ROOT$KO && [ -c /dev/burst ] && cat /sys/module/burst/initstate" ||
  { guest_console vm1 | tail -20; ifail "insmod burst.ko in the guest"; }
guest_run vm1 "ping -c 1 -W 5 $INTEROP_HOST_IP >/dev/null" || ifail "the guest cannot reach the host end"

ilog "burstd in the guest on eth0 (kmod = on: registers burst0)"
guest_run -t 10 vm1 "printf 'kmod = on\n' >$ROOT/tmp/kmod.conf" || ifail "burstd's config in the guest"
guest_spawn -t 500 vm1 "$(in_root "$BURSTD" --config /tmp/kmod.conf --backend xdp --netdev eth0 \
  --workers 1 --socket $GSOCK) >/tmp/gburstd.log 2>&1" >/dev/null
guest_run -t 90 vm1 "i=0; while [ \$i -lt 300 ]; do
    [ -e /sys/class/infiniband/burst0 ] && $(in_root timeout 5 "$BURSTCTL" --socket $GSOCK status) >/dev/null 2>&1 && exit 0
    i=\$((i + 1)); sleep 0.2; done; cat /tmp/gburstd.log; exit 1" ||
  ifail "burstd did not register burst0 in the guest"
guest_run -t 10 vm1 "cat /tmp/gburstd.log"

ilog "1. stock tools see burst0 (no environment, no preload)"
out=$(guest_run -t 60 vm1 "$(in_root ibv_devices)") || { echo "$out"; ifail "ibv_devices"; }
echo "$out"
grep -qw burst0 <<<"$out" || ifail "ibv_devices does not list burst0"
out=$(guest_run -t 60 vm1 "$(in_root ibv_devinfo -v -d burst0)") || { echo "$out"; ifail "ibv_devinfo -v"; }
echo "$out" | head -60
grep -q "PORT_ACTIVE" <<<"$out" || ifail "ibv_devinfo: burst0's port is not active"
grep -q "RoCE v2" <<<"$out" || ifail "ibv_devinfo: no RoCE v2 GID on burst0"
guest_run -t 30 vm1 "$(in_root rdma link show)" | tee "$INTEROP_RUN/rdma-link" | grep -q "burst0/1" ||
  { cat "$INTEROP_RUN/rdma-link"; ifail "rdma link does not show burst0"; }

ilog "2. ibv_rc_pingpong -e: guest burst0 (native) <-> host burstd (burstctl run)"
nsenter --net="/run/netns/$INTEROP_NS" env TMPDIR="$INTEROP_RUN" timeout 150 "$BURSTCTL" run \
  --netdev "$INTEROP_BURST_IF" --socket "$HSOCK" -- ibv_rc_pingpong -d burst0 -g 1 -e -m 1024 -n 20 \
  >"$INTEROP_RUN/pp.server" 2>&1 &
spid=$!
for _ in $(seq 100); do innet ss -ltn | grep -q ':18515 ' && break; sleep 0.1; done
guest_run -t 150 vm1 "$(in_root timeout 140 ibv_rc_pingpong -d burst0 -g 1 -e -m 1024 -n 20 \
  "$INTEROP_HOST_IP")" >"$INTEROP_RUN/pp.client" 2>&1
rc=$?
wait "$spid"
src=$?
cat "$INTEROP_RUN/pp.client"
((rc == 0 && src == 0)) || { cat "$INTEROP_RUN/pp.server"; guest_run -t 10 vm1 "tail -20 /tmp/gburstd.log";
  ifail "ibv_rc_pingpong -e: client $rc, server $src"; }
grep -q "20 iters" "$INTEROP_RUN/pp.client" || ifail "ibv_rc_pingpong did not report its iterations"

ilog "3. kill -9 of burstd: ibv_asyncwatch gets IBV_EVENT_DEVICE_FATAL, burst0 goes"
aw=$(guest_spawn -t 90 vm1 "$(in_root timeout 80 ibv_asyncwatch -d burst0)")
# (a few seconds for its context to open: connected to burstd, blocked on async_fd)
guest_run -t 30 vm1 "i=0; while ! pidof ibv_asyncwatch >/dev/null && [ \$i -lt 100 ]; do
    i=\$((i + 1)); sleep 0.1; done; sleep 3; kill -9 \$(pidof burstd)" || ifail "kill -9 burstd"
out=$(guest_wait vm1 "$aw")
awrc=$?
echo "$out"
grep -q "IBV_EVENT_DEVICE_FATAL\|(8)" <<<"$out" ||
  ifail "ibv_asyncwatch did not get IBV_EVENT_DEVICE_FATAL (exit $awrc)"
((awrc != 124 && awrc != 143)) || ifail "ibv_asyncwatch hung after the device went away"
out=$(guest_run -t 60 vm1 "i=0; while [ -e /sys/class/infiniband/burst0 ] && [ \$i -lt 100 ]; do
  i=\$((i + 1)); sleep 0.1; done; $(in_root ibv_devices)")
echo "$out"
grep -qw burst0 <<<"$out" && ifail "burst0 is still listed after burstd was killed"
guest_run -t 30 vm1 "rmmod burst" || ifail "rmmod burst after its last device went"
echo "PASS"
