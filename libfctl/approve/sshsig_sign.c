// SPDX-License-Identifier: MIT
/* Signing with an unencrypted OpenSSH Ed25519 private key file: the SSHSIG that
 * `ssh-keygen -Y sign` would write (sha512), for `fabricctl approve`. */
#include <errno.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "fctl/sshsig.h"

#include "approve_int.h"

#define KEY_BEGIN "-----BEGIN OPENSSH PRIVATE KEY-----"
#define KEY_END "-----END OPENSSH PRIVATE KEY-----"
#define KEY_MAGIC "openssh-key-v1"

/* the seed (first 32 bytes of the 64-byte secret) and the public key blob */
static int key_parse(const char *text, size_t len, uint8_t seed[32], struct fctl_sshkey *pub,
		     char *err, size_t errlen)
{
	struct fctl_buf blob = { 0 };
	struct fctl_apri_rd r, pr;
	const char *b, *e, *end = text + len;
	const uint8_t *ci, *kdf, *kopt, *pk, *priv, *t, *pp, *sk;
	size_t cil, kdfl, koptl, pkl, privl, tl, ppl, skl;
	uint32_t nkeys, c1, c2;
	int rc = -EBADMSG;

	b = memmem(text, len, KEY_BEGIN, strlen(KEY_BEGIN));
	e = b ? memmem(b, (size_t)(end - b), KEY_END, strlen(KEY_END)) : NULL;
	if (!e || fctl_apri_b64_decode(b + strlen(KEY_BEGIN), (size_t)(e - b) - strlen(KEY_BEGIN),
				       &blob) < 0) {
		fctl_set_err(err, errlen, "not an OpenSSH private key file (-----BEGIN OPENSSH "
					  "PRIVATE KEY-----)");
		goto out;
	}
	r = (struct fctl_apri_rd){ (const uint8_t *)blob.data, blob.len };
	if (r.n < sizeof(KEY_MAGIC) || memcmp(r.p, KEY_MAGIC, sizeof(KEY_MAGIC)) != 0)
		goto bad;
	r.p += sizeof(KEY_MAGIC);
	r.n -= sizeof(KEY_MAGIC);
	if (fctl_apri_get_str(&r, &ci, &cil) < 0 || fctl_apri_get_str(&r, &kdf, &kdfl) < 0 ||
	    fctl_apri_get_str(&r, &kopt, &koptl) < 0 || fctl_apri_get_u32(&r, &nkeys) < 0 ||
	    nkeys != 1 || fctl_apri_get_str(&r, &pk, &pkl) < 0 ||
	    fctl_apri_get_str(&r, &priv, &privl) < 0)
		goto bad;
	if (cil != 4 || memcmp(ci, "none", 4) != 0) {
		fctl_set_err(err, errlen, "the private key is encrypted: use --ssh-keygen, which "
					  "asks for its passphrase");
		rc = -EOPNOTSUPP;
		goto out;
	}
	rc = fctl_sshkey_from_blob(pk, pkl, pub, err, errlen);
	if (rc < 0)
		goto out;
	rc = -EBADMSG;
	if (pub->type != FCTL_SSHKEY_ED25519) {
		fctl_set_err(err, errlen, "only Ed25519 keys are signed in-process: use "
					  "--ssh-keygen for this key");
		rc = -EOPNOTSUPP;
		goto out;
	}
	pr = (struct fctl_apri_rd){ priv, privl };
	if (fctl_apri_get_u32(&pr, &c1) < 0 || fctl_apri_get_u32(&pr, &c2) < 0 || c1 != c2 ||
	    fctl_apri_get_str(&pr, &t, &tl) < 0 || tl != 11 || memcmp(t, "ssh-ed25519", 11) ||
	    fctl_apri_get_str(&pr, &pp, &ppl) < 0 || ppl != 32 ||
	    memcmp(pp, pub->pub, 32) != 0 || fctl_apri_get_str(&pr, &sk, &skl) < 0 || skl != 64)
		goto bad;
	memcpy(seed, sk, 32);
	rc = 0;
	goto out;
bad:
	fctl_set_err(err, errlen, "malformed OpenSSH private key");
out:
	fctl_memzero(blob.data, blob.cap);
	fctl_buf_release(&blob);
	return rc;
}

static void armor(const struct fctl_buf *sig, struct fctl_buf *out)
{
	struct fctl_buf b64 = { 0 };

	fctl_apri_b64_encode((const uint8_t *)sig->data, sig->len, true, &b64);
	fctl_buf_puts(out, "-----BEGIN SSH SIGNATURE-----\n");
	for (size_t i = 0; i < b64.len; i += 70) {
		fctl_buf_append(out, b64.data + i, b64.len - i < 70 ? b64.len - i : 70);
		fctl_buf_putc(out, '\n');
	}
	fctl_buf_puts(out, "-----END SSH SIGNATURE-----\n");
	if (b64.oom)
		out->oom = true;
	fctl_buf_release(&b64);
}

int fctl_sshsig_sign_ed25519(const char *keytext, size_t keylen, const char *ns,
			     const void *msg, size_t len, struct fctl_buf *out, char *err,
			     size_t errlen)
{
	struct fctl_buf data = { 0 }, blob = { 0 }, inner = { 0 };
	struct fctl_sshkey pub;
	uint8_t seed[32], sig[64];
	size_t siglen = sizeof(sig);
	EVP_PKEY *pkey = NULL;
	EVP_MD_CTX *ctx = NULL;
	int rc = key_parse(keytext, keylen, seed, &pub, err, errlen);

	if (rc < 0)
		return rc;
	rc = -ENOMEM;
	pkey = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sizeof(seed));
	fctl_memzero(seed, sizeof(seed));
	if (!pkey || !(ctx = EVP_MD_CTX_new()) ||
	    fctl_apri_signed_data(ns, "sha512", msg, len, &data) < 0 ||
	    EVP_DigestSignInit(ctx, NULL, NULL, NULL, pkey) != 1 ||
	    EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)data.data, data.len) != 1 ||
	    siglen != 64)
		goto out;
	fctl_apri_put_str(&inner, "ssh-ed25519", 11);
	fctl_apri_put_str(&inner, sig, siglen);
	fctl_buf_append(&blob, "SSHSIG", 6);
	fctl_buf_append(&blob, "\0\0\0\1", 4);
	fctl_apri_put_str(&blob, pub.blob, pub.bloblen);
	fctl_apri_put_str(&blob, ns, strlen(ns));
	fctl_apri_put_str(&blob, "", 0);
	fctl_apri_put_str(&blob, "sha512", 6);
	fctl_apri_put_str(&blob, inner.data, inner.len);
	if (blob.oom || inner.oom)
		goto out;
	armor(&blob, out);
	rc = out->oom ? -ENOMEM : 0;
out:
	if (rc < 0)
		fctl_set_err(err, errlen, "signing failed (out of memory or OpenSSL error)");
	ERR_clear_error();
	EVP_MD_CTX_free(ctx);
	EVP_PKEY_free(pkey);
	fctl_buf_release(&data);
	fctl_buf_release(&blob);
	fctl_buf_release(&inner);
	return rc;
}
