// SPDX-License-Identifier: MIT
/* What the host commands share (host.h): their option tables (one a command), the parser,
 * and what apply, rollback, teardown and recover say and record of an engine's result */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fctl/audit.h"
#include "fctl/plan.h"
#include "host.h"

enum {
	OPT_JSON = 0x100,
	OPT_NETNS,
	OPT_HOST,
	OPT_STATE_DIR,
	OPT_TO,
	OPT_DRY_RUN,
	OPT_AUDIT_LOG,
	OPT_CHANGE,
	OPT_AUDIT,
	OPT_MARKDOWN,
	OPT_DETAILED,
	OPT_CONFIRM,
	OPT_OUT,
	OPT_PLAN,
};

/* The entries of the host commands' tables: one table a command, the options it takes and
 * nothing else (the parser and the completion read the same table, cli_opts_host). */
#define O_JSON { "json", no_argument, NULL, OPT_JSON }
#define O_NETNS { "netns", required_argument, NULL, OPT_NETNS }
#define O_HOST { "host", required_argument, NULL, OPT_HOST }
#define O_STATE_DIR { "state-dir", required_argument, NULL, OPT_STATE_DIR }
#define O_DRY_RUN { "dry-run", no_argument, NULL, OPT_DRY_RUN }
#define O_AUDIT_LOG { "audit-log", required_argument, NULL, OPT_AUDIT_LOG }
#define O_CHANGE { "change", required_argument, NULL, OPT_CHANGE }
#define O_QUIET { "quiet", no_argument, NULL, 'q' }
#define O_HELP { "help", no_argument, NULL, 'h' }
#define O_END { NULL, 0, NULL, 0 }
/* what every command that changes the host takes */
#define O_CHANGING O_JSON, O_NETNS, O_STATE_DIR, O_AUDIT_LOG, O_CHANGE, O_QUIET, O_HELP

static const struct option apply_opts[] = {
	O_CHANGING, O_HOST, O_DRY_RUN,
	{ "detailed-exitcode", no_argument, NULL, OPT_DETAILED },
	{ "confirm", required_argument, NULL, OPT_CONFIRM },
	{ "plan", required_argument, NULL, OPT_PLAN },
	O_END,
};
static const struct option rollback_opts[] = {
	O_CHANGING, O_HOST, O_DRY_RUN, { "to", required_argument, NULL, OPT_TO }, O_END,
};
static const struct option teardown_opts[] = { O_CHANGING, O_HOST, O_DRY_RUN, O_END };
static const struct option recover_opts[] = { O_CHANGING, O_END };
static const struct option plan_opts[] = {
	O_JSON, O_NETNS, O_HOST, O_STATE_DIR, O_HELP,
	{ "markdown", no_argument, NULL, OPT_MARKDOWN },
	{ "detailed-exitcode", no_argument, NULL, OPT_DETAILED },
	{ "out", required_argument, NULL, OPT_OUT },
	O_END,
};
static const struct option diff_opts[] = {
	O_JSON, O_NETNS, O_HOST, O_STATE_DIR, O_AUDIT_LOG, O_CHANGE, O_HELP,
	{ "audit", no_argument, NULL, OPT_AUDIT },
	O_END,
};
static const struct option show_opts[] = { O_JSON, O_NETNS, O_HOST, O_STATE_DIR, O_HELP, O_END };
static const struct option history_opts[] = { O_JSON, O_NETNS, O_STATE_DIR, O_HELP, O_END };

const struct option *cli_opts_host(const char *cmd, const char *sub)
{
	static const struct {
		const char *cmd;
		const struct option *opts;
	} tables[] = {
		{ "apply", apply_opts },       { "rollback", rollback_opts },
		{ "teardown", teardown_opts }, { "recover", recover_opts },
		{ "plan", plan_opts },         { "diff", diff_opts },
		{ "show", show_opts },         { "history", history_opts },
	};

	(void)sub;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(tables); i++)
		if (strcmp(tables[i].cmd, cmd) == 0)
			return tables[i].opts;
	return NULL;
}

