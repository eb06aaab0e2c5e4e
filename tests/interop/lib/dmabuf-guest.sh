#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Guest side of tests/interop/dmabuf.sh (dash, run by the guest's /init from the 9p-mounted host
# root ROOT): loads vgem from the host's copy of the guest kernel's modules, unloads the guest's
# rxe and ib_core (libibverbs would list devices over netlink, not burst's sysfs tree), enters ROOT in a
# chroot with the guest's own /proc, /sys, /dev and a tmpfs /tmp and /run, starts the host-built
# burstd (--backend loopback on eth0) and runs verbs_dmabuf_probe --vgem under burstctl run.
# Usage: dmabuf-guest.sh ROOT BURSTD BURSTCTL PROBE MODULE...
# Exit: the probe's (0 pass, 1 fail, 77 no exporting DRM device); 77 when vgem does not load.
ROOT=$1 BURSTD=$2 BURSTCTL=$3 PROBE=$4
shift 4
for m in "$@"; do
  insmod "$ROOT$m" 2>/tmp/insmod.err ||
    grep -q 'File exists' /tmp/insmod.err ||
    { echo "SKIP: insmod $m: $(cat /tmp/insmod.err)"; exit 77; }
done
ls /dev/dri/card* >/dev/null 2>&1 || { echo "SKIP: vgem loaded but no /dev/dri/card*"; exit 77; }
echo "vgem: $(ls /dev/dri)"
# The guest's own RDMA stack goes: with ib_core loaded libibverbs lists devices over netlink
# (NETLINK_RDMA) and never sees burstctl run's sysfs tree; opening that socket would load
# ib_core again (request_module), so module autoloading is switched off first (the guest is
# disposable).
echo "" >/proc/sys/kernel/modprobe
rdma link delete rxe0 2>/dev/null
for m in rdma_ucm ib_umad rdma_rxe rdma_cm iw_cm ib_cm ib_uverbs ib_core; do
  [ -d "/sys/module/$m" ] && rmmod "$m"
done
[ -d /sys/module/ib_core ] && { echo "FAIL: cannot unload ib_core"; lsmod; exit 1; }
mount -t proc proc "$ROOT/proc" &&
  mount -t sysfs sysfs "$ROOT/sys" &&
  mount -t devtmpfs devtmpfs "$ROOT/dev" &&
  mount -t tmpfs tmpfs "$ROOT/dev/shm" &&
  mount -t devpts devpts "$ROOT/dev/pts" &&
  mount -t tmpfs tmpfs "$ROOT/tmp" &&
  mount -t tmpfs tmpfs "$ROOT/run" || { echo "FAIL: cannot prepare the chroot"; exit 1; }
# shellcheck disable=SC2016
exec chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp \
  /bin/bash -c '
    BURSTD=$1 BURSTCTL=$2 PROBE=$3
    SOCK=/tmp/burstd.sock
    "$BURSTD" --backend loopback --netdev eth0 --socket "$SOCK" >/tmp/burstd.log 2>&1 &
    BPID=$!
    for _ in $(seq 300); do
      timeout 5 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 && break
      sleep 0.2
    done
    timeout 5 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 ||
      { echo "FAIL: burstd did not start"; cat /tmp/burstd.log; exit 1; }
    timeout 120 "$BURSTCTL" run --netdev eth0 --socket "$SOCK" -- "$PROBE" --vgem
    rc=$?
    kill -0 "$BPID" 2>/dev/null || { echo "FAIL: burstd died"; rc=1; }
    kill "$BPID" 2>/dev/null
    wait "$BPID" 2>/dev/null
    [ $rc -eq 0 ] || { echo "--- burstd log:"; cat /tmp/burstd.log; }
    exit $rc' sh "$BURSTD" "$BURSTCTL" "$PROBE"
