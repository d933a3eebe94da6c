// SPDX-License-Identifier: MIT
/*
 * The agent's event loop: one thread, epoll over listeners, connections, a
 * signalfd (TERM/INT/HUP/CHLD), two timerfds (periodic drift check, debounce
 * after link events) and a NETLINK_ROUTE socket subscribed to link and address
 * events. Nothing polls: with no traffic and no timer due the process sleeps
 * in epoll_wait. Requests that touch the engine run in a forked worker (one per
 * request, killed with the agent: PR_SET_PDEATHSIG) whose stdout and stderr go
 * to memfds that become the response's OUTPUT and ERROR.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "fctl/agent.h"
#include "fctl/engine.h"
#include "fctl/nl.h"
#include "fctl/rotation.h"
#include "fctl/tls.h"
#ifdef FCTL_HAVE_AUDIT
#include "fctl/audit.h"
#endif

#define EXIT_REFUSED 13 /* RESULT of a request the role does not allow */

enum conn_kind { C_UNIX, C_TLS, C_HTTP };

struct conn {
	struct conn *next;
	enum conn_kind kind;
	int fd;
	SSL *ssl;
	bool handshake;
	enum fctl_role role;
	char who[320];      /* "uid 0" or "CN=alice,OU=operator" */
	uid_t uid;
	bool has_uid;
	uint8_t hdr[FCTL_PROTO_HDR_LEN];
	size_t hdr_got;
	struct fctl_proto_hdr h;
	uint8_t *frame;
	size_t frame_got;
	char http[2048];
	size_t http_len;
	struct fctl_buf out;
	size_t out_off;
	bool writing, close_after;
	pid_t child;
	int fd_out, fd_err;
	uint32_t req_id;
	uint8_t req_type;
	uint32_t req_options;
	bool req_writes;
	char spool[PATH_MAX];
	uint64_t deadline; /* ms, 0 = none */
	bool dead;         /* peer gone while a worker runs */
};

struct agent {
	const struct fctl_agent_ops *ops;
	struct fctl_agent_config cfg;
	struct fctl_engine_opts eo;
	int ep, sfd, drift_tfd, debounce_tfd, nl_fd, unix_fd, tcp_fd, http_fd;
	SSL_CTX *ctx;
	struct fctl_tls_policy *pol;
	gid_t gid;
	bool has_gid;
	struct conn *conns;
	struct fctl_agent_stats st;
	unsigned writers;  /* workers that change the host */
	pid_t repair_child;
	bool stop;
	char host[256];
	struct fctl_nl *sa_nl; /* netlink of the SA requests, kept open between them */
#ifdef FCTL_HAVE_AUDIT
	struct fctl_audit *audit;
#endif
};

static void logmsg(const char *fmt, ...) FCTL_PRINTF(1, 2);

static void logmsg(const char *fmt, ...)
{
	va_list ap;

	fputs("fabricctl-agent: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static double wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * The one audit call site of the agent: refused connections and requests, applies,
 * rollbacks, recoveries, drift and repairs. Built without the audit library, the
 * event goes to the log only.
 */
static void audit_event(struct agent *a, const char *action, const char *result,
			const struct conn *c, const char *detail)
{
	logmsg("%s %s%s%s%s%s", action, result, c ? " by " : "", c ? c->who : "",
	       detail ? ": " : "", detail ? detail : "");
#ifdef FCTL_HAVE_AUDIT
	if (a->audit) {
		struct fctl_audit_entry e = {
			.action = action,
			.result = result,
			.actor_cert = c && c->kind == C_TLS ? c->who : NULL,
			.has_actor_uid = c && c->has_uid,
			.actor_uid = c ? c->uid : 0,
			.host = a->host,
			.detail = detail,
		};

		if (fctl_audit_append(a->audit, &e) < 0 || fctl_audit_sync(a->audit) < 0)
			logmsg("audit: %s", fctl_audit_error(a->audit));
	}
#else
	(void)a;
#endif
}

static int ep_set(struct agent *a, int op, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(a->ep, op, fd, &ev) < 0 ? -errno : 0;
}

/* --- listeners --- */

static int split_addr(const char *s, char *host, size_t hl, char *port, size_t pl)
{
	const char *colon = strrchr(s, ':');

	if (!colon || (size_t)(colon - s) >= hl || !colon[1] || strlen(colon + 1) >= pl)
		return -EINVAL;
	if (s[0] == '[' && colon > s + 1 && colon[-1] == ']')
		snprintf(host, hl, "%.*s", (int)(colon - s - 2), s + 1);
	else
		snprintf(host, hl, "%.*s", (int)(colon - s), s);
	snprintf(port, pl, "%s", colon + 1);
	return 0;
}

static int listen_tcp(const char *addr, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
	char host[256], port[16];
	int fd = -1, one = 1, r;

	if (split_addr(addr, host, sizeof(host), port, sizeof(port)) < 0) {
		snprintf(err, errlen, "'%s': expected ADDR:PORT", addr);
		return -EINVAL;
	}
	r = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (r) {
		snprintf(err, errlen, "'%s': %s", addr, gai_strerror(r));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, 64) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on %s: %s", addr, strerror(-r));
		if (fd >= 0)
			close(fd);
		fd = r;
	}
	freeaddrinfo(ai);
	return fd;
}

static int listen_unix(struct agent *a, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	const char *path = a->cfg.socket_path;
	char dir[PATH_MAX];
	char *slash;
	int fd, r;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "socket path '%s' is too long", path);
		return -ENAMETOOLONG;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
			r = -errno;
			snprintf(err, errlen, "cannot create '%s': %s", dir, strerror(-r));
			return r;
		}
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(path, a->has_gid ? 0660 : 0600) < 0 ||
	    (a->has_gid && chown(path, 0, a->gid) < 0) || listen(fd, 64) < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on '%s': %s", path, strerror(-r));
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd;
}

/* --- connections --- */

static struct conn *conn_new(struct agent *a, enum conn_kind kind, int fd)
{
	struct conn *c = fctl_calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->kind = kind;
	c->fd = fd;
	c->fd_out = c->fd_err = -1;
	c->deadline = now_ms() + (uint64_t)a->cfg.timeout_s * 1000;
	c->next = a->conns;
	a->conns = c;
	a->st.connections++;
	return c;
}

