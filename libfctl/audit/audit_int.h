/* SPDX-License-Identifier: MIT */
/* The audit module's shared declarations: findings, notes, the anchors of verification. */
#ifndef FCTL_AUDIT_INT_H
#define FCTL_AUDIT_INT_H

#include "fctl/audit.h"

/* A file mapped for reading (p NULL and len 0 for an empty file). */
struct fctl_audit_map {
	const char *p;
	void *base;
	size_t len;
};

int fctl_audit_map(const char *path, struct fctl_audit_map *m);
void fctl_audit_unmap(struct fctl_audit_map *m);

/* Adds a finding (an error when k is above FCTL_AUDIT_WARNING). */
void fctl_audit_report_add(struct fctl_audit_report *r, enum fctl_audit_finding_kind k,
			   const char *file, uint64_t line, uint64_t offset, uint64_t seq,
			   const char *fmt, ...) FCTL_PRINTF(7, 8);

/* The body of a signed note (origin, size, root lines, each with its newline: *blen bytes)
 * and the checkpoint it states. -EINVAL when it is no checkpoint. */
int fctl_audit_note_parse(const char *note, size_t len, size_t *blen, char *origin, size_t on,
			  uint64_t *size, uint8_t root[32]);

/* What the verification found, for the anchors checked after the log was read. */
struct fctl_audit_seen {
	const uint8_t (*leaves)[32]; /* every record's leaf hash */
	uint64_t n;
	const char *pubkey_path;     /* the audit key used */
	const char *origin;          /* the origin expected */
};

/* The log extends the trusted checkpoint: its signature by the audit key, its origin, a
 * consistency proof from its size and root to the log's. */
void fctl_audit_check_trusted(const struct fctl_audit_verify_opts *o,
			      const struct fctl_audit_seen *s, struct fctl_audit_report *r);
/* Enough cosignatures by the pinned witnesses on a checkpoint of this log. */
void fctl_audit_check_witnesses(const struct fctl_audit_verify_opts *o,
				const struct fctl_audit_seen *s, struct fctl_audit_report *r);

/* The 4-byte key id of a signed note's key (C2SP signed-note): SHA-256(name || "\n" ||
 * alg || pub)[0..3]; alg 0x01 Ed25519 note signatures, 0x04 tlog cosignatures. */
void fctl_audit_keyid_alg(const char *name, uint8_t alg, const uint8_t pub[32], uint8_t id[4]);

#endif
