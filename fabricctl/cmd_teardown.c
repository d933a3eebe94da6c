// SPDX-License-Identifier: MIT
/* fabricctl teardown: every link fabricctl manages on this host removed, all or nothing, audited as apply */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "fctl/audit.h"
#include "fctl/plan.h"
#include "host.h"

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
		c.eo.progress = cli_progress;
	r = fctl_engine_teardown(&c.eo, &res);
	if (r == 0)
		result = c.eo.dry_run ? "planned" : res.plan && res.plan->n_ops ? "removed"
										   : "unchanged";
	else if (res.refused)
		result = "refused";
	else
		result = res.rolled_back && res.restored_exactly ? "rolled-back" : "failed";
	if (c.json)
		cli_apply_json(&out, &c, NULL, &res, result);
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
		rc = cli_withheld_exit(&res, EXIT_OK);
	}
	if (!c.eo.dry_run)
		cli_apply_audit(audit, "teardown", &c, NULL, &res, result, &rc);
	if (cli_audit_close(audit) < 0 && rc == EXIT_OK)
		rc = EXIT_USAGE;
	fctl_buf_release(&out);
	fctl_apply_result_release(&res);
	return rc;
}
