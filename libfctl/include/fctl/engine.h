/* SPDX-License-Identifier: MIT */
/*
 * The apply engine: takes one host from its live state to the state a profile
 * describes, all or nothing.
 *
 *   1. lock the state directory (one apply at a time per host / netns);
 *   2. finish any apply that a crash interrupted (journal without a commit):
 *      the host goes back to the state recorded before that apply;
 *   3. read live state (only links the profile or the last applied profile
 *      manage), plan live -> desired, fetch every key the plan needs;
 *   4. write the journal: the prior state (with key references, never keys) and
 *      the plan, fsync;
 *   5. execute; on any failure, plan live -> prior state and execute that, then
 *      check that a fresh dump equals the prior state;
 *   6. verify: a fresh dump must plan to zero operations against the profile;
 *   7. record the applied profile in the history (for rollback --to), commit.
 *
 * Test hooks (documented in docs/apply.md), only in builds configured with
 * -DFCTL_TEST_HOOKS=ON: FCTL_TEST_FAIL_AT_OP=N fails op N (0-based) before it is
 * sent; FCTL_TEST_CRASH_AFTER_OP=N kills the process with SIGKILL after op N.
 */
#ifndef FCTL_ENGINE_H
#define FCTL_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "fctl/plan.h"
#include "fctl/profile.h"
#include "fctl/sa_ledger.h"

#define FCTL_APPLY_MAX_KCVS 64

struct fctl_nl_err;
struct fctl_dcb;
struct fctl_nl_stats;

/*
 * The kernel under the engine: exactly the netlink calls it makes, as a table.
 * fctl_engine_nl_ops is the real one, built on fctl_nl (fctl/nl.h); a test puts
 * an in-memory kernel behind a table of its own. Every kernel write of fabricctl goes
 * through a table like this, reached through the engine's kernel session
 * (fctl/engine_kernel.h): an apply's and the others'. Each entry keeps the contract
 * of the fctl_nl function it stands for (int >= 0 or a negative errno, outputs
 * written only on success); sess is what open returned.
 */
struct fctl_engine_ops {
	/* fctl_nl_open: a session in netns (NULL: the current one); ctx is opts->ops_ctx */
	int (*open)(void *ctx, const char *netns, void **sess);
	/* fctl_nl_close; never called with NULL */
	void (*close)(void *sess);
	/* fctl_nl_read_state: the live VLAN/MACsec links (names: only those and their uppers) */
	int (*read_state)(void *sess, const char *host, const char *const *names, size_t n_names,
			  struct fctl_host_state **out);
	/* fctl_nl_exec: one plan op; key/key_len for TXSA_ADD and RXSA_ADD, else NULL/0 */
	int (*exec)(void *sess, const struct fctl_op *op, const uint8_t *key, size_t key_len,
		    struct fctl_nl_err *err);
	/* fctl_nl_exec_batch: ops[0..n) pipelined, each handled by the kernel whether or not
	 * one before it failed; rc[i] 0, a negative errno (errs[i]) or FCTL_NL_NOT_RUN.
	 * NULL: the engine runs them through exec one by one */
	int (*exec_batch)(void *sess, const struct fctl_op *const *ops, const uint8_t *const *keys,
			  const size_t *key_lens, size_t n, int *rc, struct fctl_nl_err *errs);
	/* fctl_nl_get_stats: requests since open */
	void (*get_stats)(const void *sess, struct fctl_nl_stats *out);
	/* fctl_nl_link_exists: 1 when a link of that name exists, 0 when none does; NULL: not
	 * asked (every parent is taken to exist) */
	int (*link_exists)(void *sess, const char *name);
	/* fctl_nl_neigh_copy (MKA's CAK rotation, fctl/engine_kernel.h); NULL: -EOPNOTSUPP */
	int (*neigh_copy)(void *sess, const char *from, const char *to, const uint8_t (*macs)[6],
			  size_t n_macs, struct fctl_nl_err *err);
	/* fctl_nl_dcb_get: a port's DCB (read only; -EOPNOTSUPP: none); NULL: not asked */
	int (*dcb_get)(void *sess, const char *port, struct fctl_dcb *out);
};

/* What a saved plan (plan --out, apply --plan; docs/cli.md "Saved plans") binds beside
 * the profile's bytes and the host: the SHA-256 of the live state it was computed against
 * (the managed links as read, and whether the parents of the links it creates exist) and
 * the SHA-256 of its operations (fctl_plan_digest). */
