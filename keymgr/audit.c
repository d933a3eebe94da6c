// SPDX-License-Identifier: MIT
/* keymgr's audit records and their stderr lines, queued in a batch and flushed together
 * before every agent request and at each phase's end; the names of km_self's timings. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fctl/audit.h"
#include "rot.h"

const char *km_self_name(enum km_self s)
{
	static const char *const name[KS_N] = { "kms",	   "journal", "audit", "log",
						"current", "history", "agents" };

	return s < KS_N ? name[s] : "?";
}

void km_audit(struct km *k, const struct km_link *l, const char *action, const char *result,
	      const char *kcv, const char *key_state, const char *fmt, ...)
{
	char detail[700];
	double t0 = km_now_ms();
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	/* a batch's lines go out with its records (km_audit_flush): one write for many */
	if (!k->audit_defer ||
	    fctl_buf_printf(&k->errlines, "keymgr: %s %s %s: %s\n", l ? l->name : "-", action,
			    result, detail) < 0 || k->errlines.oom) {
		km_err_flush(k);
		fprintf(stderr, "keymgr: %s %s %s: %s\n", l ? l->name : "-", action, result, detail);
	}
	k->self_ms[KS_LOG] += km_now_ms() - t0;
	t0 = km_now_ms();
	if (k->audit) {
		const char *kcvs[1] = { kcv };
		struct fctl_audit_entry e = {
			.action = action,
			.result = result,
			.link = l ? l->name : NULL,
			.secy = l ? l->end[0].ifname : NULL,
			.detail = detail,
			.kcvs = kcv ? kcvs : NULL,
			.n_kcvs = kcv ? 1 : 0,
			.key_state = key_state,
		};

		if (fctl_audit_append(k->audit, &e) < 0 ||
		    (!k->audit_defer && fctl_audit_sync(k->audit) < 0))
			fprintf(stderr, "keymgr: audit: %s\n", fctl_audit_error(k->audit));
	}
	k->self_ms[KS_AUDIT] += km_now_ms() - t0;
}

int km_flush_before_request(struct km *k, char *err, size_t errlen)
{
	int r = km_journal_flush(k);

	if (r < 0) {
		snprintf(err, errlen, "cannot sync the journals in %s: %s (nothing sent)",
			 k->state_dir, strerror(-r));
		return r;
	}
	km_audit_flush(k);
	return 0;
}

void km_err_flush(struct km *k)
{
	double t0 = km_now_ms();

	if (k->errlines.len && !k->errlines.oom)
		fwrite(k->errlines.data, 1, k->errlines.len, stderr);
	fflush(stderr);
	fctl_buf_reset(&k->errlines);
	k->errlines.oom = false;
	k->self_ms[KS_LOG] += km_now_ms() - t0;
}

int km_audit_flush(struct km *k)
{
	km_err_flush(k);
	double t0 = km_now_ms();
	int r = k->audit ? fctl_audit_sync(k->audit) : 0;

	k->self_ms[KS_AUDIT] += km_now_ms() - t0;
	if (r < 0)
		fprintf(stderr, "keymgr: audit: %s\n", fctl_audit_error(k->audit));
	return r;
}

