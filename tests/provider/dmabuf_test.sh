#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# ibv_reg_dmabuf_mr through unmodified libibverbs, the cases that need no
# dma-buf exporter: in a private network namespace with a veth pair and
# `burstd --backend loopback --netdev v0` on a private socket, `burstctl run`
# runs verbs_dmabuf_probe: fd -1 (the consumers' probe) is EBADF; a memfd, a
# pipe and a regular file are EINVAL. With a DRM device that exports dumb
# buffers (/dev/dri/card*, e.g. vgem) it also runs the probe's --vgem part
# (the data path through a real dma-buf); the Debian guest of the interop
# harness does that where this host cannot (tests/interop/dmabuf_guest.sh).
# Usage: dmabuf_test.sh BURSTCTL BURSTD DMABUF_PROBE
# Exit: 0 pass, 1 fail, 77 skipped (not root, libibverbs missing, kernel with RDMA).
set -uo pipefail

BURSTCTL=${1:?usage: dmabuf_test.sh BURSTCTL BURSTD DMABUF_PROBE}
BURSTD=${2:?}
PROBE=${3:?}

skip() { echo "SKIP: $*"; exit 77; }
fail() {
  echo "FAIL: $*"
  [[ -f ${TMP:-}/burstd.log ]] && { echo "--- burstd log:"; cat "$TMP/burstd.log"; }
  exit 1
}

[[ $(id -u) -eq 0 ]] || skip "needs root (network namespace, veth)"
for c in ip nsenter timeout; do
  command -v "$c" >/dev/null || skip "missing tool '$c' (apt-get install iproute2 util-linux coreutils)"
done
ldconfig -p | grep 'libibverbs\.so\.1 ' >/dev/null || skip "libibverbs missing (apt-get install libibverbs1)"
[[ -d /sys/class/infiniband ]] &&
  skip "this kernel has RDMA support: libibverbs lists devices over netlink and ignores SYSFS_PATH"
for b in "$BURSTCTL" "$BURSTD" "$PROBE"; do [[ -x $b ]] || fail "$b not built"; done

NS=burst-dmabuf-$$
TMP=$(mktemp -d /tmp/burst-dmabuf-test.XXXXXX)
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
CMD_ENV=()
if [[ -n ${BURST_TEST_PRELOAD:-} ]]; then
  CMD_ENV=(sh -c 'LD_PRELOAD="$BURST_TEST_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}" \
    ASAN_OPTIONS=detect_leaks=0 exec "$@"' sh)
fi
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
inns ip addr add 10.47.0.1/24 dev v0
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

VGEM=()
compgen -G '/dev/dri/card*' >/dev/null && VGEM=(--vgem)
echo "--- verbs_dmabuf_probe ${VGEM[*]}"
brun "$PROBE" "${VGEM[@]}" >"$TMP/probe" 2>&1
rc=$?
cat "$TMP/probe"
if [[ $rc -eq 77 && ${#VGEM[@]} -gt 0 ]]; then
  echo "--- no exporting DRM device after all: the cases without one"
  brun "$PROBE" >"$TMP/probe" 2>&1
  rc=$?
  cat "$TMP/probe"
fi
[[ $rc -eq 0 ]] || fail "verbs_dmabuf_probe exited $rc"
grep -q '^PASS$' "$TMP/probe" || fail "verbs_dmabuf_probe did not pass"
kill -0 "$BPID" 2>/dev/null || fail "burstd died"
echo "PASS"
