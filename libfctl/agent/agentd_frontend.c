// SPDX-License-Identifier: MIT
/*
 * The agent's TLS front-end (fctl_agent_frontend_main: `fabricctl agent --frontend 3`,
 * started by the agent only): the TLS listener, handshakes, certificates, policy,
 * framing and its limits, as worker_user with no capabilities, no_new_privs and a
 * seccomp allow-list. It sends the agent well-formed requests and who sent them, and
 * writes the agent's responses back; it reads its TLS files from descriptors the agent
 * opened. The connection code (agentd_conn.c) runs on this process's own state (struct
 * frontend), with the hooks here.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <openssl/crypto.h>

#include "agentd_int.h"
#include "seccomp_int.h"

#define LISTEN_FD 4

/* The front-end's state: only its own (the agent's is another process's, struct agent). */
struct frontend {
	struct conn_table ct; /* its TLS connections, their limits, TLS context and policy */
	int tcp_fd;           /* the TLS listener (LISTEN_FD) */
	struct fctl_chan ch;  /* to the agent */
	uint32_t next_rid;    /* the next connection's id on the channel */
};

static struct frontend *fe_of(struct conn_table *t)
{
	return (struct frontend *)(void *)((char *)t - offsetof(struct frontend, ct));
}

/* --- the hooks of the connection code --- */

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static void send_msg(struct frontend *f, uint8_t type, uint32_t id, const void *p1, size_t l1,
		     const void *p2, size_t l2)
{
	if (fctl_chan_send(&f->ch, type, id, p1, l1, p2, l2) < 0)
		_exit(0); /* the agent is gone: so is this process */
	if (f->ct.ep >= 0 && fctl_chan_pending(&f->ch))
		fctl_agentd_conn_ep(&f->ct, EPOLL_CTL_MOD, f->ch.fd, EPOLLIN | EPOLLOUT, &f->ch);
}

/* A TCP connection was accepted (peer and who are set). */
static void fr_open(struct conn_table *t, struct conn *c)
{
	struct frontend *f = fe_of(t);

	c->rid = ++f->next_rid;
	send_msg(f, CH_OPEN, c->rid, c->peer, strlen(c->peer) + 1, c->who, strlen(c->who));
}

/* The handshake of c finished and its peer has roles. */
static void fr_auth(struct conn_table *t, struct conn *c)
{
	uint8_t r[4];

	put_u32(r, c->roles);
	send_msg(fe_of(t), CH_AUTH, c->rid, r, 4, c->who, strlen(c->who));
}

/* A decoded request: its frame to the agent; c waits (c->busy) for its answer. */
static void fr_forward(struct conn_table *t, struct conn *c, const struct fctl_msg *m)
{
	(void)m; /* the agent decodes the frame again */
	c->busy = true;
	c->deadline = 0;
	fctl_agentd_conn_watch_hangup(t, c); /* the agent stops a read-only worker on it */
	send_msg(fe_of(t), CH_REQ, c->rid, c->frame, FCTL_PROTO_HDR_LEN + (size_t)c->h.length, NULL, 0);
}

