// SPDX-License-Identifier: MIT
/* Connections of one process's table (the agent's Unix socket, the front-end's TLS): accept, frames, close. */
#include <errno.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/err.h>

#include "agentd_int.h"

void fctl_agentd_conn_limits(struct conn_limits *l, const struct fctl_agent_config *cfg)
{
	l->max_frame = cfg->max_frame;
	l->max_buffered = cfg->max_buffered;
	l->timeout_s = cfg->timeout_s;
	l->max_connections = cfg->max_connections;
	l->max_handshakes_per_address = cfg->max_handshakes_per_address;
	l->handshake_timeout_s = cfg->handshake_timeout_s;
	l->max_unix_connections = cfg->max_unix_connections;
	l->unix_root_reserve = cfg->unix_root_reserve;
	l->max_metrics_connections = cfg->max_metrics_connections;
}

int fctl_agentd_conn_ep(struct conn_table *t, int op, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(t->ep, op, fd, &ev) < 0 ? -errno : 0;
}

static struct conn *conn_new(struct conn_table *t, enum conn_kind kind, int fd)
{
	struct conn *c = t->hooks->alloc ? t->hooks->alloc(t) : fctl_calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->kind = kind;
	c->fd = fd;
	c->deadline = fctl_agentd_now_ms() + (uint64_t)t->lim.timeout_s * 1000;
	c->next = t->conns;
	t->conns = c;
	if (t->count)
		(*t->count)++;
	return c;
}

void fctl_agentd_conn_hold(struct conn_table *t, struct conn *c, size_t bytes)
{
	t->buffered -= c->held;
	c->held = bytes;
	t->buffered += bytes;
}

/* The frame buffer of the request being read: counted, then freed. */
static void frame_release(struct conn_table *t, struct conn *c)
{
	fctl_agentd_frame_free(c); /* wiped: a frame may have carried a SAK */
	fctl_agentd_conn_hold(t, c, c->out.len);
}

void fctl_agentd_conn_free(struct conn_table *t, struct conn *c)
{
	for (struct conn **pp = &t->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	}
	if (c->fd >= 0) {
		epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
		if (c->ssl)
			SSL_shutdown(c->ssl);
		close(c->fd);
	}
	SSL_free(c->ssl);
	fctl_agentd_frame_free(c);
	fctl_buf_release(&c->out);
	fctl_agentd_conn_hold(t, c, 0);
	if (t->count)
		(*t->count)--;
	if (t->hooks->release)
		t->hooks->release(t, c); /* the agent: the worker's memfds, the spool file */
	else
		free(c);
}

void fctl_agentd_conn_close(struct conn_table *t, struct conn *c)
{
	if (c->closing)
		return;
	c->closing = true;
	c->writing = false;
	/* the agent: a read-only worker of c stopped, a proxy's front-end told; the
	 * front-end: the agent told */
	if (t->hooks->closing)
		t->hooks->closing(t, c);
	if (c->fd >= 0) {
		epoll_ctl(t->ep, EPOLL_CTL_DEL, c->fd, NULL);
		if (c->ssl && !c->busy)
			SSL_shutdown(c->ssl);
		close(c->fd);
		c->fd = -1;
	}
	/* the frame stays (a request being handled may still point into it) until
	 * fctl_agentd_conn_collect, at the end of this batch; it no longer counts */
	fctl_agentd_conn_hold(t, c, 0);
}

void fctl_agentd_conn_watch_hangup(struct conn_table *t, struct conn *c)
{
	if (c->fd >= 0)
		fctl_agentd_conn_ep(t, EPOLL_CTL_MOD, c->fd, EPOLLRDHUP, c);
}

