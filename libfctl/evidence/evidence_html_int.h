/* SPDX-License-Identifier: MIT */
/* The auditor's report (report.html): its input, the records it reads, its plots. */
#ifndef FCTL_EVIDENCE_HTML_INT_H
#define FCTL_EVIDENCE_HTML_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/audit.h"
#include "fctl/evidence.h"
#include "fctl/util.h"

/* What the report is made of. files: the bundle's files so far; audit/slice.jsonl (the
 * records shown) and audit/checkpoint.txt (the checkpoint fabricctl checked) are read from
 * it. n_signers 0: no bundle (the report alone, fctl_evidence_report). Borrows everything. */
struct fctl_evidence_html_in {
	const struct fctl_evidence_opts *o;
	const struct fctl_evidence_file *files;
	size_t n_files;
	const char *since, *until;   /* the window in record time format; "" or NULL: open */
	const char (*signer_ids)[65]; /* SHA-256 of each signer's DER public key, hex */
	size_t n_signers;
	size_t n_statements;
	uint64_t log_records;         /* records of the log that verified */
	uint64_t log_files;           /* files of the log (0: not known) */
};

/*
 * Appends the report to out: one self-contained HTML page (inline CSS and SVG, no script,
 * nothing fetched), every string from a record escaped. The same input gives the same
 * bytes. Also appends them to o->html when that is set. 0, or -ENOMEM.
 */
int fctl_evidence_html(const struct fctl_evidence_html_in *in, struct fctl_buf *out);

/* --- between evidence_html.c and evidence_html_svg.c --- */

/* One record of the slice, as the report reads it (strings malloc'd, NULL when absent). */
struct ehrec {
	uint64_t seq;
	int64_t t_us; /* microseconds since the epoch; 0 when the time cannot be read */
	char *time, *action, *result, *host, *link, *secy, *change, *error, *detail, *key_state;
	char *pname;
	uint64_t pver;
	bool has_profile;
	bool manual; /* "manual":true: written by hand (audit append), not by the tool */
	char keyids[FCTL_AUDIT_MAX_KEYS][FCTL_AUDIT_KEYID_LEN + 1];
	size_t nk;
	char kcvs[FCTL_AUDIT_MAX_KEYS][FCTL_AUDIT_KCV_LEN + 1];
	size_t nkcv;
	char *approvers; /* the principals of "approvals", ", " between them; NULL for none */
};

/* A window of more records than this gets the compact page: the timeline in EH_BINS time
 * slices a lane instead of a mark a record, a summary of the changes instead of their rows,
 * and every record once, in one compact row (docs/audit.md "The report"). */
#define EH_COMPACT 200
#define EH_BINS 101

enum ehkind { EH_APPLY, EH_ROTATION, EH_KEYSTATE, EH_PROBE, EH_OTHER, EH_KINDS };

/* The lane and count a record goes to; a manual record is EH_OTHER, whatever its action. */
enum ehkind fctl_eh_kind(const struct ehrec *r);
/* "good", "bad", "warn" or "neutral": the colour class of a record's result; "manual" for a
 * manual record (never green: the tool did not do it) */
const char *fctl_eh_tone(const struct ehrec *r);
/* s with & < > " ' escaped ("-" for NULL); control characters become '?' */
void fctl_eh_esc(struct fctl_buf *b, const char *s);
/* A figure "key=NUMBER" of a probe record's detail (after its ": "): true and *v, or false
 * when the detail lacks it (or says null). */
bool fctl_eh_fig(const char *detail, const char *key, double *v);
/* A word "key=VALUE" of the detail into out (NUL-terminated); false when absent. */
bool fctl_eh_word(const char *detail, const char *key, char *out, size_t len);
/* The names of the ends a probe record has MACsec figures for ("WHO.macsec=..."), at most
 * max, each at most 63 characters. Returns how many. */
size_t fctl_eh_ends(const char *detail, char (*who)[64], size_t max);
/* The test name of a probe record: its detail before ": " into out. */
void fctl_eh_test_name(const struct ehrec *r, char *out, size_t len);

/* The key lifecycle and verification sections (evidence_html_keys.c). */
void fctl_eh_section_keys(struct fctl_buf *b, const struct ehrec *r, size_t n);
void fctl_eh_section_verify(struct fctl_buf *b, const struct fctl_evidence_html_in *in,
		       const struct ehrec *r, size_t n);

/* The plots, inline SVG appended to b. */
void fctl_eh_svg_timeline(struct fctl_buf *b, const struct ehrec *r, size_t n);
void fctl_eh_svg_latency(struct fctl_buf *b, const struct ehrec *r, size_t n);
/* The fabric probe's latency heatmap (probe-fabric records with a p99, hosts x hosts);
 * nothing when there is none. */
void fctl_eh_svg_heatmap(struct fctl_buf *b, const struct ehrec *r, size_t n);
void fctl_eh_svg_counters(struct fctl_buf *b, const struct ehrec *const *p, size_t n);

/* The strings of the JSON array field key of a record line ("key_ids", "kcv") into
 * out, an array of FCTL_AUDIT_MAX_KEYS rows of width + 1 chars (cut to width,
 * NUL-terminated); the number of strings. */
size_t fctl_evi_hex_list(const char *line, size_t len, const char *key, char *out, size_t width);
/* The next approval of a record's "approvals" array (its raw text v[vl]), read from *pos
 * on: "PRINCIPAL SHA256:KEYFP sha256:HEX" split at its last two spaces into principal,
 * fp and hex. 1 and *pos past it; 0 at the end; -EBADMSG for one not of that form. */
int fctl_evi_approval_next(const char *v, size_t vl, size_t *pos, char *principal,
			   size_t plen, char *fp, size_t fplen, char hex[65]);

#endif
