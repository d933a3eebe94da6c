/* SPDX-License-Identifier: MIT */
/* The fabricctl program: thin commands over libfctl. One file per command noun. */
#ifndef FABRICCTL_CLI_H
#define FABRICCTL_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fctl/diag.h"
#include "fctl/host_apply.h"
#include "fctl/profile.h"

/* Exit codes (documented in docs/cli.md and `fabricctl --help`). */
enum {
	EXIT_OK = 0,
	EXIT_INVALID = 1, /* the input was read and is invalid, or a check failed */
	EXIT_USAGE = 2,   /* usage, I/O or environment error */
	EXIT_FAILED = 3,  /* an operation on a host failed (and was rolled back) */
	/* plan --detailed-exitcode only (0 there means: no changes) */
	EXIT_PLAN_CHANGES = 4,    /* the plan has changes, none disruptive */
	EXIT_PLAN_DISRUPTIVE = 5, /* the plan has a disruptive change */
	/* apply, rollback, recover: done, but SAs were withheld for nonce safety (their keys'
	 * packet numbers are unknown): those links carry nothing until new keys come */
	EXIT_WITHHELD = 6,
};

enum out_format {
	OUT_TEXT,
	OUT_JSON,
	OUT_JUNIT,
};

struct option;

/* One entry of the command table (main.c): the one source of `fabricctl help`, the
 * manual pages and the bash completion (help_gen.c). */
struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *synopsis; /* lines after "fabricctl "; later lines are indented */
	const char *help;     /* paragraphs; indented blocks; an "Exit:" paragraph */
	const char *summary;  /* one line, lower case: the manual page's NAME */
	/* the getopt table its parser gives cli_getopt for the command (and its subcommand
	 * sub, NULL when none): the completion offers exactly these (cli_complete). NULL:
	 * another program parses the command's options (lab.sh, keymgr, the probe) */
	const struct option *(*opts)(const char *cmd, const char *sub);
};

/* What the generators of help_gen.c read: the table and usage()'s lines. */
struct cli_doc {
	const struct cmd *cmds;
	size_t n;
	const char *tagline;    /* one sentence */
	const char *exit_codes; /* lines, each ending in a newline */
};
/* The hidden forms of `fabricctl help`, for the build (scripts/gen-docs.sh):
 *   help --man [COMMAND]     the roff manual page fabricctl(8) or fabricctl-COMMAND(8)
 *   help --bash-completion   the bash completion script (commands, subcommands, options)
 *   help --commands          the command names, one a line
 * Returns an exit code, or -1 when argv[1] is none of these (the caller goes on). */
int cli_help_gen(const struct cli_doc *doc, int argc, char **argv);
/* The hidden `fabricctl __complete WORD... CUR` the bash completion runs: the words that can
 * follow (commands, subcommands, or the options the command's parser takes in the form
 * the words ask for, local or remote), one a line, those starting with CUR. Exit 0. */
int cli_complete(const struct cli_doc *doc, int argc, char **argv);

/* An option a parser takes but the completion does not offer (an internal one): its val
 * carries this bit. */
#define CLI_HIDDEN 0x10000

/* The option tables of the parsers (struct cmd's opts), each as its parser passes it. */
const struct option *cli_opts_validate(const char *cmd, const char *sub);
const struct option *cli_opts_plan(const char *cmd, const char *sub);
const struct option *cli_opts_diff(const char *cmd, const char *sub);
const struct option *cli_opts_host(const char *cmd, const char *sub);  /* apply ... history */
const struct option *cli_opts_confirm(const char *cmd, const char *sub);
const struct option *cli_opts_audit(const char *cmd, const char *sub);
const struct option *cli_opts_audit_proof(void); /* audit proof | note | witness */
const struct option *cli_opts_evidence(const char *cmd, const char *sub);
const struct option *cli_opts_node_check(const char *cmd, const char *sub);
const struct option *cli_opts_agent(const char *cmd, const char *sub);
/* The remote form's table of cmd (--target, --fabric), NULL when it has none; whether
 * argv asks for that form (as cmd_fabric_dispatch takes it: status always). */
