// SPDX-License-Identifier: MIT
/* The role policy file (allow, deny, pin) and the role set of a client certificate. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "fctl/tls.h"
#include "fctl/util.h"

#define CERT_ROLES                                                                   \
	(FCTL_ROLE_BIT(FCTL_ROLE_VIEWER) | FCTL_ROLE_BIT(FCTL_ROLE_OPERATOR) |       \
	 FCTL_ROLE_BIT(FCTL_ROLE_KEY_CUSTODIAN))

enum verb { ALLOW, DENY, PIN };
enum selector { SEL_CN, SEL_DN, SEL_SHA256 };

struct rule {
	enum verb verb;
	unsigned roles;
	enum selector sel;
	char *value; /* SEL_CN, SEL_DN */
	uint8_t sha256[32];
	unsigned line;
};

struct fctl_tls_policy {
	char *name;
	struct rule *v;
	size_t n, cap;
};

bool fctl_roles_allow(unsigned roles, uint8_t type, uint32_t options)
{
	if (!roles)
		return fctl_role_allows(FCTL_ROLE_NONE, type, options);
	for (unsigned r = FCTL_ROLE_VIEWER; r <= FCTL_ROLE_LOCAL; r++)
		if ((roles & FCTL_ROLE_BIT(r)) &&
		    fctl_role_allows((enum fctl_role)r, type, options))
			return true;
	return false;
}

enum fctl_role fctl_roles_primary(unsigned roles)
{
	static const enum fctl_role order[] = { FCTL_ROLE_LOCAL, FCTL_ROLE_OPERATOR,
						FCTL_ROLE_KEY_CUSTODIAN, FCTL_ROLE_VIEWER };

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(order); i++)
		if (roles & FCTL_ROLE_BIT(order[i]))
			return order[i];
	return FCTL_ROLE_NONE;
}

/* "AB:CD:..." or "abcd..." (64 hex digits) -> 32 bytes */
static int parse_sha256(const char *s, uint8_t out[32])
{
	char hex[65];
	size_t n = 0;

	for (; *s; s++) {
		if (*s == ':' && n && n % 2 == 0 && s[1] && s[1] != ':')
			continue;
		if (n == 64 || fctl_hexval((unsigned char)*s) < 0)
			return -EINVAL;
		hex[n++] = *s;
	}
	hex[n] = '\0';
	return n == 64 ? fctl_parse_hex(hex, out, 32) : -EINVAL;
}

/* "cn:NAME", "dn:DN" or "sha256:FP" into r; 0 or -EINVAL with a finding */
static int parse_selector(struct rule *r, const char *s, const char *where, char *err,
			  size_t errlen)
{
	static const char *const pfx[] = { [SEL_CN] = "cn:", [SEL_DN] = "dn:",
					   [SEL_SHA256] = "sha256:" };
	static const size_t cap[] = { [SEL_CN] = 255, [SEL_DN] = 1023, [SEL_SHA256] = 0 };

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(pfx); i++) {
		size_t k = strlen(pfx[i]);

		if (strncmp(s, pfx[i], k) != 0)
			continue;
		r->sel = (enum selector)i;
		s += k;
		if (r->sel == SEL_SHA256) {
			if (parse_sha256(s, r->sha256) == 0)
				return 0;
			snprintf(err, errlen,
				 "%s: bad fingerprint '%s' (64 hex digits, as `openssl x509 "
				 "-noout -fingerprint -sha256` prints them)",
				 where, s);
			return -EINVAL;
		}
		if (!*s || strlen(s) > cap[i]) {
			snprintf(err, errlen, "%s: '%s' needs a value of 1 to %zu characters",
				 where, pfx[i], cap[i]);
			return -EINVAL;
		}
		r->value = fctl_strdup(s);
		return r->value ? 0 : -ENOMEM;
	}
	snprintf(err, errlen, "%s: expected cn:NAME, dn:DN or sha256:FINGERPRINT, not '%s'", where,
		 s);
	return -EINVAL;
}

/* the words of a line: w1, w2 and the rest, trimmed (rest may hold spaces) */
static void split(char *line, char **w1, char **w2, char **rest)
{
	char *p = line, **w[] = { w1, w2 };

	for (size_t i = 0; i < 2; i++) {
		p += strspn(p, " \t");
		*w[i] = p;
		p += strcspn(p, " \t");
		if (*p)
			*p++ = '\0';
	}
	p += strspn(p, " \t");
	*rest = p;
	for (p += strlen(p); p > *rest && (p[-1] == ' ' || p[-1] == '\t'); p--)
		p[-1] = '\0';
}

