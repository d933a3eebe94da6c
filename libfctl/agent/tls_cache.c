// SPDX-License-Identifier: MIT
/* The client's TLS 1.3 session cache: sessions by endpoint in a 0600 file of the user's
 * cache directory, offered again only to the host their certificate was verified for. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "fctl/tls.h"
#include "fctl/util.h"
#include "tls_int.h"

#define MAGIC "FCTLTLS1"
#define MAGIC_LEN 8
#define MAX_FILE (64u << 20)
#define MAX_EP 300
#define MAX_DER 16384
#define MAX_ENTRIES (1u << 20)

struct entry {
	char *endpoint;
	SSL_SESSION *sess;
	unsigned checked; /* 0: not yet; 1: verified for the host in `host`; 2: refused */
	char *host;
};

struct fctl_tls_cache {
	pthread_mutex_t lock;
	SSL_CTX *ctx; /* borrowed: the context this cache belongs to */
	char *path;
	uint8_t binding[32]; /* our certificate, the trust store's certificates and CRLs */
	struct entry *v;     /* open addressing, cap a power of two */
	size_t n, cap;
};

static CRYPTO_ONCE idx_once = CRYPTO_ONCE_STATIC_INIT;
static int ctx_idx = -1, ssl_idx = -1;

static void entry_release(struct entry *e)
{
	free(e->endpoint);
	free(e->host);
	SSL_SESSION_free(e->sess);
	memset(e, 0, sizeof(*e));
}

static void cache_free(struct fctl_tls_cache *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->cap; i++)
		entry_release(&k->v[i]);
	free(k->v);
	free(k->path);
	pthread_mutex_destroy(&k->lock);
	free(k);
}

static void ctx_ex_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
		       void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	cache_free(ptr);
}

static void ssl_ex_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
		       void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	free(ptr);
}

static void idx_init(void)
{
	ctx_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, ctx_ex_free);
	ssl_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, ssl_ex_free);
}

static struct fctl_tls_cache *cache_of(SSL_CTX *ctx)
{
	CRYPTO_THREAD_run_once(&idx_once, idx_init);
	return ctx && ctx_idx >= 0 ? SSL_CTX_get_ex_data(ctx, ctx_idx) : NULL;
}

static size_t hash(const char *s)
{
	size_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The slot of endpoint: its entry, or the empty slot it would take. Lock held. */
static struct entry *slot(struct fctl_tls_cache *k, const char *ep)
{
	size_t i = hash(ep) & (k->cap - 1);

	while (k->v[i].endpoint && strcmp(k->v[i].endpoint, ep) != 0)
		i = (i + 1) & (k->cap - 1);
	return &k->v[i];
}

static int grow(struct fctl_tls_cache *k)
{
	struct entry *old = k->v;
	size_t ocap = k->cap, cap = ocap ? ocap * 2 : 64;

	if (k->n + 1 <= ocap / 2)
		return 0;
	k->v = fctl_calloc(cap, sizeof(*k->v));
	if (!k->v) {
		k->v = old;
		return -ENOMEM;
	}
	k->cap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].endpoint)
			*slot(k, old[i].endpoint) = old[i];
	free(old);
	return 0;
}

/* Takes sess (one reference) for endpoint, replacing what was there. Lock held. */
static int put(struct fctl_tls_cache *k, const char *ep, SSL_SESSION *sess)
{
	struct entry *e;

	if (strlen(ep) > MAX_EP || k->n >= MAX_ENTRIES || grow(k) < 0)
		return -ENOSPC;
	e = slot(k, ep);
	if (e->endpoint) {
		SSL_SESSION_free(e->sess);
		free(e->host);
		e->host = NULL;
	} else {
		e->endpoint = fctl_strdup(ep);
		if (!e->endpoint)
			return -ENOMEM;
		k->n++;
	}
	e->sess = sess;
	e->checked = 0;
	return 0;
}

/* A session worth offering again at all: TLS 1.3, resumable, not expired, a peer. */
static bool usable(SSL_SESSION *s)
{
	return s && SSL_SESSION_get_protocol_version(s) == TLS1_3_VERSION &&
	       SSL_SESSION_is_resumable(s) && SSL_SESSION_get0_peer(s) &&
	       SSL_SESSION_get_time(s) + SSL_SESSION_get_timeout(s) > time(NULL);
}

/* What the sessions of the file were established with: SHA-256 over our certificate and
 * every certificate and CRL of the trust store. Another identity or other trust: another
 * binding, and the file's sessions are not used. */
