// SPDX-License-Identifier: MIT
/* Audit verification anchors: a checkpoint an auditor kept, and witnesses' cosignatures. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit_int.h"
#include "fctl/audit.h"

#define MAX_WITNESSES 32

void fctl_audit_check_trusted(const struct fctl_audit_verify_opts *o,
			      const struct fctl_audit_seen *s, struct fctl_audit_report *r)
{
	const char *tp = o->trusted_checkpoint;
	struct fctl_audit_checkpoint *cps = NULL, *c;
	uint8_t path[FCTL_AUDIT_PROOF_MAX][32];
	size_t n = 0, plen = 0;
	char err[512] = "";
	int rc;

	rc = fctl_audit_checkpoints_load(tp, s->pubkey_path, &cps, &n, err, sizeof(err));
	if (rc < 0 || !n) {
		fctl_audit_report_add(r, FCTL_AUDIT_IO, tp, 0, 0, 0, "trusted checkpoint: %s",
				      rc < 0 ? err : "no note in the file");
		goto out;
	}
	c = &cps[n - 1]; /* the last note of the file is the one kept */
	if (c->sig != 1) {
		fctl_audit_report_add(r, c->sig == -1 ? FCTL_AUDIT_BAD_SIGNATURE :
				      FCTL_AUDIT_NO_SIGNATURE, tp, c->line, 0, c->size,
				      "the trusted checkpoint %s (size %" PRIu64 ") is not signed by "
				      "the audit key %s: the key was replaced, or it is another "
				      "log's", tp, c->size, s->pubkey_path);
		goto out;
	}
	if (strcmp(c->origin, s->origin) != 0) {
		fctl_audit_report_add(r, FCTL_AUDIT_WRONG_ORIGIN, tp, c->line, 0, c->size,
				      "the trusted checkpoint %s names the log '%s', not '%s'", tp,
				      c->origin, s->origin);
		goto out;
	}
	r->trusted_size = c->size;
	if (c->size > s->n) {
		fctl_audit_report_add(r, FCTL_AUDIT_TRUNCATED, tp, c->line, 0, c->size,
				      "cut-off tail: the log holds %" PRIu64 " records but the "
				      "trusted checkpoint %s covers %" PRIu64 " (%" PRIu64
				      " records missing)", s->n, tp, c->size, c->size - s->n);
		goto out;
	}
	if (c->size == 0 ||
	    fctl_audit_consistency_proof(s->leaves, s->n, c->size, path, &plen) < 0 ||
	    fctl_audit_consistency_check(c->size, s->n, c->root, r->root,
					 (const uint8_t(*)[32])path, plen) != 1) {
		if (c->size == 0)
			goto out; /* the empty tree: everything extends it */
		fctl_audit_report_add(r, FCTL_AUDIT_INCONSISTENT, tp, c->line, 0, c->size,
				      "the log does not extend the trusted checkpoint %s (size %"
				      PRIu64 "): no consistency proof from it to the log's %" PRIu64
				      " records holds; records 1..%" PRIu64 " were rewritten", tp,
				      c->size, s->n, c->size);
	}
out:
	free(cps);
}

struct seen_cp {
	uint64_t size;
	uint8_t root[32];
	uint32_t mask; /* the pinned witnesses that cosigned it */
};

static int load_pubs(const struct fctl_audit_verify_opts *o, uint8_t pubs[][32],
		     struct fctl_audit_report *r)
{
	char err[512];

	if (o->n_witness_pubs > MAX_WITNESSES) {
		fctl_audit_report_add(r, FCTL_AUDIT_IO, NULL, 0, 0, 0, "more than %d witness keys",
				      MAX_WITNESSES);
		return -EINVAL;
	}
	for (size_t i = 0; i < o->n_witness_pubs; i++) {
		if (fctl_audit_ed25519_pub(o->witness_pubs[i], pubs[i], err, sizeof(err)) < 0) {
			fctl_audit_report_add(r, FCTL_AUDIT_IO, o->witness_pubs[i], 0, 0, 0, "%s",
					      err);
			return -EINVAL;
		}
	}
	return 0;
}

/* One note of the cosignatures file: which pinned witnesses cosigned its checkpoint. */
static void take_note(const struct fctl_audit_verify_opts *o, const char *note, size_t len,
		      const uint8_t pubs[][32], struct seen_cp **v, size_t *nv, size_t *cap,
		      const char *origin)
{
	char org[FCTL_AUDIT_ORIGIN_MAX];
	struct seen_cp *e = NULL;
	uint8_t root[32];
	uint64_t size;
	size_t blen, pos;

	if (fctl_audit_note_parse(note, len, &blen, org, sizeof(org), &size, root) < 0 ||
	    strcmp(org, origin) != 0)
		return;
	for (size_t i = 0; i < *nv && !e; i++)
		if ((*v)[i].size == size && !memcmp((*v)[i].root, root, 32))
			e = &(*v)[i];
	if (!e) {
		e = fctl_array_grow(v, nv, cap, sizeof(**v));
		if (!e)
			return;
		e->size = size;
		memcpy(e->root, root, 32);
	}
	for (pos = blen + 1; pos < len;) {
		const char *l = note + pos, *nl = memchr(l, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - l) : len - pos;

		for (size_t k = 0; k < o->n_witness_pubs; k++)
			if (fctl_audit_cosig_check(pubs[k], l, n, note, blen, NULL) == 1)
				e->mask |= 1u << k;
		pos += n + 1;
	}
}

