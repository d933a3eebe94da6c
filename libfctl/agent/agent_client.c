// SPDX-License-Identifier: MIT
/* Agent client: one connection (Unix socket or mutual TLS), non-blocking, every wait
 * bounded by one deadline (connect, TLS handshake, request and answer). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "fctl/agent.h"
#include "fctl/tls.h"
#include "tls_int.h"

struct fctl_agent_conn {
	int fd;
	SSL *ssl;
	uint32_t next_id;
	unsigned timeout_s;
	int64_t deadline_ms; /* CLOCK_MONOTONIC: the current deadline of this connection */
	bool called;         /* the first call shares the connect's deadline */
	SSL_CTX *ctx_borrowed;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for events or the deadline passes: 0, -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline_ms - now_ms();
		int k;

		if (left <= 0)
			return -ETIMEDOUT;
		k = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (k > 0)
			return 0;
		if (k == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* "host:port", "[v6]:port" -> host, port */
static int split_endpoint(const char *ep, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon;

	if (ep[0] == '[') {
		const char *end = strchr(ep, ']');

		if (!end || end[1] != ':' || (size_t)(end - ep - 1) >= hlen)
			return -EINVAL;
		snprintf(host, hlen, "%.*s", (int)(end - ep - 1), ep + 1);
		colon = end + 1;
	} else {
		colon = strrchr(ep, ':');
		if (!colon || colon == ep || (size_t)(colon - ep) >= hlen)
			return -EINVAL;
		snprintf(host, hlen, "%.*s", (int)(colon - ep), ep);
	}
	if (!colon[1] || strlen(colon + 1) >= plen)
		return -EINVAL;
	snprintf(port, plen, "%s", colon + 1);
	return 0;
}

static int connect_deadline(int fd, const struct sockaddr *sa, socklen_t len,
			    int64_t deadline_ms)
{
	int soerr = 0, r;
	socklen_t sl = sizeof(soerr);

	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS && errno != EAGAIN)
		return -errno;
	r = wait_fd(fd, POLLOUT, deadline_ms);
	if (r < 0)
		return r;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
		return -errno;
	return -soerr;
}

/* The connect's error as the user reads it: "connection refused", "timed out after Ns". */
static void connect_error(const char *endpoint, int r, unsigned timeout_s, char *err,
			  size_t errlen)
{
	if (r == -ETIMEDOUT)
		snprintf(err, errlen, "cannot connect to %s: timed out after %us (TCP connect)",
			 endpoint, timeout_s);
	else if (r == -ECONNREFUSED)
		snprintf(err, errlen, "cannot connect to %s: connection refused", endpoint);
	else
		snprintf(err, errlen, "cannot connect to %s: %s", endpoint, strerror(-r));
}

/* A non-blocking socket connected to endpoint before the deadline, or -errno with err. */
static int open_socket(const char *endpoint, unsigned timeout_s, int64_t deadline_ms, char *host,
		       size_t hlen, char *err, size_t errlen)
{
	const char *path = NULL;
	int fd = -1, r = -EINVAL;

	if (strncmp(endpoint, "unix:", 5) == 0)
		path = endpoint + 5;
	else if (endpoint[0] == '/')
		path = endpoint;
	if (path) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };

		host[0] = '\0';
		if (strlen(path) >= sizeof(sun.sun_path)) {
			snprintf(err, errlen, "socket path '%s' is too long", path);
			return -ENAMETOOLONG;
		}
		memcpy(sun.sun_path, path, strlen(path) + 1);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return -errno;
		r = connect_deadline(fd, (struct sockaddr *)&sun, sizeof(sun), deadline_ms);
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
		char port[16];

		if (split_endpoint(endpoint, host, hlen, port, sizeof(port)) < 0) {
			snprintf(err, errlen, "endpoint '%s': expected HOST:PORT or unix:PATH",
				 endpoint);
			return -EINVAL;
		}
		r = getaddrinfo(host, port, &hints, &ai);
		if (r != 0) {
			snprintf(err, errlen, "%s: %s", endpoint, gai_strerror(r));
			return -EHOSTUNREACH;
		}
		r = -EHOSTUNREACH;
		for (struct addrinfo *a = ai; a && r < 0 && r != -ETIMEDOUT; a = a->ai_next) {
			if (fd >= 0)
				close(fd);
			fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
			if (fd < 0)
				continue;
			r = connect_deadline(fd, a->ai_addr, a->ai_addrlen, deadline_ms);
		}
		freeaddrinfo(ai);
	}
	if (r < 0) {
		connect_error(endpoint, r, timeout_s, err, errlen);
		if (fd >= 0)
			close(fd);
		return r;
	}
	return fd; /* non-blocking from here on: every wait is bounded by the deadline */
}

