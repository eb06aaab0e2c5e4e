#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Guest side of tests/interop/kmod_pin.sh (dash, run by the guest's /init from the 9p-mounted host
# root ROOT): insmod the burst module built for this kernel, run pin_test (the module's bad input),
# then, in a chroot of ROOT, burstd (--backend loopback on eth0, preloaded with the registration
# helper until burstd registers itself) and ibv_rc_pingpong / ib_write_bw with malloc'd buffers
# under burstctl run: the MRs must be pinned (burstctl counters mr.pinned), the data correct, and
# the module's counters back to zero afterwards. With BENCH=1 ib_write_bw also runs with
# BURST_KMOD_PIN=0 (today's /proc/self/mem path) and each run prints goodput and burstd's CPU.
# Usage: kmod-pin-guest.sh ROOT DIR BURSTD BURSTCTL (DIR: burst.ko, pin_test, kmod_register.so)
ROOT=$1 DIR=$2 BURSTD=$3 BURSTCTL=$4
insmod "$ROOT$DIR/burst.ko" || { echo "FAIL: insmod burst.ko"; exit 1; }
[ -c /dev/burst ] || { echo "FAIL: no /dev/burst after insmod"; exit 1; }
echo "--- pin_test"
"$ROOT$DIR/pin_test" || { echo "FAIL: pin_test"; exit 1; }
# The module with its ib_device part needs ib_core, and with ib_core loaded libibverbs lists
# devices over netlink, never burstctl run's tree: applications on pinned MRs then run on the
# kernel's burst0 (native mode), which tests/interop/kmod.sh covers.
if grep -q "^ib_core [0-9]* [0-9]* [^ ]*burst" /proc/modules; then
  echo "SKIP: applications: burst.ko needs ib_core, so libibverbs ignores burstctl run's tree;" \
    "pinned MRs under applications: tests/interop/kmod.sh (native mode)"
  exit 0
fi
# As dmabuf-guest.sh: libibverbs must use burstctl run's sysfs tree, not ib_core's netlink.
echo "" >/proc/sys/kernel/modprobe
rdma link delete rxe0 2>/dev/null
for m in rdma_ucm ib_umad rdma_rxe rdma_cm iw_cm ib_cm ib_uverbs ib_core; do
  [ -d "/sys/module/$m" ] && rmmod "$m"
done
mount -t proc proc "$ROOT/proc" &&
  mount -t sysfs sysfs "$ROOT/sys" &&
  mount -t devtmpfs devtmpfs "$ROOT/dev" &&
  mount -t tmpfs tmpfs "$ROOT/dev/shm" &&
  mount -t devpts devpts "$ROOT/dev/pts" &&
  mount -t tmpfs tmpfs "$ROOT/tmp" &&
  mount -t tmpfs tmpfs "$ROOT/run" || { echo "FAIL: cannot prepare the chroot"; exit 1; }
