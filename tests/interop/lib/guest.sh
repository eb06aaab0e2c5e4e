# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Guest harness of the rxe interoperability tests (sourced, not run).
#
# A "guest" is a QEMU VM booted from Debian's stock 6.1 kernel (which has rdma_rxe) with a small
# busybox initramfs holding rdma-core, ibverbs-utils, perftest and rdmacm-utils. Guests live in a
# private network namespace on a bridge; a veth pair joins that bridge to an interface for burst.
# Commands reach a guest through a virtio-9p share, never through the test network.
#
#   interop_require            skip (exit 77) unless root, qemu, busybox-static, kmod, cpio, apt-get
#   interop_prepare            fetch + extract the kernel package, build the initramfs (cached)
#   interop_netns_up           namespace $INTEROP_NS, bridge, veth ($INTEROP_BURST_IF = $INTEROP_HOST_IP),
#                              and an EXIT trap that removes everything (interop_cleanup)
#   interop_netns_down         stop every guest, delete the namespace (taps, bridge, veth go with it)
#   interop_deadline SECS      fail the whole run (exit 1, with cleanup) after SECS seconds
#   guest_wait_listen NAME PORT [SECS]  wait until a TCP port listens in the guest (no probe connection)
#   innet CMD...               run CMD inside the namespace (nsenter: keeps /sys/fs/bpf visible)
#   guest_start NAME IP [MTU]  boot a guest (tap itap-NAME on the bridge), wait until it reports ready
#   guest_run [-t SECS] NAME CMD...    run CMD (a shell command line) in the guest; prints its
#                              output, returns its exit status (143 when the guest-side timeout hit)
#   guest_spawn [-t SECS] NAME CMD...  same, in the background; prints an id for guest_wait
#   guest_wait NAME ID         wait for a spawned command; prints output, returns its status
#   guest_stop NAME            power the guest off (killed if it does not stop within 10 s)
#   guest_console NAME         print the guest's console log
#
# Settings (environment): INTEROP_CACHE (default /var/cache/burst-interop), INTEROP_ACCEL (kvm|tcg,
# default kvm only when the CPU has vmx/svm and /dev/kvm opens), INTEROP_BOOT_TIMEOUT (s, default 120),
# INTEROP_MEM (MiB, 512), INTEROP_SMP (1), INTEROP_KERNEL_PKG (default: what linux-image-amd64 depends on).
# INTEROP_HOST_ROOT=1: guest_start also shares the host's / read-only (9p tag "hostroot"), so that
# a guest can run the host's own binaries in a chroot (tests/interop/dmabuf.sh).

INTEROP_CACHE=${INTEROP_CACHE:-/var/cache/burst-interop}
INTEROP_BOOT_TIMEOUT=${INTEROP_BOOT_TIMEOUT:-120}
INTEROP_MEM=${INTEROP_MEM:-512}
INTEROP_SMP=${INTEROP_SMP:-1}
INTEROP_SUBNET=${INTEROP_SUBNET:-10.99.0}
INTEROP_HOST_IP=${INTEROP_HOST_IP:-$INTEROP_SUBNET.1}
INTEROP_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Modules whose closure goes into the initramfs. rxe computes the ICRC with the crypto API's
# "crc32" (a module here: without it `rdma link add` fails); sch_netem: loss injection for the matrix.
INTEROP_MODULES=(virtio_pci virtio_net 9p 9pnet_virtio crc32_generic crc32-pclmul rdma_rxe ib_uverbs rdma_ucm
  ib_umad sch_netem)
# Host binaries copied into the guest with their libraries.
INTEROP_BINARIES=(dash ip rdma tc
  ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong
  ibv_xsrq_pingpong ibv_asyncwatch
  rping udaddy ucmatose rdma_client rdma_server rdma_xclient rdma_xserver mckey cmtime riostream rstream)

ilog() { echo "--- $*" >&2; }
iskip() { echo "SKIP: $*"; exit 77; }
ifail() { echo "FAIL: $*"; exit 1; }

