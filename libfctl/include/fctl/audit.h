/* SPDX-License-Identifier: MIT */
/*
 * Tamper-evident audit log (docs/audit.md).
 *
 * One JSON object a line. Each record carries in "prev" the RFC 6962 leaf hash,
 * SHA-256(0x00 || bytes), of the previous record's exact bytes (without its
 * newline); the first record of a log carries 64 zeros. The same leaf hashes
 * form an RFC 6962 Merkle tree over every record of the log, across rotated
 * files. Signed checkpoints (C2SP signed-note text: origin, size, base64 root,
 * blank line, "— name base64(keyid || Ed25519 signature)") go to a separate file.
 *
 * Writers serialize on an flock of LOG.lock, re-read what other writers appended
 * before they write, and write a batch of records with one write() and one
 * fdatasync() (group commit). A record is durable once fctl_audit_sync() returned.
 *
 * Keys never reach the log: the only key fields are key check values (6 hex
 * digits, 24 bits) and key ids (16 hex digits: the first 8 bytes of the KEYID
 * hash, 64 bits); both are shorter than any key, and anything else is refused.
 */
#ifndef FCTL_AUDIT_H
#define FCTL_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fctl/util.h"

#define FCTL_AUDIT_DIR "/var/lib/fabricctl/audit"
#define FCTL_AUDIT_LOG FCTL_AUDIT_DIR "/audit.log"
#define FCTL_AUDIT_ORIGIN_LEGACY "fabricctl-audit" /* the one origin of logs before v2 */
#define FCTL_AUDIT_ORIGIN_MAX 512
#define FCTL_AUDIT_TIME_SKEW_US (300LL * 1000000) /* time may step back this much */
#define FCTL_AUDIT_PROOF_MAX 130 /* hashes in a proof, at most */
#define FCTL_AUDIT_KCV_LEN 6     /* hex digits */
#define FCTL_AUDIT_KEYID_LEN 16  /* hex digits */
#define FCTL_AUDIT_MAX_KEYS 64   /* key ids / KCVs per record */

/* --- hashes and the Merkle tree (RFC 6962) --- */

/* SHA-256(0x00 || rec) */
void fctl_audit_leaf_hash(const void *rec, size_t len, uint8_t out[32]);
/* SHA-256(0x01 || left || right) */
void fctl_audit_node_hash(const uint8_t left[32], const uint8_t right[32], uint8_t out[32]);
/* The compact range of a growing tree: one hash per set bit of size. */
struct fctl_audit_tree {
	uint64_t size;
	unsigned int n;
	uint8_t stack[64][32];
};

void fctl_audit_tree_init(struct fctl_audit_tree *t);
void fctl_audit_tree_push(struct fctl_audit_tree *t, const uint8_t leaf[32]);
/* Root of the tree so far; the root of the empty tree is SHA-256(""). */
void fctl_audit_tree_root(const struct fctl_audit_tree *t, uint8_t root[32]);

/* --- records --- */

/*
 * The canonical record (docs/audit.md "Canonical form"): the writer's serialization is
 * the only one accepted. fctl_audit_json_str writes a string the writer's way (\" \\ \n
 * \t \r, \u00xx lowercase for the other control characters and DEL, all else raw; a
 * byte that is not part of well-formed UTF-8 becomes U+FFFD).
 */
int fctl_audit_json_str(struct fctl_buf *b, const char *s);

struct fctl_audit_record {
	uint64_t seq;
	uint8_t prev[32];
	int64_t time_us; /* microseconds since the epoch */
	bool manual;     /* "manual":true: written by hand (audit append), not by the tool */
};

/* 0 when the line (without its newline) is a record in the canonical form, filling rec
 * (may be NULL); -EINVAL with "byte N: reason" in why otherwise. */
int fctl_audit_record_check(const char *line, size_t len, struct fctl_audit_record *rec,
			    char *why, size_t whylen);

