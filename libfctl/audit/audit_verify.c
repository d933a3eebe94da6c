// SPDX-License-Identifier: MIT
/* Audit log verification: the chain, the records, the checkpoints, the tail. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit_int.h"
#include "fctl/audit.h"

/* --- verification --- */

const char *fctl_audit_finding_name(enum fctl_audit_finding_kind k)
{
	static const char *const names[] = {
		[FCTL_AUDIT_OK_NOTE] = "note",
		[FCTL_AUDIT_WARNING] = "warning",
		[FCTL_AUDIT_MODIFIED] = "modified-record",
		[FCTL_AUDIT_DELETED] = "deleted-record",
		[FCTL_AUDIT_REORDERED] = "reordered-records",
		[FCTL_AUDIT_TRUNCATED] = "cut-off-tail",
		[FCTL_AUDIT_TORN] = "torn-last-line",
		[FCTL_AUDIT_MALFORMED] = "malformed",
		[FCTL_AUDIT_BAD_SIGNATURE] = "bad-signature",
		[FCTL_AUDIT_NO_SIGNATURE] = "missing-signature",
		[FCTL_AUDIT_ROOT_MISMATCH] = "checkpoint-mismatch",
		[FCTL_AUDIT_IO] = "io-error",
		[FCTL_AUDIT_NONCANONICAL] = "non-canonical-record",
		[FCTL_AUDIT_TIME] = "time-backwards",
		[FCTL_AUDIT_UNSIGNED_TAIL] = "unsigned-tail",
		[FCTL_AUDIT_WRONG_ORIGIN] = "wrong-origin",
		[FCTL_AUDIT_INCONSISTENT] = "inconsistent-checkpoint",
		[FCTL_AUDIT_WITNESS] = "missing-cosignatures",
	};

	return (unsigned int)k < FCTL_ARRAY_SIZE(names) ? names[k] : "unknown";
}

void fctl_audit_report_add(struct fctl_audit_report *r, enum fctl_audit_finding_kind k,
			   const char *file, uint64_t line, uint64_t offset, uint64_t seq,
			   const char *fmt, ...)
{
	struct fctl_audit_finding *f;
	va_list ap;

	if (k > FCTL_AUDIT_WARNING)
		r->n_errors++;
	if (r->n >= 10000) /* enough to act on; the count stays exact */
		return;
	f = fctl_array_grow(&r->f, &r->n, &r->cap, sizeof(*r->f));
	if (!f)
		return;
	f->kind = k;
	snprintf(f->file, sizeof(f->file), "%s", file ? file : "");
	f->line = line;
	f->offset = offset;
	f->seq = seq;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
}

size_t fctl_audit_report_first_error(const struct fctl_audit_report *r)
{
	size_t k = 0;

	while (k < r->n && r->f[k].kind != FCTL_AUDIT_IO)
		k++;
	if (k < r->n)
		return k;
	for (k = 0; k < r->n && r->f[k].kind <= FCTL_AUDIT_WARNING; k++)
		;
	return k;
}

void fctl_audit_report_release(struct fctl_audit_report *r)
{
	if (!r)
		return;
	free(r->f);
	memset(r, 0, sizeof(*r));
}

