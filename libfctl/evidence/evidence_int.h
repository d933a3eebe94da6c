/* SPDX-License-Identifier: MIT */
/* Declarations shared by the evidence module's files (not for programs). */
#ifndef FCTL_EVIDENCE_INT_H
#define FCTL_EVIDENCE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/audit.h"
#include "fctl/evidence.h"
#include "fctl/util.h"

/* --- the bundle being built (evidence.c and the files of its steps) --- */

/* One record of the log, with the fields the bundle reads. */
struct rec {
	char *line;
	size_t len;
	uint64_t seq;
	char *time, *action, *host, *change, *result, *key_state, *detail;
	char *pname, *psha;
	uint64_t pver;
	bool has_profile;
	char keyids[FCTL_AUDIT_MAX_KEYS][FCTL_AUDIT_KEYID_LEN + 1];
	size_t nk;
	char kcvs[FCTL_AUDIT_MAX_KEYS][FCTL_AUDIT_KCV_LEN + 1];
	size_t nkcv;
	bool in_slice;
	bool manual; /* "manual":true: written by hand (audit append) */
};

struct prof {
	char *name, *sha;
	uint64_t version;
	char *file; /* name in the bundle, NULL when not found */
	struct fctl_buf data;
	char **srcs; /* every file found with these bytes (history copies, --profile files) */
	size_t nsrc, capsrc;
};

struct ev {
	const struct fctl_evidence_opts *o;
	char since[32], until[32];
	struct rec *r;
	size_t nr, capr;
	struct fctl_evidence_file *f;
	size_t nf, capf;
	struct prof *p;
	size_t np, capp;
	char signer_ids[16][65]; /* SHA-256 of each --sign key's DER public key, hex */
	size_t nstmt;            /* in-toto statements in attestations.intoto.jsonl */
	char origin[FCTL_AUDIT_ORIGIN_MAX]; /* the checkpoint's first line */
	size_t wfirst, wlast, nwin; /* the window: e->r[wfirst..wlast], nwin records (0: none) */
	/* the packet-number ledger the window anchors (pn/): its sa-ledger record */
	bool has_pn;
	uint64_t pn_seq;
	char pn_anchor[96]; /* that record's detail: "bytes=N sha256=HEX" */
	bool has_approvals; /* approvals/: the window's records name approvals */
	char *err;
	size_t errlen;
};

/* The SHA-256 of n bytes at p, lowercase hex. */
void fctl_evi_sha256_hex(const void *p, size_t n, char out[65]);
/* The reason into e->err; returns r. */
int fctl_evi_fail(struct ev *e, int r, const char *fmt, ...) FCTL_PRINTF(3, 4);
/* A file of the bundle; takes ownership of data. 0, or -ENOMEM (said). */
int fctl_evi_add_file(struct ev *e, const char *name, struct fctl_buf *data);
/* mka/ports.json, when the window has records of the agent's MKA supervision
 * (evidence_mka.c). */
int fctl_evi_add_mka(struct ev *e);
/* pn/sa-ledger and pn/ranges.json, when the window has sa-ledger records (evidence_pn.c):
 * e->has_pn and what the manifest says of them. 0, or a negative errno (said). */
int fctl_evi_add_pn(struct ev *e);
/* approvals/approvals.json, approvals/allowed_signers (o->allowed_signers) and the signature
 * files (approvals/HEX.sig) the selected records' "approvals" name, found beside the copies
 * of their profiles (evidence_approvals.c); nothing when no record names one. 0, or a
 * negative errno (said): -ENOENT a profile, signature or allowed_signers not found. */
int fctl_evi_add_approvals(struct ev *e);
/* The manifest's "approvals" member (null without approvals) into m. */
void fctl_evi_manifest_approvals(const struct ev *e, struct fctl_buf *m);
/* The manifest's "pn" member (null without a ledger) into m. */
void fctl_evi_manifest_pn(const struct ev *e, struct fctl_buf *m);

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

/* An sa-ledger record of the window: its seq and detail ("bytes=N sha256=HEX"), borrowed. */
struct fctl_evi_pn_anchor {
	uint64_t seq;
	const char *detail;
};

/* The ledger the window's n (at least one) sa-ledger records anchor: read from path, each
 * anchor a prefix of it (length and SHA-256), cut to the longest anchor (*top its index in
 * a) into ledger (the caller releases it). 0, or a negative errno with the reason in err:
 * -EBADMSG an anchor that is malformed or does not match (the file changed after it was
 * recorded), the read's errno when it cannot be read (path NULL: -ENOENT). */
int fctl_evi_pn_ledger(const struct fctl_evi_pn_anchor *a, size_t n, const char *path,
		       struct fctl_buf *ledger, size_t *top, char *err, size_t errlen);

/* pn/ranges.json of a ledger's bytes (whole lines after its head) into out: per key (its
 * ledger name, or "-" when known by KEYID only), KEYID, SCI and direction, in the order
 * their first event comes, the ranges of PNs used: "first" the PN an SA of it started at
 * (a live event), "next" the PN it was retired at (the first one not used); null where
 * not known (an SA still live or withheld: next; an SA first seen when it was retired:
 * first). A retirement with no open range that does not go past what the key reached
 * before adds nothing (no PN was used since). PNs as decimal strings (XPN's do not fit a
 * JSON number), ledger line numbers with each. 0, or -EBADMSG (err says which line) or
 * -ENOMEM. */
int fctl_evi_pn_ranges(const char *ledger, size_t len, struct fctl_buf *out, char *err,
		       size_t errlen);

#endif
