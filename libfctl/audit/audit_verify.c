// SPDX-License-Identifier: MIT
/* Audit log: listing and reading the files, record fields, verification. */
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

#include "fctl/audit.h"

/* --- files --- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int fctl_audit_files(const char *log_path, char ***files, size_t *n)
{
	char *dir = fctl_strdup(log_path), *slash, **v = NULL;
	const char *base;
	size_t nv = 0, cap = 0, blen;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		base = slash + 1;
	} else {
		base = dir;
	}
	blen = strlen(base);
	d = opendir(slash ? (*dir ? dir : "/") : ".");
	if (!d) {
		r = errno == ENOENT ? 0 : -errno;
		goto done;
	}
	/* rotated files: BASE.NNNNNN (six or more digits), sorted by name = by number */
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		char **slot;
		size_t k;

		if (strncmp(s, base, blen) != 0 || s[blen] != '.')
			continue;
		for (k = blen + 1; s[k] >= '0' && s[k] <= '9'; k++)
			;
		if (s[k] || k - blen - 1 != 6)
			continue;
		slot = fctl_array_grow(&v, &nv, &cap, sizeof(*v));
		if (!slot || asprintf(slot, "%s%s%s", slash ? dir : "", slash ? "/" : "", s) < 0) {
			if (slot)
				*slot = NULL;
			r = -ENOMEM;
			break;
		}
	}
	closedir(d);
	if (r < 0)
		goto done;
	if (nv > 1)
		qsort(v, nv, sizeof(*v), cmp_str);
done:
	if (r == 0) {
		char **slot = fctl_array_grow(&v, &nv, &cap, sizeof(*v));

		if (!slot || !(*slot = fctl_strdup(log_path)))
			r = -ENOMEM;
	}
	free(dir);
	if (r < 0) {
		fctl_audit_files_free(v, nv);
		return r;
	}
	*files = v;
	*n = nv;
	return 0;
}

void fctl_audit_files_free(char **files, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(files[i]);
	free(files);
}

struct map {
	const char *p;
	void *base;
	size_t len;
};

static int map_file(const char *path, struct map *m)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	m->p = NULL;
	m->base = NULL;
	m->len = 0;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return -errno;
	}
	if (st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);

		if (p == MAP_FAILED) {
			close(fd);
			return -errno;
		}
		madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
		m->p = p;
		m->base = p;
		m->len = (size_t)st.st_size;
	}
	close(fd);
	return 0;
}

static void unmap(struct map *m)
{
	if (m->base)
		munmap(m->base, m->len);
}

int fctl_audit_read(const char *log_path, int (*fn)(void *ctx, const char *line, size_t len),
		    void *ctx)
{
	char **files = NULL;
	size_t n = 0;
	int r = fctl_audit_files(log_path, &files, &n);

	for (size_t i = 0; r >= 0 && i < n; i++) {
		struct map m;
		size_t pos = 0;

		r = map_file(files[i], &m);
		if (r == -ENOENT && i + 1 == n) {
			r = 0;
			break;
		}
		while (r >= 0 && pos < m.len) {
			const char *nl = memchr(m.p + pos, '\n', m.len - pos);
			size_t len;
			uint64_t seq;
			uint8_t prev[32];

			if (!nl)
				break; /* torn: not a record */
			len = (size_t)(nl - (m.p + pos));
			if (fctl_audit_parse_head(m.p + pos, len, &seq, prev) == 0)
				r = fn(ctx, m.p + pos, len);
			pos += len + 1;
		}
		unmap(&m);
	}
	fctl_audit_files_free(files, n);
	return r;
}

/* --- fields --- */

static size_t skip_ws(const char *s, size_t i, size_t n)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	return i;
}

/* index just past the JSON string starting at s[i] == '"', or 0 */
static size_t skip_string(const char *s, size_t i, size_t n)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

