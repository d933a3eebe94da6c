// SPDX-License-Identifier: MIT
/* The agent's workers: one per engine request (apply, plan, ...), re-executed, output in memfds. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentd_int.h"

/* Removes this request's spool file and the signatures beside it (SPOOL.sig.d: its own,
 * the name was made unique here). */
static void drop_spool(struct aconn *ac)
{
	char d[sizeof(ac->spool) + 8];
	DIR *dir;

	if (!ac->spool[0])
		return;
	snprintf(d, sizeof(d), "%s.sig.d", ac->spool);
	dir = opendir(d);
	if (dir) {
		struct dirent *e;

		while ((e = readdir(dir)))
			if (e->d_name[0] != '.')
				unlinkat(dirfd(dir), e->d_name, 0);
		closedir(dir);
		rmdir(d);
	}
	unlink(ac->spool);
	ac->spool[0] = '\0';
}

/* The signature files the client sent (FCTL_TLV_SIGS) into SPOOL.sig.d/NN-NAME, where
 * the worker's approval check finds them as beside a local profile: the host's policy
 * decides as for a local apply. A name from the wire is checked again here as a plain
 * file name (the decoder did already), never taken as a path; files are created O_EXCL,
 * without following a link, in a folder made for this request. */
static int write_sigs(const struct aconn *ac, const struct fctl_msg *m)
{
	char d[sizeof(ac->spool) + 8], p[sizeof(d) + FCTL_PROTO_MAX_SIG_NAME + 32];
	struct fctl_proto_sig sg;
	size_t off = 0, i = 0;
	int r = 0;

	if (!(m->present & FCTL_HAS_SIGS))
		return 0;
	snprintf(d, sizeof(d), "%s.sig.d", ac->spool);
	if (mkdir(d, 0700) < 0)
		return -errno;
	while (r == 0 && fctl_proto_sig_next(m, &off, &sg) == 1) {
		int fd;

		if (!fctl_proto_sig_name_ok(sg.name, strlen(sg.name)) || strchr(sg.name, '/'))
			return -EINVAL;
		snprintf(p, sizeof(p), "%s/%02zu-%s", d, i++, sg.name);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return -errno;
		r = fctl_write_all(fd, sg.data, sg.len);
		if (close(fd) < 0 && r == 0)
			r = -errno;
	}
	return r;
}

/* The profile into a file that is this request's alone: a fresh random name in
 * profile_dir, created with O_EXCL and mode 0600 (mkostemps). Nothing in the name
 * comes from the client, so no two requests ever share one. */
