// SPDX-License-Identifier: MIT
/* OpenSSH public keys and SSHSIG signatures: parse, verify (OpenSSL EVP). */
#include <errno.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>

#include "fctl/sshsig.h"

#include "approve_int.h"

#define SSHSIG_MAGIC "SSHSIG"
#define ARMOR_BEGIN "-----BEGIN SSH SIGNATURE-----"
#define ARMOR_END "-----END SSH SIGNATURE-----"

int fctl_apri_get_u32(struct fctl_apri_rd *r, uint32_t *v)
{
	if (r->n < 4)
		return -EBADMSG;
	*v = (uint32_t)fctl_get_be(r->p, 4);
	r->p += 4;
	r->n -= 4;
	return 0;
}

int fctl_apri_get_str(struct fctl_apri_rd *r, const uint8_t **p, size_t *len)
{
	uint32_t l;

	if (fctl_apri_get_u32(r, &l) < 0 || l > r->n)
		return -EBADMSG;
	*p = r->p;
	*len = l;
	r->p += l;
	r->n -= l;
	return 0;
}

static bool str_is(const uint8_t *p, size_t len, const char *s)
{
	return len == strlen(s) && memcmp(p, s, len) == 0;
}

void fctl_apri_put_str(struct fctl_buf *b, const void *p, size_t len)
{
	uint8_t l[4];

	fctl_put_be(l, len, 4);
	fctl_buf_append(b, l, 4);
	fctl_buf_append(b, p, len);
}

/* base64 without whitespace; -EBADMSG on anything else */
int fctl_apri_b64_decode(const char *in, size_t len, struct fctl_buf *out)
{
	struct fctl_buf clean = { 0 };
	size_t pad = 0;
	int n, r = -EBADMSG;

	for (size_t i = 0; i < len; i++)
		if (in[i] != '\n' && in[i] != '\r' && in[i] != ' ' && in[i] != '\t')
			fctl_buf_putc(&clean, in[i]);
	if (clean.oom)
		goto out;
	if (clean.len == 0 || clean.len % 4)
		goto out;
	pad = (clean.data[clean.len - 1] == '=') + (clean.data[clean.len - 2] == '=');
	fctl_buf_reset(out);
	{
		unsigned char *dst = OPENSSL_malloc(clean.len / 4 * 3 + 1);

		if (!dst) {
			r = -ENOMEM;
			goto out;
		}
		n = EVP_DecodeBlock(dst, (const unsigned char *)clean.data, (int)clean.len);
		if (n >= (int)pad) {
			fctl_buf_append(out, dst, (size_t)n - pad);
			r = out->oom ? -ENOMEM : 0;
		}
		OPENSSL_clear_free(dst, clean.len / 4 * 3 + 1);
	}
out:
	fctl_buf_release(&clean);
	return r;
}

void fctl_apri_b64_encode(const uint8_t *p, size_t len, bool padded, struct fctl_buf *out)
{
	size_t cap = (len + 2) / 3 * 4 + 1;
	unsigned char *dst = OPENSSL_malloc(cap);
	int n;

	if (!dst) {
		out->oom = true;
		return;
	}
	n = EVP_EncodeBlock(dst, p, (int)len);
	while (!padded && n > 0 && dst[n - 1] == '=')
		n--;
	fctl_buf_append(out, dst, (size_t)n);
	OPENSSL_free(dst);
}

static void key_fingerprint(struct fctl_sshkey *k)
{
	unsigned char md[32];
	struct fctl_buf b = { 0 };

	EVP_Digest(k->blob, k->bloblen, md, NULL, EVP_sha256(), NULL);
	fctl_buf_puts(&b, "SHA256:");
	fctl_apri_b64_encode(md, sizeof(md), false, &b);
	snprintf(k->fp, sizeof(k->fp), "%s", b.oom || !b.data ? "?" : b.data);
	fctl_buf_release(&b);
}