/* A detail as the channel takes it: printable, shorter than 256. */
static size_t clean(const char *s, char *out, size_t len)
{
	size_t n = 0;

	for (; s && s[n] && n < len - 1; n++)
		out[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
	out[n] = '\0';
	return n;
}

/* A refusal: reported (the agent counts and audits it), then c closed. */
static void fr_refuse(struct conn_table *t, struct conn *c, enum fctl_refusal why,
		      const char *detail)
{
	uint8_t r[4];
	char d[256 + 320];
	size_t n = clean(detail, d, 256);

	put_u32(r, why);
	d[n++] = '\0'; /* then who it was (a subject once the handshake named one) */
	n += clean(c->who, d + n, sizeof(d) - n);
	send_msg(fe_of(t), CH_REFUSE, c->rid, r, 4, d, n);
	c->rid = 0; /* the agent closed its side */
	fctl_agentd_conn_close(t, c);
}

/* A counted refusal (why) the agent counts and, what 1 or 2, audits. */
static void fr_event(struct conn_table *t, struct conn *c, enum fctl_refusal why, uint8_t what,
		     const char *detail)
{
	uint8_t r[5];
	char d[256];
	size_t n = clean(detail, d, sizeof(d));

	put_u32(r, why);
	r[4] = what;
	send_msg(fe_of(t), CH_EVENT, c->rid, r, 5, d, n);
}

/* c closed here: told to the agent, whose answer (if c was busy) is dropped: c is
 * shut down and freed at the end of the batch. */
static void fr_closed(struct conn_table *t, struct conn *c)
{
	if (c->rid)
		send_msg(fe_of(t), CH_CLOSE, c->rid, NULL, 0, NULL, 0);
	c->rid = 0;
	c->busy = false;
}

static const struct conn_hooks fr_hooks = {
	.request = fr_forward,
	.refuse = fr_refuse,
	.event = fr_event,
	.opened = fr_open,
	.authed = fr_auth,
	.closing = fr_closed,
};

/* --- the sandbox --- */

#define REFUSE(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
		   BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES)

#ifdef FCTL_SECCOMP_ARCH
/*
 * What the front-end does once it runs as worker_user: epoll, accept on its listener,
 * TLS over the connections, its channel (descriptors received: recvmsg), reading the
 * files it was handed, memory, time, randomness, and exit. Opening a file fails
 * (EACCES: OpenSSL copes); anything else kills the process.
 */
static struct sock_filter fe_filter[] = {
	FCTL_SECCOMP_PROLOGUE
	ALLOW(__NR_read), ALLOW(__NR_write), ALLOW(__NR_readv), ALLOW(__NR_writev),
	ALLOW(__NR_close), ALLOW(__NR_fstat), ALLOW(__NR_newfstatat), ALLOW(__NR_lseek),
	ALLOW(__NR_fcntl), ALLOW(__NR_mmap), ALLOW(__NR_munmap), ALLOW(__NR_mprotect),
	ALLOW(__NR_mremap), ALLOW(__NR_brk), ALLOW(__NR_madvise), ALLOW(__NR_futex),
	ALLOW(__NR_getrandom), ALLOW(__NR_epoll_pwait), ALLOW(__NR_epoll_ctl),
	ALLOW(__NR_accept4), ALLOW(__NR_getpeername), ALLOW(__NR_getsockname),
	ALLOW(__NR_getsockopt), ALLOW(__NR_setsockopt), ALLOW(__NR_sendto),
	ALLOW(__NR_sendmsg), ALLOW(__NR_recvfrom), ALLOW(__NR_recvmsg), ALLOW(__NR_shutdown),
	ALLOW(__NR_ppoll), ALLOW(__NR_clock_gettime), ALLOW(__NR_gettimeofday),
	ALLOW(__NR_getpid), ALLOW(__NR_gettid), ALLOW(__NR_getppid),
	ALLOW(__NR_rt_sigaction), ALLOW(__NR_rt_sigprocmask), ALLOW(__NR_rt_sigreturn),
	ALLOW(__NR_tgkill), ALLOW(__NR_restart_syscall), ALLOW(__NR_exit),
	ALLOW(__NR_exit_group),
	REFUSE(__NR_openat),
#ifdef __x86_64__
	ALLOW(__NR_epoll_wait), ALLOW(__NR_poll), ALLOW(__NR_time), REFUSE(__NR_open),
#endif
#if defined(__SANITIZE_ADDRESS__)
	/* the sanitizer's runtime (a build with -fsanitize=address) */
	ALLOW(__NR_sched_yield), ALLOW(__NR_prctl), ALLOW(__NR_mincore), ALLOW(__NR_sigaltstack),
	ALLOW(__NR_getuid), ALLOW(__NR_geteuid), ALLOW(__NR_getgid), ALLOW(__NR_prlimit64),
#endif
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};
#endif