struct fctl_audit_entry {
	bool manual;              /* written by hand (audit append): the record says
				   * "manual":true, and its action must be one the tool never
				   * writes (fctl_audit_manual_action_check) */
	const char *action;       /* required: apply, rollback, recover, drift, key-state, ... */
	const char *result;       /* required: applied, unchanged, rolled-back, failed, ... */
	const char *actor_cert;   /* a client certificate subject; NULL: a local user */
	bool has_actor_uid;       /* the socket peer's uid (SO_PEERCRED); else getuid() */
	uid_t actor_uid;
	const char *change_id;    /* change ticket, NULL: none */
	const char *host;         /* subject */
	const char *link;
	const char *secy;
	const char *profile_name; /* NULL: no profile */
	uint64_t profile_version;
	const char *profile_sha256; /* 64 hex digits */
	bool has_counts;
	uint64_t ops;
	uint64_t writes;
	const char *error;
	const char *detail;
	const char *const *key_ids; /* FCTL_AUDIT_KEYID_LEN hex digits each */
	size_t n_key_ids;
	const char *const *kcvs;    /* FCTL_AUDIT_KCV_LEN hex digits each */
	size_t n_kcvs;
	const char *key_state;      /* key-state records: pending, active, retired, destroyed */
	const char *const *approvals; /* the approvals an apply met (docs/approvals.md): each
				       * "PRINCIPAL SHA256:KEYFP sha256:SIGDIGEST", printable,
				       * no quote or backslash; at most FCTL_AUDIT_MAX_KEYS */
	size_t n_approvals;
};

/* True when fabricctl's own programs write records of this action (apply, probe, the
 * agent's requests, key-* and mka-* among them): a record written by hand may not take it. */
bool fctl_audit_action_is_tool(const char *action);
/* The action of a manual record: lowercase letters, digits and '-', starting with a letter,
 * at most 48 characters, and not one of the tool's own (fctl_audit_action_is_tool).
 * -EINVAL with the reason (the name quoted) in err otherwise. */
int fctl_audit_manual_action_check(const char *action, char *err, size_t errlen);

/* The head every record line starts with: {"seq":N,"prev":"64 hex", (and ends with '}').
 * -EINVAL for anything else. */
int fctl_audit_parse_head(const char *line, size_t len, uint64_t *seq, uint8_t prev[32]);

/* Checks the entry (required fields, hex fields of the exact length, a manual entry's
 * action); -EINVAL with a reason in err otherwise. */
int fctl_audit_entry_check(const struct fctl_audit_entry *e, char *err, size_t errlen);

/* --- the writer --- */

/* Who a record names when its entry names no one (no actor_cert, no has_actor_uid). */
struct fctl_audit_actor {
	const char *cert; /* a client certificate subject; NULL: a local user */
	bool has_uid;     /* that user's uid; else getuid() */
	uid_t uid;
};

struct fctl_audit_opts {
	const char *log_path;        /* NULL: FCTL_AUDIT_LOG */
	const char *checkpoint_path; /* NULL: LOG.checkpoints */
	const char *key_path;        /* Ed25519 private key (PEM); NULL: no checkpoints */
	const char *origin;          /* NULL: fctl_audit_origin(log_path) */
	unsigned int checkpoint_every; /* also sign after this many records; 0: only at close */
	unsigned int batch;          /* records per group commit (auto sync); 0: 256 */
	uint64_t rotate_bytes;       /* start a new file beyond this size; 0: never */
	bool syslog;                 /* send each checkpoint to syslog (LOG_AUTHPRIV) */
	struct fctl_audit_actor actor; /* unset: getuid() */
};

struct fctl_audit;

/* Opens (creating) the log, reads it to its end (seq, last hash, tree). A torn last
 * line left by a crashed writer is terminated and a log-repair record names it. */
int fctl_audit_open(const struct fctl_audit_opts *o, struct fctl_audit **out, char *err,
		    size_t errlen);
/* Queues one record (written at the next sync, or now if the batch is full). */
int fctl_audit_append(struct fctl_audit *a, const struct fctl_audit_entry *e);
/* Writes the queued records under the lock, one write() + one fdatasync(). */
int fctl_audit_sync(struct fctl_audit *a);
/* Syncs and writes a signed checkpoint of the whole log now (key rotation commit). */
int fctl_audit_checkpoint(struct fctl_audit *a);
/* Syncs and moves the active file aside as LOG.NNNNNN; the chain continues. */
int fctl_audit_rotate(struct fctl_audit *a);
uint64_t fctl_audit_size(const struct fctl_audit *a); /* records in the log */
const char *fctl_audit_error(const struct fctl_audit *a); /* last error text */
/* Syncs, writes a checkpoint if records were added, closes. Accepts NULL. Returns the
 * first error of the sync or checkpoint (the object is freed in every case). */
