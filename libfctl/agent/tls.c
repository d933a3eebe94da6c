// SPDX-License-Identifier: MIT
/* Mutual TLS contexts, client certificate roles and the policy file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "fctl/proto.h"
#include "fctl/tls.h"
#include "fctl/util.h"

static const char *const role_names[] = {
	[FCTL_ROLE_NONE] = "none",
	[FCTL_ROLE_VIEWER] = "viewer",
	[FCTL_ROLE_OPERATOR] = "operator",
	[FCTL_ROLE_KEY_CUSTODIAN] = "key-custodian",
	[FCTL_ROLE_LOCAL] = "local",
};

const char *fctl_role_name(enum fctl_role r)
{
	return (size_t)r < FCTL_ARRAY_SIZE(role_names) ? role_names[r] : "none";
}

int fctl_role_from_name(const char *s, enum fctl_role *out)
{
	for (size_t i = FCTL_ROLE_VIEWER; i <= FCTL_ROLE_KEY_CUSTODIAN; i++) {
		if (strcmp(s, role_names[i]) == 0) {
			*out = (enum fctl_role)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool fctl_role_allows(enum fctl_role r, uint8_t type, uint32_t options)
{
	bool write = type == FCTL_MSG_ROLLBACK || type == FCTL_MSG_RECOVER ||
		     type == FCTL_MSG_CONFIRM ||
		     (type == FCTL_MSG_APPLY && !(options & FCTL_OPT_DRY_RUN));
	/* probe-serve and probe-run start RDMA traffic on a link: an operator's decision,
	 * as a change is (docs/probes.md, "The whole fabric") */
	bool traffic = fctl_proto_is_probe(type);

	switch (r) {
	case FCTL_ROLE_LOCAL:
	case FCTL_ROLE_OPERATOR:
		return true;
	case FCTL_ROLE_VIEWER:
	case FCTL_ROLE_KEY_CUSTODIAN:
		return !write && !traffic;
	default:
		return type == FCTL_MSG_HELLO;
	}
}

/*
 * A server records the certificate that failed the chain's verification (the first
 * one: a revoked leaf, an expired certificate, one of a foreign CA) so that the
 * refusal names it; the text lives in the SSL's ex data and goes with it.
 */
static CRYPTO_ONCE failed_once = CRYPTO_ONCE_STATIC_INIT;
static int failed_idx = -1;

static void failed_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
			void *argp)
{
	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	free(ptr);
}

static void failed_init(void)
{
	failed_idx = SSL_get_ex_new_index(0, NULL, NULL, NULL, failed_free);
}

static int verify_cb(int ok, X509_STORE_CTX *sc)
{
	SSL *ssl = X509_STORE_CTX_get_ex_data(sc, SSL_get_ex_data_X509_STORE_CTX_idx());
	X509 *x = X509_STORE_CTX_get_current_cert(sc);
	char cn[256] = "", ou[64] = "", *serial = NULL, *s;
	BIGNUM *bn;

	if (ok || !ssl || !x || failed_idx < 0 || SSL_get_ex_data(ssl, failed_idx))
		return ok;
	X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn, sizeof(cn));
	X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_organizationalUnitName, ou,
				  sizeof(ou));
	bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	if (bn)
		serial = BN_bn2hex(bn);
	BN_free(bn);
	s = malloc(400);
	if (s) {
		snprintf(s, 400, "CN=%s%s%s, serial %s", cn, ou[0] ? ",OU=" : "", ou,
			 serial ? serial : "?");
		if (SSL_set_ex_data(ssl, failed_idx, s) != 1)
			free(s);
	}
	OPENSSL_free(serial);
	return ok;
}