void cli_host_init(struct cli_host *c)
{
	memset(c, 0, sizeof(*c));
	/* keys of KMS references come from keymgr: this process holds no KMS credentials */
	c->eo.keymgr_path = cli_keymgr_path();
}

void cli_host_confirm(struct cli_host *c, uint64_t seconds)
{
	c->eo.confirm_seconds = seconds;
	cli_confirm_id(c->confirm_id, sizeof(c->confirm_id));
	c->eo.confirm_id = c->confirm_id;
}

/* apply --confirm DURATION: 1 s to 7 days */
static int parse_confirm(const char *arg, struct cli_host *c)
{
	uint64_t s;

	if (cli_parse_confirm(arg, &s) < 0)
		return -EINVAL;
	cli_host_confirm(c, s);
	return 0;
}

/* One option of cli_host_parse: -1 to go on, or an exit code. */
static int host_opt(const char *cmd, int ch, struct cli_host *c, const char **to)
{
	switch (ch) {
	case OPT_JSON: c->json = true; break;
	case OPT_NETNS: c->eo.netns = optarg; break;
	case OPT_HOST: c->eo.host = optarg; break;
	case OPT_STATE_DIR: c->eo.state_dir = optarg; break;
	case OPT_TO: *to = optarg; break;
	case OPT_DRY_RUN: c->eo.dry_run = true; break;
	case OPT_AUDIT_LOG: c->audit_log = optarg; break;
	case OPT_CHANGE: c->change_id = optarg; break;
	case OPT_AUDIT: c->audit = true; break;
	case OPT_MARKDOWN: c->markdown = true; break;
	case OPT_DETAILED: c->detailed = true; break;
	case OPT_OUT: c->out = optarg; break;
	case OPT_PLAN: c->plan = optarg; break;
	case OPT_CONFIRM: return parse_confirm(optarg, c) < 0 ? EXIT_USAGE : -1;
	case 'q': c->quiet = true; break;
	case 'h': cli_usage_cmd(cmd); return EXIT_OK;
	default: return EXIT_USAGE;
	}
	return -1;
}

int cli_host_parse(const char *cmd, int argc, char **argv, struct cli_host *c, const char **to)
{
	const struct option *opts = cli_opts_host(cmd, NULL), *o;
	const char *ignored = NULL, *shorts = "h";
	int ch, rc;

	cli_host_init(c);
	for (o = opts; o->name; o++)
		if (o->val == 'q')
			shorts = "qh"; /* -q where the table has --quiet */
	optind = 1;
	while ((ch = cli_getopt(cmd, argc, argv, shorts, opts, NULL)) != -1)
		if ((rc = host_opt(cmd, ch, c, to ? to : &ignored)) >= 0)
			return rc;
	/* apply --dry-run is a plan: it takes plan's --detailed-exitcode */
	if (c->detailed && strcmp(cmd, "apply") == 0 && !c->eo.dry_run) {
		cli_err("apply: --detailed-exitcode goes with --dry-run (the plan's exit: 0 no "
			"changes, 4 changes, 5 disruptive)");
		return EXIT_USAGE;
	}
	return -1;
}

int cli_host_cmd(const char *cmd, int argc, char **argv, bool no_args,
		 int (*run)(const struct cli_host *c))
{
	int rc = cmd_fabric_dispatch(cmd, argc, argv); /* --fabric, --target */
	struct cli_host c;

	if (rc >= 0)
		return rc;
	rc = cli_host_parse(cmd, argc, argv, &c, NULL);
	if (rc >= 0)
		return rc;
	if (no_args && optind != argc) {
		cli_err("%s: unexpected argument '%s'", cmd, argv[optind]);
		return EXIT_USAGE;
	}
	return run(&c);
}

void cli_progress(void *ctx, const char *phase, size_t done, size_t total,
		  const struct fctl_op *op)
{
	(void)ctx;
	fprintf(stderr, "\r\033[K%s [%zu/%zu] %s %s", phase, done + 1, total,
		fctl_op_kind_name(op->kind), op->ifname);
	if (done + 1 == total)
		fputc('\n', stderr);
}

