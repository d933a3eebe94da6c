// SPDX-License-Identifier: MIT
/* The apply engine: plan, journal, execute, roll back, verify, record. See engine.h. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fctl/engine.h"
#include "fctl/rotation.h"
#include "fctl/keys.h"
#include "fctl/keysrc.h"
#include "fctl/nl.h"

#define JOURNAL_MAGIC "fabricctl-journal 1"

struct eng {
	const struct fctl_engine_opts *o;
	char dir[PATH_MAX];
	char host[64];
	int lock_fd;
	struct fctl_nl *nl;
};

void fctl_apply_result_release(struct fctl_apply_result *r)
{
	if (!r)
		return;
	fctl_plan_free(r->plan);
	r->plan = NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int fctl_engine_host_name(const struct fctl_engine_opts *o, char *out, size_t len)
{
	char h[256];

	if (o->host) {
		snprintf(out, len, "%s", o->host);
		return 0;
	}
	if (gethostname(h, sizeof(h)) < 0)
		return -errno;
	h[sizeof(h) - 1] = '\0';
	h[strcspn(h, ".")] = '\0'; /* short name */
	snprintf(out, len, "%s", h);
	return 0;
}

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int eng_open(struct eng *e, const struct fctl_engine_opts *o, bool lock, bool need_nl,
		    char *err, size_t errlen)
{
	char path[PATH_MAX + 16];
	int r;

	memset(e, 0, sizeof(*e));
	e->o = o;
	e->lock_fd = -1;
	if (o->state_dir)
		snprintf(e->dir, sizeof(e->dir), "%s", o->state_dir);
	else if (o->netns)
		snprintf(e->dir, sizeof(e->dir), "%s/netns/%s", FCTL_STATE_DIR, o->netns);
	else
		snprintf(e->dir, sizeof(e->dir), "%s", FCTL_STATE_DIR);
	r = fctl_engine_host_name(o, e->host, sizeof(e->host));
	if (r < 0) {
		snprintf(err, errlen, "cannot determine the host name: %s", strerror(-r));
		return r;
	}
	if (lock) {
		r = mkdir_p(e->dir);
		if (r == 0) {
			snprintf(path, sizeof(path), "%s/history", e->dir);
			r = mkdir_p(path);
		}
		if (r < 0) {
			snprintf(err, errlen, "cannot create state directory '%s': %s", e->dir,
				 strerror(-r));
			return r;
		}
		snprintf(path, sizeof(path), "%s/lock", e->dir);
		e->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (e->lock_fd < 0 || flock(e->lock_fd, LOCK_EX | LOCK_NB) < 0) {
			r = -errno;
			snprintf(err, errlen,
				 r == -EWOULDBLOCK ? "another fabricctl is applying on this host "
						     "(lock '%s' is held)"
						   : "cannot lock '%s': %s",
				 path, strerror(-r));
			if (e->lock_fd >= 0)
				close(e->lock_fd);
			e->lock_fd = -1;
			return r == -EWOULDBLOCK ? -EBUSY : r;
		}
	}
	if (need_nl) {
		r = fctl_nl_open(o->netns, &e->nl);
		if (r < 0) {
			snprintf(err, errlen, "cannot open netlink%s%s: %s",
				 o->netns ? " in netns " : "", o->netns ? o->netns : "",
				 strerror(-r));
			if (e->lock_fd >= 0)
				close(e->lock_fd);
			e->lock_fd = -1;
			return r;
		}
	}
	return 0;
}

static void eng_close(struct eng *e)
{
	fctl_nl_close(e->nl);
	e->nl = NULL;
	if (e->lock_fd >= 0)
		close(e->lock_fd);
	e->lock_fd = -1;
}

/* --- history --- */

static int history_read(const char *dir, struct fctl_history_entry **out, size_t *n)
{
	char path[PATH_MAX + 32], line[4096];
	struct fctl_history_entry *v = NULL;
	size_t cnt = 0, cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/history/index", dir);
	f = fopen(path, "re");
	if (!f) {
		*out = NULL;
		*n = 0;
		return errno == ENOENT ? 0 : -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		struct fctl_history_entry *h;
		char *tok[7], *save = NULL;
		int nt = 0;

		line[strcspn(line, "\n")] = '\0';
		for (char *t = strtok_r(line, "\t", &save); t && nt < 7; t = strtok_r(NULL, "\t", &save))
			tok[nt++] = t;
		if (nt != 7)
			continue;
		h = fctl_array_grow(&v, &cnt, &cap, sizeof(*h));
		if (!h)
			break;
		fctl_parse_u64(tok[0], &h->seq);
		fctl_parse_u64(tok[1], &h->version);
		snprintf(h->name, sizeof(h->name), "%s", tok[2]);
		snprintf(h->sha256, sizeof(h->sha256), "%s", tok[3]);
		snprintf(h->time, sizeof(h->time), "%s", tok[4]);
		snprintf(h->file, sizeof(h->file), "%s", tok[5]);
		snprintf(h->dir, sizeof(h->dir), "%s", tok[6]);
	}
	fclose(f);
	*out = v;
	*n = cnt;
	return 0;
}