int fctl_sshkey_from_blob(const uint8_t *blob, size_t len, struct fctl_sshkey *out, char *err,
			  size_t errlen)
{
	struct fctl_apri_rd r = { blob, len };
	struct fctl_sshkey k = { 0 };
	const uint8_t *t, *q, *c;
	size_t tl, ql, cl;

	if (len > sizeof(k.blob) || fctl_apri_get_str(&r, &t, &tl) < 0) {
		fctl_set_err(err, errlen, "malformed public key");
		return -EBADMSG;
	}
	if (str_is(t, tl, "ssh-ed25519")) {
		if (fctl_apri_get_str(&r, &q, &ql) < 0 || ql != 32 || r.n) {
			fctl_set_err(err, errlen, "malformed ssh-ed25519 public key");
			return -EBADMSG;
		}
		k.type = FCTL_SSHKEY_ED25519;
	} else if (str_is(t, tl, "ecdsa-sha2-nistp256")) {
		if (fctl_apri_get_str(&r, &c, &cl) < 0 || !str_is(c, cl, "nistp256") ||
		    fctl_apri_get_str(&r, &q, &ql) < 0 || ql != 65 || q[0] != 4 || r.n) {
			fctl_set_err(err, errlen, "malformed ecdsa-sha2-nistp256 public key");
			return -EBADMSG;
		}
		k.type = FCTL_SSHKEY_ECDSA_P256;
	} else if (tl > 3 && memcmp(t, "sk-", 3) == 0) {
		fctl_set_err(err, errlen,
			     "FIDO (sk-) keys are not supported: their user-presence flags are "
			     "not checked, use an ssh-ed25519 or ecdsa-sha2-nistp256 key");
		return -EOPNOTSUPP;
	} else {
		fctl_set_err(err, errlen,
			     "key type '%.*s' is not supported (ssh-ed25519, ecdsa-sha2-nistp256)",
			     (int)(tl > 64 ? 64 : tl), (const char *)t);
		return -EOPNOTSUPP;
	}
	memcpy(k.pub, q, ql);
	k.publen = ql;
	memcpy(k.blob, blob, len);
	k.bloblen = len;
	key_fingerprint(&k);
	*out = k;
	return 0;
}

int fctl_sshkey_from_text(const char *type, const char *b64, struct fctl_sshkey *out,
			  char *err, size_t errlen)
{
	struct fctl_buf blob = { 0 };
	struct fctl_apri_rd r;
	const uint8_t *t;
	size_t tl;
	int rc;

	if (fctl_apri_b64_decode(b64, strlen(b64), &blob) < 0) {
		fctl_set_err(err, errlen, "the key is not valid base64");
		fctl_buf_release(&blob);
		return -EBADMSG;
	}
	rc = fctl_sshkey_from_blob((const uint8_t *)blob.data, blob.len, out, err, errlen);
	r = (struct fctl_apri_rd){ (const uint8_t *)blob.data, blob.len };
	if (rc == 0 && (fctl_apri_get_str(&r, &t, &tl) < 0 || !str_is(t, tl, type))) {
		fctl_set_err(err, errlen, "the key's type is not '%s' as its line says", type);
		rc = -EBADMSG;
	}
	fctl_buf_release(&blob);
	return rc;
}

bool fctl_sshkey_equal(const struct fctl_sshkey *a, const struct fctl_sshkey *b)
{
	return a->bloblen == b->bloblen && memcmp(a->blob, b->blob, a->bloblen) == 0;
}

/* the "string signature" of an SSHSIG: string type, then Ed25519's 64 bytes or
 * ECDSA's (mpint r, mpint s), turned into DER for EVP */
static int sig_parse(const struct fctl_sshkey *k, const uint8_t *p, size_t len,
		     struct fctl_sshsig *s, char *err, size_t errlen)
{
	struct fctl_apri_rd r = { p, len }, in;
	const uint8_t *t, *b, *rb, *sb;
	size_t tl, bl, rl, sl;
	ECDSA_SIG *es;
	BIGNUM *br, *bs;
	unsigned char *der = NULL;
	int n;

