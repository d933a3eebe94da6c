// SPDX-License-Identifier: MIT
/* fabricctl apply | show | rollback | teardown | recover | history, and the host commands' option tables */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fctl/approvals.h"
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

/* apply --confirm DURATION: 1 s to 7 days */
static int parse_confirm(const char *arg, struct cli_host *c)
{
	uint64_t s;

	if (cli_parse_confirm(arg, &s) < 0)
		return -EINVAL;
	c->eo.confirm_seconds = s;
	cli_confirm_id(c->confirm_id, sizeof(c->confirm_id));
	c->eo.confirm_id = c->confirm_id;
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

	memset(c, 0, sizeof(*c));
	/* keys of KMS references come from keymgr: this process holds no KMS credentials */
	c->eo.keymgr_path = cli_keymgr_path();
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

static void progress(void *ctx, const char *phase, size_t done, size_t total,
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
static int withheld_exit(struct fctl_apply_result *res, int rc)
{
	if (!res->withheld)
		return rc;
	cli_err("%zu SA%s WITHHELD on %s, fail-secure (the SecY protects and sends nothing "
		"with that key): %s", res->withheld, res->withheld == 1 ? "" : "s", res->host,
		res->withheld_why);
	if (!res->error[0])
		snprintf(res->error, sizeof(res->error), "%zu SAs withheld: %s", res->withheld,
			 res->withheld_why);
	return rc == EXIT_OK ? EXIT_WITHHELD : rc;
}

static void result_json(struct fctl_buf *o, const struct cli_host *c,
			const struct fctl_profile *p, const struct fctl_apply_result *res,
			const char *result)
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
static void audit_apply(struct fctl_audit *audit, const char *cmd, struct cli_host *c,
			const struct fctl_profile *p, const struct fctl_apply_result *res,
			const char *result, int *rc)
{
	struct cli_audit_event ev = {
		.host = res->host, .change_id = c->change_id, .p = p, .plan = res->plan,
		.kcvs = res->kcvs, .n_kcvs = res->n_kcvs, .approvals = &c->approvals,
	};
	struct fctl_confirm_pending cp;
	char detail[192];

	if (!audit)
		return;
	if (res->recovered) {
		ev.action = "recover";
		ev.result = "recovered";
		ev.detail = "an interrupted apply was rolled back before this one";
		ev.p = NULL;
		ev.plan = NULL;
		ev.n_kcvs = 0;
		if (cli_audit_record(audit, &ev) < 0 && *rc == EXIT_OK)
			*rc = EXIT_USAGE;
		ev.detail = NULL;
		ev.p = p;
		ev.plan = res->plan;
		ev.n_kcvs = res->n_kcvs;
	}
	ev.action = cmd;
	ev.result = result;
	ev.error = res->error;
	if (res->confirm_pending && fctl_engine_confirm_pending(&c->eo, &cp) == 1) {
		cli_confirm_detail(&cp, detail, sizeof(detail));
		ev.detail = detail;
	}
	ev.has_counts = true;
	ev.ops = res->ops_done;
	ev.writes = res->writes;
	ev.ledger = res->has_ledger ? &res->ledger : NULL;
	if (cli_audit_record(audit, &ev) < 0) {
		if (*rc == EXIT_OK && strcmp(result, "unchanged") != 0)
			cli_err("%s: the host WAS changed, but no audit record says so", cmd);
		if (*rc == EXIT_OK)
			*rc = EXIT_USAGE;
	}
}

/* FCTL_TEST_STOP_AFTER_APPLY=FILE (builds with FCTL_TEST_HOOKS only, docs/apply.md): after
 * the engine returned, the pid goes to FILE and the process stops itself, for a test to
 * kill -9 it there. */
static void test_stop_after_apply(void)
{
#ifdef FCTL_TEST_HOOKS
	const char *f = getenv("FCTL_TEST_STOP_AFTER_APPLY");
	FILE *o;

	if (!f || !*f || !(o = fopen(f, "w")))
		return;
	fprintf(o, "%ld\n", (long)getpid());
	fclose(o);
	raise(SIGSTOP);
#endif
}

/* FCTL_TEST_SWAP_PROFILE=SRC (builds with FCTL_TEST_HOOKS only, docs/apply.md): after
 * the desired-state cache read the profile's bytes, SRC's bytes are written over the
 * profile file, before it is loaded: a file rewritten between the two reads. */
static void test_swap_profile(const char *file)
{
#ifdef FCTL_TEST_HOOKS
	const char *src = getenv("FCTL_TEST_SWAP_PROFILE");
	struct fctl_buf b = { 0 };
	FILE *o;

	if (src && *src && fctl_file_read(src, &b) == 0 && (o = fopen(file, "w"))) {
		if (fwrite(b.data, 1, b.len, o) != b.len)
			cli_err("FCTL_TEST_SWAP_PROFILE: short write to %s", file);
		fclose(o);
	}
	fctl_buf_release(&b);
#else
	(void)file;
#endif
}

/* Approvals (docs/approvals.md): with a policy on this host, a version without the
 * approvals it requires is refused before anything is read from the kernel: said, audited
 * as refused (who signed, who is missing, which allowed_signers file), the audit log
 * closed, nothing changed. A dry run only says what an apply would meet. */
static int approvals_gate(struct fctl_audit *audit, const char *cmd, struct cli_host *c,
			  const struct fctl_profile *p, struct fctl_approvals *appr)
{
	char why[2048], host[64] = "";
	int rc;

	if (c->eo.dry_run) {
		cli_approvals_note(p, cmd, true, c->quiet || c->json);
		return EXIT_OK;
	}
	rc = cli_approvals_gate(p, appr, why, sizeof(why));
	if (rc == EXIT_OK)
		return rc; /* the apply's record names them */
	cli_err("%s: refused: %s; nothing was changed", cmd, why);
	fctl_engine_host_name(&c->eo, host, sizeof(host));
	{
		struct cli_audit_event ev = { .action = cmd, .result = "refused", .host = host,
					      .change_id = c->change_id, .p = p, .error = why };

		if (audit && cli_audit_record(audit, &ev) < 0)
			rc = EXIT_USAGE;
	}
	cli_audit_close(audit);
	fctl_approvals_release(appr);
	return rc;
}

static int do_apply(const char *cmd, struct cli_host *c, struct fctl_profile *p)
{
	struct fctl_apply_result res;
	struct fctl_buf out = { 0 };
	struct fctl_audit *audit = NULL;
	const char *result;
	int r, rc, life_fd = -1;

	if (c->eo.dry_run && c->eo.confirm_seconds) {
		cli_err("%s: --confirm with --dry-run: a plan has nothing to confirm", cmd);
		return EXIT_USAGE;
	}
	/* apply --plan FILE: this host, these bytes; the engine checks the rest under the lock */
	if (c->plan && (rc = cli_saved_plan_check(c, p)) != EXIT_OK)
		return rc;
	if (!c->eo.dry_run && cli_audit_open(c->audit_log, &audit) < 0) {
		cli_err("%s: refused: the audit log cannot be written, nothing was changed "
			"(--audit-log PATH or FCTL_AUDIT_LOG to use another)",
			cmd);
		return EXIT_USAGE;
	}
	rc = approvals_gate(audit, cmd, c, p, &c->approvals); /* refused: audited, closed */
	if (rc != EXIT_OK)
		return rc;
	/* before the apply: the deadline's owner, should this process die at any point */
	if (c->eo.confirm_seconds &&
	    cli_confirm_watch(&c->eo, c->audit_log, c->change_id, &life_fd) < 0) {
		cli_audit_close(audit);
		return EXIT_USAGE;
	}
	if (!c->json && !c->quiet && isatty(fileno(stderr)))
		c->eo.progress = progress;
	r = fctl_engine_apply(p, &c->eo, &res);
	test_stop_after_apply();
	if (!c->json)
		cli_findings_text(&res.findings);
	if (r < 0 && res.refused) {
		/* apply --plan: a saved plan that no longer holds is a check of the input that
		 * failed (exit 1); anything else refused is the environment's (exit 2) */
		if (r == -ESTALE)
			cli_err("%s: %s", cmd, res.error);
		rc = r == -ESTALE ? EXIT_INVALID : cli_env_error(cmd, r, res.error);
		if (c->json) {
			result_json(&out, c, p, &res, "refused");
			cli_write(stdout, &out);
		}
		audit_apply(audit, cmd, c, p, &res, "refused", &rc);
		goto out;
	}
	if (r == 0 && res.withheld)
		result = "withheld";
	else if (r == 0)
		result = res.plan && res.plan->n_ops && !c->eo.dry_run ? "applied"
			 : c->eo.dry_run				 ? "planned"
									 : "unchanged";
	else
		result = res.rolled_back && res.restored_exactly ? "rolled-back" : "failed";
	if (c->json) {
		result_json(&out, c, p, &res, result);
	} else if (!c->quiet) {
		if (res.recovered)
			fctl_buf_printf(&out, "recovered: an interrupted apply was rolled back first\n");
		if (res.plan && res.plan->n_ops)
			fctl_plan_to_text(res.plan, &out, cli_color(stdout));
		if (r == 0 && c->eo.dry_run)
			fctl_buf_printf(&out, "dry run: nothing changed\n");
		else if (r == 0 && (!res.plan || !res.plan->n_ops))
			fctl_buf_printf(&out,
					"host %s already matches %s version %" PRIu64
					": no changes, %" PRIu64 " netlink writes\n",
					res.host, p->name, p->version, res.writes);
		else if (r == 0)
			fctl_buf_printf(&out,
					"applied %s version %" PRIu64 " on %s: %zu operations, %" PRIu64
					" netlink writes, %" PRIu64 " round trips, %.3f s\n",
					p->name, p->version, res.host, res.ops_done, res.writes,
					res.round_trips, res.seconds);
	}
	cli_write(stdout, &out);
	if (r < 0) {
		cli_err("%s failed on %s: %s", cmd, res.host, res.error);
		if (res.rolled_back && res.restored_exactly)
			cli_err("rolled back: %s is exactly as it was before", res.host);
		else
			cli_err("ROLLBACK INCOMPLETE on %s: run 'fabricctl recover' and inspect "
				"with 'fabricctl show'",
				res.host);
		rc = EXIT_FAILED;
	} else {
		if (res.error[0])
			cli_err("warning: %s", res.error);
		/* --dry-run --detailed-exitcode: plan's exit, 0 no changes, 4 changes, 5 disruptive */
		rc = c->eo.dry_run && res.plan ? cli_plan_exit(c->detailed, res.plan->n_ops,
				fctl_plan_count_disruptive(res.plan)) : EXIT_OK;
		/* the VLAN devices of MKA ports exist now: their wpa_supplicants next */
		if (!c->eo.dry_run) {
			rc = cli_mka_up(p, res.host, c->eo.netns, c->eo.keymgr_path,
					c->quiet || c->json);
			/* the record names the CAKs in use by their check values, as the SAKs */
			cli_mka_kcvs(p, res.host, &res);
		}
		if (rc != EXIT_OK && !c->eo.dry_run)
			result = "failed";
		rc = withheld_exit(&res, rc);
	}
	if (!c->eo.dry_run)
		audit_apply(audit, cmd, c, p, &res, result, &rc);
out:
	if (cli_audit_close(audit) < 0 && rc == EXIT_OK)
		rc = EXIT_USAGE;
	if (r == 0 && res.confirm_pending && !c->quiet && !c->json)
		cli_confirm_note(&c->eo);
	if (life_fd >= 0)
		close(life_fd); /* the watchdog now needs nothing of this process */
	fctl_buf_release(&out);
	fctl_apply_result_release(&res);
	fctl_approvals_release(&c->approvals);
	return rc;
}

/* Whether profile p was parsed from exactly these bytes (its sha256 is of its file's). */
static bool same_bytes(const struct fctl_profile *p, const struct fctl_buf *b)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	return EVP_Digest(b->data, b->len, md, &n, EVP_sha256(), NULL) == 1 &&
	       n == sizeof(p->sha256) && CRYPTO_memcmp(md, p->sha256, n) == 0;
}

/* An apply of the bytes applied (or stored) last for this host: the desired-state cache
 * (docs/apply.md "Unchanged re-applies") stands for the profile's load, validation and
 * render; the engine still reads the live state, plans, repairs drift and the record is
 * audited as always. Any other apply loads the profile and, when it succeeded, stores
 * its state. Returns the exit code, or -1 when the caller is to load the profile. */
static int apply_cached(struct cli_host *c, const char *file)
{
	struct fctl_host_state *want = NULL;
	struct fctl_profile *p = NULL;
	struct fctl_buf bytes = { 0 };
	int r, rc;

	if (c->eo.dry_run || fctl_file_read(file, &bytes) < 0) {
		fctl_buf_release(&bytes);
		return -1;
	}
	test_swap_profile(file);
	r = fctl_engine_desired_load(&c->eo, file, (const unsigned char *)bytes.data, bytes.len,
				     &p, &want);
	c->desired_cache = r == 1 ? "hit" : r == 0 ? "miss" : "ignored";
	if (r != 1) {
		rc = cli_load_profile(file, &p, true, c->json);
		if (rc != EXIT_OK) {
			fctl_buf_release(&bytes);
			return rc;
		}
	}
	c->eo.desired = want;
	rc = do_apply("apply", c, p);
	/* stored only when the profile loaded is the bytes the entry is keyed by: a file
	 * rewritten between the two reads must not give those bytes this state */
	if (r != 1 && rc == EXIT_OK && same_bytes(p, &bytes))
		fctl_engine_desired_store(&c->eo, file, (const unsigned char *)bytes.data,
					  bytes.len, p); /* a failure only costs the next load */
	c->eo.desired = NULL;
	fctl_host_state_free(want);
	fctl_profile_free(p);
	fctl_buf_release(&bytes);
	return rc;
}

int cmd_apply(int argc, char **argv)
{
	int remote = cmd_fabric_dispatch("apply", argc, argv); /* --fabric, --target */

	if (remote >= 0)
		return remote;

	struct fctl_profile *p = NULL;
	char saved[1024];
	const char *file;
	struct cli_host c;
	int rc = cli_host_parse("apply", argc, argv, &c, NULL);

	if (rc >= 0)
		return rc;
	if (c.plan && optind == argc) {
		/* apply --plan FILE: the profile the saved plan was made from */
		rc = cli_saved_plan_profile(c.plan, saved, sizeof(saved));
		if (rc != EXIT_OK)
			return rc;
		file = saved;
	} else if (optind + 1 == argc) {
		file = argv[optind];
	} else {
		cli_err("apply: expected exactly one PROFILE");
		return EXIT_USAGE;
	}
	rc = cli_need_regular("apply", file);
	if (rc != EXIT_OK)
		return rc;
	rc = apply_cached(&c, file);
	if (rc >= 0)
		return rc;
	rc = cli_load_profile(file, &p, true, c.json);
	if (rc != EXIT_OK)
		return rc;
	rc = do_apply("apply", &c, p);
	fctl_profile_free(p);
	return rc;
}

int cmd_rollback(int argc, char **argv)
{
	int remote = cmd_fabric_dispatch("rollback", argc, argv); /* --fabric, --target */

	if (remote >= 0)
		return remote;

	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;
	const char *to = NULL;
	struct cli_host c;
	uint64_t ver;
	int rc = cli_host_parse("rollback", argc, argv, &c, &to);

	if (rc >= 0)
		return rc;
	if (to && fctl_parse_u64(to, &ver) == 0 && ver == 0) {
		cli_err("rollback: version 0 is the host before fabricctl made anything: that is "
			"'fabricctl teardown' (try 'fabricctl teardown --dry-run' first)");
		return EXIT_USAGE;
	}
	if (!to || optind != argc || fctl_parse_u64(to, &ver) < 0 || ver == 0) {
		cli_err("rollback: expected --to VERSION (a profile version from 'fabricctl "
			"history')");
		return EXIT_USAGE;
	}
	rc = fctl_engine_load_version(&c.eo, ver, &d, &p);
	if (rc < 0) {
		struct fctl_buf b = { 0 };

		fctl_diags_to_text(&d, &b, cli_color(stderr));
		cli_write(stderr, &b);
		fctl_buf_release(&b);
		cli_err("rollback: version %" PRIu64 " %s", ver,
			rc == -ENOENT ? "was never applied on this host (see 'fabricctl history')"
				      : "cannot be loaded from the history");
		fctl_diags_release(&d);
		return EXIT_USAGE;
	}
	fctl_diags_release(&d);
	rc = do_apply("rollback", &c, p);
	fctl_profile_free(p);
	return rc;
}

/* teardown's text: what was (or would be) removed, and how it ended */
static void teardown_text(struct fctl_buf *out, const struct cli_host *c,
			  const struct fctl_apply_result *res, int r)
{
	if (res->recovered)
		fctl_buf_printf(out, "recovered: an interrupted apply was rolled back first\n");
	if (res->plan && res->plan->n_ops)
		fctl_plan_to_text(res->plan, out, cli_color(stdout));
	if (r < 0)
		return;
	if (!res->plan || !res->plan->n_ops)
		fctl_buf_printf(out, "host %s: no link fabricctl manages is present; nothing to "
				     "remove\n", res->host);
	else if (c->eo.dry_run)
		fctl_buf_printf(out, "dry run: nothing changed\n");
	else
		fctl_buf_printf(out,
				"removed every link fabricctl manages on %s: %zu operations, %" PRIu64
				" netlink writes, %.3f s (the history is kept: 'rollback --to "
				"VERSION' applies one again)\n",
				res->host, res->ops_done, res->writes, res->seconds);
}

/* teardown: remove every link fabricctl manages here, all or nothing, audited as apply */
int cmd_teardown(int argc, char **argv)
{
	struct fctl_apply_result res;
	struct fctl_audit *audit = NULL;
	struct fctl_buf out = { 0 };
	const char *result;
	struct cli_host c;
	int r, rc = cli_host_parse("teardown", argc, argv, &c, NULL);

	if (rc >= 0)
		return rc;
	if (optind != argc) {
		cli_err("teardown: unexpected argument '%s' (it takes no PROFILE: it removes the "
			"links of the last applied one)", argv[optind]);
		return EXIT_USAGE;
	}
	if (!c.eo.dry_run && cli_audit_open(c.audit_log, &audit) < 0) {
		cli_err("teardown: refused: the audit log cannot be written, nothing was changed "
			"(--audit-log PATH or FCTL_AUDIT_LOG to use another)");
		return EXIT_USAGE;
	}
	if (!c.json && !c.quiet && isatty(fileno(stderr)))
		c.eo.progress = progress;
	r = fctl_engine_teardown(&c.eo, &res);
	if (r == 0)
		result = c.eo.dry_run ? "planned" : res.plan && res.plan->n_ops ? "removed"
										   : "unchanged";
	else if (res.refused)
		result = "refused";
	else
		result = res.rolled_back && res.restored_exactly ? "rolled-back" : "failed";
	if (c.json)
		result_json(&out, &c, NULL, &res, result);
	else if (!c.quiet || r < 0)
		teardown_text(&out, &c, &res, r);
	cli_write(stdout, &out);
	if (r < 0 && res.refused) {
		rc = cli_env_error("teardown", r, res.error);
	} else if (r < 0) {
		cli_err("teardown failed on %s: %s", res.host, res.error);
		if (res.rolled_back && res.restored_exactly)
			cli_err("rolled back: %s is exactly as it was before", res.host);
		else
			cli_err("ROLLBACK INCOMPLETE on %s: run 'fabricctl recover' and inspect "
				"with 'fabricctl show'", res.host);
		rc = EXIT_FAILED;
	} else {
		rc = withheld_exit(&res, EXIT_OK);
	}
	if (!c.eo.dry_run)
		audit_apply(audit, "teardown", &c, NULL, &res, result, &rc);
	if (cli_audit_close(audit) < 0 && rc == EXIT_OK)
		rc = EXIT_USAGE;
	fctl_buf_release(&out);
	fctl_apply_result_release(&res);
	return rc;
}

int cmd_recover(int argc, char **argv)
{
	int remote = cmd_fabric_dispatch("recover", argc, argv); /* --fabric, --target */

	if (remote >= 0)
		return remote;

	struct fctl_apply_result res;
	struct cli_host c;
	int r, rc = cli_host_parse("recover", argc, argv, &c, NULL);

	if (rc >= 0)
		return rc;
	struct fctl_audit *audit = NULL;

	if (cli_audit_open(c.audit_log, &audit) < 0)
		cli_err("recover: continuing WITHOUT an audit record: restoring the host comes first");
	r = fctl_engine_recover(&c.eo, &res);
	rc = r < 0 ? EXIT_FAILED : withheld_exit(&res, EXIT_OK); /* its reason in the record */
	if (audit && r != 0 && (res.recovered || r < 0)) {
		struct cli_audit_event ev = { .action = "recover", .host = res.host,
					      .change_id = c.change_id, .error = res.error,
					      .result = r == 1 ? "recovered" : "failed" };

		if (!res.confirm_rolled_back && res.has_ledger) /* else the last record's */
			ev.ledger = &res.ledger;

		cli_audit_record(audit, &ev);
	}
	if (audit && res.confirm_rolled_back) {
		struct cli_audit_event ev = {
			.action = "confirm-rollback", .result = "rolled-back", .host = res.host,
			.change_id = c.change_id, .plan = res.plan, .kcvs = res.kcvs,
			.n_kcvs = res.n_kcvs, .has_counts = true, .ops = res.ops_done,
			.writes = res.writes,
			.detail = "an apply --confirm not confirmed by its deadline went back to the "
				  "version before",
			.ledger = res.has_ledger ? &res.ledger : NULL,
		};

		cli_audit_record(audit, &ev);
	}
	cli_audit_close(audit);
	if (c.json)
		printf("{\"host\":\"%s\",\"recovered\":%s,\"rolled_back\":%s,\"restored_exactly\":%s,"
		       "\"confirm_rolled_back\":%s,\"sas_withheld\":%zu}\n",
		       res.host, res.recovered ? "true" : "false", res.rolled_back ? "true" : "false",
		       res.restored_exactly ? "true" : "false",
		       res.confirm_rolled_back ? "true" : "false", res.withheld);
	if (r < 0) {
		cli_err("recover failed on %s: %s", res.host, res.error[0] ? res.error : strerror(-r));
		return EXIT_FAILED;
	}
	if (!c.json && !c.quiet && res.recovered)
		printf("recovered: the interrupted apply on %s was rolled back to the prior state\n",
		       res.host);
	if (!c.json && !c.quiet && res.confirm_rolled_back)
		printf("rolled back: the apply --confirm on %s was not confirmed by its deadline; "
		       "the version before is applied again\n", res.host);
	if (!c.json && !c.quiet && r == 0)
		printf("nothing to recover on %s\n", res.host);
	fctl_apply_result_release(&res);
	return rc;
}

int cmd_show(int argc, char **argv)
{
	int remote = cmd_fabric_dispatch("show", argc, argv); /* --fabric, --target */

	if (remote >= 0)
		return remote;

	struct fctl_host_state *live = NULL;
	struct fctl_buf out = { 0 };
	char err[768] = "";
	struct cli_host c;
	int r, rc = cli_host_parse("show", argc, argv, &c, NULL);

	if (rc >= 0)
		return rc;
	if (optind != argc) {
		cli_err("show: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	r = fctl_engine_show(NULL, &c.eo, &live, err, sizeof(err));
	if (r < 0)
		return cli_env_error("show", r, err);
	if (c.json) {
		fctl_host_state_to_json(live, &out);
		if (out.len && out.data[out.len - 1] == '}') {
			out.len--;
			fctl_buf_puts(&out, ",\"mka\":");
			cli_mka_show(c.eo.netns, &out, true);
			fctl_buf_puts(&out, ",\"confirm\":");
			cli_confirm_show(&c.eo, &out);
			fctl_buf_putc(&out, '}');
		}
		fctl_buf_putc(&out, '\n');
	} else {
		r = fctl_state_to_profile(live, &out);
		if (r >= 0)
			cli_mka_show(c.eo.netns, &out, false);
		cli_confirm_show(&c.eo, NULL);
	}
	rc = r < 0 || cli_write(stdout, &out) < 0 ? EXIT_USAGE : EXIT_OK;
	fctl_buf_release(&out);
	fctl_host_state_free(live);
	return rc;
}

int cmd_history(int argc, char **argv)
{
	int remote = cmd_fabric_dispatch("history", argc, argv); /* --fabric, --target */

	if (remote >= 0)
		return remote;

	struct fctl_history_entry *v = NULL;
	struct fctl_buf out = { 0 };
	struct cli_host c;
	size_t n = 0;
	int r, rc = cli_host_parse("history", argc, argv, &c, NULL);

	if (rc >= 0)
		return rc;
	r = fctl_engine_history(&c.eo, &v, &n);
	if (r < 0)
		return cli_env_error("history", r, NULL);
	if (c.json)
		fctl_buf_puts(&out, "[");
	else if (!n)
		fctl_buf_puts(&out, "no profile has been applied on this host\n");
	else
		fctl_buf_printf(&out, "%-5s %-8s %-20s %-21s %s\n", "SEQ", "VERSION", "PROFILE",
				"APPLIED (UTC)", "SHA-256");
	for (size_t i = 0; i < n; i++) {
		if (c.json) {
			fctl_buf_printf(&out, "%s{\"seq\":%" PRIu64 ",\"version\":%" PRIu64 ",\"profile\":",
					i ? "," : "", v[i].seq, v[i].version);
			fctl_buf_json_str(&out, v[i].name);
			fctl_buf_printf(&out, ",\"applied\":\"%s\",\"sha256\":\"%s\",\"stored\":",
					v[i].time, v[i].sha256);
			fctl_buf_json_str(&out, v[i].file);
			fctl_buf_putc(&out, '}');
		} else {
			fctl_buf_printf(&out, "%-5" PRIu64 " %-8" PRIu64 " %-20s %-21s %.16s\n",
					v[i].seq, v[i].version, v[i].name, v[i].time, v[i].sha256);
		}
	}
	if (c.json)
		fctl_buf_puts(&out, "]\n");
	cli_write(stdout, &out);
	fctl_buf_release(&out);
	free(v);
	return EXIT_OK;
}