static int sandbox(uid_t uid, gid_t gid, pid_t parent, const char **step)
{
#ifdef FCTL_SECCOMP_ARCH
	struct sock_fprog prog = { .len = FCTL_ARRAY_SIZE(fe_filter), .filter = fe_filter };
	int r;

	*step = "drop to the worker user";
	r = fctl_agentd_drop_to(uid, gid);
	if (r < 0)
		return r;
	*step = "set no_new_privs";
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	*step = "watch the agent";
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return -errno;
	if (getppid() != parent)
		return -ESRCH;
	*step = "install the seccomp filter";
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		return -errno;
	return 0;
#else
	(void)uid, (void)gid, (void)parent;
	*step = "install the seccomp filter";
	return -ENOSYS;
#endif
}

/* --- the configuration the agent sends --- */

/* A file of the agent's, read whole into one allocation (never moved: a key's text is
 * wiped where it was). */
static int slurp(int fd, struct fctl_tls_pem *p, char **data)
{
	struct stat st;
	size_t off = 0;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size > (16 << 20))
		return -EFBIG;
	*data = malloc((size_t)st.st_size + 1);
	if (!*data)
		return -ENOMEM;
	while (off < (size_t)st.st_size) {
		ssize_t k = read(fd, *data + off, (size_t)st.st_size - off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		off += (size_t)k;
	}
	(*data)[off] = '\0';
	p->data = *data;
	p->len = off;
	return 0;
}

struct fe_files {
	struct fctl_tls_pem pem[FCTL_CHAN_FDS];
	char *data[FCTL_CHAN_FDS];
	size_t cap[FCTL_CHAN_FDS];
};

static void files_release(struct fe_files *f)
{
	for (int i = 0; i < FCTL_CHAN_FDS; i++)
		if (f->data[i]) {
			OPENSSL_cleanse(f->data[i], f->pem[i].len);
			free(f->data[i]);
		}
}

/* The context and policy of the files: 0, 1 (a stale CRL) or a negative errno. */
static int build(struct frontend *fe, struct fe_files *f, char *err, size_t errlen)
{
	struct fctl_tls_policy *pol = NULL;
	SSL_CTX *ctx = NULL;
	int r, stale = 0;

	r = fctl_tls_ctx_new_mem(&f->pem[0], &f->pem[1], &f->pem[2], &ctx, err, errlen);
	if (r == 0 && f->data[3]) {
		r = fctl_tls_ctx_load_crl_mem(ctx, &f->pem[3], err, errlen);
		stale = r > 0;
	}
	if (r >= 0 && f->data[4])
		r = fctl_tls_policy_parse(f->pem[4].data, f->pem[4].len, f->pem[4].name, &pol,
					  err, errlen);
	if (r < 0) {
		fctl_tls_ctx_free(ctx);
		return r;
	}
	fctl_tls_ctx_free(fe->ct.ctx);
	fctl_tls_policy_free(fe->ct.pol);
	fe->ct.ctx = ctx;
	fe->ct.pol = pol;
	return stale;
}

/* CH_CONFIG: the limits, (the first time) the drop, the files. Answers CH_ACK. false:
 * the first configuration failed (the agent stops). */
