// SPDX-License-Identifier: MIT
/*
 * The re-executed worker (fctl_agent_worker_open): its request from the agent, and
 * for a request that changes nothing the sandbox it runs in: the files it may read
 * opened first, then an unprivileged user, no capabilities, no new privileges and a
 * seccomp allow-list (kill on anything else).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "agentd_int.h"
#include "seccomp_int.h"

/* --- the request, as the agent encodes it: "key=value\0" strings --- */

static int put(struct fctl_buf *b, const char *k, const char *v)
{
	if (!v)
		return 0;
	fctl_buf_printf(b, "%s=%s", k, v);
	return fctl_buf_append(b, "", 1);
}

int fctl_agentd_wreq_encode(const struct fctl_agent_request *rq, const struct fctl_wreq *w,
			    struct fctl_buf *b)
{
	char n[64];

	snprintf(n, sizeof(n), "%u", rq->type);
	put(b, "type", n);
	snprintf(n, sizeof(n), "%u", rq->options);
	put(b, "options", n);
	snprintf(n, sizeof(n), "%llu", (unsigned long long)rq->to_version);
	put(b, "to_version", n);
	if (rq->confirm_seconds) {
		snprintf(n, sizeof(n), "%u", rq->confirm_seconds);
		put(b, "confirm", n);
	}
	put(b, "host", rq->host);
	put(b, "profile", rq->profile_path);
	put(b, "state_dir", rq->state_dir);
	put(b, "netns", rq->netns);
	put(b, "audit_log", rq->audit_log);
	put(b, "actor_cert", rq->actor_cert);
	put(b, "mka_port", rq->mka_port);
	put(b, "probe", rq->probe);
	if (rq->mka_kill)
		put(b, "mka_kill", "1");
	if (rq->mka_step)
		put(b, "mka_step", "1");
	if (rq->has_actor_uid) {
		snprintf(n, sizeof(n), "%u", (unsigned)rq->actor_uid);
		put(b, "actor_uid", n);
	}
	if (w->drop) {
		snprintf(n, sizeof(n), "%u:%u", (unsigned)w->uid, (unsigned)w->gid);
		put(b, "drop", n);
	}
	snprintf(n, sizeof(n), "%d", (int)w->parent);
	put(b, "parent", n);
	return b->oom ? -ENOMEM : 0;
}

static int num(const char *v, uint64_t max, uint64_t *out)
{
	uint64_t x;

	if (fctl_parse_u64(v, &x) < 0 || x > max)
		return -EINVAL;
	*out = x;
	return 0;
}

/* Decodes data (kept alive by the caller: the strings point into it). */
static int wreq_decode(char *data, size_t len, struct fctl_agent_request *rq, struct fctl_wreq *w)
{
	size_t off = 0;
	uint64_t x;
	int r = 0;

	memset(rq, 0, sizeof(*rq));
	memset(w, 0, sizeof(*w));
	if (!len || data[len - 1] != '\0')
		return -EINVAL;
	while (off < len && r == 0) {
		char *k = data + off, *v = strchr(k, '=');
		unsigned u, g;

		off += strlen(k) + 1;
		if (!v)
			return -EINVAL;
		*v++ = '\0';
		if (strcmp(k, "type") == 0 && (r = num(v, 255, &x)) == 0)
			rq->type = (uint8_t)x;
		else if (strcmp(k, "options") == 0 && (r = num(v, UINT32_MAX, &x)) == 0)
			rq->options = (uint32_t)x;
		else if (strcmp(k, "to_version") == 0)
			r = num(v, UINT64_MAX, &rq->to_version);
		else if (strcmp(k, "confirm") == 0 &&
			 (r = num(v, FCTL_PROTO_MAX_CONFIRM, &x)) == 0)
			rq->confirm_seconds = (uint32_t)x;
		else if (strcmp(k, "host") == 0)
			rq->host = v;
		else if (strcmp(k, "profile") == 0)
			rq->profile_path = v;
		else if (strcmp(k, "state_dir") == 0)
			rq->state_dir = v;
		else if (strcmp(k, "netns") == 0)
			rq->netns = v;
		else if (strcmp(k, "audit_log") == 0)
			rq->audit_log = v;
		else if (strcmp(k, "actor_cert") == 0)
			rq->actor_cert = v;
		else if (strcmp(k, "mka_port") == 0)
			rq->mka_port = v;
		else if (strcmp(k, "probe") == 0)
			rq->probe = v;
		else if (strcmp(k, "mka_kill") == 0)
			rq->mka_kill = true;
		else if (strcmp(k, "mka_step") == 0)
			rq->mka_step = true;
		else if (strcmp(k, "actor_uid") == 0 && (r = num(v, UINT32_MAX, &x)) == 0) {
			rq->actor_uid = (uid_t)x;
			rq->has_actor_uid = true;
		} else if (strcmp(k, "drop") == 0) {
			if (sscanf(v, "%u:%u", &u, &g) != 2 || !u || !g)
				return -EINVAL;
			w->drop = true;
			w->uid = u;
			w->gid = g;
		} else if (strcmp(k, "parent") == 0 && (r = num(v, INT32_MAX, &x)) == 0)
			w->parent = (pid_t)x;
	}
	return r;
}

