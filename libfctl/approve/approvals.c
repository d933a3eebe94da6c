// SPDX-License-Identifier: MIT
/* The approval check of a profile: its signature files, each verified and matched to
 * allowed_signers, one signer counted once, the host's policy met or not. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "fctl/approvals.h"

#define SIG_MAX (64 * 1024)

int fctl_approvals_read_at(int dfd, const char *name, size_t max, struct fctl_buf *b)
{
	char chunk[8192];
	struct stat st;
	ssize_t n;
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK), r = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	while ((n = read(fd, chunk, sizeof(chunk))) > 0) {
		if (b->len + (size_t)n > max) {
			r = -EFBIG;
			break;
		}
		fctl_buf_append(b, chunk, (size_t)n);
	}
	if (n < 0)
		r = -errno;
	close(fd);
	return r < 0 ? r : b->oom ? -ENOMEM : 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int fctl_approvals_list(const char *profile_file, char ***paths, size_t *n)
{
	char p[PATH_MAX + 16], d[PATH_MAX + 16];
	char **v = NULL;
	size_t cnt = 0, cap = 0, first;
	struct stat st;
	struct dirent *e;
	DIR *dir;

	snprintf(p, sizeof(p), "%s.sig", profile_file);
	if (lstat(p, &st) == 0) {
		char **s = fctl_array_grow(&v, &cnt, &cap, sizeof(*v));

		if (!s || !(*s = strdup(p)))
			goto oom;
	}
	first = cnt;
	/* PROFILE.NAME.sig beside it: a ConfigMap has no folders, one key per approver */
	{
		const char *slash = strrchr(profile_file, '/');
		const char *base = slash ? slash + 1 : profile_file;
		size_t bl = strlen(base);

		if (slash)
			snprintf(d, sizeof(d), "%.*s", (int)(slash - profile_file), profile_file);
		else
			snprintf(d, sizeof(d), ".");
		dir = opendir(*d ? d : "/");
		while (dir && (e = readdir(dir)) && cnt < FCTL_APPROVALS_MAX_SIGS) {
			size_t l = strlen(e->d_name);
			char **s;

			if (l <= bl + 5 || strncmp(e->d_name, base, bl) != 0 ||
			    e->d_name[bl] != '.' || strcmp(e->d_name + l - 4, ".sig") != 0 ||
			    e->d_name[0] == '.')
				continue;
			s = fctl_array_grow(&v, &cnt, &cap, sizeof(*v));
			if (!s || asprintf(s, "%s/%s", *d ? d : "", e->d_name) < 0) {
				closedir(dir);
				goto oom;
			}
		}
		if (dir)
			closedir(dir);
	}
	snprintf(d, sizeof(d), "%s.sig.d", profile_file);
	dir = opendir(d);
	while (dir && (e = readdir(dir)) && cnt < FCTL_APPROVALS_MAX_SIGS) {
		size_t l = strlen(e->d_name);
		char **s;

		if (e->d_name[0] == '.' || l < 5 || strcmp(e->d_name + l - 4, ".sig") != 0)
			continue;
		s = fctl_array_grow(&v, &cnt, &cap, sizeof(*v));
		if (!s || asprintf(s, "%s/%s", d, e->d_name) < 0) {
			closedir(dir);
			goto oom;
		}
	}
	if (dir)
		closedir(dir);
	if (cnt > first)
		qsort(v + first, cnt - first, sizeof(*v), cmp_str);
	*paths = v;
	*n = cnt;
	return 0;
oom:
	fctl_approvals_list_free(v, cnt);
	return -ENOMEM;
}

void fctl_approvals_list_free(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

/* whether the namespaces= pattern list admits ns (empty: any) */
static bool ns_allowed(const char *list, const char *ns)
{
	char buf[sizeof(((struct fctl_signer *)0)->namespaces)], *save = NULL;
	bool yes = false;

	if (!*list)
		return true;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		if (*p == '!' && fnmatch(p + 1, ns, 0) == 0)
			return false;
		if (*p != '!' && fnmatch(p, ns, 0) == 0)
			yes = true;
	}
	return yes;
}

