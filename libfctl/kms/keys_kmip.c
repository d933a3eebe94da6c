// SPDX-License-Identifier: MIT
/*
 * The "kmip" key backend: KMIP 1.0 .. 1.4 and 2.0 over TLS 1.2 with a client
 * certificate, our own TTLV encoding (kmip_ttlv.c) over OpenSSL.
 *
 * Reference: id "NAME" ([A-Za-z0-9._-], at most 64), version N >= 1: the managed
 * object whose Name attribute is "NAME.vN" (Locate by Name; two answers = refused).
 * Configuration from the environment (docs/kms.md): FCTL_KMIP_SERVER (host:port,
 * default 127.0.0.1:5696), FCTL_KMIP_CA, FCTL_KMIP_CERT, FCTL_KMIP_KEY (the client
 * key must be owner-only), FCTL_KMIP_TIMEOUT_MS (default 5000, each exchange),
 * FCTL_KMIP_VERSION (1.0 .. 1.4 or 2.0, default 1.2).
 *
 * The operations are the same in both major versions; what differs is how
 * attributes travel. KMIP 1.x wraps each one as Attribute{Attribute Name, Attribute
 * Value} (inside a Template-Attribute for Create) and asks for them by name in Get
 * Attributes. KMIP 2.0 tags each value with the attribute's own tag inside one
 * Attributes structure, and asks for them by Attribute Reference (the tag as an
 * enumeration). attr_begin()/attr_end() and attr_of() hide the difference.
 *
 * Key hygiene: the only response holding key bytes (Get) is read into one locked
 * buffer, copied into a struct fctl_key and cleansed; OpenSSL is asked to cleanse
 * its plaintext record buffer too (SSL_OP_CLEANSE_PLAINTEXT).
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "kmip_int.h"
#include "kms_int.h"

enum {
	OP_CREATE = 0x01,
	OP_LOCATE = 0x08,
	OP_GET = 0x0A,
	OP_GET_ATTRIBUTES = 0x0B,
	OP_ACTIVATE = 0x12,
	OP_REVOKE = 0x13,
	OP_DESTROY = 0x14,
};

#define OBJ_SYMMETRIC_KEY 2
#define ALG_AES 3
#define KEY_FORMAT_RAW 1
#define NAME_TYPE_TEXT 1
#define USAGE_ENCRYPT_DECRYPT 0x0C
#define REVOKE_KEY_COMPROMISE 2
#define REVOKE_CESSATION 6
#define APP_NAMESPACE "fabricctl"

struct cfg {
	char host[256];
	char port[16];
	char ca[1024], cert[1024], key[1024];
	int timeout_ms;
	int major, minor;
};

struct conn {
	const struct cfg *cfg;
	SSL_CTX *ctx;
	SSL *ssl;
	int fd;
};

/* A parsed response; buf may hold key bytes: locked, cleansed on release. */
struct resp {
	uint8_t *buf;
	size_t len;
	struct fctl_ttlv_doc doc;
	const struct fctl_ttlv *payload;
};

static void resp_release(struct resp *r)
{
	fctl_ttlv_doc_release(&r->doc);
	if (r->buf) {
		OPENSSL_cleanse(r->buf, r->len);
		munlock(r->buf, r->len);
		free(r->buf);
	}
	memset(r, 0, sizeof(*r));
}

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