interop_require() {
  [[ $(id -u) -eq 0 ]] || iskip "needs root (network namespace, taps, qemu)"
  local c
  for c in qemu-system-x86_64:qemu-system-x86 busybox:busybox-static cpio:cpio depmod:kmod \
           modprobe:kmod dpkg-deb:dpkg apt-get:apt nsenter:util-linux ip:iproute2 rdma:iproute2 \
           ib_write_bw:perftest ibv_rc_pingpong:ibverbs-utils rping:rdmacm-utils; do
    command -v "${c%%:*}" >/dev/null || iskip "missing '${c%%:*}' (apt-get install ${c#*:})"
  done
  [[ -e /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so ]] ||
    iskip "missing the rxe verbs provider (apt-get install ibverbs-providers)"
  [[ -f /bin/busybox ]] && file_is_static /bin/busybox ||
    iskip "busybox is not statically linked (apt-get install busybox-static)"
}

file_is_static() { ! ldd "$1" >/dev/null 2>&1; }

interop_accel() {
  if [[ -n ${INTEROP_ACCEL:-} ]]; then echo "$INTEROP_ACCEL"; return; fi
  if grep -qwE 'vmx|svm' /proc/cpuinfo && [[ -r /dev/kvm && -w /dev/kvm ]] &&
     exec 9<>/dev/kvm 2>/dev/null; then
    exec 9>&-
    echo kvm
  else
    echo tcg
  fi
}

# ---------------------------------------------------------------------------------------------
# Kernel package and initramfs.

interop_prepare() {
  local pkg=${INTEROP_KERNEL_PKG:-}
  mkdir -p "$INTEROP_CACHE/deb" || iskip "cannot create cache $INTEROP_CACHE"
  if [[ -z $pkg ]]; then
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
          sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -1)
    [[ -n $pkg ]] || iskip "apt-cache cannot resolve linux-image-amd64 (run apt-get update)"
  fi
  local deb
  deb=$(ls "$INTEROP_CACHE"/deb/"${pkg}"_*.deb 2>/dev/null | head -1)
  if [[ -z $deb ]]; then
    ilog "downloading $pkg"
    (cd "$INTEROP_CACHE/deb" && timeout 300 apt-get download "$pkg" >/dev/null 2>&1) ||
      iskip "cannot download the kernel package $pkg (apt-get download)"
    deb=$(ls "$INTEROP_CACHE"/deb/"${pkg}"_*.deb 2>/dev/null | head -1)
    [[ -n $deb ]] || iskip "kernel package $pkg not found after download"
  fi
  local root=$INTEROP_CACHE/$pkg
  if [[ ! -f $root/.extracted ]]; then
    ilog "extracting $(basename "$deb")"
    rm -rf "$root"
    dpkg-deb -x "$deb" "$root" || ifail "dpkg-deb -x $deb"
    touch "$root/.extracted"
  fi
  INTEROP_KVER=$(ls "$root/lib/modules" | head -1)
  INTEROP_KERNEL=$root/boot/vmlinuz-$INTEROP_KVER
  [[ -f $INTEROP_KERNEL ]] || ifail "no kernel image in $root/boot"
  [[ -f $root/lib/modules/$INTEROP_KVER/modules.dep ]] || depmod -b "$root" "$INTEROP_KVER"

  # The initramfs is rebuilt when this file or a host binary changes.
  local stamp
  stamp=$( { cat "${BASH_SOURCE[0]}" "$INTEROP_LIB_DIR/guest-init.sh"; echo "$pkg"; ls -lL --time-style=+%s $(command -v "${INTEROP_BINARIES[@]}") \
             /usr/bin/ib_*_bw /usr/bin/ib_*_lat 2>/dev/null; } | sha256sum | cut -c1-16)
  INTEROP_INITRD=$INTEROP_CACHE/initramfs-$INTEROP_KVER-$stamp.cpio.gz
  if [[ ! -f $INTEROP_INITRD ]]; then
    local t0=$SECONDS
    interop_build_initramfs "$root" "$INTEROP_INITRD.tmp" || ifail "initramfs build failed"
    mv "$INTEROP_INITRD.tmp" "$INTEROP_INITRD"
    ilog "built $(basename "$INTEROP_INITRD") ($(du -h "$INTEROP_INITRD" | cut -f1), $((SECONDS - t0)) s)"
    find "$INTEROP_CACHE" -maxdepth 1 -name "initramfs-*.cpio.gz" ! -path "$INTEROP_INITRD" -delete
  fi
  export INTEROP_KVER INTEROP_KERNEL INTEROP_INITRD
}

