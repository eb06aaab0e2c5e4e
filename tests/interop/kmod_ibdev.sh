#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burst0 registered with the kernel's RDMA core by the burst module (issue 17, kmod/burst_ibdev.c),
# in the Debian 6.1 guest (this host cannot load modules and has no ib_core). The module is built
# here against the guest kernel's headers; one guest boots with the host's / shared read-only
# (INTEROP_HOST_ROOT) and runs lib/kmod-ibdev-guest.sh: insmod next to the guest's ib_core and
# ib_uverbs (rxe0 removed), kmod_ioctl_test's bad input, burstd (AF_XDP on eth0, kmod = on) from
# the host root in a chroot; `rdma link`, /sys/class/infiniband, the IPv4-mapped GID and
# burst_socket; stock ibv_devices (no environment; burst.driver bind-mounted in the guest) lists
# burst0; rmmod refused while burstd runs; kill -9 burstd unregisters burst0, a second burstd
# registers again; after it stops, rmmod works.
# Usage (root): tests/interop/kmod_ibdev.sh [BUILD_DIR]
# Exit 0 pass, 77 skipped (no guest, no headers), 1 fail. Bounded by KMOD_IBDEV_DEADLINE (s, 420).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
source "$HERE/lib/guest.sh"
BUILD=$(cd "${1:-$HERE/../../build/default}" 2>/dev/null && pwd) || iskip "no build directory"
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
TOOL=$BUILD/tests/kmod/kmod_ioctl_test
PROVIDER=$BUILD/provider/libburst-rdmav34.so
for b in "$BURSTD" "$BURSTCTL" "$TOOL" "$PROVIDER"; do [[ -e $b ]] || iskip "build $b first"; done

interop_require
interop_prepare
KDIR=/usr/src/linux-headers-$INTEROP_KVER
[[ -d $KDIR ]] || iskip "no headers for the guest kernel (apt-get install linux-headers-$INTEROP_KVER)"
# The module from this tree, built out of the tree's way (a private copy of kmod/ and abi/).
KBUILD=$BUILD/kmod-ibdev
rm -rf "$KBUILD" && mkdir -p "$KBUILD" && cp -r "$SRC/kmod" "$SRC/abi" "$KBUILD/" ||
  ifail "cannot copy kmod/ to $KBUILD"
if [[ ! -f $KBUILD/kmod/burst_pin.c ]]; then  # the pinning part is another branch's
  printf '%s\n' '// SPDX-License-Identifier: GPL-2.0-only' '#include "burst.h"' \
    'int burst_pin_create(void __user *arg) { return -EOPNOTSUPP; }' \
    'int burst_pin_init(void) { return 0; }' 'void burst_pin_exit(void) { }' \
    >"$KBUILD/kmod/burst_pin.c"
fi
make -s -C "$KDIR" M="$KBUILD/kmod" modules >"$KBUILD/make.log" 2>&1 ||
  { tail -20 "$KBUILD/make.log"; ifail "the module does not build against $KDIR"; }
KO=$KBUILD/kmod/burst.ko

export INTEROP_HOST_ROOT=1
interop_netns_up
interop_deadline "${KMOD_IBDEV_DEADLINE:-420}"
GIP=$INTEROP_SUBNET.41
guest_start vm1 "$GIP" || iskip "the guest did not boot (logs above)"
ROOT=/mnt/hostroot
guest_run -t 300 vm1 "mkdir -p $ROOT &&
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot $ROOT ||
  { echo 'SKIP: cannot mount the host root share'; exit 77; }
  exec /usr/bin/dash $ROOT$HERE/lib/kmod-ibdev-guest.sh $ROOT $KO $BURSTD $TOOL $PROVIDER $GIP"
rc=$?
case $rc in
  0) echo "PASS" ;;
  77) exit 77 ;;
  *) guest_console vm1 | tail -30; ifail "the guest part exited $rc" ;;
esac
