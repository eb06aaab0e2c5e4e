#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# ibv_reg_dmabuf_mr with a real dma-buf, in the Debian 6.1 guest (this host's kernel has no dma-buf
# exporter; the guest kernel has vgem). One guest boots with the host's / shared read-only over
# 9p (INTEROP_HOST_ROOT); lib/dmabuf-guest.sh loads vgem (drm, drm_shmem_helper, vgem from the
# host's copy of the guest kernel's modules: the initramfs is unchanged), enters the host root in
# a chroot and runs the host-built burstd (--backend loopback on eth0) and `burstctl run
# verbs_dmabuf_probe --vgem`: a PRIME-exported vgem dumb buffer registered with
# ibv_reg_dmabuf_mr, RDMA WRITE / READ / SEND through it on an RC QP connected to itself, the
# refused cases (fd -1: EBADF; memfd, pipe, regular file, a range past the buffer: EINVAL).
# Usage (root): tests/interop/dmabuf.sh [BUILD_DIR]
# Exit 0 pass, 77 skipped (no guest, no vgem), 1 fail. Bounded by DMABUF_DEADLINE (s, 420).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
BUILD=$(cd "${1:-$HERE/../../build/default}" 2>/dev/null && pwd) || iskip "no build directory"
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
PROBE=$BUILD/tests/provider/verbs_dmabuf_probe
for b in "$BURSTD" "$BURSTCTL" "$PROBE"; do [[ -x $b ]] || iskip "build $b first"; done

interop_require
interop_prepare
KROOT=${INTEROP_KERNEL%/boot/*}
# Absolute host paths (the guest sees the host's / at the same paths inside the chroot).
mapfile -t MODS < <(modprobe -d "$KROOT" -S "$INTEROP_KVER" --show-depends vgem 2>/dev/null |
  awk '$1 == "insmod" {print $2}' | xargs -r readlink -f)
[[ ${#MODS[@]} -gt 0 ]] || iskip "the guest kernel $INTEROP_KVER has no vgem module"
export INTEROP_HOST_ROOT=1
interop_netns_up
interop_deadline "${DMABUF_DEADLINE:-420}"
guest_start vm1 "$INTEROP_SUBNET.21" || iskip "the guest did not boot (logs above)"
ROOT=/mnt/hostroot
ilog "vgem, burstd and verbs_dmabuf_probe --vgem in the guest"
guest_run -t 240 vm1 "mkdir -p $ROOT &&
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot $ROOT ||
  { echo 'SKIP: cannot mount the host root share'; exit 77; }
  exec /usr/bin/dash $ROOT$HERE/lib/dmabuf-guest.sh $ROOT $BURSTD $BURSTCTL $PROBE ${MODS[*]}"
rc=$?
case $rc in
  0) echo "PASS" ;;
  77) exit 77 ;;
  *) guest_console vm1 | tail -30; ifail "the guest part exited $rc" ;;
esac
