// SPDX-License-Identifier: MIT
/* The host transaction's messages and audit records: the lines it hands the program, the
 * audit log opened, written and closed by the policy (docs/audit.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fctl/host_apply.h"
#include "fctl/plan.h"
#include "fctl/profile.h"
#include "fctl/sa_ledger.h"
#include "fctl/util.h"
#include "host_int.h"

void fctl_host_msgs_release(struct fctl_host_msgs *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].text);
	free(m->v);
	*m = (struct fctl_host_msgs){ 0 };
}

void fctl_hosti_vsay(struct fctl_host_msgs *m, bool plain, const char *fmt, va_list ap)
{
	struct fctl_host_msg *v;
	va_list aq;
	char *t;
	int n;

	if (!m)
		return;
	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	t = n < 0 ? NULL : malloc((size_t)n + 1);
	if (!t || !(v = realloc(m->v, (m->n + 1) * sizeof(*v)))) {
		free(t);
		m->oom = true;
		return;
	}
	vsnprintf(t, (size_t)n + 1, fmt, ap);
	m->v = v;
	m->v[m->n++] = (struct fctl_host_msg){ .plain = plain, .text = t };
}

void fctl_hosti_say(struct fctl_host_msgs *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fctl_hosti_vsay(m, false, fmt, ap);
	va_end(ap);
}

void fctl_hosti_plain(struct fctl_host_msgs *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fctl_hosti_vsay(m, true, fmt, ap);
	va_end(ap);
}

int fctl_host_audit_open(const char *log, const struct fctl_audit_actor *actor,
			 struct fctl_audit **out, struct fctl_host_msgs *m)
{
	struct fctl_audit_policy p = {
		.log_path = log, .env = true, .create_key = true, .batch = 64,
	};
	char err[512] = "";
	int r;

	if (actor)
		p.actor = *actor;
	r = fctl_audit_open_policy(&p, out, err, sizeof(err));
	if (r < 0)
		fctl_hosti_say(m, "AUDIT LOG UNAVAILABLE: %s", err);
	else if (r & FCTL_AUDIT_KEY_CREATED)
		fctl_hosti_say(m, "audit: %s", err);
	else if (r & FCTL_AUDIT_UNSIGNED)
		fctl_hosti_say(m, "warning: audit: %s%s", err,
			       " (run 'fabricctl audit keygen --out DIR')");
	return r < 0 ? r : 0;
}

#define APPROVAL_LEN 256
/* the counted approvals as the record names them: "PRINCIPAL SHA256:KEY sha256:SIG", a
 * principal's quotes, backslashes and unprintable bytes as '?' */
static size_t approvals_strings(const struct fctl_approvals *ap, char out[][APPROVAL_LEN],
				const char **v)
{
	size_t n = 0;

	for (size_t i = 0; ap && i < ap->n && n < FCTL_AUDIT_MAX_KEYS; i++) {
		const struct fctl_approval_sig *s = &ap->v[i];

		if (s->state != FCTL_APPROVAL_COUNTED)
			continue;
		snprintf(out[n], APPROVAL_LEN, "%.120s %s %s", s->principal, s->fp, s->digest);
		for (char *c = out[n]; *c; c++)
			if (*c < 0x20 || *c > 0x7e || *c == '"' || *c == '\\')
				*c = '?';
		v[n] = out[n];
		n++;
	}
	return n;
}

/* key ids (the first 8 bytes of KEYID, never key bytes) of the SAs the plan installs */
static size_t key_ids(const struct fctl_plan *plan, char ids[][FCTL_AUDIT_KEYID_LEN + 1],
		      const char **idp)
{
	size_t nid = 0;

	for (size_t i = 0; plan && i < plan->n_ops && nid < FCTL_AUDIT_MAX_KEYS; i++) {
		const struct fctl_op *op = &plan->ops[i];
		char hex[FCTL_AUDIT_KEYID_LEN + 1];
		bool dup = false;

		if ((op->kind != FCTL_OP_RXSA_ADD && op->kind != FCTL_OP_TXSA_ADD) || !op->sa.has_keyid)
			continue;
		fctl_format_hex(op->sa.keyid, FCTL_AUDIT_KEYID_LEN / 2, hex);
		for (size_t k = 0; k < nid && !dup; k++)
			dup = !strcmp(ids[k], hex);
		if (dup)
			continue;
		memcpy(ids[nid], hex, sizeof(hex));
		idp[nid] = ids[nid];
		nid++;
	}
	return nid;
}

int fctl_host_audit_record(struct fctl_audit *a, const struct fctl_host_event *ev,
			   struct fctl_host_msgs *m)
{
	struct fctl_audit_entry e = {
		.action = ev->action,
		.result = ev->result,
		.change_id = ev->change_id ? ev->change_id : getenv("FCTL_CHANGE_ID"),
		.host = ev->host && *ev->host ? ev->host : NULL,
		.error = ev->error && *ev->error ? ev->error : NULL,
		.detail = ev->detail,
		.has_counts = ev->has_counts,
		.ops = ev->ops,
		.writes = ev->writes,
	};
	char sha[65], ids[FCTL_AUDIT_MAX_KEYS][FCTL_AUDIT_KEYID_LEN + 1];
	const char *idp[FCTL_AUDIT_MAX_KEYS], *kcvp[FCTL_AUDIT_MAX_KEYS], *apv[FCTL_AUDIT_MAX_KEYS];
	char apr[FCTL_AUDIT_MAX_KEYS][APPROVAL_LEN];
	int r;

