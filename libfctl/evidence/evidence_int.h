/* SPDX-License-Identifier: MIT */
/* Declarations shared by the evidence module's files (not for programs). */
#ifndef FCTL_EVIDENCE_INT_H
#define FCTL_EVIDENCE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/*
 * audit/proofs.json into out: the tree (size leaves of leaves[], the bundle checkpoint's),
 * first_seq and last_seq of the window (both 0: no window), "range" (null without a window):
 * first_index (first - 2, the leaf the first record's prev names, or 0 when the window
 * starts at seq 1), last_index (last - 1) and nodes, the range proof of those leaves
 * (fctl_audit_levels_range, lowercase hex), and "consistency" (per size of from[]: old_size,
 * tree_size, old_root, path: RFC 9162 PROOF). Returns 0, or a negative errno with the reason
 * in err (a window record past the checkpoint, a size out of range).
 */
int fctl_evidence_proofs(const uint8_t (*leaves)[32], uint64_t size, uint64_t first,
			 uint64_t last, const uint64_t *from, size_t nfrom, struct fctl_buf *out,
			 char *err, size_t errlen);

/* One mka-state or mka-restart record of the window, its fields borrowed. */
struct fctl_evi_mka_in {
	uint64_t seq;
	const char *time, *action, *host, *result;
	const char *detail; /* "port=IF ckn=HEX key_server=SCI ..." (the agent's, agentd_mka.c) */
	const char *kcv;    /* the CAK's check value, NULL: none */
};

/* mka/ports.json into out: one object per host and port (sorted), with the distinct CKNs,
 * check values and key servers of its records, its events in order, and the key server
 * and secured state of its last mka-state record (null when none). 0 or -ENOMEM. */
int fctl_evi_mka_json(const struct fctl_evi_mka_in *in, size_t n, struct fctl_buf *out);

#endif
