/* SPDX-License-Identifier: MIT */
/* The host transaction (libfctl/host/): a profile applied on this host with its audit
 * record, approvals gate, commit-confirm watchdog and MKA start-up, the one function
 * fabricctl apply, rollback, the agent's workers and pull mode run. It never prints: what
 * it has to say comes back as messages, in order, for the program to print on stderr. */
#ifndef FCTL_HOST_APPLY_H
#define FCTL_HOST_APPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fctl/approvals.h"
#include "fctl/audit.h"
#include "fctl/engine.h"

/* The exit codes of a transaction: fabricctl's (docs/cli.md), the same numbers. */
enum {
	FCTL_HOST_OK = 0,
	FCTL_HOST_INVALID = 1,
	FCTL_HOST_USAGE = 2,
	FCTL_HOST_FAILED = 3,
	FCTL_HOST_WITHHELD = 6,
};

/* One line for stderr, without its newline: plain lines are printed as they are, the
 * others after the program's name and ": " (as fabricctl's cli_err does). */
struct fctl_host_msg {
	bool plain;
	char *text;
};
struct fctl_host_msgs {
	struct fctl_host_msg *v;
	size_t n;
	bool oom; /* a line could not be kept (the program says "out of memory") */
};
void fctl_host_msgs_release(struct fctl_host_msgs *m);

/* One audit record of a state-changing command. */
struct fctl_sa_ledger_anchor;
struct fctl_host_event {
	const char *action, *result, *host, *change_id, *error, *detail;
	const struct fctl_profile *p;  /* name, version, SHA-256 */
	const struct fctl_plan *plan;  /* key ids of the SAs it installs */
	const char (*kcvs)[7];         /* key check values of the keys it installed */
	size_t n_kcvs;
	bool has_counts;
	uint64_t ops, writes;
	/* the packet-number ledger as the change left it: an sa-ledger record follows */
	const struct fctl_sa_ledger_anchor *ledger;
	const struct fctl_approvals *approvals; /* the approvals met (docs/approvals.md) */
};

/* Opens the audit log by the audit-open policy (log: the option, else $FCTL_AUDIT_LOG,
 * else the default; actor: who the records name, NULL the caller's uid). A refusal and
 * the notices (a checkpoint key made, checkpoints unsigned) go to m. 0 or negative errno. */
int fctl_host_audit_open(const char *log, const struct fctl_audit_actor *actor,
			 struct fctl_audit **out, struct fctl_host_msgs *m);
/* Appends and syncs one record (and its sa-ledger record, in the same sync); a failure is
 * said in m. Negative errno. */
int fctl_host_audit_record(struct fctl_audit *a, const struct fctl_host_event *ev,
			   struct fctl_host_msgs *m);
/* Closes (writing the closing checkpoint); a failure is said in m. Accepts NULL. */
int fctl_host_audit_close(struct fctl_audit *a, struct fctl_host_msgs *m);
/* "awaits confirmation until DEADLINE, else back to ..." (the record's detail). */
void fctl_host_confirm_detail(const struct fctl_confirm_pending *c, char *out, size_t len);
/* What a pending confirm goes back to: "version N", or "nothing (a teardown: ...)" when no
 * version was applied before; into out, which it returns. */
const char *fctl_host_confirm_back_to(const struct fctl_confirm_pending *c, char *out,
				      size_t len);

/* The approval gate (docs/approvals.md) of profile p under the policy file conf: FCTL_HOST_OK
 * (no policy, or met: *out holds the approvals), else FCTL_HOST_USAGE or FCTL_HOST_INVALID
 * with why. *out is always initialised; the caller releases it. */
int fctl_host_approvals_gate(const char *conf, const struct fctl_profile *p,
			     struct fctl_approvals *out, char *why, size_t len);
/* What a plan (dry_run) or validate says of p's approvals, into m (nothing when met and
 * quiet). */
void fctl_host_approvals_note(const char *conf, const struct fctl_profile *p, const char *cmd,
			      bool dry_run, bool quiet, struct fctl_host_msgs *m);
/* SAs withheld for nonce safety (docs/keys-and-pn.md): said in m, res->error set when
 * empty; returns rc, or FCTL_HOST_WITHHELD when rc was FCTL_HOST_OK. */
