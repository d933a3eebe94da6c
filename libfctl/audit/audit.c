// SPDX-License-Identifier: MIT
/* Audit log: hashes, the Merkle tree, record format and the group-commit writer. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "fctl/audit.h"

/* --- hashes --- */

static _Thread_local EVP_MD_CTX *hctx;
static _Thread_local EVP_MD *sha256_md;

static void sha256_parts(const void *a, size_t al, const void *b, size_t bl, const void *c,
			 size_t cl, uint8_t out[32])
{
	unsigned int n = 32;

	if (!hctx) {
		hctx = EVP_MD_CTX_new();
		sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
	}
	/* without a digest nothing can be trusted: fail hard rather than hash nothing */
	if (!hctx || !sha256_md || EVP_DigestInit_ex2(hctx, sha256_md, NULL) != 1 ||
	    (al && EVP_DigestUpdate(hctx, a, al) != 1) || (bl && EVP_DigestUpdate(hctx, b, bl) != 1) ||
	    (cl && EVP_DigestUpdate(hctx, c, cl) != 1) || EVP_DigestFinal_ex(hctx, out, &n) != 1)
		abort();
}

void fctl_audit_leaf_hash(const void *rec, size_t len, uint8_t out[32])
{
	static const uint8_t zero = 0;

	sha256_parts(&zero, 1, rec, len, NULL, 0, out);
}

void fctl_audit_node_hash(const uint8_t left[32], const uint8_t right[32], uint8_t out[32])
{
	static const uint8_t one = 1;

	sha256_parts(&one, 1, left, 32, right, 32, out);
}

void fctl_audit_tree_init(struct fctl_audit_tree *t)
{
	memset(t, 0, sizeof(*t));
}

void fctl_audit_tree_push(struct fctl_audit_tree *t, const uint8_t leaf[32])
{
	uint8_t h[32];
	uint64_t s = t->size;

	memcpy(h, leaf, 32);
	/* each trailing 1 bit of size is a full subtree that now gets a right sibling */
	while (s & 1) {
		fctl_audit_node_hash(t->stack[--t->n], h, h);
		s >>= 1;
	}
	memcpy(t->stack[t->n++], h, 32);
	t->size++;
}

void fctl_audit_tree_root(const struct fctl_audit_tree *t, uint8_t root[32])
{
	uint8_t h[32];

	if (!t->n) {
		sha256_parts(NULL, 0, NULL, 0, NULL, 0, root);
		return;
	}
	memcpy(h, t->stack[t->n - 1], 32);
	for (unsigned int i = t->n - 1; i-- > 0;)
		fctl_audit_node_hash(t->stack[i], h, h);
	memcpy(root, h, 32);
}

/* --- records --- */