static int binding_of(SSL_CTX *ctx, uint8_t out[32])
{
	STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(SSL_CTX_get_cert_store(ctx));
	X509 *me = SSL_CTX_get0_certificate(ctx);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int ok = md && me && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1;

	for (int i = -1; ok && i < sk_X509_OBJECT_num(objs); i++) {
		X509_OBJECT *o = i < 0 ? NULL : sk_X509_OBJECT_value(objs, i);
		X509 *x = i < 0 ? me : X509_OBJECT_get0_X509(o);
		X509_CRL *crl = x ? NULL : X509_OBJECT_get0_X509_CRL(o);
		unsigned char *der = NULL;
		int n = x ? i2d_X509(x, &der) : crl ? i2d_X509_CRL(crl, &der) : 0;

		ok = n >= 0 && (n == 0 || EVP_DigestUpdate(md, der, (size_t)n) == 1);
		OPENSSL_free(der);
	}
	ok = ok && EVP_DigestFinal_ex(md, out, NULL) == 1;
	EVP_MD_CTX_free(md);
	return ok ? 0 : -EINVAL;
}

/* The directory of path must be the user's and writable by nobody else, the file a
 * regular file of the user's, neither group nor world may read or write it. */
static int check_owner(const struct stat *st, bool dir, const char *what, char *err,
		       size_t errlen)
{
	mode_t bad = dir ? 022 : 077;

	if (st->st_uid != geteuid() || (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) ||
	    (st->st_mode & bad)) {
		snprintf(err, errlen,
			 "TLS session cache '%s': refused: %s, owned by uid %u, mode %04o "
			 "(must be the user's, mode %s)",
			 what, dir ? "a directory" : "a regular file", (unsigned)st->st_uid,
			 (unsigned)(st->st_mode & 07777), dir ? "0700 or 0755" : "0600");
		return -EPERM;
	}
	return 0;
}

