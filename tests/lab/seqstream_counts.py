#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The stream's receiver (tests/lab/seqstream) counts what the lab suites rely on.

seqstream_counts.py SEQSTREAM: on 127.0.0.1 only, sends a crafted sequence to
`seqstream recv` and checks its summary: numbers 0..199 without 40..44 and 120, then 7
again (a duplicate) and 120 late (reordered), in bursts of 20 with pauses between. Run
without LOG (the receiver reads its socket in batches, as every lab suite runs it), with
LOG (a read per packet, one log line each), and ended by SECONDS instead of IDLE; then
3,000 packets in one burst, read in batches. Prints PASS/FAIL per check; exit 1 on any
failure.
"""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

SEQ = sys.argv[1]
fails = 0


def check(name, ok, detail=""):
    global fails
    print(("PASS " if ok else "FAIL ") + name + ("" if ok else ": " + detail))
    fails += 0 if ok else 1


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(mode, log, secs="30", idle="3", burst=0):
    port = free_port()
    argv = [SEQ, "recv", str(port), secs, idle] + ([log] if log else [])
    rx = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    if rx.stdout.readline().strip() != "listening":
        check(mode + "-listens", False, "no 'listening' line")
        rx.kill()
        return
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    order = [n for n in range(200) if not 40 <= n <= 44 and n != 120] + [7, 120]
    if burst:
        order = list(range(burst))
    for i, n in enumerate(order):
        tx.sendto(struct.pack(">QQ", n, (1000 + n) * 1_000_000_000) + bytes(48), ("127.0.0.1", port))
        if i % 20 == 19 and not burst:
            time.sleep(0.03)  # some packets arrive while the receiver sleeps, some not
    tx.close()
    out, _ = rx.communicate(timeout=60)
    lines = out.split("\n")
    summary = next((l for l in lines if l.startswith("received ")), "")
    f = summary.split()
    got = dict(zip(f[0::2], f[1::2]))
    want = {"received": "195", "lost": "5", "reordered": "1", "duplicated": "1",
            "max_seq": "199", "socket_drops": "0"}
    if burst:
        want = {"received": str(burst), "lost": "0", "reordered": "0", "duplicated": "0",
                "max_seq": str(burst - 1), "socket_drops": "0"}
    for k, v in want.items():
        check(f"{mode}-{k}-{v}", got.get(k) == v, summary or out)
    gaps = [l for l in lines if l.startswith("gap ")]
    # 120 came late, so only 40..44 is missing at the end
    want_gaps = [] if burst else ["gap 40 44 before 1039.000 after 1045.000"]
    check(mode + "-gaps-" + ("none" if burst else "40-44-between-39-and-45"), gaps == want_gaps,
          repr(gaps))
    check(mode + "-exit-0", rx.returncode == 0, str(rx.returncode))
    if log:
        with open(log) as fh:
            rows = fh.read().split("\n")[:-1]
        check(mode + "-log-line-per-packet", len(rows) == len(order), f"{len(rows)} lines")


run("batched", None)
with tempfile.TemporaryDirectory() as d:
    run("per-packet", os.path.join(d, "log"))
run("ended-by-seconds", None, secs="3", idle="60")
run("burst-3000", None, burst=3000)
print(f"seqstream-counts: {fails} failed")
sys.exit(1 if fails else 0)
