#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# The provider registers itself only with rdma-core 44's libibverbs
# (provider/ibverbs_release.h): loaded by the host's libibverbs under its own
# name (libibverbs.so.1.14.44.0) it registers silently; loaded by the same
# library named as rdma-core 45's (libibverbs.so.1.14.45.0, through
# LD_LIBRARY_PATH) it says why it refuses and does not crash.
# Usage: ibverbs_release_test.sh PROVIDER_SO
set -uo pipefail
PROVIDER=${1:?usage: ibverbs_release_test.sh PROVIDER_SO}

command -v python3 >/dev/null || { echo "ibverbs_release: skipped: needs python3"; exit 77; }
real=$(python3 -c 'import ctypes.util; print(ctypes.util.find_library("ibverbs") or "")')
lib=$(ldconfig -p | sed -n 's/.*libibverbs.so.1 (libc6,x86-64) => //p' | head -1)
[[ -n $real && -n $lib ]] || { echo "ibverbs_release: skipped: libibverbs.so.1 not found"; exit 77; }
host_release=$(readlink -f "$lib")
case $host_release in
  */libibverbs.so.1.14.44.*) ;;
  *) echo "ibverbs_release: skipped: the host's libibverbs is $host_release, not rdma-core 44's"; exit 77 ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
load() {  # load [LD_LIBRARY_PATH]: libibverbs, then the provider, as libibverbs dlopen()s it
  LD_LIBRARY_PATH=${1:-} timeout 30 python3 -c '
import ctypes, os, sys
ctypes.CDLL("libibverbs.so.1", mode=ctypes.RTLD_GLOBAL)
ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW)
print("loaded")' "$PROVIDER" 2>"$tmp/err"
}

fail=0
out=$(load) || { echo "FAIL: the provider did not load with the host's libibverbs"; cat "$tmp/err"; fail=1; }
if [[ $out == loaded && ! -s $tmp/err ]]; then
  echo "ok: rdma-core 44's libibverbs ($host_release): registered, no message"
else
  echo "FAIL: unexpected output with the host's libibverbs:"; cat "$tmp/err"; fail=1
fi

mkdir "$tmp/lib"
cp "$host_release" "$tmp/lib/libibverbs.so.1.14.45.0"
ln -s libibverbs.so.1.14.45.0 "$tmp/lib/libibverbs.so.1"
out=$(load "$tmp/lib") || { echo "FAIL: loading under rdma-core 45's name crashed or failed"; cat "$tmp/err"; fail=1; }
if [[ $out == loaded ]] && grep -q "is rdma-core 45's libibverbs; this burst provider is built for rdma-core 44" "$tmp/err" &&
   grep -q "not registering" "$tmp/err"; then
  echo "ok: rdma-core 45's libibverbs: refused with: $(cat "$tmp/err")"
else
  echo "FAIL: no refusal message under rdma-core 45's name:"; cat "$tmp/err"; fail=1
fi
exit $fail
