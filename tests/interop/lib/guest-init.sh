#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# /init of the interop guest (dash). Loads the module closure, configures eth0 from the kernel
# command line (burst.name= burst.ip=A.B.C.D/N burst.mtu=), adds rxe0, reports readiness in the
# 9p share, then runs the commands the host queues in /host/q: ID.cmd (a shell script) with
# ID.tmo (seconds); output goes to /host/out/ID.out, exit status to /host/out/ID.rc.
# Creating /host/poweroff powers the guest off.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /dev/shm
NAME=guest IP= MTU=1500
for w in $(cat /proc/cmdline); do
  case $w in
    burst.name=*) NAME=${w#burst.name=} ;;
    burst.ip=*) IP=${w#burst.ip=} ;;
    burst.mtu=*) MTU=${w#burst.mtu=} ;;
  esac
done
hostname "$NAME"
while read -r m; do
  insmod "$m" 2>/run/insmod.err || echo "init: insmod $m failed: $(cat /run/insmod.err)"
done </etc/modules.order
i=0
while ! mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 host /host 2>/dev/null; do
  i=$((i + 1)); [ $i -gt 50 ] && { echo "init: cannot mount the 9p share"; poweroff -f; }
  sleep 0.1
done
ip link set lo up
i=0
while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
ip link set eth0 mtu "$MTU"
[ -n "$IP" ] && ip addr add "$IP" dev eth0
ip link set eth0 up
status=ok
rdma link add rxe0 type rxe netdev eth0 >/run/rxe.err 2>&1 || status=rxe-error
i=0
while [ $status = ok ] && ! ibv_devinfo -d rxe0 2>/dev/null | grep -q PORT_ACTIVE; do
  i=$((i + 1)); [ $i -gt 100 ] && { status=rxe-error; break; }
  sleep 0.1
done
{
  echo "$NAME $(uname -r) $IP mtu=$MTU rxe0=$status"
  [ $status = ok ] || { echo "rxe-error"; cat /run/rxe.err; }
  uname -a
  ip addr show eth0
  rdma link show
  ibv_devinfo -v -d rxe0
} >/host/.ready 2>&1
mv /host/.ready /host/ready
echo "init: $NAME ready"
while :; do
  [ -e /host/poweroff ] && { sync; poweroff -f; }
  for f in /host/q/*.cmd; do
    [ -e "$f" ] || continue
    id=${f##*/}; id=${id%.cmd}
    tmo=$(cat "/host/q/$id.tmo" 2>/dev/null); tmo=${tmo:-120}
    mv "$f" "/run/$id.cmd"; rm -f "/host/q/$id.tmo"
    (
      cd /root
      timeout "$tmo" /usr/bin/dash "/run/$id.cmd" >"/host/out/$id.out" 2>&1 </dev/null
      echo $? >"/host/out/.$id.rc"
      mv "/host/out/.$id.rc" "/host/out/$id.rc"
    ) &
  done
  sleep 0.2
done