struct fctl_plan_seal {
	uint8_t live_sha256[32];
	uint8_t plan_sha256[32];
};

extern const struct fctl_engine_ops fctl_engine_nl_ops;

struct fctl_engine_opts {
	const char *netns;     /* NULL: current network namespace */
	const char *state_dir; /* NULL: FCTL_STATE_DIR (+ "/netns/NAME" with a netns) */
	const char *host;      /* profile host to apply; NULL: this machine's hostname */
	bool dry_run;          /* plan only */
	/* fabricctl-keymgr: the engine asks it for the keys of KMS references (pkcs11,
	 * kmip), never a KMS itself (fctl/keysrc.h); NULL: such references fail */
	const char *keymgr_path;
	/* called before each op is sent (done = ops finished so far) */
	void (*progress)(void *ctx, const char *phase, size_t done, size_t total,
			 const struct fctl_op *op);
	void *progress_ctx;
	const struct fctl_engine_ops *ops; /* NULL: fctl_engine_nl_ops */
	void *ops_ctx;                     /* passed to ops->open */
	/* apply only: > 0 makes it a confirmed apply (below): unless fctl_engine_confirm()
	 * comes within this many seconds, the host goes back to the version before */
	uint64_t confirm_seconds;
	const char *confirm_id; /* names the pending confirmation (the watchdog's); may be NULL */
	/* apply only: the profile's desired state for this host, already rendered (the
	 * desired-state cache, fctl_engine_desired_load); NULL: rendered from the profile.
	 * Borrowed, and changed: the engine lays the rotation records over it as over a fresh
	 * render (so it serves one apply only); the live state is read as always. */
	struct fctl_host_state *desired;
	/* apply only (apply --plan FILE): after the plan is computed under the lock and before
	 * anything is written, an apply whose live state or plan is not the sealed one is
	 * refused: -ESTALE, res->refused, res->error saying which changed. NULL: no seal. */
	const struct fctl_plan_seal *expect;
};

struct fctl_apply_result {
	char host[64];
	struct fctl_plan *plan;  /* the plan executed (or that would be) */
	size_t ops_done;         /* of plan */
	uint64_t writes;         /* netlink requests that changed something */
	uint64_t round_trips;    /* all netlink requests */
	bool recovered;          /* an interrupted apply was rolled back first */
	bool failed;
	bool refused;            /* failed before anything was written (bad key, no host, ...) */
	long failed_op;          /* index into plan, -1 when the failure was elsewhere */
	bool rolled_back;        /* the host was returned to its prior state */
	bool restored_exactly;   /* and a fresh dump equals the prior state */
	char error[768];         /* one line, with the kernel's extended-ACK text */
	/* key check values (AES-ECB(key, 0)[0..2], hex) of the distinct keys the plan installs */
	char kcvs[FCTL_APPLY_MAX_KCVS][7];
	size_t n_kcvs;
	double seconds;
	bool confirm_pending;    /* a confirmed apply changed the host: it awaits confirmation */
	bool confirm_rolled_back; /* recover: an unconfirmed apply past its deadline was undone */
	/* SA adds withheld for nonce safety (docs/keys-and-pn.md): their keys' packet numbers
	 * are unknown, or nearly spent; the SecYs protect with no SA of those keys (no
	 * cleartext, no reuse) until new keys come. The apply is otherwise done. */
	size_t withheld;
	char withheld_why[512]; /* the first one: op, link, reason and the way back */
	/* the packet-number ledger as the change left it, when its SA door consulted it: the
	 * change's audit record is followed by an sa-ledger record with it (docs/audit.md) */
	bool has_ledger;
	struct fctl_sa_ledger_anchor ledger;
	/* warnings about the host the plan cannot fix (fctl_live_plan.findings); an apply
	 * (not a dry run) with a parent-missing finding is refused before any write */
	struct fctl_diags findings;
};

void fctl_apply_result_release(struct fctl_apply_result *r);

/* A live plan (fctl_engine_plan) and what it was computed against. */
struct fctl_live_plan {
	struct fctl_plan *plan;
	struct fctl_host_state *live; /* the managed links as read */
	struct fctl_host_state *want; /* the profile's state for this host */
	/* warnings the plan cannot fix: a link it creates on a parent device the host does not
	 * have (code parent-missing, at the profile's line of that host's port) */
	struct fctl_diags findings;
	struct fctl_plan_seal seal; /* what a saved plan binds (fctl_engine_plan_save) */
};
void fctl_live_plan_release(struct fctl_live_plan *lp);