int fctl_audit_report_json(const struct fctl_audit_report *r, struct fctl_buf *out)
{
	char hex[65];

	fctl_format_hex(r->root, 32, hex);
	fctl_buf_printf(out,
			"{\"ok\":%s,\"records\":%" PRIu64 ",\"files\":%" PRIu64 ",\"bytes\":%" PRIu64
			",\"checkpoints\":%" PRIu64 ",\"checkpoint_size\":%" PRIu64
			",\"root\":\"%s\",\"unsigned\":%" PRIu64 ",\"anchor\":",
			r->n_errors ? "false" : "true", r->records, r->files, r->bytes,
			r->checkpoints, r->checkpoint_size, hex, r->unsigned_records);
	fctl_buf_json_str(out, r->anchor);
	if (r->anchor && strcmp(r->anchor, "self-consistency-only") == 0)
		fctl_buf_puts(out, ",\"warning\":\"self-consistency only: checked against the key "
				   "beside the log, which proves nothing about who wrote the log\"");
	fctl_buf_puts(out, ",\"origin\":");
	fctl_audit_json_str(out, r->origin);
	if (r->trusted_size)
		fctl_buf_printf(out, ",\"trusted_size\":%" PRIu64, r->trusted_size);
	if (r->witnessed_size)
		fctl_buf_printf(out, ",\"witnessed_size\":%" PRIu64, r->witnessed_size);
	fctl_buf_printf(out, ",\"errors\":%zu,\"findings\":[", r->n_errors);
	for (size_t i = 0; i < r->n; i++) {
		const struct fctl_audit_finding *f = &r->f[i];

		fctl_buf_printf(out, "%s{\"kind\":\"%s\",\"error\":%s,\"file\":", i ? "," : "",
				fctl_audit_finding_name(f->kind),
				f->kind > FCTL_AUDIT_WARNING ? "true" : "false");
		fctl_buf_json_str(out, f->file[0] ? f->file : NULL);
		fctl_buf_printf(out, ",\"line\":%" PRIu64 ",\"offset\":%" PRIu64 ",\"seq\":%" PRIu64
				     ",\"message\":",
				f->line, f->offset, f->seq);
		fctl_buf_json_str(out, f->msg);
		fctl_buf_putc(out, '}');
	}
	fctl_buf_puts(out, "]}");
	return out->oom ? -ENOMEM : 0;
}

struct gap {
	uint64_t from, to; /* missing seqs, inclusive */
	char file[512];
	uint64_t line, offset;
};

struct vstate {
	struct fctl_audit_report *r;
	const struct fctl_audit_verify_opts *o;
	int64_t skew_us;    /* < 0: time unchecked */
	int64_t max_time;   /* the latest record time so far */
	bool have_time;
	bool keep_leaves;   /* every leaf, for the trusted checkpoint and witnesses */
	uint8_t (*leaves)[32];
	uint64_t nleaves, capleaves;
	bool oom;
	struct fctl_audit_tree tree;
	struct fctl_audit_checkpoint *cp; /* sorted by size, good signatures only */
	size_t ncp, next_cp;
	uint64_t expected;
	uint64_t max_seq;
	uint8_t prev_leaf[32];
	bool prev_in_order;
	/* where the previous record is */
	char prev_file[512];
	uint64_t prev_line, prev_offset, prev_seq;
	struct gap *gaps;
	size_t ngaps, capgaps;
	/* a line that is not a record, waiting for a log-repair record to name it */
	bool frag;
	char frag_file[512];
	uint64_t frag_line, frag_offset, frag_len;
};

static void check_checkpoints_at(struct vstate *v, const char *cpath)
{
	while (v->next_cp < v->ncp && v->cp[v->next_cp].size == v->tree.size) {
		const struct fctl_audit_checkpoint *c = &v->cp[v->next_cp++];
		uint8_t root[32];

		fctl_audit_tree_root(&v->tree, root);
		if (memcmp(root, c->root, 32) != 0)
			fctl_audit_report_add(v->r, FCTL_AUDIT_ROOT_MISMATCH, cpath, c->line, 0, c->size,
			    "checkpoint at %s:%" PRIu64 " (size %" PRIu64
			    ") does not match the recomputed root of the first %" PRIu64
			    " records: a record among them was modified, removed, inserted or "
			    "reordered, or the checkpoint was replaced",
			    cpath, c->line, c->size, c->size);
	}
}

