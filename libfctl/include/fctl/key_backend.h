/* SPDX-License-Identifier: MIT */
/*
 * Key backends: how a source of keys plugs into fctl_key_fetch() and the rest of
 * fctl/keys.h. A backend is one table of functions, found by the reference's backend
 * name in a registry; nothing calls a backend by name.
 *
 * The key module (fctl_keys) has the "file" backend built in: a local key file is not
 * a KMS. The KMS backends ("pkcs11", "kmip") live in fctl_kms, which only
 * fabricctl-keymgr links and registers (fctl/kms.h): a process that did not register
 * them cannot reach a KMS, and the apply path asks keymgr instead (fctl/keysrc.h).
 *
 * The helpers below are for backends: they keep key objects in locked memory and
 * share the parsing every backend needs.
 */
#ifndef FCTL_KEY_BACKEND_H
#define FCTL_KEY_BACKEND_H

#include <stdbool.h>
#include <stddef.h>

#include "fctl/keys.h"

struct fctl_key_backend {
	const char *name;   /* a reference's backend: "file", "pkcs11", "kmip" */
	bool needs_version; /* references must name a version >= 1: version 0 fails closed */
	/* The key into locked memory (fctl_keys_alloc) and its metadata; fctl_key_fetch()
	 * checks the length and applies fctl_key_check_usable() to info afterwards. */
	int (*fetch)(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		     struct fctl_key **out, struct fctl_key_info *info, char *err, size_t errlen);
	int (*info)(const struct fctl_keyref *ref, const char *base_dir, struct fctl_key_info *out,
		    char *err, size_t errlen);
	int (*create)(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		      bool activate, struct fctl_key_info *out, char *err, size_t errlen);
	int (*transition)(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			  size_t errlen);
};

/* Adds b (which must outlive the process: a static table) to the registry. Call it
 * before any thread uses the key API. 0, also when b is registered already; -EEXIST
 * when another table has its name; -ENOSPC when the registry is full. */
int fctl_key_backend_register(const struct fctl_key_backend *b);
/* The registered backend of that name, NULL when this process has none. */
const struct fctl_key_backend *fctl_key_backend_find(const char *name);

/* A zeroed struct fctl_key in a slot of the key arena: pages of keys only, locked,
 * MADV_DONTDUMP and MADV_WIPEONFORK (best effort: fctl_keys_protection() says whether
 * it held); NULL on allocation failure. fctl_key_free() wipes the slot; the page stays
 * locked for the other keys in it. Thread-safe. */
struct fctl_key *fctl_keys_alloc(void);
/* n zeroed bytes in a page-aligned mapping of their own, protected as the key pages
 * (for a buffer that holds key bytes, a KMIP response); NULL on failure (or n == 0). */
void *fctl_keys_secure_alloc(size_t n);
/* Wipes and unmaps p from fctl_keys_secure_alloc(n), same n; accepts NULL. */
void fctl_keys_secure_free(void *p, size_t n);
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

#endif