int fctl_audit_close(struct fctl_audit *a);

/* --- the open policy: how every program opens the log --- */

/* The log a program writes: opt when given, else $FCTL_AUDIT_LOG when env, else
 * FCTL_AUDIT_LOG. Not copied: the result is opt, the environment's or a constant. */
const char *fctl_audit_log_path(const char *opt, bool env);
/* DIR/name in the directory of the log (name alone for a log without a '/'); malloc'd,
 * NULL when out of memory. The key pair is audit.key and audit.pub beside the log. */
char *fctl_audit_beside(const char *log, const char *name);

struct fctl_audit_policy {
	const char *log_path;   /* the program's option; NULL or "": see fctl_audit_log_path */
	bool env;               /* also $FCTL_AUDIT_LOG, $FCTL_AUDIT_CHECKPOINT_EVERY (when
				 * checkpoint_every is 0) and $FCTL_AUDIT_SYSLOG=1 */
	const char *key_path;   /* the checkpoint key, used as given; NULL: audit.key beside
				 * the log, when it exists */
	bool create_key;        /* NULL key_path: on first use make the pair beside the log
				 * (fctl_audit_keygen; the log's directories mode 0750) */
	const char *checkpoint_path; /* as in fctl_audit_opts */
	const char *origin;
	unsigned int checkpoint_every;
	unsigned int batch;
	uint64_t rotate_bytes;
	bool syslog;
	struct fctl_audit_actor actor; /* who the records name when an entry names no one */
};

#define FCTL_AUDIT_KEY_CREATED 0x1 /* the key pair beside the log was made now */
#define FCTL_AUDIT_UNSIGNED 0x2    /* no checkpoint key: records chained but not signed */

/*
 * Opens the log the policy names, with the checkpoint key it names. A key that cannot
 * be made (no directory, no permission) is no failure: the writer then chains records
 * without signing (FCTL_AUDIT_UNSIGNED). A log that cannot be opened for writing is:
 * negative errno and the reason in err. On success returns the FCTL_AUDIT_* flags
 * (>= 0) and, when they are not 0, a notice for the user in err (paths, never keys).
 */
int fctl_audit_open_policy(const struct fctl_audit_policy *p, struct fctl_audit **out,
			   char *err, size_t errlen);

/* The uid of a unix socket's peer. */
int fctl_audit_peer_uid(int fd, uid_t *uid);

/* --- keys and checkpoints --- */

/* The origin line of a log's checkpoints: this host's name and the log's absolute path
 * (its directory resolved), "gpu01/var/lib/fabricctl/audit/audit.log", with space, '%',
 * '+' and bytes outside printable ASCII written %XX. -ENAMETOOLONG beyond n. */
int fctl_audit_origin(const char *log_path, char *out, size_t n);

/* Writes DIR/audit.key (PKCS#8 PEM, mode 0600) and DIR/audit.pub (PEM). Refuses to
 * overwrite. */
int fctl_audit_keygen(const char *dir, char *err, size_t errlen);

/* Signed-note text of a checkpoint for (size, root), signed with the key at key_path. */
int fctl_audit_checkpoint_sign(const char *key_path, const char *origin, uint64_t size,
			       const uint8_t root[32], struct fctl_buf *out, char *err,
			       size_t errlen);

/* One note of a checkpoints file. */
struct fctl_audit_checkpoint {
	uint64_t line;        /* first line of the note in the file */
	uint64_t size;
	uint8_t root[32];
	char origin[FCTL_AUDIT_ORIGIN_MAX];
	int sig;              /* 1 good signature by the key, 0 none by it, -1 bad, -2 malformed */
	char why[256];        /* for sig <= 0 */
};

/* Parses every note of a checkpoints file and checks its signatures against the public
 * key (PEM). -ENOENT when the file does not exist. */
