// SPDX-License-Identifier: MIT
/* Audit log proofs: Merkle audit paths and consistency proofs, RFC 9162 section 2.1. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/audit.h"

struct leaves {
	uint8_t (*v)[32];
	uint64_t n, cap;
};

static int add_leaf(void *ctx, const char *line, size_t len)
{
	struct leaves *l = ctx;

	if (l->n == l->cap) {
		uint64_t cap = l->cap ? l->cap * 2 : 1024;
		void *p = realloc(l->v, (size_t)cap * 32);

		if (!p)
			return -ENOMEM;
		l->v = p;
		l->cap = cap;
	}
	fctl_audit_leaf_hash(line, len, l->v[l->n++]);
	return 0;
}

int fctl_audit_leaves(const char *log_path, uint8_t (**leaves)[32], uint64_t *n)
{
	struct leaves l = { 0 };
	int r = fctl_audit_read(log_path, add_leaf, &l);

	if (r < 0) {
		free(l.v);
		return r;
	}
	*leaves = l.v;
	*n = l.n;
	return 0;
}

/* the largest power of two smaller than n (n > 1) */
static uint64_t split(uint64_t n)
{
	uint64_t k = 1;

	while (k << 1 < n)
		k <<= 1;
	return k;
}

void fctl_audit_mth(const uint8_t (*leaves)[32], uint64_t n, uint8_t root[32])
{
	struct fctl_audit_tree t;

	fctl_audit_tree_init(&t);
	for (uint64_t i = 0; i < n; i++)
		fctl_audit_tree_push(&t, leaves[i]);
	fctl_audit_tree_root(&t, root);
}

static void put(uint8_t (*path)[32], size_t *plen, const uint8_t h[32])
{
	memcpy(path[(*plen)++], h, 32);
}

/* PATH(m, D[n]) of RFC 9162 2.1.3.1, hashes appended leaf side first */
static void audit_path(const uint8_t (*d)[32], uint64_t n, uint64_t m, uint8_t (*path)[32],
		       size_t *plen)
{
	uint8_t h[32];
	uint64_t k;

	if (n <= 1)
		return;
	k = split(n);
	if (m < k) {
		audit_path(d, k, m, path, plen);
		fctl_audit_mth(d + k, n - k, h);
	} else {
		audit_path(d + k, n - k, m - k, path, plen);
		fctl_audit_mth(d, k, h);
	}
	put(path, plen, h);
}

int fctl_audit_inclusion_proof(const uint8_t (*leaves)[32], uint64_t n, uint64_t index,
			       uint8_t (*path)[32], size_t *plen)
{
	if (index >= n)
		return -EINVAL;
	*plen = 0;
	audit_path(leaves, n, index, path, plen);
	return 0;
}

/* SUBPROOF(m, D[n], b) of RFC 9162 2.1.4.1 */
static void subproof(const uint8_t (*d)[32], uint64_t n, uint64_t m, bool b, uint8_t (*path)[32],
		     size_t *plen)
{
	uint8_t h[32];
	uint64_t k;

	if (m == n) {
		if (!b) {
			fctl_audit_mth(d, n, h);
			put(path, plen, h);
		}
		return;
	}
	k = split(n);
	if (m <= k) {
		subproof(d, k, m, b, path, plen);
		fctl_audit_mth(d + k, n - k, h);
	} else {
		subproof(d + k, n - k, m - k, false, path, plen);
		fctl_audit_mth(d, k, h);
	}
	put(path, plen, h);
}

int fctl_audit_consistency_proof(const uint8_t (*leaves)[32], uint64_t n, uint64_t m,
				 uint8_t (*path)[32], size_t *plen)
{
	if (m == 0 || m > n)
		return -EINVAL;
	*plen = 0;
	subproof(leaves, n, m, true, path, plen);
	return 0;
}