static void fmt_time(time_t t, char *out, size_t len)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* whether line s admits a signature now; else why not */
static bool signer_ok(const struct fctl_signer *s, time_t now, char *why, size_t len)
{
	char t[32];

	if (!ns_allowed(s->namespaces, FCTL_APPROVALS_NAMESPACE)) {
		snprintf(why, len, "principal %s: namespaces=\"%s\" does not include %s",
			 s->principal, s->namespaces, FCTL_APPROVALS_NAMESPACE);
		return false;
	}
	if (s->has_before && now >= s->before) {
		fmt_time(s->before, t, sizeof(t));
		snprintf(why, len, "principal %s: its key expired (valid-before %s)",
			 s->principal, t);
		return false;
	}
	if (s->has_after && now < s->after) {
		fmt_time(s->after, t, sizeof(t));
		snprintf(why, len, "principal %s: its key is not valid yet (valid-after %s)",
			 s->principal, t);
		return false;
	}
	return true;
}

/* the principal names of the file, each once */
static size_t unique_names(const struct fctl_signers *ss, const char **names)
{
	size_t n = 0;

	for (size_t i = 0; i < ss->n; i++) {
		size_t j;

		for (j = 0; j < n && strcmp(names[j], ss->v[i].principal) != 0; j++)
			;
		if (j == n)
			names[n++] = ss->v[i].principal;
	}
	return n;
}

struct match {
	const bool *adj; /* nk x np */
	size_t nk, np;
	long *owner;	 /* principal -> key, -1 */
	bool *seen;
};

/* Kuhn's augmenting path: one key stands for one principal, a principal for one key */
static bool augment(struct match *m, size_t k)
{
	for (size_t p = 0; p < m->np; p++) {
		if (!m->adj[k * m->np + p] || m->seen[p])
			continue;
		m->seen[p] = true;
		if (m->owner[p] < 0 || augment(m, (size_t)m->owner[p])) {
			m->owner[p] = (long)k;
			return true;
		}
	}
	return false;
}

/* one signature file: its digest, its signer's key and the lines that admit it now
 * (adjacency row over names); state REFUSED with a reason when none */
static void check_one(struct fctl_approval_sig *a, const void *bytes, size_t len,
		      const struct fctl_signers *ss, const char **names, size_t np, time_t now,
		      bool *row, struct fctl_sshkey *key)
{
	struct fctl_buf b = { 0 };
	struct fctl_sshsig sig;
	unsigned char md[32];
	char why[256] = "";
	bool known = false, any = false;
	int r = fctl_approvals_read_at(AT_FDCWD, a->file, SIG_MAX, &b);

	a->state = FCTL_APPROVAL_REFUSED;
	if (r < 0) {
		snprintf(a->reason, sizeof(a->reason), "cannot be read: %s",
			 r == -ELOOP || r == -EINVAL ? "not a regular file (symlinks are refused)"
			 : r == -EFBIG		     ? "larger than 64 KiB"
						     : strerror(-r));
		goto out;
	}
	EVP_Digest(b.data ? b.data : "", b.len, md, NULL, EVP_sha256(), NULL);
	snprintf(a->digest, sizeof(a->digest), "sha256:");
	fctl_format_hex(md, sizeof(md), a->digest + 7);
	r = fctl_sshsig_parse(b.data ? b.data : "", b.len, &sig, why, sizeof(why));
	if (r == 0) {
		snprintf(a->fp, sizeof(a->fp), "%s", sig.key.fp);
		r = fctl_sshsig_verify(&sig, FCTL_APPROVALS_NAMESPACE, bytes, len, why,
				       sizeof(why));
	}
	if (r < 0) {
		snprintf(a->reason, sizeof(a->reason), "%s", why);
		goto out;
	}
	*key = sig.key;
	for (size_t i = 0; i < ss->n; i++) {
		const struct fctl_signer *s = &ss->v[i];

		if (!fctl_sshkey_equal(&s->key, &sig.key))
			continue;
		if (!known)
			snprintf(a->principal, sizeof(a->principal), "%s", s->principal);
		known = true;
		if (!signer_ok(s, now, why, sizeof(why)))
			continue;
		for (size_t p = 0; p < np; p++)
			if (strcmp(names[p], s->principal) == 0)
				row[p] = any = true;
	}
	if (!known)
		snprintf(a->reason, sizeof(a->reason), "key %s is not in %s", sig.key.fp, ss->file);
	else if (!any)
		snprintf(a->reason, sizeof(a->reason), "%s", why);
	else
		a->state = FCTL_APPROVAL_COUNTED; /* for now: the matching decides */
out:
	fctl_buf_release(&b);
}

