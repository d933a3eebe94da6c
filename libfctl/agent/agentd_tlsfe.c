// SPDX-License-Identifier: MIT
/*
 * The agent's side of its TLS front-end: starts it (re-executed, the TLS listener and
 * the channel its only descriptors), hands it the TLS files as descriptors it opens
 * and never reads, checks every message it sends (trusting it with nothing more than
 * "this connection is this identity"), and restarts it when it dies.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentd_int.h"

#define FE_MAX_DEATHS 10      /* restarts within FE_WINDOW_MS; one more stops the agent */
#define FE_WINDOW_MS 60000
#define FE_ANSWER_MS 120000   /* a CH_CONFIG unanswered this long: the front-end is stuck */

static uint32_t max_len(const struct agent *a)
{
	return a->cfg.max_frame + 1;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* The front-end broke the channel's rules: audited, killed (and restarted when reaped). */
static void violation(struct agent *a, const char *what)
{
	char d[200];

	snprintf(d, sizeof(d), "message type %u for connection %u: %s", a->fe.ch.type,
		 a->fe.ch.id, what);
	fctl_agentd_audit_event(a, "frontend", "refused", NULL, d);
	if (a->fe.pid > 0)
		kill(a->fe.pid, SIGKILL);
	if (a->fe.ch.fd >= 0)
		epoll_ctl(a->ct.ep, EPOLL_CTL_DEL, a->fe.ch.fd, NULL);
	fctl_chan_release(&a->fe.ch); /* nothing more read from it */
}

/* The bytes of answers queued for the front-end that it has not read. A front-end reads
 * its channel whenever it can (it holds one answer per connection, in its own buffers), so
 * more than max_buffered and one answer waiting means it stopped reading: compromised, or
 * as good as. The agent's memory is bounded by this, never by the front-end's goodwill. */
static size_t queued(const struct agent *a)
{
	return a->fe.ch.out.len - a->fe.ch.out_off;
}

static size_t queue_max(const struct agent *a)
{
	return (size_t)a->cfg.max_buffered + max_len(a) + 2 * FCTL_CHAN_HDR;
}

/* Watches the channel for what it needs: input always, output while bytes wait; kills a
 * front-end that lets more than queue_max() bytes wait. */
static void watch(struct agent *a)
{
	char d[120];

	if (a->fe.ch.fd < 0)
		return;
	if (queued(a) > queue_max(a)) {
		snprintf(d, sizeof(d), "it does not read its channel: %zu bytes of answers wait "
			 "(at most %zu: max_buffered and one answer)", queued(a), queue_max(a));
		violation(a, d);
		return;
	}
	fctl_agentd_ep_set(a, EPOLL_CTL_MOD, a->fe.ch.fd,
			   EPOLLIN | (fctl_chan_pending(&a->fe.ch) ? EPOLLOUT : 0), &a->fe);
}

/* The front-end's connections the agent has not closed, and the bytes of their request
 * frames in progress: what the front-end's own max_connections and max_buffered bound
 * (it holds each frame until its answer arrives), so a front-end past them is lying. */
static unsigned live_proxies(const struct agent *a, size_t *frames)
{
	unsigned n = 0;

	*frames = 0;
	for (const struct conn *c = a->ct.conns; c; c = c->next)
		if (fctl_agentd_cac(c)->proxy && !c->closing) {
			n++;
			if (c->frame)
				*frames += FCTL_PROTO_HDR_LEN + (size_t)c->h.length + 1;
		}
	return n;
}

/* A string of the payload: no NUL, no control byte, shorter than max. */
static bool text_ok(const uint8_t *p, size_t n, size_t max)
{
	if (n >= max)
		return false;
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return false;
	return true;
}

static struct conn *proxy(struct agent *a, uint32_t id)
{
	for (struct conn *c = a->ct.conns; c; c = c->next)
		if (fctl_agentd_ac(c)->proxy && c->rid == id && !c->closing)
			return c;
	return NULL;
}

static const char *on_open(struct agent *a, const uint8_t *p, uint32_t n)
{
	const uint8_t *nul = memchr(p, '\0', n);
	struct aconn *ac;
	struct conn *c;
	size_t frames;

	if (a->fe.ch.id <= a->fe.max_id)
		return "connection id reused";
	if (live_proxies(a, &frames) >= a->cfg.max_connections)
		return "a connection past max_connections";
	if (!nul || !text_ok(p, (size_t)(nul - p), sizeof(c->peer)) ||
	    !text_ok(nul + 1, n - (size_t)(nul - p) - 1, sizeof(c->who)))
		return "bad peer";
	c = fctl_agentd_conn_hooks.alloc(&a->ct);
	if (!c)
		return NULL; /* out of memory: the front-end's connection closes (CH_CLOSE) */
	ac = fctl_agentd_ac(c);
	a->fe.max_id = a->fe.ch.id;
	c->kind = C_TLS;
	c->fd = -1;
	ac->proxy = true;
	c->handshake = true;
	c->rid = a->fe.ch.id;
	memcpy(c->peer, p, (size_t)(nul - p));
	memcpy(c->who, nul + 1, n - (size_t)(nul - p) - 1);
	c->next = a->ct.conns;
	a->ct.conns = c;
	a->st.connections++;
	return NULL;
}

static const char *on_auth(struct conn *c, const uint8_t *p, uint32_t n)
{
	struct aconn *ac = fctl_agentd_ac(c);
	unsigned ok = FCTL_ROLE_BIT(FCTL_ROLE_VIEWER) | FCTL_ROLE_BIT(FCTL_ROLE_OPERATOR) |
		      FCTL_ROLE_BIT(FCTL_ROLE_KEY_CUSTODIAN);
	uint32_t roles;

	if (ac->authed || n < 4 || !text_ok(p + 4, n - 4, sizeof(c->who)) || n == 4)
		return "bad identity";
	roles = fctl_chan_u32(p);
	/* never local (the Unix socket's role), never nothing */
	if (!roles || roles & ~ok)
		return "roles outside viewer, operator and key-custodian";
	ac->authed = true;
	c->handshake = false;
	c->roles = roles;
	c->role = fctl_roles_primary(roles);
	memset(c->who, 0, sizeof(c->who));
	memcpy(c->who, p + 4, n - 4);
	return NULL;
}

/* A request: decoded again here (nothing of the front-end's decoding is trusted). */
static const char *on_req(struct agent *a, struct conn *c)
{
	struct fctl_chan *ch = &a->fe.ch;
	struct aconn *ac = fctl_agentd_ac(c);
	struct fctl_msg m;
	char why[200];
	size_t frames;

	if (!ac->authed)
		return "a request before the handshake";
	if (c->frame || ac->child || c->writing)
		return "a request while one is in progress";
	live_proxies(a, &frames);
	if (frames + (size_t)ch->len + 1 > a->cfg.max_buffered)
		return "requests in progress past max_buffered";
	if (ch->len < FCTL_PROTO_HDR_LEN ||
	    fctl_proto_hdr_parse(ch->msg, FCTL_PROTO_HDR_LEN, a->cfg.max_frame, &c->h) < 0 ||
	    FCTL_PROTO_HDR_LEN + (size_t)c->h.length != ch->len)
		return "a frame whose header does not fit";
	if (fctl_proto_decode(ch->msg, ch->len, a->cfg.max_frame, &m, why, sizeof(why)) < 0 ||
	    m.type == FCTL_MSG_RESPONSE)
		return "a malformed frame";
	/* the frame is c's now (its strings point into it), wiped when it is done */
	c->frame = ch->msg;
	ch->msg = NULL;
	c->hdr_got = 0;
	fctl_agentd_conn_hold(&a->ct, c, ch->len + 1);
	fctl_agentd_handle_request(a, c, &m);
	return NULL;
}

static const char *on_refusal(struct agent *a, struct conn *c, const uint8_t *p, uint32_t n)
{
	uint32_t why;

	if (n < 5)
		return "short refusal";
	why = fctl_chan_u32(p);
	if (why >= FCTL_REFUSED_MAX)
		return "unknown reason";
	if (a->fe.ch.type == CH_REFUSE) {
		const uint8_t *nul = memchr(p + 4, '\0', n - 4);

		if (!nul || !text_ok(p + 4, (size_t)(nul - p - 4), 256) ||
		    !text_ok(nul + 1, (size_t)(p + n - nul - 1), sizeof(c->who)) || nul + 1 == p + n)
			return "bad detail";
		memset(c->who, 0, sizeof(c->who));
		memcpy(c->who, nul + 1, (size_t)(p + n - nul - 1));
		fctl_agentd_ac(c)->fe_gone = true;
		fctl_agentd_refuse(a, c, why, (const char *)p + 4);
		return NULL;
	}
	if (p[4] > 2 || !text_ok(p + 5, n - 5, 256))
		return "bad event";
	fctl_agentd_refusal_event(a, c, why, p[4], n > 5 ? (const char *)p + 5 : NULL);
	return NULL;
}

/* One message of the front-end: NULL, or what was wrong with it. */
static const char *dispatch(struct agent *a)
{
	struct fctl_chan *ch = &a->fe.ch;
	const uint8_t *p = ch->msg;
	struct conn *c;

	if (ch->type == CH_OPEN)
		return on_open(a, p, ch->len);
	if (ch->type == CH_ACK || ch->type == CH_RESP || ch->type == CH_CONFIG)
		return "not a message of the front-end";
	if (!ch->id || ch->id > a->fe.max_id)
		return "a connection it never opened";
	c = proxy(a, ch->id);
	if (!c) /* closed here meanwhile: the front-end was told */
		return ch->type == CH_REQ || ch->type == CH_CLOSE || ch->type == CH_EVENT ||
				       ch->type == CH_REFUSE || ch->type == CH_AUTH
			       ? NULL
			       : "unknown";
	switch (ch->type) {
	case CH_AUTH:
		return on_auth(c, p, ch->len);
	case CH_REQ:
		return on_req(a, c);
	case CH_REFUSE:
	case CH_EVENT:
		return on_refusal(a, c, p, ch->len);
	case CH_CLOSE:
		fctl_agentd_ac(c)->fe_gone = true;
		fctl_agentd_conn_close(&a->ct, c);
		return NULL;
	}
	return "unknown";
}

/* Reads and dispatches what the channel holds; stops at ack (when given) and returns 1.
 * 0: nothing more now; < 0: the channel is gone. */
static int drain(struct agent *a, uint32_t *ack, char *err, size_t errlen)
{
	struct fctl_chan *ch = &a->fe.ch;
	int r = 0;

	while (ch->fd >= 0 && (r = fctl_chan_recv(ch)) == 1) {
		const char *bad = NULL;

		if (ch->type == CH_ACK && ack) {
			*ack = ch->len >= 4 ? fctl_chan_u32(ch->msg) : EPROTO;
			snprintf(err, errlen, "%.*s", ch->len > 4 ? (int)(ch->len - 4) : 0,
				 ch->len > 4 ? (const char *)ch->msg + 4 : "");
			fctl_chan_done(ch);
			return 1;
		}
		bad = dispatch(a);
		if (bad) {
			violation(a, bad);
			return -EPROTO;
		}
		fctl_chan_done(ch);
	}
	if (ch->fd < 0)
		return -EPIPE;
	if (r == -EPROTO)
		violation(a, "a header no message has");
	return r;
}

void fctl_agentd_fe_event(struct agent *a, uint32_t events)
{
	int r = 0;

	if (events & EPOLLOUT)
		r = fctl_chan_flush(&a->fe.ch);
	if (r != -EAGAIN && r < 0)
		fctl_agentd_log("the TLS front-end's channel: %s", strerror(-r));
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		r = drain(a, NULL, NULL, 0);
	if (r == -EPIPE || r == -ECONNRESET) {
		/* it is gone: reaped soon (SIGCHLD); read nothing more */
		epoll_ctl(a->ct.ep, EPOLL_CTL_DEL, a->fe.ch.fd, NULL);
		fctl_chan_release(&a->fe.ch);
	}
	watch(a);
}

/* The files of cfg, opened read-only for the front-end (-1 where none). */
static int open_files(const struct fctl_agent_config *cfg, int *fds, char *names, size_t nlen,
		      char *err, size_t errlen)
{
	const char *paths[FCTL_CHAN_FDS] = { cfg->cert, cfg->key, cfg->ca, cfg->crl, cfg->policy };
	size_t off = 0;

	for (int i = 0; i < FCTL_CHAN_FDS; i++) {
		int n;

		fds[i] = -1;
		if (!paths[i])
			continue;
		fds[i] = open(paths[i], O_RDONLY | O_CLOEXEC | O_NOCTTY);
		n = snprintf(names + off, nlen - off, "%s", paths[i]);
		if (fds[i] < 0 || n < 0 || (size_t)n >= nlen - off - 1) {
			int r = fds[i] < 0 ? -errno : -ENAMETOOLONG;

			snprintf(err, errlen, "'%s': %s", paths[i], strerror(-r));
			for (int j = 0; j <= i; j++)
				if (fds[j] >= 0)
					close(fds[j]);
			return r;
		}
		off += (size_t)n + 1;
	}
	return (int)off;
}

/* Waits for the front-end's CH_ACK, serving what else it sends meanwhile. */
static int wait_ack(struct agent *a, char *err, size_t errlen)
{
	uint32_t ack = 0;
	int r, waited = 0;

	for (;;) {
		struct pollfd p = { .fd = a->fe.ch.fd, .events = POLLIN };

		r = drain(a, &ack, err, errlen);
		if (r == 1)
			break;
		if (r < 0 || waited >= FE_ANSWER_MS) {
			snprintf(err, errlen, "the TLS front-end %s", r < 0 ? "is gone" : "does not answer");
			return r < 0 ? r : -ETIMEDOUT;
		}
		if (poll(&p, 1, 1000) == 0)
			waited += 1000;
	}
	if (ack > 1)
		return ack < 4096 ? -(int)ack : -EPROTO;
	return (int)ack;
}

int fctl_agentd_fe_configure(struct agent *a, const struct fctl_agent_config *cfg, char *err,
			     size_t errlen)
{
	uint8_t msg[FCTL_CHAN_SMALL];
	uint32_t v[10] = { cfg->max_frame, cfg->max_buffered, cfg->max_connections,
			   cfg->max_handshakes_per_address, cfg->handshake_timeout_s,
			   cfg->timeout_s, a->worker_uid, a->worker_gid, (uint32_t)getpid(), 0 };
	int fds[FCTL_CHAN_FDS], sent[FCTL_CHAN_FDS];
	unsigned n = 0;
	int len, r;

	len = open_files(cfg, fds, (char *)msg + sizeof(v),
			 sizeof(msg) - sizeof(v), err, errlen);
	if (len < 0)
		return len;
	for (int i = 0; i < FCTL_CHAN_FDS; i++)
		if (fds[i] >= 0) {
			v[9] |= 1u << i;
			sent[n++] = fds[i];
		}
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(v); i++)
		put_u32(msg + 4 * i, v[i]);
	a->fe.ch.max_len = cfg->max_frame + 1 > max_len(a) ? cfg->max_frame + 1 : max_len(a);
	r = fctl_chan_send_fds(&a->fe.ch, CH_CONFIG, 0, msg, sizeof(v) + (size_t)len, sent, n);
	for (unsigned i = 0; i < n; i++)
		close(sent[i]);
	if (r < 0) {
		snprintf(err, errlen, "cannot configure the TLS front-end: %s", strerror(-r));
		return r;
	}
	r = wait_ack(a, err, errlen);
	if (r >= 0)
		a->fe.ch.max_len = cfg->max_frame + 1;
	return r;
}