static int check_dir(const char *path, char *err, size_t errlen)
{
	char *dir = fctl_strdup(path), *slash;
	struct stat st;
	int r;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	else
		snprintf(dir, strlen(dir) + 1, ".");
	r = lstat(dir, &st) < 0 ? -errno : check_owner(&st, true, dir, err, errlen);
	if (r < 0 && r != -EPERM)
		snprintf(err, errlen, "TLS session cache '%s': %s", dir, strerror(-r));
	free(dir);
	return r;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The entries of a file's bytes whose binding is ours. A malformed file: -EBADMSG. */
static int parse(struct fctl_tls_cache *k, const uint8_t *p, size_t n)
{
	size_t off = MAGIC_LEN + 32 + 4;
	uint32_t count;

	if (n < off || memcmp(p, MAGIC, MAGIC_LEN) != 0)
		return -EBADMSG;
	if (memcmp(p + MAGIC_LEN, k->binding, 32) != 0)
		return 0; /* another identity or trust store: nothing of it is ours */
	count = get32(p + MAGIC_LEN + 32);
	if (count > MAX_ENTRIES)
		return -EBADMSG;
	for (uint32_t i = 0; i < count; i++) {
		char ep[MAX_EP + 1];
		const unsigned char *d;
		SSL_SESSION *s;
		size_t el, dl;

		if (n - off < 2 || (el = (size_t)p[off] << 8 | p[off + 1]) == 0 || el > MAX_EP ||
		    n - off - 2 < el + 4)
			return -EBADMSG;
		memcpy(ep, p + off + 2, el);
		ep[el] = '\0';
		off += 2 + el;
		dl = get32(p + off);
		off += 4;
		if (dl == 0 || dl > MAX_DER || n - off < dl || memchr(ep, '\0', el))
			return -EBADMSG;
		d = p + off;
		s = d2i_SSL_SESSION(NULL, &d, (long)dl);
		if (!s || d != p + off + dl) {
			SSL_SESSION_free(s);
			return -EBADMSG;
		}
		off += dl;
		if (!usable(s) || put(k, ep, s) < 0)
			SSL_SESSION_free(s);
	}
	return off == n ? 0 : -EBADMSG;
}

static int load(struct fctl_tls_cache *k, char *err, size_t errlen)
{
	int fd = open(k->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	uint8_t *buf = NULL;
	struct stat st;
	size_t got = 0;
	int r = 0;

	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		r = -errno;
		snprintf(err, errlen, "TLS session cache '%s': %s", k->path,
			 r == -ELOOP ? "a symbolic link: refused" : strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0)
		r = -errno;
	else
		r = check_owner(&st, false, k->path, err, errlen);
	if (r == 0 && (st.st_size > MAX_FILE || !(buf = malloc((size_t)st.st_size + 1))))
		r = -EFBIG;
	while (r == 0 && got < (size_t)st.st_size) {
		ssize_t m = read(fd, buf + got, (size_t)st.st_size - got);

		if (m <= 0) {
			r = m < 0 ? -errno : -EBADMSG;
			break;
		}
		got += (size_t)m;
	}
	close(fd);
	if (r == 0)
		r = parse(k, buf, got);
	if (r == -EBADMSG) /* nothing of a malformed file is kept */
		for (size_t i = 0; i < k->cap; i++)
			entry_release(&k->v[i]);
	if (r == -EBADMSG)
		k->n = 0;
	if (r < 0 && r != -EPERM)
		snprintf(err, errlen, "TLS session cache '%s': %s", k->path,
			 r == -EBADMSG ? "not a session cache of this version (ignored)"
				       : strerror(-r));
	if (buf)
		OPENSSL_cleanse(buf, got);
	free(buf);
	return r;
}

/* OpenSSL's new-session callback: the ticket of a connection that has a cache entry name
 * (fctl_tls_cache_offer) replaces that endpoint's session. Returns 1: the session is ours. */
static int new_session(SSL *ssl, SSL_SESSION *sess)
{
	struct fctl_tls_cache *k = cache_of(SSL_get_SSL_CTX(ssl));
	const char *ep = ssl_idx >= 0 ? SSL_get_ex_data(ssl, ssl_idx) : NULL;
	int r;

	if (!k || !ep || SSL_get_verify_result(ssl) != X509_V_OK || !usable(sess))
		return 0;
	pthread_mutex_lock(&k->lock);
	r = put(k, ep, sess);
	pthread_mutex_unlock(&k->lock);
	return r == 0;
}

int fctl_tls_cache_path(char *buf, size_t len)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	int n;

	if (x && x[0] == '/')
		n = snprintf(buf, len, "%s/fabricctl/tls-sessions", x);
	else if (home && home[0] == '/')
		n = snprintf(buf, len, "%s/.cache/fabricctl/tls-sessions", home);
	else
		return -ENOENT;
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

int fctl_tls_cache_attach(struct ssl_ctx_st *ctx, const char *path, char *err, size_t errlen)
{
	struct fctl_tls_cache *k;
	int r;

	if (!ctx || !path || cache_of(ctx) || ctx_idx < 0 || ssl_idx < 0)
		return -EINVAL;
	k = fctl_calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	pthread_mutex_init(&k->lock, NULL);
	k->ctx = ctx;
	k->path = fctl_strdup(path);
	r = k->path ? binding_of(ctx, k->binding) : -ENOMEM;
	if (r == 0)
		r = grow(k);
	if (r < 0) {
		snprintf(err, errlen, "TLS session cache: %s", strerror(-r));
		cache_free(k);
		return r;
	}
	/* a cache whose directory or file is wrong is not read, and not written either */
	r = check_dir(path, err, errlen);
	if (r == 0 || r == -ENOENT)
		r = load(k, err, errlen);
	if (r < 0 && r != -EBADMSG) {
		cache_free(k);
		return r;
	}
	if (SSL_CTX_set_ex_data(ctx, ctx_idx, k) != 1) {
		cache_free(k);
		return -ENOMEM;
	}
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, new_session);
	return r == -EBADMSG ? 1 : 0;
}

/* Whether the session's certificate verifies now, against the context's trust store and
 * CRLs, as the server's certificate of host. */
static bool verifies_for(SSL_CTX *ctx, SSL_SESSION *s, const char *host)
{
	X509_STORE_CTX *sc = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *vp;
	bool ok = false;

	if (!sc || X509_STORE_CTX_init(sc, SSL_CTX_get_cert_store(ctx), SSL_SESSION_get0_peer(s),
				       NULL) != 1)
		goto out;
	vp = X509_STORE_CTX_get0_param(sc);
	if (X509_VERIFY_PARAM_set1(vp, SSL_CTX_get0_param(ctx)) != 1 ||
	    X509_STORE_CTX_set_default(sc, "ssl_server") != 1)
		goto out;
	if (X509_VERIFY_PARAM_set1_ip_asc(vp, host) != 1 &&
	    X509_VERIFY_PARAM_set1_host(vp, host, 0) != 1)
		goto out;
	ok = X509_verify_cert(sc) == 1;
out:
	X509_STORE_CTX_free(sc);
	return ok;
}

int fctl_tls_cache_offer(struct ssl_st *ssl, const char *endpoint, const char *host)
{
	SSL_CTX *ctx = SSL_get_SSL_CTX(ssl);
	struct fctl_tls_cache *k = cache_of(ctx);
	SSL_SESSION *s = NULL;
	struct entry *e;
	char *name;
	int r = 0;

	if (!k)
		return 0;
	name = fctl_strdup(endpoint);
	if (!name || SSL_set_ex_data(ssl, ssl_idx, name) != 1) {
		free(name);
		return -ENOMEM;
	}
	pthread_mutex_lock(&k->lock);
	e = slot(k, endpoint);
	if (e->endpoint && usable(e->sess)) {
		/* verified once a run, for the host this connection dials; a session of
		 * another host's certificate is never offered (a full handshake instead) */
		if (e->checked == 0 || !e->host || strcmp(e->host, host) != 0) {
			free(e->host);
			e->host = fctl_strdup(host);
			e->checked = e->host && verifies_for(ctx, e->sess, host) ? 1 : 2;
		}
		if (e->checked == 1 && SSL_SESSION_up_ref(e->sess) == 1)
			s = e->sess;
	}
	pthread_mutex_unlock(&k->lock);
	if (s) {
		r = SSL_set_session(ssl, s) == 1 ? 1 : 0;
		SSL_SESSION_free(s);
	}
	return r;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8),
	p[3] = (uint8_t)v;
}