/* Live plan (read-only): out is written on success (release it), err says why not. */
int fctl_engine_plan(const struct fctl_profile *p, const struct fctl_engine_opts *o,
		     struct fctl_live_plan *out, char *err, size_t errlen);

/* A saved plan file (plan --out FILE, apply --plan FILE): JSON, one key a line, with the
 * profile it was made from (file, name, version, SHA-256 of its bytes), the host and
 * network namespace, the seal and the plan's operations as plan --json prints them (keys
 * by key id, never by value). */
struct fctl_saved_plan {
	char host[64];
	char netns[64];           /* "" for the current namespace */
	char profile_file[1024];
	char profile_name[129];
	uint64_t profile_version;
	uint8_t profile_sha256[32];
	struct fctl_plan_seal seal;
	uint64_t ops, disruptive;
};
/* Writes path atomically (a temporary file renamed over it, mode 0644). Negative errno,
 * err says why. */
int fctl_engine_plan_save(const char *path, const struct fctl_saved_plan *sp,
			  const struct fctl_plan *plan, char *err, size_t errlen);
/* Reads one: -ENOENT (or another errno of the read) when it cannot be read, -EINVAL when
 * it is not a saved plan of this format or its operations do not match its plan_sha256
 * (edited); err says why. *out is written on success only. */
int fctl_engine_plan_load(const char *path, struct fctl_saved_plan *out, char *err,
			  size_t errlen);

/* Returns 0 when the host is in the profile's state (res says what was done), or a
 * negative errno (res->error says why; res->rolled_back whether it was undone). */
int fctl_engine_apply(const struct fctl_profile *p, const struct fctl_engine_opts *o,
		      struct fctl_apply_result *res);

/* Removes every link fabricctl manages on this host (those of the last applied profile),
 * all or nothing as an apply to an empty profile: lock, recovery of an interrupted
 * apply, journal, the removals, a fresh dump that must hold none of them; on a failure
 * the host goes back to its state before. Links fabricctl did not make are not touched;
 * the history is kept (rollback --to VERSION applies a version again). o->dry_run plans
 * only. Returns 0 (res->plan says what was removed; no ops: nothing was managed), or a
 * negative errno as fctl_engine_apply. */
int fctl_engine_teardown(const struct fctl_engine_opts *o, struct fctl_apply_result *res);

/* The desired-state cache, STATE_DIR/desired (docs/apply.md "Unchanged re-applies"): one
 * entry, the rendered state of the profile last stored for o's host, keyed by a SHA-256 of
 * this program's build id, the host, the file name as given, the working directory and
 * the profile's bytes, and sealed by an HMAC-SHA256 whose key is STATE_DIR/desired.key
 * (0600). Both files must be regular files of this user that nobody else can write.
 *
 * fctl_engine_desired_load: data/len are the bytes just read from file. Returns 1 on a hit
 * (*p a profile holding only name, version, sha256, file, dir and the one host, to free
 * with fctl_profile_free; *want the rendered state, pass it as opts.desired), 0 when there
 * is no entry for these bytes, or -EBADMSG when the entry cannot be trusted (corrupt,
 * truncated, a wrong MAC, not this user's): the caller loads the profile as always.
 * fctl_engine_desired_store: after p (loaded from file, validated, applied) succeeded,
 * replaces the entry with p's rendered state. -ENOTSUP for a profile with MKA policies
 * (never cached: their ports start from the whole profile), -ESTALE when data are not the
 * bytes p was parsed from. */
int fctl_engine_desired_load(const struct fctl_engine_opts *o, const char *file,
			     const unsigned char *data, size_t len, struct fctl_profile **p,
			     struct fctl_host_state **want);
int fctl_engine_desired_store(const struct fctl_engine_opts *o, const char *file,
			      const unsigned char *data, size_t len, const struct fctl_profile *p);

/* Rolls back an interrupted apply if the journal says there is one (res->recovered), then
 * a confirmed apply whose deadline passed unconfirmed (res->confirm_rolled_back: the
 * version before applied again, as fctl_engine_confirm_expire). Returns 1 when it did
 * either, 0 when there was nothing to do, < 0 on error. */
int fctl_engine_recover(const struct fctl_engine_opts *o, struct fctl_apply_result *res);

/* Live state of the managed links (those of the last applied profile and, if p is
 * given, of p), or of every VLAN/MACsec link when nothing was applied yet. */