int fctl_audit_checkpoints_load(const char *path, const char *pubkey_path,
				struct fctl_audit_checkpoint **out, size_t *n, char *err,
				size_t errlen);

/* Ed25519 and base64 helpers (also used by evidence bundles). */
int fctl_audit_b64_encode(const void *p, size_t n, struct fctl_buf *out);
/* Strict: padding required, no whitespace. Returns the decoded length. */
int fctl_audit_b64_decode(const char *s, size_t len, uint8_t *out, size_t cap);
/* Signs msg with the Ed25519 private key (PEM file); pub (32 bytes) may be NULL. */
int fctl_audit_ed25519_sign(const char *key_path, const void *msg, size_t len, uint8_t sig[64],
			    uint8_t pub[32], char *err, size_t errlen);
/* Raw 32-byte public key from a PEM public (or private) key file. */
int fctl_audit_ed25519_pub(const char *path, uint8_t pub[32], char *err, size_t errlen);
/* 1 valid, 0 invalid, < 0 error. */
int fctl_audit_ed25519_verify(const uint8_t pub[32], const void *msg, size_t len,
			      const uint8_t sig[64]);
/* C2SP note key id: SHA-256(name || "\n" || 0x01 || pub)[0..3]. */
void fctl_audit_note_keyid(const char *name, const uint8_t pub[32], uint8_t id[4]);

/* --- verification --- */

enum fctl_audit_finding_kind {
	FCTL_AUDIT_OK_NOTE,       /* information, not a failure */
	FCTL_AUDIT_WARNING,       /* holds, but look (repaired torn write, unsigned tail) */
	FCTL_AUDIT_MODIFIED,
	FCTL_AUDIT_DELETED,
	FCTL_AUDIT_REORDERED,
	FCTL_AUDIT_TRUNCATED,     /* fewer records than the latest checkpoint */
	FCTL_AUDIT_TORN,          /* the last line has no newline: a writer died mid-append */
	FCTL_AUDIT_MALFORMED,
	FCTL_AUDIT_BAD_SIGNATURE,
	FCTL_AUDIT_NO_SIGNATURE,
	FCTL_AUDIT_ROOT_MISMATCH,
	FCTL_AUDIT_IO,
	FCTL_AUDIT_NONCANONICAL,  /* a record not in the canonical form */
	FCTL_AUDIT_TIME,          /* time went backwards by more than the tolerance */
	FCTL_AUDIT_UNSIGNED_TAIL, /* records past the latest signed checkpoint */
	FCTL_AUDIT_WRONG_ORIGIN,  /* a checkpoint of another log */
	FCTL_AUDIT_INCONSISTENT,  /* the log does not extend the trusted checkpoint */
	FCTL_AUDIT_WITNESS,       /* fewer cosignatures than required */
};

const char *fctl_audit_finding_name(enum fctl_audit_finding_kind k);

struct fctl_audit_finding {
	enum fctl_audit_finding_kind kind;
	char file[512];
	uint64_t line;   /* 0: not about one line */
	uint64_t offset; /* byte offset of the line in file */
	uint64_t seq;
	char msg[512];
};

struct fctl_audit_report {
	uint64_t records;
	uint64_t files;
	uint64_t bytes;
	uint64_t checkpoints;
	uint64_t checkpoint_size; /* size of the latest valid checkpoint */
	uint8_t root[32];         /* of all records */
	uint64_t unsigned_records; /* past the latest signed (and witnessed) checkpoint */
	const char *anchor;       /* "pubkey", "trusted-checkpoint", "self-consistency-only" */
	uint64_t trusted_size;    /* size of the trusted checkpoint, 0: none */
	uint64_t witnessed_size;  /* largest size with enough cosignatures, 0: none */
	char origin[FCTL_AUDIT_ORIGIN_MAX]; /* the origin checked */
	struct fctl_audit_finding *f;
	size_t n, cap;
	size_t n_errors;
};

/* The finding that says why a report fails: the first that an input could not be read
 * (FCTL_AUDIT_IO), else the first error; r->n when there is none. */
size_t fctl_audit_report_first_error(const struct fctl_audit_report *r);
void fctl_audit_report_release(struct fctl_audit_report *r);
int fctl_audit_report_json(const struct fctl_audit_report *r, struct fctl_buf *out);