static int load_cfg(struct cfg *c, char *err, size_t errlen)
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
static int ssl_fail(struct conn *c, int ret, const char *what, char *err, size_t errlen)
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
static int ssl_drive(struct conn *c, int (*fn)(SSL *, void *, int), void *buf, int len,
		     int64_t deadline, const char *what, char *err, size_t errlen)
{
	for (;;) {
		int ret = fn(c->ssl, buf, len), se, r;

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

static int tcp_connect(const struct cfg *cfg, int64_t deadline, int *fdout, char *err,
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

static void conn_close(struct conn *c)
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

static int conn_open(struct conn *c, const struct cfg *cfg, char *err, size_t errlen)
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
	conn_close(c);
	ERR_clear_error();
	return r;
}

static void req_begin(struct fctl_ttlv_enc *e, const struct cfg *cfg, uint32_t op)
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
static int exchange(struct conn *c, struct fctl_ttlv_enc *e, uint32_t op, struct resp *out,
		    char *err, size_t errlen)
{
	const struct fctl_ttlv *root, *hdr, *item, *t;
	int64_t deadline = now_ms() + c->cfg->timeout_ms;
	const uint8_t *req;
	uint8_t head[8];
	struct resp rs = { 0 };
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
	rs.buf = malloc(total);
	if (!rs.buf) {
		r = -ENOMEM;
		goto out;
	}
	rs.len = total;
	(void)mlock(rs.buf, total);
	(void)madvise(rs.buf, total, MADV_DONTDUMP);
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
	resp_release(&rs);
	fctl_ttlv_enc_release(e);
	return r;
}

static bool v2(const struct cfg *cfg)
{
	return cfg->major >= 2;
}

/* Opens one attribute of a request and returns the tag its value must carry:
 * KMIP 1.x Attribute{Attribute Name, Attribute Value}, KMIP 2.0 the value alone
 * under the attribute's own tag. */
static uint32_t attr_begin(struct fctl_ttlv_enc *e, const struct cfg *cfg, const char *name,
			   uint32_t tag)
{
	if (v2(cfg))
		return tag;
	fctl_ttlv_begin(e, FCTL_KMIP_TAG_ATTRIBUTE);
	fctl_ttlv_put_text(e, FCTL_KMIP_TAG_ATTRIBUTE_NAME, name);
	return FCTL_KMIP_TAG_ATTRIBUTE_VALUE;
}

static void attr_end(struct fctl_ttlv_enc *e, const struct cfg *cfg)
{
	if (!v2(cfg))
		fctl_ttlv_end(e);
}

static void put_name_attr(struct fctl_ttlv_enc *e, const struct cfg *cfg, const char *name)
{
	fctl_ttlv_begin(e, attr_begin(e, cfg, "Name", FCTL_KMIP_TAG_NAME));
	fctl_ttlv_put_text(e, FCTL_KMIP_TAG_NAME_VALUE, name);
	fctl_ttlv_put_enum(e, FCTL_KMIP_TAG_NAME_TYPE, NAME_TYPE_TEXT);
	fctl_ttlv_end(e);
	attr_end(e, cfg);
}

static int ref_name(const struct fctl_keyref *ref, char *out, size_t outlen, char *err,
		    size_t errlen)
{
	if (!fctl_keys_name_ok(ref->id, 64)) {
		snprintf(err, errlen, "kmip key id '%s' is not a name of 1..64 characters "
			 "[A-Za-z0-9._-]", ref->id);
		return -EINVAL;
	}
	snprintf(out, outlen, "%s.v%u", ref->id, ref->version);
	return 0;
}

/* Unique Identifier of the object named name: -ENOKEY none, -ENOTUNIQ several. */
static int locate(struct conn *c, const char *name, char *uid, size_t uidlen, char *err,
		  size_t errlen)
{
	struct fctl_ttlv_enc e;
	struct resp rs;
	const struct fctl_ttlv *t;
	int r;

	req_begin(&e, c->cfg, OP_LOCATE);
	if (v2(c->cfg)) /* 2.0: the match criteria are one Attributes structure */
		fctl_ttlv_begin(&e, FCTL_KMIP_TAG_ATTRIBUTES);
	put_name_attr(&e, c->cfg, name);
	if (v2(c->cfg))
		fctl_ttlv_end(&e);
	r = exchange(c, &e, OP_LOCATE, &rs, err, errlen);
	if (r < 0)
		return r;
	t = fctl_ttlv_child(&rs.doc, rs.payload, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, NULL);
	if (!t) {
		snprintf(err, errlen, "kmip: no key named '%s' (unknown key or version)", name);
		r = -ENOKEY;
	} else if (fctl_ttlv_child(&rs.doc, rs.payload, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, t)) {
		snprintf(err, errlen, "kmip: several objects are named '%s'; refusing to pick one",
			 name);
		r = -ENOTUNIQ;
	} else if (fctl_ttlv_get_text(t, uid, uidlen) < 0) {
		snprintf(err, errlen, "kmip Locate: bad unique identifier in the response");
		r = -EPROTO;
	}
	resp_release(&rs);
	return r;
}

enum attr_kind { ATTR_STATE, ATTR_LENGTH, ATTR_ALGORITHM, ATTR_APP_INFO, ATTR_DATE };

/* What Get Attributes asks for: by name in KMIP 1.x, by tag in 2.0. */
static const struct {
	const char *name;
	uint32_t tag;
	enum attr_kind kind;
	enum fctl_key_date date; /* ATTR_DATE only */
} attrs[] = {
	{ "State", FCTL_KMIP_TAG_STATE, ATTR_STATE, 0 },
	{ "Cryptographic Length", FCTL_KMIP_TAG_CRYPTOGRAPHIC_LENGTH, ATTR_LENGTH, 0 },
	{ "Cryptographic Algorithm", FCTL_KMIP_TAG_CRYPTOGRAPHIC_ALGORITHM, ATTR_ALGORITHM, 0 },
	{ "Application Specific Information", FCTL_KMIP_TAG_APPLICATION_SPECIFIC_INFORMATION,
	  ATTR_APP_INFO, 0 },
	{ "Initial Date", FCTL_KMIP_TAG_INITIAL_DATE, ATTR_DATE, FCTL_KEY_DATE_INITIAL },
	{ "Activation Date", FCTL_KMIP_TAG_ACTIVATION_DATE, ATTR_DATE, FCTL_KEY_DATE_ACTIVATION },
	{ "Process Start Date", FCTL_KMIP_TAG_PROCESS_START_DATE, ATTR_DATE,
	  FCTL_KEY_DATE_PROCESS_START },
	{ "Protect Stop Date", FCTL_KMIP_TAG_PROTECT_STOP_DATE, ATTR_DATE,
	  FCTL_KEY_DATE_PROTECT_STOP },
	{ "Deactivation Date", FCTL_KMIP_TAG_DEACTIVATION_DATE, ATTR_DATE,
	  FCTL_KEY_DATE_DEACTIVATION },
	{ "Compromise Date", FCTL_KMIP_TAG_COMPROMISE_DATE, ATTR_DATE, FCTL_KEY_DATE_COMPROMISE },
	{ "Destroy Date", FCTL_KMIP_TAG_DESTROY_DATE, ATTR_DATE, FCTL_KEY_DATE_DESTROY },
};

/* One attribute of a Get Attributes response: its index in attrs[] (-1: not one we
 * asked for) and its value item. Returns -EBADMSG for a malformed 1.x Attribute. */
static int attr_of(const struct cfg *cfg, const struct fctl_ttlv_doc *doc,
		   const struct fctl_ttlv *a, const struct fctl_ttlv **val)
{
	char name[64];

	if (v2(cfg)) {
		*val = a;
		for (size_t i = 0; i < FCTL_ARRAY_SIZE(attrs); i++)
			if (attrs[i].tag == a->tag)
				return (int)i;
		return -1;
	}
	*val = fctl_ttlv_child(doc, a, FCTL_KMIP_TAG_ATTRIBUTE_VALUE, NULL);
	if (a->tag != FCTL_KMIP_TAG_ATTRIBUTE)
		return -1;
	if (fctl_ttlv_get_text(fctl_ttlv_child(doc, a, FCTL_KMIP_TAG_ATTRIBUTE_NAME, NULL), name,
			       sizeof(name)) < 0 ||
	    !*val)
		return -EBADMSG;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(attrs); i++)
		if (strcmp(attrs[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int get_attributes(struct conn *c, const char *uid, struct fctl_key_info *info, char *err,
			  size_t errlen)
{
	struct fctl_key_info rec = { 0 }, tmp = { 0 };
	const struct fctl_ttlv *list, *a = NULL;
	struct fctl_ttlv_enc e;
	bool have_state = false, have_rec = false;
	uint32_t server_dates = 0;
	struct resp rs;
	int r;

	req_begin(&e, c->cfg, OP_GET_ATTRIBUTES);
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, uid);
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(attrs); i++)
		if (v2(c->cfg))
			fctl_ttlv_put_enum(&e, FCTL_KMIP_TAG_ATTRIBUTE_REFERENCE, attrs[i].tag);
		else
			fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_ATTRIBUTE_NAME, attrs[i].name);
	r = exchange(c, &e, OP_GET_ATTRIBUTES, &rs, err, errlen);
	if (r < 0)
		return r;
	/* 1.x: Attribute items in the payload; 2.0: one Attributes structure */
	list = v2(c->cfg) ? fctl_ttlv_child(&rs.doc, rs.payload, FCTL_KMIP_TAG_ATTRIBUTES, NULL)
			  : rs.payload;
	while (list && (a = fctl_ttlv_child(&rs.doc, list, 0, a))) {
		const struct fctl_ttlv *val;
		int i = attr_of(c->cfg, &rs.doc, a, &val);
		uint32_t en;
		int32_t i32;
		int64_t dt;

		if (i == -EBADMSG)
			goto bad;
		if (i < 0)
			continue;
		switch (attrs[i].kind) {
		case ATTR_STATE:
			if (fctl_ttlv_get_enum(val, &en) < 0 || en < 1 || en > 6)
				goto bad;
			tmp.state = (enum fctl_key_state)en;
			have_state = true;
			break;
		case ATTR_LENGTH:
			if (fctl_ttlv_get_int(val, &i32) < 0 || i32 <= 0 || i32 % 8)
				goto bad;
			tmp.len = (size_t)i32 / 8;
			break;
		case ATTR_ALGORITHM:
			if (fctl_ttlv_get_enum(val, &en) < 0)
				goto bad;
			if (en != ALG_AES) {
				snprintf(err, errlen, "kmip object %s is not an AES key", uid);
				r = -EINVAL;
				goto out;
			}
			break;
		case ATTR_APP_INFO: {
			char ns[32];
			const struct fctl_ttlv *d = fctl_ttlv_child(&rs.doc, val,
								    FCTL_KMIP_TAG_APPLICATION_DATA, NULL);

			if (fctl_ttlv_get_text(fctl_ttlv_child(&rs.doc, val,
							       FCTL_KMIP_TAG_APPLICATION_NAMESPACE, NULL),
					       ns, sizeof(ns)) < 0 ||
			    strcmp(ns, APP_NAMESPACE) != 0)
				continue; /* someone else's */
			if (!d || d->type != FCTL_TTLV_TEXT ||
			    fctl_keys_info_parse((const char *)d->val, d->len, &rec) < 0)
				goto bad;
			have_rec = true;
			break;
		}
		case ATTR_DATE:
			if (fctl_ttlv_get_datetime(val, &dt) < 0)
				goto bad;
			tmp.dates[attrs[i].date] = dt;
			server_dates |= 1u << attrs[i].date;
			break;
		}
	}
	if (!have_state) {
		snprintf(err, errlen, "kmip object %s: the server reported no State", uid);
		r = -EPROTO;
		goto out;
	}
	/* fabricctl's record fills the dates the server does not keep; the server's own
	 * dates win (PyKMIP keeps only Initial Date) */
	if (have_rec)
		for (unsigned d = 0; d < FCTL_KEY_DATE_COUNT; d++)
			if ((rec.dates_set & (1u << d)) && !(server_dates & (1u << d))) {
				tmp.dates[d] = rec.dates[d];
				server_dates |= 1u << d;
			}
	tmp.dates_set = server_dates;
	info->state = tmp.state;
	info->len = tmp.len;
	info->dates_set = tmp.dates_set;
	memcpy(info->dates, tmp.dates, sizeof(tmp.dates));
	snprintf(info->object, sizeof(info->object), "kmip:%s", uid);
	r = 0;
	goto out;
bad:
	snprintf(err, errlen, "kmip Get Attributes: malformed attribute in the response");
	r = -EPROTO;
out:
	resp_release(&rs);
	return r;
}

/* Get: the raw key bytes into a locked struct fctl_key. */
static int get_key(struct conn *c, const char *uid, size_t want_len, struct fctl_key **out,
		   char *err, size_t errlen)
{
	const struct fctl_ttlv *sk, *kb, *kv, *km;
	struct fctl_ttlv_enc e;
	struct fctl_key *k;
	struct resp rs;
	uint32_t fmt;
	int r;

	req_begin(&e, c->cfg, OP_GET);
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, uid);
	fctl_ttlv_put_enum(&e, FCTL_KMIP_TAG_KEY_FORMAT_TYPE, KEY_FORMAT_RAW);
	r = exchange(c, &e, OP_GET, &rs, err, errlen);
	if (r < 0)
		return r;
	sk = fctl_ttlv_child(&rs.doc, rs.payload, FCTL_KMIP_TAG_SYMMETRIC_KEY, NULL);
	kb = fctl_ttlv_child(&rs.doc, sk, FCTL_KMIP_TAG_KEY_BLOCK, NULL);
	kv = fctl_ttlv_child(&rs.doc, kb, FCTL_KMIP_TAG_KEY_VALUE, NULL);
	km = fctl_ttlv_child(&rs.doc, kv, FCTL_KMIP_TAG_KEY_MATERIAL, NULL);
	if (!sk || !km || km->type != FCTL_TTLV_BYTES ||
	    fctl_ttlv_get_enum(fctl_ttlv_child(&rs.doc, kb, FCTL_KMIP_TAG_KEY_FORMAT_TYPE, NULL),
			       &fmt) < 0 || fmt != KEY_FORMAT_RAW) {
		snprintf(err, errlen, "kmip Get: object %s is not a raw symmetric key", uid);
		r = -EPROTO;
		goto out;
	}
	if (km->len != want_len) {
		snprintf(err, errlen, "kmip object %s holds a %u-byte key; the cipher needs %zu", uid,
			 km->len, want_len);
		r = -EINVAL;
		goto out;
	}
	k = fctl_keys_alloc();
	if (!k) {
		r = -ENOMEM;
		goto out;
	}
	memcpy(k->bytes, km->val, km->len);
	k->len = km->len;
	fctl_keys_kcv(k);
	*out = k;
	r = 0;
out:
	resp_release(&rs); /* cleanses the key bytes of the response */
	return r;
}

static int simple_op(struct conn *c, uint32_t op, const char *uid, uint32_t revoke_code,
		     char *err, size_t errlen)
{
	struct fctl_ttlv_enc e;
	struct resp rs;
	int r;

	req_begin(&e, c->cfg, op);
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER, uid);
	if (op == OP_REVOKE) {
		fctl_ttlv_begin(&e, FCTL_KMIP_TAG_REVOCATION_REASON);
		fctl_ttlv_put_enum(&e, FCTL_KMIP_TAG_REVOCATION_REASON_CODE, revoke_code);
		fctl_ttlv_end(&e);
		if (revoke_code == REVOKE_KEY_COMPROMISE)
			fctl_ttlv_put_datetime(&e, FCTL_KMIP_TAG_COMPROMISE_OCCURRENCE_DATE,
					       (int64_t)time(NULL));
	}
	r = exchange(c, &e, op, &rs, err, errlen);
	if (r == 0)
		resp_release(&rs);
	return r;
}

