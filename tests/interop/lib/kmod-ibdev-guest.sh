#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Guest side of tests/interop/kmod_ibdev.sh (dash, from the 9p-mounted host root ROOT).
# Usage: kmod-ibdev-guest.sh ROOT KO BURSTD TOOL PROVIDER GUEST_IP
# Exit 0 pass, 1 fail, 77 when the module cannot load.
ROOT=$1 KO=$2 BURSTD=$3 TOOL=$4 PROVIDER=$5 GIP=$6
SOCK=/tmp/burstd.sock
fails=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }
die() { echo "FAIL: $*"; exit 1; }
inroot() { chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp "$@"; }

rdma link delete rxe0 2>/dev/null
rmmod rdma_rxe 2>/dev/null
modprobe ib_uverbs || die "modprobe ib_uverbs"
insmod "$ROOT$KO" 2>/tmp/insmod.err || { echo "SKIP: insmod: $(cat /tmp/insmod.err)"; exit 77; }
[ -c /dev/burst ] && ok "/dev/burst: $(ls -l /dev/burst)" || die "no /dev/burst after insmod"
mount -t proc proc "$ROOT/proc" && mount -t sysfs sysfs "$ROOT/sys" &&
  mount -t bpf bpf "$ROOT/sys/fs/bpf" && mount -t devtmpfs devtmpfs "$ROOT/dev" &&
  mount -t tmpfs tmpfs "$ROOT/dev/shm" && mount -t devpts devpts "$ROOT/dev/pts" &&
  mount -t tmpfs tmpfs "$ROOT/tmp" && mount -t tmpfs tmpfs "$ROOT/run" ||
  die "cannot prepare the chroot"
# libibverbs' driver list with burst's provider from the build, inside the guest only.
mkdir -p /tmp/ld && cp "$ROOT"/etc/libibverbs.d/*.driver /tmp/ld/ 2>/dev/null
echo "driver ${PROVIDER%-rdmav34.so}" >/tmp/ld/burst.driver
mount -o bind /tmp/ld "$ROOT/etc/libibverbs.d" || die "cannot bind burst.driver"
IFX=$(cat /sys/class/net/eth0/ifindex)

echo "--- bad input (kmod_ioctl_test)"
inroot "$TOOL" bad "$IFX" || bad "kmod_ioctl_test bad"
inroot "$TOOL" cycle "$IFX" || bad "kmod_ioctl_test cycle"
inroot setpriv --reuid=65534 --regid=65534 --clear-groups "$TOOL" noperm "$IFX" ||
  bad "kmod_ioctl_test noperm"

start_burstd() {  # LOG
  printf 'kmod = on\n' >"$ROOT/tmp/kmod.conf"
  inroot "$BURSTD" --config /tmp/kmod.conf --backend xdp --netdev eth0 --workers 1 \
    --socket "$SOCK" >"/tmp/$1" 2>&1 &
  i=0
  while [ $i -lt 300 ]; do
    rdma link 2>/dev/null | grep -q '^link burst0/1' && return 0
    kill -0 $! 2>/dev/null || break
    i=$((i + 1)); sleep 0.2
  done
  cat "/tmp/$1"; die "burstd did not register burst0"
}
gone() {  # wait until rdma link no longer shows burst0
  i=0
  while rdma link 2>/dev/null | grep -q '^link burst0/'; do
    i=$((i + 1)); [ $i -gt 100 ] && return 1; sleep 0.1
  done
  return 0
}

echo "--- burstd (AF_XDP on eth0, kmod = on)"
start_burstd burstd1.log
grep 'kmod: registered as burst0 on eth0' /tmp/burstd1.log && ok "burstd logged its registration" ||
  bad "no registration line in burstd's log"
rdma link
rdma link | grep -q '^link burst0/1 state ACTIVE .*netdev eth0' && ok "rdma link: burst0 on eth0" ||
  bad "rdma link does not show burst0/1 ACTIVE on eth0"
ls /sys/class/infiniband
ls /sys/class/infiniband | grep -qx burst0 && ok "/sys/class/infiniband/burst0" || bad "no sysfs burst0"
want=$(echo "$GIP" | awk -F. '{printf "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", $1, $2, $3, $4}')
gid=$(cat /sys/class/infiniband/burst0/ports/1/gids/1)
[ "$gid" = "$want" ] && ok "GID 1 is $gid" || bad "GID 1 is '$gid', want $want"
echo "GID types: $(cat /sys/class/infiniband/burst0/ports/1/gid_attrs/types/1)"
s=$(cat /sys/class/infiniband/burst0/burst_socket)
[ "$s" = "$SOCK" ] && ok "burst_socket $s" || bad "burst_socket '$s', want $SOCK"
inroot ibv_devices >/tmp/devs 2>&1
cat /tmp/devs
grep -q 'burst0' /tmp/devs && ok "stock ibv_devices lists burst0" || bad "ibv_devices misses burst0"
inroot "$TOOL" taken "$IFX" || bad "kmod_ioctl_test taken"
rmmod burst 2>/tmp/rmmod.err && bad "rmmod burst succeeded while burstd runs" ||
  ok "rmmod refused while burstd runs: $(cat /tmp/rmmod.err)"

echo "--- kill -9 burstd"
kill -9 "$(pidof burstd)"
gone && ok "burst0 unregistered after kill -9" || bad "burst0 still registered after kill -9"
rdma link
start_burstd burstd2.log
ok "a second burstd registered: $(rdma link | grep '^link burst')"
kill "$(pidof burstd)"
i=0; while pidof burstd >/dev/null && [ $i -lt 100 ]; do i=$((i + 1)); sleep 0.1; done
gone && ok "burst0 unregistered after SIGTERM" || bad "burst0 still registered after SIGTERM"
tail -3 /tmp/burstd2.log
umount "$ROOT/etc/libibverbs.d" "$ROOT/run" "$ROOT/tmp" "$ROOT/dev/pts" "$ROOT/dev/shm" \
  "$ROOT/dev" "$ROOT/sys/fs/bpf" "$ROOT/sys" "$ROOT/proc" 2>/dev/null
rmmod burst && ok "rmmod after burstd stopped" || bad "rmmod burst failed after burstd stopped"
[ -e /dev/burst ] && bad "/dev/burst still there"
dmesg | grep -i 'burst\|infiniband' | tail -8
[ $fails -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
exit 0
