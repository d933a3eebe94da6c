/* SPDX-License-Identifier: MIT */
/*
 * Evidence bundles for auditors (docs/audit.md): one deterministic tar (sorted
 * entries, mtime 0, uid/gid 0, mode 0644) holding MANIFEST.json (every other file
 * with its SHA-256: the authority), its DSSE envelope with one Ed25519 signature per
 * signer, SHA256SUMS, in-toto v1 statements each in a DSSE envelope signed by every
 * signer (attestations.intoto.jsonl), the window of the audit log (the records from the
 * first to the last one of the time window or change) with an RFC 9162 inclusion proof of
 * each against the latest signed checkpoint (the whole log only on request), key metadata
 * (no key material), the profiles involved, VERIFY.md, verify.sh and report.html (the
 * auditor's report: one self-contained page, a reading aid). The same inputs give the
 * same bytes.
 */
#ifndef FCTL_EVIDENCE_H
#define FCTL_EVIDENCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/util.h"

#define FCTL_EVIDENCE_PAYLOAD_TYPE "application/vnd.fabricctl.evidence-manifest+json"
/* the in-toto statements: one DSSE envelope of this payload type a line, in this file */
#define FCTL_EVIDENCE_INTOTO_TYPE "application/vnd.in-toto+json"
#define FCTL_EVIDENCE_ATTESTATIONS "attestations.intoto.jsonl"
/* the auditor's report: one self-contained HTML page (no script, nothing fetched) */
#define FCTL_EVIDENCE_REPORT "report.html"

struct fctl_evidence_opts {
	const char *log_path;        /* the audit log */
	const char *checkpoint_path; /* NULL: LOG.checkpoints */
	const char *pubkey_path;     /* audit public key; NULL: audit.pub beside the log */
	const char *since, *until;   /* record times as fctl_audit_parse_time gives; NULL: open */
	const char *change_id;       /* NULL: any */
	const char *const *sign_keys; /* Ed25519 private keys (PEM); at least one */
	size_t n_sign_keys;
	const char *const *profiles;  /* profile files to look in, besides the history */
	size_t n_profiles;
	const char *history_dir;      /* NULL: /var/lib/fabricctl/history */
	/* the host's packet-number ledger (STATE_DIR/sa-ledger), read when the window has
	 * sa-ledger records: it must match them (docs/audit.md); NULL: none given */
	const char *ledger_path;
	/* the allowed_signers file the window's approvals were checked against (docs/
	 * approvals.md), carried when a selected record names approvals; NULL: none given */
	const char *allowed_signers;
	const char *operator_name;    /* NULL: the local user */
	const char *tool_version;
	struct fctl_buf *html;        /* not NULL: report.html's bytes appended here too */
	bool whole_log;               /* also audit/log.jsonl, every record of the log */
	bool allow_empty;             /* a window without records is no error (-ENODATA) */
	const uint64_t *consistency_from; /* sizes to prove the checkpoint consistent from */
	size_t n_consistency_from;
};

/* What the -ENODATA reason adds: why a window can be empty, and how to ask for one. */
#define FCTL_EVIDENCE_EMPTY_HINT                                                              \
	" (no record matches --since, --until and --change); nothing written "              \
	"(--allow-empty writes a bundle without records)"

/* One file of a tar. */
struct fctl_evidence_file {
	char *name;
	char *data;
	size_t len;
};

/* ustar bytes of files (sorted by name here), each mode 0644, mtime 0, owner root. */
int fctl_evidence_tar(struct fctl_evidence_file *files, size_t n, struct fctl_buf *out);

/* Builds the bundle into out. Returns 0, or a negative errno with the reason in err:
 * -EBADMSG the log does not verify, -ENODATA no record is selected (unless allow_empty). */
int fctl_evidence_build(const struct fctl_evidence_opts *o, struct fctl_buf *out, char *err,
			size_t errlen);

/* The report alone, without a bundle and without signing (o->sign_keys unused): the log
 * must verify as for a bundle; the records of the window and/or change make the page
 * report.html would be (its verification section says nothing signs it). Appends it to out.
 * Returns 0, or a negative errno (-EBADMSG: the log does not verify; -ENODATA: no record
 * is selected, unless allow_empty) with the reason in err. */
int fctl_evidence_report(const struct fctl_evidence_opts *o, struct fctl_buf *out, char *err,
			 size_t errlen);

extern const char fctl_evidence_verify_sh[];
extern const char fctl_evidence_verify_md[];

#endif