static int read_request(int fd, struct fctl_buf *b)
{
	char tmp[4096];
	ssize_t k;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	while ((k = read(fd, tmp, sizeof(tmp))) > 0)
		if (fctl_buf_append(b, tmp, (size_t)k) < 0)
			return -ENOMEM;
	return k < 0 ? -errno : 0;
}

/* --- what the unprivileged worker may read: opened while it still can --- */

static void preopen(const char *path, int flags)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | flags);

	if (fd >= 0)
		fctl_preopen_add(path, fd);
}

/* The profile; the state directory's history index, the last applied profile's stored
 * copy, the pending confirmation and the rotation records (what plan, show, diff and history read there). */
static void preopen_state(const struct fctl_agent_request *rq)
{
	struct fctl_engine_opts eo = { .state_dir = rq->state_dir, .host = rq->host };
	struct fctl_history_entry *v = NULL;
	char path[PATH_MAX + 32];
	size_t n = 0;
	int dfd;

	if (rq->profile_path)
		preopen(rq->profile_path, 0);
	snprintf(path, sizeof(path), "%s/history/index", rq->state_dir);
	preopen(path, 0);
	snprintf(path, sizeof(path), "%s/confirm", rq->state_dir); /* show: a pending confirmation */
	preopen(path, 0);
	if (fctl_engine_history(&eo, &v, &n) == 0 && n)
		preopen(v[n - 1].file, 0);
	free(v);
	snprintf(path, sizeof(path), "%s/rotation", rq->state_dir);
	dfd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
	if (dfd >= 0) {
		DIR *d = fdopendir(dfd);
		struct dirent *de;

		preopen(path, O_DIRECTORY);
		while (d && (de = readdir(d))) {
			char f[PATH_MAX + 300];

			if (de->d_name[0] == '.')
				continue;
			snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
			preopen(f, 0);
		}
		if (d)
			closedir(d);
		else
			close(dfd);
	}
}

/* The network namespace of the configuration, entered while CAP_SYS_ADMIN lasts; the
 * command then opens its netlink sockets where it already is. */
static int enter_netns(const char *netns)
{
	char path[300];
	int fd, r = 0;

	if (!netns[0] || strchr(netns, '/') || strcmp(netns, ".") == 0 || strcmp(netns, "..") == 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/run/netns/%s", netns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (setns(fd, CLONE_NEWNET) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* --- the drop --- */

static int no_caps_left(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	for (int i = 0; i < 2; i++)
		if (d[i].effective || d[i].permitted || d[i].inheritable)
			return -EPERM;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, CAP_NET_ADMIN, 0, 0) > 0)
		return -EPERM;
	return 0;
}

/* uid and gid (every one of the three), no supplementary groups; the kernel then
 * clears every capability (no SECBIT_KEEP_CAPS): checked, not assumed. */
int fctl_agentd_drop_to(uid_t uid, gid_t gid)
{
	uid_t ru, eu, su;
	gid_t rg, eg, sg;

	if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
		return -errno;
	if (getresuid(&ru, &eu, &su) < 0 || getresgid(&rg, &eg, &sg) < 0)
		return -errno;
	if (ru != uid || eu != uid || su != uid || rg != gid || eg != gid || sg != gid)
		return -EPERM;
	if (setuid(0) == 0) /* must not work any more */
		return -EPERM;
	return no_caps_left();
}

#define ARG_LO(i) (offsetof(struct seccomp_data, args) + (i) * sizeof(__u64))

#ifdef FCTL_SECCOMP_ARCH
/*
 * What a read command needs once its files are open (found with strace on plan, show,
 * diff, history and apply --dry-run): memory, reading its files and writing its
 * output, netlink sockets (AF_NETLINK only) for the dumps, time, sysinfo (qsort of a
 * large array asks it), signals to itself (abort) and exit. Everything else kills the process.
 */
