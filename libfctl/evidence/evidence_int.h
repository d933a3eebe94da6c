/* SPDX-License-Identifier: MIT */
/* Declarations shared by the evidence module's files (not for programs). */
#ifndef FCTL_EVIDENCE_INT_H
#define FCTL_EVIDENCE_INT_H

#include <stddef.h>

#include "fctl/util.h"

/*
 * Appends one DSSE envelope (https://github.com/secure-systems-lab/dsse, protocol v1) as
 * compact JSON without a newline to env: {"payloadType":TYPE,"payload":base64(payload),
 * "signatures":[{"keyid":KEYID,"sig":base64(Ed25519 signature)}...]}, one signature per key of
 * keys (Ed25519 private keys, PEM files) over PAE(TYPE, payload) = "DSSEv1" SP len(TYPE) SP
 * TYPE SP len(payload) SP payload, lengths as decimal byte counts. keyids[i] (64 hex digits:
 * the SHA-256 of the DER SubjectPublicKeyInfo of keys[i]'s public key) names each signature.
 * Borrows everything. Returns 0, or a negative errno with the reason in err.
 */
int fctl_evidence_dsse(const char *type, const void *payload, size_t len,
		       const char *const *keys, const char (*keyids)[65], size_t nkeys,
		       struct fctl_buf *env, char *err, size_t errlen);

#endif
