#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""RFC 9162 section 2.1 proofs of the audit log against an independent implementation.

A 300-record log is written with fabricctl; this script hashes its lines itself
(SHA-256(0x00 || line), SHA-256(0x01 || left || right)), computes every inclusion
proof of every tree size 1..300 and the consistency proofs of many size pairs, and
requires the library's (tests/audit/proof_vectors) to be the same bytes; it verifies
each with the RFC 9162 verification algorithms written here, checks that a changed
proof fails them, and that fabricctl audit proof --json prints the same proofs.

usage: proofs.py FABRICCTL PROOF_VECTORS
Prints PASS/FAIL per check and "proofs.py: N passed, M failed"."""
import json
import os
import random
import subprocess
import sys
import tempfile

from rfc6962 import Tree, h, leaf_hash, node  # the reference tree, beside this file

SIZE = 300


def verify_inclusion(index, size, leaf, path, root):  # RFC 9162 2.1.3.2
    if index >= size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node(p, r)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            r = node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def verify_consistency(first, second, first_hash, second_hash, path):  # RFC 9162 2.1.4.2
    if first == second:
        return not path and first_hash == second_hash
    if first == 0 or first > second or not path:
        return False
    if first & (first - 1) == 0:
        path = [first_hash] + path
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node(c, fr)
            sr = node(c, sr)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            sr = node(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == first_hash and sr == second_hash


def main():
    fctl, vectors = sys.argv[1], sys.argv[2]
    npass = nfail = 0

    def check(name, ok, why=""):
        nonlocal npass, nfail
        if ok:
            npass += 1
            print("PASS", name)
        else:
            nfail += 1
            print("FAIL", name + (": " + why if why else ""))

    tmp = tempfile.mkdtemp(prefix="fctl-proofs.")
    log = os.path.join(tmp, "audit.log")
    subprocess.run([fctl, "audit", "keygen", "--out", tmp], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([fctl, "audit", "append", "--log", log, "--action", "step", "--result", "pass",
                    "--count", str(SIZE), "--batch", "64"], check=True)
    lines = open(log, "rb").read().split(b"\n")[:-1]
    check("log of %d records" % SIZE, len(lines) == SIZE)
    t = Tree([leaf_hash(l) for l in lines])
    rng = random.Random(9162)
    n_incl = n_cons = bad_incl = bad_cons = lib_rejects = tamper_ok = 0
    out = subprocess.run([vectors, log, str(SIZE)], check=True, capture_output=True).stdout
    first_bad = ""
    for raw in out.splitlines():
        v = json.loads(raw)
        path = [bytes.fromhex(x) for x in v["path"]]
        n = v["tree_size"]
        root = t.mth(0, n)
        if v["t"] == "i":
            i = v["leaf_index"]
            n_incl += 1
            want = t.path(i, 0, n)
            good = (path == want and bytes.fromhex(v["root"]) == root and
                    verify_inclusion(i, n, t.leaves[i], path, root))
            lib_rejects += v["ok"] != 1
            if path:  # a changed proof must fail
                k = rng.randrange(len(path))
                bad = list(path)
                bad[k] = bytes([bad[k][0] ^ 1]) + bad[k][1:]
                tamper_ok += verify_inclusion(i, n, t.leaves[i], bad, root)
            tamper_ok += verify_inclusion(i, n, t.leaves[i], path + [root], root)
        else:
            m = v["old_size"]
            n_cons += 1
            want = t.subproof(m, 0, n, True) if m < n else []
            old = t.mth(0, m)
            good = (path == want and bytes.fromhex(v["old_root"]) == old and
                    bytes.fromhex(v["root"]) == root and
                    verify_consistency(m, n, old, root, path))
            lib_rejects += v["ok"] != 1
            if path:
                k = rng.randrange(len(path))
                bad = list(path)
                bad[k] = bytes([bad[k][0] ^ 1]) + bad[k][1:]
                tamper_ok += verify_consistency(m, n, old, root, bad)
            if m < n:  # the proof for another old tree must fail
                tamper_ok += verify_consistency(m, n, t.leaves[0] if m > 1 else h(b"x"), root, path)
        if not good:
            if not first_bad:
                first_bad = raw.decode()[:200]
            if v["t"] == "i":
                bad_incl += 1
            else:
                bad_cons += 1
    check("inclusion proofs of every leaf of sizes 1..%d match python (%d)" % (SIZE, n_incl),
          n_incl == SIZE * (SIZE + 1) // 2 and bad_incl == 0, first_bad)
    check("consistency proofs of %d size pairs match python and verify" % n_cons,
          n_cons > 5000 and bad_cons == 0, first_bad)
    check("the library's verifiers accept every proof", lib_rejects == 0, str(lib_rejects))
    check("changed proofs fail the RFC 9162 verification", tamper_ok == 0, str(tamper_ok))
    # the CLI prints the same proofs
    cli_bad = ""
    for _ in range(40):
        n = rng.randrange(1, SIZE + 1)
        seq = rng.randrange(1, n + 1)
        m = rng.randrange(1, n + 1)
        a = json.loads(subprocess.run([fctl, "audit", "proof", "--log", log, "--inclusion", str(seq),
                                       "--size", str(n), "--json"], check=True,
                                      capture_output=True).stdout)
        if (a != {"leaf_index": seq - 1, "tree_size": n, "root": t.mth(0, n).hex(),
                  "path": [x.hex() for x in t.path(seq - 1, 0, n)]}):
            cli_bad = "inclusion %d of %d: %s" % (seq, n, a)
        c = json.loads(subprocess.run([fctl, "audit", "proof", "--log", log, "--consistency", str(m),
                                       "--size", str(n), "--json"], check=True,
                                      capture_output=True).stdout)
        want = t.subproof(m, 0, n, True) if m < n else []
        if (c != {"old_size": m, "tree_size": n, "old_root": t.mth(0, m).hex(),
                  "root": t.mth(0, n).hex(), "path": [x.hex() for x in want]}):
            cli_bad = "consistency %d..%d: %s" % (m, n, c)
    check("fabricctl audit proof --json prints the same proofs", not cli_bad, cli_bad)
    r = subprocess.run([fctl, "audit", "proof", "--log", log, "--inclusion", str(SIZE + 1), "--json"],
                       capture_output=True)
    check("a record past the end has no proof (exit 2)", r.returncode == 2)
    subprocess.run(["rm", "-rf", tmp])
    print("proofs.py: %d passed, %d failed" % (npass, nfail))
    return 1 if nfail else 0


if __name__ == "__main__":
    sys.exit(main())
