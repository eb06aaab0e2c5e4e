#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The tree's structural rules (issue 13, STYLE.md "Structure" and "The edges").

Checked over the files git tracks, as they are in the work tree:
  1. abi/ is the floor: its headers include only system headers and abi/ headers.
  2. provider/ includes nothing from daemon/, daemon/ nothing from provider/;
     cm/ (protocol logic burstd runs) includes neither. kmod/ (the kernel module,
     built by Kbuild, not CMake) includes kernel headers (<linux/...>, <rdma/...>,
     ...), its own headers and abi/burst_kmod.h only, the way its Kbuild finds it
     ("burst_kmod.h", no abi/ prefix: the DKMS tree carries it in its own abi/).
  3. No source file outside tests/ over MAX_FILE_LINES lines.
  4. No function in daemon/, provider/, cm/ or kmod/ over MAX_FUNCTION_LINES lines
     (kmod/ is kernel style, brace on its own line: the same scan finds its functions).
  5. No two source files outside tests/ share a basename (a program's main.cc
     in its own folder excepted).
Exceptions are listed here, each with its reason; an exception that no longer
applies fails the check too, so the list stays true.
Usage: layout_check.py SOURCE_DIR   Exit: 0 pass, 1 a rule broken, 77 not a git checkout.
"""
import os
import re
import subprocess
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 100
SOURCE_EXT = (".c", ".cc", ".h", ".py", ".sh", ".cmake")
# path -> reason. Empty: no file is over the limit.
LONG_FILE_EXCEPTIONS = {}
# "path:function" -> reason.
LONG_FUNCTION_EXCEPTIONS = {}
SAME_BASENAME_ALLOWED = {"main.cc", "CMakeLists.txt"}

# The kernel's include roots a module may use (kmod/ only).
KERNEL_INCLUDE_ROOTS = ("linux/", "rdma/", "asm/", "uapi/", "net/", "trace/", "crypto/")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def tracked_files(root):
    out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, check=True)
    files = [f for f in out.stdout.decode().split("\0") if f]
    return [f for f in files if os.path.isfile(os.path.join(root, f))]


def is_source(path):
    return path.endswith(SOURCE_EXT) or os.path.basename(path) == "CMakeLists.txt"


def read_lines(root, path):
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return f.read().split("\n")


def includes(lines):
    for n, line in enumerate(lines, 1):
        m = INCLUDE.match(line)
        if m:
            yield n, m.group(1), m.group(2)


def check_includes(root, files, errors):
    for path in files:
        if not path.endswith((".c", ".cc", ".h")):
            continue
        top = path.split("/", 1)[0]
        for n, kind, inc in includes(read_lines(root, path)):
            if top == "abi" and kind == '"' and not inc.startswith("abi/"):
                errors.append(f"{path}:{n}: abi/ includes \"{inc}\" (abi/ depends on nothing)")
            if top == "provider" and inc.startswith("daemon/"):
                errors.append(f"{path}:{n}: provider/ includes {inc}")
            if top == "daemon" and inc.startswith("provider/"):
                errors.append(f"{path}:{n}: daemon/ includes {inc}")
            if top == "cm" and inc.startswith(("daemon/", "provider/")):
                errors.append(f"{path}:{n}: cm/ includes {inc}")
            if top == "kmod":
                check_kmod_include(root, path, n, kind, inc, errors)


def check_kmod_include(root, path, n, kind, inc, errors):
    if kind == "<":
        if not inc.startswith(KERNEL_INCLUDE_ROOTS):
            errors.append(f"{path}:{n}: kmod/ includes <{inc}> (kernel headers only)")
    elif not (inc == "burst_kmod.h" or
              ("/" not in inc and os.path.isfile(os.path.join(root, "kmod", inc)))):
        errors.append(f"{path}:{n}: kmod/ includes \"{inc}\" (its own headers and burst_kmod.h only)")


def check_file_sizes(root, files, errors):
    seen = set()
    for path in files:
        if path.startswith("tests/") or not is_source(path):
            continue
        n = len(read_lines(root, path)) - 1
        if n > MAX_FILE_LINES:
            if path in LONG_FILE_EXCEPTIONS:
                seen.add(path)
            else:
                errors.append(f"{path}: {n} lines (at most {MAX_FILE_LINES} outside tests/)")
    for path in set(LONG_FILE_EXCEPTIONS) - seen:
        errors.append(f"{path}: listed as a long-file exception but is not over the limit")


# A definition at namespace scope in Google style: its signature starts in
# column 0 (not a preprocessor line, comment, namespace, class/struct/enum/union
# or extern block), may wrap over indented lines, ends with "{", and the body
# closes with "}" in column 0.
NOT_FUNCTION = re.compile(r"^(namespace|class|struct|enum|union|extern|using|typedef|template\s*<[^>]*>\s*(class|struct))\b")


def functions(lines):
    """Yields (name, first line, line count) of each namespace-scope function."""
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line or not (line[0].isalpha() or line[0] in "_~") or NOT_FUNCTION.match(line):
            i += 1
            continue
        # Gather the signature up to "{" or ";" (at most 8 lines).
        j = i
        sig = line.strip()
        while not sig.endswith(("{", ";", "}")) and j + 1 < len(lines) and j - i < 8:
            j += 1
            sig += " " + lines[j].strip()
        if not sig.endswith("{") or "(" not in sig or "=" in sig.split("(", 1)[0]:
            i = j + 1
            continue
        end = j + 1
        while end < len(lines) and not lines[end].startswith("}"):
            end += 1
        m = re.search(r"([A-Za-z_~][\w:~]*(?:operator\S*)?)\s*\(", sig)
        yield (m.group(1) if m else sig[:40]), i + 1, end - i + 1
        i = end + 1


def check_functions(root, files, errors):
    seen = set()
    for path in files:
        if not path.startswith(("daemon/", "provider/", "cm/", "kmod/")) or not path.endswith((".cc", ".c")):
            continue
        for name, first, count in functions(read_lines(root, path)):
            key = f"{path}:{name}"
            if count > MAX_FUNCTION_LINES:
                if key in LONG_FUNCTION_EXCEPTIONS:
                    seen.add(key)
                else:
                    errors.append(f"{path}:{first}: {name} is {count} lines "
                                  f"(at most {MAX_FUNCTION_LINES} in daemon/, provider/, cm/ and kmod/)")
    for key in set(LONG_FUNCTION_EXCEPTIONS) - seen:
        errors.append(f"{key}: listed as a long-function exception but is not over the limit")


def check_basenames(files, errors):
    by_name = {}
    for path in files:
        if path.startswith("tests/") or not is_source(path):
            continue
        by_name.setdefault(os.path.basename(path), []).append(path)
    for name, paths in sorted(by_name.items()):
        if len(paths) > 1 and name not in SAME_BASENAME_ALLOWED:
            errors.append(f"{name}: {len(paths)} files share this name: {', '.join(paths)}")


def main():
    if len(sys.argv) != 2:
        print("usage: layout_check.py SOURCE_DIR", file=sys.stderr)
        return 2
    root = sys.argv[1]
    if subprocess.run(["git", "-C", root, "rev-parse"], capture_output=True).returncode != 0:
        print("skipped: not a git checkout")
        return 77
    files = tracked_files(root)
    errors = []
    check_includes(root, files, errors)
    check_file_sizes(root, files, errors)
    check_functions(root, files, errors)
    check_basenames(files, errors)
    if errors:
        print(f"FAIL: {len(errors)} structural rule(s) broken:")
        for e in errors:
            print("  " + e)
        return 1
    print(f"ok: {len(files)} tracked files follow the layout rules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
