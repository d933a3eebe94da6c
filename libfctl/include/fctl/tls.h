/* SPDX-License-Identifier: MIT */
/*
 * Mutual TLS for the agent (OpenSSL 3, TLS 1.2 and later) and the roles a client
 * certificate carries (docs/agent.md):
 *   - a policy file line "ROLE CN" grants ROLE to the certificate whose subject
 *     common name is CN (checked first);
 *   - else a SAN URI "fabricctl:role:ROLE" in the certificate;
 *   - else the subject's OU when it names a role.
 * The OpenSSL 1/0 + error queue convention is translated here, once.
 */
#ifndef FCTL_TLS_H
#define FCTL_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ssl_ctx_st;
struct ssl_st;

enum fctl_role {
	FCTL_ROLE_NONE,
	FCTL_ROLE_VIEWER,        /* status, plan, show, diff, history, apply --dry-run */
	FCTL_ROLE_OPERATOR,      /* + apply, rollback, recover */
	FCTL_ROLE_KEY_CUSTODIAN, /* viewer rights now; key operations when keymgr exists */
	FCTL_ROLE_LOCAL,         /* the local Unix socket: root or the configured group */
};

const char *fctl_role_name(enum fctl_role r);
int fctl_role_from_name(const char *s, enum fctl_role *out);
/* Whether role may send a request of this type with these options. */
bool fctl_role_allows(enum fctl_role r, uint8_t msg_type, uint32_t options);

/* Server (verify_peer = client certificates required) or client context; both cleanse
 * the plaintext OpenSSL held once the application read it (SSL_OP_CLEANSE_PLAINTEXT). */
int fctl_tls_ctx_new(bool server, const char *cert, const char *key, const char *ca,
		     struct ssl_ctx_st **out, char *err, size_t errlen);
void fctl_tls_ctx_free(struct ssl_ctx_st *ctx);

struct fctl_tls_policy;
/* "ROLE CN" lines, '#' comments. Findings name FILE:LINE. */
int fctl_tls_policy_load(const char *path, struct fctl_tls_policy **out, char *err,
			 size_t errlen);
void fctl_tls_policy_free(struct fctl_tls_policy *p);

/* Role and subject ("CN=alice,OU=operator") of a verified peer. -EACCES when the
 * peer presented no verified certificate; FCTL_ROLE_NONE when it names no role. */
int fctl_tls_peer_role(struct ssl_st *ssl, const struct fctl_tls_policy *pol,
		       enum fctl_role *role, char *subject, size_t len);

/* The OpenSSL error queue (and the verify result when ssl is given) as one line;
 * drains the queue. */
void fctl_tls_error(struct ssl_st *ssl, char *buf, size_t len);

#endif
