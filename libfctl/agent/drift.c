// SPDX-License-Identifier: MIT
/* Drift: the last applied profile planned against the live state. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "fctl/agent.h"
#include "fctl/engine.h"

/* Adds name to the space-separated list once (the per-link drift of the metrics). */
static void add_ifname(char *list, size_t len, const char *name)
{
	size_t n = strlen(name), used = strlen(list);

	if (!n)
		return;
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return;
	if (used + n + 2 > len)
		return;
	snprintf(list + used, len - used, "%s%s", used ? " " : "", name);
}

int fctl_drift_check(const struct fctl_engine_opts *o, struct fctl_drift_report *out,
		     char *err, size_t errlen)
{
	struct fctl_drift_report rep;
	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;
	struct fctl_live_plan lp = { 0 };
	const struct fctl_plan *plan;
	size_t off = 0;
	int r;

	memset(&rep, 0, sizeof(rep));
	r = fctl_engine_load_version(o, 0, &d, &p);
	fctl_diags_release(&d);
	if (r == -ENOENT) {
		*out = rep; /* nothing applied: nothing can drift */
		return 0;
	}
	if (r < 0) {
		snprintf(err, errlen, "cannot load the last applied profile: %s", strerror(-r));
		return r;
	}
	rep.applied = true;
	rep.version = p->version;
	snprintf(rep.profile, sizeof(rep.profile), "%s", p->name);
	r = fctl_engine_plan(p, o, &lp, err, errlen);
	plan = lp.plan;
	if (r == 0) {
		rep.ops = plan->n_ops;
		for (size_t i = 0; i < plan->n_ops && off < sizeof(rep.summary) - 1; i++) {
			int k = snprintf(rep.summary + off, sizeof(rep.summary) - off, "%s%s %s",
					 i ? "; " : "", fctl_op_kind_name(plan->ops[i].kind),
					 plan->ops[i].addr ? plan->ops[i].addr : plan->ops[i].ifname);

			if (k < 0)
				break;
			off += (size_t)k;
		}
		for (size_t i = 0; i < plan->n_ops; i++)
			add_ifname(rep.ifnames, sizeof(rep.ifnames), plan->ops[i].ifname);
		for (size_t i = 0; i < lp.findings.n && !rep.pfc[0]; i++)
			if (strncmp(lp.findings.v[i].code, "pfc-", 4) == 0)
				snprintf(rep.pfc, sizeof(rep.pfc), "%s [%s]", lp.findings.v[i].msg,
					 lp.findings.v[i].code);
	}
	fctl_live_plan_release(&lp);
	fctl_profile_free(p);
	if (r == 0)
		*out = rep;
	return r;
}