static int cmp_seen(const void *a, const void *b)
{
	const struct seen_cp *x = a, *y = b;

	return x->size < y->size ? -1 : x->size > y->size;
}

/* Each cosigned checkpoint against the log: the largest one with enough cosignatures. */
static uint64_t judge(const struct fctl_audit_verify_opts *o, const struct fctl_audit_seen *s,
		      struct seen_cp *v, size_t nv, const char *cp, struct fctl_audit_report *r)
{
	struct fctl_audit_tree t;
	uint64_t at = 0, best = 0;
	uint8_t root[32];

	qsort(v, nv, sizeof(*v), cmp_seen);
	fctl_audit_tree_init(&t);
	for (size_t i = 0; i < nv; i++) {
		unsigned int k = (unsigned int)__builtin_popcount(v[i].mask);

		if (!k)
			continue;
		if (v[i].size > s->n) {
			fctl_audit_report_add(r, FCTL_AUDIT_TRUNCATED, cp, 0, 0, v[i].size,
					      "cut-off tail: a checkpoint cosigned by %u witness%s "
					      "covers %" PRIu64 " records but the log holds %" PRIu64,
					      k, k == 1 ? "" : "es", v[i].size, s->n);
			continue;
		}
		while (at < v[i].size)
			fctl_audit_tree_push(&t, s->leaves[at++]);
		fctl_audit_tree_root(&t, root);
		if (memcmp(root, v[i].root, 32) != 0)
			fctl_audit_report_add(r, FCTL_AUDIT_ROOT_MISMATCH, cp, 0, 0, v[i].size,
					      "a checkpoint cosigned by %u witness%s (size %" PRIu64
					      ") does not match the first %" PRIu64 " records: the log "
					      "was rewritten after they saw it", k, k == 1 ? "" : "es",
					      v[i].size, v[i].size);
		else if (k >= o->witnesses)
			best = v[i].size;
	}
	return best;
}

void fctl_audit_check_witnesses(const struct fctl_audit_verify_opts *o,
				const struct fctl_audit_seen *s, struct fctl_audit_report *r)
{
	uint8_t pubs[MAX_WITNESSES][32];
	struct fctl_buf b = { 0 };
	struct seen_cp *v = NULL;
	size_t nv = 0, cap = 0, pos = 0;
	char *cp = o->cosignatures_path ? fctl_strdup(o->cosignatures_path) : NULL;
	unsigned int need = o->witnesses ? o->witnesses : 1;
	int rc;

	if (!cp && asprintf(&cp, "%s.cosignatures", o->log_path) < 0)
		cp = NULL;
	if (!cp || load_pubs(o, pubs, r) < 0)
		goto out;
	if (need > o->n_witness_pubs) {
		fctl_audit_report_add(r, FCTL_AUDIT_WITNESS, NULL, 0, 0, 0,
				      "%u cosignatures required but only %zu witness keys pinned",
				      need, o->n_witness_pubs);
		goto out;
	}
	rc = fctl_file_read(cp, &b);
	if (rc < 0 && rc != -ENOENT) {
		fctl_audit_report_add(r, FCTL_AUDIT_IO, cp, 0, 0, 0, "cannot read %s: %s", cp,
				      strerror(-rc));
		goto out;
	}
	/* notes end with a blank line after their signature lines */
	while (pos < b.len) {
		const char *n1 = b.data + pos, *e;
		char *body_end = memmem(n1, b.len - pos, "\n\n", 2);

		if (!body_end)
			break;
		e = memmem(body_end + 2, b.len - (size_t)(body_end + 2 - b.data), "\n\n", 2);
		e = e ? e + 2 : b.data + b.len;
		take_note(o, n1, (size_t)(e - n1), (const uint8_t(*)[32])pubs, &v, &nv, &cap,
			  s->origin);
		pos = (size_t)(e - b.data);
		while (pos < b.len && b.data[pos] == '\n')
			pos++;
	}
	{
		struct fctl_audit_verify_opts q = *o;

		q.witnesses = need;
		r->witnessed_size = judge(&q, s, v, nv, cp, r);
	}
	if (!r->witnessed_size && s->n) {
		fctl_audit_report_add(r, FCTL_AUDIT_WITNESS, cp, 0, 0, 0,
				      "no checkpoint of this log has %u cosignature%s by the pinned "
				      "witnesses (in %s)", need, need == 1 ? "" : "s", cp);
	} else if (r->witnessed_size < s->n) {
		uint64_t tail = s->n - r->witnessed_size;

		if (tail > r->unsigned_records)
			r->unsigned_records = tail;
		fctl_audit_report_add(r, o->allow_unsigned_tail ? FCTL_AUDIT_WARNING :
				      FCTL_AUDIT_WITNESS, cp, 0, 0, r->witnessed_size + 1,
				      "unwitnessed tail: records %" PRIu64 "..%" PRIu64 " are past "
				      "the latest checkpoint with %u cosignature%s", r->witnessed_size + 1,
				      s->n, need, need == 1 ? "" : "s");
	}
out:
	fctl_buf_release(&b);
	free(v);
	free(cp);
}