static struct sock_filter sandbox_filter[] = {
	FCTL_SECCOMP_PROLOGUE
	ALLOW(__NR_read), ALLOW(__NR_write), ALLOW(__NR_readv), ALLOW(__NR_writev),
	ALLOW(__NR_pread64), ALLOW(__NR_close), ALLOW(__NR_fstat), ALLOW(__NR_newfstatat),
	ALLOW(__NR_statx), ALLOW(__NR_lseek), ALLOW(__NR_openat), ALLOW(__NR_fcntl),
	ALLOW(__NR_dup), ALLOW(__NR_dup3), ALLOW(__NR_getdents64), ALLOW(__NR_readlinkat),
	ALLOW(__NR_faccessat), ALLOW(__NR_faccessat2), ALLOW(__NR_getcwd),
	ALLOW(__NR_mmap), ALLOW(__NR_munmap), ALLOW(__NR_mprotect), ALLOW(__NR_mremap),
	ALLOW(__NR_brk), ALLOW(__NR_madvise), ALLOW(__NR_futex), ALLOW(__NR_getrandom),
	ALLOW(__NR_bind), ALLOW(__NR_getsockname), ALLOW(__NR_setsockopt),
	ALLOW(__NR_getsockopt), ALLOW(__NR_sendto), ALLOW(__NR_sendmsg), ALLOW(__NR_recvfrom),
	ALLOW(__NR_recvmsg), ALLOW(__NR_ppoll),
	ALLOW(__NR_clock_gettime), ALLOW(__NR_gettimeofday), ALLOW(__NR_uname),
	ALLOW(__NR_getpid), ALLOW(__NR_gettid), ALLOW(__NR_getppid), ALLOW(__NR_getuid),
	ALLOW(__NR_geteuid), ALLOW(__NR_getgid), ALLOW(__NR_getegid),
	ALLOW(__NR_rt_sigaction), ALLOW(__NR_rt_sigprocmask), ALLOW(__NR_rt_sigreturn),
	ALLOW(__NR_sigaltstack), ALLOW(__NR_tgkill), ALLOW(__NR_restart_syscall),
	ALLOW(__NR_prlimit64), ALLOW(__NR_sysinfo), ALLOW(__NR_exit), ALLOW(__NR_exit_group),
#ifdef __x86_64__
	ALLOW(__NR_open), ALLOW(__NR_stat), ALLOW(__NR_lstat), ALLOW(__NR_readlink),
	ALLOW(__NR_access), ALLOW(__NR_dup2), ALLOW(__NR_poll), ALLOW(__NR_time),
#endif
#if defined(__SANITIZE_ADDRESS__)
	/* the sanitizer's runtime (a build with -fsanitize=address) */
	ALLOW(__NR_sched_yield), ALLOW(__NR_prctl), ALLOW(__NR_mincore),
#endif
	/* isatty: TCGETS, no other ioctl */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, 3),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(1)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TCGETS, 0, 5),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	/* socket(AF_NETLINK, ...) only */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 3),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(0)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};
#endif

static int install_filter(void)
{
#ifdef FCTL_SECCOMP_ARCH
	struct sock_fprog prog = { .len = FCTL_ARRAY_SIZE(sandbox_filter),
				   .filter = sandbox_filter };

	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return -errno;
	return 0;
#else
	return -ENOSYS; /* no filter written for this architecture: no unfiltered worker */
#endif
}

/* Everything above, in order; the command's own reads come after it. */
static int sandbox(struct fctl_agent_request *rq, const struct fctl_wreq *w, char *sd,
		   size_t sdlen, const char **step)
{
	int r;

	/* the state directory as the command would find it, before leaving the netns name */
	fctl_state_dir_path(rq->state_dir, rq->netns, sd, sdlen);
	rq->state_dir = sd;
	*step = "enter the network namespace";
	if (rq->netns) {
		r = enter_netns(rq->netns);
		if (r < 0)
			return r;
		rq->netns = NULL;
	}
	preopen_state(rq);
	*step = "drop to the worker user";
	r = fctl_agentd_drop_to(w->uid, w->gid);
	if (r < 0)
		return r;
	*step = "set no_new_privs";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* a change of credentials cleared the parent-death signal: set it again */
	*step = "watch the agent";
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	if (getppid() != w->parent)
		return -ESRCH;
	*step = "install the seccomp filter";
	return install_filter();
}

int fctl_agent_worker_open(struct fctl_agent_worker *w, int fd, char *err, size_t errlen)
{
	struct fctl_buf b = { 0 };
	struct fctl_wreq wr;
	const char *step = "read the request";
	int r;

	memset(w, 0, sizeof(*w));
	/* a writing worker may fetch SAKs: not dumpable, as the agent; and named as the
	 * program, not as the descriptor it was executed from ("4" on older kernels) */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	prctl(PR_SET_NAME, "fabricctl", 0, 0, 0);
	r = read_request(fd, &b);
	w->frame = b.data;
	w->frame_len = b.len;
	w->frame_cap = b.cap;
	if (r == 0)
		r = wreq_decode(b.data, b.len, &w->rq, &wr);
	close(fd);
	if (r == 0 && wr.drop)
		r = sandbox(&w->rq, &wr, w->state_dir, sizeof(w->state_dir), &step);
	if (r < 0)
		snprintf(err, errlen, "the worker cannot %s: %s", step, strerror(-r));
	return r;
}

void fctl_agent_worker_release(struct fctl_agent_worker *w)
{
	struct fctl_buf b = { .data = w->frame, .len = w->frame_len, .cap = w->frame_cap };

	fctl_buf_release(&b);
	w->frame = NULL;
	w->frame_len = w->frame_cap = 0;
}
