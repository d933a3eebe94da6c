#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""verify.sh's own proof checks against an independent RFC 6962/9162 tree, in one process.

The finding (issue #29, 1): verify.sh's trusted-checkpoint path passed the consistency
proof's first node where the new root belongs, so the bundle checkpoint's root was never
compared and a proof [X, c] with X = SHA-256(0x01 || trusted_root || c) passed.

This script takes the python3 helper out of verify.sh (its PYBATCH text, run here without
its command line) and checks, against trees built here from the RFC 6962 definition (MTH,
SUBPROOF, split at the largest power of two):
  - every consistency proof m -> n, 1 <= m <= n <= 300, is accepted;
  - each of them forged is refused: a node changed, a node dropped, a node added, the
    wrong new root, the wrong old root, and [X, c] with X = SHA-256(0x01 || old || c);
  - range proofs (the window's proof in proofs.json): every inclusion (one leaf) and
    every two-leaf range of every size 1..300, and random wider ranges, give MTH; a node
    changed, dropped or added does not.
It also writes vectors (genuine and forged, a few of each) for the bash functions
(--openssl-only path), which evidence_consistency.sh runs: bash is too slow for all.

usage: evidence_consistency.py VERIFY_SH VECTOR_DIR
Prints PASS/FAIL per check and "evidence_consistency.py: N passed, M failed"."""
import os
import random
import sys

SIZE = 300


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "audit"))
from rfc6962 import Tree as RefTree, h, node  # noqa: E402 (the reference tree, tests/audit)


class Tree(RefTree):
    def __init__(self, n):
        super().__init__([h(b"\x00" + b"record %d" % i) for i in range(n)])

    def levels(self, n):
        # the tree of the first n leaves level by level, a lone last node going up as it is
        # (equal to MTH for RFC 6962 trees: checked below against mth)
        lv = [self.leaves[:n]]
        while len(lv[-1]) > 1:
            c = lv[-1]
            up = [node(c[i], c[i + 1]) for i in range(0, len(c) - 1, 2)]
            if len(c) % 2:
                up.append(c[-1])
            lv.append(up)
        return lv

    def range_proof(self, lv, lo, hi):
        # the nodes outside leaves lo..hi that close them into the root, per level:
        # the left neighbour when lo is a right child, the right one when hi is a left
        # child that has a neighbour (docs/audit.md, audit/proofs.json "range")
        out = []
        for c in lv[:-1]:
            if lo & 1:
                out.append(c[lo - 1])
                lo -= 1
            if hi & 1 == 0 and hi + 1 < len(c):
                out.append(c[hi + 1])
                hi += 1
            lo, hi = lo >> 1, hi >> 1
        return out


def helper(verify_sh):
    """verify.sh's PYBATCH program, defined here without running its command line."""
    text = open(verify_sh).read()
    start = text.index("\nPYBATCH='") + len("\nPYBATCH='")
    end = text.index("\n'\n", start)
    ns = {"__name__": "pybatch"}
    argv = sys.argv
    sys.argv = ["pybatch", "-"]
    try:
        exec(compile(text[start:end], verify_sh + ":PYBATCH", "exec"), ns)
    finally:
        sys.argv = argv
    return ns


def main():
    verify_sh, vdir = sys.argv[1], sys.argv[2]
    npass = nfail = 0

    def check(name, bad, total, what):
        nonlocal npass, nfail
        if not bad:
            npass += 1
            print("PASS %s (%d %s)" % (name, total, what))
        else:
            nfail += 1
            print("FAIL %s: %d of %d %s, first: %s" % (name, len(bad), total, what, "; ".join(bad[:3])))

    ns = helper(verify_sh)
    t = Tree(SIZE)
    roots = [None] + [t.mth(0, n) for n in range(1, SIZE + 1)]
    lv = {n: t.levels(n) for n in range(1, SIZE + 1)}
    bad = ["size %d" % n for n in range(1, SIZE + 1) if lv[n][-1][0] != roots[n]]
    check("oracle-levels-equal-mth", bad, SIZE, "tree sizes")
    rnd = random.Random(29)
    vec = []  # for the bash functions: "want m n old new path..."
    x = lambda b: b.hex()

    cons = ns.get("consistency")
    if cons is None:
        nfail += 1
        print("FAIL helper-has-consistency-check: verify.sh's python3 helper has no consistency()"
              " (the trusted-checkpoint proof is not checked the way this test can reach)")
        cons = lambda *a: None
    good, forged, total, ftotal = [], [], 0, 0
    for n in range(1, SIZE + 1):
        for m in range(1, n + 1):
            old, new = roots[m], roots[n]
            p = t.subproof(m, 0, n, True)
            total += 1
            if cons(m, n, x(old), x(new), [x(a) for a in p]) is not True:
                good.append("%d->%d" % (m, n))
            c = p[-1] if p else new
            forgeries = [("[X,c]", old, new, [node(old, c), c]),
                         ("new-root-wrong", old, roots[n - 1] if n > 1 else old[::-1], p),
                         ("old-root-wrong", roots[m - 1] if m > 1 else new[::-1], new, p)]
            if p:
                i = rnd.randrange(len(p))
                flip = bytes([p[i][0] ^ 1]) + p[i][1:]
                forgeries += [("node-changed", old, new, p[:i] + [flip] + p[i + 1:]),
                              ("node-dropped", old, new, p[:i] + p[i + 1:])]
            forgeries.append(("node-added", old, new, p + [c]))
            for what, o, w, q in forgeries:
                if (o, w, q) == (old, new, p):
                    continue  # a forgery equal to the genuine proof (m == n, no root before)
                ftotal += 1
                if cons(m, n, x(o), x(w), [x(a) for a in q]):
                    forged.append("%d->%d %s" % (m, n, what))
            if (m, n) in ((4, 6), (4, 8), (1, 2), (3, 7), (6, 6), (5, 300), (128, 300), (299, 300)):
                vec.append(" ".join(["1", str(m), str(n), x(old), x(new)] + [x(a) for a in p]))
                for what, o, w, q in forgeries[:1] + forgeries[3:4]:
                    vec.append(" ".join(["0", str(m), str(n), x(o), x(w)] + [x(a) for a in q]))
    if ns.get("consistency"):
        check("helper-accepts-every-genuine-consistency-proof-1..300", good, total, "proofs")
        check("helper-refuses-forged-consistency-proofs", forged, ftotal, "forgeries")
    with open(vdir + "/consistency.vec", "w") as f:
        f.write("".join(v + "\n" for v in vec))

    rr = ns.get("range_root")
    good, forged, total, ftotal, vec = [], [], 0, 0, []
    ranges = [(n, i, i) for n in range(1, SIZE + 1) for i in range(n)]
    ranges += [(n, i, i + 1) for n in range(2, SIZE + 1) for i in range(n - 1)]
    ranges += [(n, lo, rnd.randrange(lo, n)) for n in range(1, SIZE + 1) for lo in
               (rnd.randrange(n) for _ in range(10))]
    for n, lo, hi in ranges:
        p = t.range_proof(lv[n], lo, hi)
        leaves = [x(a) for a in t.leaves[lo:hi + 1]]
        arg = lambda q: " ".join(leaves) + " -- " + " ".join(x(a) for a in q)
        total += 1
        got = run_range(rr, n, lo, hi, arg(p))
        if got != x(roots[n]):
            good.append("%d..%d of %d: %s" % (lo, hi, n, got))
        fl = []
        if total % 5:
            pass  # forgeries for every fifth range: the run stays short
        elif p:
            i = rnd.randrange(len(p))
            fl = [("node-changed", p[:i] + [bytes([p[i][0] ^ 1]) + p[i][1:]] + p[i + 1:]),
                  ("node-dropped", p[:i] + p[i + 1:])]
        if total % 5 == 0:
            fl.append(("node-added", p + [roots[n]]))
        for what, q in fl:
            ftotal += 1
            if run_range(rr, n, lo, hi, arg(q)) == x(roots[n]):
                forged.append("%d..%d of %d %s" % (lo, hi, n, what))
        if (n, lo, hi) in ((5, 0, 3), (7, 6, 6), (300, 150, 150), (300, 3, 4), (13, 4, 11)):
            vec.append("%s %d %d %d %s" % (x(roots[n]), n, lo, hi, arg(p)))
            q = p[:-1] + [bytes([p[-1][0] ^ 1]) + p[-1][1:]] if p else p + [roots[n]]
            vec.append("%s %d %d %d %s" % ("-", n, lo, hi, arg(q)))
    check("helper-range-proofs-give-the-root", good, total, "ranges")
    check("helper-refuses-forged-range-proofs", forged, ftotal, "forgeries")
    with open(vdir + "/range.vec", "w") as f:
        f.write("".join(v + "\n" for v in vec))
    print("evidence_consistency.py: %d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


def run_range(rr, n, lo, hi, text):
    """verify.sh's helper range_root: it prints the root, or nothing when the nodes do not fit."""
    import contextlib
    import io
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rr(n, lo, hi, text)
    return out.getvalue().strip()


if __name__ == "__main__":
    sys.exit(main())