int fctl_audit_inclusion_check(uint64_t index, uint64_t size, const uint8_t leaf[32],
			       const uint8_t (*path)[32], size_t plen, const uint8_t root[32])
{
	uint64_t fn = index, sn = size - 1;
	uint8_t r[32];

	if (index >= size)
		return 0;
	memcpy(r, leaf, 32);
	for (size_t i = 0; i < plen; i++) {
		if (sn == 0)
			return 0;
		if ((fn & 1) || fn == sn) {
			fctl_audit_node_hash(path[i], r, r);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else {
			fctl_audit_node_hash(r, path[i], r);
		}
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && memcmp(r, root, 32) == 0;
}

int fctl_audit_consistency_check(uint64_t m, uint64_t n, const uint8_t old_root[32],
				 const uint8_t root[32], const uint8_t (*path)[32], size_t plen)
{
	uint8_t fr[32], sr[32];
	uint64_t fn, sn;
	size_t i = 0;

	if (m == 0 || m > n)
		return 0;
	if (m == n)
		return plen == 0 && memcmp(old_root, root, 32) == 0;
	if (plen == 0)
		return 0;
	/* a first tree of a power of two leaves is itself the first node of the path */
	if ((m & (m - 1)) == 0) {
		memcpy(fr, old_root, 32);
	} else {
		memcpy(fr, path[0], 32);
		i = 1;
	}
	memcpy(sr, fr, 32);
	fn = m - 1;
	sn = n - 1;
	while (fn & 1) {
		fn >>= 1;
		sn >>= 1;
	}
	for (; i < plen; i++) {
		if (sn == 0)
			return 0;
		if ((fn & 1) || fn == sn) {
			fctl_audit_node_hash(path[i], fr, fr);
			fctl_audit_node_hash(path[i], sr, sr);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else {
			fctl_audit_node_hash(sr, path[i], sr);
		}
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && memcmp(fr, old_root, 32) == 0 && memcmp(sr, root, 32) == 0;
}

int fctl_audit_levels_build(const uint8_t (*leaves)[32], uint64_t n, struct fctl_audit_levels *t)
{
	memset(t, 0, sizeof(*t));
	if (n == 0)
		return -EINVAL;
	t->lv[0] = leaves;
	t->len[0] = n;
	t->n = 1;
	while (t->len[t->n - 1] > 1) {
		const uint8_t (*below)[32] = t->lv[t->n - 1];
		uint64_t bl = t->len[t->n - 1], len = (bl + 1) / 2;
		uint8_t (*up)[32];

		if (t->n > FCTL_AUDIT_PROOF_MAX || !(up = malloc((size_t)len * 32))) {
			fctl_audit_levels_release(t);
			return -ENOMEM;
		}
		for (uint64_t i = 0; i < len; i++) {
			if (2 * i + 1 < bl)
				fctl_audit_node_hash(below[2 * i], below[2 * i + 1], up[i]);
			else
				memcpy(up[i], below[2 * i], 32); /* the odd last node goes up as it is */
		}
		t->lv[t->n] = (const uint8_t(*)[32])up;
		t->len[t->n++] = len;
	}
	return 0;
}

int fctl_audit_levels_path(const struct fctl_audit_levels *t, uint64_t index, uint8_t (*path)[32],
			   size_t *plen)
{
	if (!t->n || index >= t->len[0])
		return -EINVAL;
	*plen = 0;
	for (size_t k = 0; k + 1 < t->n; k++, index >>= 1) {
		uint64_t sib = index ^ 1;

		if (sib < t->len[k])
			put(path, plen, t->lv[k][sib]);
	}
	return 0;
}

void fctl_audit_levels_release(struct fctl_audit_levels *t)
{
	if (!t)
		return;
	for (size_t k = 1; k < t->n; k++)
		free((void *)t->lv[k]);
	memset(t, 0, sizeof(*t));
}

int fctl_audit_levels_range(const struct fctl_audit_levels *t, uint64_t lo, uint64_t hi,
			    uint8_t (*nodes)[32])
{
	size_t nn = 0;

	if (!t->n || lo > hi || hi >= t->len[0])
		return -EINVAL;
	for (size_t k = 0; k + 1 < t->n; k++, lo >>= 1, hi >>= 1) {
		if (lo & 1)
			memcpy(nodes[nn++], t->lv[k][lo - 1], 32);
		if (!(hi & 1) && hi + 1 < t->len[k])
			memcpy(nodes[nn++], t->lv[k][hi + 1], 32);
	}
	return (int)nn;
}

int fctl_audit_range_check(uint64_t size, uint64_t lo, uint64_t hi, const uint8_t (*leaves)[32],
			   const uint8_t (*nodes)[32], size_t nn, const uint8_t root[32])
{
	uint8_t (*cur)[32];
	size_t used = 0;
	bool done = false;
	int ok;

	if (lo > hi || hi >= size)
		return 0;
	/* the level's known nodes lo..hi in cur[1..], room for one neighbour on each side */
	if (!(cur = malloc((size_t)(hi - lo + 3) * 32)))
		return -ENOMEM;
	memcpy(cur[1], leaves[0], (size_t)(hi - lo + 1) * 32);
	for (uint64_t w = size; w > 1; w = (w + 1) >> 1) {
		size_t a = 1, b = (size_t)(hi - lo) + 1, o = 0;

		if (lo & 1) {
			if (used == nn)
				break;
			memcpy(cur[--a], nodes[used++], 32);
			lo--;
		}
		if (!(hi & 1) && hi + 1 < w) {
			if (used == nn)
				break;
			memcpy(cur[++b], nodes[used++], 32);
			hi++;
		}
		for (size_t i = a; i <= b; i += 2, o++) {
			if (i + 1 <= b)
				fctl_audit_node_hash(cur[i], cur[i + 1], cur[1 + o]);
			else
				memmove(cur[1 + o], cur[i], 32); /* the last node of the level, alone */
		}
		lo >>= 1;
		hi >>= 1;
		if (w <= 2)
			done = true;
	}
	ok = (done || size == 1) && used == nn && lo == 0 && hi == 0 &&
	     memcmp(cur[1], root, 32) == 0;
	free(cur);
	return ok;
}