void fctl_tls_error(struct ssl_st *ssl, char *buf, size_t len)
{
	unsigned long e;
	size_t off = 0;

	buf[0] = '\0';
	if (ssl) {
		long v = SSL_get_verify_result(ssl);
		const char *who = failed_idx >= 0 ? SSL_get_ex_data(ssl, failed_idx) : NULL;

		if (v != X509_V_OK)
			off = (size_t)snprintf(buf, len, "certificate: %s%s%s%s",
					       X509_verify_cert_error_string(v), who ? " (" : "",
					       who ? who : "", who ? ")" : "");
	}
	while ((e = ERR_get_error()) != 0) {
		if (off < len && !off)
			ERR_error_string_n(e, buf, len);
		off = strlen(buf);
	}
	if (!buf[0])
		snprintf(buf, len, "TLS error");
}

/* What every context of ours has: TLS 1.2 and later, partial writes, no plaintext left. */
static void set_common(SSL_CTX *ctx)
{
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* requests carry SAKs: no plaintext copy left in OpenSSL's record buffers */
	SSL_CTX_set_options(ctx, SSL_OP_CLEANSE_PLAINTEXT);
}

/*
 * The server's sessions (TLS 1.3 stateful tickets: the ticket is the session's id): kept
 * parsed in the context that issued them, FCTL_TLS_SESSIONS at most, the oldest dropped
 * first. A stateless ticket would carry the client's certificate, and decoding it on every
 * resumption cost more than the handshake it saved (OpenSSL 3.0's key decoders). Each
 * session resumes once (a resumption is given a new one), only over TLS 1.3 (with
 * (EC)DHE: OpenSSL's default; no early data), and only while its client certificate is
 * within its validity; a TLS 1.2 session is never kept. A server context is used by one
 * thread (the agent's TLS front-end).
 */
#define FCTL_TLS_SESSIONS 64
struct sess_store {
	SSL_SESSION *v[FCTL_TLS_SESSIONS];
	unsigned next;
};

static CRYPTO_ONCE store_once = CRYPTO_ONCE_STATIC_INIT;
static int store_idx = -1;

static void store_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
		       void *argp)
{
	struct sess_store *st = ptr;

	(void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
	for (size_t i = 0; st && i < FCTL_ARRAY_SIZE(st->v); i++)
		SSL_SESSION_free(st->v[i]);
	free(st);
}

static void store_init(void)
{
	store_idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, store_free);
}

static struct sess_store *store_of(SSL_CTX *ctx)
{
	return store_idx >= 0 ? SSL_CTX_get_ex_data(ctx, store_idx) : NULL;
}

/* The slot holding the session of this id, or NULL. */
static SSL_SESSION **store_find(struct sess_store *st, const unsigned char *id, size_t len)
{
	for (size_t i = 0; st && i < FCTL_ARRAY_SIZE(st->v); i++) {
		unsigned int n = 0;
		const unsigned char *sid = st->v[i] ? SSL_SESSION_get_id(st->v[i], &n) : NULL;

		if (sid && n == len && CRYPTO_memcmp(sid, id, len) == 0)
			return &st->v[i];
	}
	return NULL;
}

/* A new session of a handshake: a copy kept when TLS 1.3. A copy: OpenSSL marks the
 * connection's own session not resumable when the connection ends without a close_notify,
 * a TLS 1.2 rule that would cost a client closing abruptly its ticket. Returns 0: the
 * session itself stays the connection's. */
static int store_new(SSL *ssl, SSL_SESSION *sess)
{
	struct sess_store *st = store_of(SSL_get_SSL_CTX(ssl));
	SSL_SESSION *copy;

	if (!st || SSL_version(ssl) != TLS1_3_VERSION ||
	    SSL_SESSION_get_protocol_version(sess) != TLS1_3_VERSION ||
	    !(copy = SSL_SESSION_dup(sess)))
		return 0;
	SSL_SESSION_free(st->v[st->next]);
	st->v[st->next] = copy;
	st->next = (st->next + 1) % FCTL_ARRAY_SIZE(st->v);
	return 0;
}

/* The session a client's ticket names, taken out of the store (used once), when it may
 * resume: TLS 1.3, not expired, its client certificate valid now. */