/* Waits for what SSL_get_error says the TLS connection needs: 0, or -ETIMEDOUT,
 * -ECONNRESET (closed), -EPROTO (a TLS failure). */
static int ssl_wait(struct fctl_agent_conn *c, int ret)
{
	switch (SSL_get_error(c->ssl, ret)) {
	case SSL_ERROR_WANT_READ:
		return wait_fd(c->fd, POLLIN, c->deadline_ms);
	case SSL_ERROR_WANT_WRITE:
		return wait_fd(c->fd, POLLOUT, c->deadline_ms);
	case SSL_ERROR_ZERO_RETURN:
		return -ECONNRESET;
	case SSL_ERROR_SYSCALL:
		return errno == EPIPE || errno == ECONNRESET || errno == 0 ? -ECONNRESET : -EPROTO;
	default:
		return -EPROTO;
	}
}

static int tls_handshake(struct fctl_agent_conn *c, const char *endpoint, const char *host,
			 char *err, size_t errlen)
{
	struct in6_addr a6;
	struct in_addr a4;
	char e[256];
	int r, k;

	c->ssl = SSL_new(c->ctx_borrowed);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1)
		return -ENOMEM;
	/* the server certificate must name the host we dialled */
	if (inet_pton(AF_INET, host, &a4) == 1 || inet_pton(AF_INET6, host, &a6) == 1)
		r = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) == 1 ? 0 : -EINVAL;
	else
		r = SSL_set1_host(c->ssl, host) == 1 ? 0 : -EINVAL;
	if (r < 0)
		return r;
	/* a session of this endpoint's from the context's cache, when it has one */
	r = fctl_tls_cache_offer(c->ssl, endpoint, host);
	if (r < 0)
		return r;
	for (;;) {
		ERR_clear_error(); /* as in io_all */
		k = SSL_connect(c->ssl);
		if (k == 1)
			break;
		r = ssl_wait(c, k);
		if (r == 0)
			continue;
		if (r == -ETIMEDOUT) {
			snprintf(err, errlen, "TLS with %s: timed out after %us (the agent "
					      "accepted the connection but did not answer)",
				 endpoint, c->timeout_s);
			return r;
		}
		fctl_tls_error(c->ssl, e, sizeof(e));
		snprintf(err, errlen, "TLS with %s failed: %s", endpoint,
			 r == -ECONNRESET && !strcmp(e, "TLS error") ? "the agent closed the connection"
								    : e);
		return r == -ECONNRESET ? r : -EPROTO;
	}
	return 0;
}

int fctl_agent_connect(const char *endpoint, struct ssl_ctx_st *ctx, unsigned timeout_s,
		       struct fctl_agent_conn **out, char *err, size_t errlen)
{
	struct fctl_agent_conn *c;
	char host[256];
	int64_t deadline;
	int fd, r = 0;

	if (!timeout_s)
		timeout_s = 30;
	deadline = now_ms() + (int64_t)timeout_s * 1000;
	fd = open_socket(endpoint, timeout_s, deadline, host, sizeof(host), err, errlen);
	if (fd < 0)
		return fd;
	c = fctl_calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->next_id = 1;
	c->timeout_s = timeout_s;
	c->deadline_ms = deadline;
	if (host[0]) {
		if (!ctx) {
			snprintf(err, errlen, "%s: a TCP endpoint needs --cert, --key and --ca",
				 endpoint);
			r = -EINVAL;
		} else {
			c->ctx_borrowed = ctx;
			r = tls_handshake(c, endpoint, host, err, errlen);
		}
	}
	if (r < 0) {
		fctl_agent_conn_free(c);
		return r;
	}
	*out = c;
	return 0;
}

/* Writes (wp) or reads (rp) n bytes before the connection's deadline. */
static int io_all(struct fctl_agent_conn *c, const void *wp, void *rp, size_t n)
{
	bool wr = wp != NULL;
	size_t off = 0;

	while (off < n) {
		ssize_t k;
		int r;

		if (c->ssl) {
			size_t done = 0;
			int ok;

			/* SSL_get_error() reads this thread's error queue first: an error another
			 * library left there (a PKCS#11 module's OpenSSL, say) would pass for a
			 * TLS failure of this connection */
			ERR_clear_error();
			ok = wr ? SSL_write_ex(c->ssl, (const char *)wp + off, n - off, &done)
				: SSL_read_ex(c->ssl, (char *)rp + off, n - off, &done);

			if (ok != 1) {
				r = ssl_wait(c, ok);
				if (r < 0)
					return r == -EPROTO ? -ECONNRESET : r;
				continue;
			}
			k = (ssize_t)done;
		} else {
			k = wr ? send(c->fd, (const char *)wp + off, n - off, MSG_NOSIGNAL)
			       : recv(c->fd, (char *)rp + off, n - off, 0);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				r = wait_fd(c->fd, wr ? POLLOUT : POLLIN, c->deadline_ms);
				if (r < 0)
					return r;
				continue;
			}
			if (k < 0)
				return -errno;
			if (k == 0)
				return -ECONNRESET;
		}
		off += (size_t)k;
	}
	return 0;
}