static void frag_done(struct vstate *v, const char *line, size_t len)
{
	char *action = NULL, *detail = NULL, want[64];

	if (!v->frag)
		return;
	v->frag = false;
	snprintf(want, sizeof(want), "byte offset %" PRIu64 " (%" PRIu64 " bytes", v->frag_offset,
		 v->frag_len);
	if (line && fctl_audit_field(line, len, "action", &action) == 0 &&
	    strcmp(action, "log-repair") == 0 && fctl_audit_field(line, len, "detail", &detail) == 0 &&
	    strstr(detail, want)) {
		fctl_audit_report_add(v->r, FCTL_AUDIT_WARNING, v->frag_file, v->frag_line, v->frag_offset, 0,
		    "torn record at %s:%" PRIu64 ", byte offset %" PRIu64 " (%" PRIu64
		    " bytes): a writer was interrupted mid-append; the next writer terminated it "
		    "and recorded the repair; the record was never confirmed",
		    v->frag_file, v->frag_line, v->frag_offset, v->frag_len);
	} else {
		fctl_audit_report_add(v->r, FCTL_AUDIT_MALFORMED, v->frag_file, v->frag_line, v->frag_offset, 0,
		    "%s:%" PRIu64 ", byte offset %" PRIu64 ": not an audit record (%" PRIu64
		    " bytes): inserted or damaged",
		    v->frag_file, v->frag_line, v->frag_offset, v->frag_len);
	}
	free(action);
	free(detail);
}

static void gap_add(struct vstate *v, uint64_t from, uint64_t to, const char *file,
		    uint64_t line, uint64_t offset)
{
	struct gap *g = fctl_array_grow(&v->gaps, &v->ngaps, &v->capgaps, sizeof(*v->gaps));

	if (!g)
		return;
	g->from = from;
	g->to = to;
	snprintf(g->file, sizeof(g->file), "%s", file);
	g->line = line;
	g->offset = offset;
}

/* Takes seq out of a gap; true if it was missing there. */
static bool gap_take(struct vstate *v, uint64_t seq)
{
	for (size_t i = 0; i < v->ngaps; i++) {
		struct gap *g = &v->gaps[i];

		if (seq < g->from || seq > g->to)
			continue;
		if (g->from == g->to) {
			*g = v->gaps[--v->ngaps];
		} else if (seq == g->from) {
			g->from++;
		} else if (seq == g->to) {
			g->to--;
		} else {
			struct gap copy = *g;

			g->to = seq - 1;
			gap_add(v, seq + 1, copy.to, copy.file, copy.line, copy.offset);
		}
		return true;
	}
	return false;
}

/* The canonical form and the time rule of one record. */
static void record_rules(struct vstate *v, const char *file, uint64_t lineno, uint64_t off,
			 const char *line, size_t len, uint64_t seq)
{
	struct fctl_audit_record rec;
	char why[256];

	if (fctl_audit_record_check(line, len, &rec, why, sizeof(why)) < 0) {
		fctl_audit_report_add(v->r, FCTL_AUDIT_NONCANONICAL, file, lineno, off, seq,
				      "non-canonical record: seq %" PRIu64 " at %s:%" PRIu64 ": %s "
				      "(duplicate, reordered or unknown fields, or another spelling "
				      "of a value, are not the writer's: see docs/audit.md)",
				      seq, file, lineno, why);
		return;
	}
	if (v->skew_us >= 0 && v->have_time && rec.time_us < v->max_time - v->skew_us)
		fctl_audit_report_add(v->r, FCTL_AUDIT_TIME, file, lineno, off, seq,
				      "time goes backwards: seq %" PRIu64 " at %s:%" PRIu64 " is %.3f s "
				      "before a record above it (tolerance %.0f s)", seq, file, lineno,
				      (double)(v->max_time - rec.time_us) / 1e6,
				      (double)v->skew_us / 1e6);
	if (!v->have_time || rec.time_us > v->max_time)
		v->max_time = rec.time_us;
	v->have_time = true;
}

static void keep_leaf(struct vstate *v, const uint8_t leaf[32])
{
	if (v->nleaves == v->capleaves) {
		uint64_t cap = v->capleaves ? v->capleaves * 2 : 4096;
		void *p = realloc(v->leaves, (size_t)cap * 32);

		if (!p) {
			v->oom = true;
			return;
		}
		v->leaves = p;
		v->capleaves = cap;
	}
	memcpy(v->leaves[v->nleaves++], leaf, 32);
}

