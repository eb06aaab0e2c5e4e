#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# CQ verbs against one loopback burstd (the port hears its own frames) in a
# private namespace, with verbs_cq_probe (plain libibverbs, under burstctl run
# for the completion-channel shim): ibv_req_notify_cq(cq, 1) wakes only for
# solicited or failed completions ("next" wins), ibv_resize_cq keeps pending
# completions in order and loses none under traffic delivered by two burstd
# workers into one CQ, ibv_modify_cq EOPNOTSUPP.
# Usage: cq_test.sh BURSTCTL BURSTD PROBE
# Exit: 0 pass, 1 fail, 77 skipped.
set -uo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/../netns/lib.sh"

BURSTCTL=${1:?usage: cq_test.sh BURSTCTL BURSTD PROBE}
BURSTD=${2:?}
PROBE=${3:?}

netns_require_root "network namespace, veth, /dev/infiniband node"
netns_require_tools "iproute2 util-linux coreutils" ip nsenter timeout
netns_require_libibverbs
netns_require_sysfs_path
netns_require_built "$BURSTCTL" "$BURSTD" "$PROBE"

netns_pair burst-cq  # only $NA is used
ip link add v0 netns "$NA" type veth peer name v1 netns "$NA" || fail "cannot create veth pair"
inA ip link set lo up
inA ip addr add 10.47.0.1/24 dev v0
inA ip link set v0 up
inA ip link set v1 up

netns_cmd_env
SOCK=$TMP/burstd.sock
netns_start_burstd "$NA" "$SOCK" "$TMP/burstd.log" "" --backend loopback --netdev v0 --workers 2

log "verbs_cq_probe: solicited-only arming, ibv_resize_cq, ibv_modify_cq"
nsenter --net=/run/netns/"$NA" env TMPDIR="$TMP" timeout 120 "$BURSTCTL" run \
  --netdev v0 --socket "$SOCK" -- "${CMD_ENV[@]}" "$PROBE" >"$TMP/probe" 2>&1
rc=$?
cat "$TMP/probe"
if [[ $rc -ne 0 ]]; then
  echo "--- burstd log:"
  tail -40 "$TMP/burstd.log"
  fail "verbs_cq_probe exited $rc"
fi
grep -q '^PASS$' "$TMP/probe" || fail "verbs_cq_probe did not pass"
kill -0 "$BURSTD_PID" || fail "burstd died"
echo "PASS"
