// SPDX-License-Identifier: MIT
/* Pull mode: the agent watches a profile directory (a mounted ConfigMap, a git checkout)
 * and applies each new version through the apply worker every apply request uses. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "agentd_int.h"

/*
 * The kubelet updates a ConfigMap volume atomically: the files live in a directory
 * "..TIMESTAMP", "..data" is a symlink to it, and each key ("profile.yaml") is a
 * symlink to "..data/profile.yaml". A new version is a new "..TIMESTAMP" directory
 * and a symlink "..data_tmp" renamed over "..data": one IN_MOVED_TO of "..data" in
 * the watched directory. A git checkout (git pull, git checkout) replaces the file
 * itself: IN_CREATE, IN_CLOSE_WRITE or IN_MOVED_TO of its name. Either starts a
 * short debounce; then the file is read through its symlinks, and a content whose
 * SHA-256 differs from the last one seen is copied to a spool file of its own (what
 * the worker reads cannot change under it) and applied by a writing worker, exactly
 * as an operator's apply request: validate, plan, journal, apply, verify, roll back on
 * failure, the apply's audit record. A profile the worker refuses (invalid: exit 1,
 * nothing written) or could not apply (exit 3: rolled back) leaves the running state
 * as it was; each outcome is audited as action "pull". A content that failed is not
 * tried again until a different one appears.
 */

struct fctl_agentd_pull {
	int ifd, tfd;            /* inotify on pull_dir, the debounce timer */
	pid_t child;             /* the apply worker of a pulled version, 0 = none */
	int fd_err;              /* its stderr (a memfd) */
	char seen[65];           /* SHA-256 of the last content taken (applied or not) */
	char trying[65];         /* of the one the worker applies */
	char spool[PATH_MAX];
	char dir[PATH_MAX], file[256]; /* as at start: a reload does not move the watch */
};

static void sha256_hex(const void *p, size_t n, char out[65])
{
	unsigned char md[32];
	unsigned len = 0;

	if (!EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) || len != 32) {
		out[0] = '\0';
		return;
	}
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void arm(struct fctl_agentd_pull *p, unsigned ms)
{
	struct itimerspec its = { .it_value = { .tv_sec = ms / 1000,
						.tv_nsec = (long)(ms % 1000) * 1000000 + 1 } };

	timerfd_settime(p->tfd, 0, &its, NULL);
}