static void record(struct vstate *v, const char *file, uint64_t lineno, uint64_t off,
		   const char *line, size_t len, uint64_t seq, const uint8_t prev[32])
{
	uint8_t leaf[32];
	bool in_order = seq == v->expected;

	fctl_audit_leaf_hash(line, len, leaf);
	record_rules(v, file, lineno, off, line, len, seq);
	if (v->keep_leaves)
		keep_leaf(v, leaf);
	if (in_order) {
		if (v->prev_in_order && memcmp(prev, v->prev_leaf, 32) != 0) {
			if (v->prev_seq)
				fctl_audit_report_add(v->r, FCTL_AUDIT_MODIFIED, v->prev_file, v->prev_line,
				    v->prev_offset, v->prev_seq,
				    "modified record: seq %" PRIu64 " at %s:%" PRIu64
				    " no longer hashes to the prev recorded by seq %" PRIu64
				    " at %s:%" PRIu64,
				    v->prev_seq, v->prev_file, v->prev_line, seq, file, lineno);
			else
				fctl_audit_report_add(v->r, FCTL_AUDIT_MODIFIED, file, lineno, off, seq,
				    "modified record: seq %" PRIu64 " at %s:%" PRIu64
				    " is the first record but its prev is not zero",
				    seq, file, lineno);
		}
	} else if (seq > v->expected) {
		gap_add(v, v->expected, seq - 1, file, lineno, off);
	} else if (gap_take(v, seq)) {
		fctl_audit_report_add(v->r, FCTL_AUDIT_REORDERED, file, lineno, off, seq,
		    "reordered records: seq %" PRIu64 " at %s:%" PRIu64 " comes after seq %" PRIu64,
		    seq, file, lineno, v->max_seq);
	} else {
		fctl_audit_report_add(v->r, FCTL_AUDIT_REORDERED, file, lineno, off, seq,
		    "reordered or replayed record: seq %" PRIu64 " at %s:%" PRIu64
		    " repeats a sequence number already seen (after seq %" PRIu64 ")",
		    seq, file, lineno, v->max_seq);
	}
	if (seq > v->max_seq)
		v->max_seq = seq;
	if (seq >= v->expected)
		v->expected = seq + 1;
	v->prev_in_order = in_order;
	memcpy(v->prev_leaf, leaf, 32);
	snprintf(v->prev_file, sizeof(v->prev_file), "%s", file);
	v->prev_line = lineno;
	v->prev_offset = off;
	v->prev_seq = seq;
	fctl_audit_tree_push(&v->tree, leaf);
	v->r->records++;
}

static int cmp_cp(const void *a, const void *b)
{
	const struct fctl_audit_checkpoint *x = a, *y = b;

	return x->size < y->size ? -1 : x->size > y->size;
}

/* The origin a checkpoint must name: the expected one, or (any_origin) the first seen. */
static bool origin_ok(struct vstate *v, const char *origin)
{
	if (!v->r->origin[0] && v->o->any_origin)
		snprintf(v->r->origin, sizeof(v->r->origin), "%s", origin);
	return strcmp(origin, v->r->origin) == 0;
}

/* Loads the checkpoints into *cps (the caller's to free, even on failure) and reports the
 * missing, unsigned, badly signed and malformed ones; keeps the well-signed ones in v->cp,
 * sorted by size. */
static int take_checkpoints(struct vstate *v, const char *checkpoint_path, const char *pubkey_path,
			    struct fctl_audit_checkpoint **cps, size_t *ncps)
{
	struct fctl_audit_report *r = v->r;
	char err[512] = "";
	int rc;