static void conn_free(struct agent *a, struct conn *c)
{
	for (struct conn **pp = &a->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (c->fd >= 0) {
		epoll_ctl(a->ep, EPOLL_CTL_DEL, c->fd, NULL);
		if (c->ssl)
			SSL_shutdown(c->ssl);
		close(c->fd);
	}
	SSL_free(c->ssl);
	free(c->frame);
	fctl_buf_release(&c->out);
	if (c->fd_out >= 0)
		close(c->fd_out);
	if (c->fd_err >= 0)
		close(c->fd_err);
	if (c->spool[0])
		unlink(c->spool);
	a->st.connections--;
	free(c);
}

/* Closes the connection now, or, while its worker runs, once the worker is reaped. */
static void conn_close(struct agent *a, struct conn *c)
{
	if (!c->child) {
		conn_free(a, c);
		return;
	}
	c->dead = true;
	if (c->fd >= 0) {
		epoll_ctl(a->ep, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		c->fd = -1;
	}
}

/* >0 bytes, 0 end of stream, -EAGAIN, < 0 error */
static ssize_t conn_read(struct conn *c, void *p, size_t n)
{
	ssize_t k;

	if (c->ssl) {
		size_t done = 0;

		if (SSL_read_ex(c->ssl, p, n, &done) == 1)
			return (ssize_t)done;
		switch (SSL_get_error(c->ssl, 0)) {
		case SSL_ERROR_WANT_READ:
		case SSL_ERROR_WANT_WRITE:
			return -EAGAIN;
		case SSL_ERROR_ZERO_RETURN:
			return 0;
		default:
			return -ECONNRESET;
		}
	}
	k = recv(c->fd, p, n, 0);
	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
	return k;
}

static ssize_t conn_write(struct conn *c, const void *p, size_t n)
{
	ssize_t k;

	if (c->ssl) {
		size_t done = 0;

		if (SSL_write_ex(c->ssl, p, n, &done) == 1)
			return (ssize_t)done;
		switch (SSL_get_error(c->ssl, 0)) {
		case SSL_ERROR_WANT_READ:
		case SSL_ERROR_WANT_WRITE:
			return -EAGAIN;
		default:
			return -ECONNRESET;
		}
	}
	k = send(c->fd, p, n, MSG_NOSIGNAL);
	if (k < 0)
		return errno == EAGAIN || errno == EINTR ? -EAGAIN : -errno;
	return k;
}

static void conn_flush(struct agent *a, struct conn *c);
static void conn_readable(struct agent *a, struct conn *c);

static void respond(struct agent *a, struct conn *c, uint32_t id, uint32_t result,
		    const void *out, size_t out_len, const char *err, size_t err_len,
		    const struct fctl_msg *extra)
{
	struct fctl_msg m = { .type = FCTL_MSG_RESPONSE, .id = id, .result = result };

	if (extra)
		m = *extra;
	m.type = FCTL_MSG_RESPONSE;
	m.id = id;
	m.result = result;
	m.present |= FCTL_HAS_RESULT;
	if (out_len) {
		m.present |= FCTL_HAS_OUTPUT;
		m.output = out;
		m.output_len = (uint32_t)out_len;
	}
	if (err_len) {
		if (err_len > FCTL_PROTO_MAX_ERROR)
			err_len = FCTL_PROTO_MAX_ERROR;
		m.present |= FCTL_HAS_ERROR;
		m.error = err;
		m.error_len = (uint32_t)err_len;
	}
	fctl_buf_reset(&c->out);
	c->out_off = 0;
	if (fctl_proto_encode(&m, &c->out) < 0) {
		/* output over the frame limit: say so instead */
		static const char big[] = "fabricctl agent: the response exceeds the frame limit\n";
		struct fctl_msg e = { .type = FCTL_MSG_RESPONSE, .id = id, .result = 2,
				      .present = FCTL_HAS_RESULT | FCTL_HAS_ERROR,
				      .error = big, .error_len = sizeof(big) - 1 };

		fctl_buf_reset(&c->out);
		fctl_proto_encode(&e, &c->out);
	}
	c->writing = true;
	c->deadline = now_ms() + (uint64_t)a->cfg.timeout_s * 1000;
	conn_flush(a, c);
}

static void respond_error(struct agent *a, struct conn *c, uint32_t id, uint32_t result,
			  const char *fmt, ...) FCTL_PRINTF(5, 6);

static void respond_error(struct agent *a, struct conn *c, uint32_t id, uint32_t result,
			  const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int n;

	n = snprintf(msg, sizeof(msg), "fabricctl agent: ");
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	strcat(msg, "\n");
	respond(a, c, id, result, NULL, 0, msg, strlen(msg), NULL);
}

static void conn_flush(struct agent *a, struct conn *c)
{
	while (c->out_off < c->out.len) {
		ssize_t k = conn_write(c, c->out.data + c->out_off, c->out.len - c->out_off);

		if (k == -EAGAIN) {
			ep_set(a, EPOLL_CTL_MOD, c->fd, EPOLLOUT, c);
			return;
		}
		if (k <= 0) {
			conn_close(a, c);
			return;
		}
		c->out_off += (size_t)k;
	}
	c->writing = false;
	if (c->close_after || c->kind == C_HTTP) {
		conn_close(a, c);
		return;
	}
	/* ready for the next request */
	free(c->frame);
	c->frame = NULL;
	c->hdr_got = c->frame_got = 0;
	c->deadline = now_ms() + (uint64_t)a->cfg.timeout_s * 1000;
	ep_set(a, EPOLL_CTL_MOD, c->fd, EPOLLIN, c);
	if (c->ssl && SSL_pending(c->ssl) > 0)
		conn_readable(a, c);
}

/* --- requests --- */

static void status_output(struct agent *a, const struct conn *c, bool json, struct fctl_buf *o)
{
	const struct fctl_agent_stats *s = &a->st;

	if (json) {
		fctl_buf_puts(o, "{\"host\":");
		fctl_buf_json_str(o, a->host);
		fctl_buf_printf(o, ",\"agent\":\"fabricctl %s\",\"protocol\":%d,\"role\":\"%s\"",
				FCTL_VERSION, FCTL_PROTO_VERSION, fctl_role_name(c->role));
		if (s->applied)
			fctl_buf_printf(o, ",\"applied_version\":%" PRIu64, s->applied_version);
		else
			fctl_buf_puts(o, ",\"applied_version\":null");
		if (s->drift_known)
			fctl_buf_printf(o, ",\"drift\":%s,\"drift_checked\":%.3f",
					s->drift ? "true" : "false", s->drift_last_check);
		else
			fctl_buf_puts(o, ",\"drift\":null");
		fctl_buf_printf(o, ",\"drift_repair\":%s,\"busy\":%s,\"uptime_seconds\":%.0f}\n",
				a->cfg.drift_repair ? "true" : "false",
				a->writers ? "true" : "false", wall() - s->start_time);
		return;
	}
	fctl_buf_printf(o, "agent on %s (fabricctl %s, protocol %d), your role: %s\n", a->host,
			FCTL_VERSION, FCTL_PROTO_VERSION, fctl_role_name(c->role));
	if (s->applied)
		fctl_buf_printf(o, "applied profile version: %" PRIu64 "\n", s->applied_version);
	else
		fctl_buf_puts(o, "applied profile version: none\n");
	if (s->drift_known)
		fctl_buf_printf(o, "drift: %s\n", s->drift ? "yes" : "no");
}

static int write_spool(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	size_t off = 0;
	int fd, r = 0;

	if (mkdir(a->cfg.profile_dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	snprintf(c->spool, sizeof(c->spool), "%s/.remote-%d-%u.yaml", a->cfg.profile_dir,
		 (int)getpid(), c->req_id);
	fd = open(c->spool, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = -errno;
		c->spool[0] = '\0';
		return r;
	}
	while (off < m->profile_len && r == 0) {
		ssize_t k = write(fd, m->profile + off, m->profile_len - off);

		if (k < 0 && errno != EINTR)
			r = -errno;
		else if (k > 0)
			off += (size_t)k;
	}
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

static void worker(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	struct fctl_agent_request rq = {
		.type = m->type,
		.options = m->options,
		.host = (m->present & FCTL_HAS_HOST) ? m->host : a->cfg.host,
		.profile_path = c->spool[0] ? c->spool : NULL,
		.to_version = m->to_version,
		.state_dir = a->cfg.state_dir,
		.netns = a->cfg.netns,
	};
	sigset_t none;
	int code, null;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null >= 0)
		dup2(null, 0);
	dup2(c->fd_out, 1);
	dup2(c->fd_err, 2);
	code = a->ops->run(a->ops->ctx, &rq);
	fflush(stdout);
	fflush(stderr);
	_exit(code & 0xff);
}

static int spawn(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	pid_t pid;
	int r;

	if (m->present & FCTL_HAS_PROFILE) {
		r = write_spool(a, c, m);
		if (r < 0)
			return r;
	}
	c->fd_out = memfd_create("fctl-out", MFD_CLOEXEC);
	c->fd_err = memfd_create("fctl-err", MFD_CLOEXEC);
	if (c->fd_out < 0 || c->fd_err < 0)
		return -errno;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		worker(a, c, m); /* does not return */
	c->child = pid;
	c->deadline = 0;
	if (c->req_writes)
		a->writers++;
	epoll_ctl(a->ep, EPOLL_CTL_DEL, c->fd, NULL);
	return 0;
}

/* --- SA-level requests of key rotation (docs/rotation.md, docs/protocol.md) ---
 *
 * Handled in the loop itself (each is one or two netlink round trips): only a
 * key-custodian certificate (or root on the Unix socket) may send them. The SAK
 * arrives in a KEY TLV, goes into one netlink message, and both are wiped at once;
 * records and logs name it by its key check value. */

#define ROTATION_LEASE_S 600 /* a rotation that dies leaves SAs of two keys this long at most */

/* AES-ECB(key, 0^128)[0..2], the key check value of fctl/keys.h */
static void sak_kcv(const uint8_t *key, size_t len, char out[7])
{
	static const uint8_t zero[16];
	uint8_t blk[32];
	int n = 0;
	EVP_CIPHER_CTX *x = EVP_CIPHER_CTX_new();

	snprintf(out, 7, "000000");
	if (x && EVP_EncryptInit_ex(x, len == 32 ? EVP_aes_256_ecb() : EVP_aes_128_ecb(), NULL, key,
				    NULL) == 1 &&
	    EVP_CIPHER_CTX_set_padding(x, 0) == 1 &&
	    EVP_EncryptUpdate(x, blk, &n, zero, sizeof(zero)) == 1 && n >= 3)
		fctl_format_hex(blk, 3, out);
	EVP_CIPHER_CTX_free(x);
	fctl_memzero(blk, sizeof(blk));
}

static void sa_audit(struct agent *a, const struct conn *c, const char *action, bool ok,
		     const struct fctl_msg *m, const char *kcv, const char *detail)
{
	char keyid[2 * FCTL_KEYID_LEN + 1] = "", line[900];
	const char *ids[1], *kcvs[1];

	if (m->keyid)
		fctl_format_hex(m->keyid, FCTL_KEYID_LEN, keyid);
	snprintf(line, sizeof(line), "%s an %u%s%s%s%s%s%s: %s", m->ifname, m->an,
		 kcv ? " kcv " : "", kcv ? kcv : "", keyid[0] ? " keyid " : "", keyid,
		 (m->present & FCTL_HAS_KEY_VERSION) ? " key-version " : "",
		 (m->present & FCTL_HAS_KEY_VERSION) ? "set" : "", detail);
	logmsg("%s %s by %s: %s", action, ok ? "applied" : "failed", c->who, line);
#ifdef FCTL_HAVE_AUDIT
	if (a->audit) {
		char kid[FCTL_AUDIT_KEYID_LEN + 1];
		struct fctl_audit_entry e = {
			.action = action,
			.result = ok ? "applied" : "failed",
			.actor_cert = c->kind == C_TLS ? c->who : NULL,
			.has_actor_uid = c->has_uid,
			.actor_uid = c->uid,
			.host = a->host,
			.secy = m->ifname,
			.detail = detail,
		};

		if (keyid[0]) {
			snprintf(kid, sizeof(kid), "%.*s", FCTL_AUDIT_KEYID_LEN, keyid);
			ids[0] = kid;
			e.key_ids = ids;
			e.n_key_ids = 1;
		}
		if (kcv) {
			kcvs[0] = kcv;
			e.kcvs = kcvs;
			e.n_kcvs = 1;
		}
		if (fctl_audit_append(a->audit, &e) < 0 || fctl_audit_sync(a->audit) < 0)
			logmsg("audit: %s", fctl_audit_error(a->audit));
	}
#else
	(void)a;
	(void)ids;
	(void)kcvs;
#endif
}

static int sa_exec(struct fctl_nl *nl, struct fctl_op *op, const uint8_t *key, size_t key_len,
		   char *err, size_t errlen)
{
	struct fctl_nl_err e;
	int r = fctl_nl_exec(nl, op, key, key_len, &e);

	if (r < 0)
		snprintf(err, errlen, "%s an %u on %s: %s", fctl_op_kind_name(op->kind), op->an,
			 op->ifname, e.msg[0] ? e.msg : strerror(-r));
	return r;
}

/* The SecY ifname alone (the cost of a request must not grow with the host's links):
 * 0 with *l in *hs (the caller frees *hs), -ENODEV when it is missing or no SecY. */
static int read_secy(struct fctl_nl *nl, const char *ifname, struct fctl_host_state **hs,
		     const struct fctl_link **l)
{
	int r = fctl_nl_read_link(nl, ifname, hs);

	if (r == -EMEDIUMTYPE)
		r = -ENODEV;
	*l = r == 0 ? fctl_host_state_find(*hs, ifname) : NULL;
	if (r == 0 && (!*l || (*l)->kind != FCTL_LINK_MACSEC))
		r = -ENODEV;
	return r;
}

static void sa_dump(struct fctl_nl *nl, const struct fctl_msg *m, struct fctl_buf *o, char *err,
		    size_t errlen, int *rp)
{
	struct fctl_host_state *hs = NULL;
	struct fctl_macsec_stats *st = calloc(1, sizeof(*st));
	const struct fctl_link *l = NULL;
	char kid[2 * FCTL_KEYID_LEN + 1];
	int r;

	r = st ? read_secy(nl, m->ifname, &hs, &l) : -ENOMEM;
	if (r == 0)
		r = fctl_nl_read_macsec_stats(nl, m->ifname, st);
	if (r < 0) {
		snprintf(err, errlen, "cannot read %s: %s", m->ifname, strerror(-r));
		goto out;
	}
	fctl_buf_printf(o, "secy %s sci %016" PRIx64 " encoding_sa %u cipher %s\n", l->name,
			l->macsec.sci, l->macsec.encoding_sa, fctl_cipher_name(l->macsec.cipher));
	for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
		const struct fctl_sa *s = &l->macsec.txsa[an];

		if (!s->present)
			continue;
		fctl_format_hex(s->keyid, FCTL_KEYID_LEN, kid);
		fctl_buf_printf(o, "tx an %u active %d pn %" PRIu64 " keyid %s out_pkts %u\n", an,
				s->active, s->pn, s->has_keyid ? kid : "-",
				st->txsa[an].out_pkts_encrypted + st->txsa[an].out_pkts_protected);
	}
	for (size_t i = 0; i < l->macsec.n_rxsc; i++) {
		const struct fctl_rxsc *sc = &l->macsec.rxsc[i];
		const struct fctl_macsec_rxsc_stats *rs = NULL;

		for (size_t j = 0; j < st->n_rxsc; j++)
			if (st->rxsc[j].sci == sc->sci)
				rs = &st->rxsc[j];
		fctl_buf_printf(o, "rxsc sci %016" PRIx64 " active %d not_valid %" PRIu64
				" not_using_sa %" PRIu64 " unused_sa %" PRIu64 " invalid %" PRIu64
				" late %" PRIu64 "\n", sc->sci, sc->active,
				rs ? rs->in_pkts_not_valid : 0, rs ? rs->in_pkts_not_using_sa : 0,
				rs ? rs->in_pkts_unused_sa : 0, rs ? rs->in_pkts_invalid : 0,
				rs ? rs->in_pkts_late : 0);
		for (unsigned an = 0; an < FCTL_MAX_AN; an++) {
			const struct fctl_sa *s = &sc->sa[an];
			const struct fctl_macsec_sa_stats *ss = rs ? &rs->sa[an] : NULL;

			if (!s->present)
				continue;
			fctl_format_hex(s->keyid, FCTL_KEYID_LEN, kid);
			fctl_buf_printf(o, "rx sci %016" PRIx64 " an %u active %d pn %" PRIu64
					" keyid %s ok %u not_valid %u not_using_sa %u unused_sa %u"
					" invalid %u\n", sc->sci, an, s->active, s->pn,
					s->has_keyid ? kid : "-", ss ? ss->in_pkts_ok : 0,
					ss ? ss->in_pkts_not_valid : 0, ss ? ss->in_pkts_not_using_sa : 0,
					ss ? ss->in_pkts_unused_sa : 0, ss ? ss->in_pkts_invalid : 0);
		}
	}
out:
	fctl_host_state_free(hs);
	free(st);
	*rp = r;
}

static int sa_cipher(struct fctl_nl *nl, const char *ifname, struct fctl_macsec *out)
{
	struct fctl_host_state *hs = NULL;
	const struct fctl_link *l;
	int r = read_secy(nl, ifname, &hs, &l);

	if (r == 0) {
		out->cipher = l->macsec.cipher;
		out->encoding_sa = l->macsec.encoding_sa;
		out->sci = l->macsec.sci;
		memcpy(out->txsa, l->macsec.txsa, sizeof(out->txsa));
	}
	fctl_host_state_free(hs);
	return r;
}

/* The SAK in the request frame: zeroed as soon as it went into the netlink message */
static void wipe_key(struct conn *c, const struct fctl_msg *m)
{
	if (m->key && c->frame)
		fctl_memzero(c->frame + (m->key - c->frame), m->key_len);
}

static void sa_request(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	const char *tn = fctl_proto_type_name(m->type);
	char rdir[PATH_MAX], err[600] = "", detail[700] = "", kcv[7];
	struct fctl_rotation_cur cur = { 0 };
	struct fctl_buf o = { 0 };
	struct fctl_macsec sec = { 0 };
	struct fctl_nl *nl = NULL;
	struct fctl_op op;
	bool has_cur;
	int r;

	if (c->role != FCTL_ROLE_KEY_CUSTODIAN && c->role != FCTL_ROLE_LOCAL) {
		char d[128];

		a->st.refused[FCTL_REFUSED_ROLE]++;
		snprintf(d, sizeof(d), "role %s may not %s (key-custodian only)",
			 fctl_role_name(c->role), tn);
		audit_event(a, tn, "refused", c, d);
		wipe_key(c, m);
		respond_error(a, c, m->id, EXIT_REFUSED, "permission denied: %s", d);
		return;
	}
	if (a->writers) {
		wipe_key(c, m);
		respond_error(a, c, m->id, 2, "an apply is running on this host: try again");
		return;
	}
	if (m->key)
		sak_kcv(m->key, m->key_len, kcv);
	fctl_rotation_dir(a->cfg.state_dir, a->cfg.netns, rdir, sizeof(rdir));
	has_cur = fctl_rotation_read(rdir, m->ifname, &cur) == 0;
	/* one netlink handle for all SA requests (a rotation of N links sends ~7N): its
	 * name -> ifindex map is refilled by the read each request starts with */
	r = a->sa_nl ? 0 : fctl_nl_open(a->cfg.netns, &a->sa_nl);
	if (r < 0) {
		snprintf(err, sizeof(err), "cannot open netlink: %s", strerror(-r));
		goto done;
	}
	nl = a->sa_nl;
	if (m->type == FCTL_MSG_SA_DUMP) {
		sa_dump(nl, m, &o, err, sizeof(err), &r);
		if (r == 0 && has_cur) {
			char kid[2 * FCTL_KEYID_LEN + 1] = "-";

			if (cur.has_keyid)
				fctl_format_hex(cur.keyid, FCTL_KEYID_LEN, kid);
			fctl_buf_printf(&o, "rotation an %u version %" PRIu32 " busy %" PRIu64
					" keyid %s\n", cur.an, cur.version, cur.busy_until, kid);
		}
		goto done;
	}
	r = sa_cipher(nl, m->ifname, &sec);
	if (r < 0) {
		snprintf(err, sizeof(err), "%s: not a MACsec interface here (%s)", m->ifname,
			 strerror(-r));
		goto done;
	}
	if (!has_cur) { /* the state render gives before the first rotation */
		cur.an = sec.encoding_sa;
		cur.version = 0;
		/* named by the key on the encoding SA, so it never passes for another key's */
		cur.has_keyid = sec.txsa[sec.encoding_sa].present && sec.txsa[sec.encoding_sa].has_keyid;
		if (cur.has_keyid)
			memcpy(cur.keyid, sec.txsa[sec.encoding_sa].keyid, FCTL_KEYID_LEN);
	}
	memset(&op, 0, sizeof(op));
	snprintf(op.ifname, sizeof(op.ifname), "%s", m->ifname);
	op.an = (uint8_t)m->an;
	op.sci = m->sci;
	switch (m->type) {
	case FCTL_MSG_RXSA_INSTALL:
	case FCTL_MSG_TXSA_STAGE:
		if (m->key_len != fctl_cipher_key_len(sec.cipher) || !m->pn ||
		    (fctl_cipher_is_xpn(sec.cipher) && (!m->salt || !(m->present & FCTL_HAS_SSCI)))) {
			r = -EINVAL;
			snprintf(err, sizeof(err), "%s: a %u-byte key, PN %" PRIu64 "%s for %s", tn,
				 m->key_len, m->pn, fctl_cipher_is_xpn(sec.cipher) ? ", SSCI and salt" : "",
				 fctl_cipher_name(sec.cipher));
			break;
		}
		if (m->an == sec.encoding_sa) {
			r = -EBUSY;
			snprintf(err, sizeof(err), "%s: AN %u is the encoding SA in use", tn, m->an);
			break;
		}
		op.kind = m->type == FCTL_MSG_RXSA_INSTALL ? FCTL_OP_RXSA_ADD : FCTL_OP_TXSA_ADD;
		op.sa.present = true;
		op.sa.active = m->type == FCTL_MSG_RXSA_INSTALL;
		op.sa.pn = m->pn;
		memcpy(op.sa.keyid, m->keyid, FCTL_KEYID_LEN);
		op.sa.has_keyid = true;
		if (m->salt) {
			memcpy(op.sa.salt, m->salt, FCTL_SALT_LEN);
			op.sa.has_salt = true;
			op.sa.ssci = m->ssci;
		}
		/* a lease first: drift checks and applies keep off two-key SecYs */
		cur.busy_until = (uint64_t)time(NULL) + ROTATION_LEASE_S;
		r = fctl_rotation_write(rdir, m->ifname, &cur);
		if (r < 0) {
			snprintf(err, sizeof(err), "cannot write %s/%s: %s", rdir, m->ifname,
				 strerror(-r));
			break;
		}
		r = sa_exec(nl, &op, m->key, m->key_len, err, sizeof(err));
		snprintf(detail, sizeof(detail), "tx sa staged inactive, pn %" PRIu64, m->pn);
		if (m->type == FCTL_MSG_RXSA_INSTALL) {
			char sci[24];

			fctl_sci_format(m->sci, sci);
			snprintf(detail, sizeof(detail), "rx sa active, peer sci %s, pn %" PRIu64, sci,
				 m->pn);
		}
		break;
	case FCTL_MSG_TXSA_SWITCH:
		/* the staged TX SA must hold the key the record will name */
		if (m->keyid && (!sec.txsa[m->an].present || !sec.txsa[m->an].has_keyid ||
				 memcmp(sec.txsa[m->an].keyid, m->keyid, FCTL_KEYID_LEN) != 0)) {
			r = -ESTALE;
			snprintf(err, sizeof(err), "%s: the TX SA on AN %u %s", tn, m->an,
				 sec.txsa[m->an].present ? "holds another key (keyid differs)"
							 : "is not there (stage it first)");
			break;
		}
		/* activate first, then the encoding SA: the other order stops the SecY */
		op.kind = FCTL_OP_TXSA_UPD;
		op.sa.present = op.sa.active = true;
		r = sa_exec(nl, &op, NULL, 0, err, sizeof(err));
		/* fall through: set the encoding SA */
		/* FALLTHROUGH */
	case FCTL_MSG_ENCODING_SA:
		if (r < 0)
			break;
		memset(&op, 0, sizeof(op));
		op.kind = FCTL_OP_LINK_CHANGE;
		snprintf(op.ifname, sizeof(op.ifname), "%s", m->ifname);
		op.link.kind = FCTL_LINK_MACSEC;
		snprintf(op.link.name, sizeof(op.link.name), "%s", m->ifname);
		op.link.macsec.encoding_sa = (uint8_t)m->an;
		op.link.macsec.cipher = sec.cipher;
		op.changes = FCTL_CHG_ENCODING_SA;
		r = sa_exec(nl, &op, NULL, 0, err, sizeof(err));
		if (r == 0) {
			cur.an = (uint8_t)m->an;
			cur.version = m->key_version;
			/* the record names the key reference it belongs to (when told) */
			cur.has_keyid = m->keyid != NULL;
			if (m->keyid)
				memcpy(cur.keyid, m->keyid, FCTL_KEYID_LEN);
			r = fctl_rotation_write(rdir, m->ifname, &cur);
			if (r < 0)
				snprintf(err, sizeof(err), "encoding SA set, but %s/%s not written: %s",
					 rdir, m->ifname, strerror(-r));
		}
		snprintf(detail, sizeof(detail), "%s encoding sa %u, key version %" PRIu32,
			 m->type == FCTL_MSG_TXSA_SWITCH ? "tx sa activated, then" : "rollback:",
			 m->an, m->key_version);
		break;
	case FCTL_MSG_SA_RETIRE:
		if (m->an == sec.encoding_sa && !(m->present & FCTL_HAS_SCI)) {
			r = -EBUSY;
			snprintf(err, sizeof(err), "%s: AN %u is the encoding SA in use", tn, m->an);
			break;
		}
		op.kind = (m->present & FCTL_HAS_SCI) ? FCTL_OP_RXSA_UPD : FCTL_OP_TXSA_UPD;
		op.sa.present = true;
		op.sa.active = false;
		r = sa_exec(nl, &op, NULL, 0, err, sizeof(err));
		if (r == -ENODEV || r == -ENOENT || r == -ENXIO)
			r = 0; /* gone already: retiring is idempotent */
		else if (r == 0) {
			op.kind = (m->present & FCTL_HAS_SCI) ? FCTL_OP_RXSA_DEL : FCTL_OP_TXSA_DEL;
			r = sa_exec(nl, &op, NULL, 0, err, sizeof(err));
		}
		if (r == 0 && !(m->present & FCTL_HAS_SCI) && cur.busy_until) {
			/* the TX SA goes last in a retirement: the lease ends */
			cur.busy_until = 0;
			r = fctl_rotation_write(rdir, m->ifname, &cur);
		}
		if (m->present & FCTL_HAS_SCI) {
			char sci[24];

			fctl_sci_format(m->sci, sci);
			snprintf(detail, sizeof(detail), "rx sa of %s deactivated and deleted", sci);
		} else {
			snprintf(detail, sizeof(detail), "tx sa deactivated and deleted");
		}
		break;
	default:
		r = -EINVAL;
	}
	sa_audit(a, c, tn, r == 0, m, m->key ? kcv : NULL, r == 0 ? detail : err);
done:
	wipe_key(c, m);
	if (r < 0 && nl) { /* a fresh socket for the next request, whatever went wrong */
		fctl_nl_close(nl);
		a->sa_nl = NULL;
	}
	if (r < 0)
		respond_error(a, c, m->id, 1, "%s", err[0] ? err : strerror(-r));
	else
		respond(a, c, m->id, 0, o.data, o.len, NULL, 0, NULL);
	fctl_buf_release(&o);
}

static void handle_request(struct agent *a, struct conn *c, const struct fctl_msg *m)
{
	const char *tn = fctl_proto_type_name(m->type);
	int r;

	c->req_id = m->id;
	c->req_type = m->type;
	c->req_options = m->options;
	c->req_writes = m->type == FCTL_MSG_ROLLBACK || m->type == FCTL_MSG_RECOVER ||
			(m->type == FCTL_MSG_APPLY && !(m->options & FCTL_OPT_DRY_RUN));
	if (fctl_proto_is_sa_request(m->type)) {
		sa_request(a, c, m);
		return;
	}
	if (!fctl_role_allows(c->role, m->type, m->options)) {
		char d[128];

		a->st.refused[FCTL_REFUSED_ROLE]++;
		snprintf(d, sizeof(d), "role %s may not %s", fctl_role_name(c->role), tn);
		audit_event(a, tn, "refused", c, d);
		respond_error(a, c, m->id, EXIT_REFUSED, "permission denied: %s", d);
		return;
	}
	if (m->type == FCTL_MSG_HELLO) {
		struct fctl_msg x = { 0 };
		int v = fctl_proto_negotiate(m->version_min, m->version_max);

		if (v < 0) {
			respond_error(a, c, m->id, 2, "no common protocol version (agent speaks 1..%d)",
				      FCTL_PROTO_VERSION);
			c->close_after = true;
			return;
		}
		x.present = FCTL_HAS_ROLE | FCTL_HAS_AGENT | FCTL_HAS_VERSION_MAX;
		x.version_max = (uint16_t)v;
		snprintf(x.role, sizeof(x.role), "%s", fctl_role_name(c->role));
		snprintf(x.agent, sizeof(x.agent), "%s fabricctl %s", a->host, FCTL_VERSION);
		a->st.requests[m->type][0]++;
		respond(a, c, m->id, 0, NULL, 0, NULL, 0, &x);
		return;
	}
	if (m->type == FCTL_MSG_STATUS) {
		struct fctl_buf o = { 0 };

		status_output(a, c, m->options & FCTL_OPT_JSON, &o);
		a->st.requests[m->type][0]++;
		respond(a, c, m->id, 0, o.data, o.len, NULL, 0, NULL);
		fctl_buf_release(&o);
		return;
	}
	if (c->req_writes) {
		char rdir[PATH_MAX], ifn[FCTL_IFNAMSIZ];

		fctl_rotation_dir(a->cfg.state_dir, a->cfg.netns, rdir, sizeof(rdir));
		if (fctl_rotation_busy(rdir, ifn, sizeof(ifn))) {
			a->st.requests[m->type][1]++;
			respond_error(a, c, m->id, 2, "a key rotation is in progress on '%s': try again",
				      ifn);
			return;
		}
	}
	r = spawn(a, c, m);
	if (r < 0) {
		a->st.requests[m->type][1]++;
		respond_error(a, c, m->id, 2, "cannot start the %s: %s", tn, strerror(-r));
	}
}

static void refuse_frame(struct agent *a, struct conn *c, enum fctl_refusal why, uint32_t id,
			 const char *text)
{
	a->st.refused[why]++;
	audit_event(a, "request", "refused", c, text);
	c->close_after = true;
	respond_error(a, c, id, 2, "%s", text);
}

static void conn_readable(struct agent *a, struct conn *c)
{
	for (;;) {
		struct fctl_msg m;
		char why[200];
		ssize_t k;
		int r;

		if (c->writing || c->child || c->close_after)
			return;
		if (c->hdr_got < sizeof(c->hdr)) {
			k = conn_read(c, c->hdr + c->hdr_got, sizeof(c->hdr) - c->hdr_got);
		} else {
			k = conn_read(c, c->frame + FCTL_PROTO_HDR_LEN + c->frame_got,
				      c->h.length - c->frame_got);
		}
		if (k == -EAGAIN)
			return;
		if (k <= 0) {
			conn_close(a, c);
			return;
		}
		if (c->hdr_got < sizeof(c->hdr)) {
			c->hdr_got += (size_t)k;
			if (c->hdr_got < sizeof(c->hdr))
				continue;
			r = fctl_proto_hdr_parse(c->hdr, sizeof(c->hdr), a->cfg.max_frame, &c->h);
			if (r == -EMSGSIZE) {
				snprintf(why, sizeof(why), "frame of %u bytes exceeds the limit of %u",
					 (unsigned)(c->hdr[12] << 24 | c->hdr[13] << 16 |
						    c->hdr[14] << 8 | c->hdr[15]),
					 a->cfg.max_frame - FCTL_PROTO_HDR_LEN);
				refuse_frame(a, c, FCTL_REFUSED_OVERSIZED, 0, why);
				return;
			}
			if (r < 0) {
				fctl_proto_decode(c->hdr, sizeof(c->hdr), a->cfg.max_frame, &m, why,
						  sizeof(why));
				refuse_frame(a, c, FCTL_REFUSED_MALFORMED, 0, why);
				return;
			}
			c->frame = malloc(FCTL_PROTO_HDR_LEN + (size_t)c->h.length + 1);
			if (!c->frame) {
				conn_close(a, c);
				return;
			}
			memcpy(c->frame, c->hdr, sizeof(c->hdr));
			c->frame_got = 0;
		} else {
			c->frame_got += (size_t)k;
		}
		if (c->frame_got < c->h.length)
			continue;
		r = fctl_proto_decode(c->frame, FCTL_PROTO_HDR_LEN + c->h.length, a->cfg.max_frame,
				      &m, why, sizeof(why));
		if (r == 0 && m.type == FCTL_MSG_RESPONSE) {
			r = -EPROTO;
			snprintf(why, sizeof(why), "a response is not a request");
		}
		if (r < 0) {
			refuse_frame(a, c, FCTL_REFUSED_MALFORMED, c->h.id, why);
			return;
		}
		handle_request(a, c, &m);
		/* handle_request responded (or started a worker): the frame is consumed */
	}
}

static void tls_handshake(struct agent *a, struct conn *c)
{
	int r = SSL_do_handshake(c->ssl);
	char e[256];

	if (r != 1) {
		int se = SSL_get_error(c->ssl, r);

		if (se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE) {
			ep_set(a, EPOLL_CTL_MOD, c->fd, se == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT,
			       c);
			return;
		}
		fctl_tls_error(c->ssl, e, sizeof(e));
		a->st.refused[FCTL_REFUSED_NO_CERT]++;
		audit_event(a, "connect", "refused", c, e);
		conn_close(a, c);
		return;
	}
	c->handshake = false;
	if (fctl_tls_peer_role(c->ssl, a->pol, &c->role, c->who, sizeof(c->who)) < 0 ||
	    c->role == FCTL_ROLE_NONE) {
		a->st.refused[FCTL_REFUSED_NO_ROLE]++;
		audit_event(a, "connect", "refused", c, "the certificate names no role");
		conn_close(a, c);
		return;
	}
	ep_set(a, EPOLL_CTL_MOD, c->fd, EPOLLIN, c);
	conn_readable(a, c);
}

static void http_readable(struct agent *a, struct conn *c)
{
	struct fctl_buf body = { 0 }, resp = { 0 };
	ssize_t k = conn_read(c, c->http + c->http_len, sizeof(c->http) - 1 - c->http_len);

	if (k == -EAGAIN)
		return;
	if (k <= 0) {
		conn_close(a, c);
		return;
	}
	c->http_len += (size_t)k;
	c->http[c->http_len] = '\0';
	if (!strstr(c->http, "\r\n\r\n") && !strstr(c->http, "\n\n")) {
		if (c->http_len < sizeof(c->http) - 1)
			return;
		fctl_buf_puts(&resp, "HTTP/1.0 431 Request Header Fields Too Large\r\n\r\n");
	} else if (strncmp(c->http, "GET /metrics ", 13) == 0 ||
		   strncmp(c->http, "GET /metrics\r", 13) == 0) {
		fctl_metrics_render(&a->eo, &a->st, &body);
		fctl_buf_printf(&resp, "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
				       "Content-Length: %zu\r\nConnection: close\r\n\r\n",
				body.len);
		fctl_buf_append(&resp, body.data, body.len);
	} else if (strncmp(c->http, "GET ", 4) == 0) {
		fctl_buf_puts(&resp, "HTTP/1.0 404 Not Found\r\nContent-Length: 10\r\n\r\nnot found\n");
	} else {
		fctl_buf_puts(&resp, "HTTP/1.0 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n");
	}
	fctl_buf_release(&c->out);
	c->out = resp;
	c->out_off = 0;
	c->writing = true;
	fctl_buf_release(&body);
	conn_flush(a, c);
}

static void accept_conn(struct agent *a, int lfd, enum conn_kind kind)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	struct conn *c;
	int fd;

	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	if (a->st.connections >= a->cfg.max_connections) {
		a->st.refused[FCTL_REFUSED_BUSY]++;
		close(fd);
		return;
	}
	c = conn_new(a, kind, fd);
	if (!c) {
		close(fd);
		return;
	}
	if (kind == C_UNIX) {
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
			conn_close(a, c);
			return;
		}
		c->uid = cr.uid;
		c->has_uid = true;
		snprintf(c->who, sizeof(c->who), "uid %u (pid %d)", (unsigned)cr.uid, (int)cr.pid);
		if (cr.uid != 0 && !(a->has_gid && cr.gid == a->gid)) {
			a->st.refused[FCTL_REFUSED_PEER]++;
			audit_event(a, "connect", "refused", c, "not root and not in the agent's group");
			conn_close(a, c);
			return;
		}
		c->role = FCTL_ROLE_LOCAL;
	} else if (kind == C_TLS) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char h[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?";

		if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
			getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), port, sizeof(port),
				    NI_NUMERICHOST | NI_NUMERICSERV);
		snprintf(c->who, sizeof(c->who), "tls peer %s port %s", h, port);
		c->ssl = SSL_new(a->ctx);
		if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1) {
			conn_close(a, c);
			return;
		}
		SSL_set_accept_state(c->ssl);
		c->handshake = true;
	}
	if (ep_set(a, EPOLL_CTL_ADD, fd, EPOLLIN, c) < 0) {
		conn_close(a, c);
		return;
	}
	if (kind == C_TLS)
		tls_handshake(a, c);
}