/* repeats: a key seen in an earlier valid signature; then the matching */
static int count(struct fctl_approvals *a, struct fctl_sshkey *keys, bool *adj,
		 const char **names, size_t np)
{
	long *owner = calloc(np + 1, sizeof(*owner));
	bool *seen = calloc(np + 1, sizeof(*seen));
	struct match m = { adj, a->n, np, owner, seen };

	if (!owner || !seen) {
		free(owner);
		free(seen);
		return -ENOMEM;
	}

	for (size_t i = 0; i < a->n; i++) {
		if (a->v[i].state != FCTL_APPROVAL_COUNTED)
			continue;
		for (size_t j = 0; j < i; j++) {
			if (a->v[j].state == FCTL_APPROVAL_COUNTED &&
			    fctl_sshkey_equal(&keys[i], &keys[j])) {
				a->v[i].state = FCTL_APPROVAL_REPEAT;
				snprintf(a->v[i].reason, sizeof(a->v[i].reason),
					 "same key as %s: one signer is counted once", a->v[j].file);
				memset(adj + i * np, 0, np * sizeof(bool));
				break;
			}
		}
	}
	for (size_t p = 0; p < np; p++)
		owner[p] = -1;
	for (size_t i = 0; i < a->n; i++) {
		if (a->v[i].state != FCTL_APPROVAL_COUNTED)
			continue;
		memset(seen, 0, (np + 1) * sizeof(*seen));
		if (!augment(&m, i)) {
			a->v[i].state = FCTL_APPROVAL_REPEAT;
			snprintf(a->v[i].reason, sizeof(a->v[i].reason),
				 "principal %s is counted already (signed with another key): one "
				 "signer is counted once",
				 a->v[i].principal);
		}
	}
	a->counted = 0;
	for (size_t p = 0; p < np; p++) {
		if (owner[p] >= 0) {
			snprintf(a->v[owner[p]].principal, sizeof(a->v[0].principal), "%s",
				 names[p]);
			a->counted++;
		} else {
			size_t l = strlen(a->missing);

			snprintf(a->missing + l, sizeof(a->missing) - l, "%s%s", l ? ", " : "",
				 names[p]);
		}
	}
	free(owner);
	free(seen);
	return 0;
}

int fctl_approvals_check(const char *profile_file, const void *bytes, size_t len,
			 const struct fctl_approval_policy *pol, time_t now,
			 struct fctl_approvals *out, char *err, size_t errlen)
{
	struct fctl_approvals a = { .required = pol->required };
	struct fctl_signers ss = { 0 };
	struct fctl_sshkey *keys = NULL;
	const char **names = NULL;
	char **files = NULL;
	bool *adj = NULL;
	size_t nf = 0, np;
	int r = fctl_signers_load(pol->signers, &ss, err, errlen);

	if (r < 0)
		return r;
	snprintf(a.signers_file, sizeof(a.signers_file), "%s", pol->signers);
	r = fctl_approvals_list(profile_file, &files, &nf);
	if (r < 0)
		goto out;
	r = -ENOMEM;
	names = calloc(ss.n + 1, sizeof(*names));
	a.v = calloc(nf + 1, sizeof(*a.v));
	keys = calloc(nf + 1, sizeof(*keys));
	adj = calloc((nf + 1) * (ss.n + 1), sizeof(*adj));
	if (!names || !a.v || !keys || !adj)
		goto out;
	np = unique_names(&ss, names);
	a.n = nf;
	for (size_t i = 0; i < nf; i++) {
		snprintf(a.v[i].file, sizeof(a.v[i].file), "%s", files[i]);
		check_one(&a.v[i], bytes, len, &ss, names, np, now, adj + i * np, &keys[i]);
	}
	if (count(&a, keys, adj, names, np) < 0)
		goto out;
	a.met = a.counted >= a.required;
	*out = a;
	a.v = NULL;
	r = 0;
out:
	if (r < 0)
		fctl_set_err(err, errlen, "out of memory");
	free(a.v);
	free(keys);
	free(adj);
	free(names);
	fctl_approvals_list_free(files, nf);
	fctl_signers_release(&ss);
	return r;
}

void fctl_approvals_release(struct fctl_approvals *a)
{
	if (!a)
		return;
	free(a->v);
	a->v = NULL;
	a->n = 0;
}