static size_t skip_value(const char *s, size_t i, size_t n)
{
	int depth = 0;

	i = skip_ws(s, i, n);
	if (i >= n)
		return 0;
	if (s[i] == '"')
		return skip_string(s, i, n);
	if (s[i] != '{' && s[i] != '[') {
		while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']')
			i++;
		return i;
	}
	for (; i < n; i++) {
		if (s[i] == '"') {
			i = skip_string(s, i, n);
			if (!i)
				return 0;
			i--;
		} else if (s[i] == '{' || s[i] == '[') {
			depth++;
		} else if (s[i] == '}' || s[i] == ']') {
			if (--depth == 0)
				return i + 1;
		}
	}
	return 0;
}

int fctl_audit_field_raw(const char *line, size_t len, const char *key, const char **v,
			 size_t *vlen)
{
	size_t klen = strlen(key), i = skip_ws(line, 0, len);

	if (i >= len || line[i] != '{')
		return -EINVAL;
	i++;
	for (;;) {
		size_t ks, ke, vs, ve;

		i = skip_ws(line, i, len);
		if (i >= len || line[i] != '"')
			return -ENOENT;
		ks = i + 1;
		ke = skip_string(line, i, len);
		if (!ke)
			return -EINVAL;
		i = skip_ws(line, ke, len);
		if (i >= len || line[i] != ':')
			return -EINVAL;
		vs = skip_ws(line, i + 1, len);
		ve = skip_value(line, vs, len);
		if (!ve)
			return -EINVAL;
		if (ke - 1 - ks == klen && memcmp(line + ks, key, klen) == 0) {
			*v = line + vs;
			*vlen = ve - vs;
			return 0;
		}
		i = skip_ws(line, ve, len);
		if (i >= len || line[i] != ',')
			return -ENOENT;
		i++;
	}
}

static void put_utf8(struct fctl_buf *b, unsigned long c)
{
	char u[4];

	if (c < 0x80) {
		fctl_buf_putc(b, (char)c);
	} else if (c < 0x800) {
		u[0] = (char)(0xc0 | c >> 6);
		u[1] = (char)(0x80 | (c & 63));
		fctl_buf_append(b, u, 2);
	} else if (c < 0x10000) {
		u[0] = (char)(0xe0 | c >> 12);
		u[1] = (char)(0x80 | ((c >> 6) & 63));
		u[2] = (char)(0x80 | (c & 63));
		fctl_buf_append(b, u, 3);
	} else {
		u[0] = (char)(0xf0 | c >> 18);
		u[1] = (char)(0x80 | ((c >> 12) & 63));
		u[2] = (char)(0x80 | ((c >> 6) & 63));
		u[3] = (char)(0x80 | (c & 63));
		fctl_buf_append(b, u, 4);
	}
}

int fctl_audit_field(const char *line, size_t len, const char *key, char **out)
{
	struct fctl_buf b = { 0 };
	const char *v;
	size_t n;
	int r = fctl_audit_field_raw(line, len, key, &v, &n);

	if (r < 0)
		return r;
	if (n >= 2 && v[0] == '"') {
		for (size_t i = 1; i + 1 < n; i++) {
			if (v[i] != '\\') {
				fctl_buf_putc(&b, v[i]);
				continue;
			}
			i++;
			switch (v[i]) {
			case 'n':
				fctl_buf_putc(&b, '\n');
				break;
			case 't':
				fctl_buf_putc(&b, '\t');
				break;
			case 'r':
				fctl_buf_putc(&b, '\r');
				break;
			case 'b':
				fctl_buf_putc(&b, '\b');
				break;
			case 'f':
				fctl_buf_putc(&b, '\f');
				break;
			case 'u': {
				unsigned long c = 0;

				if (i + 4 >= n || sscanf(v + i + 1, "%4lx", &c) != 1)
					break;
				i += 4;
				if (c >= 0xd800 && c < 0xdc00 && i + 6 < n && v[i + 1] == '\\' &&
				    v[i + 2] == 'u') {
					unsigned long lo = 0;

					if (sscanf(v + i + 3, "%4lx", &lo) == 1 && lo >= 0xdc00 &&
					    lo < 0xe000) {
						c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
						i += 6;
					}
				}
				put_utf8(&b, c);
				break;
			}
			default:
				fctl_buf_putc(&b, v[i]);
			}
		}
		if (!b.data)
			fctl_buf_puts(&b, "");
	} else {
		fctl_buf_append(&b, v, n);
	}
	if (b.oom) {
		fctl_buf_release(&b);
		return -ENOMEM;
	}
	*out = fctl_buf_steal(&b);
	return 0;
}