# Copy a file to the same path under $1, following symlinks but keeping the link name.
_copy_into() {
  local dst=$1 f=$2
  [[ -e $dst$f ]] && return 0
  mkdir -p "$dst$(dirname "$f")"
  cp -L "$f" "$dst$f"
}

_copy_with_libs() {
  local dst=$1 f=$2 lib
  _copy_into "$dst" "$f" || return 1
  for lib in $(ldd "$f" 2>/dev/null | grep -oE '/[^ ]+\.so[^ ]*'); do
    _copy_into "$dst" "$lib"
  done
}

interop_build_initramfs() {
  local kroot=$1 out=$2 dst f m
  dst=$(mktemp -d /tmp/burst-interop-initrd.XXXXXX)
  ilog "building initramfs in $dst"
  mkdir -p "$dst"/{bin,sbin,etc,proc,sys,dev,tmp,run,host,root,usr/bin,usr/sbin,lib,lib64}
  cp /bin/busybox "$dst/bin/busybox"
  for f in $(/bin/busybox --list); do
    case $f in sh|ip|tc|busybox) continue ;; esac
    [[ -e $dst/bin/$f ]] || ln -s busybox "$dst/bin/$f"
  done
  # Binaries and their libraries (perftest: every ib_*_bw / ib_*_lat).
  for f in "${INTEROP_BINARIES[@]}" /usr/bin/ib_*_bw /usr/bin/ib_*_lat; do
    f=$(command -v "$f") || { ilog "note: $f missing on the host, not in the guest"; continue; }
    _copy_with_libs "$dst" "$f" || return 1
  done
  ln -sf /usr/bin/dash "$dst/bin/sh"
  ln -sf /bin/busybox "$dst/sbin/modprobe"   # the kernel's request_module helper
  # The rxe verbs provider, its .driver file, and libgcc_s (rping's pthread_exit needs it).
  _copy_with_libs "$dst" /usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so
  _copy_into "$dst" /etc/libibverbs.d/rxe.driver
  for f in /lib/x86_64-linux-gnu/libgcc_s.so.1 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1; do
    [[ -e $f ]] && { _copy_into "$dst" "$f"; break; }
  done
  # Module closure, in load order.
  : >"$dst/etc/modules.order"
  for m in "${INTEROP_MODULES[@]}"; do
    modprobe -d "$kroot" -S "$INTEROP_KVER" --show-depends "$m" | awk '$1 == "insmod" {print $2}'
  done | awk '!seen[$0]++' | while read -r f; do
    local rel=${f#"$kroot"}
    mkdir -p "$dst$(dirname "$rel")"
    cp "$f" "$dst$rel"
    echo "$rel" >>"$dst/etc/modules.order"
  done
  [[ -s $dst/etc/modules.order ]] || { ilog "empty module closure"; return 1; }
  for f in modules.builtin modules.builtin.modinfo modules.order; do
    cp "$kroot/lib/modules/$INTEROP_KVER/$f" "$dst/lib/modules/$INTEROP_KVER/" 2>/dev/null
  done
  depmod -b "$dst" "$INTEROP_KVER" || return 1
  echo 'root:x:0:0:root:/root:/bin/sh' >"$dst/etc/passwd"
  echo 'root:x:0:' >"$dst/etc/group"
  printf '127.0.0.1 localhost\n' >"$dst/etc/hosts"
  cp "$INTEROP_LIB_DIR/guest-init.sh" "$dst/init"
  chmod 755 "$dst/init"
  (cd "$dst" && find . | cpio -o -H newc --quiet | gzip -1) >"$out" || return 1
  rm -rf "$dst"
}

# ---------------------------------------------------------------------------------------------
# Network namespace: bridge ibr0, guests' taps itap-NAME, veth iveth-br <-> $INTEROP_BURST_IF.

innet() { nsenter --net="/run/netns/$INTEROP_NS" "$@"; }