	rc = fctl_audit_checkpoints_load(checkpoint_path, pubkey_path, cps, ncps, err, sizeof(err));
	if (rc == -ENOENT && !strstr(err, "public key"))
		fctl_audit_report_add(r, FCTL_AUDIT_NO_SIGNATURE, checkpoint_path, 0, 0, 0,
		    "no checkpoint file %s: the log is not anchored by any signature", checkpoint_path);
	else if (rc < 0)
		fctl_audit_report_add(r, FCTL_AUDIT_IO, checkpoint_path, 0, 0, 0, "%s", err);
	r->checkpoints = *ncps;
	/* keep good ones for the root check, report the others */
	v->cp = fctl_calloc(*ncps ? *ncps : 1, sizeof(*v->cp));
	if (!v->cp)
		return -ENOMEM;
	for (size_t i = 0; i < *ncps; i++) {
		const struct fctl_audit_checkpoint *c = &(*cps)[i];

		if (c->sig == 1 && !origin_ok(v, c->origin))
			fctl_audit_report_add(r, FCTL_AUDIT_WRONG_ORIGIN, checkpoint_path, c->line, 0,
					      c->size, "wrong origin: checkpoint at %s:%" PRIu64
					      " names the log '%s', not '%s' (a checkpoint of another "
					      "log, or the log was moved: --origin names the one to "
					      "expect)", checkpoint_path, c->line, c->origin,
					      r->origin);
		else if (c->sig == 1)
			v->cp[v->ncp++] = *c;
		else if (c->sig == 0)
			fctl_audit_report_add(r, FCTL_AUDIT_NO_SIGNATURE, checkpoint_path, c->line, 0, c->size,
			    "missing signature: checkpoint at %s:%" PRIu64 " (size %" PRIu64
			    ") has no signature by the audit key",
			    checkpoint_path, c->line, c->size);
		else if (c->sig == -1)
			fctl_audit_report_add(r, FCTL_AUDIT_BAD_SIGNATURE, checkpoint_path, c->line, 0, c->size,
			    "bad signature: checkpoint at %s:%" PRIu64 " (size %" PRIu64 "): %s",
			    checkpoint_path, c->line, c->size, c->why);
		else
			fctl_audit_report_add(r, FCTL_AUDIT_MALFORMED, checkpoint_path, c->line, 0, 0,
			    "malformed checkpoint at %s:%" PRIu64 ": %s", checkpoint_path, c->line,
			    c->why);
	}
	if (rc >= 0 && !v->ncp && *ncps == 0)
		fctl_audit_report_add(r, FCTL_AUDIT_NO_SIGNATURE, checkpoint_path, 0, 0, 0,
		    "no signed checkpoint in %s: the log is not anchored by any signature",
		    checkpoint_path);
	if (v->ncp > 1)
		qsort(v->cp, v->ncp, sizeof(*v->cp), cmp_cp);
	return 0;
}

/* Reads one log file: each record into the chain and the tree, checked against the
 * checkpoints as it goes; a line that is no record waits in v as a fragment, and a last line
 * without a newline is reported (torn if this is the active file). */
