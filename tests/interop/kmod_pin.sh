#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The kernel assistant's pinned memory (issue 17, docs/kmod.md "Pinned memory") in the Debian 6.1
# guest: this host's kernel cannot load modules. Builds the module (kmod/; where kmod/burst_ibdev.c
# is not in the tree yet, tests/kmod/ibdev_stub.c stands in for it) against the guest kernel's
# headers, tests/kmod/pin_test.c and the registration helper preloaded into burstd
# (tests/kmod/kmod_register_preload.c) into BUILD/kmod-pin, boots one guest with the host's /
# shared read-only (INTEROP_HOST_ROOT) and runs lib/kmod-pin-guest.sh there: pin_test, then
# burstd + ibv_rc_pingpong and ib_write_bw with malloc'd buffers under burstctl run (MRs pinned,
# data correct, the module's counters back to zero). KMOD_PIN_BENCH=1 adds ib_write_bw with the
# module's pins vs BURST_KMOD_PIN=0 (the /proc/self/mem path), goodput and burstd CPU per GB,
# KMOD_PIN_ROUNDS (1) alternations.
# Usage (root): flock /work/guest.lock tests/interop/kmod_pin.sh [BUILD_DIR]
# Exit 0 pass, 77 skipped (no guest, no headers), 1 fail. Bounded by KMOD_PIN_DEADLINE (s, 480).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
source "$HERE/lib/guest.sh"
BUILD=$(cd "${1:-$HERE/../../build/default}" 2>/dev/null && pwd) || iskip "no build directory"
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
for b in "$BURSTD" "$BURSTCTL"; do [[ -x $b ]] || iskip "build $b first"; done

interop_require
interop_prepare
HDRS=/usr/src/linux-headers-$INTEROP_KVER
[[ -d $HDRS ]] || iskip "no headers for the guest kernel (apt-get install linux-headers-$INTEROP_KVER)"
OUT=$BUILD/kmod-pin
rm -rf "$OUT" && mkdir -p "$OUT/src" || ifail "cannot create $OUT"
cp "$SRC"/kmod/* "$SRC/abi/burst_kmod.h" "$OUT/src/"
if [[ ! -f $SRC/kmod/burst_ibdev.c ]]; then
  ilog "kmod/burst_ibdev.c absent: the test stand-in tests/kmod/ibdev_stub.c takes its place"
  cp "$SRC/tests/kmod/ibdev_stub.c" "$OUT/src/burst_ibdev.c"
fi
sed -i 's|-I$(src)/../abi|-I$(src)|' "$OUT/src/Kbuild"
make -s -C "$HDRS" M="$OUT/src" modules >"$OUT/build.log" 2>&1 ||
  { cat "$OUT/build.log"; ifail "the module does not build against $HDRS"; }
cp "$OUT/src/burst.ko" "$OUT/"
cc -std=gnu11 -O2 -Wall -Wextra -Werror -I"$SRC" -o "$OUT/pin_test" "$SRC/tests/kmod/pin_test.c" ||
  ifail "pin_test does not build"
cc -shared -fPIC -O2 -Wall -Wextra -Werror -I"$SRC" -o "$OUT/kmod_register.so" \
  "$SRC/tests/kmod/kmod_register_preload.c" || ifail "kmod_register_preload does not build"

export INTEROP_HOST_ROOT=1
interop_netns_up
interop_deadline "${KMOD_PIN_DEADLINE:-480}"
guest_start vm1 "$INTEROP_SUBNET.21" || iskip "the guest did not boot (logs above)"
ROOT=/mnt/hostroot
ilog "burst.ko, pin_test, burstd + rc_pingpong / ib_write_bw in the guest"
guest_run -t $((${KMOD_PIN_DEADLINE:-480} - 60)) vm1 "mkdir -p $ROOT &&
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot $ROOT ||
  { echo 'SKIP: cannot mount the host root share'; exit 77; }
  BENCH=${KMOD_PIN_BENCH:-0} ROUNDS=${KMOD_PIN_ROUNDS:-1} exec /usr/bin/dash $ROOT$HERE/lib/kmod-pin-guest.sh $ROOT $OUT $BURSTD $BURSTCTL"
rc=$?
case $rc in
  0) echo "PASS" ;;
  77) exit 77 ;;
  *) guest_console vm1 | tail -30; ifail "the guest part exited $rc" ;;
esac
