#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# QP1 against a Linux rxe guest: burstd's Device on the AF_XDP backend (the host end of the
# interop veth, 10.99.0.1) sends the CM REQ rxe itself sent in cm_rping_mtu1024.pcap (its sender's
# GID and rdma_cm source address made burst's) from QP1 to the guest (10.99.0.11, rping -s
# listening); the guest kernel's CM must answer with a REP, which must reach burstd's QP1 channel
# from the guest's GID: burst's UD SEND_ONLY frames from QP1 are accepted by the kernel's GSI QP and
# CM, and the kernel's reach burst's. (No RTU follows: the guest's rping times out, as expected.)
# Exit 0 = pass, 77 = skipped (no root/qemu/kernel package, no guest boots, no AF_XDP), 1 = fail.
# Usage (root): tests/interop/gsi.sh [BUILD_DIR]   (default build/default)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
BUILD=${1:-$HERE/../../build/default}
PEER=$BUILD/tests/burstd/gsi_xdp_peer
PCAP=$HERE/../fixtures/rxe/cm_rping_mtu1024.pcap
[[ -x $PEER ]] || iskip "build gsi_xdp_peer first ($PEER)"

interop_require
interop_prepare
interop_netns_up
interop_deadline "${INTEROP_GSI_DEADLINE:-300}"

guest_start vm1 10.99.0.11 || iskip "cannot boot a guest here; see the console log above"
srv=$(guest_spawn -t 40 vm1 "rping -s -a 10.99.0.11 -C 1 -v")
sleep 5
echo "--- burst QP1 -> guest: rxe's REQ (service of rping's port 7174)"
GSI_PEER_WORKERS=1 innet timeout 90 "$PEER" "$INTEROP_BURST_IF" 10.99.0.11 0 "$PCAP" \
  >"$INTEROP_RUN/gsi_peer.log" 2>&1
rc=$?
cat "$INTEROP_RUN/gsi_peer.log"
guest_run vm1 'cat /sys/class/infiniband/rxe0/ports/1/hw_counters/rcvd_pkts /sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts 2>/dev/null | tr "\n" " "'
echo
echo "--- guest rping -s (ends by its timeout: no RTU follows)"
guest_wait vm1 "$srv" | head -5
[[ $rc == 0 ]] || ifail "no REP came back from the guest's kernel (gsi_xdp_peer rc=$rc)"
echo "PASS interop gsi: the guest kernel's CM answered burst's REQ on QP1 with a REP"
