#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Counts the frames on one interface (both directions) for a number of seconds by
# ethertype: MACsec (0x88e5), EAPOL/MKA (0x888e), anything else (cleartext). The MKA lab
# suite runs it on the VLAN device under a SecY, where only those two may appear.
# Usage: mka_sniff.py IFNAME SECONDS [READY_FILE]  -> one JSON line; READY_FILE is
# created once the socket listens (the caller waits for it before sending).
import json
import socket
import sys
import time

ifname, seconds = sys.argv[1], float(sys.argv[2])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.bind((ifname, 0))
s.settimeout(0.2)
if len(sys.argv) > 3:
    open(sys.argv[3], "w").close()
counts = {"total": 0, "macsec": 0, "eapol": 0, "other": 0, "other_types": []}
end = time.monotonic() + seconds
while time.monotonic() < end:
    try:
        frame = s.recv(65535)
    except socket.timeout:
        continue
    if len(frame) < 14:
        continue
    etype = int.from_bytes(frame[12:14], "big")
    if etype in (0x8100, 0x88A8) and len(frame) >= 18:  # a tag left in the frame
        etype = int.from_bytes(frame[16:18], "big")
    counts["total"] += 1
    if etype == 0x88E5:
        counts["macsec"] += 1
    elif etype == 0x888E:
        counts["eapol"] += 1
    else:
        counts["other"] += 1
        if "0x%04x" % etype not in counts["other_types"]:
            counts["other_types"].append("0x%04x" % etype)
print(json.dumps(counts))