/* Opens a connection and finds the object of ref. */
static int start(const struct fctl_keyref *ref, struct cfg *cfg, struct conn *c, char *uid,
		 size_t uidlen, char *err, size_t errlen)
{
	char name[80];
	int r;

	r = ref_name(ref, name, sizeof(name), err, errlen);
	if (r < 0)
		return r;
	r = load_cfg(cfg, err, errlen);
	if (r < 0)
		return r;
	r = conn_open(c, cfg, err, errlen);
	if (r < 0)
		return r;
	r = locate(c, name, uid, uidlen, err, errlen);
	if (r < 0)
		conn_close(c);
	return r;
}

int fctl_kmip_info(const struct fctl_keyref *ref, struct fctl_key_info *out, char *err,
		   size_t errlen)
{
	struct fctl_key_info info = { .version = ref->version };
	struct fctl_key *k = NULL;
	char uid[128];
	struct conn c;
	struct cfg cfg;
	int r;

	r = start(ref, &cfg, &c, uid, sizeof(uid), err, errlen);
	if (r < 0)
		return r;
	r = get_attributes(&c, uid, &info, err, errlen);
	/* the KCV needs the key: fetched into locked memory, wiped at once */
	if (r == 0 && info.state != FCTL_KEY_DESTROYED &&
	    info.state != FCTL_KEY_DESTROYED_COMPROMISED && (info.len == 16 || info.len == 32)) {
		r = get_key(&c, uid, info.len, &k, err, errlen);
		if (r == 0) {
			memcpy(info.kcv, k->kcv, sizeof(info.kcv));
			info.has_kcv = true;
		}
		fctl_key_free(k);
	}
	conn_close(&c);
	if (r == 0)
		*out = info;
	return r;
}