static bool configure(struct frontend *fe, bool first)
{
	struct fctl_chan *ch = &fe->ch;
	struct fe_files f = { 0 };
	uint32_t v[10], mask;
	const char *name = (const char *)ch->msg + sizeof(v), *step = "read its configuration";
	char err[512] = "";
	uint8_t ack[4];
	unsigned used = 0;
	int r = 0;

	if (ch->len < sizeof(v))
		r = -EPROTO;
	for (size_t i = 0; r == 0 && i < FCTL_ARRAY_SIZE(v); i++)
		v[i] = fctl_chan_u32(ch->msg + 4 * i);
	mask = r == 0 ? v[9] : 0;
	if (r == 0 && first) {
		r = sandbox((uid_t)v[6], (gid_t)v[7], (pid_t)v[8], &step);
		if (r < 0)
			snprintf(err, sizeof(err), "the TLS front-end cannot %s: %s", step,
				 strerror(-r));
	}
	for (int i = 0; r == 0 && i < FCTL_CHAN_FDS; i++) {
		if (!(mask & (1u << i)))
			continue;
		if (used >= ch->nfds || name >= (const char *)ch->msg + ch->len) {
			r = -EPROTO;
			break;
		}
		f.pem[i].name = name;
		name += strlen(name) + 1;
		r = slurp(ch->fds[used++], &f.pem[i], &f.data[i]);
		if (r < 0)
			snprintf(err, sizeof(err), "'%s': %s", f.pem[i].name, strerror(-r));
	}
	if (r == 0 && (!f.data[0] || !f.data[1] || !f.data[2])) {
		snprintf(err, sizeof(err), "a certificate, its key and the fabric CA are all needed "
					   "(--cert, --key, --ca)");
		r = -EINVAL;
	}
	if (r == 0) {
		fe->ct.lim.max_frame = v[0];
		fe->ct.lim.max_buffered = v[1];
		fe->ct.lim.max_connections = v[2];
		fe->ct.lim.max_handshakes_per_address = v[3];
		fe->ct.lim.handshake_timeout_s = v[4];
		fe->ct.lim.timeout_s = v[5];
		ch->max_len = v[0] + 1;
		r = build(fe, &f, err, sizeof(err));
	}
	files_release(&f);
	for (unsigned i = 0; i < ch->nfds; i++)
		close(ch->fds[i]);
	ch->nfds = 0;
	put_u32(ack, r < 0 ? (uint32_t)-r : (uint32_t)r);
	send_msg(fe, CH_ACK, 0, ack, 4, err, r < 0 ? strlen(err) : 0);
	return r >= 0 || !first;
}

/* --- the agent's messages --- */

static struct conn *by_id(struct frontend *fe, uint32_t id)
{
	for (struct conn *c = fe->ct.conns; c; c = c->next)
		if (c->rid == id && id && !c->closing)
			return c;
	return NULL;
}

/* CH_RESP: the response frame goes out as the agent encoded it. */
static void respond(struct frontend *fe, struct conn *c)
{
	struct fctl_chan *ch = &fe->ch;

	if (!c->busy || ch->len < 1 + FCTL_PROTO_HDR_LEN)
		return;
	c->busy = false;
	if (ch->msg[0] & 1)
		c->close_after = true;
	fctl_buf_reset(&c->out);
	fctl_buf_append(&c->out, ch->msg + 1, ch->len - 1);
	c->out_off = 0;
	fctl_agentd_conn_hold(&fe->ct, c,
			      c->out.len + (c->frame ? FCTL_PROTO_HDR_LEN + c->h.length : 0));
	c->writing = true;
	c->deadline = fctl_agentd_now_ms() + (uint64_t)fe->ct.lim.timeout_s * 1000;
	if (fctl_agentd_conn_ep(&fe->ct, EPOLL_CTL_MOD, c->fd, EPOLLOUT, c) < 0) {
		fctl_agentd_conn_close(&fe->ct, c);
		return;
	}
	fctl_agentd_conn_flush(&fe->ct, c);
}

static void from_agent(struct frontend *fe)
{
	struct fctl_chan *ch = &fe->ch;
	int r;

	while ((r = fctl_chan_recv(ch)) == 1) {
		struct conn *c = by_id(fe, ch->id);

		if (ch->type == CH_CONFIG) {
			configure(fe, false);
		} else if (ch->type == CH_RESP && c) {
			respond(fe, c);
		} else if (ch->type == CH_CLOSE && c) {
			c->rid = 0; /* closed there already */
			if (c->writing)
				c->close_after = true;
			else
				fctl_agentd_conn_close(&fe->ct, c);
		}
		fctl_chan_done(ch);
	}
	if (r < 0)
		_exit(0); /* the agent is gone, or speaks nonsense */
}

