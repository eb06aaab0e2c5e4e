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
# The identifier is the project's, GPL-2.0-only OR BSD-2-Clause, everywhere but kmod/: the kernel
# module is GPL-2.0-only (it is built into the kernel's address space and uses GPL-only kernel
# symbols of ib_core and the mm) and follows the kernel's rule for the line's comment style
# (Documentation/process/license-rules.rst): `// ...` in .c, `/* ... */` in .h, `# ...` in Kbuild,
# Makefile and dkms.conf. Kernel stand-ins that tests build into the module (tests/kmod/*_stub.c)
# follow the same rule. abi/burst_kmod.h, shared with user space, keeps the project's dual licence.
# Usage: spdx_check.sh SOURCE_DIR   Exit: 0 pass, 1 missing or wrong lines, 77 not a git checkout.
set -uo pipefail
cd "${1:?usage: spdx_check.sh SOURCE_DIR}" || exit 1
git rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "skipped: not a git checkout"; exit 77; }

is_source() {
  case $1 in
    tests/fixtures/*) return 1 ;;
    *.c | *.cc | *.h | *.cmake | *.sh | *.py | *.map | CMakeLists.txt | */CMakeLists.txt) return 0 ;;
    kmod/Kbuild | kmod/Makefile | kmod/dkms.conf) return 0 ;;
  esac
  [[ $(head -c 2 -- "$1") == '#!' ]]
}

# The whole line a file's SPDX line must be (kmod/), or the identifier it must carry (elsewhere).
expected() {
  case $1 in
    kmod/*.c | tests/kmod/*_stub.c) echo '// SPDX-License-Identifier: GPL-2.0-only' ;;
    kmod/*.h) echo '/* SPDX-License-Identifier: GPL-2.0-only */' ;;
    kmod/*) echo '# SPDX-License-Identifier: GPL-2.0-only' ;;
    *) if [[ $first =~ SPDX-License-Identifier:\ GPL-2\.0-only\ OR\ BSD-2-Clause( |$) ]]; then
         echo "$first"
       else
         echo '... SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause'
       fi ;;
  esac
}

missing=()
wrong=()
checked=0
while IFS= read -r -d '' f; do
  [[ -f $f ]] || continue  # deleted in the work tree
  is_source "$f" || continue
  checked=$((checked + 1))
  first=$(head -n 1 -- "$f")
  [[ $first == '#!'* ]] && first=$(sed -n 2p -- "$f")
  [[ $first == *SPDX-License-Identifier:* ]] || { missing+=("$f"); continue; }
  want=$(expected "$f")
  [[ $first == "$want" ]] || wrong+=("$f: '$first' (expected '$want')")
done < <(git ls-files -z)

rc=0
if [[ ${#missing[@]} -ne 0 ]]; then
  echo "FAIL: ${#missing[@]} of $checked source files have no SPDX line at the top:"
  printf '  %s\n' "${missing[@]}"
  rc=1
fi
if [[ ${#wrong[@]} -ne 0 ]]; then
  echo "FAIL: ${#wrong[@]} of $checked source files carry another licence or comment style than theirs:"
  printf '  %s\n' "${wrong[@]}"
  rc=1
fi
((rc)) && exit 1
echo "ok: $checked source files carry an SPDX line"