int fctl_engine_show(const struct fctl_profile *p, const struct fctl_engine_opts *o,
		     struct fctl_host_state **live, char *err, size_t errlen);

/* History of applied profiles. */
struct fctl_history_entry {
	uint64_t seq;
	uint64_t version;
	char name[129];
	char sha256[65];
	char time[32];
	char file[1024]; /* stored copy */
	char dir[1024];  /* where relative key ids resolve */
};

int fctl_engine_history(const struct fctl_engine_opts *o, struct fctl_history_entry **out,
			size_t *n);
/* The n entries of v as `fabricctl history` prints them, locally and through the agent,
 * appended to out: a table (SEQ, VERSION, PROFILE, APPLIED (UTC), the SHA-256's first 16
 * digits) or a line saying none was applied; with json an array of {seq, version,
 * profile, applied, sha256, stored} and a newline. */
void fctl_engine_history_format(const struct fctl_history_entry *v, size_t n, bool json,
				struct fctl_buf *out);
/* Loads (and validates) the stored copy of profile version `version` (0 = latest). */
int fctl_engine_load_version(const struct fctl_engine_opts *o, uint64_t version,
			     struct fctl_diags *d, struct fctl_profile **out);

/* The host's apply lock (STATE_DIR/lock), the one apply, rollback and recover hold, taken
 * without waiting by whatever else changes the host's SAs (the agent's SA requests of a
 * rotation): an fd >= 0 for fctl_engine_unlock(), -EBUSY while it is held (err says so),
 * or another negative errno. An apply in turn refuses (-EBUSY) while a rotation lease
 * (fctl/rotation.h) is unexpired. */
int fctl_engine_lock(const struct fctl_engine_opts *o, char *err, size_t errlen);
void fctl_engine_unlock(int fd); /* takes a negative fd */

/*
 * Confirmed apply (docs/apply.md, "Confirmed apply"). An apply with
 * o->confirm_seconds that changes the host writes STATE_DIR/confirm (the deadline in
 * wall-clock seconds, the history entry it goes back to, never a key) durably before
 * its journal. Until fctl_engine_confirm() removes it, every other apply, rollback and
 * teardown is refused (-EBUSY), and once the deadline passed, fctl_engine_confirm_expire()
 * (the watchdog, `fabricctl recover`, the agent at start) applies the version before
 * again (a teardown when there was none). A crash inside the confirmed apply leaves its
 * journal: recovery restores the host and drops the record; a crash inside the rollback
 * leaves the record marked expiring: recovery restores the journal and the rollback runs
 * again. The record is written and removed under the apply lock.
 */
struct fctl_confirm_pending {
	int64_t deadline;      /* UNIX seconds */
	int64_t started;       /* UNIX seconds */
	uint64_t version;      /* the profile version that awaits confirmation */
	char name[129];        /* its profile name */
	uint64_t prev_seq;     /* the history entry it goes back to; 0: teardown */
	uint64_t prev_version; /* that entry's profile version (0: none) */
	bool expiring;         /* the rollback has started */
	char id[64];           /* o->confirm_id of the apply ("-" when none) */
};

/* Reads the pending confirmation without the lock (a read command's view): 1 and *out
 * when there is one, 0 when there is none, a negative errno when it cannot be read. */
int fctl_engine_confirm_pending(const struct fctl_engine_opts *o,
				struct fctl_confirm_pending *out);
/* Confirms the pending apply under the lock: 0 (out: what was confirmed), -ENOENT when
 * none is pending, -ETIMEDOUT when its deadline passed or its rollback started (too late:
 * the host goes or went back), -EBUSY when the lock is held; err says why. */
int fctl_engine_confirm(const struct fctl_engine_opts *o, struct fctl_confirm_pending *out,
			char *err, size_t errlen);
/* Under the lock: when a confirmation is pending, its deadline passed (or force) and, with
 * id, it is that one, applies the version before again (res as for fctl_engine_apply) and
 * removes the record. Returns 1 rolled back (*out: the record it acted on), 0 nothing due,
 * or a negative errno (res->error; the record stays, marked expiring, for the next try). */
int fctl_engine_confirm_expire(const struct fctl_engine_opts *o, const char *id, bool force,
			       struct fctl_confirm_pending *out, struct fctl_apply_result *res);

/* The profile host this machine is (opts->host, else the hostname). */
int fctl_engine_host_name(const struct fctl_engine_opts *o, char *out, size_t len);

#endif
