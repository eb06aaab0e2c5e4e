#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Fails if a tracked source file has no SPDX-License-Identifier line: on line 1,
# or on line 2 after a shebang. Source files: C, C++, headers, BPF C, CMake,
# shell, Python, linker maps, and any file starting with "#!". Captured frames
# (tests/fixtures/) and data are not source files.
# New file: put the project's line first, in the file's comment syntax, e.g.
#   // SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause      (.c, .cc)
#   /* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */   (.h, .map)
#   # SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause       (CMake, shell, Python)
# Usage: spdx_check.sh SOURCE_DIR   Exit: 0 pass, 1 missing lines, 77 not a git checkout.
set -uo pipefail
cd "${1:?usage: spdx_check.sh SOURCE_DIR}" || exit 1
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "skipped: not a git checkout"; exit 77; }

is_source() {
  case $1 in
    tests/fixtures/*) return 1 ;;
    *.c | *.cc | *.h | *.cmake | *.sh | *.py | *.map | CMakeLists.txt | */CMakeLists.txt) return 0 ;;
  esac
  [[ $(head -c 2 -- "$1") == '#!' ]]
}

missing=()
checked=0
while IFS= read -r -d '' f; do
  [[ -f $f ]] || continue  # deleted in the work tree
  is_source "$f" || continue
  checked=$((checked + 1))
  first=$(head -n 1 -- "$f")
  [[ $first == '#!'* ]] && first=$(sed -n 2p -- "$f")
  [[ $first == *SPDX-License-Identifier:* ]] || missing+=("$f")
done < <(git ls-files -z)

if [[ ${#missing[@]} -ne 0 ]]; then
  echo "FAIL: ${#missing[@]} of $checked source files have no SPDX line at the top:"
  printf '  %s\n' "${missing[@]}"
  exit 1
fi
echo "ok: $checked source files carry an SPDX line"
