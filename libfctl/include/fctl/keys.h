/* SPDX-License-Identifier: MIT */
/*
 * Key sources. A key reference {backend, id, version} names a key; only the
 * bytes the kernel needs ever leave the backend, into a struct fctl_key that is
 * locked in memory (no swap, no core dump) and wiped on free.
 *
 * Backends now: "file" (development: a file of hex digits, mode 0600, relative
 * ids resolve against the profile's directory). The KMS backends (PKCS#11, KMIP)
 * plug in behind the same call.
 */
#ifndef FCTL_KEYS_H
#define FCTL_KEYS_H

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

#endif
