#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks a text exposition (0.0.4) for what promtool does not: every family named on
the command line has # HELP and # TYPE (before its samples), and every family's lines
(HELP, TYPE, samples) form one contiguous group. Prints PASS/FAIL lines.
Usage: families.py FILE LABEL FAMILY..."""
import re
import sys


def family_of(line):
    if line.startswith("# HELP ") or line.startswith("# TYPE "):
        return line.split()[2]
    if line.startswith("#") or not line.strip():
        return None
    return re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)


def main():
    path, label, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
    lines = open(path).read().splitlines()
    order, seen_help, seen_type, first_sample = [], {}, {}, {}
    for i, line in enumerate(lines):
        f = family_of(line)
        if f is None:
            continue
        if not order or order[-1] != f:
            order.append(f)
        if line.startswith("# HELP "):
            seen_help[f] = i
        elif line.startswith("# TYPE "):
            seen_type[f] = i
        else:
            first_sample.setdefault(f, i)
    split = sorted({f for f in order if order.count(f) > 1})
    if split:
        print(f"FAIL {label}-one-group-per-family: split: {' '.join(split)}")
    else:
        print(f"PASS {label}-one-group-per-family ({len(order)} families)")
    missing = []
    for f in wanted:
        if f not in seen_help or f not in seen_type:
            missing.append(f + " (no HELP/TYPE)")
        elif f in first_sample and first_sample[f] < max(seen_help[f], seen_type[f]):
            missing.append(f + " (samples before HELP/TYPE)")
    if missing:
        print(f"FAIL {label}-families-with-help-and-type: {', '.join(missing)}")
    else:
        print(f"PASS {label}-families-with-help-and-type ({len(wanted)} families)")


main()