static int parse_line(struct rule *r, char *line, const char *where, char *err, size_t errlen)
{
	static const char *const verbs[] = { [ALLOW] = "allow", [DENY] = "deny", [PIN] = "pin" };
	char *w1, *w2, *rest;
	enum fctl_role role;

	split(line, &w1, &w2, &rest);
	if (fctl_role_from_name(w1, &role) == 0) {
		/* the original form: ROLE CN */
		if (!*w2 || *rest) {
			snprintf(err, errlen, "%s: expected 'ROLE CN' (ROLE viewer, operator or "
				 "key-custodian)", where);
			return -EINVAL;
		}
		r->verb = ALLOW;
		r->roles = FCTL_ROLE_BIT(role);
		r->sel = SEL_CN;
		if (strlen(w2) > 255) {
			snprintf(err, errlen, "%s: a CN of more than 255 characters", where);
			return -EINVAL;
		}
		r->value = fctl_strdup(w2);
		return r->value ? 0 : -ENOMEM;
	}
	for (r->verb = ALLOW; r->verb <= PIN; r->verb++)
		if (strcmp(w1, verbs[r->verb]) == 0)
			break;
	if (r->verb > PIN) {
		snprintf(err, errlen, "%s: unknown directive '%s' (expected allow, deny, pin or "
			 "'ROLE CN')", where, w1);
		return -EINVAL;
	}
	if (r->verb == DENY && strcmp(w2, "all") == 0) {
		r->roles = CERT_ROLES;
	} else if (fctl_role_from_name(w2, &role) == 0) {
		r->roles = FCTL_ROLE_BIT(role);
	} else {
		snprintf(err, errlen,
			 "%s: %s needs a role (viewer, operator, key-custodian%s), not '%s'", where,
			 verbs[r->verb], r->verb == DENY ? " or all" : "", w2);
		return -EINVAL;
	}
	if (parse_selector(r, rest, where, err, errlen) < 0)
		return -EINVAL;
	if (r->verb == PIN && r->sel != SEL_SHA256) {
		snprintf(err, errlen, "%s: pin takes sha256:FINGERPRINT only", where);
		return -EINVAL;
	}
	return 0;
}

int fctl_tls_policy_parse(const char *text, size_t len, const char *name,
			  struct fctl_tls_policy **out, char *err, size_t errlen)
{
	struct fctl_tls_policy *p = fctl_calloc(1, sizeof(*p));
	unsigned lineno = 0;
	size_t off = 0;
	int r = 0;

	if (!p || !(p->name = fctl_strdup(name))) {
		fctl_tls_policy_free(p);
		return -ENOMEM;
	}
	while (r == 0 && off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t ll = nl ? (size_t)(nl - (text + off)) : len - off;
		char line[2048], where[300];
		struct rule ru = { 0 };

		lineno++;
		snprintf(where, sizeof(where), "%s:%u", name, lineno);
		if (ll >= sizeof(line) || memchr(text + off, '\0', ll)) {
			snprintf(err, errlen, "%s: %s", where,
				 ll >= sizeof(line) ? "line too long" : "NUL byte in the line");
			r = -EINVAL;
			break;
		}
		memcpy(line, text + off, ll);
		line[ll] = '\0';
		off += ll + (nl ? 1 : 0);
		line[strcspn(line, "#\r")] = '\0';
		if (line[strspn(line, " \t")] == '\0')
			continue;
		ru.line = lineno;
		r = parse_line(&ru, line, where, err, errlen);
		if (r == 0 && !fctl_array_grow(&p->v, &p->n, &p->cap, sizeof(*p->v)))
			r = -ENOMEM;
		if (r < 0) {
			free(ru.value);
			break;
		}
		p->v[p->n - 1] = ru;
	}
	if (r < 0) {
		if (r == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		fctl_tls_policy_free(p);
		return r;
	}
	*out = p;
	return 0;
}

int fctl_tls_policy_load(const char *path, struct fctl_tls_policy **out, char *err,
			 size_t errlen)
{
	struct fctl_buf b = { 0 };
	int r = fctl_file_read(path, &b);

	if (r < 0)
		snprintf(err, errlen, "'%s': %s", path, strerror(-r));
	else
		r = fctl_tls_policy_parse(b.data ? (const char *)b.data : "", b.len, path, out,
					  err, errlen);
	fctl_buf_release(&b);
	return r;
}

void fctl_tls_policy_free(struct fctl_tls_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n; i++)
		free(p->v[i].value);
	free(p->v);
	free(p->name);
	free(p);
}

