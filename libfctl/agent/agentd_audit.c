// SPDX-License-Identifier: MIT
/* The agent's audit log: opened at start, one call site for its events, closed at exit. */
#include <stdio.h>

#include "agentd_int.h"

/*
 * The audit-open policy of every writer (fctl_audit_open_policy): the configured log,
 * its checkpoint key beside it (made on first use), and, the agent being long-lived,
 * a signed checkpoint after every flush, so no event waits for the agent to stop
 * before a signature covers it.
 */
void fctl_agentd_audit_open(struct agent *a)
{
	struct fctl_audit_policy ap = {
		.log_path = a->cfg.audit_log,
		.create_key = true,
		.checkpoint_every = 1,
	};
	char aerr[512];
	int ar = fctl_audit_open_policy(&ap, &a->audit, aerr, sizeof(aerr));

	if (ar < 0)
		fctl_agentd_log("audit log unavailable (events go to this log only): %s", aerr);
	else if (ar & FCTL_AUDIT_KEY_CREATED)
		fctl_agentd_log("audit: %s", aerr);
	else if (ar & FCTL_AUDIT_UNSIGNED)
		fctl_agentd_log("warning: audit: %s", aerr);
}

void fctl_agentd_audit_close(struct agent *a)
{
	if (a->audit && fctl_audit_close(a->audit) < 0)
		fctl_agentd_log("audit: the closing checkpoint was not written");
	a->audit = NULL;
}

/*
 * The one audit call site of the agent: refused connections and requests, applies,
 * rollbacks, recoveries, drift and repairs. Without an audit log, the event goes to
 * the log only.
 */
static void append(struct agent *a, const char *action, const char *result,
		   const char *actor_cert, bool has_uid, uid_t uid, const char *detail)
{
	struct fctl_audit_entry e = {
		.action = action,
		.result = result,
		.actor_cert = actor_cert,
		.has_actor_uid = has_uid,
		.actor_uid = uid,
		.host = a->host,
		.detail = detail,
	};

	if (!a->audit)
		return;
	if (fctl_audit_append(a->audit, &e) < 0 || fctl_audit_sync(a->audit) < 0)
		fctl_agentd_log("audit: %s", fctl_audit_error(a->audit));
}

void fctl_agentd_audit_actor(struct agent *a, const char *action, const char *result,
			     const char *actor_cert, bool has_uid, uid_t uid, const char *detail)
{
	char who[64] = "";

	if (!actor_cert && has_uid)
		snprintf(who, sizeof(who), "uid %u", (unsigned)uid);
	fctl_agentd_log("%s %s%s%s%s%s", action, result, actor_cert || who[0] ? " by " : "",
			actor_cert ? actor_cert : who, detail ? ": " : "", detail ? detail : "");
	append(a, action, result, actor_cert, has_uid, uid, detail);
}

void fctl_agentd_audit_event(struct agent *a, const char *action, const char *result,
			     const struct conn *c, const char *detail)
{
	/* the log line names c->who (with the pid on the Unix socket); the record its
	 * certificate subject or peer, else its uid */
	fctl_agentd_log("%s %s%s%s%s%s", action, result, c ? " by " : "", c ? c->who : "",
			detail ? ": " : "", detail ? detail : "");
	append(a, action, result, c && c->kind != C_UNIX && c->who[0] ? c->who : NULL,
	       c && c->has_uid, c ? c->uid : 0, detail);
}

void fctl_agentd_audit_kcv(struct agent *a, const char *action, const char *result,
			   const char *detail, const char *kcv)
{
	const char *kcvs[1] = { kcv };
	struct fctl_audit_entry e = {
		.action = action,
		.result = result,
		.host = a->host,
		.detail = detail,
		.kcvs = kcvs,
		.n_kcvs = kcv && *kcv ? 1 : 0,
	};

	fctl_agentd_log("%s %s%s%s", action, result, detail ? ": " : "", detail ? detail : "");
	if (!a->audit)
		return;
	if (fctl_audit_append(a->audit, &e) < 0 || fctl_audit_sync(a->audit) < 0)
		fctl_agentd_log("audit: %s", fctl_audit_error(a->audit));
}