static bool is_hex_len(const char *s, size_t len)
{
	if (!s || strlen(s) != len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* What was given, for an error: quoted when it is short and printable, else only its
 * length: a value that long may be a key given by mistake (never echoed). */
static const char *given(const char *v, char *out, size_t len)
{
	size_t n = strlen(v);
	bool printable = n <= 12;

	for (size_t i = 0; printable && i < n; i++)
		printable = v[i] > 0x20 && v[i] < 0x7f && v[i] != '\'';
	if (printable)
		snprintf(out, len, "'%s'", v);
	else
		snprintf(out, len, "(%zu bytes, not shown: never give a key here)", n);
	return out;
}

int fctl_audit_entry_check(const struct fctl_audit_entry *e, char *err, size_t errlen)
{
	char g[64];

	if (!e->action || !*e->action || !e->result || !*e->result) {
		snprintf(err, errlen, "a record needs an action and a result");
		return -EINVAL;
	}
	if (e->manual && fctl_audit_manual_action_check(e->action, err, errlen) < 0)
		return -EINVAL;
	if (e->profile_sha256 && !is_hex_len(e->profile_sha256, 64)) {
		snprintf(err, errlen, "profile sha256 must be 64 lowercase hex digits");
		return -EINVAL;
	}
	if (e->n_key_ids > FCTL_AUDIT_MAX_KEYS || e->n_kcvs > FCTL_AUDIT_MAX_KEYS) {
		snprintf(err, errlen, "more than %d key ids or check values", FCTL_AUDIT_MAX_KEYS);
		return -EINVAL;
	}
	for (size_t i = 0; i < e->n_key_ids; i++) {
		if (!is_hex_len(e->key_ids[i], FCTL_AUDIT_KEYID_LEN)) {
			snprintf(err, errlen, "key id %zu %s is not %d lowercase hex digits", i + 1,
				 given(e->key_ids[i], g, sizeof(g)), FCTL_AUDIT_KEYID_LEN);
			return -EINVAL;
		}
	}
	if (e->n_approvals > FCTL_AUDIT_MAX_KEYS) {
		snprintf(err, errlen, "more than %d approvals", FCTL_AUDIT_MAX_KEYS);
		return -EINVAL;
	}
	for (size_t i = 0; i < e->n_approvals; i++) {
		const char *a = e->approvals[i];

		for (size_t k = 0; a[k]; k++) {
			if (a[k] < 0x20 || a[k] > 0x7e || a[k] == '"' || a[k] == '\\') {
				snprintf(err, errlen, "approval %zu: a printable string without "
					 "quotes or backslashes", i + 1);
				return -EINVAL;
			}
		}
		if (!*a) {
			snprintf(err, errlen, "approval %zu is empty", i + 1);
			return -EINVAL;
		}
	}
	for (size_t i = 0; i < e->n_kcvs; i++) {
		if (!is_hex_len(e->kcvs[i], FCTL_AUDIT_KCV_LEN)) {
			snprintf(err, errlen, "key check value %zu %s is not %d lowercase hex digits",
				 i + 1, given(e->kcvs[i], g, sizeof(g)), FCTL_AUDIT_KCV_LEN);
			return -EINVAL;
		}
	}
	return 0;
}

static void now_rfc3339(char out[32])
{
	struct timespec ts;
	struct tm tm;
	char s[24];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, 32, "%s.%06ldZ", s, ts.tv_nsec / 1000);
}

static void str_array(struct fctl_buf *b, const char *key, const char *const *v, size_t n)
{
	if (!n)
		return;
	fctl_buf_printf(b, ",\"%s\":[", key);
	for (size_t i = 0; i < n; i++)
		fctl_buf_printf(b, "%s\"%s\"", i ? "," : "", v[i]);
	fctl_buf_putc(b, ']');
}

static void opt_str(struct fctl_buf *b, const char *key, const char *v)
{
	if (!v)
		return;
	fctl_buf_printf(b, ",\"%s\":", key);
	fctl_audit_json_str(b, v);
}

/* Everything after "time" (which the writer adds under its lock): ,"actor":...} */
/* The user name of the last uid a handle's records named: one getpwuid_r (a read of the
 * passwd database, NSS modules included) a handle and uid, not one a record. */
struct user_cache {
	bool valid, found;
	uid_t uid;
	char name[256];
};

static const char *user_name(struct user_cache *c, uid_t uid)
{
	if (!c->valid || c->uid != uid) {
		struct passwd pw, *res = NULL;
		char pwbuf[1024];

		c->found = getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &res) == 0 && res &&
			   strlen(res->pw_name) < sizeof(c->name);
		if (c->found)
			memcpy(c->name, res->pw_name, strlen(res->pw_name) + 1);
		c->uid = uid;
		c->valid = true;
	}
	return c->found ? c->name : NULL;
}

static void format_body(struct user_cache *uc, struct fctl_buf *b, const struct fctl_audit_entry *e)
{
	fctl_buf_puts(b, ",\"actor\":{");
	if (e->actor_cert) {
		fctl_buf_puts(b, "\"cert\":");
		fctl_audit_json_str(b, e->actor_cert);
	} else {
		uid_t uid = e->has_actor_uid ? e->actor_uid : getuid();
		const char *name = user_name(uc, uid);

		fctl_buf_puts(b, "\"user\":");
		if (name)
			fctl_audit_json_str(b, name);
		else
			fctl_buf_puts(b, "null");
		fctl_buf_printf(b, ",\"uid\":%u", (unsigned int)uid);
	}
	fctl_buf_puts(b, e->manual ? "},\"manual\":true,\"action\":" : "},\"action\":");
	fctl_audit_json_str(b, e->action);
	opt_str(b, "change", e->change_id);
	opt_str(b, "host", e->host);
	opt_str(b, "link", e->link);
	opt_str(b, "secy", e->secy);
	if (e->profile_name) {
		fctl_buf_puts(b, ",\"profile\":{\"name\":");
		fctl_audit_json_str(b, e->profile_name);
		fctl_buf_printf(b, ",\"version\":%" PRIu64, e->profile_version);
		if (e->profile_sha256)
			fctl_buf_printf(b, ",\"sha256\":\"%s\"", e->profile_sha256);
		fctl_buf_putc(b, '}');
	}
	fctl_buf_puts(b, ",\"result\":");
	fctl_audit_json_str(b, e->result);
	if (e->has_counts)
		fctl_buf_printf(b, ",\"ops\":%" PRIu64 ",\"writes\":%" PRIu64, e->ops, e->writes);
	opt_str(b, "error", e->error);
	opt_str(b, "detail", e->detail);
	str_array(b, "key_ids", e->key_ids, e->n_key_ids);
	str_array(b, "kcv", e->kcvs, e->n_kcvs);
	opt_str(b, "key_state", e->key_state);
	str_array(b, "approvals", e->approvals, e->n_approvals);
	fctl_buf_putc(b, '}');
}