static SSL_SESSION *store_get(SSL *ssl, const unsigned char *id, int len, int *copy)
{
	SSL_SESSION **p = len > 0 ? store_find(store_of(SSL_get_SSL_CTX(ssl)), id, (size_t)len)
				  : NULL;
	SSL_SESSION *s = p ? *p : NULL;
	X509 *peer = s ? SSL_SESSION_get0_peer(s) : NULL;

	*copy = 0;
	if (!s)
		return NULL;
	*p = NULL;
	if (SSL_version(ssl) != TLS1_3_VERSION || !peer ||
	    SSL_SESSION_get_protocol_version(s) != TLS1_3_VERSION ||
	    SSL_SESSION_get_time(s) + SSL_SESSION_get_timeout(s) <= time(NULL) ||
	    X509_cmp_current_time(X509_get0_notBefore(peer)) >= 0 ||
	    X509_cmp_current_time(X509_get0_notAfter(peer)) <= 0) {
		SSL_SESSION_free(s);
		return NULL;
	}
	return s; /* the store's reference, now OpenSSL's */
}

/*
 * The peer's certificate required and verified (a server: with the reason kept). A
 * server issues one ticket a handshake, which a fan-out's next run resumes: no
 * certificate chain sent, signed or verified on either end. A session holds the client's
 * certificate, whose roles are evaluated again on every connection (fctl_tls_peer_roles).
 */
static void set_verify(SSL_CTX *ctx, bool server)
{
	static const unsigned char sid_ctx[] = "fabricctl-agent";
	struct sess_store *st;

	if (server)
		CRYPTO_THREAD_run_once(&failed_once, failed_init);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | (server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
			   server ? verify_cb : NULL);
	if (!server)
		return;
	CRYPTO_THREAD_run_once(&store_once, store_init);
	st = fctl_calloc(1, sizeof(*st));
	if (!st || store_idx < 0 || SSL_CTX_set_ex_data(ctx, store_idx, st) != 1) {
		free(st); /* no store: no session kept, every handshake a full one */
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
		SSL_CTX_set_num_tickets(ctx, 0);
		SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
		return;
	}
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER | SSL_SESS_CACHE_NO_INTERNAL |
						    SSL_SESS_CACHE_NO_AUTO_CLEAR);
	SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET); /* TLS 1.3: stateful tickets */
	SSL_CTX_set_session_id_context(ctx, sid_ctx, sizeof(sid_ctx) - 1);
	SSL_CTX_set_num_tickets(ctx, 1);
	SSL_CTX_set_timeout(ctx, FCTL_TLS_TICKET_LIFETIME);
	SSL_CTX_set_max_early_data(ctx, 0);
	SSL_CTX_sess_set_new_cb(ctx, store_new);
	/* no remove callback: store_get alone decides (once, TLS 1.3, in time, a valid
	 * certificate) */
	SSL_CTX_sess_set_get_cb(ctx, store_get);
}

int fctl_tls_ctx_new(bool server, const char *cert, const char *key, const char *ca,
		     struct ssl_ctx_st **out, char *err, size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
	const char *what = "";
	char e[256];

	if (!ctx) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!cert || !key || !ca) {
		snprintf(err, errlen, "a certificate, its key and the fabric CA are all needed "
				      "(--cert, --key, --ca)");
		SSL_CTX_free(ctx);
		return -EINVAL;
	}
	set_common(ctx);
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1)
		what = cert;
	else if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
		 SSL_CTX_check_private_key(ctx) != 1)
		what = key;
	else if (SSL_CTX_load_verify_locations(ctx, ca, NULL) != 1)
		what = ca;
	if (*what) {
		fctl_tls_error(NULL, e, sizeof(e));
		snprintf(err, errlen, "'%s': %s", what, e);
		SSL_CTX_free(ctx);
		return -EINVAL;
	}
	set_verify(ctx, server);
	if (server) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca);

		if (names)
			SSL_CTX_set_client_CA_list(ctx, names);
	}
	*out = ctx;
	return 0;
}

