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
source "$HERE/../netns/lib.sh"  # skip, log, netns_cmd_env (fail below adds the burstd log)

BURSTCTL=${1:?usage: mw_test.sh BURSTCTL BURSTD MW_PROBE}
BURSTD=${2:?}
PROBE=${3:?}

fail() {
  echo "FAIL: $*"
  [[ -f ${TMP:-}/burstd.log ]] && { echo "--- burstd log:"; cat "$TMP/burstd.log"; }
  exit 1
}

[[ $(id -u) -eq 0 ]] || skip "needs root (network namespace, veth)"
for c in ip nsenter timeout; do
  command -v "$c" >/dev/null || skip "missing tool '$c' (apt-get install iproute2 util-linux coreutils)"
done
netns_require_libibverbs
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD" "$PROBE"

NS=burst-mw-$$
TMP=$(mktemp -d /tmp/burst-mw-test.XXXXXX)
BPID=
cleanup() {
  if [[ -n $BPID ]]; then
    kill -9 "$BPID" 2>/dev/null
    wait "$BPID" 2>/dev/null
  fi
  ip netns del "$NS" 2>/dev/null
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'echo "interrupted"; exit 1' INT TERM

inns() { nsenter --net=/run/netns/"$NS" "$@"; }
netns_cmd_env
SOCK=$TMP/burstd.sock
mkdir -p "$TMP/tmpdir"
brun() {
  inns env TMPDIR="$TMP/tmpdir" timeout 60 "$BURSTCTL" run --netdev v0 --socket "$SOCK" -- \
    "${CMD_ENV[@]}" "$@"
}
ctl() { timeout 20 "$BURSTCTL" --socket "$SOCK" "$@"; }

ip netns add "$NS" || fail "cannot create network namespace"
ip link add v0 netns "$NS" type veth peer name v1 netns "$NS" || fail "cannot create veth pair"
inns ip link set lo up
inns ip addr add 10.46.0.1/24 dev v0
inns ip link set v0 up
inns ip link set v1 up
for _ in $(seq 50); do
  inns ip link show v0 | grep -q 'LOWER_UP' && break
  sleep 0.1
done

nsenter --net=/run/netns/"$NS" "$BURSTD" --backend loopback --netdev v0 --socket "$SOCK" \
  >"$TMP/burstd.log" 2>&1 &
BPID=$!
for _ in $(seq 100); do
  [[ -S $SOCK ]] && ctl status >/dev/null 2>&1 && break
  sleep 0.1
done
ctl status >/dev/null 2>&1 || fail "burstd did not come up"

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