interop_netns_up() {
  INTEROP_NS=${INTEROP_NS:-burst-interop-$$}
  INTEROP_BURST_IF=${INTEROP_BURST_IF:-burst0}
  INTEROP_RUN=$(mktemp -d /tmp/burst-interop.XXXXXX)
  INTEROP_GUESTS=()
  trap interop_cleanup EXIT
  trap 'echo "interrupted" >&2; exit 1' INT TERM
  qemu-system-x86_64 -accel help 2>/dev/null | grep -qx "$(interop_accel)" ||
    iskip "qemu-system-x86_64 has no $(interop_accel) accelerator"
  ip netns add "$INTEROP_NS" || ifail "cannot create network namespace $INTEROP_NS"
  innet ip link set lo up
  # ARP flux: the bridge ibr0 is up in the namespace that holds the host address
  # (on burst0); with arp_ignore=0 it would answer the guests' ARP with its own
  # MAC, and their RoCE frames would go to the kernel instead of burst's XDP
  # program on burst0. Answer ARP only on the interface that holds the address.
  innet sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.default.arp_ignore=1 ||
    ifail "cannot set arp_ignore in $INTEROP_NS"
  innet ip link add ibr0 type bridge || ifail "cannot create bridge"
  innet ip link set ibr0 up
  innet ip link add iveth-br type veth peer name "$INTEROP_BURST_IF" || ifail "cannot create veth"
  innet ip link set iveth-br master ibr0
  innet ip link set iveth-br up
  innet ip addr add "$INTEROP_HOST_IP/24" dev "$INTEROP_BURST_IF"
  innet ip link set "$INTEROP_BURST_IF" up
  export INTEROP_NS INTEROP_BURST_IF INTEROP_RUN
}

interop_netns_down() {
  local g
  for g in "${INTEROP_GUESTS[@]}"; do guest_stop "$g"; done
  INTEROP_GUESTS=()
  [[ -n ${INTEROP_NS:-} ]] && ip netns del "$INTEROP_NS" 2>/dev/null
}

interop_deadline() {
  local main=$$ secs=$1
  # The sleep is killed at cleanup; `&&` then keeps the watchdog from firing.
  ( sleep "$secs" && { echo "TIMEOUT: run exceeded $secs s" >&3; kill -TERM "$main"; } ) 3>&2 2>/dev/null &
  INTEROP_WATCHDOG=$!
}

interop_cleanup() {
  local rc=$?
  trap '' INT TERM
  [[ -n ${INTEROP_WATCHDOG:-} ]] && { pkill -P "$INTEROP_WATCHDOG" sleep 2>/dev/null; wait "$INTEROP_WATCHDOG" 2>/dev/null; }
  interop_netns_down
  [[ -n ${INTEROP_RUN:-} && -z ${INTEROP_KEEP:-} ]] && rm -rf "$INTEROP_RUN"
  return $rc
}

# ---------------------------------------------------------------------------------------------
# Guests.

_gdir() { echo "$INTEROP_RUN/guest-$1"; }

guest_console() { local d; d=$(_gdir "$1"); [[ -f $d/console.log ]] && cat "$d/console.log"; }

