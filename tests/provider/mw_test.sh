#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Memory windows through unmodified libibverbs: in a private network namespace
# with a veth pair and `burstd --backend loopback --netdev v0` on a private
# socket, `burstctl run` runs verbs_mw_probe (type 1 and 2 windows: bind,
# RDMA through them, local and remote invalidate, the error completions on both
# sides, dealloc; see the probe's header). With python3-pyverbs installed it
# also runs rdma-core's own memory-window and rereg tests (test_mr.MWTest,
# MRTest.test_mr_rereg_*) against burst0: from the copy the package ships, or
# from BURST_RDMA_CORE_TESTS (the tests/ folder of an rdma-core v44 source).
# Usage: mw_test.sh BURSTCTL BURSTD MW_PROBE
# Exit: 0 pass, 1 fail, 77 skipped (not root, libibverbs missing, kernel with RDMA).
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"  # netns_one_burstd, brun, ctl; fail shows the burstd log

BURSTCTL=${1:?usage: mw_test.sh BURSTCTL BURSTD MW_PROBE}
BURSTD=${2:?}
PROBE=${3:?}

netns_require_root "network namespace, veth"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout
netns_require_libibverbs
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD" "$PROBE"

netns_one_burstd burst-mw 10.46.0.1

echo "--- verbs_mw_probe"
brun "$PROBE" >"$TMP/probe" 2>&1
rc=$?
cat "$TMP/probe"
[[ $rc -eq 0 ]] || fail "verbs_mw_probe exited $rc"
grep -q '^PASS$' "$TMP/probe" || fail "verbs_mw_probe did not pass"
kill -0 "$BPID" 2>/dev/null || fail "burstd died"

# rdma-core's own tests: BURST_RDMA_CORE_TESTS (a source tree's tests/), else
# the copy Debian's python3-pyverbs ships (some files gzipped), unpacked here.
DEB_TESTS=/usr/share/doc/rdma-core/tests
if [[ -z ${BURST_RDMA_CORE_TESTS:-} && -f $DEB_TESTS/run_tests.py ]]; then
  mkdir -p "$TMP/rdma-core" && cp -r "$DEB_TESTS" "$TMP/rdma-core/tests" &&
    gunzip -f "$TMP"/rdma-core/tests/*.gz && BURST_RDMA_CORE_TESTS=$TMP/rdma-core/tests
fi
if [[ -n ${BURST_RDMA_CORE_TESTS:-} ]]; then
  if ! /usr/bin/python3 -c 'import pyverbs.device' 2>/dev/null; then
    echo "--- rdma-core tests: skipped (apt-get install python3-pyverbs)"
  else
    echo "--- rdma-core tests (pyverbs) from $BURST_RDMA_CORE_TESTS"
    brun env PYTHONPATH="$BURST_RDMA_CORE_TESTS/.." /usr/bin/python3 \
      "$BURST_RDMA_CORE_TESTS/run_tests.py" --dev burst0 --gid 1 -v test_mr.MWTest \
      test_mr.MRTest.test_mr_rereg_access test_mr.MRTest.test_mr_rereg_access_bad_flow \
      test_mr.MRTest.test_mr_rereg_pd test_mr.MRTest.test_mr_rereg_addr \
      >"$TMP/pyverbs" 2>&1
    rc=$?
    cat "$TMP/pyverbs"
    [[ $rc -eq 0 ]] || fail "rdma-core's MW tests failed"
  fi
fi
echo "PASS"