int fctl_host_withheld(struct fctl_apply_result *res, int rc, struct fctl_host_msgs *m);
/* The audit record of an apply, rollback or teardown (p NULL) and of the recovery that
 * came first; a record that cannot be written makes *rc FCTL_HOST_USAGE (said in m when the
 * host was changed). audit NULL: nothing. */
void fctl_host_apply_audit(struct fctl_audit *audit, const char *cmd, const char *change_id,
			   const struct fctl_engine_opts *eo, const struct fctl_profile *p,
			   const struct fctl_apply_result *res,
			   const struct fctl_approvals *approvals, const char *result, int *rc,
			   struct fctl_host_msgs *m);

/* What the transaction needs of its program; all borrowed for the transaction. */
struct fctl_host_apply_opts {
	const char *cmd;            /* "apply", "rollback": the records' action */
	const char *audit_log;      /* the option; NULL: $FCTL_AUDIT_LOG, else the default */
	const char *change_id;      /* the option; NULL: $FCTL_CHANGE_ID */
	const char *approvals_conf; /* the host's approval policy file */
	const struct fctl_audit_actor *actor; /* who the records name; NULL: the caller's uid */
	const char *self_exe;       /* the program run as 'confirm --watchdog ID' */
	bool quiet;                 /* a dry run's met approvals unsaid (--quiet, --json) */
};

/* One transaction: fctl_host_apply_open, then (when it said go on) fctl_host_apply_run,
 * then fctl_host_apply_finish, then fctl_host_apply_release; between them the program
 * prints msgs (and empties it with fctl_host_msgs_release), so the order of what the user
 * sees is the transaction's. */
struct fctl_host_apply {
	const struct fctl_host_apply_opts *o;
	struct fctl_engine_opts *eo;
	const struct fctl_profile *p;
	struct fctl_audit *audit;
	struct fctl_approvals approvals; /* met, for the record */
	struct fctl_apply_result res;    /* the engine's, after run */
	int r;                           /* the engine's return, after run */
	bool ran;
	bool refused;       /* after run: the engine refused before changing anything */
	const char *result; /* after run: the record's result (refused, applied, planned, ...) */
	int life_fd;        /* the watchdog's life pipe, closed by release */
	struct fctl_host_msgs msgs;
};

/* The audit log opened (refused if it cannot be written, unless eo->dry_run), the approval
 * gate (a refusal audited and the log closed; a dry run only notes), the watchdog of
 * eo->confirm_seconds started. Returns -1 to go on (run), else the exit code: nothing was
 * changed. */
int fctl_host_apply_open(struct fctl_host_apply *h, const struct fctl_host_apply_opts *o,
			 struct fctl_engine_opts *eo, const struct fctl_profile *p);
/* The engine's apply of p (eo->progress is called during it); sets r, res, refused, result. */
void fctl_host_apply_run(struct fctl_host_apply *h);
/* After the program printed the result: MKA started (not for a dry run), the CAKs' check
 * values, the withheld SAs, the record, the log closed. rc: the exit code so far (the
 * engine's failure, a plan's exit, a refusal's); returns the final one. */
int fctl_host_apply_finish(struct fctl_host_apply *h, int rc);
/* Closes the watchdog's pipe (it needs nothing more of this process) and frees. */
void fctl_host_apply_release(struct fctl_host_apply *h);

/* The MKA ports of p's host: prune the ones it no longer runs, start the others' supervisors
 * (under the MKA run directory's lock), lines said in m unless quiet. FCTL_HOST_OK, or the
 * exit code. */
int fctl_host_mka_up(const struct fctl_profile *p, const char *host, const char *netns,
		     const char *keymgr_path, bool quiet, struct fctl_host_msgs *m);
/* The check values of the CAKs in use on p's host's MKA ports into res's KCVs. */
void fctl_host_mka_kcvs(const struct fctl_profile *p, const char *host,
			struct fctl_apply_result *res);
/* apply --confirm's watchdog: 'self_exe confirm --watchdog ID ...' in its own session, unless
 * one is pending (the engine refuses that apply). 0 once it watches (*life_fd: the pipe
 * whose closing tells it this process is gone), or negative errno. */
int fctl_host_confirm_watch(const struct fctl_engine_opts *eo, const char *self_exe,
			    const char *audit_log, const char *change_id, int *life_fd);

#endif
