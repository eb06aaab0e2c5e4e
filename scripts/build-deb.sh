#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Builds the Debian package of burst from a clean copy of this tree.
# dpkg-buildpackage wants ./debian at the top of the source: the tree keeps it
# in packaging/debian (next to the systemd unit and config files), and this
# script copies the tree's files (tracked and untracked-but-not-ignored, without
# build/ and .git) into OUT/src/burst-VERSION, puts packaging/debian there as
# ./debian, and runs dpkg-buildpackage -us -uc -b. The .deb, .buildinfo and
# .changes land in OUT/src.
# Usage: scripts/build-deb.sh [OUT]   (default OUT: build/deb)
# Environment: JOBS (default nproc), CCACHE_DISABLE=1 to build without ccache.
# Needs: scripts/install-deps.sh (the Build-Depends of packaging/debian/control).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$SRC/build/deb}
JOBS=${JOBS:-$(nproc)}

version=$(dpkg-parsechangelog -l "$SRC/packaging/debian/changelog" -S Version)
upstream=${version%%-*}
dest="$OUT/src/burst-$upstream"
rm -rf "$OUT/src"
mkdir -p "$dest"

# The copy: what git knows of (committed or not), else everything but build/.
if git -C "$SRC" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$SRC" && git ls-files -z --cached --others --exclude-standard |
     grep -zv -e '^build/' -e '^debian/' |
     while IFS= read -r -d '' f; do [[ -e $f ]] && printf '%s\0' "$f"; done |
     tar --null -T - -cf -) | tar -xf - -C "$dest"
else
  tar -C "$SRC" --exclude=./build --exclude=./.git --exclude=./debian -cf - . | tar -xf - -C "$dest"
fi
cp -a "$SRC/packaging/debian" "$dest/debian"

# ccache, when present, through CMake's launcher variables (read from the
# environment by CMake >= 3.17): a rebuild of the same tree at the same path hits.
# debhelper 13 points HOME into the build tree, so the caller's cache directory
# and configuration are named explicitly (else every build has a new, empty cache).
if [[ ${CCACHE_DISABLE:-0} != 1 ]] && command -v ccache >/dev/null; then
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache
  CCACHE_DIR=$(ccache -k cache_dir) && export CCACHE_DIR
  conf=${CCACHE_CONFIGPATH:-${XDG_CONFIG_HOME:-$HOME/.config}/ccache/ccache.conf}
  [[ -f $conf ]] && export CCACHE_CONFIGPATH=$conf
fi
export DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:+$DEB_BUILD_OPTIONS }parallel=$JOBS"

cd "$dest"
start=$(date +%s)
dpkg-buildpackage -us -uc -b
echo "build-deb.sh: built in $(($(date +%s) - start)) s:"
ls -l "$OUT"/src/*.deb