	if (!a)
		return -EBADF;
	if (e.change_id && !*e.change_id)
		e.change_id = NULL;
	if (ev->p) {
		e.profile_name = ev->p->name ? ev->p->name : "unnamed";
		e.profile_version = ev->p->version;
		fctl_format_hex(ev->p->sha256, 32, sha);
		e.profile_sha256 = sha;
	}
	e.key_ids = idp;
	e.n_key_ids = key_ids(ev->plan, ids, idp);
	for (size_t i = 0; i < ev->n_kcvs && i < FCTL_AUDIT_MAX_KEYS; i++)
		kcvp[i] = ev->kcvs[i];
	e.kcvs = kcvp;
	e.n_kcvs = ev->n_kcvs < FCTL_AUDIT_MAX_KEYS ? ev->n_kcvs : FCTL_AUDIT_MAX_KEYS;
	e.n_approvals = approvals_strings(ev->approvals, apr, apv);
	e.approvals = apv;
	r = fctl_audit_append(a, &e);
	if (r == 0 && ev->ledger) { /* what the ledger held after it (docs/audit.md) */
		char detail[FCTL_SA_LEDGER_ANCHOR_MAX];
		struct fctl_audit_entry l = { .action = FCTL_SA_LEDGER_ACTION, .result = "anchored",
					      .change_id = e.change_id, .host = e.host,
					      .detail = detail };

		fctl_sa_ledger_anchor_format(ev->ledger, detail);
		r = fctl_audit_append(a, &l);
	}
	if (r == 0)
		r = fctl_audit_sync(a);
	if (r < 0)
		fctl_hosti_say(m, "AUDIT RECORD NOT WRITTEN for %s on %s (%s): %s", ev->action,
			       e.host ? e.host : "this host", ev->result, fctl_audit_error(a));
	return r;
}

int fctl_host_audit_close(struct fctl_audit *a, struct fctl_host_msgs *m)
{
	int r = fctl_audit_close(a);

	if (r < 0)
		fctl_hosti_say(m, "audit: the closing checkpoint was not written: %s", strerror(-r));
	return r;
}

void fctl_host_confirm_detail(const struct fctl_confirm_pending *c, char *out, size_t len)
{
	time_t tt = (time_t)c->deadline;
	char dl[32], to[64];
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(dl, sizeof(dl), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(out, len, "awaits confirmation until %s, else back to %s", dl,
		 fctl_host_confirm_back_to(c, to, sizeof(to)));
}

const char *fctl_host_confirm_back_to(const struct fctl_confirm_pending *c, char *out,
				      size_t len)
{
	if (c->prev_seq)
		snprintf(out, len, "version %" PRIu64, c->prev_version);
	else
		snprintf(out, len, "nothing (a teardown: no version was applied before)");
	return out;
}

int fctl_host_withheld(struct fctl_apply_result *res, int rc, struct fctl_host_msgs *m)
{
	if (!res->withheld)
		return rc;
	fctl_hosti_say(m, "%zu SA%s WITHHELD on %s, fail-secure (the SecY protects and sends "
		       "nothing with that key): %s", res->withheld, res->withheld == 1 ? "" : "s",
		       res->host, res->withheld_why);
	if (!res->error[0])
		snprintf(res->error, sizeof(res->error), "%zu SAs withheld: %s", res->withheld,
			 res->withheld_why);
	return rc == FCTL_HOST_OK ? FCTL_HOST_WITHHELD : rc;
}

void fctl_host_apply_audit(struct fctl_audit *audit, const char *cmd, const char *change_id,
			   const struct fctl_engine_opts *eo, const struct fctl_profile *p,
			   const struct fctl_apply_result *res,
			   const struct fctl_approvals *approvals, const char *result, int *rc,
			   struct fctl_host_msgs *m)
{
	struct fctl_host_event ev = {
		.host = res->host, .change_id = change_id, .p = p, .plan = res->plan,
		.kcvs = res->kcvs, .n_kcvs = res->n_kcvs, .approvals = approvals,
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
		if (fctl_host_audit_record(audit, &ev, m) < 0 && *rc == FCTL_HOST_OK)
			*rc = FCTL_HOST_USAGE;
		ev.detail = NULL;
		ev.p = p;
		ev.plan = res->plan;
		ev.n_kcvs = res->n_kcvs;
	}
	ev.action = cmd;
	ev.result = result;
	ev.error = res->error;
	if (res->confirm_pending && fctl_engine_confirm_pending(eo, &cp) == 1) {
		fctl_host_confirm_detail(&cp, detail, sizeof(detail));
		ev.detail = detail;
	}
	ev.has_counts = true;
	ev.ops = res->ops_done;
	ev.writes = res->writes;
	ev.ledger = res->has_ledger ? &res->ledger : NULL;
	if (fctl_host_audit_record(audit, &ev, m) < 0) {
		if (*rc == FCTL_HOST_OK && strcmp(result, "unchanged") != 0)
			fctl_hosti_say(m, "%s: the host WAS changed, but no audit record says so", cmd);
		if (*rc == FCTL_HOST_OK)
			*rc = FCTL_HOST_USAGE;
	}
}
