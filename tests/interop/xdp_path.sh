#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Path check for the burst side of the interop harness: one rxe guest on the bridge, the host end
# of the veth ($INTEROP_BURST_IF, 10.99.0.1) with an AF_XDP socket (burst's xsk-raw, burst's steer
# program) on it. The guest sends RDMA-CM traffic toward 10.99.0.1 (rping: CM REQ MADs to QP1 as
# RoCEv2 UD SEND_ONLY); the frames are captured on the bridge side of the veth and must be counted
# by the AF_XDP socket. Nothing answers them yet (burst has no CM), so rping is expected to fail.
# Exit 0 = frames reached the socket, 77 = skipped, 1 = fail.
# Usage (root): tests/interop/xdp_path.sh [BUILD_DIR]     (default build/default)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
BUILD=${1:-$HERE/../../build/default}
XSK=$BUILD/tools/xsk-raw/xsk-raw
[[ -x $XSK ]] || iskip "build xsk-raw first ($XSK)"
command -v tcpdump >/dev/null || iskip "missing tcpdump (apt-get install tcpdump)"

interop_require
interop_prepare
interop_netns_up
interop_deadline "${INTEROP_XDP_DEADLINE:-180}"
innet "$XSK" --mode probe >/dev/null || iskip "AF_XDP unavailable"

guest_start vm1 10.99.0.11 || iskip "cannot boot a guest here; see the console log above"

PCAP=$INTEROP_RUN/burst-side.pcap
# nsenter directly, not the innet function: $! must be tcpdump itself for the kill below.
nsenter --net="/run/netns/$INTEROP_NS" tcpdump -i iveth-br -nn -s 0 -U -w "$PCAP" 'udp port 4791' \
  2>"$INTEROP_RUN/tcpdump.err" &
TCPDUMP=$!
nsenter --net="/run/netns/$INTEROP_NS" "$XSK" --netdev "$INTEROP_BURST_IF" --mode rx --queues 0 \
  --duration 25 >"$INTEROP_RUN/xsk.out" 2>&1 &
XSKPID=$!
sleep 2
echo "--- guest: rping -c -a $INTEROP_HOST_IP (no responder: expected to time out)"
guest_run -t 20 vm1 "rping -c -a $INTEROP_HOST_IP -C 1 -v" | head -5
guest_run vm1 'rdma statistic show link rxe0/1 2>/dev/null | tr " " "\n" | grep -A1 -E "^(sent_pkts|rcvd_pkts)$" | paste - - 2>/dev/null' | tr '\n' ' '; echo
wait "$XSKPID"; XSKRC=$?
kill "$TCPDUMP" 2>/dev/null; wait "$TCPDUMP" 2>/dev/null
echo "--- AF_XDP socket on $INTEROP_BURST_IF (xsk-raw rc=$XSKRC):"
grep -E 'total|steer' "$INTEROP_RUN/xsk.out"
echo "--- RoCEv2 frames from the guest on the veth (tcpdump):"
tcpdump -nn -r "$PCAP" 2>/dev/null | head -5
if command -v tshark >/dev/null; then
  tshark -r "$PCAP" -d udp.port==4791,infiniband -T fields -e ip.src -e ip.dst -e infiniband.bth.opcode \
    -e infiniband.bth.destqp -e infiniband.mad.attributeid 2>/dev/null | sort | uniq -c | head
fi
frames=$(grep -oE 'total: frames=[0-9]+' "$INTEROP_RUN/xsk.out" | grep -oE '[0-9]+$' | head -1)
captured=$(tcpdump -nn -r "$PCAP" 2>/dev/null | wc -l)
[[ ${frames:-0} -gt 0 && $captured -gt 0 ]] ||
  ifail "no RoCEv2 frame reached the AF_XDP socket (socket frames=${frames:-?}, captured=$captured)"
echo "PASS xdp_path: $captured RoCEv2 frames on the veth, ${frames} received by the AF_XDP socket"
