#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""Sends the CM MADs Linux rxe sent (a capture of tests/fixtures/rxe) to a burst
port, readdressed: Ethernet and IPv4 addresses replaced, a UDP source port per
frame (so that they spread over the receiving queues), IPv4 checksum and ICRC
recomputed (the ICRC as tests/fixtures/rxe/README.md describes it).

Usage: gsi_inject.py PCAP IFACE DMAC SRC_IP DST_IP COUNT [good|bad_qkey|short]
  good:     COUNT copies of the capture's first MAD frame (UD SEND_ONLY to QP1)
  bad_qkey: the same with DETH Q_Key 0x80010001
  short:    the same with 4 bytes of the MAD cut off (a 252-byte payload)
"""
import socket
import struct
import sys
import zlib

ETH, IP, UDP, BTH, DETH = 14, 20, 8, 12, 8


def read_pcap(path):
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off, frames = 24, []
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        frames.append(bytearray(data[off:off + incl]))
        off += incl
    return frames


def is_mad(f):
    bth = ETH + IP + UDP
    return len(f) > bth + BTH and f[bth] == 0x64 and f[bth + 5:bth + 8] == b"\x00\x00\x01"


def ip_checksum(hdr):
    s = sum(struct.unpack("!10H", bytes(hdr)))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def seal(f):
    ip = f[ETH:ETH + IP]
    ip[10:12] = b"\x00\x00"
    f[ETH + 10:ETH + 12] = struct.pack("!H", ip_checksum(ip))
    masked = bytearray(f[ETH:-4])
    masked[1] = 0xFF                                   # TOS
    masked[8] = 0xFF                                   # TTL
    masked[10:12] = b"\xff\xff"                        # IPv4 checksum
    masked[IP + 6:IP + 8] = b"\xff\xff"                # UDP checksum
    masked[IP + UDP + 4] = 0xFF                        # BTH FECN/BECN byte
    crc = zlib.crc32(b"\xff" * 8 + bytes(masked)) & 0xFFFFFFFF
    f[-4:] = struct.pack("<I", crc)


def main():
    pcap, iface, dmac, src, dst, count = sys.argv[1:7]
    kind = sys.argv[7] if len(sys.argv) > 7 else "good"
    frame = next(f for f in read_pcap(pcap) if is_mad(f))
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    smac = s.getsockname()[4]
    for i in range(int(count)):
        f = bytearray(frame)
        f[0:6] = bytes.fromhex(dmac.replace(":", ""))
        f[6:12] = smac[:6]
        f[ETH + 12:ETH + 16] = socket.inet_aton(src)
        f[ETH + 16:ETH + 20] = socket.inet_aton(dst)
        f[ETH + IP:ETH + IP + 2] = struct.pack("!H", 0xC000 + i * 7919 % 0x3FFF)
        if kind == "bad_qkey":
            f[ETH + IP + UDP + BTH + 3] ^= 1
        elif kind == "short":
            del f[-8:-4]
            total = len(f) - ETH
            f[ETH + 2:ETH + 4] = struct.pack("!H", total)
            f[ETH + IP + 4:ETH + IP + 6] = struct.pack("!H", total - IP)
        seal(f)
        s.send(bytes(f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