	if (fctl_apri_get_str(&r, &t, &tl) < 0 || fctl_apri_get_str(&r, &b, &bl) < 0 || r.n)
		goto bad;
	if (k->type == FCTL_SSHKEY_ED25519) {
		if (!str_is(t, tl, "ssh-ed25519") || bl != 64)
			goto bad;
		memcpy(s->sig, b, bl);
		s->siglen = bl;
		return 0;
	}
	if (!str_is(t, tl, "ecdsa-sha2-nistp256"))
		goto bad;
	in = (struct fctl_apri_rd){ b, bl };
	if (fctl_apri_get_str(&in, &rb, &rl) < 0 || fctl_apri_get_str(&in, &sb, &sl) < 0 ||
	    in.n || rl > 33 || sl > 33)
		goto bad;
	es = ECDSA_SIG_new();
	br = BN_bin2bn(rb, (int)rl, NULL);
	bs = BN_bin2bn(sb, (int)sl, NULL);
	if (!es || !br || !bs || ECDSA_SIG_set0(es, br, bs) != 1) {
		ECDSA_SIG_free(es);
		BN_free(br);
		BN_free(bs);
		fctl_set_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	n = i2d_ECDSA_SIG(es, &der);
	ECDSA_SIG_free(es);
	if (n <= 0 || (size_t)n > sizeof(s->sig)) {
		OPENSSL_free(der);
		goto bad;
	}
	memcpy(s->sig, der, (size_t)n);
	s->siglen = (size_t)n;
	OPENSSL_free(der);
	return 0;
bad:
	fctl_set_err(err, errlen, "malformed signature: its signature field does not match its key");
	return -EBADMSG;
}

/* the armor's base64, between BEGIN and END */
static int unarmor(const char *text, size_t len, struct fctl_buf *blob)
{
	const char *b, *e, *end = text + len;

	b = memmem(text, len, ARMOR_BEGIN, strlen(ARMOR_BEGIN));
	if (!b)
		return -EBADMSG;
	b += strlen(ARMOR_BEGIN);
	e = memmem(b, (size_t)(end - b), ARMOR_END, strlen(ARMOR_END));
	if (!e)
		return -EBADMSG;
	return fctl_apri_b64_decode(b, (size_t)(e - b), blob);
}

int fctl_sshsig_parse(const char *text, size_t len, struct fctl_sshsig *out, char *err,
		      size_t errlen)
{
	struct fctl_buf blob = { 0 };
	struct fctl_sshsig s = { 0 };
	struct fctl_apri_rd r;
	const uint8_t *pk, *ns, *res, *ha, *sig;
	size_t pkl, nsl, resl, hal, sigl;
	uint32_t ver;
	int rc = -EBADMSG;

	if (unarmor(text, len, &blob) < 0) {
		fctl_set_err(err, errlen,
			     "malformed signature: no complete '" ARMOR_BEGIN "' ... '" ARMOR_END
			     "' block of base64 (truncated?)");
		goto out;
	}
	r = (struct fctl_apri_rd){ (const uint8_t *)blob.data, blob.len };
	if (r.n < 6 || memcmp(r.p, SSHSIG_MAGIC, 6) != 0) {
		fctl_set_err(err, errlen, "malformed signature: it does not start with SSHSIG");
		goto out;
	}
	r.p += 6;
	r.n -= 6;
	if (fctl_apri_get_u32(&r, &ver) < 0 || fctl_apri_get_str(&r, &pk, &pkl) < 0 ||
	    fctl_apri_get_str(&r, &ns, &nsl) < 0 || fctl_apri_get_str(&r, &res, &resl) < 0 ||
	    fctl_apri_get_str(&r, &ha, &hal) < 0 || fctl_apri_get_str(&r, &sig, &sigl) < 0 ||
	    r.n) {
		fctl_set_err(err, errlen, "malformed signature: its fields are truncated or "
					  "followed by extra bytes");
		goto out;
	}
	if (ver != 1) {
		fctl_set_err(err, errlen, "signature format version %u is not supported (1)", ver);
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (str_is(ha, hal, "sha256") || str_is(ha, hal, "sha512")) {
		memcpy(s.hashalg, ha, hal);
	} else {
		fctl_set_err(err, errlen, "signature hash is not sha256 or sha512");
		rc = -EOPNOTSUPP;
		goto out;
	}
	if (nsl == 0 || nsl >= sizeof(s.ns) || memchr(ns, '\0', nsl)) {
		fctl_set_err(err, errlen, "malformed signature: bad namespace");
		goto out;
	}
	memcpy(s.ns, ns, nsl);
	rc = fctl_sshkey_from_blob(pk, pkl, &s.key, err, errlen);
	if (rc < 0)
		goto out;
	rc = sig_parse(&s.key, sig, sigl, &s, err, errlen);
	if (rc < 0)
		goto out;
	*out = s;
out:
	fctl_buf_release(&blob);
	return rc;
}

static EVP_PKEY *p256_key(const struct fctl_sshkey *k)
{
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	EVP_PKEY *pkey = NULL;

	if (!bld ||
	    !OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) ||
	    !OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, k->pub, k->publen) ||
	    !(params = OSSL_PARAM_BLD_to_param(bld)) ||
	    !(ctx = EVP_PKEY_CTX_new_from_name(NULL, "EC", NULL)) ||
	    EVP_PKEY_fromdata_init(ctx) != 1 ||
	    EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params) != 1)
		pkey = NULL;
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	return pkey;
}