/* --- workers, drift --- */

static void drift_schedule(struct agent *a, unsigned ms)
{
	struct itimerspec its = { .it_value = { .tv_sec = ms / 1000,
						.tv_nsec = (long)(ms % 1000) * 1000000 + 1 } };

	timerfd_settime(a->debounce_tfd, 0, &its, NULL);
}

static void spawn_repair(struct agent *a, uint64_t version)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid == 0) {
		struct fctl_agent_request rq = { .type = FCTL_MSG_ROLLBACK, .to_version = version,
						 .host = a->cfg.host, .state_dir = a->cfg.state_dir,
						 .netns = a->cfg.netns, .options = FCTL_OPT_JSON };
		sigset_t none;
		int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (null >= 0)
			dup2(null, 1);
		_exit(a->ops->run(a->ops->ctx, &rq) & 0xff);
	}
	if (pid > 0) {
		a->repair_child = pid;
		a->writers++;
	}
}

static void drift_check(struct agent *a, const char *why)
{
	struct fctl_drift_report rep;
	char err[512] = "";
	bool was;

	if (a->writers) {
		drift_schedule(a, 1000); /* after the apply in progress */
		return;
	}
	{
		char rdir[PATH_MAX];

		fctl_rotation_dir(a->cfg.state_dir, a->cfg.netns, rdir, sizeof(rdir));
		if (fctl_rotation_busy(rdir, NULL, 0)) {
			drift_schedule(a, 2000); /* SAs of two keys are live: after the rotation */
			return;
		}
	}
	if (fctl_drift_check(&a->eo, &rep, err, sizeof(err)) < 0) {
		logmsg("drift check (%s) failed: %s", why, err);
		return;
	}
	was = a->st.drift_known && a->st.drift;
	a->st.drift_checks++;
	a->st.drift_known = true;
	a->st.drift = rep.ops > 0;
	a->st.drift_last_check = wall();
	a->st.applied = rep.applied;
	a->st.applied_version = rep.version;
	if (rep.ops) {
		char d[700];

		a->st.drift_detected++;
		snprintf(d, sizeof(d), "%s version %" PRIu64 ": %zu operation%s to repair (%s)",
			 rep.profile, rep.version, rep.ops, rep.ops == 1 ? "" : "s", rep.summary);
		if (!was || a->cfg.drift_repair)
			audit_event(a, "drift", "detected", NULL, d);
		if (a->cfg.drift_repair && !a->repair_child)
			spawn_repair(a, rep.version);
	} else if (was) {
		audit_event(a, "drift", "cleared", NULL, NULL);
	}
}

