/* SPDX-License-Identifier: MIT */
/*
 * Mutual TLS for the agent (OpenSSL 3, TLS 1.2 and later), the CRLs a server
 * checks client chains against, and the roles a client certificate carries
 * (docs/agent.md, "Roles"). A certificate's role set is:
 *   - the roles of the policy file's allow rules that match it ("ROLE CN",
 *     "allow ROLE cn:|dn:|sha256:"); when none matches, the certificate's own
 *     role: a SAN URI "fabricctl:role:ROLE", else the subject's OU naming a role;
 *   - minus the roles of every deny rule that matches it (deny wins over allow);
 *   - minus every role that has pins ("pin ROLE sha256:...") none of which is
 *     this certificate's SHA-256 fingerprint.
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
	FCTL_ROLE_OPERATOR,      /* + apply, rollback, recover, confirm */
	FCTL_ROLE_KEY_CUSTODIAN, /* viewer rights now; key operations when keymgr exists */
	FCTL_ROLE_LOCAL,         /* the local Unix socket: root or the configured group */
};

const char *fctl_role_name(enum fctl_role r);
int fctl_role_from_name(const char *s, enum fctl_role *out);
/* Whether role may send a request of this type with these options. */
bool fctl_role_allows(enum fctl_role r, uint8_t msg_type, uint32_t options);

/* A set of roles: FCTL_ROLE_BIT(r) for each role r in it; 0 = none. */
#define FCTL_ROLE_BIT(r) (1u << (unsigned)(r))
/* Whether any role of the set may send a request of this type with these options. */
bool fctl_roles_allow(unsigned roles, uint8_t msg_type, uint32_t options);
/* The role the peer is told it has (hello, status): the widest of the set (local,
 * operator, key-custodian, viewer), FCTL_ROLE_NONE for the empty set. */
enum fctl_role fctl_roles_primary(unsigned roles);

/* Server (verify_peer = client certificates required) or client context; both cleanse
 * the plaintext OpenSSL held once the application read it (SSL_OP_CLEANSE_PLAINTEXT). */
int fctl_tls_ctx_new(bool server, const char *cert, const char *key, const char *ca,
		     struct ssl_ctx_st **out, char *err, size_t errlen);
void fctl_tls_ctx_free(struct ssl_ctx_st *ctx);

/*
 * TLS 1.3 session resumption (docs/agent.md, "Session resumption"). A server context
 * sends one ticket after each handshake (FCTL_TLS_TICKET_LIFETIME seconds): the id of a
 * session that context alone keeps (64 at most), so a new context (every agent reload)
 * forgets them all. It resumes a session once, only over TLS 1.3, and only while its
 * client certificate is within its validity; the roles are evaluated on every connection
 * from that certificate, as after a full handshake. A client resumes only with a cache
 * attached to its context:
 */
#define FCTL_TLS_TICKET_LIFETIME 3600
/* The user's cache file: $XDG_CACHE_HOME/fabricctl/tls-sessions (an absolute
 * XDG_CACHE_HOME), else $HOME/.cache/fabricctl/tls-sessions; -ENOENT without either. */
int fctl_tls_cache_path(char *buf, size_t len);
/*
 * Attaches the session cache of file path to a client context (freed with it) and
 * reads the file's sessions. The file must be a regular file (not a symbolic link) of the
 * effective user, mode 0600 or stricter, in a directory of that user that neither group
 * nor others may write; its sessions are used only when it was written under the same
 * client certificate and trust store (certificates and CRLs), and each is offered only to
 * the endpoint it came from, after its server certificate verified again for the host
 * dialled (a ticket of agent A is never offered as agent B). Returns 0 (no file yet is
 * 0), 1 with err filled (not a cache file of this version: nothing of it is used, the
 * cache is attached empty and fctl_tls_cache_save replaces the file), or -EPERM (owner
 * or mode wrong: the cache is neither read nor written) or another negative errno, err
 * filled: the context then works without a cache, each connection a full handshake.
 */
int fctl_tls_cache_attach(struct ssl_ctx_st *ctx, const char *path, char *err, size_t errlen);
/* Writes the context's sessions back (the directory created 0700, the file replaced
 * atomically, 0600): 0 (also when no cache is attached) or a negative errno with err. */
int fctl_tls_cache_save(struct ssl_ctx_st *ctx, char *err, size_t errlen);