int fctl_agent_send_raw(struct fctl_agent_conn *c, const void *p, size_t n)
{
	return io_all(c, p, NULL, n);
}

int fctl_agent_call(struct fctl_agent_conn *c, struct fctl_msg *req, struct fctl_msg *resp,
		    struct fctl_buf *frame, char *err, size_t errlen)
{
	struct fctl_buf b = { 0 };
	struct fctl_proto_hdr h;
	uint8_t hdr[FCTL_PROTO_HDR_LEN];
	uint8_t *payload = NULL;
	int r;

	/* the first call shares the connect's deadline (connect, handshake, request and
	 * answer under one); each later call on the connection has a deadline of its own */
	if (c->called)
		c->deadline_ms = now_ms() + (int64_t)c->timeout_s * 1000;
	c->called = true;
	req->id = c->next_id++;
	r = fctl_proto_encode(req, &b);
	if (r < 0) {
		snprintf(err, errlen, "cannot encode the request: %s", strerror(-r));
		goto out;
	}
	r = io_all(c, b.data, NULL, b.len);
	if (r == 0)
		r = io_all(c, NULL, hdr, sizeof(hdr));
	if (r < 0) {
		if (r == -ETIMEDOUT)
			snprintf(err, errlen, "no answer from the agent: timed out after %us",
				 c->timeout_s);
		else
			snprintf(err, errlen, "%s", r == -ECONNRESET ? "the agent closed the connection"
								    : strerror(-r));
		goto out;
	}
	r = fctl_proto_hdr_parse(hdr, sizeof(hdr), 0, &h);
	/* id 0: the agent refused the frame from its header (an unknown type: an agent
	 * older than the request) and says why in the response; any other id must match */
	if (r == 0 && (h.type != FCTL_MSG_RESPONSE || (h.id != req->id && h.id != 0)))
		r = -EPROTO;
	if (r < 0) {
		snprintf(err, errlen, "bad response from the agent: %s", strerror(-r));
		goto out;
	}
	payload = malloc(h.length ? h.length : 1);
	if (!payload) {
		r = -ENOMEM;
		goto out;
	}
	r = io_all(c, NULL, payload, h.length);
	if (r < 0) {
		if (r == -ETIMEDOUT)
			snprintf(err, errlen, "reading the response: timed out after %us",
				 c->timeout_s);
		else
			snprintf(err, errlen, "reading the response: %s", strerror(-r));
		goto out;
	}
	fctl_buf_reset(frame);
	if (fctl_buf_append(frame, hdr, sizeof(hdr)) < 0 ||
	    fctl_buf_append(frame, payload, h.length) < 0) {
		r = -ENOMEM;
		goto out;
	}
	r = fctl_proto_decode((uint8_t *)frame->data, frame->len, 0, resp, err, errlen);
out:
	free(payload);
	if (b.data)
		fctl_memzero(b.data, b.len); /* an SA request carries a key */
	fctl_buf_release(&b);
	return r;
}

int fctl_agent_conn_set_timeout(struct fctl_agent_conn *c, unsigned timeout_s)
{
	struct timeval tv = { .tv_sec = timeout_s ? timeout_s : 30 };

	if (setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return -errno;
	/* the calls' own deadline too (fctl_agent_call waits until it, whatever the socket
	 * options say): keymgr's sa-batch of 200 records was cut at the connect's 30 s */
	c->timeout_s = (unsigned)tv.tv_sec;
	if (!c->called)
		c->deadline_ms = now_ms() + (int64_t)c->timeout_s * 1000;
	return 0;
}

bool fctl_agent_conn_idle_ok(const struct fctl_agent_conn *c)
{
	struct pollfd p = { .fd = c ? c->fd : -1, .events = POLLIN };

	if (!c || c->fd < 0)
		return false;
	if (c->ssl && SSL_pending(c->ssl) > 0)
		return false;
	return poll(&p, 1, 0) == 0; /* readable while idle: closed, or an alert */
}

bool fctl_agent_conn_tls_resumed(const struct fctl_agent_conn *c)
{
	return c && c->ssl && SSL_session_reused(c->ssl) == 1;
}

void fctl_agent_conn_free(struct fctl_agent_conn *c)
{
	if (!c)
		return;
	if (c->ssl) {
		SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	if (c->fd >= 0)
		close(c->fd);
	free(c);
}