IP=$(ip -4 -o addr show dev eth0 | awk '{print $4}' | cut -d/ -f1)
# shellcheck disable=SC2016
exec chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp \
  BENCH="${BENCH:-0}" ROUNDS="${ROUNDS:-1}" /bin/bash -c '
    DIR=$1 BURSTD=$2 BURSTCTL=$3 IP=$4
    SOCK=/tmp/burstd.sock
    LD_PRELOAD=$DIR/kmod_register.so "$BURSTD" --backend loopback --netdev eth0 --socket "$SOCK" \
      >/tmp/burstd.log 2>&1 &
    BPID=$!
    for _ in $(seq 300); do
      timeout 5 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 && break
      sleep 0.2
    done
    timeout 5 "$BURSTCTL" --socket "$SOCK" status >/dev/null 2>&1 ||
      { echo "FAIL: burstd did not start"; cat /tmp/burstd.log; exit 1; }
    grep kmod_register /tmp/burstd.log
    rc=0
    run() { timeout 120 "$BURSTCTL" run --netdev eth0 --socket "$SOCK" -- "$@"; }
    counters() { "$BURSTCTL" --socket "$SOCK" counters --all | grep "^mr\."; "$BURSTCTL" --socket "$SOCK" status | grep "^MRs"; }
    # pair NAME SERVER-ARGS -- CLIENT-ARGS: server in the background, client, counters mid-run.
    pair() {
      local name=$1; shift
      local sargs=() cargs=()
      while [ "$1" != -- ]; do sargs+=("$1"); shift; done; shift
      cargs=("$@")
      run "${sargs[@]}" >/tmp/$name.server 2>&1 &
      local sp=$!
      sleep 2
      run "${cargs[@]}" "$IP" >/tmp/$name.client 2>&1 &
      local cp=$!
      : >/tmp/$name.counters
      # Samples while the client runs (under TCG the applications set up for seconds).
      while kill -0 $cp 2>/dev/null; do counters >>/tmp/$name.counters; sleep 1; done
      wait $cp; local crc=$?
      wait $sp; local src=$?
      echo "--- $name: client $crc, server $src"
      grep "^MRs" /tmp/$name.counters | sort | uniq -c
      grep -E "bytes in|^ *[0-9]+ +[0-9]+ +[0-9.]+ +[0-9.]+" /tmp/$name.client /tmp/$name.server
      if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
        echo "FAIL: $name"; tail -n 8 /tmp/$name.client /tmp/$name.server; rc=1
      fi
    }
    pair rc_pingpong ibv_rc_pingpong -d burst0 -g 1 -n 500 -c -- ibv_rc_pingpong -d burst0 -g 1 -n 500 -c
    grep -Eq "^mr\.pinned +[1-9]" /tmp/rc_pingpong.counters ||
      { echo "FAIL: rc_pingpong MRs not pinned"; rc=1; }
    pair write_bw ib_write_bw -d burst0 -x 1 -F -s 65536 -n 2000 --report_gbits -- \
      ib_write_bw -d burst0 -x 1 -F -s 65536 -n 2000 --report_gbits
    grep -Eq "^mr\.pinned +[1-9]" /tmp/write_bw.counters ||
      { echo "FAIL: write_bw MRs not pinned"; rc=1; }
    st=$("$DIR/pin_test" --stats)
    echo "module after the applications: $st"
    echo "$st" | grep -q "pins 0 pinned_pages 0 mappings 0" || { echo "FAIL: pins left"; rc=1; }
    if [ "$BENCH" = 1 ]; then
      cpu() { awk "{print \$14 + \$15}" /proc/$BPID/stat; }
      modes=""
      for _ in $(seq "$ROUNDS"); do modes="$modes kmod-pin mem-fd"; done
      for mode in $modes; do
        pin=1; [ $mode = mem-fd ] && pin=0
        export BURST_KMOD_PIN=$pin
        c0=$(cpu)
        pair bench-$mode ib_write_bw -d burst0 -x 1 -F -s 65536 -D 5 --report_gbits -- \
          ib_write_bw -d burst0 -x 1 -F -s 65536 -D 5 --report_gbits
        c1=$(cpu)
        unset BURST_KMOD_PIN
        awk -v m=$mode -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" "/^ *65536 / {
            gb = \$4 * 5 / 8; printf \"BENCH %s: goodput %.3f Gb/s, burstd CPU %.2f s for %.3f GB: %.3f s/GB\\n\", m, \$4, t / hz, gb, (gb > 0 ? t / hz / gb : 0); exit }" \
          /tmp/bench-$mode.client
      done
    fi
    kill -0 "$BPID" 2>/dev/null || { echo "FAIL: burstd died"; rc=1; }
    kill "$BPID" 2>/dev/null
    wait "$BPID" 2>/dev/null
    [ $rc -eq 0 ] || { echo "--- burstd log:"; tail -30 /tmp/burstd.log; }
    exit $rc' sh "$DIR" "$BURSTD" "$BURSTCTL" "$IP"
