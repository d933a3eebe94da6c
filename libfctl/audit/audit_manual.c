// SPDX-License-Identifier: MIT
/* Manual records (audit append): the actions the tool writes itself, which a record written by hand may not take. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fctl/audit.h"

#define MANUAL_ACTION_MAX 48

/*
 * Every action fabricctl's programs write (docs/audit.md "Manual records"): the CLI's
 * (apply, rollback, recover, drift, confirm, confirm-rollback, teardown, node-check), the
 * packet-number ledger's anchor (sa-ledger, after a change's record), the writer's own
 * log-repair, the probe's verdicts (probe, and probe-fabric: `probe --fabric`), the agent's (its connections, front-end,
 * pull mode, drift repair, and each request by its protocol type name: fctl_proto_type_name),
 * and two families: key-* (keymgr: key-rotation, key-state) and mka-* (the agent's MKA
 * supervision). tests/unit/test_audit.c checks that every protocol type name is here.
 */
static const char *const tool_actions[] = {
	"apply", "rollback", "recover", "drift", "drift-repair", "confirm", "confirm-rollback",
	"teardown", "node-check", "log-repair", "probe", "probe-fabric", "connect", "frontend",
	"pull", "request", "sa-ledger",
	/* the agent's requests, by protocol type name */
	"hello", "status", "plan", "show", "diff", "history", "sa-dump", "rxsa-install",
	"txsa-stage", "txsa-switch", "encoding-sa", "sa-retire", "sa-batch", "response",
	"probe-serve", "probe-run",
};
static const char *const tool_families[] = { "key-", "mka-" };

bool fctl_audit_action_is_tool(const char *action)
{
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(tool_actions); i++)
		if (!strcmp(action, tool_actions[i]))
			return true;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(tool_families); i++)
		if (!strncmp(action, tool_families[i], strlen(tool_families[i])))
			return true;
	return false;
}

int fctl_audit_manual_action_check(const char *action, char *err, size_t errlen)
{
	size_t n = action ? strlen(action) : 0;
	bool ok = n > 0 && n <= MANUAL_ACTION_MAX && action[0] >= 'a' && action[0] <= 'z';

	for (size_t i = 0; ok && i < n; i++)
		ok = (action[i] >= 'a' && action[i] <= 'z') || (action[i] >= '0' && action[i] <= '9') ||
		     action[i] == '-';
	if (!ok) {
		if (n && n <= MANUAL_ACTION_MAX)
			snprintf(err, errlen, "action '%.*s' is not a name: lowercase letters, digits "
				 "and '-', starting with a letter", MANUAL_ACTION_MAX, action);
		else
			snprintf(err, errlen, "an action is a name of 1 to %d characters: lowercase "
				 "letters, digits and '-'", MANUAL_ACTION_MAX);
		return -EINVAL;
	}
	if (fctl_audit_action_is_tool(action)) {
		snprintf(err, errlen, "action '%s' is one fabricctl writes itself: a manual record "
			 "cannot take it (name what was done by hand, e.g. 'kms-rotate' or "
			 "'change-approved')", action);
		return -EINVAL;
	}
	return 0;
}
