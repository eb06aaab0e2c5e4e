#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
"""The far end of a QP1 test: on IFACE, takes each RoCEv2 UD SEND_ONLY frame to
DQPN 1, checks it (IPv4, UDP 4791, P_Key 0xFFFF, DETH Q_Key 0x80010000 and
source QP 1, a 256-byte MAD, ICRC as tests/fixtures/rxe/README.md computes it)
and sends it back with the Ethernet and IP addresses swapped, resealed.

Usage: gsi_echo.py IFACE COUNT TIMEOUT_S   (prints a summary; exit 0 when COUNT
good frames were echoed and none was bad)
"""
import select
import socket
import struct
import sys
import time
import zlib

ETH, IP, UDP, BTH, DETH, MAD = 14, 20, 8, 12, 8, 256


def icrc(f):
    masked = bytearray(f[ETH:-4])
    masked[1] = 0xFF
    masked[8] = 0xFF
    masked[10:12] = b"\xff\xff"
    masked[IP + 6:IP + 8] = b"\xff\xff"
    masked[IP + UDP + 4] = 0xFF
    return zlib.crc32(b"\xff" * 8 + bytes(masked)) & 0xFFFFFFFF


def ip_checksum(hdr):
    s = sum(struct.unpack("!10H", bytes(hdr)))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def check(f):
    """None for a QP1 MAD frame that is right, a reason otherwise."""
    if len(f) != ETH + IP + UDP + BTH + DETH + MAD + 4:
        return "length %d" % len(f)
    if f[ETH + 6] & 0x40 == 0:
        return "DF not set"
    bth = ETH + IP + UDP
    if f[bth + 2:bth + 4] != b"\xff\xff":
        return "P_Key"
    if struct.unpack("!I", f[bth + 12:bth + 16])[0] != 0x80010000:
        return "Q_Key"
    if f[bth + 17:bth + 20] != b"\x00\x00\x01":
        return "source QP"
    if struct.unpack("<I", f[-4:])[0] != icrc(f):
        return "ICRC"
    if ip_checksum(f[ETH:ETH + IP]) != 0:
        return "IPv4 checksum"
    return None


def main():
    iface, count, timeout = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((iface, 0))
    print("ready", flush=True)
    good = bad = 0
    end = time.monotonic() + timeout
    while good < count and time.monotonic() < end:
        if not select.select([s], [], [], 0.2)[0]:
            continue
        f, addr = s.recvfrom(65535)
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        f = bytearray(f)
        bth = ETH + IP + UDP
        if len(f) < bth + BTH or f[ETH + 9] != 17 or f[ETH + IP + 2:ETH + IP + 4] != b"\x12\xb7":
            continue
        if f[bth] != 0x64 or f[bth + 5:bth + 8] != b"\x00\x00\x01":
            continue
        why = check(f)
        if why:
            print("bad frame: %s" % why)
            bad += 1
            continue
        good += 1
        f[0:6], f[6:12] = f[6:12], f[0:6]
        f[ETH + 12:ETH + 16], f[ETH + 16:ETH + 20] = f[ETH + 16:ETH + 20], f[ETH + 12:ETH + 16]
        f[ETH + 10:ETH + 12] = b"\x00\x00"
        f[ETH + 10:ETH + 12] = struct.pack("!H", ip_checksum(f[ETH:ETH + IP]))
        f[-4:] = struct.pack("<I", icrc(f))
        s.send(bytes(f))
    print("echoed %d good QP1 frames, %d bad" % (good, bad), flush=True)
    return 0 if good == count and bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