static void read_memfd(int fd, struct fctl_buf *b)
{
	char tmp[65536];
	ssize_t k;

	lseek(fd, 0, SEEK_SET);
	while ((k = read(fd, tmp, sizeof(tmp))) > 0)
		fctl_buf_append(b, tmp, (size_t)k);
}

static void reap(struct agent *a)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct fctl_buf out = { 0 }, err = { 0 };
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
			audit_event(a, "drift-repair", code == 0 ? "applied" : "failed", NULL, NULL);
			drift_schedule(a, 200);
			continue;
		}
		for (c = a->conns; c && c->child != pid; c = c->next)
			;
		if (!c)
			continue;
		c->child = 0;
		if (c->req_writes) {
			char d[64];

			a->writers--;
			snprintf(d, sizeof(d), "exit %u", code);
			audit_event(a, fctl_proto_type_name(c->req_type),
				    code == 0 ? "done" : "failed", c, d);
			drift_schedule(a, 200);
		}
		a->st.requests[c->req_type][code == 0 || code == 1 ? 0 : 1]++;
		read_memfd(c->fd_out, &out);
		read_memfd(c->fd_err, &err);
		if (WIFSIGNALED(status))
			fctl_buf_printf(&err, "fabricctl agent: the %s worker was killed by signal %d\n",
					fctl_proto_type_name(c->req_type), WTERMSIG(status));
		close(c->fd_out);
		close(c->fd_err);
		c->fd_out = c->fd_err = -1;
		if (c->spool[0]) {
			unlink(c->spool);
			c->spool[0] = '\0';
		}
		if (c->dead) {
			conn_free(a, c);
		} else if (ep_set(a, EPOLL_CTL_ADD, c->fd, EPOLLOUT, c) < 0) {
			conn_free(a, c);
		} else {
			respond(a, c, c->req_id, code, out.data, out.len, err.data, err.len, NULL);
		}
		fctl_buf_release(&out);
		fctl_buf_release(&err);
	}
}

