#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# kmod.checkpatch: the module's sources (kmod/*.c, kmod/*.h) and its user API (abi/burst_kmod.h)
# pass the kernel's checkpatch.pl (Linux 6.1, from Debian's linux-source-6.1; lib.sh extracts it into
# a cache directory) in its default mode with no error and no warning. --strict's CHECKs (kernel
# subsystems differ on them) are printed as notes, not counted.
# Usage: checkpatch_test.sh SOURCE_DIR
# Exit: 0 pass, 1 fail, 77 skipped (no linux-source-6.1 or perl: scripts/install-deps.sh).
set -uo pipefail
SRC=$(cd "${1:?usage: checkpatch_test.sh SOURCE_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"
command -v perl >/dev/null || { echo "kmod.checkpatch: skipped: perl missing"; exit 77; }
CP=$(kmod_checkpatch) || { echo "kmod.checkpatch: skipped: no checkpatch.pl (apt-get install linux-source-6.1)"; exit 77; }
cd "$SRC" || exit 1
shopt -s nullglob
files=(kmod/*.c kmod/*.h abi/burst_kmod.h)
echo "kmod.checkpatch: $CP (default mode) on ${files[*]}"
fail=0
for f in "${files[@]}"; do
  out=$(perl "$CP" --no-tree --terse --show-types --file "$f" 2>&1)
  if grep -qE ': (ERROR|WARNING):' <<<"$out"; then
    echo "FAIL: $f"
    grep -E ': (ERROR|WARNING):' <<<"$out"
    fail=1
  else
    echo "ok: $f"
  fi
  notes=$(perl "$CP" --no-tree --terse --strict --show-types --file "$f" 2>&1 | grep ': CHECK:')
  [[ -n $notes ]] && sed 's/^/  note (--strict): /' <<<"$notes"
done
((fail)) && echo "kmod.checkpatch: FAILED" || echo "kmod.checkpatch: passed"
exit $fail
