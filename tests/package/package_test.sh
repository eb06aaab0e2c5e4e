#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# package.deb: builds the Debian package from a clean copy of the tree
# (scripts/build-deb.sh: a full release build with Debian's flags), then
#   1. the file list (dpkg -c) is exactly tests/package/expected_files.txt,
#   2. Depends names the one libibverbs1 release the provider is built for,
#   3. lintian reports no error, and every warning it reports is explained in
#      docs/packaging.md (its tag appears there),
#   4. unpacked into a scratch root with dpkg -x (nothing is installed on the
#      host), burstd --version/--help and burstctl --help run from there, and
#      the provider loads into libibverbs without a message;
#   5. burst-dkms (Architecture all): its files are the module's DKMS source
#      tree /usr/src/burst-VERSION (kmod/'s Kbuild, Makefile, .c and .h, the
#      versioned dkms.conf, abi/burst_kmod.h), it depends on dkms, burst
#      recommends it, and `dkms build` of the unpacked tree works in a scratch
#      dkms tree (tests/kmod/dkms_test.sh; skipped there without dkms/headers).
# The build runs in one fixed directory (default /tmp/burst-package, under a
# lock), so that ccache finds the objects of the previous run: the first build
# takes minutes, a rebuild of an unchanged tree far less.
# The .deb is kept in WORK_DIR/deb/ (ctest fixture deb_package: service.deb installs it).
# Usage: package_test.sh SOURCE_DIR [WORK_DIR]
# Exit: 0 pass, 1 fail, 77 skipped (dpkg-buildpackage, debhelper or lintian
# missing, or the Build-Depends not installed: scripts/install-deps.sh).
set -uo pipefail
SRC=${1:?usage: package_test.sh SOURCE_DIR [WORK_DIR]}
WORK=${2:-${BURST_PACKAGE_DIR:-/tmp/burst-package}}

rm -rf "$WORK/deb"  # only this run's package is handed on (service.deb skips without one)
for tool in dpkg-buildpackage dh lintian dpkg-deb; do
  command -v "$tool" >/dev/null ||
    { echo "package.deb: skipped: $tool missing (scripts/install-deps.sh installs debhelper, lintian)"; exit 77; }
done
if ! unmet=$(cd "$SRC/packaging" && dpkg-checkbuilddeps 2>&1); then
  echo "package.deb: skipped: Build-Depends not installed (scripts/install-deps.sh): $unmet"
  exit 77
fi

mkdir -p "$WORK"
exec 9>"$WORK/.lock"
flock 9  # one build at a time in WORK (parallel runs of the test wait)

fail=0
check() {  # check DESCRIPTION COMMAND...: runs COMMAND, reports ok/FAIL
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

start=$(date +%s)
if ! "$SRC/scripts/build-deb.sh" "$WORK" >"$WORK/build.log" 2>&1; then
  echo "FAIL: dpkg-buildpackage (last lines of $WORK/build.log):"
  tail -40 "$WORK/build.log"
  exit 1
fi
echo "ok: package built in $(($(date +%s) - start)) s ($WORK/build.log)"
deb=$(ls "$WORK"/src/burst_*.deb | head -1)
[[ -f $deb ]] || { echo "FAIL: no burst_*.deb in $WORK/src"; exit 1; }
# The package stays in WORK/deb for service.deb (the ctest fixture deb_package), which
# installs it in a Debian 12 root instead of building it a second time.
rm -rf "$WORK/deb" && mkdir -p "$WORK/deb" && cp "$deb" "$WORK/deb/" ||
  { echo "FAIL: cannot keep $deb in $WORK/deb"; exit 1; }

# 1. The file list.
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
{
  sed -e '/^#/d' -e '/^$/d' -e "s/MULTIARCH/$multiarch/" "$SRC/tests/package/expected_files.txt"
  for f in "$SRC"/packaging/systemd/*.service; do [[ -e $f ]] && echo "/lib/systemd/system/${f##*/}"; done
  for f in "$SRC"/packaging/etc/burst/*.conf; do [[ -e $f ]] && echo "/etc/burst/${f##*/}"; done
  for f in "$SRC"/packaging/etc/burst/*.example; do
    [[ -e $f ]] && echo "/usr/share/doc/burst/examples/${f##*/}"
  done
  [[ -e $SRC/docs/service.md ]] && echo /usr/share/doc/burst/service.md.gz
} | sort >"$WORK/expected.txt"
dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort >"$WORK/files.txt"
echo "== dpkg -c $(basename "$deb")"
dpkg-deb -c "$deb"
check "file list is tests/package/expected_files.txt" diff -u "$WORK/expected.txt" "$WORK/files.txt"

# 2. The libibverbs dependency: exactly rdma-core 44's libibverbs1.
depends=$(dpkg-deb -f "$deb" Depends)
echo "== Depends: $depends"
check "Depends: libibverbs1 (>= 44)" grep -qF 'libibverbs1 (>= 44)' <<<"$depends"
check "Depends: libibverbs1 (<< 45~)" grep -qF 'libibverbs1 (<< 45~)' <<<"$depends"

