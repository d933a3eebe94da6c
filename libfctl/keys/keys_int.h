/* SPDX-License-Identifier: MIT */
/* Inside the key module: what keys.c shares with its backends (keys_*.c). */
#ifndef FCTL_KEYS_INT_H
#define FCTL_KEYS_INT_H

#include "fctl/keys.h"

/* struct fctl_key in locked, MADV_DONTDUMP memory; NULL on allocation failure. */
struct fctl_key *fctl_keys_alloc(void);
/* Sets k->kcv from k->bytes/k->len. */
void fctl_keys_kcv(struct fctl_key *k);
/* Splits "a=b;c=d" style ids; returns 0 and copies the value of name, or -EINVAL. */
int fctl_keys_id_field(const char *id, const char *name, char *out, size_t outlen);
/* A name a KMS object may carry: [A-Za-z0-9._-], 1..max characters. */
bool fctl_keys_name_ok(const char *s, size_t max);
/* A file holding a secret (PIN, TLS key) is a regular file, not a symlink, owner-only. */
int fctl_keys_check_secret_file(const char *path, char *err, size_t errlen);
/* A file holding a secret (PIN, TLS key): regular, not a symlink, owner-only.
 * Reads at most outlen-1 bytes, trailing newline removed, NUL-terminated. */
int fctl_keys_read_secret_file(const char *path, char *out, size_t outlen, char *err,
			       size_t errlen);
/* "state=active activation=1700000000 ..." (the record keys of docs/kms.md) */
void fctl_keys_info_format(const struct fctl_key_info *in, char *out, size_t outlen);
int fctl_keys_info_parse(const char *s, size_t len, struct fctl_key_info *info);

int fctl_pkcs11_fetch(const struct fctl_keyref *ref, size_t want_len, struct fctl_key **out,
		      struct fctl_key_info *info, char *err, size_t errlen);
int fctl_pkcs11_info(const struct fctl_keyref *ref, struct fctl_key_info *out, char *err,
		     size_t errlen);
int fctl_pkcs11_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		       bool activate, struct fctl_key_info *out, char *err, size_t errlen);
int fctl_pkcs11_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			   size_t errlen);

int fctl_kmip_fetch(const struct fctl_keyref *ref, size_t want_len, struct fctl_key **out,
		    struct fctl_key_info *info, char *err, size_t errlen);
int fctl_kmip_info(const struct fctl_keyref *ref, struct fctl_key_info *out, char *err,
		   size_t errlen);
int fctl_kmip_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		     bool activate, struct fctl_key_info *out, char *err, size_t errlen);
int fctl_kmip_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			 size_t errlen);

#endif