/* The file's bytes: the entries still usable. */
static int encode(struct fctl_tls_cache *k, struct fctl_buf *b)
{
	uint8_t h[4];
	uint32_t count = 0;
	int r;

	r = fctl_buf_append(b, MAGIC, MAGIC_LEN);
	if (r == 0)
		r = fctl_buf_append(b, k->binding, 32);
	if (r == 0)
		r = fctl_buf_append(b, "\0\0\0\0", 4);
	for (size_t i = 0; r == 0 && i < k->cap; i++) {
		struct entry *e = &k->v[i];
		unsigned char *der = NULL;
		size_t el;
		int dl;

		if (!e->endpoint || !usable(e->sess) || e->checked == 2)
			continue;
		dl = i2d_SSL_SESSION(e->sess, &der);
		el = strlen(e->endpoint);
		if (dl > 0 && dl <= (int)MAX_DER) {
			uint8_t l2[2] = { (uint8_t)(el >> 8), (uint8_t)el };

			put32(h, (uint32_t)dl);
			r = fctl_buf_append(b, l2, 2);
			if (r == 0)
				r = fctl_buf_append(b, e->endpoint, el);
			if (r == 0)
				r = fctl_buf_append(b, h, 4);
			if (r == 0)
				r = fctl_buf_append(b, der, (size_t)dl);
			count++;
		}
		if (der)
			OPENSSL_clear_free(der, dl > 0 ? (size_t)dl : 0);
	}
	if (r == 0)
		put32((uint8_t *)b->data + MAGIC_LEN + 32, count);
	return r;
}

static int write_all(int fd, const void *p, size_t n)
{
	for (size_t off = 0; off < n;) {
		ssize_t m = write(fd, (const char *)p + off, n - off);

		if (m < 0 && errno == EINTR)
			continue;
		if (m < 0)
			return -errno;
		off += (size_t)m;
	}
	return 0;
}

int fctl_tls_cache_save(struct ssl_ctx_st *ctx, char *err, size_t errlen)
{
	struct fctl_tls_cache *k = cache_of(ctx);
	struct fctl_buf b = { 0 };
	char *dir, *tmp = NULL, *slash;
	int fd = -1, r;

	if (!k)
		return 0;
	dir = fctl_strdup(k->path);
	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash && slash != dir)
		*slash = '\0';
	r = slash && slash != dir ? fctl_mkdir_all(dir, 0700) : 0;
	if (r == 0)
		r = check_dir(k->path, err, errlen);
	if (r == 0 && asprintf(&tmp, "%s.XXXXXX", k->path) < 0) {
		tmp = NULL;
		r = -ENOMEM;
	}
	if (r == 0) {
		pthread_mutex_lock(&k->lock);
		r = encode(k, &b);
		pthread_mutex_unlock(&k->lock);
	}
	if (r == 0 && (fd = mkostemp(tmp, O_CLOEXEC)) < 0)
		r = -errno;
	if (r == 0 && fchmod(fd, 0600) < 0)
		r = -errno;
	if (r == 0)
		r = write_all(fd, b.data, b.len);
	if (fd >= 0 && close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, k->path) < 0)
		r = -errno;
	if (r < 0 && fd >= 0)
		unlink(tmp);
	if (r < 0 && r != -EPERM)
		snprintf(err, errlen, "TLS session cache '%s': %s", k->path, strerror(-r));
	if (b.data)
		OPENSSL_cleanse(b.data, b.len);
	fctl_buf_release(&b);
	free(tmp);
	free(dir);
	return r;
}