static void on_event(struct frontend *fe, const struct epoll_event *ev)
{
	struct conn_table *t = &fe->ct;
	struct conn *c = ev->data.ptr;

	if (ev->data.ptr == &fe->ch) {
		if (ev->events & EPOLLOUT && fctl_chan_flush(&fe->ch) == 0)
			fctl_agentd_conn_ep(t, EPOLL_CTL_MOD, fe->ch.fd, EPOLLIN, &fe->ch);
		if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			from_agent(fe);
		return;
	}
	if (ev->data.ptr == &fe->tcp_fd) {
		fctl_agentd_accept(t, fe->tcp_fd, C_TLS);
		return;
	}
	if (c->closing)
		return;
	if (c->busy) {
		fctl_agentd_conn_on_hangup(t, c, ev->events);
		return;
	}
	if (c->handshake)
		fctl_agentd_tls_handshake(t, c);
	else if (c->writing)
		fctl_agentd_conn_flush(t, c);
	else if (ev->events & (EPOLLERR | EPOLLHUP) && !(ev->events & EPOLLIN))
		fctl_agentd_conn_close(t, c);
	else
		fctl_agentd_conn_readable(t, c);
}

/* The first CH_CONFIG, waited for (nothing else comes before it). */
static bool first_config(struct frontend *fe)
{
	for (;;) {
		struct pollfd p = { .fd = fe->ch.fd, .events = POLLIN };
		int r = fctl_chan_recv(&fe->ch);

		if (r == 1) {
			bool ok = fe->ch.type == CH_CONFIG && configure(fe, true);

			fctl_chan_done(&fe->ch);
			return ok;
		}
		if (r < 0)
			return false;
		poll(&p, 1, -1);
	}
}

int fctl_agent_frontend_main(int fd)
{
	struct frontend fe = { .ct = { .hooks = &fr_hooks, .ep = -1 }, .tcp_fd = LISTEN_FD };
	struct fctl_agent_config dflt;

	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	prctl(PR_SET_NAME, "fabricctl-tls", 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	/* the default limits until the agent's CH_CONFIG sets those of TLS */
	fctl_agent_config_init(&dflt);
	fctl_agentd_conn_limits(&fe.ct.lim, &dflt);
	fctl_agent_config_release(&dflt);
	fe.ch.fd = fd;
	fe.ch.max_len = FCTL_CHAN_SMALL;
	fcntl(fd, F_SETFL, O_NONBLOCK);
	/* OpenSSL reads its configuration once, before the sandbox forbids opening files */
	OPENSSL_init_ssl(OPENSSL_INIT_LOAD_CONFIG, NULL);
	SSL_CTX_free(SSL_CTX_new(TLS_server_method()));
	fe.ct.ep = epoll_create1(EPOLL_CLOEXEC);
	if (fe.ct.ep < 0 || !first_config(&fe))
		_exit(2);
	if (fctl_agentd_conn_ep(&fe.ct, EPOLL_CTL_ADD, fd, EPOLLIN, &fe.ch) < 0 ||
	    fctl_agentd_conn_ep(&fe.ct, EPOLL_CTL_ADD, LISTEN_FD, EPOLLIN, &fe.tcp_fd) < 0)
		_exit(2);
	if (fctl_chan_pending(&fe.ch))
		fctl_agentd_conn_ep(&fe.ct, EPOLL_CTL_MOD, fd, EPOLLIN | EPOLLOUT, &fe.ch);
	for (;;) {
		struct epoll_event ev[32];
		int n = epoll_wait(fe.ct.ep, ev, 32, fctl_agentd_next_timeout(&fe.ct));

		if (n < 0 && errno != EINTR)
			_exit(2);
		for (int i = 0; i < n; i++)
			on_event(&fe, &ev[i]);
		fctl_agentd_sweep_timeouts(&fe.ct);
		fctl_agentd_conn_collect(&fe.ct);
	}
}