/*
 * Loads the CRLs of a PEM file (one or more) into a server context's trust store
 * and makes it check client chains against them: the leaf (X509_V_FLAG_CRL_CHECK),
 * every certificate of the chain when the file holds CRLs of more than one CA
 * (X509_V_FLAG_CRL_CHECK_ALL: then each CA of a chain needs its CRL in the file).
 * Every CRL must be signed by a CA certificate already in the store (the ca file).
 * Returns 0, 1 when a CRL's nextUpdate is already past (loaded: the handshake of
 * every client it covers fails until a fresh CRL is loaded), or a negative errno
 * with err filled (missing, unreadable or unparsable file, no CRL in it, a CRL no
 * CA of the store signed); the context is unusable after a failure.
 */
int fctl_tls_ctx_load_crl(struct ssl_ctx_st *ctx, const char *path, char *err, size_t errlen);

/* A PEM file's text already read (from a descriptor opened by someone else); name is
 * the file of its findings. */
struct fctl_tls_pem {
	const void *data;
	size_t len;
	const char *name;
};
/* fctl_tls_ctx_new(true, ...) and fctl_tls_ctx_load_crl from text instead of paths: the
 * agent's TLS front-end, which cannot open the files itself (agentd_frontend.c). The
 * caller wipes the key's text afterwards. */
int fctl_tls_ctx_new_mem(const struct fctl_tls_pem *cert, const struct fctl_tls_pem *key,
			 const struct fctl_tls_pem *ca, struct ssl_ctx_st **out, char *err,
			 size_t errlen);
int fctl_tls_ctx_load_crl_mem(struct ssl_ctx_st *ctx, const struct fctl_tls_pem *crl, char *err,
			      size_t errlen);

struct fctl_tls_policy;
/*
 * The policy file: lines of (docs/agent.md, "The policy file")
 *   ROLE CN                          allow ROLE to the subject CN (the original form)
 *   allow ROLE SELECTOR              allow ROLE
 *   deny ROLE|all SELECTOR           take ROLE (or every role) away
 *   pin ROLE sha256:FINGERPRINT      ROLE only for certificates with a pinned fingerprint
 * SELECTOR: cn:NAME, dn:DN (RFC 2253, as `openssl x509 -noout -subject -nameopt RFC2253`
 * prints it) or sha256:FINGERPRINT (64 hex digits, ':' between bytes allowed); ROLE
 * viewer, operator or key-custodian; '#' starts a comment. Findings name FILE:LINE.
 * _parse reads text of len bytes (name is the FILE of its findings).
 */
int fctl_tls_policy_parse(const char *text, size_t len, const char *name,
			  struct fctl_tls_policy **out, char *err, size_t errlen);
int fctl_tls_policy_load(const char *path, struct fctl_tls_policy **out, char *err,
			 size_t errlen);
void fctl_tls_policy_free(struct fctl_tls_policy *p);

/* What the policy knows of a verified client certificate. dn and cn are whole (never
 * truncated) and printable ASCII without NUL: fctl_tls_peer_roles refuses a certificate
 * whose names are not, so the rules' string comparisons compare full names. */
struct fctl_tls_peer {
	const char *dn;		  /* subject, RFC 2253 (OpenSSL's escapes) */
	const char *cn;           /* subject common name ("" if none) */
	uint8_t sha256[32];       /* SHA-256 of the DER certificate */
	enum fctl_role cert_role; /* its SAN URI role, else its OU role, else NONE */
};

/* The role set of peer under pol (NULL = no policy file), as the header comment says.
 * why (may be NULL) gets the reason when a deny or a pin removed a role ("" when
 * none did): the rule's FILE:LINE and the role. */
unsigned fctl_tls_policy_eval(const struct fctl_tls_policy *pol, const struct fctl_tls_peer *peer,
			      char *why, size_t whylen);

/* Role set and subject ("CN=alice,OU=operator", RFC 2253's special characters escaped
 * with a backslash) of a verified peer; why as above, or "the certificate names no role"
 * when the set is empty for want of any role. -EACCES when the peer presented no verified
 * certificate, or (why says so, with the escaped subject) when its subject CN or OU holds
 * a NUL or a byte outside printable ASCII or is too long, the subject has more than one
 * CN or cannot be printed whole; 0 (with an empty set possible) otherwise. Of the SANs
 * only a URI "fabricctl:role:ROLE" is read. */
int fctl_tls_peer_roles(struct ssl_st *ssl, const struct fctl_tls_policy *pol, unsigned *roles,
			char *subject, size_t len, char *why, size_t whylen);

/* The OpenSSL error queue (and the verify result when ssl is given, with the subject
 * and serial of the certificate that failed it on a server) as one line; drains the
 * queue. */
void fctl_tls_error(struct ssl_st *ssl, char *buf, size_t len);

#endif