/* --- configuration --- */

static int apply_config(struct agent *a, struct fctl_agent_config *cfg, char *err, size_t errlen)
{
	struct fctl_tls_policy *pol = NULL;
	SSL_CTX *ctx = NULL;
	int r = 0;

	if (cfg->listen)
		r = fctl_tls_ctx_new(true, cfg->cert, cfg->key, cfg->ca, &ctx, err, errlen);
	if (r == 0 && cfg->policy)
		r = fctl_tls_policy_load(cfg->policy, &pol, err, errlen);
	if (r == 0 && cfg->group && *cfg->group) {
		struct group *g = getgrnam(cfg->group);

		if (!g) {
			snprintf(err, errlen, "group '%s' does not exist", cfg->group);
			r = -ENOENT;
		} else {
			a->gid = g->gr_gid;
			a->has_gid = true;
		}
	}
	if (r < 0) {
		fctl_tls_ctx_free(ctx);
		fctl_tls_policy_free(pol);
		return r;
	}
	fctl_tls_ctx_free(a->ctx);
	fctl_tls_policy_free(a->pol);
	a->ctx = ctx;
	a->pol = pol;
	fctl_agent_config_release(&a->cfg);
	a->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	a->eo.state_dir = a->cfg.state_dir;
	a->eo.netns = a->cfg.netns;
	a->eo.host = a->cfg.host;
	a->eo.keymgr_path = a->ops->keymgr_path;
	if (fctl_engine_host_name(&a->eo, a->host, sizeof(a->host)) < 0)
		snprintf(a->host, sizeof(a->host), "unknown");
	{
		struct itimerspec its = { 0 };

		its.it_value.tv_sec = its.it_interval.tv_sec = a->cfg.drift_interval_s;
		timerfd_settime(a->drift_tfd, 0, &its, NULL);
	}
	return 0;
}