/* the bytes an SSHSIG signs: magic, namespace, reserved, hash name, H(message) */
int fctl_apri_signed_data(const char *ns, const char *hashalg, const void *msg, size_t len,
			  struct fctl_buf *out)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdl = 0;
	const EVP_MD *h = strcmp(hashalg, "sha256") == 0 ? EVP_sha256() : EVP_sha512();

	if (EVP_Digest(msg, len, md, &mdl, h, NULL) != 1)
		return -ENOMEM;
	fctl_buf_append(out, SSHSIG_MAGIC, 6);
	fctl_apri_put_str(out, ns, strlen(ns));
	fctl_apri_put_str(out, "", 0);
	fctl_apri_put_str(out, hashalg, strlen(hashalg));
	fctl_apri_put_str(out, md, mdl);
	return out->oom ? -ENOMEM : 0;
}

int fctl_sshsig_verify(const struct fctl_sshsig *s, const char *ns, const void *msg,
		       size_t len, char *err, size_t errlen)
{
	struct fctl_buf data = { 0 };
	EVP_MD_CTX *ctx = NULL;
	EVP_PKEY *pkey;
	int rc = -ENOMEM, ok;

	if (strcmp(s->ns, ns) != 0) {
		fctl_set_err(err, errlen, "signed in namespace '%s', not '%s'", s->ns, ns);
		return -EXDEV;
	}
	if (s->key.type == FCTL_SSHKEY_ED25519)
		pkey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, s->key.pub, 32);
	else
		pkey = p256_key(&s->key);
	if (!pkey || fctl_apri_signed_data(s->ns, s->hashalg, msg, len, &data) < 0 ||
	    !(ctx = EVP_MD_CTX_new()))
		goto out;
	if (EVP_DigestVerifyInit(ctx, NULL,
				 s->key.type == FCTL_SSHKEY_ED25519 ? NULL : EVP_sha256(), NULL,
				 pkey) != 1)
		goto out;
	ok = EVP_DigestVerify(ctx, s->sig, s->siglen, (const unsigned char *)data.data, data.len);
	rc = ok == 1 ? 0 : -EKEYREJECTED;
	if (rc < 0)
		fctl_set_err(err, errlen, "the signature does not match these bytes (it was made "
					  "over other bytes: another version or an edited file)");
out:
	if (rc == -ENOMEM)
		fctl_set_err(err, errlen, "out of memory");
	ERR_clear_error();
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(pkey);
	fctl_buf_release(&data);
	return rc;
}