void fctl_tls_ctx_free(struct ssl_ctx_st *ctx)
{
	SSL_CTX_free(ctx);
}

/* The leaf and the chain after it, as SSL_CTX_use_certificate_chain_file reads them. */
static int use_chain_mem(SSL_CTX *ctx, const struct fctl_tls_pem *p)
{
	BIO *b = BIO_new_mem_buf(p->data, (int)p->len);
	X509 *x = b ? PEM_read_bio_X509_AUX(b, NULL, NULL, NULL) : NULL;
	int ok = x && SSL_CTX_use_certificate(ctx, x) == 1;

	X509_free(x);
	while (ok && (x = PEM_read_bio_X509(b, NULL, NULL, NULL)))
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
			X509_free(x);
			ok = 0;
		}
	if (ok && ERR_GET_REASON(ERR_peek_last_error()) == PEM_R_NO_START_LINE)
		ERR_clear_error();
	else if (ok && ERR_peek_last_error())
		ok = 0;
	BIO_free(b);
	return ok ? 0 : -EINVAL;
}

static int use_key_mem(SSL_CTX *ctx, const struct fctl_tls_pem *p)
{
	BIO *b = BIO_new_mem_buf(p->data, (int)p->len);
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, NULL, NULL) : NULL;
	int ok = k && SSL_CTX_use_PrivateKey(ctx, k) == 1 && SSL_CTX_check_private_key(ctx) == 1;

	EVP_PKEY_free(k);
	BIO_free(b);
	return ok ? 0 : -EINVAL;
}

/* Every certificate (and CRL) of the CA file into the store, as
 * SSL_CTX_load_verify_locations does; the certificates' subjects are the client CA list. */
static int use_ca_mem(SSL_CTX *ctx, const struct fctl_tls_pem *p)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	BIO *b = BIO_new_mem_buf(p->data, (int)p->len);
	STACK_OF(X509_INFO) *infos = b ? PEM_X509_INFO_read_bio(b, NULL, NULL, NULL) : NULL;
	STACK_OF(X509_NAME) *names = sk_X509_NAME_new_null();
	int n = 0, ok = infos && names;

	for (int i = 0; ok && i < sk_X509_INFO_num(infos); i++) {
		X509_INFO *in = sk_X509_INFO_value(infos, i);

		if (in->x509) {
			X509_NAME *nm = X509_NAME_dup(X509_get_subject_name(in->x509));

			ok = X509_STORE_add_cert(st, in->x509) == 1 && nm &&
			     sk_X509_NAME_push(names, nm) > 0;
			if (!ok)
				X509_NAME_free(nm);
			n++;
		}
		if (ok && in->crl)
			ok = X509_STORE_add_crl(st, in->crl) == 1;
	}
	sk_X509_INFO_pop_free(infos, X509_INFO_free);
	BIO_free(b);
	if (ok && n) {
		SSL_CTX_set_client_CA_list(ctx, names);
		return 0;
	}
	sk_X509_NAME_pop_free(names, X509_NAME_free);
	return -EINVAL;
}

int fctl_tls_ctx_new_mem(const struct fctl_tls_pem *cert, const struct fctl_tls_pem *key,
			 const struct fctl_tls_pem *ca, struct ssl_ctx_st **out, char *err,
			 size_t errlen)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	const char *what = NULL;
	char e[256];

	if (!ctx) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ERR_clear_error();
	set_common(ctx);
	if (use_chain_mem(ctx, cert) < 0)
		what = cert->name;
	else if (use_key_mem(ctx, key) < 0)
		what = key->name;
	else if (use_ca_mem(ctx, ca) < 0)
		what = ca->name;
	if (what) {
		fctl_tls_error(NULL, e, sizeof(e));
		snprintf(err, errlen, "'%s': %s", what, e);
		SSL_CTX_free(ctx);
		return -EINVAL;
	}
	set_verify(ctx, true);
	*out = ctx;
	return 0;
}