int fctl_audit_parse_time(const char *s, char out[32])
{
	struct tm tm = { 0 };
	const char *e;
	long usec = 0;
	time_t t;
	char buf[24];

	if (s[0] == '@') {
		uint64_t v;

		if (fctl_parse_u64(s + 1, &v) < 0)
			return -EINVAL;
		t = (time_t)v;
	} else {
		e = strptime(s, "%Y-%m-%d", &tm);
		if (!e)
			return -EINVAL;
		if (*e == 'T' || *e == ' ') {
			e = strptime(e + 1, "%H:%M:%S", &tm);
			if (!e)
				return -EINVAL;
			if (*e == '.') {
				int digits = 0;

				for (e++; *e >= '0' && *e <= '9'; e++, digits++)
					if (digits < 6)
						usec = usec * 10 + (*e - '0');
				for (; digits < 6; digits++)
					usec *= 10;
			}
		}
		t = timegm(&tm);
		if (*e == 'Z' && !e[1]) {
			;
		} else if ((*e == '+' || *e == '-') && strlen(e) == 6 && e[3] == ':') {
			int hh = atoi(e + 1), mm = atoi(e + 4);
			long off = (hh * 60L + mm) * 60L;

			t -= *e == '+' ? off : -off;
		} else if (*e) {
			return -EINVAL;
		}
	}
	if (!gmtime_r(&t, &tm))
		return -EINVAL;
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%s.%06ldZ", buf, usec);
	return 0;
}

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
	};

	return (unsigned int)k < FCTL_ARRAY_SIZE(names) ? names[k] : "unknown";
}

static void add(struct fctl_audit_report *r, enum fctl_audit_finding_kind k, const char *file,
		uint64_t line, uint64_t offset, uint64_t seq, const char *fmt, ...)
	FCTL_PRINTF(7, 8);