/* The content into a new spool file of profile_dir (.pull-XXXXXX.yaml, 0600). */
static int spool(struct agent *a, struct fctl_agentd_pull *p, const struct fctl_buf *b)
{
	int fd, r = 0;

	if (mkdir(a->cfg.profile_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(p->spool, sizeof(p->spool), "%s/.pull-XXXXXX.yaml", a->cfg.profile_dir);
	fd = mkostemps(p->spool, 5, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		p->spool[0] = '\0';
		return r;
	}
	r = fctl_write_all(fd, b->data, b->len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r < 0) {
		unlink(p->spool);
		p->spool[0] = '\0';
	}
	return r;
}

static void drop_spool(struct fctl_agentd_pull *p)
{
	char d[PATH_MAX + 16];
	DIR *dir;
	struct dirent *e;

	if (p->spool[0]) {
		unlink(p->spool);
		snprintf(d, sizeof(d), "%s.sig.d", p->spool);
		dir = opendir(d);
		while (dir && (e = readdir(dir)))
			if (e->d_name[0] != '.')
				unlinkat(dirfd(dir), e->d_name, 0);
		if (dir)
			closedir(dir);
		rmdir(d);
	}
	p->spool[0] = '\0';
}

static void spawn(struct agent *a, struct fctl_agentd_pull *p)
{
	char actor[PATH_MAX + 8];
	pid_t pid;

	p->fd_err = memfd_create("fctl-pull-err", MFD_CLOEXEC);
	if (p->fd_err < 0) {
		fctl_agentd_log("pull: cannot start the apply: %s", strerror(errno));
		drop_spool(p);
		return;
	}
	snprintf(actor, sizeof(actor), "pull:%s", p->dir);
	fflush(NULL); /* the program's buffered output, written once: not again by a child */
	pid = fork();
	if (pid == 0) {
		struct fctl_agent_request rq = { .type = FCTL_MSG_APPLY, .host = a->cfg.host,
						 .profile_path = p->spool,
						 .state_dir = a->cfg.state_dir, .netns = a->cfg.netns,
						 .audit_log = a->cfg.audit_log, .actor_cert = actor };

		/* a writer, as an operator's apply: not sandboxed */
		fctl_agentd_exec_worker(a, open("/dev/null", O_WRONLY | O_CLOEXEC), p->fd_err, &rq,
					false);
	}
	if (pid < 0) {
		fctl_agentd_log("pull: cannot fork the apply: %s", strerror(errno));
		close(p->fd_err);
		p->fd_err = -1;
		drop_spool(p);
		return;
	}
	p->child = pid;
	a->writers++;
}

/* Reads the profile; a new content is spooled and applied. */
static void check(struct agent *a, struct fctl_agentd_pull *p)
{
	char path[PATH_MAX], sha[65], d[PATH_MAX + 1280], rdir[PATH_MAX], ifn[FCTL_IFNAMSIZ];
	char verdict[1024];
	struct fctl_buf b = { 0 };
	int r;

	if (p->child || a->writers) {
		arm(p, 1000); /* after the apply in progress */
		return;
	}
	fctl_rotation_dir(a->cfg.state_dir, a->cfg.netns, rdir, sizeof(rdir));
	if (fctl_rotation_busy(rdir, ifn, sizeof(ifn))) {
		arm(p, 2000); /* after the rotation */
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", p->dir, p->file);
	r = fctl_agentd_pull_read(p->dir, p->file, &b, d, sizeof(d));
	if (r < 0) {
		sha256_hex("", 0, sha);
		if (strcmp(sha, p->seen) != 0) { /* once, until a profile appears */
			snprintf(p->seen, sizeof(p->seen), "%s", sha);
			fctl_agentd_log("pull: %s", d);
			fctl_agentd_audit_event(a, "pull", "refused", NULL, d);
		}
		fctl_buf_release(&b);
		return;
	}
	sha256_hex(b.data ? b.data : "", b.len, sha);
	if (strcmp(sha, p->seen) == 0) {
		fctl_buf_release(&b);
		return;
	}
	snprintf(p->seen, sizeof(p->seen), "%s", sha);
	snprintf(p->trying, sizeof(p->trying), "%s", sha);
	r = spool(a, p, &b);
	if (r < 0) {
		fctl_buf_release(&b);
		snprintf(d, sizeof(d), "sha256 %.16s: cannot spool it to %s: %s", sha,
			 a->cfg.profile_dir, strerror(-r));
		fctl_agentd_audit_event(a, "pull", "failed", NULL, d);
		return;
	}
	/* approvals (docs/approvals.md): checked on the spooled bytes, before a worker parses */
	r = fctl_agentd_pull_approve(p->dir, p->file, p->spool, &b, verdict, sizeof(verdict));
	fctl_buf_release(&b);
	if (r < 0) {
		snprintf(d, sizeof(d), "sha256 %.16s: %s version refused: %s", sha, path, verdict);
		fctl_agentd_log("pull: %s", d);
		fctl_agentd_audit_event(a, "pull", "refused", NULL, d);
		drop_spool(p);
		p->seen[0] = '\0'; /* signatures that come later: checked at the next change */
		return;
	}
	fctl_agentd_log("pull: %s changed (sha256 %.16s): applying", path, sha);
	spawn(a, p);
}

int fctl_agentd_pull_start(struct agent *a, char *err, size_t errlen)
{
	struct fctl_agentd_pull *p;
	const uint32_t ev = IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_DELETE;

	if (!a->cfg.pull_dir || !*a->cfg.pull_dir)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->fd_err = -1;
	snprintf(p->dir, sizeof(p->dir), "%s", a->cfg.pull_dir);
	snprintf(p->file, sizeof(p->file), "%s",
		 a->cfg.pull_file && *a->cfg.pull_file ? a->cfg.pull_file : "profile.yaml");
	p->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	p->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	a->pull = p;
	if (p->ifd < 0 || p->tfd < 0 || inotify_add_watch(p->ifd, a->cfg.pull_dir, ev) < 0 ||
	    fctl_agentd_ep_set(a, EPOLL_CTL_ADD, p->ifd, EPOLLIN, &p->ifd) < 0 ||
	    fctl_agentd_ep_set(a, EPOLL_CTL_ADD, p->tfd, EPOLLIN, &p->tfd) < 0) {
		int r = -errno;

		snprintf(err, errlen, "pull_dir '%s': %s", a->cfg.pull_dir, strerror(-r));
		return r;
	}
	fctl_agentd_log("pull: watching %s/%s", p->dir, p->file);
	arm(p, 1); /* the version there now */
	return 0;
}

bool fctl_agentd_pull_event(struct agent *a, void *ptr)
{
	struct fctl_agentd_pull *p = a->pull;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool ours = false;
	uint64_t ticks;
	ssize_t n;

	if (!p || (ptr != &p->ifd && ptr != &p->tfd))
		return false;
	if (ptr == &p->tfd) {
		if (read(p->tfd, &ticks, sizeof(ticks)) > 0)
			check(a, p);
		return true;
	}
	while ((n = read(p->ifd, buf, sizeof(buf))) > 0) {
		for (char *q = buf; q < buf + n;) {
			const struct inotify_event *e = (const struct inotify_event *)q;

			/* the kubelet's "..data" swap, the file itself (git), or its
			 * signatures beside it (FILE.sig, FILE.NAME.sig, FILE.sig.d) */
			if (e->len && (strcmp(e->name, "..data") == 0 ||
				       strncmp(e->name, p->file, strlen(p->file)) == 0))
				ours = true;
			q += sizeof(*e) + e->len;
		}
	}
	if (ours)
		arm(p, 200);
	return true;
}

/* The line of the worker's stderr that says why: its first "error:" finding, else its
 * first line, with the spool file's name replaced by the pulled file's. */
static void why(const char *err, const char *spool, const char *path, char *out, size_t len)
{
	const char *l = strstr(err, ": error: ");
	size_t n, k = strlen(spool);
	size_t o = 0;

	if (l)
		while (l > err && l[-1] != '\n')
			l--;
	else
		l = err;
	n = strcspn(l, "\n");
	for (size_t i = 0; i < n && o + 1 < len;) {
		if (k && strncmp(l + i, spool, k) == 0) {
			o += (size_t)snprintf(out + o, len - o, "%s", path);
			o = o < len ? o : len - 1;
			i += k;
		} else {
			out[o++] = l[i++];
		}
	}
	out[o] = '\0';
}

bool fctl_agentd_pull_reaped(struct agent *a, pid_t pid, int status)
{
	struct fctl_agentd_pull *p = a->pull;
	struct fctl_buf err = { 0 };
	char d[1024], tmp[4096], line[600], path[PATH_MAX + 256];
	unsigned code;
	ssize_t k;

	if (!p || !p->child || pid != p->child)
		return false;
	p->child = 0;
	a->writers--;
	code = WIFEXITED(status) ? (unsigned)WEXITSTATUS(status) : 3;
	lseek(p->fd_err, 0, SEEK_SET);
	while (err.len < 4096 && (k = read(p->fd_err, tmp, sizeof(tmp))) > 0)
		fctl_buf_append(&err, tmp, (size_t)k);
	close(p->fd_err);
	p->fd_err = -1;
	snprintf(path, sizeof(path), "%s/%s", p->dir, p->file);
	fctl_buf_putc(&err, '\0');
	why(err.data, p->spool, path, line, sizeof(line));
	drop_spool(p);
	snprintf(d, sizeof(d), "sha256 %.16s: %s%s%s", p->trying,
		 code == 0 ? "applied" : code == 1 ? "invalid profile, nothing written"
		 : code == 3 ? "apply failed, rolled back" : "apply could not run",
		 line[0] && code ? ": " : "", code ? line : "");
	fctl_buf_release(&err);
	fctl_agentd_audit_event(a, "pull", code == 0 ? "applied" : code == 1 ? "refused" : "failed",
				NULL, d);
	fctl_agentd_after_write(a);
	arm(p, 200); /* a version that came while this one applied */
	return true;
}

void fctl_agentd_pull_stop(struct agent *a)
{
	struct fctl_agentd_pull *p = a->pull;

	if (!p)
		return;
	if (p->child > 0) {
		kill(p->child, SIGTERM);
		waitpid(p->child, NULL, 0);
		a->writers--;
	}
	if (p->fd_err >= 0)
		close(p->fd_err);
	drop_spool(p);
	if (p->ifd >= 0)
		close(p->ifd);
	if (p->tfd >= 0)
		close(p->tfd);
	free(p);
	a->pull = NULL;
}
