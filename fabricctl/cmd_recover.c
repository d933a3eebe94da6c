// SPDX-License-Identifier: MIT
/* fabricctl recover: an interrupted apply, or an apply --confirm past its deadline, rolled back */
#include <stdio.h>
#include <string.h>

#include "host.h"

int cmd_recover(int argc, char **argv)
{
	return cli_host_cmd("recover", argc, argv, false, cli_recover_run);
}

int cli_recover_run(const struct cli_host *c)
{
	struct fctl_audit *audit = NULL;
	struct fctl_apply_result res;
	int r, rc;

	if (cli_audit_open(c->audit_log, &audit) < 0)
		cli_err("recover: continuing WITHOUT an audit record: restoring the host comes first");
	r = fctl_engine_recover(&c->eo, &res);
	rc = r < 0 ? EXIT_FAILED : cli_withheld_exit(&res, EXIT_OK); /* its reason in the record */
	if (audit && r != 0 && (res.recovered || r < 0)) {
		struct fctl_host_event ev = { .action = "recover", .host = res.host,
					      .change_id = c->change_id, .error = res.error,
					      .result = r == 1 ? "recovered" : "failed" };

		if (!res.confirm_rolled_back && res.has_ledger) /* else the last record's */
			ev.ledger = &res.ledger;

		cli_audit_record(audit, &ev);
	}
	if (audit && res.confirm_rolled_back) {
		struct fctl_host_event ev = {
			.action = "confirm-rollback", .result = "rolled-back", .host = res.host,
			.change_id = c->change_id, .plan = res.plan, .kcvs = res.kcvs,
			.n_kcvs = res.n_kcvs, .has_counts = true, .ops = res.ops_done,
			.writes = res.writes,
			.detail = "an apply --confirm not confirmed by its deadline went back to the "
				  "version before",
			.ledger = res.has_ledger ? &res.ledger : NULL,
		};

		cli_audit_record(audit, &ev);
	}
	cli_audit_close(audit);
	if (c->json)
		printf("{\"host\":\"%s\",\"recovered\":%s,\"rolled_back\":%s,\"restored_exactly\":%s,"
		       "\"confirm_rolled_back\":%s,\"sas_withheld\":%zu}\n",
		       res.host, res.recovered ? "true" : "false", res.rolled_back ? "true" : "false",
		       res.restored_exactly ? "true" : "false",
		       res.confirm_rolled_back ? "true" : "false", res.withheld);
	if (r < 0) {
		cli_err("recover failed on %s: %s", res.host, res.error[0] ? res.error : strerror(-r));
		return EXIT_FAILED;
	}
	if (!c->json && !c->quiet && res.recovered)
		printf("recovered: the interrupted apply on %s was rolled back to the prior state\n",
		       res.host);
	if (!c->json && !c->quiet && res.confirm_rolled_back)
		printf("rolled back: the apply --confirm on %s was not confirmed by its deadline; "
		       "the version before is applied again\n", res.host);
	if (!c->json && !c->quiet && r == 0)
		printf("nothing to recover on %s\n", res.host);
	fctl_apply_result_release(&res);
	return rc;
}
