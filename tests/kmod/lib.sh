# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# What the module's tests share (sourced): which kernel headers, the module build, checkpatch.pl.
#
#   kmod_guest_kver          the kernel version the interop guests boot (as tests/interop/lib/guest.sh
#                            picks their kernel: what linux-image-amd64 depends on), e.g. 6.1.0-57-amd64
#   kmod_kdir                KMOD_KDIR, else /usr/src/linux-headers-<guest's version>, else the newest
#                            /usr/src/linux-headers-*-amd64; empty (and a reason on stderr) if none
#   kmod_build SRC OUT KDIR [MAKEARGS...]   copy SRC's kmod/ and abi/burst_kmod.h to OUT (the tree's
#                            layout: OUT/kmod, OUT/abi) and build there (the tree itself stays clean)
#   kmod_checkpatch          path of checkpatch.pl: KMOD_CHECKPATCH, else scripts/checkpatch.pl with
#                            spelling.txt and const_structs.checkpatch extracted once from
#                            /usr/src/linux-source-6.1.tar.xz into KMOD_CACHE (never into the tree)
if [[ -z ${KMOD_CACHE:-} ]]; then
  KMOD_CACHE=/var/cache/burst-kmod
  mkdir -p "$KMOD_CACHE" 2>/dev/null && [[ -w $KMOD_CACHE ]] || KMOD_CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/burst-kmod
fi

kmod_guest_kver() {
  local pkg
  pkg=${INTEROP_KERNEL_PKG:-$(apt-cache depends linux-image-amd64 2>/dev/null |
        sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -1)}
  [[ -n $pkg ]] && echo "${pkg#linux-image-}"
}

kmod_kdir() {
  local v d
  if [[ -n ${KMOD_KDIR:-} ]]; then echo "$KMOD_KDIR"; return; fi
  v=$(kmod_guest_kver)
  if [[ -n $v && -f /usr/src/linux-headers-$v/Makefile ]]; then echo "/usr/src/linux-headers-$v"; return; fi
  d=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1)
  if [[ -n $d ]]; then
    echo "note: headers of the guest's kernel ${v:-(unknown)} absent, using $d" >&2
    echo "$d"
    return
  fi
  echo "no kernel headers: apt-get install linux-headers-${v:-6.1.0-N-amd64} (scripts/install-deps.sh)" >&2
}

kmod_build() {
  local src=$1 out=$2 kdir=$3
  shift 3
  rm -rf "$out"
  mkdir -p "$out/kmod" "$out/abi"
  cp "$src"/kmod/* "$out/kmod/" && cp "$src/abi/burst_kmod.h" "$out/abi/" || return 1
  make -C "$kdir" M="$out/kmod" "$@" modules
}

kmod_checkpatch() {
  local tar=/usr/src/linux-source-6.1.tar.xz dir ver
  if [[ -n ${KMOD_CHECKPATCH:-} ]]; then echo "$KMOD_CHECKPATCH"; return; fi
  [[ -f $tar ]] || { echo "no $tar (apt-get install linux-source-6.1)" >&2; return 1; }
  ver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null)
  dir=$KMOD_CACHE/checkpatch-${ver:-unknown}
  if [[ ! -f $dir/checkpatch.pl || ! -f $dir/spelling.txt ]]; then
    mkdir -p "$dir" || return 1
    (
      flock 8
      [[ -f $dir/checkpatch.pl && -f $dir/spelling.txt ]] && exit 0
      tmp=$(mktemp -d "$dir/.x.XXXXXX") || exit 1
      tar -xJf "$tar" -C "$tmp" --wildcards --strip-components=2 '*/scripts/checkpatch.pl' \
        '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch' &&
        mv "$tmp"/* "$dir/"
      rc=$?
      rm -rf "$tmp"
      exit $rc
    ) 8>"$dir/.lock" || { echo "cannot extract checkpatch.pl from $tar" >&2; return 1; }
  fi
  echo "$dir/checkpatch.pl"
}
