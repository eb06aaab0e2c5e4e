#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# burst -> rxe, RDMA WRITE: burst-xfer (AF_XDP on the host end of the veth, $INTEROP_BURST_IF =
# 10.99.0.1) is the client of a stock `ib_write_bw` server running on Linux rxe in one guest, over
# perftest's own TCP side channel (burst-xfer --peer perftest). RoCE MTU 1024 (1500-byte link).
# Both sides must succeed; prints rxe's result line (the report burst sent it, as perftest prints
# the client's figures), burst's summary line and rxe's counters. The run's RoCEv2 frames are kept
# in the run directory: headers of up to 3000 frames, and the first 64 frames in full; on failure
# the first frames are decoded with tshark (when installed).
# Exit 0 = pass, 77 = skipped, 1 = fail.
# Usage (root): tests/interop/write_bw.sh [BUILD_DIR]   Settings: WRITE_BW_SIZE (65536),
#   WRITE_BW_ITERS (100), WRITE_BW_DEPTH (16); INTEROP_KEEP=1 keeps the captures.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib/guest.sh"
BUILD=${1:-$HERE/../../build/default}
XFER=$BUILD/tools/burst-xfer/burst-xfer
SIZE=${WRITE_BW_SIZE:-65536}
ITERS=${WRITE_BW_ITERS:-100}
DEPTH=${WRITE_BW_DEPTH:-16}
GUEST_IP=10.99.0.11
[[ -x $XFER ]] || iskip "build burst-xfer first ($XFER)"
"$XFER" --help 2>/dev/null | grep -q -- '--peer' || iskip "burst-xfer has no --peer (rebuild it)"
command -v tcpdump >/dev/null || iskip "missing tcpdump (apt-get install tcpdump)"

interop_require
interop_prepare
interop_netns_up
interop_deadline "${INTEROP_WRITE_BW_DEADLINE:-240}"

# interop_netns_up sets arp_ignore=1 (ARP flux); check the guest resolved burst0's MAC.
guest_start vm1 "$GUEST_IP" || iskip "cannot boot a guest here; see the console log above"
guest_run vm1 "ping -c 1 -W 5 $INTEROP_HOST_IP >/dev/null" || ifail "the guest cannot reach $INTEROP_HOST_IP"
mac_burst=$(innet ip -o link show "$INTEROP_BURST_IF" | grep -oE "link/ether [0-9a-f:]+" | cut -d" " -f2)
mac_seen=$(guest_run vm1 "ip neigh show $INTEROP_HOST_IP" | grep -oE '([0-9a-f]{2}:){5}[0-9a-f]{2}' | head -1)
[[ $mac_seen == "$mac_burst" ]] ||
  ifail "the guest resolves $INTEROP_HOST_IP to $mac_seen, not to $INTEROP_BURST_IF ($mac_burst)"

HDRS=$INTEROP_RUN/write_bw-headers.pcap
FULL=$INTEROP_RUN/write_bw-first.pcap
TAPS=$INTEROP_RUN/write_bw-tap.pcap
# nsenter execs tcpdump: $! is tcpdump itself (a shell function would leave it behind on kill).
NS=(nsenter --net="/run/netns/$INTEROP_NS")
"${NS[@]}" tcpdump -i iveth-br -nn -s 96 -c 3000 -U -w "$HDRS" 'udp port 4791' 2>"$INTEROP_RUN/tcpdump1.err" &
TD1=$!
"${NS[@]}" tcpdump -i iveth-br -nn -s 0 -c 64 -U -w "$FULL" 'udp port 4791' 2>"$INTEROP_RUN/tcpdump2.err" &
TD2=$!
# The guest's side of the bridge: shows whether rxe's responses leave the guest.
"${NS[@]}" tcpdump -i itap-vm1 -nn -s 96 -c 3000 -U -w "$TAPS" 'udp port 4791 or arp' 2>"$INTEROP_RUN/tcpdump3.err" &
TD3=$!
sleep 1

PERF="ib_write_bw -d rxe0 -x 1 -F -s $SIZE -n $ITERS"
srv=$(guest_spawn -t 150 vm1 "$PERF")
guest_wait_listen vm1 18515 30 || { guest_wait vm1 "$srv"; ifail "ib_write_bw did not listen"; }
echo "--- burst: burst-xfer --peer perftest --op write --size $SIZE --iters $ITERS --mtu 1024 $GUEST_IP"
nsenter --net="/run/netns/$INTEROP_NS" timeout -s INT 120 "$XFER" --backend xdp \
  --netdev "$INTEROP_BURST_IF" --peer perftest --op write --size "$SIZE" --iters "$ITERS" \
  --depth "$DEPTH" --mtu 1024 "$GUEST_IP" >"$INTEROP_RUN/burst.out" 2>"$INTEROP_RUN/burst.err"
brc=$?
srv_out=$(guest_wait vm1 "$srv"); src=$?
sleep 1
kill "$TD1" "$TD2" "$TD3" 2>/dev/null; wait "$TD1" "$TD2" "$TD3" 2>/dev/null

echo "--- burst (rc=$brc):"; cat "$INTEROP_RUN/burst.err" "$INTEROP_RUN/burst.out"
echo "--- rxe ib_write_bw server (rc=$src):"; echo "$srv_out"
echo "--- rxe counters:"
guest_run vm1 'rdma statistic show link rxe0/1' | tr ' ' '\n' | paste - - | grep -vE '\s0$' |
  tr '\n' ' '; echo
echo "--- capture: $(tcpdump -nn -r "$HDRS" 2>/dev/null | wc -l) frames (headers) in $HDRS," \
  "$(tcpdump -nn -r "$FULL" 2>/dev/null | wc -l) full in $FULL"
echo "--- frames by direction: veth (bridge side) / guest tap:"
tcpdump -nn -r "$HDRS" 2>/dev/null | awk '{print $3">"$5}' | sed -E 's/\.[0-9]+>/>/' | sort | uniq -c
tcpdump -nn -e -r "$TAPS" 2>/dev/null | awk '{print $2">"$4, $(NF-3)">"$(NF-1)}' | sort | uniq -c | head
echo "--- links: $(innet ip -s -o link show iveth-br | tr -s ' ' | cut -c1-200)"
guest_run vm1 'ip neigh; ip -s -o link show eth0' | tr -s ' ' | head -5

rxe_line=$(grep -E "^ *$SIZE +$ITERS " <<<"$srv_out" | head -1)
burst_line=$(grep -E '^burst-xfer ' "$INTEROP_RUN/burst.out" | head -1)
if [[ $brc -eq 0 && $src -eq 0 && -n $rxe_line && -n $burst_line ]]; then
  echo "rxe:   #bytes #iters BWpeak[MB/s] BWavg[MB/s] MsgRate[Mpps]:$rxe_line"
  echo "burst: $burst_line"
  echo "PASS write_bw burst(client, AF_XDP) -> rxe(ib_write_bw server): WRITE $SIZE B x $ITERS, MTU 1024"
  exit 0
fi
if command -v tshark >/dev/null; then
  echo "--- first frames (tshark):"
  tshark -r "$FULL" -d udp.port==4791,infiniband -T fields \
    -e frame.number -e ip.src -e ip.dst -e infiniband.bth.opcode -e infiniband.bth.destqp \
    -e infiniband.bth.psn -e infiniband.bth.a -e infiniband.aeth.syndrome \
    -e infiniband.aeth.msn -e infiniband.reth.dmalen -e infiniband.invariant.crc 2>/dev/null | head -40
fi
ifail "write_bw burst -> rxe (burst rc=$brc, ib_write_bw rc=$src)"