static void reload(struct agent *a)
{
	struct fctl_agent_config cfg;
	char err[512] = "";
	int r;

	fctl_agent_config_init(&cfg);
	r = a->ops->load_config(a->ops->ctx, &cfg, err, sizeof(err));
	if (r == 0)
		r = apply_config(a, &cfg, err, sizeof(err));
	fctl_agent_config_release(&cfg);
	if (r < 0)
		logmsg("reload failed, keeping the running configuration: %s", err);
	else
		logmsg("configuration, certificates and policy reloaded (listen addresses change "
		       "on restart)");
}

static int open_netlink(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
				  .nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static void sweep_timeouts(struct agent *a)
{
	uint64_t t = now_ms();
	struct conn *c = a->conns, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->deadline && c->deadline <= t && !c->child) {
			a->st.refused[FCTL_REFUSED_TIMEOUT]++;
			if (c->hdr_got || c->handshake || c->writing)
				audit_event(a, "request", "timeout", c, NULL);
			conn_close(a, c);
		}
	}
}

static int next_timeout(struct agent *a)
{
	uint64_t t = now_ms(), best = 0;

	for (struct conn *c = a->conns; c; c = c->next)
		if (c->deadline && !c->child && (!best || c->deadline < best))
			best = c->deadline;
	if (!best)
		return -1;
	return best <= t ? 0 : (int)(best - t > 60000 ? 60000 : best - t);
}