static bool matches(const struct rule *r, const struct fctl_tls_peer *peer)
{
	switch (r->sel) {
	case SEL_CN:
		return peer->cn && strcmp(r->value, peer->cn) == 0;
	case SEL_DN:
		return peer->dn && strcmp(r->value, peer->dn) == 0;
	default:
		return fctl_memeq_ct(r->sha256, peer->sha256, sizeof(r->sha256));
	}
}

/* the name of the lowest role in set */
static const char *first_role(unsigned set)
{
	for (unsigned r = FCTL_ROLE_VIEWER; r <= FCTL_ROLE_LOCAL; r++)
		if (set & FCTL_ROLE_BIT(r))
			return fctl_role_name((enum fctl_role)r);
	return "none";
}

unsigned fctl_tls_policy_eval(const struct fctl_tls_policy *pol, const struct fctl_tls_peer *peer,
			      char *why, size_t whylen)
{
	unsigned allowed = 0, roles, pinned = 0, pin_ok = 0, lost;
	bool matched = false;
	size_t n = pol ? pol->n : 0;

	if (why && whylen)
		why[0] = '\0';
	for (size_t i = 0; i < n; i++)
		if (pol->v[i].verb == ALLOW && matches(&pol->v[i], peer)) {
			allowed |= pol->v[i].roles;
			matched = true;
		}
	roles = matched ? allowed
			: peer->cert_role != FCTL_ROLE_NONE ? FCTL_ROLE_BIT(peer->cert_role) : 0;
	roles &= CERT_ROLES;
	for (size_t i = 0; i < n; i++) {
		const struct rule *r = &pol->v[i];

		if (r->verb != DENY || !matches(r, peer))
			continue;
		if ((roles & r->roles) && why && !why[0])
			snprintf(why, whylen, "role %s denied by %s:%u",
				 first_role(roles & r->roles), pol->name, r->line);
		roles &= ~r->roles;
	}
	for (size_t i = 0; i < n; i++)
		if (pol->v[i].verb == PIN) {
			pinned |= pol->v[i].roles;
			if (matches(&pol->v[i], peer))
				pin_ok |= pol->v[i].roles;
		}
	lost = roles & pinned & ~pin_ok;
	for (size_t i = 0; lost && i < n; i++)
		if (pol->v[i].verb == PIN && (pol->v[i].roles & lost)) {
			const struct rule *r = &pol->v[i];

			if (why && !why[0])
				snprintf(why, whylen,
					 "role %s is pinned to other certificates (%s:%u)",
					 first_role(r->roles & lost), pol->name, r->line);
			break;
		}
	return roles & ~lost;
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

/* why (may be NULL or empty) gets the formatted reason */
__attribute__((format(printf, 3, 4))) static void say(char *why, size_t whylen, const char *fmt,
						      ...)
{
	va_list ap;

	if (!why || !whylen)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/* Whether the n bytes at p are printable ASCII (0x20..0x7e): no NUL, no control byte, no
 * byte of a multi-byte character (a name that reads the same as another is refused, not
 * compared). */
static bool printable(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] > 0x7e)
			return false;
	return true;
}

/* The subject in RFC 2253 form ("CN=alice,OU=operator,O=fabric"): OpenSSL escapes control
 * bytes, NULs and bytes past 0x7f (\00, \1B, ...), so the text is printable. 0, or -EBADMSG
 * when it cannot be printed or does not fit in len (never truncated: a dn: rule compares
 * the whole subject). */
static int subject_dn(X509_NAME *nm, char *out, size_t len)
{
	BIO *b = BIO_new(BIO_s_mem());
	int k = -1, r = -EBADMSG;

	if (b && X509_NAME_print_ex(b, nm, 0, XN_FLAG_RFC2253) >= 0 && BIO_pending(b) < (int)len) {
		k = BIO_read(b, out, (int)len - 1);
		if (k >= 0 && printable((const unsigned char *)out, (size_t)k))
			r = 0;
	}
	out[r == 0 ? k : 0] = '\0';
	BIO_free(b);
	return r;
}

/*
 * The subject's one entry of nid (label "CN" or "OU") as text in out (len bytes, NUL
 * ended). 0; -ENOENT when there is none; -ENOTUNIQ when there are several; -EBADMSG with
 * why set when its text (UTF-8) holds a NUL or a byte that is not printable ASCII, or
 * does not fit in out. Never truncated: rules compare names on their full length.
 */
