#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Smoke test of the rxe guest harness: two Debian 6.1 guests (rdma_rxe) on a bridge in a private
# network namespace; ib_write_bw and ibv_rc_pingpong rxe <-> rxe between them.
# Exit 0 = pass, 77 = skipped (no root/qemu/accelerator/kernel package, or no guest boots), 1 = fail.
# Usage (root): tests/interop/smoke.sh     Settings: see tests/interop/lib/guest.sh.
set -u
source "$(dirname "$0")/lib/guest.sh"

interop_require
interop_prepare
interop_netns_up
interop_deadline "${INTEROP_SMOKE_DEADLINE:-300}"
T0=$SECONDS

guest_start vm1 10.99.0.11 || iskip "cannot boot a guest here ($(interop_accel)); see the console log above"
BOOT1=$GUEST_BOOT_SECONDS
guest_start vm2 10.99.0.12 || ifail "second guest did not boot"
BOOT2=$GUEST_BOOT_SECONDS
guest_run vm2 'ping -c 1 -W 5 10.99.0.11 >/dev/null' || ifail "vm2 cannot reach vm1 over the bridge"

ok=1

# 1. ib_write_bw rxe -> rxe (server in vm1, client in vm2).
PERF='ib_write_bw -d rxe0 -x 1 -F -n 100 -s 65536'
srv=$(guest_spawn -t 120 vm1 "$PERF")
if guest_wait_listen vm1 18515 30; then
  cli_out=$(guest_run -t 120 vm2 "$PERF 10.99.0.11"); cli_rc=$?
  srv_out=$(guest_wait vm1 "$srv"); srv_rc=$?
  line=$(grep -E '^ *65536 +100 ' <<<"$cli_out" | head -1)
  if [[ $cli_rc -eq 0 && $srv_rc -eq 0 && -n $line ]]; then
    echo "PASS ib_write_bw rxe->rxe: #bytes #iters BWpeak[MB/s] BWavg[MB/s] MsgRate[Mpps]:$line"
  else
    ok=0
    echo "FAIL ib_write_bw (client rc=$cli_rc, server rc=$srv_rc)"
    echo "--- client:"; echo "$cli_out"; echo "--- server:"; echo "$srv_out"
  fi
else
  ok=0; echo "FAIL ib_write_bw: server did not listen"; guest_wait vm1 "$srv"
fi

# 2. ibv_rc_pingpong rxe -> rxe.
PP='ibv_rc_pingpong -d rxe0 -g 1'
srv=$(guest_spawn -t 120 vm1 "$PP")
if guest_wait_listen vm1 18515 30; then
  cli_out=$(guest_run -t 120 vm2 "$PP 10.99.0.11"); cli_rc=$?
  srv_out=$(guest_wait vm1 "$srv"); srv_rc=$?
  if [[ $cli_rc -eq 0 && $srv_rc -eq 0 ]] && grep -q 'iters in' <<<"$cli_out"; then
    echo "PASS ibv_rc_pingpong rxe->rxe: $(grep -E 'bytes in|iters in' <<<"$cli_out" | tr '\n' ';')"
  else
    ok=0
    echo "FAIL ibv_rc_pingpong (client rc=$cli_rc, server rc=$srv_rc)"
    echo "--- client:"; echo "$cli_out"; echo "--- server:"; echo "$srv_out"
  fi
else
  ok=0; echo "FAIL ibv_rc_pingpong: server did not listen"; guest_wait vm1 "$srv"
fi

echo "boot: vm1 ${BOOT1} s, vm2 ${BOOT2} s ($(interop_accel)); tests $((SECONDS - T0)) s in all"
[[ $ok -eq 1 ]] || exit 1
echo "PASS smoke"
