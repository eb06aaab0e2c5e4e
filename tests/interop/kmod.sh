#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The kernel assistant's acceptance test (issue 17, docs/kmod.md "Build, install, test"), in two
# Debian 6.1 guests (this host cannot load modules and has no ib_core). The module is built here
# against the guest kernel's headers (tests/kmod/lib.sh). Guest A boots with the host's / shared
# read-only (INTEROP_HOST_ROOT) and runs everything of burst's from a chroot of it, whose
# /etc/libibverbs.d is a bind mount of a directory holding the host's stock .driver files plus
# burst.driver naming this build's provider by absolute path (what burst's package installs), with
# an empty environment: no SYSFS_PATH, no RDMAV_DRIVERS, no preload, no burstctl run. Guest B runs
# Linux rxe (rxe0). Steps, each printed PASS / FAIL / SKIP with its reason:
#   insmod        burst.ko next to the guest's ib_core and ib_uverbs (rxe0 removed from A)
#   register      burstd on A's eth0 (AF_XDP, kmod = on) registers burst0
#   ibv_devices / ibv_devinfo / rdma_link   stock tools list burst0 with no environment
#   ib_write_bw, ib_read_bw, ibv_rc_pingpong -c -e   burst0 (A) <-> rxe0 (B), both directions
#   zero_copy     while an application holds MRs, burstctl status reports them pinned (kmod-pin)
#   app_kill      kill -9 of that application: the module's pins and mappings back to zero
#   rmmod_busy    rmmod while burstd holds burst0 is refused
#   fatal         kill -9 of burstd: ibv_asyncwatch on burst0 gets IBV_EVENT_DEVICE_FATAL
#   unregister    ... and burst0 is gone (rdma link, ibv_devices); then rmmod works
#   old_path      without the module (and the guest's RDMA stack unloaded): burstd and
#                 burstctl run ibv_rc_pingpong -c against rxe0, as before issue 17
# Steps that need a part of issue 17 not in this tree SKIP naming the part (provider native mode:
# i17-native; the pinned MRs: i17-pin; burstd's registration: i17-ibdev).
# Usage (root, one guest user at a time): flock /work/guest.lock tests/interop/kmod.sh [BUILD_DIR]
# Exit 0 pass (no FAIL), 1 fail, 77 skipped (not root, no qemu or headers, no guest boots).
# Bounded by KMOD_DEADLINE (s, default 600; counted from the first guest's boot, after the build).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
source "$HERE/lib/guest.sh"
source "$SRC/tests/kmod/lib.sh"
BUILD=$(cd "${1:-$HERE/../../build/default}" 2>/dev/null && pwd) || iskip "no build directory"
BURSTD=$BUILD/daemon/burstd/burstd
BURSTCTL=$BUILD/tools/burstctl/burstctl
PROVIDER=$BUILD/provider/libburst-rdmav34.so
for b in "$BURSTD" "$BURSTCTL" "$PROVIDER"; do [[ -e $b ]] || iskip "build $b first"; done
for c in ib_write_bw ib_read_bw ibv_rc_pingpong ibv_asyncwatch; do
  command -v $c >/dev/null || iskip "missing $c on the host (perftest, ibverbs-utils)"
done

interop_require
interop_prepare
KDIR=/usr/src/linux-headers-$INTEROP_KVER
[[ -f $KDIR/Makefile ]] || iskip "no headers of the guest kernel (apt-get install linux-headers-$INTEROP_KVER)"
# What this tree has of issue 17.
HAVE_NATIVE=0; [[ -f $SRC/provider/native_mode.cc ]] && HAVE_NATIVE=1
HAVE_PIN=0; grep -q 'BURST_KMOD_PIN' "$SRC/provider/mr_file.cc" 2>/dev/null && HAVE_PIN=1
HAVE_REG=0; [[ -f $SRC/daemon/burstd/kmod_device.cc ]] && HAVE_REG=1
for f in $(sed -n 's/^burst-y *:= *//p' "$SRC/kmod/Kbuild"); do
  [[ -f $SRC/kmod/${f%.o}.c ]] || iskip "kmod/${f%.o}.c is not in this tree (i17-ibdev / i17-pin)"
