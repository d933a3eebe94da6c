#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The RFC 6962/9162 Merkle tree from its definition (MTH, PATH, SUBPROOF, split at the
largest power of two below n): the reference the audit proof tests check the C verifier
(tests/audit/proofs.py) and verify.sh (tests/security/evidence_consistency.py) against.
Written from the RFCs, sharing no code with either verifier."""
import hashlib
from functools import lru_cache


def h(b):
    return hashlib.sha256(b).digest()


def leaf_hash(line):
    return h(b"\x00" + line)


def node(l, r):
    return h(b"\x01" + l + r)


def split(n):
    k = 1
    while k << 1 < n:
        k <<= 1
    return k


class Tree:
    def __init__(self, leaves):
        self.leaves = leaves

    @lru_cache(maxsize=None)
    def mth(self, lo, hi):
        n = hi - lo
        if n == 0:
            return h(b"")
        if n == 1:
            return self.leaves[lo]
        k = split(n)
        return node(self.mth(lo, lo + k), self.mth(lo + k, hi))

    def path(self, m, lo, hi):  # PATH(m, D[lo:hi])
        n = hi - lo
        if n <= 1:
            return []
        k = split(n)
        if m < k:
            return self.path(m, lo, lo + k) + [self.mth(lo + k, hi)]
        return self.path(m - k, lo + k, hi) + [self.mth(lo, lo + k)]

    def subproof(self, m, lo, hi, b):  # SUBPROOF(m, D[lo:hi], b)
        n = hi - lo
        if m == n:
            return [] if b else [self.mth(lo, hi)]
        k = split(n)
        if m <= k:
            return self.subproof(m, lo, lo + k, b) + [self.mth(lo + k, hi)]
        return self.subproof(m - k, lo + k, hi, False) + [self.mth(lo, lo + k)]