/* In the child: the channel on 3, the listener on 4, the binary on 5; nothing else. */
static _Noreturn void exec_frontend(const struct agent *a, int chan)
{
	static char *const argv[] = { "fabricctl", "agent", "--frontend", "3", NULL };
	extern char **environ;
	int null, ch, lfd, exe;
	sigset_t none;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	null = fcntl(open("/dev/null", O_RDWR | O_CLOEXEC), F_DUPFD, 10);
	ch = fcntl(chan, F_DUPFD, 10);
	lfd = fcntl(a->tcp_fd, F_DUPFD, 10);
	exe = fcntl(a->exe_fd, F_DUPFD, 10);
	if (null < 0 || ch < 0 || lfd < 0 || exe < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 ||
	    dup2(ch, 3) < 0 || dup2(lfd, 4) < 0 || dup3(exe, 5, O_CLOEXEC) < 0) {
		fctl_agentd_log("cannot pass the TLS front-end its sockets");
		_exit(2);
	}
	syscall(SYS_close_range, 6, ~0u, 0);
	syscall(SYS_execveat, 5, "", argv, environ, AT_EMPTY_PATH);
	fctl_agentd_log("cannot start the TLS front-end: %s", strerror(errno));
	_exit(2);
}

int fctl_agentd_fe_start(struct agent *a, char *err, size_t errlen)
{
	int sv[2], r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot start the TLS front-end: %s", strerror(-r));
		return r;
	}
	fflush(NULL); /* the program's buffered output, written once: not again by a child */
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(sv[0]);
		close(sv[1]);
		snprintf(err, errlen, "cannot start the TLS front-end: %s", strerror(-r));
		return r;
	}
	if (pid == 0)
		exec_frontend(a, sv[1]);
	close(sv[1]);
	a->fe.pid = pid;
	a->fe.ch.fd = sv[0];
	a->fe.ch.max_len = max_len(a);
	a->fe.max_id = 0;
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	r = fctl_agentd_fe_configure(a, &a->cfg, err, errlen);
	if (r > 0)
		fctl_agentd_log("warning: a CRL of '%s' is past its next update: every client it "
				"covers is refused until a fresh one is loaded (SIGHUP)", a->cfg.crl);
	if (r >= 0)
		r = fctl_agentd_ep_set(a, EPOLL_CTL_ADD, a->fe.ch.fd, EPOLLIN, &a->fe);
	return r < 0 ? r : 0;
}