struct fctl_audit_verify_opts {
	const char *log_path;
	const char *checkpoint_path;    /* NULL: LOG.checkpoints */
	const char *pubkey_path;        /* the pinned audit key; NULL: audit.pub beside the log */
	const char *trusted_checkpoint; /* a note an auditor kept: the log must extend it */
	const char *origin;             /* expected origin; NULL: fctl_audit_origin(log) */
	bool any_origin;                /* origin NULL: accept one origin, whatever it is */
	bool allow_unsigned_tail;       /* records past the latest checkpoint: a warning */
	const char *const *witness_pubs; /* pinned witness keys (PEM) */
	size_t n_witness_pubs;
	unsigned int witnesses;         /* cosignatures required (by distinct pinned keys) */
	const char *cosignatures_path;  /* NULL: LOG.cosignatures */
	int64_t time_skew_us;           /* 0: FCTL_AUDIT_TIME_SKEW_US; < 0: time unchecked */
};

/* Verifies the log (all files): every record canonical, the chain (seq from 1 by one,
 * prev), the time rule, the signed checkpoints of the right origin, the tail covered, the
 * trusted checkpoint extended (a consistency proof), the cosignatures required. Returns 0
 * when the verification ran (r->n_errors says whether it holds), negative errno when
 * the log could not be read at all. */
int fctl_audit_verify_with(const struct fctl_audit_verify_opts *o, struct fctl_audit_report *r);
/* fctl_audit_verify_with with the public key given, any one origin, no unsigned tail. */
int fctl_audit_verify(const char *log_path, const char *checkpoint_path, const char *pubkey_path,
		      struct fctl_audit_report *r);

/* --- proofs (RFC 9162 section 2.1) over the leaf hashes of the records --- */

/* The leaf hashes of every record of the log, in order (*leaves malloc'd). */
int fctl_audit_leaves(const char *log_path, uint8_t (**leaves)[32], uint64_t *n);
/* MTH of leaves[0..n) (SHA-256 of nothing for n = 0). */
void fctl_audit_mth(const uint8_t (*leaves)[32], uint64_t n, uint8_t root[32]);
/* PATH(index, D[n]): -EINVAL unless index < n. */
int fctl_audit_inclusion_proof(const uint8_t (*leaves)[32], uint64_t n, uint64_t index,
			       uint8_t (*path)[32], size_t *plen);
/* PROOF(m, D[n]): -EINVAL unless 0 < m <= n (m = n: the empty proof). */
int fctl_audit_consistency_proof(const uint8_t (*leaves)[32], uint64_t n, uint64_t m,
				 uint8_t (*path)[32], size_t *plen);
/*
 * Every level of the tree of n leaves, for many inclusion proofs against one tree: level 0
 * is the leaves (borrowed), level k+1 pairs level k's nodes left to right, an odd last node
 * carried up unchanged (the RFC 9162 tree). fctl_audit_levels_path() is then PATH(index,
 * D[n]) in O(log n), the same hashes in the same order as fctl_audit_inclusion_proof().
 * Owns the upper levels (about n hashes); release with fctl_audit_levels_release (NULL ok).
 */
struct fctl_audit_levels {
	const uint8_t (*lv[FCTL_AUDIT_PROOF_MAX + 1])[32];
	uint64_t len[FCTL_AUDIT_PROOF_MAX + 1];
	size_t n; /* levels, the root's included */
};
int fctl_audit_levels_build(const uint8_t (*leaves)[32], uint64_t n, struct fctl_audit_levels *t);
int fctl_audit_levels_path(const struct fctl_audit_levels *t, uint64_t index, uint8_t (*path)[32],
			   size_t *plen);
void fctl_audit_levels_release(struct fctl_audit_levels *t);
/*
 * A range proof: the hashes that, with the leaves lo..hi (inclusive) of the tree t, give its
 * root and nothing else: level by level from the leaves, the left neighbour of the range
 * when its first node is a right child, then the right neighbour when its last node is a
 * left child that has one (an odd last node goes up as it is). At most 2 per level, so
 * FCTL_AUDIT_PROOF_MAX is room enough. Returns the number of hashes, or -EINVAL unless
 * lo <= hi < the tree's size.
 */
