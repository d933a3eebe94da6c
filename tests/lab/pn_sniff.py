#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The wire under a SecY, frame by frame, for the nonce suite (tests/lab/nonce.sh).
#
#   pn_sniff.py capture IFNAME OUT READY STOP [MAXSEC]
#       every frame on IFNAME (the VLAN under a SecY) until the file STOP exists (or
#       MAXSEC, default 60): one line per MACsec frame "out|in SCI PN AN" in OUT, one
#       line "clear-out|clear-in 0xETYPE" per other frame; OUT.raw keeps the outgoing
#       MACsec frames as hex, one per line (for replay). READY is created once it listens.
#   pn_sniff.py replay IFNAME RAW
#       sends each frame of RAW (hex lines) on IFNAME again, as an attacker on the wire
#       would; prints how many. Frames to a multicast address other than broadcast are
#       left out: the peer's NIC drops a group it has not joined (IPv6's MLD and router
#       solicitations) before MACsec sees it, so they would be counted as replayed and
#       never as refused.
#   pn_sniff.py repeats [--in] [--an N] FILE...
#       the (SCI, PN) pairs of outgoing MACsec frames that occur more than once across
#       the captures FILE... (all made under one key): prints them, exits 1 if any.
#       --in counts the incoming frames instead (the peer's, seen on this wire);
#       --an N only the frames of association number N (one key of a rotation).
import os
import socket
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def sectag(frame):
    """(sci, pn, an) of a MACsec frame (ethertype 0x88e5 at offset 12), or None."""
    if len(frame) < 14 + 6 or int.from_bytes(frame[12:14], "big") != 0x88E5:
        return None
    tci_an = frame[14]
    pn = int.from_bytes(frame[16:20], "big")
    sci = frame[20:28].hex() if tci_an & 0x20 and len(frame) >= 28 else "implicit"
    return sci, pn, tci_an & 0x03


def capture(ifname, out, ready, stop, maxsec):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    s.settimeout(0.2)
    open(ready, "w").close()
    end = time.monotonic() + maxsec
    with open(out, "w") as log, open(out + ".raw", "w") as raw:
        while time.monotonic() < end and not os.path.exists(stop):
            try:
                frame, addr = s.recvfrom(65535)
            except socket.timeout:
                continue
            way = "out" if addr[2] == PACKET_OUTGOING else "in"
            tag = sectag(frame)
            if tag:
                log.write("%s %s %d %d\n" % (way, tag[0], tag[1], tag[2]))
                if way == "out":
                    raw.write(frame.hex() + "\n")
            elif len(frame) >= 14:
                log.write("clear-%s 0x%04x\n" % (way, int.from_bytes(frame[12:14], "big")))
            log.flush()
            raw.flush()


def replay(ifname, rawfile):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    n = 0
    for line in open(rawfile):
        line = line.strip()
        if not line:
            continue
        frame = bytes.fromhex(line)
        if frame[0] & 1 and frame[:6] != b"\xff" * 6:
            continue
        s.send(frame)
        n += 1
        time.sleep(0.01)
    print(n)


def repeats(args):
    way, an = "out", None
    while args and args[0].startswith("--"):
        if args[0] == "--in":
            way, args = "in", args[1:]
        elif args[0] == "--an" and len(args) > 1:
            an, args = args[1], args[2:]
        else:
            sys.stderr.write("repeats: unknown option %s\n" % args[0])
            return 2
    if not args:
        sys.stderr.write("repeats: no capture named\n")
        return 2
    seen, dup = set(), []
    for f in args:
        for line in open(f):
            p = line.split()
            if len(p) == 4 and p[0] == way and (an is None or p[3] == an):
                if (p[1], p[2]) in seen:
                    dup.append("%s %s" % (p[1], p[2]))
                seen.add((p[1], p[2]))
    for d in dup:
        print("repeated: SCI %s PN %s" % tuple(d.split()))
    print("%d %s frames%s, %d repeated" % (len(seen) + len(dup), way,
                                          "" if an is None else " of AN " + an, len(dup)))
    return 1 if dup else 0


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "capture" and len(sys.argv) in (6, 7):
        capture(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5],
                float(sys.argv[6]) if len(sys.argv) == 7 else 60)
    elif cmd == "replay" and len(sys.argv) == 4:
        replay(sys.argv[2], sys.argv[3])
    elif cmd == "repeats" and len(sys.argv) >= 3:
        sys.exit(repeats(sys.argv[2:]))
    else:
        sys.stderr.write(open(__file__).read().split("\nimport")[0] + "\n")
        sys.exit(2)