done

# Under the build tree, not $INTEROP_RUN: the guest sees the host's / over 9p, but not its /tmp mount.
KOUT=$BUILD/kmod-accept
kmod_build "$SRC" "$KOUT" "$KDIR" -s >"$KOUT.log" 2>&1 ||
  { tail -30 "$KOUT.log"; ifail "the module does not build against $KDIR"; }
KO=$KOUT/kmod/burst.ko
STATS=$KOUT/pin_stats
cc -std=gnu11 -O2 -Wall -I"$SRC" -o "$STATS" "$SRC/tests/kmod/pin_test.c" 2>"$KOUT.cc.log" ||
  STATS=  # (pin_test --stats prints the module's counters; without it app_kill skips)

export INTEROP_HOST_ROOT=1
interop_netns_up
interop_deadline "${KMOD_DEADLINE:-600}"
AIP=$INTEROP_SUBNET.51
BIP=$INTEROP_SUBNET.52
ROOT=/mnt/hostroot
GSOCK=/tmp/burstd.sock
NPASS=0 NFAIL=0 NSKIP=0
pass() { echo "PASS $1: ${*:2}"; NPASS=$((NPASS + 1)); }
fail() { echo "FAIL $1: ${*:2}"; NFAIL=$((NFAIL + 1)); }
skip() { echo "SKIP $1: ${*:2}"; NSKIP=$((NSKIP + 1)); }
# A's command line running CMD... in the host root with an empty environment.
in_root() { echo "chroot $ROOT /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp TMPDIR=/tmp $*"; }
ra() { guest_run -t "${T:-60}" vm1 "$@"; }