static int write_spool(struct agent *a, struct aconn *ac, const struct fctl_msg *m)
{
	static const char suffix[] = ".yaml";
	int fd, r = 0, n;

	if (mkdir(a->cfg.profile_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	n = snprintf(ac->spool, sizeof(ac->spool), "%s/.remote-XXXXXX%s", a->cfg.profile_dir,
		     suffix);
	if (n < 0 || (size_t)n >= sizeof(ac->spool)) {
		ac->spool[0] = '\0';
		return -ENAMETOOLONG;
	}
	fd = mkostemps(ac->spool, (int)sizeof(suffix) - 1, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		ac->spool[0] = '\0';
		return r;
	}
	if (fchmod(fd, 0600) < 0)
		r = -errno;
	if (r == 0)
		r = fctl_write_all(fd, m->profile, m->profile_len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0)
		r = write_sigs(ac, m);
	if (r < 0)
		drop_spool(ac);
	return r;
}

/* Undoes a spawn that failed half way: the memfds and the spool file. */
static void spawn_undo(struct aconn *ac)
{
	if (ac->fd_out >= 0)
		close(ac->fd_out);
	if (ac->fd_err >= 0)
		close(ac->fd_err);
	ac->fd_out = ac->fd_err = -1;
	drop_spool(ac);
}

int fctl_agentd_worker_init(struct agent *a, char *err, size_t errlen)
{
	struct stat st;
	int r;

	/* this very binary, whatever happens to its path later (an upgrade): each worker
	 * runs the code the agent runs */
	a->exe_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	if (a->exe_fd < 0 || fstat(a->exe_fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    !(st.st_mode & S_IXUSR)) {
		r = a->exe_fd < 0 ? -errno : -ENOEXEC;
		snprintf(err, errlen, "cannot open the agent's own binary for its workers: %s",
			 strerror(-r));
		return r;
	}
	return 0;
}

/* Moves fd to at least 10 (out of the way of 0..3); -1 stays -1. */
static int high_fd(int fd)
{
	return fd < 0 ? -1 : fcntl(fd, F_DUPFD, 10);
}

_Noreturn void fctl_agentd_exec_worker(const struct agent *a, int fd_out, int fd_err,
				       const struct fctl_agent_request *rq, bool drop)
{
	static char *const argv[] = { "fabricctl", "agent", "--worker", "3", NULL };
	struct fctl_wreq w = { .drop = drop, .uid = a->worker_uid, .gid = a->worker_gid,
			       .parent = getppid() };
	struct fctl_buf b = { 0 };
	extern char **environ;
	sigset_t none;
	int req, null, out, err, exe;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	req = memfd_create("fctl-request", MFD_CLOEXEC);
	if (req >= 0 && fctl_agentd_wreq_encode(rq, &w, &b) == 0) {
		size_t off = 0;

		while (off < b.len) {
			ssize_t k = write(req, b.data + off, b.len - off);

			if (k <= 0)
				break;
			off += (size_t)k;
		}
	}
	null = high_fd(open("/dev/null", O_RDONLY | O_CLOEXEC));
	out = high_fd(fd_out);
	err = high_fd(fd_err);
	req = high_fd(req);
	exe = high_fd(a->exe_fd);
	if (null >= 0)
		dup2(null, 0);
	dup2(out, 1);
	dup2(err, 2);
	if (req < 0 || dup2(req, 3) < 0 || exe < 0 || dup3(exe, 4, O_CLOEXEC) < 0) {
		fctl_agentd_log("cannot pass the worker its request");
		_exit(2);
	}
	/* nothing else of the agent's reaches the worker: no socket, no log, no listener */
	syscall(SYS_close_range, 5, ~0u, 0);
	syscall(SYS_execveat, 4, "", argv, environ, AT_EMPTY_PATH);
	fctl_agentd_log("cannot start the worker: %s", strerror(errno));
	_exit(2);
}

static void worker(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	struct aconn *ac = fctl_agentd_ac(c);
	struct fctl_agent_request rq = {
		.type = m->type,
		.options = m->options,
		.host = (m->present & FCTL_HAS_HOST) ? m->host : a->cfg.host,
		.profile_path = ac->spool[0] ? ac->spool : NULL,
		.to_version = m->to_version,
		.confirm_seconds = (m->present & FCTL_HAS_CONFIRM) ? m->confirm_seconds : 0,
		.state_dir = a->cfg.state_dir,
		.netns = a->cfg.netns,
		.audit_log = a->cfg.audit_log,
		.actor_cert = c->kind == C_TLS ? c->who : NULL,
		.has_actor_uid = c->kind != C_TLS && c->has_uid,
		.actor_uid = c->uid,
		.probe = (m->present & FCTL_HAS_PROBE) ? m->probe : NULL,
	};

	/* a probe opens RDMA devices and pins memory: not in the read-only sandbox */
	fctl_agentd_exec_worker(a, ac->fd_out, ac->fd_err, &rq,
				!ac->req_writes && !fctl_proto_is_probe(m->type));
}

int fctl_agentd_spawn(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	struct aconn *ac = fctl_agentd_ac(c);
	pid_t pid;
	int r;

	/* what an earlier request left is not this one's */
	spawn_undo(ac);
	if (m->present & FCTL_HAS_PROFILE) {
		r = write_spool(a, ac, m);
		if (r < 0)
			return r;
	}
	ac->fd_out = memfd_create("fctl-out", MFD_CLOEXEC);
	if (ac->fd_out >= 0)
		ac->fd_err = memfd_create("fctl-err", MFD_CLOEXEC);
	if (ac->fd_out < 0 || ac->fd_err < 0) {
		r = -errno;
		spawn_undo(ac);
		return r;
	}
	fflush(NULL); /* the program's buffered output, written once: not again by a child */
	pid = fork();
	if (pid < 0) {
		r = -errno;
		spawn_undo(ac);
		return r;
	}
	if (pid == 0)
		worker(a, c, m); /* does not return */
	ac->child = pid;
	c->busy = true;
	c->deadline = 0;
	a->workers++;
	if (ac->req_writes)
		a->writers++;
	fctl_agentd_conn_watch_hangup(&a->ct, c);
	return 0;
}

static void read_memfd(int fd, struct fctl_buf *b)
{
	char tmp[65536];
	ssize_t k;

	lseek(fd, 0, SEEK_SET);
	while ((k = read(fd, tmp, sizeof(tmp))) > 0)
		fctl_buf_append(b, tmp, (size_t)k);
}

void fctl_agentd_reap(struct agent *a)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct fctl_buf out = { 0 }, err = { 0 };
		struct aconn *ac = NULL;
		uint32_t code;
		struct conn *c;

		code = WIFEXITED(status) ? (uint32_t)WEXITSTATUS(status) : 3;
		if (pid == a->repair_child) {
			a->repair_child = 0;
			a->writers--;
			if (code == 0)
				a->st.drift_repairs++;
			else
				a->st.drift_repair_failures++;
			fctl_agentd_audit_event(a, "drift-repair", code == 0 ? "applied" : "failed",
						NULL, NULL);
			fctl_agentd_after_write(a);
			continue;
		}
		if (fctl_agentd_pull_reaped(a, pid, status)) {
			fctl_agentd_mka_soon(a); /* a pulled version may add or drop MKA ports */
			continue;
		}
		if (fctl_agentd_fe_reaped(a, pid, status) || fctl_agentd_mka_reaped(a, pid, status))
			continue;
		for (c = a->ct.conns; c && fctl_agentd_ac(c)->child != pid; c = c->next)
			;
		if (!c)
			continue;
		ac = fctl_agentd_ac(c);
		ac->child = 0;
		c->busy = false;
		a->workers--;
		if (ac->req_writes) {
			char d[64];

			a->writers--;
			snprintf(d, sizeof(d), "exit %u", code);
			fctl_agentd_audit_event(a, fctl_proto_type_name(ac->req_type),
						code == 0 ? "done" : "failed", c, d);
			fctl_agentd_after_write(a);
			fctl_agentd_mka_soon(a);
		}
		fctl_agentd_count(a, c, ac->req_type,
				  ac->abandoned && WIFSIGNALED(status) ? FCTL_REQ_ABANDONED
				  : code == 0 || code == 1 ? FCTL_REQ_OK
							   : FCTL_REQ_FAILED);
		read_memfd(ac->fd_out, &out);
		read_memfd(ac->fd_err, &err);
		if (WIFSIGNALED(status))
			fctl_buf_printf(&err, "fabricctl agent: the %s worker was killed by signal %d\n",
					fctl_proto_type_name(ac->req_type), WTERMSIG(status));
		close(ac->fd_out);
		close(ac->fd_err);
		ac->fd_out = ac->fd_err = -1;
		drop_spool(ac);
		if (c->closing) {
			/* the peer is gone: fctl_agentd_conn_collect frees c */
		} else if (!ac->proxy && fctl_agentd_ep_set(a, EPOLL_CTL_MOD, c->fd, EPOLLOUT, c) < 0) {
			fctl_agentd_conn_close(&a->ct, c);
		} else {
			fctl_agentd_respond(&a->ct, c, ac->req_id, code, out.data, out.len, err.data,
					    err.len, NULL);
		}
		fctl_buf_release(&out);
		fctl_buf_release(&err);
	}
}
