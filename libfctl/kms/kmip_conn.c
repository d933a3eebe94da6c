// SPDX-License-Identifier: MIT
/*
 * KMIP transport for the "kmip" key backend (keys_kmip.c): the configuration from the
 * environment, the TLS 1.2 connection with a client certificate, and one request and
 * response exchange with its deadline.
 *
 * Key hygiene: a response (Get carries key bytes) is read into a page-aligned mapping of
 * its own (fctl_keys_secure_alloc: locked, not dumped) that fctl_kmip_resp_release()
 * wipes; OpenSSL is asked to cleanse its plaintext record buffer too
 * (SSL_OP_CLEANSE_PLAINTEXT).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "kmip_conn_int.h"
#include "kms_int.h"

void fctl_kmip_resp_release(struct kmip_resp *r)
{
	fctl_ttlv_doc_release(&r->doc);
	fctl_keys_secure_free(r->buf, r->len); /* wiped, unmapped: its own pages */
	memset(r, 0, sizeof(*r));
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

int fctl_kmip_cfg_load(struct kmip_cfg *c, char *err, size_t errlen)
{
	const char *srv = env_or("FCTL_KMIP_SERVER", "127.0.0.1:5696");
	const char *colon = strrchr(srv, ':');
	const char *ver = env_or("FCTL_KMIP_VERSION", "1.2");
	uint64_t v;

	memset(c, 0, sizeof(*c));
	if (!colon || colon == srv || (size_t)(colon - srv) >= sizeof(c->host) ||
	    fctl_parse_u64(colon + 1, &v) < 0 || v == 0 || v > 65535) {
		snprintf(err, errlen, "FCTL_KMIP_SERVER '%s' is not host:port", srv);
		return -EINVAL;
	}
	memcpy(c->host, srv, (size_t)(colon - srv));
	if (c->host[0] == '[' && c->host[strlen(c->host) - 1] == ']') {
		memmove(c->host, c->host + 1, strlen(c->host));
		c->host[strlen(c->host) - 1] = '\0';
	}
	snprintf(c->port, sizeof(c->port), "%u", (unsigned)v);
	snprintf(c->ca, sizeof(c->ca), "%s", env_or("FCTL_KMIP_CA", "/etc/fabricctl/kmip/ca.pem"));
	snprintf(c->cert, sizeof(c->cert), "%s",
		 env_or("FCTL_KMIP_CERT", "/etc/fabricctl/kmip/client.pem"));
	snprintf(c->key, sizeof(c->key), "%s",
		 env_or("FCTL_KMIP_KEY", "/etc/fabricctl/kmip/client.key"));
	if (fctl_parse_u64(env_or("FCTL_KMIP_TIMEOUT_MS", "5000"), &v) < 0 || v < 1 || v > 600000) {
		snprintf(err, errlen, "FCTL_KMIP_TIMEOUT_MS must be 1..600000 milliseconds");
		return -EINVAL;
	}
	c->timeout_ms = (int)v;
	if (strcmp(ver, "2.0") == 0) {
		c->major = 2;
		c->minor = 0;
	} else if (strlen(ver) == 3 && ver[0] == '1' && ver[1] == '.' && ver[2] >= '0' &&
		   ver[2] <= '4') {
		c->major = 1;
		c->minor = ver[2] - '0';
	} else {
		snprintf(err, errlen, "FCTL_KMIP_VERSION '%s': this client speaks 1.0 .. 1.4 and 2.0",
			 ver);
		return -EINVAL;
	}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd readiness until deadline (monotonic ms). */
static int wait_fd(int fd, short ev, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = ev };
		int64_t left = deadline - now_ms();
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)left);
		if (n > 0)
			return 0;
		if (n == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* The one place OpenSSL's 1/0 + error queue becomes an errno and a message. */
static int ssl_fail(struct kmip_conn *c, int ret, const char *what, char *err, size_t errlen)
{
	unsigned long e = ERR_peek_last_error();
	int se = SSL_get_error(c->ssl, ret);
	long vr = SSL_get_verify_result(c->ssl);
	char buf[160] = "";
	int r = -EPROTO;

	if (e)
		ERR_error_string_n(e, buf, sizeof(buf));
	if (vr != X509_V_OK) {
		snprintf(err, errlen, "kmip %s:%s: %s: server certificate refused: %s", c->cfg->host,
			 c->cfg->port, what, X509_verify_cert_error_string(vr));
		r = -EACCES;
	} else if (ERR_GET_LIB(e) == ERR_LIB_SSL &&
		   (ERR_GET_REASON(e) == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
		    ERR_GET_REASON(e) == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
		    ERR_GET_REASON(e) == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN ||
		    ERR_GET_REASON(e) == SSL_R_TLSV1_ALERT_ACCESS_DENIED ||
		    ERR_GET_REASON(e) == SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED)) {
		snprintf(err, errlen, "kmip %s:%s: %s: the server refused our client certificate: "
			 "%s", c->cfg->host, c->cfg->port, what, buf);
		r = -EACCES;
	} else if (se == SSL_ERROR_SYSCALL && !e) {
		snprintf(err, errlen, "kmip %s:%s: %s: connection closed by the server", c->cfg->host,
			 c->cfg->port, what);
		r = -ECONNRESET;
	} else if (se == SSL_ERROR_ZERO_RETURN) {
		snprintf(err, errlen, "kmip %s:%s: %s: the server closed the session", c->cfg->host,
			 c->cfg->port, what);
		r = -ECONNRESET;
	} else {
		snprintf(err, errlen, "kmip %s:%s: %s: TLS error %s", c->cfg->host, c->cfg->port,
			 what, buf[0] ? buf : "(none reported)");
	}
	ERR_clear_error();
	return r;
}

/* Drives one SSL call to completion with poll() against the deadline. */
static int ssl_drive(struct kmip_conn *c, int (*fn)(SSL *, void *, int), void *buf, int len,
		     int64_t deadline, const char *what, char *err, size_t errlen)
{
	for (;;) {
		int ret, se, r;

		ERR_clear_error(); /* SSL_get_error() reads the queue first: only this call's */
		ret = fn(c->ssl, buf, len);

		if (ret > 0)
			return ret;
		se = SSL_get_error(c->ssl, ret);
		if (se == SSL_ERROR_WANT_READ || se == SSL_ERROR_WANT_WRITE) {
			r = wait_fd(c->fd, se == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
			if (r == -ETIMEDOUT) {
				snprintf(err, errlen, "kmip %s:%s: %s: no answer within %d ms",
					 c->cfg->host, c->cfg->port, what, c->cfg->timeout_ms);
				return r;
			}
			if (r < 0) {
				snprintf(err, errlen, "kmip %s:%s: %s: %s", c->cfg->host, c->cfg->port,
					 what, strerror(-r));
				return r;
			}
			continue;
		}
		return ssl_fail(c, ret, what, err, errlen);
	}
}

static int do_connect(SSL *s, void *b, int l)
{
	(void)b;
	(void)l;
	return SSL_connect(s);
}

static int do_read(SSL *s, void *b, int l)
{
	return SSL_read(s, b, l);
}

static int do_write(SSL *s, void *b, int l)
{
	return SSL_write(s, b, l);
}

static int tcp_connect(const struct kmip_cfg *cfg, int64_t deadline, int *fdout, char *err,
		       size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res, *ai;
	int r = -EHOSTUNREACH, g;

	g = getaddrinfo(cfg->host, cfg->port, &hints, &res);
	if (g != 0) {
		snprintf(err, errlen, "kmip server '%s': %s", cfg->host, gai_strerror(g));
		return -EHOSTUNREACH;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (fd < 0) {
			r = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			r = -errno;
			close(fd);
			continue;
		}
		r = wait_fd(fd, POLLOUT, deadline);
		if (r == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr)
			r = -soerr;
		if (r == 0) {
			*fdout = fd;
			break;
		}
		close(fd);
	}
	freeaddrinfo(res);
	if (r < 0)
		snprintf(err, errlen, "kmip %s:%s: connect: %s", cfg->host, cfg->port,
			 r == -ETIMEDOUT ? "timed out" : strerror(-r));
	return r;
}

void fctl_kmip_conn_close(struct kmip_conn *c)
{
	if (c->ssl) {
		/* best effort, never waits */
		(void)SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	SSL_CTX_free(c->ctx);
	if (c->fd >= 0)
		close(c->fd);
	c->ssl = NULL;
	c->ctx = NULL;
	c->fd = -1;
	ERR_clear_error();
}

int fctl_kmip_conn_open(struct kmip_conn *c, const struct kmip_cfg *cfg, char *err,
			size_t errlen)
{
	int64_t deadline = now_ms() + cfg->timeout_ms;
	int r;

	memset(c, 0, sizeof(*c));
	c->cfg = cfg;
	c->fd = -1;
	/* the client key: owner-only, as every secret file */
	r = fctl_keys_check_secret_file(cfg->key, err, errlen);
	if (r < 0)
		return r;
	c->ctx = SSL_CTX_new(TLS_client_method());
	if (!c->ctx) {
		snprintf(err, errlen, "kmip: cannot create a TLS context");
		r = -ENOMEM;
		goto fail;
	}
	SSL_CTX_set_min_proto_version(c->ctx, TLS1_2_VERSION);
	SSL_CTX_set_options(c->ctx, SSL_OP_CLEANSE_PLAINTEXT | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_load_verify_locations(c->ctx, cfg->ca, NULL) != 1) {
		snprintf(err, errlen, "kmip: cannot load the CA file '%s'", cfg->ca);
		r = -ENOENT;
		goto fail;
	}
	if (SSL_CTX_use_certificate_chain_file(c->ctx, cfg->cert) != 1) {
		snprintf(err, errlen, "kmip: cannot load the client certificate '%s'", cfg->cert);
		r = -ENOENT;
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(c->ctx, cfg->key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(c->ctx) != 1) {
		snprintf(err, errlen, "kmip: cannot use the client key '%s' with '%s'", cfg->key,
			 cfg->cert);
		r = -EINVAL;
		goto fail;
	}
	r = tcp_connect(cfg, deadline, &c->fd, err, errlen);
	if (r < 0)
		goto fail;
	c->ssl = SSL_new(c->ctx);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
		snprintf(err, errlen, "kmip: cannot create a TLS session");
		r = -ENOMEM;
		goto fail;
	}
	{
		X509_VERIFY_PARAM *vp = SSL_get0_param(c->ssl);

		/* an IP address is checked against the certificate's IP SANs, a name
		 * against its DNS names (and sent as SNI) */
		if (X509_VERIFY_PARAM_set1_ip_asc(vp, cfg->host) != 1) {
			if (SSL_set1_host(c->ssl, cfg->host) != 1 ||
			    SSL_set_tlsext_host_name(c->ssl, cfg->host) != 1) {
				snprintf(err, errlen, "kmip: cannot set the expected server name");
				r = -EINVAL;
				goto fail;
			}
		}
	}
	r = ssl_drive(c, do_connect, NULL, 0, deadline, "TLS handshake", err, errlen);
	if (r < 0)
		goto fail;
	return 0;
fail:
	fctl_kmip_conn_close(c);
	ERR_clear_error();
	return r;
}

void fctl_kmip_req_begin(struct fctl_ttlv_enc *e, const struct kmip_cfg *cfg, uint32_t op)
{
	fctl_ttlv_enc_init(e);
	fctl_ttlv_begin(e, FCTL_KMIP_TAG_REQUEST_MESSAGE);
	fctl_ttlv_begin(e, FCTL_KMIP_TAG_REQUEST_HEADER);
	fctl_ttlv_begin(e, FCTL_KMIP_TAG_PROTOCOL_VERSION);
	fctl_ttlv_put_int(e, FCTL_KMIP_TAG_PROTOCOL_VERSION_MAJOR, cfg->major);
	fctl_ttlv_put_int(e, FCTL_KMIP_TAG_PROTOCOL_VERSION_MINOR, cfg->minor);
	fctl_ttlv_end(e);
	fctl_ttlv_put_int(e, FCTL_KMIP_TAG_BATCH_COUNT, 1);
	fctl_ttlv_end(e);
	fctl_ttlv_begin(e, FCTL_KMIP_TAG_BATCH_ITEM);
	fctl_ttlv_put_enum(e, FCTL_KMIP_TAG_OPERATION, op);
	fctl_ttlv_begin(e, FCTL_KMIP_TAG_REQUEST_PAYLOAD);
}

static const char *op_name(uint32_t op)
{
	switch (op) {
	case OP_CREATE:
		return "Create";
	case OP_LOCATE:
		return "Locate";
	case OP_GET:
		return "Get";
	case OP_GET_ATTRIBUTES:
		return "Get Attributes";
	case OP_ACTIVATE:
		return "Activate";
	case OP_REVOKE:
		return "Revoke";
	case OP_DESTROY:
		return "Destroy";
	}
	return "?";
}

/* KMIP Result Reason -> errno (KMIP 1.x section 9.1.3.2.29) */
static int reason_errno(uint32_t reason)
{
	switch (reason) {
	case 0x01: /* Item Not Found */
		return -ENOKEY;
	case 0x03: /* Authentication Not Successful */
	case 0x0C: /* Permission Denied */
		return -EACCES;
	case 0x05: /* Operation Not Supported */
	case 0x08: /* Feature Not Supported */
		return -EOPNOTSUPP;
	case 0x0B: /* Illegal Operation */
		return -EPERM;
	case 0x07: /* Invalid Field */
	case 0x04: /* Invalid Message */
	case 0x06: /* Missing Data */
		return -EINVAL;
	default:
		return -EPROTO;
	}
}

/* Sends the request in e (closing it) and reads, parses and checks the response. */
int fctl_kmip_exchange(struct kmip_conn *c, struct fctl_ttlv_enc *e, uint32_t op,
		       struct kmip_resp *out, char *err, size_t errlen)
{
	const struct fctl_ttlv *root, *hdr, *item, *t;
	int64_t deadline = now_ms() + c->cfg->timeout_ms;
	const uint8_t *req;
	uint8_t head[8];
	struct kmip_resp rs = { 0 };
	const char *why = NULL;
	size_t reqlen, total, got;
	uint32_t v;
	int32_t bc;
	int r;

	fctl_ttlv_end(e); /* payload */
	fctl_ttlv_end(e); /* batch item */
	fctl_ttlv_end(e); /* message */
	r = fctl_ttlv_enc_finish(e, &req, &reqlen);
	if (r < 0) {
		snprintf(err, errlen, "kmip %s: cannot encode the request", op_name(op));
		goto out;
	}
	for (size_t off = 0; off < reqlen;) {
		r = ssl_drive(c, do_write, (void *)(uintptr_t)(req + off), (int)(reqlen - off),
			      deadline, op_name(op), err, errlen);
		if (r < 0)
			goto out;
		off += (size_t)r;
	}
	for (got = 0; got < sizeof(head); got += (size_t)r) {
		r = ssl_drive(c, do_read, head + got, (int)(sizeof(head) - got), deadline, op_name(op),
			      err, errlen);
		if (r < 0)
			goto out;
	}
	if (fctl_ttlv_peek_size(head, &total) < 0) {
		snprintf(err, errlen, "kmip %s: the response is not a TTLV message", op_name(op));
		r = -EPROTO;
		goto out;
	}
	rs.buf = fctl_keys_secure_alloc(total);
	if (!rs.buf) {
		r = -ENOMEM;
		goto out;
	}
	rs.len = total;
	memcpy(rs.buf, head, sizeof(head));
	for (got = sizeof(head); got < total; got += (size_t)r) {
		r = ssl_drive(c, do_read, rs.buf + got, (int)(total - got), deadline, op_name(op), err,
			      errlen);
		if (r < 0)
			goto out;
	}
	r = fctl_ttlv_parse(rs.buf, rs.len, &rs.doc, &why);
	if (r < 0) {
		snprintf(err, errlen, "kmip %s: malformed response: %s", op_name(op), why);
		r = -EPROTO;
		goto out;
	}
	root = fctl_ttlv_root(&rs.doc);
	hdr = fctl_ttlv_child(&rs.doc, root, FCTL_KMIP_TAG_RESPONSE_HEADER, NULL);
	item = fctl_ttlv_child(&rs.doc, root, FCTL_KMIP_TAG_BATCH_ITEM, NULL);
	if (root->tag != FCTL_KMIP_TAG_RESPONSE_MESSAGE || !hdr || !item ||
	    fctl_ttlv_get_int(fctl_ttlv_child(&rs.doc, hdr, FCTL_KMIP_TAG_BATCH_COUNT, NULL), &bc) < 0 ||
	    bc != 1 || fctl_ttlv_child(&rs.doc, root, FCTL_KMIP_TAG_BATCH_ITEM, item)) {
		snprintf(err, errlen, "kmip %s: the response is not one KMIP batch item", op_name(op));
		r = -EPROTO;
		goto out;
	}
	t = fctl_ttlv_child(&rs.doc, item, FCTL_KMIP_TAG_OPERATION, NULL);
	if (t && (fctl_ttlv_get_enum(t, &v) < 0 || v != op)) {
		snprintf(err, errlen, "kmip %s: the response answers another operation", op_name(op));
		r = -EPROTO;
		goto out;
	}
	if (fctl_ttlv_get_enum(fctl_ttlv_child(&rs.doc, item, FCTL_KMIP_TAG_RESULT_STATUS, NULL), &v) <
	    0) {
		snprintf(err, errlen, "kmip %s: the response has no result status", op_name(op));
		r = -EPROTO;
		goto out;
	}
	if (v != 0) {
		char msg[160] = "";
		uint32_t reason = 0;

		(void)fctl_ttlv_get_enum(fctl_ttlv_child(&rs.doc, item, FCTL_KMIP_TAG_RESULT_REASON,
							 NULL), &reason);
		if (fctl_ttlv_get_text(fctl_ttlv_child(&rs.doc, item, FCTL_KMIP_TAG_RESULT_MESSAGE,
						       NULL), msg, sizeof(msg)) < 0)
			msg[0] = '\0';
		for (char *p = msg; *p; p++) /* the server's words, printable only */
			if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
				*p = '?';
		snprintf(err, errlen, "kmip %s refused by the server (status %u, reason %u)%s%s",
			 op_name(op), v, reason, msg[0] ? ": " : "", msg);
		r = reason_errno(reason);
		goto out;
	}
	rs.payload = fctl_ttlv_child(&rs.doc, item, FCTL_KMIP_TAG_RESPONSE_PAYLOAD, NULL);
	*out = rs;
	memset(&rs, 0, sizeof(rs));
	r = 0;
out:
	fctl_kmip_resp_release(&rs);
	fctl_ttlv_enc_release(e);
	return r;
}
