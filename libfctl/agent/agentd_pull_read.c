// SPDX-License-Identifier: MIT
/* Pull mode's reads: the pulled profile and its signature files opened without following
 * a symlink (the kubelet's "..data" link alone excepted, checked to name a folder of the
 * pull directory itself), spooled together, and the host's approval policy checked on
 * the spool before any worker parses it (docs/approvals.md). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fctl/approvals.h"

#include "agentd_int.h"

#define PULL_MAX (4u << 20) /* the protocol's limit of a profile */
#define SIG_MAX (64u << 10)

/* The folder the pulled files are read in: DIR itself, or for a ConfigMap volume the
 * folder "..data" links to, which must be a name in DIR ("..2026_..."), not a path. */
static int data_dir(const char *dir, char *err, size_t errlen)
{
	char target[NAME_MAX + 1];
	struct stat st;
	ssize_t n;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

	if (dfd < 0) {
		fctl_set_err(err, errlen, "cannot open %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (fstatat(dfd, "..data", &st, AT_SYMLINK_NOFOLLOW) < 0)
		return dfd; /* a plain folder (a git checkout) */
	n = S_ISLNK(st.st_mode) ? readlinkat(dfd, "..data", target, sizeof(target) - 1) : -1;
	if (n <= 0 || (size_t)n >= sizeof(target) - 1 ||
	    memchr(target, '/', (size_t)n) || strncmp(target, "..", 2) != 0 ||
	    (n == 2)) {
		close(dfd);
		fctl_set_err(err, errlen, "%s/..data is not the kubelet's link to a folder of %s: "
			     "refused", dir, dir);
		return -EINVAL;
	}
	target[n] = '\0';
	fd = openat(dfd, target, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	close(dfd);
	if (fd < 0) {
		fctl_set_err(err, errlen, "%s/%s: %s", dir, target, strerror(errno));
		return -errno;
	}
	return fd;
}

/* spool.sig.d/NN-NAME: the pulled name kept, so that a refusal names the file */
static int spool_sig(const char *spool, size_t i, const char *name, const struct fctl_buf *b)
{
	char p[PATH_MAX + NAME_MAX + 16];
	int fd, r;

	snprintf(p, sizeof(p), "%s.sig.d/%02zu-%s", spool, i, name);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	r = fctl_write_all(fd, b->data, b->len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

/* whether name is a signature of file: FILE.sig, FILE.NAME.sig (a ConfigMap has no
 * folders: one key per approver) */
static bool sig_name(const char *name, const char *file)
{
	size_t l = strlen(name), f = strlen(file);

	return name[0] != '.' && l > f + 4 && strncmp(name, file, f) == 0 && name[f] == '.' &&
	       strcmp(name + l - 4, ".sig") == 0;
}

/* copies the signatures of file found in dfd (FILE.sig, FILE.NAME.sig, FILE.sig.d/ *.sig)
 * beside the spool; a symlinked one is skipped (it does not count: the check says none) */
static int spool_sigs(int dfd, const char *file, const char *spool)
{
	char d[PATH_MAX + 16], sd[NAME_MAX + 1];
	size_t n = 0;
	int r = 0;

	snprintf(d, sizeof(d), "%s.sig.d", spool);
	if (mkdir(d, 0700) < 0)
		return -errno;
	snprintf(sd, sizeof(sd), "%s.sig.d", file);
	for (int pass = 0; pass < 2 && r == 0; pass++) {
		int fd = pass ? openat(dfd, sd, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
			      : dup(dfd);
		DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *e;

		if (!dir) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		while (r == 0 && n < FCTL_APPROVALS_MAX_SIGS && (e = readdir(dir))) {
			struct fctl_buf b = { 0 };
			size_t l = strlen(e->d_name);
			bool want = pass ? e->d_name[0] != '.' && l > 4 &&
						   strcmp(e->d_name + l - 4, ".sig") == 0
					 : sig_name(e->d_name, file);

			if (want && fctl_approvals_read_at(dirfd(dir), e->d_name, SIG_MAX, &b) == 0)
				r = spool_sig(spool, n++, e->d_name, &b);
			fctl_buf_release(&b);
		}
		closedir(dir);
	}
	return r;
}

int fctl_agentd_pull_read(const char *dir, const char *file, struct fctl_buf *b, char *err,
			  size_t errlen)
{
	int dfd = data_dir(dir, err, errlen), r;

	if (dfd < 0)
		return dfd;
	r = fctl_approvals_read_at(dfd, file, PULL_MAX, b);
	close(dfd);
	if (r == -ELOOP || r == -EINVAL)
		fctl_set_err(err, errlen, "%s/%s is %s: refused (pull mode opens its file without "
			     "following links)", dir, file, r == -ELOOP ? "a symlink" : "not a regular file");
	else if (r < 0)
		fctl_set_err(err, errlen, "cannot read %s/%s: %s", dir, file, strerror(-r));
	return r;
}

int fctl_agentd_pull_approve(const char *dir, const char *file, const char *spool,
			     const struct fctl_buf *b, char *err, size_t errlen)
{
	struct fctl_approval_policy pol = { 0 };
	struct fctl_approvals ap = { 0 };
	struct fctl_buf t = { 0 };
	const char *conf = getenv("FCTL_APPROVALS_CONF");
	char e[512];
	int dfd, r;

	r = fctl_approval_policy_load(conf && *conf ? conf : NULL, &pol, e, sizeof(e));
	if (r < 0) {
		fctl_set_err(err, errlen, "the approval policy cannot be read: %s", e);
		return r;
	}
	dfd = data_dir(dir, err, errlen);
	if (dfd < 0)
		return dfd;
	r = spool_sigs(dfd, file, spool);
	close(dfd);
	if (r < 0) {
		fctl_set_err(err, errlen, "cannot spool the signatures: %s", strerror(-r));
		return r;
	}
	if (pol.required == 0)
		return 0; /* no policy on this host: the signatures travel, nothing is required */
	r = fctl_approvals_check(spool, b->data ? b->data : "", b->len, &pol, time(NULL), &ap, e,
				 sizeof(e));
	if (r < 0) {
		fctl_set_err(err, errlen, "%s", e);
		return r;
	}
	if (!ap.met) {
		fctl_approvals_text(&ap, &t);
		fctl_set_err(err, errlen, "%s", t.data ? t.data : "NOT approved");
		r = -EACCES;
	}
	fctl_buf_release(&t);
	fctl_approvals_release(&ap);
	return r;
}