static void add(struct fctl_audit_report *r, enum fctl_audit_finding_kind k, const char *file,
		uint64_t line, uint64_t offset, uint64_t seq, const char *fmt, ...)
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
			",\"root\":\"%s\",\"errors\":%zu,\"findings\":[",
			r->n_errors ? "false" : "true", r->records, r->files, r->bytes,
			r->checkpoints, r->checkpoint_size, hex, r->n_errors);
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
			add(v->r, FCTL_AUDIT_ROOT_MISMATCH, cpath, c->line, 0, c->size,
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
		add(v->r, FCTL_AUDIT_WARNING, v->frag_file, v->frag_line, v->frag_offset, 0,
		    "torn record at %s:%" PRIu64 ", byte offset %" PRIu64 " (%" PRIu64
		    " bytes): a writer was interrupted mid-append; the next writer terminated it "
		    "and recorded the repair; the record was never confirmed",
		    v->frag_file, v->frag_line, v->frag_offset, v->frag_len);
	} else {
		add(v->r, FCTL_AUDIT_MALFORMED, v->frag_file, v->frag_line, v->frag_offset, 0,
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

static void record(struct vstate *v, const char *file, uint64_t lineno, uint64_t off,
		   const char *line, size_t len, uint64_t seq, const uint8_t prev[32])
{
	uint8_t leaf[32];
	bool in_order = seq == v->expected;

	fctl_audit_leaf_hash(line, len, leaf);
	if (in_order) {
		if (v->prev_in_order && memcmp(prev, v->prev_leaf, 32) != 0) {
			if (v->prev_seq)
				add(v->r, FCTL_AUDIT_MODIFIED, v->prev_file, v->prev_line,
				    v->prev_offset, v->prev_seq,
				    "modified record: seq %" PRIu64 " at %s:%" PRIu64
				    " no longer hashes to the prev recorded by seq %" PRIu64
				    " at %s:%" PRIu64,
				    v->prev_seq, v->prev_file, v->prev_line, seq, file, lineno);
			else
				add(v->r, FCTL_AUDIT_MODIFIED, file, lineno, off, seq,
				    "modified record: seq %" PRIu64 " at %s:%" PRIu64
				    " is the first record but its prev is not zero",
				    seq, file, lineno);
		}
	} else if (seq > v->expected) {
		gap_add(v, v->expected, seq - 1, file, lineno, off);
	} else if (gap_take(v, seq)) {
		add(v->r, FCTL_AUDIT_REORDERED, file, lineno, off, seq,
		    "reordered records: seq %" PRIu64 " at %s:%" PRIu64 " comes after seq %" PRIu64,
		    seq, file, lineno, v->max_seq);
	} else {
		add(v->r, FCTL_AUDIT_REORDERED, file, lineno, off, seq,
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
		add(r, FCTL_AUDIT_NO_SIGNATURE, checkpoint_path, 0, 0, 0,
		    "no checkpoint file %s: the log is not anchored by any signature", checkpoint_path);
	else if (rc < 0)
		add(r, FCTL_AUDIT_IO, checkpoint_path, 0, 0, 0, "%s", err);
	r->checkpoints = *ncps;
	/* keep good ones for the root check, report the others */
	v->cp = fctl_calloc(*ncps ? *ncps : 1, sizeof(*v->cp));
	if (!v->cp)
		return -ENOMEM;
	for (size_t i = 0; i < *ncps; i++) {
		const struct fctl_audit_checkpoint *c = &(*cps)[i];

		if (c->sig == 1)
			v->cp[v->ncp++] = *c;
		else if (c->sig == 0)
			add(r, FCTL_AUDIT_NO_SIGNATURE, checkpoint_path, c->line, 0, c->size,
			    "missing signature: checkpoint at %s:%" PRIu64 " (size %" PRIu64
			    ") has no signature by the audit key",
			    checkpoint_path, c->line, c->size);
		else if (c->sig == -1)
			add(r, FCTL_AUDIT_BAD_SIGNATURE, checkpoint_path, c->line, 0, c->size,
			    "bad signature: checkpoint at %s:%" PRIu64 " (size %" PRIu64 "): %s",
			    checkpoint_path, c->line, c->size, c->why);
		else
			add(r, FCTL_AUDIT_MALFORMED, checkpoint_path, c->line, 0, 0,
			    "malformed checkpoint at %s:%" PRIu64 ": %s", checkpoint_path, c->line,
			    c->why);
	}
	if (rc >= 0 && !v->ncp && *ncps == 0)
		add(r, FCTL_AUDIT_NO_SIGNATURE, checkpoint_path, 0, 0, 0,
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
	struct map m;
	size_t pos = 0;
	uint64_t lineno = 0;
	int rc;

	rc = map_file(f, &m);
	if (rc < 0) {
		if (!(rc == -ENOENT && last_file && only_file))
			add(r, FCTL_AUDIT_IO, f, 0, 0, 0, "cannot read %s: %s", f, strerror(-rc));
		else
			add(r, FCTL_AUDIT_IO, f, 0, 0, 0, "no audit log at %s", f);
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
				add(r, FCTL_AUDIT_TORN, f, lineno, pos, 0,
				    "torn last line at %s:%" PRIu64 ", byte offset %zu: %zu bytes "
				    "without a newline (a writer was interrupted mid-append; the "
				    "record was never confirmed)",
				    f, lineno, pos, len);
			else
				add(r, FCTL_AUDIT_MALFORMED, f, lineno, pos, 0,
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
	unmap(&m);
}

/* Reports the sequence gaps left open: records deleted from the log. */
static void report_gaps(const struct vstate *v)
{
	for (size_t i = 0; i < v->ngaps; i++) {
		const struct gap *g = &v->gaps[i];

		if (g->from == g->to)
			add(v->r, FCTL_AUDIT_DELETED, g->file, g->line, g->offset, g->from,
			    "deleted record: seq %" PRIu64 " is missing before %s:%" PRIu64, g->from,
			    g->file, g->line);
		else
			add(v->r, FCTL_AUDIT_DELETED, g->file, g->line, g->offset, g->from,
			    "deleted records: seq %" PRIu64 "..%" PRIu64 " are missing before %s:%" PRIu64,
			    g->from, g->to, g->file, g->line);
	}
}

/* Compares the log's record count with the latest signed checkpoint: fewer records is a
 * cut-off tail, more is a warning that the newest are not yet covered. */
static void check_latest(struct vstate *v, const struct fctl_audit_checkpoint *latest,
			 const char *log_path, const char *checkpoint_path)
{
	struct fctl_audit_report *r = v->r;

	r->checkpoint_size = latest->size;
	if (latest->size > v->tree.size)
		add(r, FCTL_AUDIT_TRUNCATED, checkpoint_path, latest->line, 0, latest->size,
		    "cut-off tail: the log holds %" PRIu64 " records but the checkpoint at "
		    "%s:%" PRIu64 " covers %" PRIu64 " (%" PRIu64 " records missing)",
		    v->tree.size, checkpoint_path, latest->line, latest->size,
		    latest->size - v->tree.size);
	else if (latest->size < v->tree.size)
		add(r, FCTL_AUDIT_WARNING, log_path, 0, 0, latest->size + 1,
		    "records %" PRIu64 "..%" PRIu64
		    " are chained but not yet covered by a signed checkpoint",
		    latest->size + 1, v->tree.size);
}

int fctl_audit_verify(const char *log_path, const char *checkpoint_path, const char *pubkey_path,
		      struct fctl_audit_report *r)
{
	struct vstate v = { .r = r, .expected = 1, .prev_in_order = true };
	struct fctl_audit_checkpoint *cps = NULL;
	size_t ncps = 0;
	char **files = NULL;
	size_t nfiles = 0;
	const struct fctl_audit_checkpoint *latest = NULL;
	int rc;

	memset(r, 0, sizeof(*r));
	fctl_audit_tree_init(&v.tree);
	rc = take_checkpoints(&v, checkpoint_path, pubkey_path, &cps, &ncps);
	if (rc < 0)
		goto out;
	if (v.ncp)
		latest = &v.cp[v.ncp - 1];

	rc = fctl_audit_files(log_path, &files, &nfiles);
	if (rc < 0) {
		add(r, FCTL_AUDIT_IO, log_path, 0, 0, 0, "cannot list the log files: %s",
		    strerror(-rc));
		goto out;
	}
	check_checkpoints_at(&v, checkpoint_path); /* a checkpoint of the empty log */
	for (size_t i = 0; i < nfiles; i++)
		verify_file(&v, files[i], i + 1 == nfiles, nfiles == 1, checkpoint_path);
	frag_done(&v, NULL, 0);
	report_gaps(&v);
	fctl_audit_tree_root(&v.tree, r->root);
	if (latest)
		check_latest(&v, latest, log_path, checkpoint_path);
	rc = 0;
out:
	fctl_audit_files_free(files, nfiles);
	free(v.gaps);
	free(v.cp);
	free(cps);
	return rc;
}