static void verify_file(struct vstate *v, const char *f, bool last_file, bool only_file,
			const char *checkpoint_path)
{
	struct fctl_audit_report *r = v->r;
	struct fctl_audit_map m;
	size_t pos = 0;
	uint64_t lineno = 0;
	int rc;

	rc = fctl_audit_map(f, &m);
	if (rc < 0) {
		if (!(rc == -ENOENT && last_file && only_file))
			fctl_audit_report_add(r, FCTL_AUDIT_IO, f, 0, 0, 0, "cannot read %s: %s", f, strerror(-rc));
		else
			fctl_audit_report_add(r, FCTL_AUDIT_IO, f, 0, 0, 0, "no audit log at %s", f);
		return;
	}
	r->files++;
	r->bytes += m.len;
	while (pos < m.len) {
		const char *line = m.p + pos, *nl = memchr(line, '\n', m.len - pos);
		size_t len = nl ? (size_t)(nl - line) : m.len - pos;
		uint64_t seq;
		uint8_t prev[32];

		lineno++;
		if (!nl) {
			frag_done(v, NULL, 0);
			if (last_file)
				fctl_audit_report_add(r, FCTL_AUDIT_TORN, f, lineno, pos, 0,
				    "torn last line at %s:%" PRIu64 ", byte offset %zu: %zu bytes "
				    "without a newline (a writer was interrupted mid-append; the "
				    "record was never confirmed)",
				    f, lineno, pos, len);
			else
				fctl_audit_report_add(r, FCTL_AUDIT_MALFORMED, f, lineno, pos, 0,
				    "%s:%" PRIu64 ", byte offset %zu: the file ends without a "
				    "newline but is not the active file",
				    f, lineno, pos);
			pos = m.len;
			break;
		}
		if (fctl_audit_parse_head(line, len, &seq, prev) == 0) {
			frag_done(v, line, len);
			record(v, f, lineno, pos, line, len, seq, prev);
			check_checkpoints_at(v, checkpoint_path);
		} else {
			frag_done(v, NULL, 0);
			v->frag = true;
			snprintf(v->frag_file, sizeof(v->frag_file), "%s", f);
			v->frag_line = lineno;
			v->frag_offset = pos;
			v->frag_len = len;
		}
		pos += len + 1;
	}
	fctl_audit_unmap(&m);
}

/* Reports the sequence gaps left open: records deleted from the log. */
static void report_gaps(const struct vstate *v)
{
	for (size_t i = 0; i < v->ngaps; i++) {
		const struct gap *g = &v->gaps[i];

		if (g->from == g->to)
			fctl_audit_report_add(v->r, FCTL_AUDIT_DELETED, g->file, g->line, g->offset, g->from,
			    "deleted record: seq %" PRIu64 " is missing before %s:%" PRIu64, g->from,
			    g->file, g->line);
		else
			fctl_audit_report_add(v->r, FCTL_AUDIT_DELETED, g->file, g->line, g->offset, g->from,
			    "deleted records: seq %" PRIu64 "..%" PRIu64 " are missing before %s:%" PRIu64,
			    g->from, g->to, g->file, g->line);
	}
}

/* Compares the log's record count with the latest signed checkpoint: fewer records is a
 * cut-off tail, more an unsigned tail (an error unless allowed: nothing vouches for it). */
static void check_latest(struct vstate *v, const struct fctl_audit_checkpoint *latest,
			 const char *log_path, const char *checkpoint_path)
{
	struct fctl_audit_report *r = v->r;

	if (!latest) {
		r->unsigned_records = v->tree.size;
		return; /* reported as missing-signature */
	}
	r->checkpoint_size = latest->size;
	if (latest->size > v->tree.size)
		fctl_audit_report_add(r, FCTL_AUDIT_TRUNCATED, checkpoint_path, latest->line, 0, latest->size,
		    "cut-off tail: the log holds %" PRIu64 " records but the checkpoint at "
		    "%s:%" PRIu64 " covers %" PRIu64 " (%" PRIu64 " records missing)",
		    v->tree.size, checkpoint_path, latest->line, latest->size,
		    latest->size - v->tree.size);
	if (latest->size >= v->tree.size)
		return;
	r->unsigned_records = v->tree.size - latest->size;
	fctl_audit_report_add(r, v->o->allow_unsigned_tail ? FCTL_AUDIT_WARNING :
			      FCTL_AUDIT_UNSIGNED_TAIL, log_path, 0, 0, latest->size + 1,
			      "unsigned tail: records %" PRIu64 "..%" PRIu64 " (%" PRIu64 ") are "
			      "past the latest signed checkpoint (size %" PRIu64 "): nothing vouches "
			      "for them (anyone who can write the log could have rewritten them)%s",
			      latest->size + 1, v->tree.size, r->unsigned_records, latest->size,
			      v->o->allow_unsigned_tail ? "; accepted by --allow-unsigned-tail" :
			      "; --allow-unsigned-tail accepts them");
}