guest_start() {
  local name=$1 ip=$2 mtu=${3:-1500} d n accel t0 tap mac
  d=$(_gdir "$name")
  n=$(( ${#INTEROP_GUESTS[@]} + 1 ))
  tap=itap-$name
  mac=$(printf '52:54:00:99:00:%02x' "${ip##*.}")
  mkdir -p "$d/share"/{q,out}
  innet ip tuntap add "$tap" mode tap || { ilog "cannot create tap $tap"; return 1; }
  innet ip link set "$tap" mtu "$mtu" master ibr0 up
  accel=$(interop_accel)
  local accel_args=(-accel tcg,thread=multi -cpu max)
  [[ $accel == kvm ]] && accel_args=(-accel kvm -cpu host)
  local host_root_args=()
  [[ -n ${INTEROP_HOST_ROOT:-} ]] && host_root_args=(
    -fsdev "local,id=fs1,path=/,security_model=none,readonly=on,multidevs=remap"
    -device "virtio-9p-pci,fsdev=fs1,mount_tag=hostroot")
  t0=$(date +%s%N)
  nsenter --net="/run/netns/$INTEROP_NS" qemu-system-x86_64 "${accel_args[@]}" \
    -m "$INTEROP_MEM" -smp "$INTEROP_SMP" -nodefaults -no-user-config -display none \
    -serial "file:$d/console.log" -monitor none -no-reboot \
    -kernel "$INTEROP_KERNEL" -initrd "$INTEROP_INITRD" \
    -append "console=ttyS0 panic=-1 quiet loglevel=4 burst.name=$name burst.ip=$ip/24 burst.mtu=$mtu" \
    -netdev "tap,id=n0,ifname=$tap,script=no,downscript=no" \
    -device "virtio-net-pci,netdev=n0,mac=$mac" \
    -fsdev "local,id=fs0,path=$d/share,security_model=none" \
    -device "virtio-9p-pci,fsdev=fs0,mount_tag=host" \
    "${host_root_args[@]}" \
    </dev/null >"$d/qemu.log" 2>&1 &
  echo $! >"$d/pid"
  INTEROP_GUESTS+=("$name")
  local i
  for ((i = 0; i < INTEROP_BOOT_TIMEOUT * 5; i++)); do
    [[ -f $d/share/ready ]] && break
    if ! kill -0 "$(cat "$d/pid")" 2>/dev/null; then
      ilog "guest $name: qemu exited"; cat "$d/qemu.log" >&2; guest_console "$name" >&2
      return 1
    fi
    sleep 0.2
  done
  if [[ ! -f $d/share/ready ]]; then
    ilog "guest $name did not boot within $INTEROP_BOOT_TIMEOUT s ($accel); qemu and console logs:"
    cat "$d/qemu.log" >&2
    guest_console "$name" >&2
    guest_stop "$name"
    return 1
  fi
  GUEST_BOOT_SECONDS=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
  ilog "guest $name up ($accel, $GUEST_BOOT_SECONDS s): $(head -1 "$d/share/ready")"
  if grep -q '^rxe-error' "$d/share/ready"; then
    ilog "guest $name: rxe0 not active"; cat "$d/share/ready" >&2; return 1
  fi
  return 0
}

guest_stop() {
  local name=$1 d pid i
  d=$(_gdir "$name")
  [[ -f $d/pid ]] || return 0
  pid=$(cat "$d/pid")
  if kill -0 "$pid" 2>/dev/null; then
    touch "$d/share/poweroff"
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  fi
  rm -f "$d/pid"
  [[ -n ${INTEROP_NS:-} ]] && innet ip link del "itap-$name" 2>/dev/null
  return 0
}

# guest_spawn [-t SECS] NAME CMD... : queue CMD in the guest, print the command id.
guest_spawn() {
  local tmo=120
  [[ $1 == -t ]] && { tmo=$2; shift 2; }
  local name=$1 d id
  shift
  d=$(_gdir "$name")
  [[ -f $d/pid ]] || { ilog "guest $name is not running"; return 1; }
  id=$(date +%s%N)-$BASHPID   # unique without a counter (guest_spawn runs in $(...) subshells)
  printf '%s\n' "$tmo" >"$d/share/q/.$id.tmo"
  printf '%s\n' "$*" >"$d/share/q/.$id.tmp"
  mv "$d/share/q/.$id.tmo" "$d/share/q/$id.tmo"
  mv "$d/share/q/.$id.tmp" "$d/share/q/$id.cmd"
  echo "$tmo" >"$d/.host-$id.tmo"
  echo "$id"
}

# guest_wait NAME ID : wait (guest timeout + 30 s) for the command, print its output, return status.
guest_wait() {
  local name=$1 id=$2 d tmo i
  d=$(_gdir "$name")
  tmo=$(cat "$d/.host-$id.tmo" 2>/dev/null || echo 120)
  for ((i = 0; i < (tmo + 30) * 5; i++)); do
    [[ -f $d/share/out/$id.rc ]] && break
    kill -0 "$(cat "$d/pid" 2>/dev/null)" 2>/dev/null || break
    sleep 0.2
  done
  cat "$d/share/out/$id.out" 2>/dev/null
  if [[ ! -f $d/share/out/$id.rc ]]; then
    ilog "guest $name: command $id did not finish (guest dead or hung)"
    return 125
  fi
  return "$(cat "$d/share/out/$id.rc")"
}

guest_run() {
  local args=() id
  [[ $1 == -t ]] && { args=(-t "$2"); shift 2; }
  local name=$1
  shift
  id=$(guest_spawn "${args[@]}" "$name" "$@") || return 1
  guest_wait "$name" "$id"
}

guest_wait_listen() {
  local name=$1 port=$2 secs=${3:-30}
  guest_run -t "$((secs + 5))" "$name" "i=0; while [ \$i -lt $((secs * 5)) ]; do
    netstat -ltn | grep -q ':$port ' && exit 0; i=\$((i + 1)); sleep 0.2; done; exit 1" >/dev/null
}