static int name_text(X509_NAME *nm, int nid, const char *label, char *out, size_t len, char *why,
		     size_t whylen)
{
	int i = X509_NAME_get_index_by_NID(nm, nid, -1), n;
	unsigned char *u = NULL;

	out[0] = '\0';
	if (i < 0)
		return -ENOENT;
	if (X509_NAME_get_index_by_NID(nm, nid, i) >= 0)
		return -ENOTUNIQ;
	n = ASN1_STRING_to_UTF8(&u, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(nm, i)));
	if (n < 0 || !printable(u, (size_t)n)) {
		say(why, whylen, "the certificate's subject %s holds a NUL or a non-printable byte",
		    label);
		OPENSSL_free(u);
		return -EBADMSG;
	}
	if ((size_t)n >= len) {
		say(why, whylen, "the certificate's subject %s is too long", label);
		OPENSSL_free(u);
		return -EBADMSG;
	}
	memcpy(out, u, (size_t)n);
	out[n] = '\0';
	OPENSSL_free(u);
	return 0;
}

/* The CN, the OU and the DN of nm, each whole and printable (see name_text); "" for an
 * absent CN or OU, and for an OU given more than once (it names no role then). 0, or
 * -EACCES with why set: a NUL or non-printable byte, a name too long, two CNs. */
static int peer_names(X509_NAME *nm, char *cn, size_t cnlen, char *ou, size_t oulen, char *dn,
		      size_t dnlen, char *why, size_t whylen)
{
	char d[160];
	int r = subject_dn(nm, dn, dnlen);

	if (r < 0) {
		say(why, whylen, "the certificate's subject cannot be printed whole");
		return -EACCES;
	}
	r = name_text(nm, NID_commonName, "CN", cn, cnlen, why, whylen);
	if (r == -ENOTUNIQ)
		say(why, whylen, "the certificate's subject has more than one CN");
	if (r == 0 || r == -ENOENT) {
		r = name_text(nm, NID_organizationalUnitName, "OU", ou, oulen, why, whylen);
		if (r == -ENOENT || r == -ENOTUNIQ)
			r = 0;
	}
	if (r == 0)
		return 0;
	/* the reason and the subject as OpenSSL escapes it: printable, for the audit */
	if (why && whylen) {
		snprintf(d, sizeof(d), "%s", why);
		snprintf(why, whylen, "%s (%s): refused", d, dn);
	}
	return -EACCES;
}

/* "CN=NAME" (",OU=NAME" when there is one), the characters RFC 2253 gives a meaning
 * (,+"\<>;=) escaped with a backslash, so a name cannot look like two fields */
static void subject_text(const char *cn, const char *ou, char *out, size_t len)
{
	size_t k = 0;

	for (int f = 0; f < 2; f++) {
		const char *v = f ? ou : cn, *tag = f ? ",OU=" : "CN=";

		if (f && !ou[0])
			break;
		for (const char *t = tag; *t && k + 1 < len; t++)
			out[k++] = *t;
		for (; *v && k + 2 < len; v++) {
			if (strchr(",+\"\\<>;=", *v))
				out[k++] = '\\';
			out[k++] = *v;
		}
	}
	out[k < len ? k : len - 1] = '\0';
}

int fctl_tls_peer_roles(struct ssl_st *ssl, const struct fctl_tls_policy *pol, unsigned *roles,
			char *subject, size_t len, char *why, size_t whylen)
{
	X509 *x = SSL_get1_peer_certificate(ssl);
	struct fctl_tls_peer peer = { 0 };
	char cn[256] = "", ou[64] = "", dn[1024];
	unsigned mdlen = 0, set;

	if (!x || SSL_get_verify_result(ssl) != X509_V_OK ||
	    X509_digest(x, EVP_sha256(), peer.sha256, &mdlen) != 1 || mdlen != 32) {
		X509_free(x);
		return -EACCES;
	}
	if (peer_names(X509_get_subject_name(x), cn, sizeof(cn), ou, sizeof(ou), dn, sizeof(dn),
		       why, whylen) < 0) {
		X509_free(x);
		return -EACCES;
	}
	peer.dn = dn;
	peer.cn = cn;
	peer.cert_role = san_role(x);
	if (peer.cert_role == FCTL_ROLE_NONE && ou[0] &&
	    fctl_role_from_name(ou, &peer.cert_role) < 0)
		peer.cert_role = FCTL_ROLE_NONE;
	set = fctl_tls_policy_eval(pol, &peer, why, whylen);
	if (!set && why && whylen && !why[0])
		snprintf(why, whylen, "the certificate names no role");
	subject_text(cn, ou, subject, len);
	X509_free(x);
	*roles = set;
	return 0;
}
