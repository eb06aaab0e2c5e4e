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

HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"  # netns_one_burstd, brun, ctl; fail shows the burstd log
netns_require_root "network namespace, veth"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout
netns_require_libibverbs
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD" "$PROBE"

netns_one_burstd burst-dmabuf 10.47.0.1

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