guest_start vm1 "$AIP" || iskip "guest A did not boot (logs above)"
guest_start vm2 "$BIP" || iskip "guest B did not boot (logs above)"
ra "mkdir -p $ROOT &&
  mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,ro hostroot $ROOT &&
  mount -t proc proc $ROOT/proc && mount -t sysfs sysfs $ROOT/sys &&
  mount -t bpf bpf $ROOT/sys/fs/bpf &&
  mount -t devtmpfs devtmpfs $ROOT/dev && mount -t tmpfs tmpfs $ROOT/dev/shm &&
  mount -t devpts devpts $ROOT/dev/pts && mount -t tmpfs tmpfs $ROOT/tmp &&
  mount -t tmpfs tmpfs $ROOT/run &&
  mkdir -p /run/drv && cp $ROOT/etc/libibverbs.d/*.driver /run/drv/ &&
  echo 'driver ${PROVIDER%-rdmav34.so}' >/run/drv/burst.driver &&
  mount --bind /run/drv $ROOT/etc/libibverbs.d" ||
  iskip "cannot prepare the host-root chroot in guest A"

# ---- insmod, registration, stock tools
if ra "rdma link delete rxe0 2>/dev/null; rmmod rdma_rxe 2>/dev/null
    modprobe ib_uverbs 2>/dev/null; [ -d /sys/module/ib_uverbs ] || { echo 'no ib_uverbs'; exit 1; }
    insmod $ROOT$KO && [ -c /dev/burst ] && cat /sys/module/burst/initstate"; then
  pass insmod "burst.ko loaded next to ib_core and ib_uverbs, /dev/burst present"
else
  fail insmod "insmod burst.ko in guest A"; guest_console vm1 | tail -20
  echo "kmod: $NPASS passed, $NFAIL failed, $NSKIP skipped"; exit 1
fi
ra "ping -c 1 -W 5 $BIP >/dev/null" || ifail "guest A cannot reach guest B"

burstd_start() {  # LOG: burstd on A's eth0, AF_XDP, kmod = on; waits for burst0
  ra "printf 'kmod = on\n' >$ROOT/tmp/kmod.conf" >/dev/null
  guest_spawn -t 600 vm1 "$(in_root "$BURSTD" --config /tmp/kmod.conf --backend xdp --netdev eth0 \
    --workers 1 --socket $GSOCK) >/tmp/$1 2>&1" >/dev/null
  T=90 ra "i=0; while [ \$i -lt 300 ]; do
      rdma link 2>/dev/null | grep -q '^link burst0/1' && exit 0
      i=\$((i + 1)); sleep 0.2; done; cat /tmp/$1; exit 1"
}
REG=0
if ((!HAVE_REG)); then
  skip register "burstd does not register with the module in this tree (i17-ibdev's kmod_device.cc)"
elif burstd_start burstd1.log >"$INTEROP_RUN/reg.log"; then
  REG=1
  pass register "burstd (AF_XDP on eth0, kmod = on): $(ra "grep -m1 'kmod:' /tmp/burstd1.log")"
else
  cat "$INTEROP_RUN/reg.log"; fail register "burstd did not register burst0"
fi

if ((REG)); then
  out=$(ra "$(in_root ibv_devices)" 2>&1)
  echo "$out"
  grep -qw burst0 <<<"$out" && pass ibv_devices "stock ibv_devices lists burst0, no environment" ||
    fail ibv_devices "burst0 not listed"
  out=$(ra "$(in_root ibv_devinfo -v -d burst0)" 2>&1)
  echo "$out" | grep -E "hca_id|transport|fw_ver|node_guid|max_qp:|state|active_mtu|link_layer|GID\[" | head -20
  if grep -q PORT_ACTIVE <<<"$out" && grep -q "RoCE v2" <<<"$out"; then
    pass ibv_devinfo "burst0 port active with RoCE v2 GIDs"
  else
    fail ibv_devinfo "no active port or no RoCE v2 GID"; echo "$out" | tail -20
  fi
  out=$(ra "$(in_root rdma link show)" 2>&1)
  echo "$out"
  grep -q "^link burst0/1 .*netdev eth0" <<<"$out" && pass rdma_link "burst0/1 on eth0" ||
    fail rdma_link "rdma link does not show burst0/1 on eth0"
else
  for s in ibv_devices ibv_devinfo rdma_link; do skip $s "no burst0 registered"; done
fi

# ---- traffic burst0 (A) <-> rxe0 (B), both directions
# pair NAME DIR SERVER_ARGS... -- CLIENT_ARGS...: DIR a2b = server on A, client on B (the client
# connects to the server's address), b2a the other way round. A's side runs in the chroot.
pair() {
  local name=$1 dir=$2; shift 2
  local common=() ; while [[ $1 != -- ]]; do common+=("$1"); shift; done; shift
  local extra=("$@") sv cl sip adev=burst0 bdev=rxe0 sid rc src
  if [[ $dir == a2b ]]; then sv=vm1 cl=vm2 sip=$AIP; else sv=vm2 cl=vm1 sip=$BIP; fi
  cmd() {  # GUEST [SERVERIP]
    local d=$bdev; [[ $1 == vm1 ]] && d=$adev
    local c="timeout 100 ${common[*]} -d $d ${extra[*]} ${2:-}"
    [[ $1 == vm1 ]] && c=$(in_root "$c")
    echo "$c"
  }
  sid=$(guest_spawn -t 110 $sv "$(cmd $sv)")
  guest_wait_listen $sv "${PORT:-18515}" 40 || true
  guest_run -t 110 $cl "$(cmd $cl "$sip")" >"$INTEROP_RUN/$name.client" 2>&1
  rc=$?
  guest_wait $sv "$sid" >"$INTEROP_RUN/$name.server" 2>&1
  src=$?
  if ((rc == 0 && src == 0)); then
    pass "$name" "client $cl, server $sv: $(grep -E "^ *[0-9]+ +[0-9]+ |bytes in" \
      "$INTEROP_RUN/$name.client" | tail -1 | tr -s ' ')"
  else
    fail "$name" "client $rc, server $src"
    tail -5 "$INTEROP_RUN/$name.client" "$INTEROP_RUN/$name.server"
  fi
}
if ((REG)); then
  for dir in a2b b2a; do
    pair "ib_write_bw.$dir" $dir ib_write_bw -x 1 -F -m 1024 -s 65536 -n 200 --report_gbits -- 
    pair "ib_read_bw.$dir" $dir ib_read_bw -x 1 -F -m 1024 -s 65536 -n 200 --report_gbits --
    # -e: completions through the kernel's completion channel (on burst0: raised by burstd through
    # the module on the CQ's shadow), as an event-driven application waits for them.
    pair "ibv_rc_pingpong.$dir" $dir ibv_rc_pingpong -g 1 -m 1024 -n 50 -c -e --
  done
else
  skip traffic "no burst0 registered: no ib_write_bw / ib_read_bw / ibv_rc_pingpong"
fi

# ---- an application's pins: zero-copy mode reported, released by kill -9
if ((!REG)); then
  skip zero_copy "no burst0 registered"; skip app_kill "no burst0 registered"
elif ((!HAVE_PIN)); then
  skip zero_copy "the provider does not pin MRs in this tree (i17-pin)"; skip app_kill "(i17-pin)"
elif [[ -z $STATS ]]; then
  skip zero_copy "tests/kmod/pin_test.c did not build (its --stats)"; skip app_kill "(pin_test)"
else
  # An ibv_rc_pingpong server has registered its (malloc'd) buffer and waits for a client that
  # never comes (perftest's servers register only after the client connected).
  guest_spawn -t 120 vm1 "$(in_root timeout 110 ibv_rc_pingpong -d burst0 -g 1 -p 18600)" >/dev/null
  T=60 ra "i=0; while [ \$i -lt 200 ]; do
      $ROOT$STATS --stats | grep -qv '^pins 0 ' && exit 0; i=\$((i + 1)); sleep 0.2; done; exit 1"
  st=$(ra "$ROOT$STATS --stats")
  mrs=$(ra "$(in_root "$BURSTCTL" --socket $GSOCK status)" | grep "^MRs")
  if grep -qE "kmod-pin [1-9]" <<<"$mrs"; then
    pass zero_copy "burstctl status: $mrs; module: $st"
  else
    fail zero_copy "burstctl status: '$mrs'; module: $st"
  fi
  T=60 ra "kill -9 \$(pidof ibv_rc_pingpong); i=0; while [ \$i -lt 200 ]; do
      $ROOT$STATS --stats | grep -q '^pins 0 pinned_pages 0 mappings 0' && exit 0
      i=\$((i + 1)); sleep 0.1; done; exit 1"
  st=$(ra "$ROOT$STATS --stats")
  grep -q '^pins 0 pinned_pages 0 mappings 0' <<<"$st" &&
    pass app_kill "after kill -9 of the application: $st" || fail app_kill "pins left: $st"
fi

# ---- rmmod while in use, kill -9 of burstd
if ((REG)); then
  out=$(ra "rmmod burst 2>&1; echo rc=\$?")
  grep -q "rc=0" <<<"$out" && fail rmmod_busy "rmmod succeeded while burstd holds burst0" ||
    pass rmmod_busy "refused while burstd runs: $(head -1 <<<"$out")"
  aw=
  if ((HAVE_NATIVE)); then
    aw=$(guest_spawn -t 90 vm1 "$(in_root timeout 80 ibv_asyncwatch -d burst0)")
    ra "i=0; while ! pidof ibv_asyncwatch >/dev/null && [ \$i -lt 100 ]; do i=\$((i + 1)); sleep 0.1; done
        sleep 3" >/dev/null
  fi
  ra "kill -9 \$(pidof burstd)" >/dev/null
  if [[ -n $aw ]]; then
    out=$(guest_wait vm1 "$aw"); awrc=$?
    # ibv_asyncwatch loops on ibv_get_async_event: after DEVICE_FATAL the kernel's async queue of the
    # disassociated context stays open and empty, so it waits there until its timeout (exit 124).
    if grep -q "IBV_EVENT_DEVICE_FATAL\|(8)" <<<"$out"; then
      pass fatal "ibv_asyncwatch (exit $awrc): $(grep -m1 "DEVICE_FATAL\|(8)" <<<"$out")"
    else
      fail fatal "ibv_asyncwatch (exit $awrc) did not get DEVICE_FATAL: $(tail -2 <<<"$out")"
    fi
  else
    skip fatal "applications get async events from the kernel only in native mode (i17-native)"
  fi
  out=$(ra "i=0; while rdma link 2>/dev/null | grep -q '^link burst0/' && [ \$i -lt 100 ]; do
      i=\$((i + 1)); sleep 0.1; done; rdma link; $(in_root ibv_devices)")
  if grep -qw burst0 <<<"$out"; then
    fail unregister "burst0 still there after kill -9 of burstd"; echo "$out"
  elif ra "rmmod burst && [ ! -e /dev/burst ]"; then
    pass unregister "burst0 gone with burstd; rmmod then works"
  else
    fail unregister "burst0 gone, but rmmod burst failed after burstd died"
  fi
else
  for s in rmmod_busy fatal unregister; do skip $s "no burst0 registered"; done
  ra "rmmod burst" >/dev/null 2>&1
fi

# ---- without the module: today's path (burstctl run), the guest's RDMA stack unloaded
if ra "[ ! -d /sys/module/burst ] || rmmod burst; echo '' >/proc/sys/kernel/modprobe
    for m in rdma_ucm ib_umad rdma_rxe rdma_cm iw_cm ib_cm ib_uverbs ib_core; do
      [ -d /sys/module/\$m ] && rmmod \$m; done; [ ! -d /sys/module/ib_core ]" >/dev/null; then
  guest_spawn -t 300 vm1 "$(in_root "$BURSTD" --backend xdp --netdev eth0 --workers 1 \
    --socket $GSOCK) >/tmp/burstd-old.log 2>&1" >/dev/null
  T=60 ra "i=0; while [ \$i -lt 200 ]; do
      $(in_root timeout 5 "$BURSTCTL" --socket $GSOCK status) >/dev/null 2>&1 && exit 0
      i=\$((i + 1)); sleep 0.2; done; cat /tmp/burstd-old.log; exit 1" >/dev/null ||
    fail old_path "burstd did not start without the module"
  sid=$(guest_spawn -t 110 vm2 "timeout 100 ibv_rc_pingpong -d rxe0 -g 1 -m 1024 -n 50 -c")
  guest_wait_listen vm2 18515 40 || true
  out=$(guest_run -t 110 vm1 "$(in_root timeout 100 "$BURSTCTL" run --netdev eth0 --socket $GSOCK -- \
    ibv_rc_pingpong -d burst0 -g 1 -m 1024 -n 50 -c $BIP)" 2>&1); rc=$?
  guest_wait vm2 "$sid" >/dev/null 2>&1; src=$?
  if ((rc == 0 && src == 0)); then
    pass old_path "no module: burstctl run ibv_rc_pingpong -c to rxe0: $(grep "bytes in" <<<"$out")"
  else
    fail old_path "burstctl run ibv_rc_pingpong: client $rc, server (rxe) $src"; tail -5 <<<"$out"
  fi
  ra "kill \$(pidof burstd)" >/dev/null 2>&1
else
  fail old_path "cannot unload the guest's RDMA stack"
fi

echo "kmod: $NPASS passed, $NFAIL failed, $NSKIP skipped"
((NFAIL == 0)) || exit 1
echo "PASS"