/* --- the writer --- */

struct fctl_audit {
	char *log;
	char *cpath;
	char *key_path;
	char *origin;
	char *actor_cert; /* the default actor (struct fctl_audit_actor) */
	bool has_actor_uid;
	uid_t actor_uid;
	int fd;     /* active file, O_APPEND */
	int lockfd; /* LOG.lock: flock serializes writers (never renamed) */
	dev_t dev;
	ino_t ino;
	uint64_t end;   /* bytes of the active file read or written */
	uint64_t lines; /* lines of the active file */
	uint64_t seq;   /* last sequence number */
	uint8_t last[32];
	struct fctl_audit_tree tree;
	struct fctl_buf pending; /* record bodies, each ending with '\n' */
	size_t n_pending;
	unsigned int batch, every;
	uint64_t rotate_bytes;
	bool syslog;
	uint64_t added;          /* records this writer added */
	uint64_t checkpointed;   /* log size at this writer's last checkpoint */
	uint64_t since_checkpoint;
	/* a torn last line found under the lock, to be repaired */
	bool torn;
	uint64_t torn_line, torn_offset, torn_len;
	struct user_cache user;
	char err[512];
};

int fctl_audit_parse_head(const char *line, size_t len, uint64_t *seq, uint8_t prev[32])
{
	static const char p1[] = "{\"seq\":", p2[] = ",\"prev\":\"";
	uint64_t v = 0;
	size_t i = sizeof(p1) - 1, d0;

	if (len < sizeof(p1) + sizeof(p2) + 66 || memcmp(line, p1, sizeof(p1) - 1) != 0 ||
	    line[len - 1] != '}')
		return -EINVAL;
	d0 = i;
	while (i < len && line[i] >= '0' && line[i] <= '9' && i - d0 < 19)
		v = v * 10 + (uint64_t)(line[i++] - '0');
	if (i == d0 || (line[d0] == '0' && i - d0 > 1) || v == 0)
		return -EINVAL;
	if (len - i < sizeof(p2) - 1 + 66 || memcmp(line + i, p2, sizeof(p2) - 1) != 0)
		return -EINVAL;
	i += sizeof(p2) - 1;
	for (int k = 0; k < 32; k++) {
		int hi, lo;
		char c1 = line[i + 2 * k], c2 = line[i + 2 * k + 1];

		hi = c1 >= '0' && c1 <= '9' ? c1 - '0' : c1 >= 'a' && c1 <= 'f' ? c1 - 'a' + 10 : -1;
		lo = c2 >= '0' && c2 <= '9' ? c2 - '0' : c2 >= 'a' && c2 <= 'f' ? c2 - 'a' + 10 : -1;
		if (hi < 0 || lo < 0)
			return -EINVAL;
		prev[k] = (uint8_t)(hi << 4 | lo);
	}
	if (line[i + 64] != '"' || line[i + 65] != ',')
		return -EINVAL;
	*seq = v;
	return 0;
}

/* The writer's actor for an entry that names no one. */
static void default_actor(const struct fctl_audit *a, struct fctl_audit_entry *e)
{
	if (e->actor_cert || e->has_actor_uid)
		return;
	e->actor_cert = a->actor_cert;
	e->has_actor_uid = a->has_actor_uid;
	e->actor_uid = a->actor_uid;
}

