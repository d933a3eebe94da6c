// SPDX-License-Identifier: MIT
/*
 * Probe verdicts go to the audit log (docs/audit.md, docs/probes.md): one
 * record per run (test and size) of a link, action "probe", result "pass" or
 * "fail", the reasons as the error, and the key figures in the detail:
 *
 *   "send_lat size=2 link=h1-h2: latency_p99_us=... loss_packets=0 ... macsec=ok"
 *
 * The part before ": " names the test (an evidence bundle lists it under
 * passedTests / failedTests of its test-result statement); the rest is
 * key=value figures with the units in the names. The log is chosen like
 * apply's (--audit-log, FCTL_AUDIT_LOG, the default), the change id too
 * (--change, FCTL_CHANGE_ID). This links fctl_audit only (util + OpenSSL):
 * the probe program never pulls in key code.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fctl/audit.h"
#include "prog.h"

const char *probe_audit_log_path(const char *opt)
{
	return fctl_audit_log_path(opt, true);
}

/* The CLI's policy (fctl_audit_open_policy): the key pair beside the log, made on
 * first use, the environment's log, checkpoint interval and syslog. */
int probe_audit_open(const char *log_opt, struct fctl_audit **out)
{
	struct fctl_audit_policy p = {
		.log_path = log_opt, .env = true, .create_key = true, .batch = 64,
	};
	char err[512] = "";
	int r;

	*out = NULL;
	r = fctl_audit_open_policy(&p, out, err, sizeof(err));
	if (r < 0) {
		perr("run: AUDIT LOG UNAVAILABLE: %s", err[0] ? err : strerror(-r));
		return r;
	}
	if (r & FCTL_AUDIT_KEY_CREATED)
		perr("audit: %s", err);
	else if (r & FCTL_AUDIT_UNSIGNED)
		perr("warning: audit: %s", err);
	return 0;
}

static void fig(struct fctl_buf *b, const char *key, double v)
{
	if (v != v || v > 1e300 || v < -1e300)
		fctl_buf_printf(b, " %s=null", key);
	else
		fctl_buf_printf(b, " %s=%.3f", key, v);
}

/* "send_lat size=2 link=h1-h2: latency_p99_us=... macsec=ok" */
static void detail(const struct probe_report *rep, const struct probe_result *r,
		   struct fctl_buf *b)
{
	uint64_t loss = 0, retrans = 0, errors = 0;
	int n_ends = r->has_peer ? 2 : 1;
	bool ms_ok = true, ms_any = false;

	fctl_buf_printf(b, "%s size=%" PRIu32 " ", r->test, r->size);
	if (rep->link[0])
		fctl_buf_printf(b, "link=%s", rep->link);
	else
		fctl_buf_printf(b, "peer=%s", rep->peer);
	fctl_buf_printf(b, ": iterations=%" PRIu64 " ran=%s", r->iters, r->ran ? "yes" : "no");
	if (r->ran && r->has_lat) {
		fig(b, "t_typical_us", r->pt.t_typical_us);
		fig(b, "latency_p50_us", r->ex.p50_us);
		fig(b, "latency_p99_us", r->ex.p99_us);
		fig(b, "latency_p999_us", r->ex.p999_us);
		fig(b, "latency_max_us", r->ex.max_us);
	} else if (r->ran) {
		fctl_buf_printf(b, " bandwidth_gbps=%.6f", r->gbps);
	}
	for (int e = 0; e < n_ends; e++) {
		loss += r->end[e].loss;
		retrans += r->end[e].retrans;
		errors += r->end[e].errors;
	}
	fctl_buf_printf(b, " loss_packets=%" PRIu64 " retransmissions=%" PRIu64 " error_events=%" PRIu64,
			loss, retrans, errors);
	for (int e = 0; e < n_ends; e++) {
		const struct probe_end *end = &r->end[e];
		const struct probe_macsec *m = &end->ms;
		const char *who = end->host[0] ? end->host : end->role;

		fctl_buf_printf(b, " %s.loss_packets=%" PRIu64 " %s.retransmissions=%" PRIu64, who,
				end->loss, who, end->retrans);
		if (!m->checked || !m->is_macsec) {
			ms_ok = false;
			fctl_buf_printf(b, " %s.macsec=%s", who, m->checked ? "not-macsec" : "not-checked");
			continue;
		}
		ms_any = true;
		if (!m->up || !m->encrypt || !m->tx_sa_active || (r->ran && !m->out_pkts_encrypted) ||
		    m->in_pkts_not_valid || m->in_pkts_invalid || m->in_pkts_no_sci ||
		    m->in_pkts_unknown_sci || m->in_pkts_late)
			ms_ok = false;
		fctl_buf_printf(b,
				" %s.macsec=%s %s.encrypt=%s %s.tx_sa_active=%s"
				" %s.out_pkts_encrypted_delta=%" PRIu64 " %s.in_pkts_not_valid_delta=%" PRIu64
				" %s.in_pkts_invalid_delta=%" PRIu64 " %s.in_pkts_no_sci_delta=%" PRIu64
				" %s.in_pkts_unknown_sci_delta=%" PRIu64 " %s.in_pkts_late_delta=%" PRIu64,
				who, m->ifname, who, m->encrypt ? "on" : "off", who,
				m->tx_sa_active ? "yes" : "no", who, m->out_pkts_encrypted, who,
				m->in_pkts_not_valid, who, m->in_pkts_invalid, who, m->in_pkts_no_sci, who,
				m->in_pkts_unknown_sci, who, m->in_pkts_late);
	}
	fctl_buf_printf(b, " macsec=%s", ms_any && ms_ok ? "ok" : ms_any ? "FAIL" : "none");
}

int probe_audit_report(struct fctl_audit *a, const struct probe_report *rep, const char *change,
		       const char *profile_sha256)
{
	char host[65] = "";
	int ret = 0;

	gethostname(host, sizeof(host) - 1);
	if (!change || !*change)
		change = getenv("FCTL_CHANGE_ID");
	for (size_t i = 0; i < rep->n_res; i++) {
		const struct probe_result *r = &rep->res[i];
		struct fctl_buf d = { 0 }, why = { 0 };
		struct fctl_audit_entry e = {
			.action = "probe",
			.result = r->pass ? "pass" : "fail",
			.change_id = change && *change ? change : NULL,
			.host = host[0] ? host : NULL,
			.link = rep->link[0] ? rep->link : NULL,
			.secy = r->end[0].ms.is_macsec && r->end[0].ms.ifname[0] ? r->end[0].ms.ifname
										: NULL,
		};
		int r2;

		if (rep->profile_name[0] && profile_sha256 && profile_sha256[0]) {
			e.profile_name = rep->profile_name;
			e.profile_version = rep->profile_version;
			e.profile_sha256 = profile_sha256;
		}
		detail(rep, r, &d);
		for (size_t k = 0; k < r->n_reasons; k++)
			fctl_buf_printf(&why, "%s%s", k ? "; " : "", r->reasons[k]);
		if (d.oom || why.oom) {
			r2 = -ENOMEM;
		} else {
			e.detail = d.data;
			e.error = why.len ? why.data : NULL;
			r2 = fctl_audit_append(a, &e);
		}
		if (r2 < 0 && ret == 0)
			ret = r2;
		fctl_buf_release(&d);
		fctl_buf_release(&why);
	}
	if (ret == 0)
		ret = fctl_audit_sync(a);
	return ret;
}