int fctl_audit_levels_range(const struct fctl_audit_levels *t, uint64_t lo, uint64_t hi,
			    uint8_t (*nodes)[32]);
/* Checks a range proof: 1 when leaves[0..hi-lo] (the leaf hashes lo..hi of a tree of size
 * leaves) and nodes[0..nn-1], every one used, give root; 0 when not; -ENOMEM. */
int fctl_audit_range_check(uint64_t size, uint64_t lo, uint64_t hi, const uint8_t (*leaves)[32],
			   const uint8_t (*nodes)[32], size_t nn, const uint8_t root[32]);
/* The verification algorithms of RFC 9162 2.1.3.2 and 2.1.4.2: 1 holds, 0 does not. */
int fctl_audit_inclusion_check(uint64_t index, uint64_t size, const uint8_t leaf[32],
			       const uint8_t (*path)[32], size_t plen, const uint8_t root[32]);
int fctl_audit_consistency_check(uint64_t m, uint64_t n, const uint8_t old_root[32],
				 const uint8_t root[32], const uint8_t (*path)[32], size_t plen);

/* --- witnesses (C2SP tlog-witness, tlog-cosignature/v1 Ed25519) --- */

/* C2SP cosignature key id: SHA-256(name || "\n" || 0x04 || pub)[0..3]. */
void fctl_audit_cosig_keyid(const char *name, const uint8_t pub[32], uint8_t id[4]);
/* 1 when the signature line "— name base64" (without its newline) is a valid
 * cosignature/v1 by pub over the note body (origin, size, root lines with newlines);
 * 0 when it is not (or another key's); the cosigning time in *ts. */
int fctl_audit_cosig_check(const uint8_t pub[32], const char *line, size_t len,
			   const char *body, size_t blen, uint64_t *ts);

struct fctl_audit_witness_req {
	const char *key_path;   /* the witness's Ed25519 private key */
	const char *name;       /* the witness's key name */
	const char *state_path; /* the witness's state: the log's key, last size and root */
	const char *log_pub;    /* the log's public key; NULL: the one pinned in the state */
	const char *note;       /* the checkpoint (signed note text) */
	size_t note_len;
	/* the consistency proof from the state's size to the note's (none from 0) */
	uint64_t old_size, new_size;
	const uint8_t (*path)[32];
	size_t plen;
};

/* Checks the note's signature by the log key, that its origin is the state's, that it
 * does not go back, and the consistency proof from the last cosigned (size, root); then
 * cosigns: the note with the witness's signature line added in out, the state replaced.
 * -EINVAL (or -ESTALE: an older or conflicting checkpoint) with the reason in err. */
int fctl_audit_witness_cosign(const struct fctl_audit_witness_req *q, struct fctl_buf *out,
			      char *err, size_t errlen);

/* --- reading --- */

/* The files of a log, oldest first: LOG.000001, LOG.000002, ..., LOG. */
int fctl_audit_files(const char *log_path, char ***files, size_t *n);
void fctl_audit_files_free(char **files, size_t n);

/* Calls fn for every complete record line of the log, oldest first (line without its
 * newline, not NUL-terminated). fn returns < 0 to stop with that error. */
int fctl_audit_read(const char *log_path,
		    int (*fn)(void *ctx, const char *line, size_t len), void *ctx);

/* Top-level field of a record: a string's unescaped value (*out malloc'd) or, for
 * other values, their JSON text. -ENOENT when absent. */
int fctl_audit_field(const char *line, size_t len, const char *key, char **out);
/* The raw JSON text of a top-level field (not copied). */
int fctl_audit_field_raw(const char *line, size_t len, const char *key, const char **v,
			 size_t *vlen);

/* "2024-05-01", "2024-05-01T12:00:00Z", RFC 3339 with offset, or an epoch "@N" -> the
 * record time format "YYYY-MM-DDTHH:MM:SS.uuuuuuZ" for comparison. */
int fctl_audit_parse_time(const char *s, char out[32]);

/* The latest checkpoint note in a checkpoints file (text), or -ENOENT. */
int fctl_audit_latest_checkpoint(const char *checkpoint_path, struct fctl_buf *out,
				 uint64_t *size);

#endif