static int seterr(struct fctl_audit *a, int r, const char *fmt, ...) FCTL_PRINTF(3, 4);
static int seterr(struct fctl_audit *a, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->err, sizeof(a->err), fmt, ap);
	va_end(ap);
	return r;
}

/* Feeds the bytes of the active file from a->end on: records extend the chain and the
 * tree; a last line without a newline is remembered as torn. */
static int scan_fd(struct fctl_audit *a, int fd, uint64_t from, uint64_t *lines, bool last_file)
{
	struct fctl_buf b = { 0 };
	char chunk[65536];
	uint64_t off = from, line_off = from;
	ssize_t n;
	int r = 0;

	for (;;) {
		n = pread(fd, chunk, sizeof(chunk), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		off += (uint64_t)n;
		if (fctl_buf_append(&b, chunk, (size_t)n) < 0) {
			r = -ENOMEM;
			goto out;
		}
		/* consume complete lines */
		size_t start = 0;
		char *nl;

		while ((nl = memchr(b.data + start, '\n', b.len - start))) {
			size_t len = (size_t)(nl - (b.data + start));
			uint64_t seq;
			uint8_t prev[32];

			if (fctl_audit_parse_head(b.data + start, len, &seq, prev) == 0) {
				fctl_audit_leaf_hash(b.data + start, len, a->last);
				fctl_audit_tree_push(&a->tree, a->last);
				a->seq = seq;
			}
			(*lines)++;
			start += len + 1;
			line_off += len + 1;
		}
		memmove(b.data, b.data + start, b.len - start);
		b.len -= start;
	}
	a->torn = false;
	if (b.len && last_file) {
		a->torn = true;
		a->torn_line = *lines + 1;
		a->torn_offset = line_off;
		a->torn_len = b.len;
	}
	a->end = off;
out:
	fctl_buf_release(&b);
	return r;
}

static int scan_all(struct fctl_audit *a)
{
	char **files = NULL;
	size_t n = 0;
	int r;

	a->seq = 0;
	memset(a->last, 0, sizeof(a->last));
	fctl_audit_tree_init(&a->tree);
	r = fctl_audit_files(a->log, &files, &n);
	if (r < 0)
		return seterr(a, r, "cannot list the files of '%s': %s", a->log, strerror(-r));
	for (size_t i = 0; i < n && r >= 0; i++) {
		bool last = i + 1 == n;
		int fd = last ? a->fd : open(files[i], O_RDONLY | O_CLOEXEC);
		uint64_t lines = 0;

		if (fd < 0) {
			r = seterr(a, -errno, "cannot open '%s': %s", files[i], strerror(errno));
			break;
		}
		r = scan_fd(a, fd, 0, &lines, last);
		if (r < 0)
			seterr(a, r, "cannot read '%s': %s", files[i], strerror(-r));
		if (last)
			a->lines = lines;
		else
			close(fd);
	}
	fctl_audit_files_free(files, n);
	return r;
}

/* Under the lock: make the in-memory chain match the files. */
static int catch_up(struct fctl_audit *a)
{
	struct stat st;

	if (stat(a->log, &st) < 0 || st.st_dev != a->dev || st.st_ino != a->ino) {
		/* rotated by another writer (or removed): reopen and read everything */
		int fd = open(a->log, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);

		if (fd < 0 || fstat(fd, &st) < 0) {
			if (fd >= 0)
				close(fd);
			return seterr(a, -errno, "cannot open '%s': %s", a->log, strerror(errno));
		}
		if (a->fd >= 0)
			close(a->fd);
		a->fd = fd;
		a->dev = st.st_dev;
		a->ino = st.st_ino;
		return scan_all(a);
	}
	if ((uint64_t)st.st_size == a->end)
		return 0;
	if ((uint64_t)st.st_size < a->end)
		return scan_all(a); /* shrunk: not ours to judge, verify will */
	return scan_fd(a, a->fd, a->end, &a->lines, true);
}

static void format_line(struct fctl_audit *a, struct fctl_buf *out, const char *body,
			size_t blen)
{
	char hex[65], t[32];
	size_t start = out->len;

	/* the time is taken under the lock, so the log's order is the order of its times
	 * (unless the clock steps back) */
	now_rfc3339(t);
	fctl_format_hex(a->last, 32, hex);
	fctl_buf_printf(out, "{\"seq\":%" PRIu64 ",\"prev\":\"%s\",\"time\":\"%s\"", a->seq + 1,
			hex, t);
	fctl_buf_append(out, body, blen);
	fctl_audit_leaf_hash(out->data + start, out->len - start, a->last);
	fctl_audit_tree_push(&a->tree, a->last);
	fctl_buf_putc(out, '\n');
	a->seq++;
}

static int checkpoint_locked(struct fctl_audit *a);
static int rotate_locked(struct fctl_audit *a);

static int flush_locked(struct fctl_audit *a)
{
	struct fctl_buf out = { 0 };
	uint64_t nrec = 0;
	int r;

	r = catch_up(a);
	if (r < 0)
		return r;
	if (a->torn) {
		struct fctl_buf body = { 0 };
		char detail[512];
		struct fctl_audit_entry e = { .action = "log-repair", .result = "repaired" };

		/* terminate the fragment so the next record starts on a line of its own */
		fctl_buf_putc(&out, '\n');
		snprintf(detail, sizeof(detail),
			 "torn record at %s:%" PRIu64 " byte offset %" PRIu64 " (%" PRIu64
			 " bytes without a newline) was terminated; it was never confirmed",
			 a->log, a->torn_line, a->torn_offset, a->torn_len);
		e.detail = detail;
		default_actor(a, &e);
		format_body(&a->user, &body, &e);
		format_line(a, &out, body.data, body.len);
		fctl_buf_release(&body);
		nrec++;
		a->lines++;
	}
	for (size_t s = 0; s < a->pending.len;) {
		char *nl = memchr(a->pending.data + s, '\n', a->pending.len - s);
		size_t len = (size_t)(nl - (a->pending.data + s));

		format_line(a, &out, a->pending.data + s, len);
		s += len + 1;
		nrec++;
	}
	if (out.oom) {
		r = seterr(a, -ENOMEM, "out of memory");
		goto out;
	}
	if (!out.len)
		goto out;
#ifdef FCTL_TEST_HOOKS
	const char *tear = getenv("FCTL_AUDIT_TEST_TEAR");

	if (tear && out.len > 1) {
		/* test hook: write in two halves with a pause, so a kill lands mid-record; with
		 * a path, the first half is followed by that file's creation and a pause that
		 * outlasts any test (the kill comes while the record is torn, however loaded
		 * the machine) */
		size_t half = out.len / 2;

		r = fctl_write_all(a->fd, out.data, half);
		if (r == 0) {
			if (tear[0] == '/') {
				int fd = open(tear, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

				if (fd >= 0)
					close(fd);
				sleep(120);
			} else {
				usleep(200000);
			}
			r = fctl_write_all(a->fd, out.data + half, out.len - half);
		}
	} else {
		r = fctl_write_all(a->fd, out.data, out.len);
	}
#else
	r = fctl_write_all(a->fd, out.data, out.len);
#endif
	if (r == 0 && fdatasync(a->fd) < 0)
		r = -errno;
	if (r < 0) {
		/* what reached the file is unknown: read it again next time */
		a->ino = 0;
		seterr(a, r, "cannot write '%s': %s", a->log, strerror(-r));
		goto out;
	}
	a->end += out.len;
	a->lines += a->n_pending;
	a->torn = false;
	a->added += a->n_pending;
	a->since_checkpoint += nrec;
	fctl_buf_reset(&a->pending);
	a->n_pending = 0;
	if (a->every && a->since_checkpoint >= a->every && a->key_path)
		r = checkpoint_locked(a);
	if (r == 0 && a->rotate_bytes && a->end >= a->rotate_bytes)
		r = rotate_locked(a);
out:
	fctl_buf_release(&out);
	return r;
}

static int lock(struct fctl_audit *a)
{
	while (flock(a->lockfd, LOCK_EX) < 0) {
		if (errno != EINTR)
			return seterr(a, -errno, "cannot lock '%s.lock': %s", a->log, strerror(errno));
	}
	return 0;
}

static void unlock(struct fctl_audit *a)
{
	flock(a->lockfd, LOCK_UN);
}

int fctl_audit_sync(struct fctl_audit *a)
{
	int r;

	if (!a->n_pending && !a->torn)
		return 0;
	r = lock(a);
	if (r < 0)
		return r;
	r = flush_locked(a);
	unlock(a);
	return r;
}

int fctl_audit_append(struct fctl_audit *a, const struct fctl_audit_entry *e)
{
	struct fctl_audit_entry full = *e;
	int r = fctl_audit_entry_check(e, a->err, sizeof(a->err));

	if (r < 0)
		return r;
	default_actor(a, &full);
	format_body(&a->user, &a->pending, &full);
	fctl_buf_putc(&a->pending, '\n');
	if (a->pending.oom)
		return seterr(a, -ENOMEM, "out of memory");
	a->n_pending++;
	if (a->n_pending >= a->batch)
		return fctl_audit_sync(a);
	return 0;
}

static int checkpoint_locked(struct fctl_audit *a)
{
	struct fctl_buf note = { 0 };
	uint8_t root[32];
	int fd = -1, r;

	if (!a->key_path)
		return seterr(a, -ENOKEY, "no checkpoint key configured");
	fctl_audit_tree_root(&a->tree, root);
	r = fctl_audit_checkpoint_sign(a->key_path, a->origin, a->tree.size, root, &note, a->err,
				       sizeof(a->err));
	if (r < 0)
		goto out;
	fctl_buf_putc(&note, '\n'); /* a blank line ends each note */
	fd = open(a->cpath, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (fd < 0) {
		r = seterr(a, -errno, "cannot open '%s': %s", a->cpath, strerror(errno));
		goto out;
	}
	r = fctl_write_all(fd, note.data, note.len);
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	if (r < 0) {
		seterr(a, r, "cannot write '%s': %s", a->cpath, strerror(-r));
		goto out;
	}
	a->since_checkpoint = 0;
	a->checkpointed = a->tree.size;
	if (a->syslog) {
		char hex[65];

		fctl_format_hex(root, 32, hex);
		openlog("fabricctl-audit", LOG_PID, LOG_AUTHPRIV);
		/* the whole note, newlines as " | ", so a remote copy can be checked */
		for (size_t i = 0; i < note.len; i++)
			if (note.data[i] == '\n')
				note.data[i] = '|';
		syslog(LOG_NOTICE, "checkpoint size=%" PRIu64 " root=%s note=%.*s", a->tree.size, hex,
		       (int)note.len, note.data);
		closelog();
	}
out:
	if (fd >= 0)
		close(fd);
	fctl_buf_release(&note);
	return r;
}

/* Under the lock: write what is queued, read what others wrote, then step. */
static int flushed_locked(struct fctl_audit *a, int (*step)(struct fctl_audit *a))
{
	int r = lock(a);

	if (r < 0)
		return r;
	r = flush_locked(a);
	if (r == 0)
		r = catch_up(a);
	if (r == 0)
		r = step(a);
	unlock(a);
	return r;
}

int fctl_audit_checkpoint(struct fctl_audit *a)
{
	return flushed_locked(a, checkpoint_locked);
}

static int rotate_locked(struct fctl_audit *a)
{
	char **files = NULL, *dst = NULL;
	size_t n = 0;
	unsigned long next = 1;
	struct stat st;
	int fd, r;

	r = fctl_audit_files(a->log, &files, &n);
	if (r < 0)
		return seterr(a, r, "cannot list the files of '%s'", a->log);
	if (n >= 2)
		next = strtoul(files[n - 2] + strlen(a->log) + 1, NULL, 10) + 1;
	fctl_audit_files_free(files, n);
	if (asprintf(&dst, "%s.%06lu", a->log, next) < 0)
		return seterr(a, -ENOMEM, "out of memory");
	if (link(a->log, dst) < 0) { /* never replaces an existing file */
		r = seterr(a, -errno, "cannot rotate '%s' to '%s': %s", a->log, dst, strerror(errno));
		goto out;
	}
	if (unlink(a->log) < 0) {
		r = seterr(a, -errno, "cannot rotate '%s': %s", a->log, strerror(errno));
		goto out;
	}
	fd = open(a->log, O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = seterr(a, -errno, "cannot create '%s': %s", a->log, strerror(errno));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	fctl_fsync_parent(a->log); /* make the new name and the new file durable */
	close(a->fd);
	a->fd = fd;
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	a->end = 0;
	a->lines = 0;
	if (a->key_path)
		r = checkpoint_locked(a);
out:
	free(dst);
	return r;
}

int fctl_audit_rotate(struct fctl_audit *a)
{
	return flushed_locked(a, rotate_locked);
}

uint64_t fctl_audit_size(const struct fctl_audit *a)
{
	return a->tree.size;
}

const char *fctl_audit_error(const struct fctl_audit *a)
{
	return a->err;
}

int fctl_audit_open(const struct fctl_audit_opts *o, struct fctl_audit **out, char *err,
		    size_t errlen)
{
	struct fctl_audit *a = fctl_calloc(1, sizeof(*a));
	char *lockpath = NULL;
	struct stat st;
	int r;

	if (!a)
		return -ENOMEM;
	a->fd = -1;
	a->lockfd = -1;
	a->log = fctl_strdup(o->log_path ? o->log_path : FCTL_AUDIT_LOG);
	if (o->checkpoint_path)
		a->cpath = fctl_strdup(o->checkpoint_path);
	else if (a->log && asprintf(&a->cpath, "%s.checkpoints", a->log) < 0)
		a->cpath = NULL;
	a->key_path = o->key_path ? fctl_strdup(o->key_path) : NULL;
	if (o->origin) {
		a->origin = fctl_strdup(o->origin);
	} else if (a->log) {
		char origin[FCTL_AUDIT_ORIGIN_MAX];

		fctl_mkdir_parents(a->log, 0750); /* the origin names the resolved directory */
		if (fctl_audit_origin(a->log, origin, sizeof(origin)) < 0) {
			r = -ENAMETOOLONG;
			snprintf(err, errlen, "cannot name the log '%s' as a checkpoint origin", a->log);
			goto fail;
		}
		a->origin = fctl_strdup(origin);
	}
	a->batch = o->batch ? o->batch : 256;
	a->every = o->checkpoint_every;
	a->rotate_bytes = o->rotate_bytes;
	a->syslog = o->syslog;
	a->actor_cert = fctl_strdup(o->actor.cert);
	a->has_actor_uid = o->actor.has_uid;
	a->actor_uid = o->actor.uid;
	if (!a->log || !a->cpath || !a->origin || (o->key_path && !a->key_path) ||
	    (o->actor.cert && !a->actor_cert) ||
	    asprintf(&lockpath, "%s.lock", a->log) < 0) {
		lockpath = NULL;
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	r = fctl_mkdir_parents(a->log, 0750);
	if (r < 0) {
		snprintf(err, errlen, "cannot create the directory of '%s': %s", a->log, strerror(-r));
		goto fail;
	}
	a->lockfd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (a->lockfd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", lockpath, strerror(errno));
		goto fail;
	}
	r = lock(a);
	if (r < 0)
		goto fail_err;
	a->fd = open(a->log, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (a->fd < 0 || fstat(a->fd, &st) < 0) {
		r = seterr(a, -errno, "cannot open '%s': %s", a->log, strerror(errno));
		unlock(a);
		goto fail_err;
	}
	a->dev = st.st_dev;
	a->ino = st.st_ino;
	r = scan_all(a);
	if (r == 0 && a->torn)
		r = flush_locked(a); /* terminate and name the torn record now */
	unlock(a);
	if (r < 0)
		goto fail_err;
	a->checkpointed = a->tree.size;
	free(lockpath);
	*out = a;
	return 0;
fail_err:
	snprintf(err, errlen, "%s", a->err);
fail:
	free(lockpath);
	a->torn = false;
	a->n_pending = 0;
	fctl_audit_close(a);
	return r;
}

int fctl_audit_close(struct fctl_audit *a)
{
	int r = 0;

	if (!a)
		return 0;
	if (a->lockfd >= 0 && a->fd >= 0) {
		r = fctl_audit_sync(a);
		if (r == 0 && a->key_path && a->added && a->tree.size != a->checkpointed)
			r = fctl_audit_checkpoint(a);
	}
	if (a->fd >= 0)
		close(a->fd);
	if (a->lockfd >= 0)
		close(a->lockfd);
	fctl_buf_release(&a->pending);
	free(a->log);
	free(a->cpath);
	free(a->key_path);
	free(a->origin);
	free(a->actor_cert);
	free(a);
	return r;
}

int fctl_audit_peer_uid(int fd, uid_t *uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	*uid = cred.uid;
	return 0;
}