const struct option *cli_opts_remote(const char *cmd);
bool cli_remote_form(const char *cmd, int argc, char **argv);

int cmd_validate(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_rollback(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_teardown(int argc, char **argv);
int cmd_plan_live(int argc, char **argv);
/* A plan's text (as plan prints it) as Markdown for a review comment: a heading per host,
 * its operations in a ```diff block, the summary, a note on disruptive changes. */
void cli_plan_markdown(const struct fctl_buf *text, struct fctl_buf *md);
/* plan's exit: EXIT_OK, or with --detailed-exitcode EXIT_PLAN_CHANGES or
 * EXIT_PLAN_DISRUPTIVE when there are operations. */
int cli_plan_exit(bool detailed, size_t ops, size_t disruptive);
/* What plan --offline and diff OLD NEW share (cmd_plan.c): the hosts --host names
 * (none: every host); */
struct cli_host_filter {
	const char *v[64];
	size_t n;
};
bool cli_host_wanted(const struct cli_host_filter *f, const char *host);
/* the hosts of NEW, then those only in OLD (they are planned down to nothing), into v
 * (at most cap): their number; */
size_t cli_profile_hosts(const struct fctl_profile *nw, const struct fctl_profile *old,
			 const char **v, size_t cap);
/* host's state as p renders it, an empty state when p is NULL or lacks the host (said on
 * stderr when rendering fails): 0 or a negative errno; */
int cli_render_host(const struct fctl_profile *p, const char *host, struct fctl_host_state **out);
/* EXIT_USAGE (said) when a host of f is in neither profile, else EXIT_OK; */
int cli_host_filter_check(const struct cli_host_filter *f, const struct fctl_profile *a,
			  const struct fctl_profile *b);
/* two profiles of different names are most likely one of them the wrong file: said on
 * stderr (the plan or diff is still made; a rename is legal). */
void cli_warn_renamed(const char *cmd, const struct fctl_profile *old, const char *old_path,
		      const struct fctl_profile *nw, const char *new_path);
int cmd_diff_live(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_lab(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_status(int argc, char **argv);
/* --fabric / --target: the remote form of a command (cmd_fabric.c); -1 when the
 * arguments ask for the local form. */
int cmd_fabric_dispatch(const char *cmd, int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_probe_fabric(int argc, char **argv); /* probe --fabric (cmd_probe_fabric.c) */
struct fctl_agent_request;
/* The agent's probe-serve/probe-run worker: execs fabricctl-probe for this host's end. */
int cli_probe_request(const struct fctl_agent_request *rq);
/* Confirmed apply (cmd_confirm.c, docs/apply.md "Confirmed apply"). */
struct fctl_engine_opts;
struct fctl_confirm_pending;
int cmd_confirm(int argc, char **argv);
/* A fresh id for the pending record of one apply --confirm. */
void cli_confirm_id(char *out, size_t len);
/* apply --confirm DURATION, local or through an agent: 1 s to FCTL_PROTO_MAX_CONFIRM (7
 * days) into *seconds; 0, or -EINVAL after saying why on stderr. */
int cli_parse_confirm(const char *arg, uint64_t *seconds);
/* After it: the deadline and what the host goes back to, on stderr. */
void cli_confirm_note(const struct fctl_engine_opts *eo);
/* The pending confirmation as a JSON object (NULL: null). */
void cli_confirm_json(const struct fctl_confirm_pending *c, struct fctl_buf *o);
/* show: the pending confirmation into json (an object or null), else a note on stderr. */
void cli_confirm_show(const struct fctl_engine_opts *eo, struct fctl_buf *json);
/* The running binary (realpath of /proc/self/exe) is inside this build's tree. */
bool cli_in_build_tree(void);
/* A helper program fabricctl runs (keymgr, the probe, lab.sh), access(mode) allowed: when
 * the running binary is in the build tree, $env then build, then inst; an installed
 * fabricctl looks only at inst, under its install prefix (a build tree under /tmp, or
 * the environment of a root shell, does not choose what it runs). NULL when none is. */
const char *cli_helper_path(const char *env, const char *build, const char *inst, int mode);
/* Says where a missing helper was looked for. */
void cli_helper_missing(const char *cmd, const char *name, const char *env, const char *build,
			const char *inst);
int cmd_rotate(int argc, char **argv);
int cmd_node_check(int argc, char **argv);
/* fabricctl-keymgr (cmd_rotate.c), as cli_helper_path finds it ($FCTL_KEYMGR_BIN and this
 * build's only from the build tree, else the installed one); NULL when none is. */
const char *cli_keymgr_path(void);
/* Executes fabricctl-keymgr [VERB] ARGV[1..] in place of this process (rotate, keys); returns
 * EXIT_USAGE, said on stderr, only when it cannot be run. */
int cli_keymgr_exec(const char *verb, int argc, char **argv);
int cmd_keys(int argc, char **argv); /* cmd_keys.c */
int cmd_audit(int argc, char **argv);
/* audit proof | note | witness (cmd_audit_proof.c): argv[0] is the subcommand */
int cmd_audit_proof(const char *sub, int argc, char **argv);
int cmd_evidence(int argc, char **argv);
/* Approvals (cmd_approve.c, docs/approvals.md). */
int cmd_approve(int argc, char **argv);
int cmd_approvals(int argc, char **argv);
const struct option *cli_opts_approve(const char *cmd, const char *sub);
/* The host's approval policy file: $FCTL_APPROVALS_CONF, else /etc/fabricctl/approvals.conf. */
const char *cli_approvals_conf(void);
/* The gate of apply, rollback and confirm: with a policy on this host, the exact bytes p
 * was parsed from (p->file, its sha256) must carry the approvals it requires. EXIT_OK (no
 * policy, or met: *out says who; release it), EXIT_INVALID (not approved, or the file
 * changed while read) or EXIT_USAGE (the policy or allowed_signers cannot be read), with
 * the sentence in why: who signed, who is missing, which allowed_signers was checked. */
struct fctl_approvals;
int cli_approvals_gate(const struct fctl_profile *p, struct fctl_approvals *out, char *why,
		       size_t len);
/* validate and plan: the approval state of p on stderr ("NOT approved ..." when the gate
 * would refuse; "approved ..." unless quiet), never a refusal. */
void cli_approvals_note(const struct fctl_profile *p, const char *cmd, bool dry_run,
			bool quiet);

/* The audit log (cmd_audit.c) of state-changing commands: --audit-log, else
 * $FCTL_AUDIT_LOG, else the default (fctl_audit_open_policy), signed with the key pair
 * beside it, made on first use. Reports failures loudly. Negative errno. */
struct fctl_audit;
int cli_audit_open(const char *log_opt, struct fctl_audit **out);
/* The actor of the records cli_audit_open() logs will name (the agent's worker sets its
 * client's certificate subject or uid); cert NULL and !has_uid: the caller's uid. */
void cli_audit_set_actor(const char *cert, bool has_uid, uid_t uid);
/* What a state-changing command records. */
struct fctl_plan;
struct fctl_sa_ledger_anchor;
struct fctl_approvals;
/* Appends and syncs one record (and its sa-ledger record, in the same sync); on failure
 * says so loudly on stderr. Negative errno. */
int cli_audit_record(struct fctl_audit *a, const struct fctl_host_event *ev);
/* Closes (writing the closing checkpoint); reports a failure. Accepts NULL. */
int cli_audit_close(struct fctl_audit *a);

/* Shared by commands (cli.c). */
extern const char *prog_name;

/* fabricctl's dispatch (main.c): what main runs for ARGV */
typedef int (*cli_dispatch_fn)(int argc, char **argv);
#ifdef FCTL_TEST_HOOKS
/* fabricctl __test-fork-server REQ REP (test builds only, test_fork_server.c): reads
 * requests from the FIFO REQ, one a line, "OUT<TAB>ERR<TAB>ARG...", runs dispatch on
 * ARGV0 ARG... in a forked child with stdin /dev/null, stdout OUT and stderr ERR (files,
 * truncated), and writes its exit status ("N\n", 128+signal when killed; 124 for a
 * malformed request, 125 when the child cannot open its files, 126 when fork fails) to
 * the FIFO REP. Returns EXIT_OK at an empty line or REQ's end, EXIT_USAGE when either
 * cannot be opened or a request is too long. */
int cli_test_fork_server(char *argv0, const char *req, const char *rep, cli_dispatch_fn dispatch);
#endif
bool cli_color(FILE *f);
/* The host transaction's messages on stderr, in order (a plain line as it is, the others
 * as cli_err says them); then empties m. */
void cli_say(struct fctl_host_msgs *m);
/* The audit actor cli_audit_set_actor set (NULL: the caller's uid). */
const struct fctl_audit_actor *cli_audit_actor(void);
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int cli_write(FILE *f, const struct fctl_buf *b);
/* Loads and validates one profile, printing findings to stderr in text form unless quiet.
 * Returns EXIT_OK, EXIT_INVALID or EXIT_USAGE. */
int cli_load_valid_profile(const char *file, struct fctl_profile **out, bool quiet_ok);
/* The same; json: an invalid profile's findings go to stdout as validate --json prints
 * them (one object: valid, errors, warnings, files, findings), not to stderr as text. */
int cli_load_profile(const char *file, struct fctl_profile **out, bool quiet_ok, bool json);
/* EXIT_OK when file is a regular file (or missing), else EXIT_USAGE after saying that cmd
 * (apply, the remote commands) reads its profile twice and needs a regular file. */
int cli_need_regular(const char *cmd, const char *file);
/* getopt_long for the command cmd ("validate", "audit verify"), by the rules of
 * docs/cli.md: long options by their exact names only (getopt_long's abbreviations are
 * refused), and, when the command has --json, -j and -o json for it. An unknown or
 * malformed option is said on stderr ("fabricctl validate: unknown option '--jsn'; did you
 * mean '--json'?") and '?' returned (the caller exits 2). Otherwise as getopt_long. */
struct option;
int cli_getopt(const char *cmd, int argc, char **argv, const char *shortopts,
	       const struct option *lo, int *longindex);
/* Prints a command's help to stdout. */
void cli_usage_cmd(const char *name);

/* MKA (cmd_mka.c, docs/mka.md): for show, the KaY state of every port fabricctl runs MKA
 * on, as YAML comments or (json) a JSON array (an apply's start-up is the host
 * transaction's: fctl_host_mka_up). */
struct fctl_profile;
int cli_mka_show(const char *netns, struct fctl_buf *o, bool json);
/* In the agent's writing worker (cmd_mkasup.c): restarts the wpa_supplicant of
 * rq->mka_port (killed first when rq->mka_kill) with the configuration of the last
 * applied profile, only when that profile still has the port. EXIT_OK or EXIT_FAILED /
 * EXIT_USAGE after saying why on stderr. */
struct fctl_agent_request;
int cli_mka_restart(const struct fctl_agent_request *rq, const char *keymgr_path);
/* The same worker, rq->mka_step: one step of the CAK rotation of rq->mka_port
 * (fctl_mka_rotation_step). Exit: EXIT_OK (nothing to do or still waiting),
 * FCTL_AGENT_MKA_STEP_MOVED, FCTL_AGENT_MKA_STEP_DONE (fctl/agent.h), or EXIT_FAILED / EXIT_USAGE after saying why. */
int cli_mka_step(const struct fctl_agent_request *rq);

#endif