int fctl_kmip_fetch(const struct fctl_keyref *ref, size_t want_len, struct fctl_key **out,
		    struct fctl_key_info *info, char *err, size_t errlen)
{
	struct fctl_key_info in = { .version = ref->version };
	struct fctl_key *k = NULL;
	char uid[128];
	struct conn c;
	struct cfg cfg;
	int r;

	r = start(ref, &cfg, &c, uid, sizeof(uid), err, errlen);
	if (r < 0)
		return r;
	/* PyKMIP serves Get in any state: check state and dates before asking */
	r = get_attributes(&c, uid, &in, err, errlen);
	if (r == 0)
		r = fctl_key_check_usable(&in, (int64_t)time(NULL), err, errlen);
	if (r == 0 && in.len && in.len != want_len) {
		snprintf(err, errlen, "kmip key '%s' version %u is %zu bytes; the cipher needs %zu",
			 ref->id, ref->version, in.len, want_len);
		r = -EINVAL;
	}
	if (r == 0)
		r = get_key(&c, uid, want_len, &k, err, errlen);
	conn_close(&c);
	if (r < 0)
		return r;
	memcpy(in.kcv, k->kcv, sizeof(in.kcv));
	in.has_kcv = true;
	*info = in;
	*out = k;
	return 0;
}