int fctl_agent_run(const struct fctl_agent_ops *ops, char *err, size_t errlen)
{
	struct agent a = { .ops = ops, .ep = -1, .sfd = -1, .drift_tfd = -1, .debounce_tfd = -1,
			   .nl_fd = -1, .unix_fd = -1, .tcp_fd = -1, .http_fd = -1 };
	struct fctl_agent_config cfg;
	struct fctl_apply_result res;
	sigset_t mask;
	int r;

	fctl_agent_config_init(&a.cfg);
	fctl_agent_config_init(&cfg);
	a.st.start_time = wall();
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	a.ep = epoll_create1(EPOLL_CLOEXEC);
	a.sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	a.drift_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	a.debounce_tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (a.ep < 0 || a.sfd < 0 || a.drift_tfd < 0 || a.debounce_tfd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot set up the event loop: %s", strerror(-r));
		goto out;
	}
	r = ops->load_config(ops->ctx, &cfg, err, errlen);
	if (r == 0)
		r = apply_config(&a, &cfg, err, errlen);
	if (r < 0)
		goto out;
#ifdef FCTL_HAVE_AUDIT
	{
		struct fctl_audit_opts ao = { .log_path = a.cfg.audit_log };
		char aerr[256];

		if (fctl_audit_open(&ao, &a.audit, aerr, sizeof(aerr)) < 0)
			logmsg("audit log unavailable (events go to this log only): %s", aerr);
	}
#endif
	/* resume from the apply journal before serving anyone */
	r = fctl_engine_recover(&a.eo, &res);
	if (r == 1)
		audit_event(&a, "recover", res.rolled_back && res.restored_exactly ? "rolled-back"
										 : "failed",
			    NULL, "an apply interrupted before the agent started was rolled back");
	else if (r < 0)
		logmsg("recover at start failed: %s", res.error[0] ? res.error : strerror(-r));
	fctl_apply_result_release(&res);
	if (a.cfg.socket_path && *a.cfg.socket_path) {
		a.unix_fd = listen_unix(&a, err, errlen);
		if (a.unix_fd < 0) {
			r = a.unix_fd;
			goto out;
		}
	}
	if (a.cfg.listen) {
		a.tcp_fd = listen_tcp(a.cfg.listen, err, errlen);
		if (a.tcp_fd < 0) {
			r = a.tcp_fd;
			goto out;
		}
	}
	if (a.cfg.metrics) {
		a.http_fd = listen_tcp(a.cfg.metrics, err, errlen);
		if (a.http_fd < 0) {
			r = a.http_fd;
			goto out;
		}
	}
	a.nl_fd = open_netlink();
	if (a.nl_fd < 0)
		logmsg("no link notifications (periodic drift checks only): %s", strerror(-a.nl_fd));
	{
		int *fds[] = { &a.sfd, &a.drift_tfd, &a.debounce_tfd, &a.nl_fd, &a.unix_fd, &a.tcp_fd,
			       &a.http_fd };

		for (size_t i = 0; i < FCTL_ARRAY_SIZE(fds); i++)
			if (*fds[i] >= 0 && ep_set(&a, EPOLL_CTL_ADD, *fds[i], EPOLLIN, fds[i]) < 0) {
				r = -errno;
				snprintf(err, errlen, "epoll: %s", strerror(-r));
				goto out;
			}
	}
	logmsg("serving host %s: socket %s, mutual TLS %s, metrics %s, drift every %us%s", a.host,
	       a.unix_fd >= 0 ? a.cfg.socket_path : "off", a.cfg.listen ? a.cfg.listen : "off",
	       a.cfg.metrics ? a.cfg.metrics : "off", a.cfg.drift_interval_s,
	       a.cfg.drift_repair ? " (repair on)" : "");
	drift_check(&a, "start");
	while (!a.stop) {
		struct epoll_event ev[32];
		int n = epoll_wait(a.ep, ev, 32, next_timeout(&a));

		if (n < 0 && errno != EINTR) {
			r = -errno;
			snprintf(err, errlen, "epoll_wait: %s", strerror(-r));
			goto out;
		}
		for (int i = 0; i < n; i++) {
			void *p = ev[i].data.ptr;
			uint64_t ticks;

			if (p == &a.sfd) {
				struct signalfd_siginfo si;

				while (read(a.sfd, &si, sizeof(si)) == sizeof(si)) {
					if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
						a.stop = true;
					else if (si.ssi_signo == SIGHUP)
						reload(&a);
					else if (si.ssi_signo == SIGCHLD)
						reap(&a);
				}
			} else if (p == &a.drift_tfd) {
				if (read(a.drift_tfd, &ticks, sizeof(ticks)) > 0)
					drift_check(&a, "timer");
			} else if (p == &a.debounce_tfd) {
				if (read(a.debounce_tfd, &ticks, sizeof(ticks)) > 0)
					drift_check(&a, "link event");
			} else if (p == &a.nl_fd) {
				char buf[8192];

				while (recv(a.nl_fd, buf, sizeof(buf), 0) > 0 || errno == ENOBUFS)
					;
				drift_schedule(&a, a.cfg.drift_debounce_ms);
			} else if (p == &a.unix_fd) {
				accept_conn(&a, a.unix_fd, C_UNIX);
			} else if (p == &a.tcp_fd) {
				accept_conn(&a, a.tcp_fd, C_TLS);
			} else if (p == &a.http_fd) {
				accept_conn(&a, a.http_fd, C_HTTP);
			} else {
				struct conn *c = p;
				bool found = false;

				/* the connection may have been freed by an earlier event of this batch */
				for (struct conn *x = a.conns; x; x = x->next)
					found |= x == c;
				if (!found || c->dead)
					continue;
				if (c->handshake)
					tls_handshake(&a, c);
				else if (c->writing)
					conn_flush(&a, c);
				else if (ev[i].events & (EPOLLERR | EPOLLHUP) &&
					 !(ev[i].events & EPOLLIN))
					conn_close(&a, c);
				else if (c->kind == C_HTTP)
					http_readable(&a, c);
				else
					conn_readable(&a, c);
			}
		}
		sweep_timeouts(&a);
	}
	logmsg("shutting down (SIGTERM)");
	r = 0;
out:
	while (a.conns) {
		struct conn *c = a.conns;

		if (c->child) {
			kill(c->child, SIGTERM);
			waitpid(c->child, NULL, 0);
			if (c->req_writes)
				a.writers--;
			c->child = 0;
		}
		conn_free(&a, c);
	}
	if (a.repair_child > 0) {
		kill(a.repair_child, SIGTERM);
		waitpid(a.repair_child, NULL, 0);
	}
	if (a.unix_fd >= 0) {
		close(a.unix_fd);
		unlink(a.cfg.socket_path);
	}
	{
		int fds[] = { a.tcp_fd, a.http_fd, a.nl_fd, a.debounce_tfd, a.drift_tfd, a.sfd, a.ep };

		for (size_t i = 0; i < FCTL_ARRAY_SIZE(fds); i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
	fctl_nl_close(a.sa_nl);
#ifdef FCTL_HAVE_AUDIT
	fctl_audit_close(a.audit);
#endif
	fctl_tls_ctx_free(a.ctx);
	fctl_tls_policy_free(a.pol);
	fctl_agent_config_release(&a.cfg);
	fctl_agent_config_release(&cfg);
	return r;
}
