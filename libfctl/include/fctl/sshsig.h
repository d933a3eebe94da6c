/* SPDX-License-Identifier: MIT */
/*
 * OpenSSH signatures (SSHSIG, the armored "SSH SIGNATURE" of `ssh-keygen -Y sign`):
 * public keys in OpenSSH's wire and text forms, parsing and verifying a signature,
 * signing with an unencrypted OpenSSH Ed25519 private key file (docs/approvals.md).
 *
 * Keys: ssh-ed25519 and ecdsa-sha2-nistp256. FIDO keys (sk-ssh-ed25519@openssh.com,
 * sk-ecdsa-sha2-nistp256@openssh.com), certificates and the other types are refused
 * with -EOPNOTSUPP and a sentence saying so. Errors: negative errno and a sentence in
 * err (no key material, no path: the caller names the file).
 */
#ifndef FCTL_SSHSIG_H
#define FCTL_SSHSIG_H

#include <stddef.h>
#include <stdint.h>

#include "fctl/util.h"

enum fctl_sshkey_type {
	FCTL_SSHKEY_ED25519 = 1,
	FCTL_SSHKEY_ECDSA_P256,
};

/* A public key: its wire blob (what fingerprints and comparisons use) and the raw key. */
struct fctl_sshkey {
	enum fctl_sshkey_type type;
	uint8_t blob[128];
	size_t bloblen;
	uint8_t pub[65]; /* Ed25519: 32 bytes; P-256: the uncompressed point */
	size_t publen;
	char fp[56]; /* "SHA256:" + unpadded base64, as ssh-keygen -l prints */
};

/* A parsed SSHSIG: the signer's key, the namespace, the hash and the signature. */
struct fctl_sshsig {
	struct fctl_sshkey key;
	char ns[128];
	char hashalg[8]; /* "sha256" or "sha512" */
	uint8_t sig[160]; /* Ed25519: 64 bytes; ECDSA: DER of (r, s) */
	size_t siglen;
};

/* The key of a wire blob (string type, then the type's fields). -EBADMSG malformed,
 * -EOPNOTSUPP a type not supported. */
int fctl_sshkey_from_blob(const uint8_t *blob, size_t len, struct fctl_sshkey *out, char *err,
			  size_t errlen);
/* The key of "TYPE BASE64" as in authorized_keys and allowed_signers. */
int fctl_sshkey_from_text(const char *type, const char *b64, struct fctl_sshkey *out,
			  char *err, size_t errlen);
/* Whether two keys are the same key. */
bool fctl_sshkey_equal(const struct fctl_sshkey *a, const struct fctl_sshkey *b);

/* Parses the armored text (-----BEGIN SSH SIGNATURE----- ... END). -EBADMSG malformed or
 * truncated, -EOPNOTSUPP a key, version or hash not supported. */
int fctl_sshsig_parse(const char *text, size_t len, struct fctl_sshsig *out, char *err,
		      size_t errlen);
/* Verifies s over msg in namespace ns: 0, -EXDEV signed in another namespace,
 * -EKEYREJECTED the signature does not match these bytes, -ENOMEM. */
int fctl_sshsig_verify(const struct fctl_sshsig *s, const char *ns, const void *msg,
		       size_t len, char *err, size_t errlen);

/* Signs msg in namespace ns with the OpenSSH private key in keytext (an unencrypted
 * "OPENSSH PRIVATE KEY" holding one Ed25519 key) and appends the armored signature to
 * out. -EOPNOTSUPP an encrypted key or another type (use ssh-keygen), -EBADMSG malformed.
 * The key's bytes are wiped before return; the caller wipes keytext. */
int fctl_sshsig_sign_ed25519(const char *keytext, size_t keylen, const char *ns,
			     const void *msg, size_t len, struct fctl_buf *out, char *err,
			     size_t errlen);

#endif