int fctl_kmip_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		     bool activate, struct fctl_key_info *out, char *err, size_t errlen)
{
	struct fctl_key_info rec = { .state = FCTL_KEY_PRE_ACTIVE };
	struct fctl_ttlv_enc e;
	char name[80], uid[128], recs[400];
	struct resp rs;
	struct conn c;
	struct cfg cfg;
	int r;

	r = ref_name(ref, name, sizeof(name), err, errlen);
	if (r < 0)
		return r;
	r = load_cfg(&cfg, err, errlen);
	if (r < 0)
		return r;
	r = conn_open(&c, &cfg, err, errlen);
	if (r < 0)
		return r;
	r = locate(&c, name, uid, sizeof(uid), err, errlen);
	if (r != -ENOKEY) {
		if (r >= 0 || r == -ENOTUNIQ) {
			snprintf(err, errlen, "kmip key '%s' version %u exists already", ref->id,
				 ref->version);
			r = -EEXIST;
		}
		goto out;
	}
	if (plan)
		for (unsigned d = FCTL_KEY_DATE_ACTIVATION; d <= FCTL_KEY_DATE_DEACTIVATION; d++)
			if (plan->dates_set & (1u << d)) {
				rec.dates[d] = plan->dates[d];
				rec.dates_set |= 1u << d;
			}
	fctl_keys_info_format(&rec, recs, sizeof(recs));
	req_begin(&e, &cfg, OP_CREATE);
	fctl_ttlv_put_enum(&e, FCTL_KMIP_TAG_OBJECT_TYPE, OBJ_SYMMETRIC_KEY);
	fctl_ttlv_begin(&e, v2(&cfg) ? FCTL_KMIP_TAG_ATTRIBUTES : FCTL_KMIP_TAG_TEMPLATE_ATTRIBUTE);
	fctl_ttlv_put_enum(&e, attr_begin(&e, &cfg, "Cryptographic Algorithm",
					  FCTL_KMIP_TAG_CRYPTOGRAPHIC_ALGORITHM), ALG_AES);
	attr_end(&e, &cfg);
	fctl_ttlv_put_int(&e, attr_begin(&e, &cfg, "Cryptographic Length",
					 FCTL_KMIP_TAG_CRYPTOGRAPHIC_LENGTH), (int32_t)(len * 8));
	attr_end(&e, &cfg);
	fctl_ttlv_put_int(&e, attr_begin(&e, &cfg, "Cryptographic Usage Mask",
					 FCTL_KMIP_TAG_CRYPTOGRAPHIC_USAGE_MASK), USAGE_ENCRYPT_DECRYPT);
	attr_end(&e, &cfg);
	put_name_attr(&e, &cfg, name);
	fctl_ttlv_begin(&e, attr_begin(&e, &cfg, "Application Specific Information",
				       FCTL_KMIP_TAG_APPLICATION_SPECIFIC_INFORMATION));
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_APPLICATION_NAMESPACE, APP_NAMESPACE);
	fctl_ttlv_put_text(&e, FCTL_KMIP_TAG_APPLICATION_DATA, recs);
	fctl_ttlv_end(&e);
	attr_end(&e, &cfg);
	fctl_ttlv_end(&e); /* template-attribute (1.x) / attributes (2.0) */
	r = exchange(&c, &e, OP_CREATE, &rs, err, errlen);
	if (r < 0)
		goto out;
	r = fctl_ttlv_get_text(fctl_ttlv_child(&rs.doc, rs.payload, FCTL_KMIP_TAG_UNIQUE_IDENTIFIER,
					       NULL), uid, sizeof(uid));
	resp_release(&rs);
	if (r < 0) {
		snprintf(err, errlen, "kmip Create: no unique identifier in the response");
		r = -EPROTO;
		goto out;
	}
	if (activate) {
		r = simple_op(&c, OP_ACTIVATE, uid, 0, err, errlen);
		if (r < 0)
			goto out;
	}
	if (out) {
		struct fctl_key_info info = { .version = ref->version };
		struct fctl_key *k = NULL;

		r = get_attributes(&c, uid, &info, err, errlen);
		if (r == 0)
			r = get_key(&c, uid, len, &k, err, errlen);
		if (r == 0) {
			memcpy(info.kcv, k->kcv, sizeof(info.kcv));
			info.has_kcv = true;
			*out = info;
		}
		fctl_key_free(k);
	}
out:
	conn_close(&c);
	return r;
}

int fctl_kmip_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			 size_t errlen)
{
	char uid[128];
	struct conn c;
	struct cfg cfg;
	int r;

	r = start(ref, &cfg, &c, uid, sizeof(uid), err, errlen);
	if (r < 0)
		return r;
	switch (t) {
	case FCTL_KEY_DO_ACTIVATE:
		r = simple_op(&c, OP_ACTIVATE, uid, 0, err, errlen);
		break;
	case FCTL_KEY_DO_DEACTIVATE:
		r = simple_op(&c, OP_REVOKE, uid, REVOKE_CESSATION, err, errlen);
		break;
	case FCTL_KEY_DO_COMPROMISE:
		r = simple_op(&c, OP_REVOKE, uid, REVOKE_KEY_COMPROMISE, err, errlen);
		break;
	case FCTL_KEY_DO_DESTROY:
		r = simple_op(&c, OP_DESTROY, uid, 0, err, errlen);
		break;
	}
	conn_close(&c);
	return r;
}
