// SPDX-License-Identifier: MIT
/* The audit open policy: which log, which checkpoint key (made on first use), who acts. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "fctl/audit.h"

const char *fctl_audit_log_path(const char *opt, bool env)
{
	const char *v = env ? getenv("FCTL_AUDIT_LOG") : NULL;

	if (opt && *opt)
		return opt;
	return v && *v ? v : FCTL_AUDIT_LOG;
}

char *fctl_audit_beside(const char *log, const char *name)
{
	const char *slash = strrchr(log, '/');
	char *s = NULL;

	if (asprintf(&s, "%.*s%s", slash ? (int)(slash - log + 1) : 0, log, name) < 0)
		return NULL;
	return s;
}

/* First use: the key pair beside the log. Writers of other logs in the same directory
 * share the pair, so its creation is serialized on an flock of the directory. Returns
 * 1 when this call made it, 0 otherwise (exists, or cannot be made: not a failure). */
static int key_first_use(const char *log, const char *key)
{
	char *dir = fctl_audit_beside(log, ""), kerr[256];
	size_t n;
	int dfd, made = 0;

	if (!dir)
		return 0;
	n = strlen(dir);
	if (n > 1)
		dir[n - 1] = '\0'; /* no trailing slash */
	if (fctl_mkdir_parents(log, 0750) < 0)
		goto out;
	dfd = open(*dir ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		while (flock(dfd, LOCK_EX) < 0 && errno == EINTR)
			;
	if (access(key, F_OK) != 0 && fctl_audit_keygen(*dir ? dir : ".", kerr, sizeof(kerr)) == 0)
		made = 1;
	if (dfd >= 0)
		close(dfd); /* releases the lock */
out:
	free(dir);
	return made;
}

static void env_settings(struct fctl_audit_opts *o)
{
	const char *every = getenv("FCTL_AUDIT_CHECKPOINT_EVERY");
	const char *sl = getenv("FCTL_AUDIT_SYSLOG");

	if (!o->checkpoint_every && every)
		o->checkpoint_every = (unsigned int)strtoul(every, NULL, 10);
	if (sl && strcmp(sl, "1") == 0)
		o->syslog = true;
}

int fctl_audit_open_policy(const struct fctl_audit_policy *p, struct fctl_audit **out,
			   char *err, size_t errlen)
{
	struct fctl_audit_opts o = {
		.log_path = fctl_audit_log_path(p->log_path, p->env),
		.checkpoint_path = p->checkpoint_path,
		.key_path = p->key_path,
		.origin = p->origin,
		.checkpoint_every = p->checkpoint_every,
		.batch = p->batch,
		.rotate_bytes = p->rotate_bytes,
		.syslog = p->syslog,
		.actor = p->actor,
	};
	char *key = NULL;
	int flags = 0, r;

	if (p->env)
		env_settings(&o);
	if (!p->key_path) {
		key = fctl_audit_beside(o.log_path, "audit.key");
		if (!key) {
			fctl_set_err(err, errlen, "out of memory");
			return -ENOMEM;
		}
		if (p->create_key && access(key, F_OK) != 0 && key_first_use(o.log_path, key))
			flags |= FCTL_AUDIT_KEY_CREATED;
		if (access(key, F_OK) == 0)
			o.key_path = key;
		else
			flags |= FCTL_AUDIT_UNSIGNED;
	}
	r = fctl_audit_open(&o, out, err, errlen);
	if (r < 0)
		goto out;
	if (flags & FCTL_AUDIT_KEY_CREATED)
		fctl_set_err(err, errlen,
			     "created the checkpoint key pair %s and audit.pub; keep a copy of "
			     "audit.pub away from this host",
			     key);
	else if (flags & FCTL_AUDIT_UNSIGNED)
		fctl_set_err(err, errlen,
			     "no checkpoint key '%s': records are chained but not signed", key);
	r = flags;
out:
	free(key);
	return r;
}

/* s appended to out at *o, percent-encoding what a note key name cannot hold */
static int origin_put(char *out, size_t n, size_t *o, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		bool plain = c > 0x20 && c < 0x7f && c != '%' && c != '+';

		if (*o + (plain ? 1 : 3) >= n)
			return -ENAMETOOLONG;
		if (plain)
			out[(*o)++] = (char)c;
		else
			*o += (size_t)snprintf(out + *o, n - *o, "%%%02X", c);
	}
	out[*o] = '\0';
	return 0;
}

int fctl_audit_origin(const char *log_path, char *out, size_t n)
{
	char host[256] = "", dir[PATH_MAX], *res;
	const char *slash = strrchr(log_path, '/'), *base = slash ? slash + 1 : log_path;
	size_t o = 0;
	int r;

	if (gethostname(host, sizeof(host) - 1) < 0 || !host[0])
		snprintf(host, sizeof(host), "localhost");
	if (slash) {
		char d[PATH_MAX];

		snprintf(d, sizeof(d), "%.*s", (int)(slash - log_path), log_path);
		res = realpath(d[0] ? d : "/", dir);
	} else {
		res = realpath(".", dir);
	}
	if (!res) {
		/* a directory that does not exist (yet): the path as given, made absolute */
		char cwd[PATH_MAX] = "";

		if (log_path[0] != '/' && !getcwd(cwd, sizeof(cwd)))
			return -errno;
		if (slash && snprintf(dir, sizeof(dir), "%s%s%.*s", cwd, cwd[0] ? "/" : "",
				      (int)(slash - log_path), log_path) >= (int)sizeof(dir))
			return -ENAMETOOLONG;
		if (!slash)
			snprintf(dir, sizeof(dir), "%s", cwd);
	}
	r = origin_put(out, n, &o, host, strlen(host));
	if (r == 0 && strcmp(dir, "/") != 0)
		r = origin_put(out, n, &o, dir, strlen(dir));
	if (r == 0)
		r = origin_put(out, n, &o, "/", 1);
	if (r == 0)
		r = origin_put(out, n, &o, base, strlen(base));
	return r;
}
