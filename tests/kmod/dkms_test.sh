#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# kmod.dkms: `dkms build` of the module's DKMS source tree (what burst-dkms installs as
# /usr/src/burst-VERSION: Kbuild, Makefile, dkms.conf, the sources and abi/burst_kmod.h) against the
# interop guests' kernel headers, with dkms' source and build trees in a temporary directory
# (--sourcetree, --dkmstree): nothing is added to the host's /var/lib/dkms or /lib/modules.
# Usage: dkms_test.sh SOURCE_DIR [DKMS_SOURCE_ROOT]
#   DKMS_SOURCE_ROOT: a directory holding burst-VERSION/ (e.g. usr/src of the unpacked burst-dkms);
#   default: made from the tree with `make -C kmod dkms-tree`.
# Exit: 0 pass, 1 fail, 77 skipped (no dkms or headers: scripts/install-deps.sh; a part missing).
set -uo pipefail
SRC=$(cd "${1:?usage: dkms_test.sh SOURCE_DIR [DKMS_SOURCE_ROOT]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
command -v dkms >/dev/null || { echo "kmod.dkms: skipped: dkms missing (apt-get install dkms)"; exit 77; }
KDIR=$(kmod_kdir) && [[ -n $KDIR ]] || { echo "kmod.dkms: skipped: no kernel headers"; exit 77; }
KVER=${KDIR##*/linux-headers-}
TMP=$(mktemp -d /tmp/burst-kmod-dkms.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
VERSION=$(sed -n 's/^project(burst VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
if [[ -n ${2:-} ]]; then
  ROOT=$2
else
  ROOT=$TMP/src
  make -s -C "$SRC/kmod" dkms-tree DEST="$ROOT" VERSION="$VERSION" || { echo "FAIL: make dkms-tree"; exit 1; }
fi
tree=$(ls -d "$ROOT"/burst-* 2>/dev/null | head -1)
[[ -n $tree && -f $tree/dkms.conf ]] || { echo "FAIL: no burst-VERSION/dkms.conf in $ROOT"; exit 1; }
V=${tree##*/burst-}
echo "kmod.dkms: $tree against $KDIR"
(cd "$tree" && find . -type f | sort)
for f in dkms.conf Kbuild Makefile abi/burst_kmod.h; do
  [[ -f $tree/$f ]] || { echo "FAIL: $f missing from the DKMS source tree"; exit 1; }
done
grep -q "^PACKAGE_VERSION=\"$V\"" "$tree/dkms.conf" || { echo "FAIL: dkms.conf's PACKAGE_VERSION is not $V"; exit 1; }
for o in $(sed -n 's/^burst-y *:= *//p' "$tree/Kbuild"); do
  [[ -f $tree/${o%.o}.c ]] || {
    echo "kmod.dkms: skipped: ${o%.o}.c not in the tree yet (branches i17-ibdev, i17-pin)"; exit 77; }
done
# dkms signs what it builds with a key it creates in /var/lib/dkms when missing (framework.conf can
# move it, but only /etc/dkms is read): a private mount namespace puts a scratch directory there.
mkdir -p "$TMP/dkms" "$TMP/varlib"
export ROOT TMP V KVER KDIR
unshare -m bash -c '
  mount --make-rprivate / && mount --bind "$TMP/varlib" /var/lib/dkms || exit 2
  d=(--sourcetree "$ROOT" --dkmstree "$TMP/dkms" -m burst -v "$V" -k "$KVER" --kernelsourcedir "$KDIR")
  dkms add "${d[@]}" || exit 3
  dkms build "${d[@]}" || { tail -30 "$TMP/dkms/burst/$V/build/make.log"; exit 4; }
  dkms status "${d[@]}"'
case $? in
  0) ;;
  2) echo "kmod.dkms: skipped: cannot make a private mount namespace (needs root)"; exit 77 ;;
  3) echo "FAIL: dkms add"; exit 1 ;;
  *) echo "FAIL: dkms build"; exit 1 ;;
esac
ko=$(find "$TMP/dkms/burst/$V/$KVER" -name 'burst.ko*' | head -1)
[[ -n $ko ]] || { echo "FAIL: dkms build left no burst.ko"; exit 1; }
modinfo -F vermagic "$ko" | grep -q "^$KVER " || { echo "FAIL: $ko is not built for $KVER"; exit 1; }
echo "ok: dkms build: $ko"
echo "kmod.dkms: passed"
