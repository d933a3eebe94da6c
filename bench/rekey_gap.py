#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The rekey gap of bench/rotation_bench.sh: receive gaps of a sequence-numbered stream around each switch.

    rekey_gap.py --period-ms P [--window S] DIRECTION=LOG:SENT:SWITCHES ...

DIRECTION names the stream ("h1->h2"); LOG is `seqstream recv ... LOG` of the receiver
("SEQ SENT_NS RECV_NS" per packet received, arrival order); SENT the number of packets
the sender says it sent (`seqstream send` prints "sent N"); SWITCHES a file with one
time per line (seconds since the epoch, the *sender's* clock: its agent's audit record
of the txsa-switch of the streamed interface), the moments its TX key changed; those
outside the span of the stream's send times belong to other rounds and are left out.

For each switch at t, the packets the sender sent within t +- window (default 1 s) and
their neighbours in arrival order: the longest time between two consecutive arrivals
(the receive gap; receiver's clock, so no clock offset between the guests enters it),
and the sequence numbers missing among them. Over the whole stream: lost (sent minus
distinct received), reordered (a packet below the highest already received, first
seen), duplicated, and the longest receive gap away from every switch window (what the
guests' scheduling alone does to the stream, to read the gap at a switch against).

Prints one JSON object: per direction, and "target" (0 lost and every gap at a switch
<= 2 x period) with "met". Exit 0 whatever the figures (a benchmark reports misses);
exit 2 on unreadable input.
"""
import argparse
import json
import sys


def load_log(path):
    rows = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 3:
                rows.append((int(p[0]), int(p[1]) / 1e9, int(p[2]) / 1e9))
    return rows


def load_switches(path):
    with open(path) as f:
        return sorted(float(x) for x in f.read().split())


def direction(rows, sent, switches, window):
    seen, dup, reord, hi = set(), 0, 0, -1
    for seq, _, _ in rows:
        if seq in seen:
            dup += 1
            continue
        if seq < hi:
            reord += 1
        seen.add(seq)
        hi = max(hi, seq)
    out = {
        "sent": sent,
        "received": len(seen),
        "lost": max(sent - len(seen), 0) if sent is not None else None,
        "reordered": reord,
        "duplicated": dup,
        "switches": [],
    }
    in_any = [False] * len(rows)
    if rows:  # another round's switches (the audit log holds every round) are not this stream's
        first, last = min(r[1] for r in rows), max(r[1] for r in rows)
        switches = [t for t in switches if first <= t <= last]
    for t in switches:
        idx = [i for i, r in enumerate(rows) if abs(r[1] - t) <= window]
        sw = {"t": round(t, 6), "packets": len(idx), "gap_ms": None, "missing": None}
        if idx:
            lo, up = max(idx[0] - 1, 0), min(idx[-1] + 1, len(rows) - 1)
            for i in range(lo, up + 1):
                in_any[i] = True
            gaps = [rows[i][2] - rows[i - 1][2] for i in range(lo + 1, up + 1)]
            sw["gap_ms"] = round(1000 * max(gaps), 3) if gaps else None
            seqs = {rows[i][0] for i in range(lo, up + 1)}
            sw["missing"] = sum(1 for s in range(min(seqs), max(seqs) + 1) if s not in seqs)
        out["switches"].append(sw)
    far = [rows[i][2] - rows[i - 1][2] for i in range(1, len(rows)) if not (in_any[i] or in_any[i - 1])]
    out["max_gap_elsewhere_ms"] = round(1000 * max(far), 3) if far else None
    g = [s["gap_ms"] for s in out["switches"] if s["gap_ms"] is not None]
    out["max_gap_at_switch_ms"] = max(g) if g else None
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--period-ms", type=float, required=True)
    ap.add_argument("--window", type=float, default=1.0)
    ap.add_argument("streams", nargs="+", metavar="DIRECTION=LOG:SENT:SWITCHES")
    a = ap.parse_args()
    res = {"period_ms": a.period_ms, "window_s": a.window, "directions": {}}
    try:
        for spec in a.streams:
            name, rest = spec.split("=", 1)
            log, sent, sw = rest.split(":", 2)
            res["directions"][name] = direction(
                load_log(log), int(sent) if sent.isdigit() else None, load_switches(sw), a.window
            )
    except (OSError, ValueError) as e:
        print(f"rekey_gap: {e}", file=sys.stderr)
        return 2
    d = res["directions"].values()
    lost = [x["lost"] for x in d]
    gaps = [x["max_gap_at_switch_ms"] for x in d]
    nsw = sum(len(x["switches"]) for x in d)
    res["lost"] = sum(x for x in lost if x is not None) if all(x is not None for x in lost) else None
    res["reordered"] = sum(x["reordered"] for x in d)
    res["duplicated"] = sum(x["duplicated"] for x in d)
    res["max_gap_at_switch_ms"] = max((g for g in gaps if g is not None), default=None)
    res["switches"] = nsw
    res["target"] = {"lost": 0, "gap_ms_le": 2 * a.period_ms}
    res["met"] = bool(
        nsw > 0
        and res["lost"] == 0
        and all(s["gap_ms"] is not None for x in d for s in x["switches"])
        and res["max_gap_at_switch_ms"] <= 2 * a.period_ms
    )
    print(json.dumps(res, separators=(",", ":")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
