/* SPDX-License-Identifier: MIT */
/*
 * Key sources. A key reference {backend, id, version} names a key; only the
 * bytes the kernel needs ever leave the backend, into a struct fctl_key that is
 * locked in memory (no swap, no core dump) and wiped on free.
 *
 * Backends (docs/kms.md has the reference formats):
 *   "file"    development: a file of hex digits, mode 0600; relative ids resolve
 *             against the profile's directory; no states or dates (always active)
 *   "pkcs11"  a PKCS#11 token found by label (SoftHSM2 in tests), id
 *             "token=LABEL;object=NAME", version N = the objects labelled "NAME.vN"
 *   "kmip"    a KMIP 1.x server over TLS with client certificates, id "NAME",
 *             version N = the object whose Name is "NAME.vN"
 * KMS backends need an explicit version (>= 1): "the current version" is ambiguous
 * during a rotation's overlap window, so version 0 fails closed.
 *
 * Errors (negative errno, with a one-line reason that never holds key material):
 *   -ENOKEY        no such key or version (fail closed)
 *   -EKEYREJECTED  the key exists but may not be used for a new SA: its state is not
 *                  active or now is outside its activation..protect-stop dates
 *   -EINVAL        malformed reference, or the key's length is not what the cipher needs
 *   -ENOTUNIQ      two objects answer to one reference
 *   -EACCES        PIN, certificate or server refused us
 *   -ETIMEDOUT, -ECONNREFUSED, -EHOSTUNREACH, -EPROTO  the KMS is slow, down or garbled
 */
#ifndef FCTL_KEYS_H
#define FCTL_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/state.h"

#define FCTL_KEY_MAX 32

struct fctl_key {
	uint8_t bytes[FCTL_KEY_MAX];
	size_t len;
	uint8_t kcv[3]; /* key check value: AES-ECB(key, 0^128)[0..2], names a key in logs */
};

/* Fetches the key of ref, checking its length against want_len. base_dir resolves
 * relative file ids. err/errlen receive a one-line reason without key material. */
int fctl_key_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		   struct fctl_key **out, char *err, size_t errlen);
void fctl_key_free(struct fctl_key *k);
/* "a1b2c3" */
void fctl_key_kcv_hex(const struct fctl_key *k, char out[7]);

/* What protects the key arena (keys_arena.c: every struct fctl_key, and the buffers of
 * fctl_keys_secure_alloc()): each flag is true while every page mapped so far got it,
 * false with the first errno once one did not (mlock: no memlock budget, EPERM or
 * ENOMEM; madvise: EINVAL on a kernel without it). A caller that must not run with
 * unprotected keys checks it after its first key. */
struct fctl_keys_protection {
	bool locked;               /* mlock: never swapped out */
	bool dontdump;             /* MADV_DONTDUMP: left out of core dumps */
	bool wipeonfork;           /* MADV_WIPEONFORK: a forked child sees zeroes */
	int lock_errno, dontdump_errno, wipeonfork_errno; /* the first failure, 0 if none */
	size_t pages;              /* key pages mapped (kept for the life of the process) */
	size_t keys;               /* keys allocated and not freed */
	unsigned slots_per_page;   /* 0 before the first key */
};
void fctl_keys_protection(struct fctl_keys_protection *out);

/* Key states of KMIP / NIST SP 800-57 (values are KMIP's). */
enum fctl_key_state {
	FCTL_KEY_STATE_UNKNOWN = 0,
	FCTL_KEY_PRE_ACTIVE = 1,
	FCTL_KEY_ACTIVE = 2,
	FCTL_KEY_DEACTIVATED = 3,
	FCTL_KEY_COMPROMISED = 4,
	FCTL_KEY_DESTROYED = 5,
	FCTL_KEY_DESTROYED_COMPROMISED = 6,
};

/* Dated events of a key. PROCESS_START..PROTECT_STOP is the overlap window's other
 * half: a key may protect (transmit) from ACTIVATION until PROTECT_STOP and process
 * (receive) from PROCESS_START until DEACTIVATION. */
enum fctl_key_date {
	FCTL_KEY_DATE_INITIAL,
	FCTL_KEY_DATE_ACTIVATION,
	FCTL_KEY_DATE_PROCESS_START,
	FCTL_KEY_DATE_PROTECT_STOP,
	FCTL_KEY_DATE_DEACTIVATION,
	FCTL_KEY_DATE_COMPROMISE,
	FCTL_KEY_DATE_DESTROY,
	FCTL_KEY_DATE_COUNT,
};

/* Metadata of one key version, never its bytes: for audit records, evidence and
 * rotation decisions. */
struct fctl_key_info {
	enum fctl_key_state state;
	uint32_t version;
	size_t len;                          /* key length in bytes */
	bool has_kcv;                        /* kcv below is set */
	uint8_t kcv[3];                      /* as struct fctl_key's */
	uint32_t dates_set;                  /* bit (1u << enum fctl_key_date) per date known */
	int64_t dates[FCTL_KEY_DATE_COUNT];  /* Unix seconds, UTC */
	char object[80];                     /* backend's name: PKCS#11 label, KMIP unique id */
};

/* Metadata without key material. A KMS backend reports its state and dates; the
 * KCV comes from the token (PKCS#11 CKA_CHECK_VALUE) or, for KMIP, from the key
 * fetched into locked memory and wiped at once (only keymgr talks to a KMS). */
int fctl_key_info(const struct fctl_keyref *ref, const char *base_dir, struct fctl_key_info *out,
		  char *err, size_t errlen);

/* Fail-closed policy for a new SA: 0 when state is active and now is within
 * [activation, protect stop) and before deactivation (dates that are not set do not
 * restrict); else -EKEYREJECTED with the reason. fctl_key_fetch() applies it. */
int fctl_key_check_usable(const struct fctl_key_info *info, int64_t now, char *err, size_t errlen);

/* Creates version ref->version of a key of len bytes (16 or 32) inside the KMS: the
 * key is generated there, never in our memory. plan may carry planned dates
 * (activation, process start, protect stop, deactivation: bits in dates_set);
 * activate makes it active at once, else it is pre-active. -EEXIST when that
 * version exists. out (may be NULL) receives its metadata. */
int fctl_key_create(const struct fctl_keyref *ref, size_t len, const struct fctl_key_info *plan,
		    bool activate, struct fctl_key_info *out, char *err, size_t errlen);

enum fctl_key_transition {
	FCTL_KEY_DO_ACTIVATE,   /* pre-active -> active */
	FCTL_KEY_DO_DEACTIVATE, /* active -> deactivated (end of a cryptoperiod) */
	FCTL_KEY_DO_COMPROMISE, /* any -> compromised (KMIP Revoke, key compromise) */
	FCTL_KEY_DO_DESTROY,    /* not active -> destroyed: the key bytes are gone */
};

/* Moves a key version through its life; each transition is dated by the KMS (or by
 * fabricctl's record where the KMS keeps no dates: see docs/kms.md). */
int fctl_key_transition(const struct fctl_keyref *ref, enum fctl_key_transition t, char *err,
			size_t errlen);

const char *fctl_key_state_name(enum fctl_key_state s);      /* "pre-active", ... */
const char *fctl_key_date_name(enum fctl_key_date d);        /* "activation", ... */
const char *fctl_key_transition_name(enum fctl_key_transition t);

#endif