/* A CA certificate of store that issued and signed crl, or NULL. */
static X509 *crl_signer(X509_STORE *store, X509_CRL *crl)
{
	STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(store);

	for (int i = 0; i < sk_X509_OBJECT_num(objs); i++) {
		X509 *ca = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, i));

		if (ca && X509_NAME_cmp(X509_get_subject_name(ca), X509_CRL_get_issuer(crl)) == 0 &&
		    X509_CRL_verify(crl, X509_get0_pubkey(ca)) == 1)
			return ca;
	}
	return NULL;
}

/* Reads every CRL of the PEM file f into store: their number, or -EINVAL with err. */
static int add_crls(X509_STORE *store, BIO *f, const char *path, unsigned *issuers,
		    bool *expired, char *err, size_t errlen)
{
	X509 *seen[16];
	X509_CRL *crl;
	int n = 0;

	*issuers = 0;
	while ((crl = PEM_read_bio_X509_CRL(f, NULL, NULL, NULL))) {
		X509 *ca = crl_signer(store, crl);
		const ASN1_TIME *next = X509_CRL_get0_nextUpdate(crl);
		unsigned j;

		n++;
		if (!ca) {
			snprintf(err, errlen, "'%s': CRL %d is not signed by a CA of the ca file",
				 path, n);
			X509_CRL_free(crl);
			return -EINVAL;
		}
		if (next && X509_cmp_current_time(next) < 0)
			*expired = true;
		for (j = 0; j < *issuers && seen[j] != ca; j++)
			;
		if (j == *issuers && *issuers < FCTL_ARRAY_SIZE(seen))
			seen[(*issuers)++] = ca;
		if (X509_STORE_add_crl(store, crl) != 1) {
			X509_CRL_free(crl);
			snprintf(err, errlen, "'%s': CRL %d cannot be added", path, n);
			return -EINVAL;
		}
		X509_CRL_free(crl);
	}
	/* the loop ends at the end of the file (no start line) or at a bad CRL */
	if (ERR_GET_REASON(ERR_peek_last_error()) != PEM_R_NO_START_LINE || !n) {
		char e[256];

		fctl_tls_error(NULL, e, sizeof(e));
		snprintf(err, errlen, "'%s': %s", path, n ? e : "no CRL in the file");
		return -EINVAL;
	}
	ERR_clear_error();
	return n;
}

/* The CRLs of b into ctx's store, and the checks they need: as fctl_tls_ctx_load_crl. */
static int load_crls(SSL_CTX *ctx, BIO *b, const char *path, char *err, size_t errlen)
{
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	bool expired = false;
	unsigned issuers;
	int r;

	ERR_clear_error();
	r = add_crls(store, b, path, &issuers, &expired, err, errlen);
	if (r < 0)
		return r;
	X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(ctx),
				    X509_V_FLAG_CRL_CHECK |
					    (issuers > 1 ? X509_V_FLAG_CRL_CHECK_ALL : 0));
	return expired ? 1 : 0;
}

int fctl_tls_ctx_load_crl(struct ssl_ctx_st *ctx, const char *path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	BIO *b;
	int r;

	if (!f) {
		r = -errno;
		snprintf(err, errlen, "'%s': %s", path, strerror(-r));
		return r;
	}
	b = BIO_new_fp(f, BIO_NOCLOSE);
	if (!b) {
		fclose(f);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = load_crls(ctx, b, path, err, errlen);
	BIO_free(b);
	fclose(f);
	return r;
}

int fctl_tls_ctx_load_crl_mem(struct ssl_ctx_st *ctx, const struct fctl_tls_pem *crl, char *err,
			      size_t errlen)
{
	BIO *b = BIO_new_mem_buf(crl->data, (int)crl->len);
	int r;

	if (!b) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = load_crls(ctx, b, crl->name, err, errlen);
	BIO_free(b);
	return r;
}