/* The anchors checked once every record was read. */
static void check_anchors(struct vstate *v, const char *pub)
{
	struct fctl_audit_seen seen = {
		.leaves = (const uint8_t(*)[32])v->leaves, .n = v->nleaves,
		.pubkey_path = pub, .origin = v->r->origin,
	};

	if (v->oom) {
		fctl_audit_report_add(v->r, FCTL_AUDIT_IO, v->o->log_path, 0, 0, 0,
				      "out of memory for the leaf hashes");
		return;
	}
	if (v->o->trusted_checkpoint)
		fctl_audit_check_trusted(v->o, &seen, v->r);
	if (v->o->n_witness_pubs || v->o->witnesses)
		fctl_audit_check_witnesses(v->o, &seen, v->r);
}

/* The expected origin into r->origin; the key, checkpoints in *pub, *cpath (malloc'd). */
static int verify_setup(const struct fctl_audit_verify_opts *o, struct fctl_audit_report *r,
			char **pub, char **cpath)
{
	if (o->origin)
		snprintf(r->origin, sizeof(r->origin), "%s", o->origin);
	else if (!o->any_origin && fctl_audit_origin(o->log_path, r->origin, sizeof(r->origin)) < 0)
		return -ENAMETOOLONG;
	*pub = o->pubkey_path ? fctl_strdup(o->pubkey_path) : fctl_audit_beside(o->log_path,
										 "audit.pub");
	*cpath = NULL;
	if (o->checkpoint_path)
		*cpath = fctl_strdup(o->checkpoint_path);
	else if (asprintf(cpath, "%s.checkpoints", o->log_path) < 0)
		*cpath = NULL;
	return *pub && *cpath ? 0 : -ENOMEM;
}

int fctl_audit_verify_with(const struct fctl_audit_verify_opts *o, struct fctl_audit_report *r)
{
	struct vstate v = { .r = r, .o = o, .expected = 1, .prev_in_order = true };
	struct fctl_audit_checkpoint *cps = NULL;
	char **files = NULL, *pub = NULL, *cpath = NULL;
	size_t ncps = 0, nfiles = 0;
	int rc;

	memset(r, 0, sizeof(*r));
	fctl_audit_tree_init(&v.tree);
	v.skew_us = o->time_skew_us ? o->time_skew_us : FCTL_AUDIT_TIME_SKEW_US;
	v.keep_leaves = o->trusted_checkpoint || o->n_witness_pubs || o->witnesses;
	rc = verify_setup(o, r, &pub, &cpath);
	if (rc == 0)
		rc = take_checkpoints(&v, cpath, pub, &cps, &ncps);
	if (rc < 0)
		goto out;
	rc = fctl_audit_files(o->log_path, &files, &nfiles);
	if (rc < 0) {
		fctl_audit_report_add(r, FCTL_AUDIT_IO, o->log_path, 0, 0, 0,
				      "cannot list the log files: %s", strerror(-rc));
		goto out;
	}
	check_checkpoints_at(&v, cpath); /* a checkpoint of the empty log */
	for (size_t i = 0; i < nfiles; i++)
		verify_file(&v, files[i], i + 1 == nfiles, nfiles == 1, cpath);
	frag_done(&v, NULL, 0);
	report_gaps(&v);
	fctl_audit_tree_root(&v.tree, r->root);
	check_latest(&v, v.ncp ? &v.cp[v.ncp - 1] : NULL, o->log_path, cpath);
	check_anchors(&v, pub);
	rc = 0;
out:
	fctl_audit_files_free(files, nfiles);
	free(v.gaps);
	free(v.cp);
	free(v.leaves);
	free(cps);
	free(pub);
	free(cpath);
	return rc;
}

int fctl_audit_verify(const char *log_path, const char *checkpoint_path, const char *pubkey_path,
		      struct fctl_audit_report *r)
{
	struct fctl_audit_verify_opts o = {
		.log_path = log_path, .checkpoint_path = checkpoint_path,
		.pubkey_path = pubkey_path, .any_origin = true,
	};

	return fctl_audit_verify_with(&o, r);
}