int cli_env_error(const char *what, int r, const char *msg)
{
	cli_err("%s: %s", what, msg && *msg ? msg : strerror(-r));
	if (r == -EPERM || r == -EACCES)
		cli_err("hint: changing links needs CAP_NET_ADMIN (run as root)");
	return EXIT_USAGE;
}

/* SAs withheld for nonce safety (docs/keys-and-pn.md): said on stderr, and exit 6 unless
 * something else failed already. The audit record carries the reason as its error. */
int cli_withheld_exit(struct fctl_apply_result *res, int rc)
{
	struct fctl_host_msgs m = { 0 };

	rc = fctl_host_withheld(res, rc, &m);
	cli_say(&m);
	return rc;
}

void cli_apply_json(struct fctl_buf *o, const struct cli_host *c, const struct fctl_profile *p,
		    const struct fctl_apply_result *res, const char *result)
{
	fctl_buf_puts(o, "{\"host\":");
	fctl_buf_json_str(o, res->host);
	fctl_buf_puts(o, ",\"profile\":");
	fctl_buf_json_str(o, p ? p->name : NULL);
	fctl_buf_printf(o, ",\"version\":%" PRIu64 ",\"result\":\"%s\"", p ? p->version : 0,
			result);
	fctl_buf_printf(o, ",\"ops_planned\":%zu,\"ops_done\":%zu,\"netlink_writes\":%" PRIu64
			   ",\"netlink_round_trips\":%" PRIu64 ",\"seconds\":%.6f",
			res->plan ? res->plan->n_ops : 0, res->ops_done, res->writes,
			res->round_trips, res->seconds);
	fctl_buf_printf(o, ",\"recovered_interrupted_apply\":%s,\"rolled_back\":%s,"
			   "\"restored_exactly\":%s",
			res->recovered ? "true" : "false", res->rolled_back ? "true" : "false",
			res->restored_exactly ? "true" : "false");
	if (res->failed_op >= 0)
		fctl_buf_printf(o, ",\"failed_op\":%ld", res->failed_op);
	fctl_buf_printf(o, ",\"sas_withheld\":%zu", res->withheld);
	if (res->withheld) {
		fctl_buf_puts(o, ",\"withheld\":");
		fctl_buf_json_str(o, res->withheld_why);
	}
	if (res->error[0]) {
		fctl_buf_puts(o, ",\"error\":");
		fctl_buf_json_str(o, res->error);
	}
	if (res->confirm_pending) {
		struct fctl_confirm_pending cp;

		fctl_buf_puts(o, ",\"confirm\":");
		cli_confirm_json(fctl_engine_confirm_pending(&c->eo, &cp) == 1 ? &cp : NULL, o);
	}
	if (c->desired_cache) {
		fctl_buf_puts(o, ",\"desired_cache\":");
		fctl_buf_json_str(o, c->desired_cache);
	}
	fctl_buf_puts(o, ",\"findings\":");
	fctl_diags_findings_json(&res->findings, o);
	fctl_buf_puts(o, ",\"plan\":");
	if (res->plan)
		fctl_plan_to_json(res->plan, o);
	else
		fctl_buf_puts(o, "null");
	fctl_buf_puts(o, "}\n");
}

/* Audit policy (docs/audit.md): a change is never made unaudited. The log is opened
 * before anything is changed; if it cannot be, the command is refused (exit 2, nothing
 * changed). If the record cannot be written after the change, the command says so
 * loudly and exits 2 although the host was changed (3 stays 3). */
void cli_apply_audit(struct fctl_audit *audit, const char *cmd, struct cli_host *c,
		     const struct fctl_profile *p, const struct fctl_apply_result *res,
		     const char *result, int *rc)
{
	struct fctl_host_msgs m = { 0 };

	fctl_host_apply_audit(audit, cmd, c->change_id, &c->eo, p, res, &c->approvals, result,
			      rc, &m);
	cli_say(&m);
}