void fctl_agentd_fe_stop(struct agent *a)
{
	if (a->fe.pid > 0) {
		kill(a->fe.pid, SIGKILL);
		waitpid(a->fe.pid, NULL, 0);
		a->fe.pid = 0;
	}
	if (a->fe.ch.fd >= 0)
		epoll_ctl(a->ct.ep, EPOLL_CTL_DEL, a->fe.ch.fd, NULL);
	fctl_chan_release(&a->fe.ch);
}

bool fctl_agentd_fe_reaped(struct agent *a, pid_t pid, int status)
{
	uint64_t now = fctl_agentd_now_ms();
	char d[160], err[512];

	if (pid != a->fe.pid || pid <= 0)
		return false;
	a->fe.pid = 0;
	fctl_agentd_fe_stop(a);
	for (struct conn *c = a->ct.conns; c; c = c->next)
		if (fctl_agentd_ac(c)->proxy && !c->closing) {
			fctl_agentd_ac(c)->fe_gone = true;
			fctl_agentd_conn_close(&a->ct, c);
		}
	if (!a->fe.window_ms || now - a->fe.window_ms > FE_WINDOW_MS) {
		a->fe.window_ms = now;
		a->fe.deaths = 0;
	}
	a->fe.deaths++;
	if (WIFSIGNALED(status))
		snprintf(d, sizeof(d), "the TLS front-end was killed by signal %d", WTERMSIG(status));
	else
		snprintf(d, sizeof(d), "the TLS front-end exited with %d", WEXITSTATUS(status));
	if (a->fe.deaths > FE_MAX_DEATHS) {
		fctl_agentd_audit_event(a, "frontend", "failed", NULL, d);
		snprintf(a->fatal_err, sizeof(a->fatal_err), "%s, its %u%s death within %u s", d,
			 a->fe.deaths, "th", FE_WINDOW_MS / 1000);
		a->fatal = -EIO;
		a->stop = true;
		return true;
	}
	fctl_agentd_audit_event(a, "frontend", "restarted", NULL, d);
	if (fctl_agentd_fe_start(a, err, sizeof(err)) < 0) {
		fctl_agentd_audit_event(a, "frontend", "failed", NULL, err);
		snprintf(a->fatal_err, sizeof(a->fatal_err), "%s", err);
		a->fatal = -EIO;
		a->stop = true;
	}
	return true;
}

void fctl_agentd_fe_respond(struct agent *a, struct conn *c)
{
	struct aconn *ac = fctl_agentd_ac(c);
	uint8_t flags = c->close_after ? 1 : 0;

	if (!ac->fe_gone && a->fe.ch.fd >= 0 &&
	    fctl_chan_send(&a->fe.ch, CH_RESP, c->rid, &flags, 1, c->out.data, c->out.len) < 0)
		ac->fe_gone = true;
	watch(a);
	c->writing = false;
	if (c->close_after) {
		ac->fe_gone = true; /* the front-end closes it after the response */
		fctl_agentd_conn_close(&a->ct, c);
		return;
	}
	fctl_buf_release(&c->out);
	c->out_off = 0;
	fctl_agentd_frame_free(c);
	fctl_agentd_conn_hold(&a->ct, c, 0);
	c->hdr_got = c->frame_got = 0;
}

void fctl_agentd_fe_close(struct agent *a, struct conn *c)
{
	struct aconn *ac = fctl_agentd_ac(c);
	if (!ac->fe_gone && a->fe.ch.fd >= 0)
		fctl_chan_send(&a->fe.ch, CH_CLOSE, c->rid, NULL, 0, NULL, 0);
	ac->fe_gone = true;
	watch(a);
}