int fctl_engine_history(const struct fctl_engine_opts *o, struct fctl_history_entry **out,
			size_t *n)
{
	struct eng e;
	char err[256];
	int r = eng_open(&e, o, false, false, err, sizeof(err));

	if (r < 0)
		return r;
	r = history_read(e.dir, out, n);
	eng_close(&e);
	return r;
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

static int read_file(const char *path, struct fctl_buf *b)
{
	char chunk[8192];
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while ((n = read(fd, chunk, sizeof(chunk))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			close(fd);
			return r;
		}
		fctl_buf_append(b, chunk, (size_t)n);
	}
	close(fd);
	return b->oom ? -ENOMEM : 0;
}

static int history_add(struct eng *e, const struct fctl_profile *p)
{
	struct fctl_history_entry *v = NULL;
	struct fctl_buf src = { 0 }, line = { 0 };
	char copy[PATH_MAX + 64], idx[PATH_MAX + 32], tbuf[32], *absdir;
	uint64_t seq = 1;
	size_t n = 0;
	time_t t = time(NULL);
	struct tm tm;
	int fd, r;

	r = history_read(e->dir, &v, &n);
	if (r < 0)
		return r;
	if (n)
		seq = v[n - 1].seq + 1;
	free(v);
	r = read_file(p->file, &src);
	if (r < 0)
		goto out;
	snprintf(copy, sizeof(copy), "%s/history/%06" PRIu64 "-v%" PRIu64 ".yaml", e->dir, seq,
		 p->version);
	fd = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_all(fd, src.data, src.len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		goto out;
	gmtime_r(&t, &tm);
	strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	absdir = realpath(p->dir, NULL);
	fctl_buf_printf(&line, "%" PRIu64 "\t%" PRIu64 "\t%s\t", seq, p->version,
			p->name ? p->name : "?");
	fctl_buf_put_hex(&line, p->sha256, 32);
	fctl_buf_printf(&line, "\t%s\t%s\t%s\n", tbuf, copy, absdir ? absdir : p->dir);
	free(absdir);
	snprintf(idx, sizeof(idx), "%s/history/index", e->dir);
	fd = open(idx, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_all(fd, line.data, line.len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
out:
	fctl_buf_release(&src);
	fctl_buf_release(&line);
	return r;
}

static int load_entry(const struct fctl_history_entry *h, struct fctl_diags *d,
		      struct fctl_profile **out)
{
	struct fctl_profile *p = NULL;
	int r = fctl_profile_load(h->file, d, &p);

	if (r < 0)
		return r;
	/* relative key ids resolve where the profile originally lived */
	free(p->dir);
	p->dir = strdup(h->dir);
	fctl_profile_validate(p, d);
	if (!p->dir || d->n_errors) {
		fctl_profile_free(p);
		return -EINVAL;
	}
	*out = p;
	return 0;
}

int fctl_engine_load_version(const struct fctl_engine_opts *o, uint64_t version,
			     struct fctl_diags *d, struct fctl_profile **out)
{
	struct fctl_history_entry *v = NULL;
	size_t n = 0;
	int r = fctl_engine_history(o, &v, &n);

	if (r < 0)
		return r;
	r = -ENOENT;
	for (size_t i = n; i-- > 0;) {
		if (version == 0 || v[i].version == version) {
			r = load_entry(&v[i], d, out);
			break;
		}
	}
	free(v);
	return r;
}

/* Desired state: the profile rendered, with the SAs that key rotation moved
 * (STATE_DIR/rotation, docs/rotation.md) where they live now. */
static int render_host(const struct eng *e, const struct fctl_profile *p,
		       struct fctl_host_state **out)
{
	char dir[PATH_MAX + 16];
	struct fctl_host_state *hs = NULL;
	int r = fctl_profile_render_host(p, e->host, &hs);

	if (r < 0)
		return r;
	snprintf(dir, sizeof(dir), "%s/rotation", e->dir);
	r = fctl_rotation_overlay(hs, dir);
	if (r < 0) {
		fctl_host_state_free(hs);
		return r;
	}
	*out = hs;
	return 0;
}

/* The last applied profile's desired state for this host: *prev (NULL when
 * nothing was applied), *owned what the caller frees. When the last applied
 * profile has the bytes of p (the re-apply, and every plan or show after an
 * apply), that is want itself: loading, validating and rendering the stored
 * copy again gives the same links, and want comes first wherever the two are
 * used together (names, restrict_live, key references). */
static void last_applied_state(struct eng *e, const struct fctl_profile *p,
			       const struct fctl_host_state *want,
			       const struct fctl_host_state **prev, struct fctl_host_state **owned)
{
	struct fctl_history_entry *v = NULL;
	struct fctl_diags d = { 0 };
	struct fctl_profile *old = NULL;
	struct fctl_host_state *hs = NULL;
	size_t n = 0;

	*prev = NULL;
	*owned = NULL;
	if (history_read(e->dir, &v, &n) < 0 || !n) {
		free(v);
		return;
	}
	if (p && want) {
		char sha[65];

		fctl_format_hex(p->sha256, 32, sha);
		if (strcmp(v[n - 1].sha256, sha) == 0) {
			*prev = want;
			free(v);
			return;
		}
	}
	if (load_entry(&v[n - 1], &d, &old) == 0) {
		if (fctl_profile_find_host(old, e->host))
			render_host(e, old, &hs);
		fctl_profile_free(old);
	}
	fctl_diags_release(&d);
	free(v);
	*prev = hs;
	*owned = hs;
}

/* --- live state --- */

struct names {
	const char **v;
	size_t n, cap;
};

static void names_add_state(struct names *nm, const struct fctl_host_state *hs)
{
	for (size_t i = 0; hs && i < hs->n_links; i++) {
		const char **slot = fctl_array_grow(&nm->v, &nm->n, &nm->cap, sizeof(*slot));

		if (slot)
			*slot = hs->links[i].name;
	}
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Sorts the names and drops duplicates: one sort, not a scan of all names per name. */
static void names_finish(struct names *nm)
{
	size_t w = 0;

	if (nm->n > 1)
		qsort(nm->v, nm->n, sizeof(*nm->v), cmp_name);
	for (size_t i = 0; i < nm->n; i++)
		if (!w || strcmp(nm->v[w - 1], nm->v[i]) != 0)
			nm->v[w++] = nm->v[i];
	nm->n = w;
}

/* An XPN SA read from the kernel has its SSCI but not its salt (never dumped). On a link
 * fabricctl made (its KEYID matched a profile's reference) the salt is the one derived
 * from that SA's KEYID, which is what re-installing it on a rollback needs. */
static void salt_from_keyids(struct fctl_macsec *m)
{
	struct fctl_sa *sa;

	if (!fctl_cipher_is_xpn(m->cipher))
		return;
	for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
		for (size_t s = 0; s <= m->n_rxsc; s++) {
			sa = s < m->n_rxsc ? &m->rxsc[s].sa[an] : &m->txsa[an];
			if (sa->present && sa->has_keyid && !sa->has_salt) {
				fctl_salt_from_keyid(sa->keyid, sa->salt);
				sa->has_salt = true;
			}
		}
	}
}

/* Gives live MACsec links the key references of the profiles that made them, matched
 * by KEYID (keys are never read back): rollback can then re-install their SAs. */
static int annotate_keys(struct fctl_host_state *live, const struct fctl_host_state *const *srcs,
			 size_t nsrc)
{
	for (size_t i = 0; i < live->n_links; i++) {
		struct fctl_macsec *m = &live->links[i].macsec;
		const struct fctl_sa *sa = NULL;

		if (live->links[i].kind != FCTL_LINK_MACSEC || m->key.backend)
			continue;
		for (unsigned an = 0; an < FCTL_MAX_AN && !sa; an++)
			if (m->txsa[an].present && m->txsa[an].has_keyid)
				sa = &m->txsa[an];
		for (size_t s = 0; s < m->n_rxsc && !sa; s++)
			for (unsigned an = 0; an < FCTL_MAX_AN && !sa; an++)
				if (m->rxsc[s].sa[an].present && m->rxsc[s].sa[an].has_keyid)
					sa = &m->rxsc[s].sa[an];
		if (!sa)
			continue;
		for (size_t k = 0; k < nsrc; k++) {
			const struct fctl_host_state *src = srcs[k];

			for (size_t j = 0; src && j < src->n_links; j++) {
				const struct fctl_macsec *sm = &src->links[j].macsec;
				uint8_t id[FCTL_KEYID_LEN];

				if (src->links[j].kind != FCTL_LINK_MACSEC || !sm->key.backend)
					continue;
				fctl_keyid_from_ref(&sm->key, id);
				if (memcmp(id, sa->keyid, sizeof(id)) != 0)
					continue;
				m->key.backend = fctl_strdup(sm->key.backend);
				m->key.id = fctl_strdup(sm->key.id);
				m->key.base = fctl_strdup(sm->key.base);
				m->key.version = sm->key.version;
				if (!m->key.backend || !m->key.id)
					return -ENOMEM;
				salt_from_keyids(m);
				goto next;
			}
		}
next:;
	}
	return 0;
}

static int read_live(struct eng *e, const struct fctl_host_state *want,
		     const struct fctl_host_state *prev, const struct fctl_host_state *extra,
		     struct fctl_host_state **out, char *err, size_t errlen)
{
	struct names nm = { 0 };
	const struct fctl_host_state *srcs[] = { want, prev, extra };
	int r;

	names_add_state(&nm, want);
	if (prev != want)
		names_add_state(&nm, prev);
	if (extra != want && extra != prev)
		names_add_state(&nm, extra);
	names_finish(&nm);
	if (!nm.n && (want || prev || extra)) {
		/* nothing managed: an empty state, without asking the kernel for everything */
		free(nm.v);
		*out = fctl_host_state_new(e->host);
		return *out ? 0 : -ENOMEM;
	}
	r = fctl_nl_read_state(e->nl, e->host, nm.n ? nm.v : NULL, nm.n, out);
	free(nm.v);
	if (r < 0) {
		snprintf(err, errlen, "cannot read live state: %s", strerror(-r));
		return r;
	}
	r = annotate_keys(*out, srcs, FCTL_ARRAY_SIZE(srcs));
	if (r < 0) {
		fctl_host_state_free(*out);
		*out = NULL;
	}
	return r;
}

/* Links whose names the plan compares but that the profile does not manage must not
 * be touched: keep only live links named in want or prev, plus their VLAN parents. */
static void restrict_live(struct fctl_host_state *live, const struct fctl_host_state *want,
			  const struct fctl_host_state *prev)
{
	size_t w = 0;

	for (size_t i = 0; i < live->n_links; i++) {
		const char *nm = live->links[i].name;

		if (fctl_host_state_find(want, nm) || fctl_host_state_find(prev, nm)) {
			if (w != i)
				live->links[w] = live->links[i];
			w++;
		} else {
			fctl_link_release(&live->links[i]);
		}
	}
	live->n_links = w;
}

/* --- execution --- */

static int env_int(const char *name)
{
	const char *v = getenv(name);
	uint64_t u;

	if (!v || fctl_parse_u64(v, &u) < 0 || u > INT_MAX)
		return -1;
	return (int)u;
}

static size_t sa_key_len(const struct fctl_op *op)
{
	return fctl_cipher_key_len(op->link.macsec.cipher);
}

static bool op_needs_key(const struct fctl_op *op)
{
	return op->kind == FCTL_OP_TXSA_ADD || op->kind == FCTL_OP_RXSA_ADD;
}

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(void *const *)a, y = (uintptr_t)*(void *const *)b;

	return (x > y) - (x < y);
}

/* keys[i] may be shared by many ops: each distinct key is freed once. */
static void free_keys(struct fctl_key **keys, size_t n)
{
	if (keys && n > 1)
		qsort(keys, n, sizeof(*keys), cmp_ptr);
	for (size_t i = 0; keys && i < n; i++)
		if (keys[i] && (i == 0 || keys[i - 1] != keys[i]))
			fctl_key_free(keys[i]);
	free(keys);
}

/* Fetches every key the plan needs, before anything is written. keys[i] for op i. */
static int fetch_keys(const struct fctl_engine_opts *o, const struct fctl_plan *plan,
		      struct fctl_key ***out, char *err, size_t errlen)
{
	const struct fctl_key_source src = { .keymgr_path = o->keymgr_path };
	struct fctl_key **keys = calloc(plan->n_ops ? plan->n_ops : 1, sizeof(*keys));
	size_t last = SIZE_MAX; /* the op that fetched the last key: most SAs share it */
	int r = 0;

	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < plan->n_ops && r == 0; i++) {
		const struct fctl_op *op = &plan->ops[i];
		char why[512];

		if (!op_needs_key(op))
			continue;
		/* the same reference is fetched once */
		for (size_t k = 0; k <= i; k++) {
			size_t j = k == 0 ? last : k - 1;
			const struct fctl_op *q;

			if (j >= i || (k > 0 && j == last))
				continue;
			q = &plan->ops[j];
			if (keys[j] && q->key.backend && op->key.backend && q->key.id && op->key.id &&
			    strcmp(q->key.backend, op->key.backend) == 0 &&
			    strcmp(q->key.id, op->key.id) == 0 && q->key.version == op->key.version &&
			    keys[j]->len == sa_key_len(op)) {
				keys[i] = keys[j];
				break;
			}
		}
		if (keys[i])
			continue;
		last = i;
		if (!op->key.backend) {
			snprintf(err, errlen,
				 "%s an %u on %s: no key reference is known for this SA (it was not "
				 "installed by a profile this host applied)",
				 fctl_op_kind_name(op->kind), op->an, op->ifname);
			r = -ENOKEY;
			break;
		}
		r = fctl_key_source_fetch(&src, &op->key, op->key.base, sa_key_len(op), &keys[i],
					  why, sizeof(why));
		if (r < 0)
			snprintf(err, errlen, "%s an %u on %s: %s", fctl_op_kind_name(op->kind),
				 op->an, op->ifname, why);
	}
	if (r < 0) {
		free_keys(keys, plan->n_ops);
		return r;
	}
	*out = keys;
	return 0;
}

static int exec_op(struct eng *e, const struct fctl_op *op, const struct fctl_key *key,
		   struct fctl_nl_err *nerr)
{
	/* the kernel refuses to delete an active SA: deactivate it first */
	if ((op->kind == FCTL_OP_TXSA_DEL || op->kind == FCTL_OP_RXSA_DEL) && op->sa.active) {
		struct fctl_op off = *op;
		int r;

		off.kind = op->kind == FCTL_OP_TXSA_DEL ? FCTL_OP_TXSA_UPD : FCTL_OP_RXSA_UPD;
		off.sa.active = false;
		r = fctl_nl_exec(e->nl, &off, NULL, 0, nerr);
		if (r < 0 && r != -ENOENT && r != -ENODEV)
			return r;
	}
	return fctl_nl_exec(e->nl, op, key ? key->bytes : NULL, key ? key->len : 0, nerr);
}

static void op_words(const struct fctl_op *op, char *out, size_t len)
{
	char sci[24];

	fctl_sci_format(op->sci, sci);
	switch (op->kind) {
	case FCTL_OP_RXSC_ADD:
	case FCTL_OP_RXSC_DEL:
	case FCTL_OP_RXSC_UPD:
		snprintf(out, len, "%s %s sci %s", fctl_op_kind_name(op->kind), op->ifname, sci);
		break;
	case FCTL_OP_RXSA_ADD:
	case FCTL_OP_RXSA_DEL:
	case FCTL_OP_RXSA_UPD:
		snprintf(out, len, "%s %s sci %s an %u", fctl_op_kind_name(op->kind), op->ifname,
			 sci, op->an);
		break;
	case FCTL_OP_TXSA_ADD:
	case FCTL_OP_TXSA_DEL:
	case FCTL_OP_TXSA_UPD:
		snprintf(out, len, "%s %s an %u", fctl_op_kind_name(op->kind), op->ifname, op->an);
		break;
	case FCTL_OP_ADDR_ADD:
	case FCTL_OP_ADDR_DEL:
		snprintf(out, len, "%s %s %s", fctl_op_kind_name(op->kind), op->ifname, op->addr);
		break;
	default:
		snprintf(out, len, "%s %s", fctl_op_kind_name(op->kind), op->ifname);
	}
}

/* Runs plan; on failure stops at the failing op. Returns 0 or the failing errno. */
static int run_plan(struct eng *e, const struct fctl_plan *plan, struct fctl_key **keys,
		    const char *phase, bool hooks, size_t *done, long *failed, char *err,
		    size_t errlen)
{
	int fail_at = hooks ? env_int("FCTL_TEST_FAIL_AT_OP") : -1;
	int crash_after = hooks ? env_int("FCTL_TEST_CRASH_AFTER_OP") : -1;

	*done = 0;
	*failed = -1;
	for (size_t i = 0; i < plan->n_ops; i++) {
		const struct fctl_op *op = &plan->ops[i];
		struct fctl_nl_err nerr = { 0 };
		char words[160];
		int r;

		if (e->o->progress)
			e->o->progress(e->o->progress_ctx, phase, i, plan->n_ops, op);
		op_words(op, words, sizeof(words));
		if ((int)i == fail_at) {
			snprintf(err, errlen, "op %zu (%s): injected failure (FCTL_TEST_FAIL_AT_OP)",
				 i + 1, words);
			*failed = (long)i;
			return -EIO;
		}
		r = exec_op(e, op, keys ? keys[i] : NULL, &nerr);
		if (r < 0) {
			snprintf(err, errlen, "op %zu (%s): %s", i + 1, words,
				 nerr.msg[0] ? nerr.msg : strerror(-r));
			*failed = (long)i;
			return r;
		}
		*done = i + 1;
		if ((int)i == crash_after)
			raise(SIGKILL);
	}
	return 0;
}

/* --- journal --- */

static void journal_path(const struct eng *e, char *out, size_t len)
{
	snprintf(out, len, "%s/journal", e->dir);
}

static int journal_begin(struct eng *e, const struct fctl_profile *p,
			 const struct fctl_host_state *before, const struct fctl_plan *plan)
{
	struct fctl_buf b = { 0 };
	char path[PATH_MAX + 16], tmp[PATH_MAX + 24];
	int fd, r;

	fctl_buf_printf(&b, "%s\nhost %s\nprofile %s\nversion %" PRIu64 "\nops %zu\n",
			JOURNAL_MAGIC, e->host, p && p->name ? p->name : "-",
			p ? p->version : 0, plan->n_ops);
	r = fctl_host_state_save(before, &b);
	if (r < 0)
		goto out;
	journal_path(e, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_all(fd, b.data, b.len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r == 0) {
		/* make the rename durable */
		fd = open(e->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	}
out:
	fctl_buf_release(&b);
	return r;
}

static int journal_end(struct eng *e)
{
	char path[PATH_MAX + 16];
	int fd;

	journal_path(e, path, sizeof(path));
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	fd = open(e->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	return 0;
}

/* Reads the prior state of an interrupted apply, or *before = NULL if none. */
static int journal_read(struct eng *e, struct fctl_host_state **before, char *err, size_t errlen)
{
	struct fctl_buf b = { 0 };
	char path[PATH_MAX + 16];
	const char *st;
	size_t used;
	int r;

	*before = NULL;
	journal_path(e, path, sizeof(path));
	r = read_file(path, &b);
	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		snprintf(err, errlen, "cannot read journal '%s': %s", path, strerror(-r));
		return r;
	}
	if (!b.data || strncmp(b.data, JOURNAL_MAGIC "\n", strlen(JOURNAL_MAGIC) + 1) != 0 ||
	    !(st = strstr(b.data, "\nstate "))) {
		snprintf(err, errlen, "journal '%s' is not a fabricctl journal; refusing to guess",
			 path);
		fctl_buf_release(&b);
		return -EINVAL;
	}
	r = fctl_host_state_load(st + 1, &used, before);
	if (r < 0)
		snprintf(err, errlen, "journal '%s' is damaged (prior state unreadable)", path);
	fctl_buf_release(&b);
	return r;
}

/* Brings the host back to `before`: plan live -> before, execute, compare. */
static int restore(struct eng *e, const struct fctl_host_state *before,
		   const struct fctl_host_state *want, struct fctl_apply_result *res)
{
	struct fctl_host_state *live = NULL, *after = NULL;
	struct fctl_plan *undo = NULL, *check = NULL;
	struct fctl_key **keys = NULL;
	char err[512] = "";
	size_t done;
	long failed;
	int r;

	r = read_live(e, before, want, NULL, &live, err, sizeof(err));
	if (r == 0) {
		restrict_live(live, before, want);
		r = fctl_plan_compute(live, before, &undo);
	}
	if (r == 0)
		r = fetch_keys(e->o, undo, &keys, err, sizeof(err));
	if (r == 0)
		r = run_plan(e, undo, keys, "rollback", false, &done, &failed, err, sizeof(err));
	if (r == 0)
		r = read_live(e, before, want, NULL, &after, err, sizeof(err));
	if (r == 0) {
		restrict_live(after, before, want);
		r = fctl_plan_compute(after, before, &check);
	}
	if (r == 0) {
		res->rolled_back = true;
		res->restored_exactly = check->n_ops == 0;
		if (check->n_ops)
			snprintf(err, sizeof(err), "%zu differences remain after rollback",
				 check->n_ops);
	}
	if (err[0]) {
		size_t l = strlen(res->error);

		snprintf(res->error + l, sizeof(res->error) - l, "%srollback: %s",
			 l ? "; " : "", err);
	}
	free_keys(keys, undo ? undo->n_ops : 0);
	fctl_plan_free(undo);
	fctl_plan_free(check);
	fctl_host_state_free(live);
	fctl_host_state_free(after);
	return r;
}

static int recover_locked(struct eng *e, const struct fctl_host_state *want,
			  struct fctl_apply_result *res)
{
	struct fctl_host_state *before = NULL;
	char err[512] = "";
	int r = journal_read(e, &before, err, sizeof(err));

	if (r < 0) {
		snprintf(res->error, sizeof(res->error), "%s", err);
		return r;
	}
	if (!before)
		return 0;
	r = restore(e, before, want, res);
	fctl_host_state_free(before);
	if (r == 0 && res->restored_exactly) {
		res->recovered = true;
		journal_end(e);
		return 1;
	}
	return r < 0 ? r : -EIO;
}

int fctl_engine_recover(const struct fctl_engine_opts *o, struct fctl_apply_result *res)
{
	struct eng e;
	int r;

	memset(res, 0, sizeof(*res));
	r = eng_open(&e, o, true, true, res->error, sizeof(res->error));
	if (r < 0)
		return r;
	snprintf(res->host, sizeof(res->host), "%s", e.host);
	r = recover_locked(&e, NULL, res);
	eng_close(&e);
	return r;
}

int fctl_engine_plan(const struct fctl_profile *p, const struct fctl_engine_opts *o,
		     struct fctl_plan **plan, struct fctl_host_state **live_out,
		     struct fctl_host_state **want_out, char *err, size_t errlen)
{
	struct fctl_host_state *want = NULL, *prev_owned = NULL, *live = NULL;
	const struct fctl_host_state *prev = NULL;
	struct eng e;
	int r;

	r = eng_open(&e, o, false, true, err, errlen);
	if (r < 0)
		return r;
	if (!fctl_profile_find_host(p, e.host)) {
		snprintf(err, errlen, "host '%s' is not in profile '%s' (use --host NAME)", e.host,
			 p->name);
		r = -ENOENT;
		goto out;
	}
	r = render_host(&e, p, &want);
	if (r == 0) {
		last_applied_state(&e, p, want, &prev, &prev_owned);
		r = read_live(&e, want, prev, NULL, &live, err, errlen);
	}
	if (r == 0) {
		restrict_live(live, want, prev);
		r = fctl_plan_compute(live, want, plan);
	}
	if (r == 0 && live_out) {
		*live_out = live;
		live = NULL;
	}
	if (r == 0 && want_out) {
		*want_out = want;
		want = NULL;
	}
out:
	fctl_host_state_free(want);
	fctl_host_state_free(prev_owned);
	fctl_host_state_free(live);
	eng_close(&e);
	return r;
}

int fctl_engine_show(const struct fctl_profile *p, const struct fctl_engine_opts *o,
		     struct fctl_host_state **live, char *err, size_t errlen)
{
	struct fctl_host_state *want = NULL, *prev_owned = NULL;
	const struct fctl_host_state *prev = NULL;
	struct eng e;
	int r = eng_open(&e, o, false, true, err, errlen);

	if (r < 0)
		return r;
	if (p && fctl_profile_find_host(p, e.host))
		render_host(&e, p, &want);
	last_applied_state(&e, p, want, &prev, &prev_owned);
	if (want || prev) {
		r = read_live(&e, want, prev, NULL, live, err, errlen);
		if (r == 0)
			restrict_live(*live, want, prev);
	} else {
		r = fctl_nl_read_state(e.nl, e.host, NULL, 0, live);
		if (r < 0)
			snprintf(err, errlen, "cannot read live state: %s", strerror(-r));
	}
	fctl_host_state_free(want);
	fctl_host_state_free(prev_owned);
	eng_close(&e);
	return r;
}

int fctl_engine_apply(const struct fctl_profile *p, const struct fctl_engine_opts *o,
		      struct fctl_apply_result *res)
{
	struct fctl_host_state *want = NULL, *prev_owned = NULL, *live = NULL, *after = NULL;
	const struct fctl_host_state *prev = NULL;
	struct fctl_plan *check = NULL;
	struct fctl_key **keys = NULL;
	struct fctl_nl_stats st;
	double t0 = now_s();
	struct eng e;
	int r;

	memset(res, 0, sizeof(*res));
	res->failed_op = -1;
	r = eng_open(&e, o, !o->dry_run, true, res->error, sizeof(res->error));
	if (r < 0)
		return r;
	snprintf(res->host, sizeof(res->host), "%s", e.host);
	if (!fctl_profile_find_host(p, e.host)) {
		snprintf(res->error, sizeof(res->error),
			 "host '%s' is not in profile '%s' (use --host NAME)", e.host, p->name);
		r = -ENOENT;
		goto out;
	}
	r = render_host(&e, p, &want);
	if (r < 0)
		goto out;
	if (!o->dry_run) {
		r = recover_locked(&e, want, res);
		if (r < 0)
			goto out;
	}
	last_applied_state(&e, p, want, &prev, &prev_owned);
	r = read_live(&e, want, prev, NULL, &live, res->error, sizeof(res->error));
	if (r < 0)
		goto out;
	restrict_live(live, want, prev);
	r = fctl_plan_compute(live, want, &res->plan);
	if (r < 0)
		goto out;
	if (o->dry_run || res->plan->n_ops == 0)
		goto record;

	/* every key first: a missing or bad key refuses the apply before any write */
	r = fetch_keys(o, res->plan, &keys, res->error, sizeof(res->error));
	if (r < 0) {
		res->refused = true;
		goto out;
	}
	/* name the keys for the audit trail by check value, never by value */
	for (size_t i = 0; i < res->plan->n_ops && res->n_kcvs < FCTL_APPLY_MAX_KCVS; i++) {
		char kcv[7];
		bool dup = false;

		if (!keys[i])
			continue;
		fctl_key_kcv_hex(keys[i], kcv);
		for (size_t k = 0; k < res->n_kcvs && !dup; k++)
			dup = strcmp(res->kcvs[k], kcv) == 0;
		if (!dup)
			memcpy(res->kcvs[res->n_kcvs++], kcv, sizeof(kcv));
	}
	r = journal_begin(&e, p, live, res->plan);
	if (r < 0) {
		snprintf(res->error, sizeof(res->error), "cannot write the journal in '%s': %s",
			 e.dir, strerror(-r));
		goto out;
	}
	r = run_plan(&e, res->plan, keys, "apply", true, &res->ops_done, &res->failed_op,
		     res->error, sizeof(res->error));
	if (r == 0) {
		/* verify from a fresh dump: the kernel holds exactly what the profile says */
		r = read_live(&e, want, prev, NULL, &after, res->error, sizeof(res->error));
		if (r == 0) {
			restrict_live(after, want, prev);
			r = fctl_plan_compute(after, want, &check);
		}
		if (r == 0 && check->n_ops) {
			snprintf(res->error, sizeof(res->error),
				 "verification failed: the live state differs from the profile in %zu "
				 "places after apply (first: %s %s)",
				 check->n_ops, fctl_op_kind_name(check->ops[0].kind),
				 check->ops[0].ifname);
			r = -EIO;
		}
	}
	if (r < 0) {
		res->failed = true;
		if (restore(&e, live, want, res) == 0 && res->restored_exactly)
			journal_end(&e);
		goto out;
	}
	journal_end(&e);
record:
	if (!o->dry_run) {
		struct fctl_history_entry *v = NULL;
		size_t n = 0;
		char sha[65];

		fctl_format_hex(p->sha256, 32, sha);
		/* record a version once per change: re-applying the same bytes adds nothing */
		history_read(e.dir, &v, &n);
		if (!n || strcmp(v[n - 1].sha256, sha) != 0) {
			int hr = history_add(&e, p);

			if (hr < 0)
				snprintf(res->error, sizeof(res->error),
					 "applied, but the history could not be written: %s",
					 strerror(-hr));
		}
		free(v);
	}
out:
	if (e.nl) {
		fctl_nl_get_stats(e.nl, &st);
		res->writes = st.writes;
		res->round_trips = st.round_trips;
	}
	res->seconds = now_s() - t0;
	free_keys(keys, res->plan ? res->plan->n_ops : 0);
	fctl_plan_free(check);
	fctl_host_state_free(want);
	fctl_host_state_free(prev_owned);
	fctl_host_state_free(live);
	fctl_host_state_free(after);
	eng_close(&e);
	if (r < 0 && !res->failed)
		res->failed = true;
	if (r < 0 && res->writes == 0 && !res->recovered)
		res->refused = true;
	return r;
}
