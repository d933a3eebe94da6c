/* SPDX-License-Identifier: MIT */
/* What the host commands share (host.c; cmd_apply.c, cmd_rollback.c, cmd_teardown.c,
 * cmd_recover.c, cmd_show.c, cmd_history.c, cmd_plan_live.c, cmd_diff.c): their options, parsed by one table
 * a command, and what the commands that change the host say and record of an engine's result. */
#ifndef FABRICCTL_HOST_H
#define FABRICCTL_HOST_H

#include "cli.h"
#include "fctl/approvals.h"
#include "fctl/engine.h"

struct fctl_audit;

struct cli_host {
	struct fctl_engine_opts eo;
	bool json;
	bool quiet;
	const char *audit_log; /* --audit-log (else $FCTL_AUDIT_LOG, else the default) */
	const char *change_id; /* --change (else $FCTL_CHANGE_ID) */
	bool audit;            /* diff: --audit (or --audit-log) records drift */
	bool markdown;         /* plan: --markdown */
	bool detailed;         /* plan: --detailed-exitcode */
	const char *out;       /* plan: --out FILE, the saved plan */
	const char *plan;      /* apply: --plan FILE, a saved plan to apply exactly */
	char confirm_id[64];   /* apply --confirm: the pending record's id */
	const char *desired_cache; /* apply: "hit", "miss" or "ignored" (STATE_DIR/desired) */
	struct fctl_plan_seal seal; /* apply --plan: what eo.expect points to */
	struct fctl_approvals approvals; /* apply, rollback: the approvals met, for the record
					  * (none: no policy); released by the apply */
};

/* c as cli_host_parse starts it: nothing set but the path of fabricctl-keymgr. */
void cli_host_init(struct cli_host *c);
/* apply --confirm: the deadline, seconds after the apply (1 s to 7 days, checked by the
 * caller), and a new id for the pending record. */
void cli_host_confirm(struct cli_host *c, uint64_t seconds);
/* Parses the options of host command cmd by its table (cli_opts_host). Returns -1 on
 * success (continue, optind at the first argument), or an exit code. */
int cli_host_parse(const char *cmd, int argc, char **argv, struct cli_host *c, const char **to);
/* A host command that takes no PROFILE (show, history, recover): --fabric and --target go
 * to the agents (cmd_fabric_dispatch), else the options are parsed (an argument left is a
 * usage error when no_args, else ignored) and run(c) runs it. Returns the exit code. */
int cli_host_cmd(const char *cmd, int argc, char **argv, bool no_args,
		 int (*run)(const struct cli_host *c));
/* Says an engine error (what: the command) and a hint for a permission error: EXIT_USAGE. */
int cli_env_error(const char *what, int r, const char *msg);
/* The engine's progress on stderr (engine opts' progress), for a terminal. */
void cli_progress(void *ctx, const char *phase, size_t done, size_t total, const struct fctl_op *op);
/* SAs withheld for nonce safety (docs/keys-and-pn.md): said on stderr, res->error set when
 * empty; returns rc, or EXIT_WITHHELD when rc was EXIT_OK. */
int cli_withheld_exit(struct fctl_apply_result *res, int rc);
/* The --json result of apply, rollback and teardown (p NULL for teardown) into o. */
void cli_apply_json(struct fctl_buf *o, const struct cli_host *c, const struct fctl_profile *p,
		    const struct fctl_apply_result *res, const char *result);
/* The audit record of an apply, rollback or teardown (and of the recovery that came
 * first); a record that cannot be written makes *rc EXIT_USAGE (said when the host was
 * changed). audit NULL: nothing. */
void cli_apply_audit(struct fctl_audit *audit, const char *cmd, struct cli_host *c,
		     const struct fctl_profile *p, const struct fctl_apply_result *res,
		     const char *result, int *rc);
/* apply and rollback (cmd_apply.c): p applied on this host as command cmd: a saved plan's
 * check, the audit log opened (refused if it cannot be), the approvals' gate, the
 * watchdog of --confirm, the engine, the output, MKA, the record. Returns the exit code;
 * releases c->approvals. */
int cli_apply_profile(const char *cmd, struct cli_host *c, struct fctl_profile *p);

/* What a host command does once its command line is parsed (c) and its arguments checked:
 * the local command's and the agent's worker's one way in (cmd_agent.c calls them with
 * the options the request carries). Each returns the command's exit code, its output on
 * stdout and stderr. */
int cli_apply_file(struct cli_host *c, const char *file);   /* apply PROFILE */
int cli_rollback_run(struct cli_host *c, uint64_t ver);      /* rollback --to VER */
int cli_recover_run(const struct cli_host *c);              /* recover */
int cli_show_run(const struct cli_host *c);                 /* show */
int cli_history_run(const struct cli_host *c);              /* history */
int cli_plan_live_run(const struct cli_host *c, const char *file); /* plan PROFILE */
int cli_diff_live_run(const struct cli_host *c, const char *file); /* diff PROFILE */
/* confirm (cmd_confirm.c), with c's json, host, netns, state_dir and audit_log */
int cli_confirm_run(const struct cli_host *c);

/* The findings of a live plan (parent-missing warnings) on stderr as validate prints them. */
void cli_findings_text(const struct fctl_diags *d);
/* plan and diff PROFILE (cmd_plan_live.c): the profile loaded and planned against the live
 * state, the findings said on stderr (with --json they are in the document). EXIT_OK or
 * the exit. */
int cli_live_plan_load(const char *cmd, const struct cli_host *c, const char *file,
		       struct fctl_profile **p, struct fctl_live_plan *lp);

/* apply --plan FILE (cmd_plan_live.c): reads the saved plan, checks that it was made for this host
 * and namespace (c->eo) from exactly p's bytes, and points c->eo.expect at its seal for the
 * engine's check of the live state and the plan. EXIT_OK, else EXIT_USAGE (the file cannot
 * be read) or EXIT_INVALID (it is not a saved plan, or it is stale), said on stderr. */
int cli_saved_plan_check(struct cli_host *c, const struct fctl_profile *p);
/* The PROFILE a saved plan names (apply --plan FILE without PROFILE) into out: EXIT_OK, or
 * an exit code after saying why. */
int cli_saved_plan_profile(const char *file, char *out, size_t len);

#endif