# 3. lintian: no error; each warning explained in docs/packaging.md.
echo "== lintian"
changes=$(ls "$WORK"/src/burst_*.changes | head -1)
lintian --info --display-info "$changes" >"$WORK/lintian.txt" 2>&1
cat "$WORK/lintian.txt"
check "lintian: no error" bash -c "! grep -q '^E: ' '$WORK/lintian.txt'"
for tag in $(sed -n 's/^W: [^ ]* [a-z]*: \([a-z0-9-]*\).*/\1/p; s/^W: [^ ]*: \([a-z0-9-]*\).*/\1/p' \
               "$WORK/lintian.txt" | sort -u); do
  check "lintian warning $tag is explained in docs/packaging.md" grep -q -- "$tag" "$SRC/docs/packaging.md"
done

# 4. Unpacked into a scratch root: the programs run, the provider loads.
root="$WORK/root"
rm -rf "$root"
dpkg-deb -x "$deb" "$root"
check "burstd --version" bash -c "'$root/usr/sbin/burstd' --version | grep -q '^burstd '"
check "burstd --help" bash -c "'$root/usr/sbin/burstd' --help | grep -q -- '--netdev'"
check "burstctl --help" bash -c "'$root/usr/bin/burstctl' --help | grep -q 'run'"
check "burst-xfer --help" bash -c "'$root/usr/bin/burst-xfer' --help >/dev/null"
check "burstctl's default provider is the installed one" \
  grep -q "/usr/lib/$multiarch/libibverbs/libburst" "$root/usr/bin/burstctl"
provider="$root/usr/lib/$multiarch/libibverbs/libburst-rdmav34.so"
if command -v python3 >/dev/null; then
  check "the packaged provider loads into libibverbs, silently" bash -c "
    out=\$(python3 -c 'import ctypes, sys
ctypes.CDLL(\"libibverbs.so.1\", mode=ctypes.RTLD_GLOBAL); ctypes.CDLL(sys.argv[1])' '$provider' 2>&1) &&
    [[ -z \$out ]] || { echo \"\$out\"; false; }"
fi
check "the provider binds IBVERBS_PRIVATE_34 only" bash -c \
  "[[ \$(objdump -T '$provider' | grep -o 'IBVERBS_PRIVATE_[0-9]*' | sort -u) == IBVERBS_PRIVATE_34 ]]"

# 5. burst-dkms.
dkms_deb=$(ls "$WORK"/src/burst-dkms_*_all.deb 2>/dev/null | head -1)
if [[ ! -f $dkms_deb ]]; then
  echo "FAIL: no burst-dkms_*_all.deb in $WORK/src"; fail=1
else
  upstream=$(dpkg-deb -f "$dkms_deb" Version | sed 's/-[^-]*$//')
  {
    for f in Kbuild Makefile dkms.conf abi/burst_kmod.h; do echo "/usr/src/burst-$upstream/$f"; done
    for f in "$SRC"/kmod/*.c "$SRC"/kmod/*.h; do echo "/usr/src/burst-$upstream/${f##*/}"; done
    echo /usr/share/doc/burst-dkms/changelog.gz
    echo /usr/share/doc/burst-dkms/copyright
  } | sort >"$WORK/expected-dkms.txt"
  dpkg-deb -c "$dkms_deb" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort >"$WORK/files-dkms.txt"
  echo "== dpkg -c $(basename "$dkms_deb")"
  dpkg-deb -c "$dkms_deb"
  check "burst-dkms: the DKMS source tree, nothing else" diff -u "$WORK/expected-dkms.txt" "$WORK/files-dkms.txt"
  check "burst-dkms: Architecture all" test "$(dpkg-deb -f "$dkms_deb" Architecture)" = all
  check "burst-dkms: Depends on dkms" grep -qw dkms <<<"$(dpkg-deb -f "$dkms_deb" Depends)"
  check "burst recommends burst-dkms" grep -qw burst-dkms <<<"$(dpkg-deb -f "$deb" Recommends)"
  dkms_root="$WORK/root-dkms"
  rm -rf "$dkms_root"
  dpkg-deb -x "$dkms_deb" "$dkms_root"
  check "burst-dkms: dkms.conf has PACKAGE_VERSION=\"$upstream\"" \
    grep -q "^PACKAGE_VERSION=\"$upstream\"" "$dkms_root/usr/src/burst-$upstream/dkms.conf"
  bash "$SRC/tests/kmod/dkms_test.sh" "$SRC" "$dkms_root/usr/src" >"$WORK/dkms.log" 2>&1
  case $? in
    0) echo "ok: dkms build of the packaged source tree ($WORK/dkms.log)" ;;
    77) echo "note: dkms build of the packaged tree skipped: $(tail -1 "$WORK/dkms.log")" ;;
    *) tail -30 "$WORK/dkms.log"; echo "FAIL: dkms build of the packaged source tree"; fail=1 ;;
  esac
  rm -rf "$dkms_root"
fi

((fail)) && echo "package.deb: FAILED" || echo "package.deb: all checks passed"
# The tree copy, the build and the scratch root go; the logs, the lock and WORK/deb stay
# (ccache keeps the objects in its own directory). BURST_KEEP_PACKAGE=1 keeps everything.
[[ ${BURST_KEEP_PACKAGE:-0} == 1 ]] || rm -rf "$WORK/src" "$root"
echo "package.deb: total $(($(date +%s) - start)) s"
exit $fail
