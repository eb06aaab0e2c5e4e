#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Forged CM MADs on the wire (tests/cm/robust_test.sh): the first MAD frame of
an rxe capture (a REQ), readdressed and resealed by tests/netns/gsi_inject.py's
helpers, its CM attribute rewritten.

Usage: cm_inject.py PCAP IFACE DMAC SRC_IP DST_IP KIND COUNT
  req:  COUNT REQs, each with its own local comm ID and TID (a REQ flood)
  rej:  COUNT REJs naming random comm IDs (nobody's)
  dreq: COUNT DREQs naming random comm IDs (nobody's)
"""
import os
import random
import socket
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../netns"))
from gsi_inject import ETH, IP, UDP, BTH, DETH, read_pcap, is_mad, seal  # noqa: E402

MAD = ETH + IP + UDP + BTH + DETH
ATTR = {"rej": 0x0012, "dreq": 0x0015}


def forge(frame, kind, i):
    f = bytearray(frame)
    f[MAD + 8:MAD + 16] = struct.pack("!Q", random.getrandbits(64))  # TID
    body = MAD + 24
    if kind == "req":
        f[body:body + 4] = struct.pack("!I", random.getrandbits(32))  # local comm ID
    else:
        f[MAD + 16:MAD + 18] = struct.pack("!H", ATTR[kind])
        f[body:MAD + 256] = bytes(MAD + 256 - body)
        f[body:body + 8] = struct.pack("!II", random.getrandbits(32), random.getrandbits(32))
        if kind == "rej":
            f[body + 8] = 0                        # MsgRejected: REQ
            f[body + 10:body + 12] = struct.pack("!H", 28)  # consumer reject
    f[ETH + IP:ETH + IP + 2] = struct.pack("!H", 0xC000 + i * 7919 % 0x3FFF)
    return f


def main():
    pcap, iface, dmac, src, dst, kind, count = sys.argv[1:8]
    frame = next(f for f in read_pcap(pcap) if is_mad(f))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    smac = s.getsockname()[4]
    frame[0:6] = bytes.fromhex(dmac.replace(":", ""))
    frame[6:12] = smac[:6]
    frame[ETH + 12:ETH + 16] = socket.inet_aton(src)
    frame[ETH + 16:ETH + 20] = socket.inet_aton(dst)
    for i in range(int(count)):
        f = forge(frame, kind, i)
        seal(f)
        s.send(bytes(f))
    print(f"sent {count} {kind}")


if __name__ == "__main__":
    main()