void fctl_agentd_conn_on_hangup(struct conn_table *t, struct conn *c, uint32_t events)
{
	if (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		fctl_agentd_conn_close(t, c);
}

void fctl_agentd_conn_collect(struct conn_table *t)
{
	struct conn *c = t->conns, *next;

	for (; c; c = next) {
		next = c->next;
		if (c->closing && !c->busy)
			fctl_agentd_conn_free(t, c);
	}
}

void fctl_agentd_sweep_timeouts(struct conn_table *t)
{
	uint64_t now = fctl_agentd_now_ms();
	struct conn *c = t->conns, *next;

	for (; c; c = next) {
		next = c->next;
		/* busy: the answer's owner; no socket here (a proxy): the front-end's deadlines */
		if (c->busy || c->fd < 0 || c->closing)
			continue;
		if (c->deadline && c->deadline <= now && c->handshake) {
			char d[96];

			snprintf(d, sizeof(d), "no TLS handshake within %u s (handshake_timeout)",
				 t->lim.handshake_timeout_s);
			t->hooks->refuse(t, c, FCTL_REFUSED_HANDSHAKE_TIMEOUT, d);
		} else if (c->deadline && c->deadline <= now) {
			/* audited when a request was being read or answered, not for an idle one */
			t->hooks->event(t, c, FCTL_REFUSED_TIMEOUT, c->hdr_got || c->writing ? 2 : 0,
					NULL);
			fctl_agentd_conn_close(t, c);
		}
	}
}

int fctl_agentd_next_timeout(struct conn_table *t)
{
	uint64_t now = fctl_agentd_now_ms(), best = 0;

	for (struct conn *c = t->conns; c; c = c->next)
		if (c->deadline && !c->busy && !c->closing && c->fd >= 0 &&
		    (!best || c->deadline < best))
			best = c->deadline;
	if (!best)
		return -1;
	return best <= now ? 0 : (int)(best - now > 60000 ? 60000 : best - now);
}

ssize_t fctl_agentd_conn_read(struct conn *c, void *p, size_t n)
{
	ssize_t k;

	if (c->ssl) {
		size_t done = 0;

		ERR_clear_error(); /* SSL_get_error() reads the queue first: only this call's */
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

		ERR_clear_error();
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

void fctl_agentd_respond(struct conn_table *t, struct conn *c, uint32_t id, uint32_t result,
			 const void *out, size_t out_len, const char *err, size_t err_len,
			 const struct fctl_msg *extra)
{
	struct fctl_msg m = { .type = FCTL_MSG_RESPONSE, .id = id, .result = result };

	if (c->closing)
		return;
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
	fctl_agentd_conn_hold(t, c, c->out.len + (c->frame ? FCTL_PROTO_HDR_LEN + c->h.length : 0));
	c->writing = true;
	c->deadline = fctl_agentd_now_ms() + (uint64_t)t->lim.timeout_s * 1000;
	fctl_agentd_conn_flush(t, c);
}

void fctl_agentd_respond_error(struct conn_table *t, struct conn *c, uint32_t id, uint32_t result,
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
	fctl_agentd_respond(t, c, id, result, NULL, 0, msg, strlen(msg), NULL);
}

void fctl_agentd_conn_flush(struct conn_table *t, struct conn *c)
{
	if (c->closing)
		return;
	if (c->fd < 0) { /* not closing: a proxy, its socket the front-end's */
		if (t->hooks->proxy_out)
			t->hooks->proxy_out(t, c);
		return;
	}
	while (c->out_off < c->out.len) {
		ssize_t k = conn_write(c, c->out.data + c->out_off, c->out.len - c->out_off);

		if (k == -EAGAIN) {
			fctl_agentd_conn_ep(t, EPOLL_CTL_MOD, c->fd, EPOLLOUT, c);
			return;
		}
		if (k <= 0) {
			fctl_agentd_conn_close(t, c);
			return;
		}
		c->out_off += (size_t)k;
	}
	c->writing = false;
	if (c->close_after || c->kind == C_HTTP) {
		fctl_agentd_conn_close(t, c);
		return;
	}
	/* ready for the next request */
	fctl_buf_release(&c->out);
	c->out_off = 0;
	frame_release(t, c);
	c->hdr_got = c->frame_got = 0;
	c->deadline = fctl_agentd_now_ms() + (uint64_t)t->lim.timeout_s * 1000;
	fctl_agentd_conn_ep(t, EPOLL_CTL_MOD, c->fd, EPOLLIN, c);
	/* bytes TLS already decrypted raise no epoll event: read them now, unless the
	 * reading loop is below us on the stack (it reads them itself, no recursion) */
	if (c->ssl && !c->in_readable && SSL_pending(c->ssl) > 0)
		fctl_agentd_conn_readable(t, c);
}

static void refuse_frame(struct conn_table *t, struct conn *c, enum fctl_refusal why, uint32_t id,
			 const char *text)
{
	t->hooks->event(t, c, why, 1, text);
	c->close_after = true;
	fctl_agentd_respond_error(t, c, id, 2, "%s", text);
}

/* The header is in: checks it against the limits and allocates the frame. false:
 * refused (and responded) or closed. */
static bool start_frame(struct conn_table *t, struct conn *c)
{
	struct fctl_msg m;
	char why[200];
	size_t need;
	int r;

	r = fctl_proto_hdr_parse(c->hdr, sizeof(c->hdr), t->lim.max_frame, &c->h);
	if (r == -EMSGSIZE) {
		snprintf(why, sizeof(why), "frame of %u bytes exceeds the limit of %u",
			 (unsigned)(c->hdr[12] << 24 | c->hdr[13] << 16 | c->hdr[14] << 8 |
				    c->hdr[15]),
			 t->lim.max_frame - FCTL_PROTO_HDR_LEN);
		refuse_frame(t, c, FCTL_REFUSED_OVERSIZED, 0, why);
		return false;
	}
	if (r < 0) {
		fctl_proto_decode(c->hdr, sizeof(c->hdr), t->lim.max_frame, &m, why, sizeof(why));
		refuse_frame(t, c, FCTL_REFUSED_MALFORMED, 0, why);
		return false;
	}
	need = FCTL_PROTO_HDR_LEN + (size_t)c->h.length + 1;
	if (t->buffered - c->held + need > t->lim.max_buffered) {
		snprintf(why, sizeof(why), "busy: the agent holds %zu bytes of requests and "
			 "responses (max_buffered %u): try again", t->buffered,
			 t->lim.max_buffered);
		refuse_frame(t, c, FCTL_REFUSED_BUFFERED, c->h.id, why);
		return false;
	}
	c->frame = malloc(need);
	if (!c->frame) {
		fctl_agentd_conn_close(t, c);
		return false;
	}
	fctl_agentd_conn_hold(t, c, need);
	memcpy(c->frame, c->hdr, sizeof(c->hdr));
	c->frame_got = 0;
	return true;
}

/* Reads what there is: false when nothing more can be read now (or c closed). */
static bool read_some(struct conn_table *t, struct conn *c)
{
	ssize_t k;

	if (c->hdr_got < sizeof(c->hdr)) {
		k = fctl_agentd_conn_read(c, c->hdr + c->hdr_got, sizeof(c->hdr) - c->hdr_got);
	} else {
		k = fctl_agentd_conn_read(c, c->frame + FCTL_PROTO_HDR_LEN + c->frame_got,
					  c->h.length - c->frame_got);
	}
	if (k == -EAGAIN)
		return false;
	if (k <= 0) {
		fctl_agentd_conn_close(t, c);
		return false;
	}
	if (c->hdr_got < sizeof(c->hdr)) {
		c->hdr_got += (size_t)k;
		if (c->hdr_got == sizeof(c->hdr))
			return start_frame(t, c);
		return true;
	}
	c->frame_got += (size_t)k;
	return true;
}

static void readable(struct conn_table *t, struct conn *c)
{
	for (;;) {
		struct fctl_msg m;
		char why[200];
		int r;

		if (c->closing || c->writing || c->busy || c->close_after)
			return;
		if (!read_some(t, c))
			return;
		if (c->hdr_got < sizeof(c->hdr) || c->frame_got < c->h.length)
			continue;
		r = fctl_proto_decode(c->frame, FCTL_PROTO_HDR_LEN + c->h.length, t->lim.max_frame,
				      &m, why, sizeof(why));
		if (r == 0 && m.type == FCTL_MSG_RESPONSE) {
			r = -EPROTO;
			snprintf(why, sizeof(why), "a response is not a request");
		}
		if (r < 0) {
			refuse_frame(t, c, FCTL_REFUSED_MALFORMED, c->h.id, why);
			return;
		}
		t->hooks->request(t, c, &m);
		/* the request was handled (answered, a worker started, or forwarded to
		 * the agent): the frame is consumed;
		 * c may be closing now, which the loop's first line sees */
	}
}

void fctl_agentd_conn_readable(struct conn_table *t, struct conn *c)
{
	if (c->in_readable)
		return;
	c->in_readable = true;
	readable(t, c);
	c->in_readable = false;
}

void fctl_agentd_tls_handshake(struct conn_table *t, struct conn *c)
{
	char e[256];
	int r;

	ERR_clear_error();
	r = SSL_do_handshake(c->ssl);

	if (r != 1) {
		int se = SSL_get_error(c->ssl, r);

		if (se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE) {
			fctl_agentd_conn_ep(t, EPOLL_CTL_MOD, c->fd,
					   se == SSL_ERROR_WANT_READ ? EPOLLIN : EPOLLOUT, c);
			return;
		}
		fctl_tls_error(c->ssl, e, sizeof(e));
		t->hooks->refuse(t, c, FCTL_REFUSED_NO_CERT, e);
		return;
	}
	c->handshake = false;
	/* authenticated: from here the idle and request deadline */
	c->deadline = fctl_agentd_now_ms() + (uint64_t)t->lim.timeout_s * 1000;
	snprintf(e, sizeof(e), "the certificate names no role");
	if (fctl_tls_peer_roles(c->ssl, t->pol, &c->roles, c->who, sizeof(c->who), e,
				sizeof(e)) < 0 || !c->roles) {
		t->hooks->refuse(t, c, FCTL_REFUSED_NO_ROLE, e);
		return;
	}
	c->role = fctl_roles_primary(c->roles);
	if (t->hooks->authed)
		t->hooks->authed(t, c);
	fctl_agentd_conn_ep(t, EPOLL_CTL_MOD, c->fd, EPOLLIN, c);
	fctl_agentd_conn_readable(t, c);
}

/* The connections of kind that are not closing, and of those from peer still in their
 * TLS handshake (peer NULL: not counted). */
static unsigned pool_count(const struct conn_table *t, enum conn_kind kind, const char *peer,
			   unsigned *handshakes)
{
	unsigned n = 0, h = 0;

	for (const struct conn *c = t->conns; c; c = c->next) {
		if (c->kind != kind || c->closing)
			continue;
		n++;
		if (peer && c->handshake && strcmp(c->peer, peer) == 0)
			h++;
	}
	if (handshakes)
		*handshakes = h;
	return n;
}

/* The Unix socket: root, or the group, while the pool (minus root's reserve for
 * others) has room. false: refused (c closing). */
static bool admit_unix(struct conn_table *t, struct conn *c)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	unsigned n, max = t->lim.max_unix_connections;
	char d[160];

	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0) {
		fctl_agentd_conn_close(t, c);
		return false;
	}
	c->uid = cr.uid;
	c->has_uid = true;
	snprintf(c->who, sizeof(c->who), "uid %u (pid %d)", (unsigned)cr.uid, (int)cr.pid);
	snprintf(c->peer, sizeof(c->peer), "uid %u", (unsigned)cr.uid);
	if (cr.uid != 0 && !(t->lim.has_gid && cr.gid == t->lim.gid)) {
		t->hooks->refuse(t, c, FCTL_REFUSED_PEER, "not root and not in the agent's group");
		return false;
	}
	n = pool_count(t, C_UNIX, NULL, NULL) - 1; /* c is one of them */
	if (cr.uid != 0)
		max = max > t->lim.unix_root_reserve ? max - t->lim.unix_root_reserve : 0;
	if (n >= max) {
		snprintf(d, sizeof(d), "the Unix socket holds %u connections "
			 "(max_unix_connections %u, %u of them for root only)", n,
			 t->lim.max_unix_connections, t->lim.unix_root_reserve);
		t->hooks->refuse(t, c, FCTL_REFUSED_UNIX_BUSY, d);
		return false;
	}
	c->role = FCTL_ROLE_LOCAL;
	c->roles = FCTL_ROLE_BIT(FCTL_ROLE_LOCAL);
	return true;
}

/* TLS and metrics: the peer's address, the pool, and for TLS the handshakes of the
 * address. false: refused (c closing). */
static bool admit_tcp(struct conn_table *t, struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char h[NI_MAXHOST] = "?", port[NI_MAXSERV] = "?", d[160];
	unsigned n, hs;

	if (getpeername(c->fd, (struct sockaddr *)&ss, &sl) == 0)
		getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), port, sizeof(port),
			    NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(c->peer, sizeof(c->peer), "%s", h);
	snprintf(c->who, sizeof(c->who), "%s peer %s port %s", c->kind == C_TLS ? "tls" : "metrics",
		 h, port);
	if (t->hooks->opened)
		t->hooks->opened(t, c);
	if (c->kind == C_HTTP) {
		n = pool_count(t, C_HTTP, NULL, NULL) - 1;
		if (n >= t->lim.max_metrics_connections) {
			snprintf(d, sizeof(d), "the metrics endpoint holds %u connections "
				 "(max_metrics_connections %u)", n, t->lim.max_metrics_connections);
			t->hooks->refuse(t, c, FCTL_REFUSED_METRICS_BUSY, d);
			return false;
		}
		c->deadline = fctl_agentd_now_ms() + (uint64_t)t->lim.handshake_timeout_s * 1000;
		return true;
	}
	n = pool_count(t, C_TLS, c->peer, &hs) - 1;
	if (n >= t->lim.max_connections) {
		snprintf(d, sizeof(d), "the TLS listener holds %u connections (max_connections %u)",
			 n, t->lim.max_connections);
		t->hooks->refuse(t, c, FCTL_REFUSED_BUSY, d);
		return false;
	}
	/* hs: the others (c is not in its handshake yet) */
	if (hs >= t->lim.max_handshakes_per_address) {
		snprintf(d, sizeof(d), "%u TLS handshakes in progress from this address "
			 "(max_handshakes_per_address %u)", hs, t->lim.max_handshakes_per_address);
		t->hooks->refuse(t, c, FCTL_REFUSED_PER_ADDRESS, d);
		return false;
	}
	c->ssl = SSL_new(t->ctx);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
		fctl_agentd_conn_close(t, c);
		return false;
	}
	SSL_set_accept_state(c->ssl);
	c->handshake = true;
	c->deadline = fctl_agentd_now_ms() + (uint64_t)t->lim.handshake_timeout_s * 1000;
	return true;
}

void fctl_agentd_accept(struct conn_table *t, int lfd, enum conn_kind kind)
{
	struct conn *c;
	int fd;

	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return;
	c = conn_new(t, kind, fd);
	if (!c) {
		close(fd);
		return;
	}
	if (!(kind == C_UNIX ? admit_unix(t, c) : admit_tcp(t, c)))
		return;
	if (fctl_agentd_conn_ep(t, EPOLL_CTL_ADD, fd, EPOLLIN, c) < 0) {
		fctl_agentd_conn_close(t, c);
		return;
	}
	if (kind == C_TLS)
		fctl_agentd_tls_handshake(t, c);
}
