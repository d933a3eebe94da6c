// SPDX-License-Identifier: MIT
/* Mutual TLS contexts, client certificate roles and the policy file. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
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
		     (type == FCTL_MSG_APPLY && !(options & FCTL_OPT_DRY_RUN));

	switch (r) {
	case FCTL_ROLE_LOCAL:
	case FCTL_ROLE_OPERATOR:
		return true;
	case FCTL_ROLE_VIEWER:
	case FCTL_ROLE_KEY_CUSTODIAN:
		return !write;
	default:
		return type == FCTL_MSG_HELLO;
	}
}

void fctl_tls_error(struct ssl_st *ssl, char *buf, size_t len)
{
	unsigned long e;
	size_t off = 0;

	buf[0] = '\0';
	if (ssl) {
		long v = SSL_get_verify_result(ssl);

		if (v != X509_V_OK)
			off = (size_t)snprintf(buf, len, "certificate: %s",
					       X509_verify_cert_error_string(v));
	}
	while ((e = ERR_get_error()) != 0) {
		if (off < len && !off)
			ERR_error_string_n(e, buf, len);
		off = strlen(buf);
	}
	if (!buf[0])
		snprintf(buf, len, "TLS error");
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
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* requests carry SAKs: no plaintext copy left in OpenSSL's record buffers */
	SSL_CTX_set_options(ctx, SSL_OP_CLEANSE_PLAINTEXT);
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
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | (server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
			   NULL);
	if (server) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca);

		if (names)
			SSL_CTX_set_client_CA_list(ctx, names);
		SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	}
	*out = ctx;
	return 0;
}

void fctl_tls_ctx_free(struct ssl_ctx_st *ctx)
{
	SSL_CTX_free(ctx);
}

struct fctl_tls_policy {
	struct {
		char cn[256];
		enum fctl_role role;
	} *v;
	size_t n, cap;
};

int fctl_tls_policy_load(const char *path, struct fctl_tls_policy **out, char *err,
			 size_t errlen)
{
	struct fctl_tls_policy *p = fctl_calloc(1, sizeof(*p));
	char line[512];
	unsigned lineno = 0;
	FILE *f = NULL;
	int r = 0;

	if (!p)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		snprintf(err, errlen, "'%s': %s", path, strerror(-r));
		goto out;
	}
	while (r == 0 && fgets(line, sizeof(line), f)) {
		char role[32], cn[256], extra[2];
		enum fctl_role ro;
		int k;

		lineno++;
		line[strcspn(line, "#\r\n")] = '\0';
		k = sscanf(line, "%31s %255s %1s", role, cn, extra);
		if (k <= 0)
			continue;
		if (k != 2 || fctl_role_from_name(role, &ro) < 0) {
			snprintf(err, errlen,
				 "%s:%u: expected 'ROLE CN' (ROLE viewer, operator or key-custodian)",
				 path, lineno);
			r = -EINVAL;
			break;
		}
		if (!fctl_array_grow(&p->v, &p->n, &p->cap, sizeof(*p->v))) {
			r = -ENOMEM;
			break;
		}
		snprintf(p->v[p->n - 1].cn, sizeof(p->v[0].cn), "%s", cn);
		p->v[p->n - 1].role = ro;
	}
out:
	if (f)
		fclose(f);
	if (r < 0) {
		fctl_tls_policy_free(p);
		return r;
	}
	*out = p;
	return 0;
}

void fctl_tls_policy_free(struct fctl_tls_policy *p)
{
	if (!p)
		return;
	free(p->v);
	free(p);
}

static enum fctl_role san_role(X509 *x)
{
	GENERAL_NAMES *sans = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	enum fctl_role role = FCTL_ROLE_NONE;
	static const char pfx[] = "fabricctl:role:";

	for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); i++) {
		const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, i);
		const unsigned char *s;
		int len;

		if (g->type != GEN_URI)
			continue;
		s = ASN1_STRING_get0_data(g->d.uniformResourceIdentifier);
		len = ASN1_STRING_length(g->d.uniformResourceIdentifier);
		if (len > (int)sizeof(pfx) - 1 && len < 64 && !memchr(s, 0, (size_t)len) &&
		    memcmp(s, pfx, sizeof(pfx) - 1) == 0) {
			char name[64];

			memcpy(name, s + sizeof(pfx) - 1, (size_t)len - (sizeof(pfx) - 1));
			name[len - (int)(sizeof(pfx) - 1)] = '\0';
			if (fctl_role_from_name(name, &role) == 0)
				break;
		}
	}
	GENERAL_NAMES_free(sans);
	return role;
}

int fctl_tls_peer_role(struct ssl_st *ssl, const struct fctl_tls_policy *pol,
		       enum fctl_role *role_out, char *subject, size_t len)
{
	X509 *x = SSL_get1_peer_certificate(ssl);
	X509_NAME *nm;
	enum fctl_role role = FCTL_ROLE_NONE;
	char cn[256] = "", ou[64] = "";

	if (!x || SSL_get_verify_result(ssl) != X509_V_OK) {
		X509_free(x);
		return -EACCES;
	}
	nm = X509_get_subject_name(x);
	X509_NAME_get_text_by_NID(nm, NID_commonName, cn, sizeof(cn));
	X509_NAME_get_text_by_NID(nm, NID_organizationalUnitName, ou, sizeof(ou));
	for (size_t i = 0; pol && i < pol->n; i++)
		if (strcmp(pol->v[i].cn, cn) == 0) {
			role = pol->v[i].role;
			break;
		}
	if (role == FCTL_ROLE_NONE)
		role = san_role(x);
	if (role == FCTL_ROLE_NONE && ou[0] && fctl_role_from_name(ou, &role) < 0)
		role = FCTL_ROLE_NONE;
	snprintf(subject, len, "CN=%s%s%s", cn, ou[0] ? ",OU=" : "", ou);
	X509_free(x);
	*role_out = role;
	return 0;
}
