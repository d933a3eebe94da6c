// SPDX-License-Identifier: MIT
/* Prometheus text exposition of the agent: build, requests, refusals, drift, then the
 * MACsec, rotation, probe and audit families (metrics_*.c). Names: docs/agent.md. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/profile.h"
#include "fctl/tls.h"
#include "metrics_int.h"

#ifndef FCTL_COMMIT
#define FCTL_COMMIT ""
#endif

_Static_assert(FCTL_ROLE_LOCAL + 1 == FCTL_AGENT_ROLES, "FCTL_AGENT_ROLES is enum fctl_role");

static const char *const refusal_names[] = {
	[FCTL_REFUSED_NO_CERT] = "tls_handshake",
	[FCTL_REFUSED_NO_ROLE] = "no_role",
	[FCTL_REFUSED_ROLE] = "role",
	[FCTL_REFUSED_PEER] = "peer_credentials",
	[FCTL_REFUSED_MALFORMED] = "malformed",
	[FCTL_REFUSED_OVERSIZED] = "oversized",
	[FCTL_REFUSED_TIMEOUT] = "timeout",
	[FCTL_REFUSED_BUSY] = "max_connections",
	[FCTL_REFUSED_WORKERS] = "max_workers",
	[FCTL_REFUSED_BUFFERED] = "max_buffered",
	[FCTL_REFUSED_PER_ADDRESS] = "max_handshakes_per_address",
	[FCTL_REFUSED_HANDSHAKE_TIMEOUT] = "handshake_timeout",
	[FCTL_REFUSED_UNIX_BUSY] = "max_unix_connections",
	[FCTL_REFUSED_METRICS_BUSY] = "max_metrics_connections",
};

const char *fctl_refusal_name(enum fctl_refusal r)
{
	return (size_t)r < FCTL_ARRAY_SIZE(refusal_names) ? refusal_names[r] : "unknown";
}

void fctl_mx_head(struct fctl_buf *o, const char *name, const char *type, const char *help)
{
	fctl_buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

void fctl_mx_label(char *set, size_t len, const char *key, const char *value)
{
	size_t n = strlen(set);

	if (n + strlen(key) + 4 >= len)
		return;
	n += (size_t)snprintf(set + n, len - n, "%s%s=\"", n ? "," : "", key);
	for (const char *p = value ? value : ""; *p && n + 3 < len; p++) {
		if (*p == '\\' || *p == '"' || *p == '\n') {
			set[n++] = '\\';
			set[n++] = *p == '\n' ? 'n' : *p;
		} else {
			set[n++] = *p;
		}
	}
	set[n++] = '"';
	set[n] = '\0';
}

void fctl_mx_sample(struct fctl_buf *o, const char *name, const char *set, double v)
{
	fctl_buf_printf(o, "%s%s%s%s ", name, set[0] ? "{" : "", set, set[0] ? "}" : "");
	if (v != v)
		fctl_buf_puts(o, "NaN\n");
	else if (v > 1.7976931348623157e308)
		fctl_buf_puts(o, "+Inf\n");
	else if (v < -1.7976931348623157e308)
		fctl_buf_puts(o, "-Inf\n");
	else
		fctl_buf_printf(o, "%.17g\n", v);
}

void fctl_mx_sample_u64(struct fctl_buf *o, const char *name, const char *set, uint64_t v)
{
	fctl_buf_printf(o, "%s%s%s%s %" PRIu64 "\n", name, set[0] ? "{" : "", set,
			set[0] ? "}" : "", v);
}

/* --- the link map: interfaces of the last applied profile ----------------------------- */

static int links_add(struct fctl_mx_links *l, const char *ifname, const char *plink,
		     uint16_t vid, bool macsec, uint64_t cryptoperiod_s)
{
	struct fctl_mx_link *v = realloc(l->v, (l->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	l->v = v;
	v = &l->v[l->n++];
	memset(v, 0, sizeof(*v));
	snprintf(v->ifname, sizeof(v->ifname), "%s", ifname);
	snprintf(v->link, sizeof(v->link), "%s.%u", plink, (unsigned)vid);
	v->macsec = macsec;
	v->cryptoperiod_s = cryptoperiod_s;
	return 0;
}

static int links_of_end(const struct fctl_profile *p, const struct fctl_plink *pl,
			const char *port, struct fctl_mx_links *out)
{
	for (size_t k = 0; k < pl->n_vlans; k++) {
		const struct fctl_vlan *v = &pl->vlans[k];
		const struct fctl_macsec_policy *pol =
			v->macsec ? fctl_profile_find_policy(p, v->macsec) : NULL;
		char vif[FCTL_IFNAMSIZ + 8], mif[FCTL_IFNAMSIZ + 8];

		fctl_vlan_ifnames(v, port, vif, mif);
		if (links_add(out, vif, pl->name, v->id, false, 0) < 0)
			return -ENOMEM;
		if (v->macsec && links_add(out, mif, pl->name, v->id, true,
					   pol ? pol->cryptoperiod_s : 0) < 0)
			return -ENOMEM;
	}
	return 0;
}

int fctl_mx_links_load(const struct fctl_engine_opts *eo, const char *host,
		       struct fctl_mx_links *out)
{
	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;
	int r = 0;

	memset(out, 0, sizeof(*out));
	if (fctl_engine_load_version(eo, 0, &d, &p) < 0) {
		fctl_diags_release(&d);
		return 0; /* nothing applied, or unreadable: the series go without link names */
	}
	fctl_diags_release(&d);
	out->applied = true;
	for (size_t i = 0; r == 0 && i < p->n_links; i++) {
		const struct fctl_plink *pl = &p->links[i];

		for (int e = 0; r == 0 && e < 2; e++)
			if (pl->end[e].host && pl->name && strcmp(pl->end[e].host, host) == 0)
				r = links_of_end(p, pl, pl->end[e].port, out);
	}
	fctl_profile_free(p);
	if (r < 0)
		fctl_mx_links_release(out);
	return r;
}

void fctl_mx_links_release(struct fctl_mx_links *l)
{
	if (!l)
		return;
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

const struct fctl_mx_link *fctl_mx_links_find(const struct fctl_mx_links *l, const char *ifname)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].ifname, ifname) == 0)
			return &l->v[i];
	return NULL;
}

void fctl_mx_link_labels(const struct fctl_metrics_src *src, const struct fctl_mx_links *l,
			 const char *ifname, char *set, size_t len)
{
	const struct fctl_mx_link *k = fctl_mx_links_find(l, ifname);

	set[0] = '\0';
	fctl_mx_label(set, len, "host", src->host);
	fctl_mx_label(set, len, "link", k ? k->link : "");
	fctl_mx_label(set, len, "ifname", ifname);
}

/* --- the agent's own families ------------------------------------------------------- */

static void build_info(const struct fctl_metrics_src *src, struct fctl_buf *o)
{
	char set[256] = "";

	fctl_mx_label(set, sizeof(set), "version", FCTL_VERSION);
	if (FCTL_COMMIT[0])
		fctl_mx_label(set, sizeof(set), "commit", FCTL_COMMIT);
	fctl_mx_label(set, sizeof(set), "host", src->host);
	fctl_mx_head(o, "fabricctl_build_info", "gauge",
		     "Always 1: the version (and commit) of the agent that serves these metrics.");
	fctl_mx_sample_u64(o, "fabricctl_build_info", set, 1);
}

static void requests(const struct fctl_agent_stats *st, struct fctl_buf *o)
{
	static const char *const results[FCTL_REQ_RESULTS] = { "ok", "failed", "refused",
								     "abandoned" };

	fctl_mx_head(o, "fabricctl_agent_requests_total", "counter",
		     "Requests answered, by the role of the connection, type and result (refused: "
		     "the role does not allow it; abandoned: the client hung up first and the "
		     "read-only worker was stopped).");
	for (unsigned role = FCTL_ROLE_VIEWER; role < FCTL_AGENT_ROLES; role++) {
		for (unsigned t = FCTL_MSG_HELLO; t <= FCTL_MSG_LAST; t++) {
			for (unsigned k = 0; k < FCTL_REQ_RESULTS; k++) {
				char set[160] = "";

				fctl_mx_label(set, sizeof(set), "role",
					      fctl_role_name((enum fctl_role)role));
				fctl_mx_label(set, sizeof(set), "type",
					      fctl_proto_type_name((uint8_t)t));
				fctl_mx_label(set, sizeof(set), "result", results[k]);
				fctl_mx_sample_u64(o, "fabricctl_agent_requests_total", set,
						   st->requests[role][t][k]);
			}
		}
	}
	fctl_mx_head(o, "fabricctl_agent_refused_total", "counter",
		     "Connections or requests refused, by reason.");
	for (unsigned k = 0; k < FCTL_REFUSED_MAX; k++) {
		char set[64] = "";

		fctl_mx_label(set, sizeof(set), "reason", fctl_refusal_name((enum fctl_refusal)k));
		fctl_mx_sample_u64(o, "fabricctl_agent_refused_total", set, st->refused[k]);
	}	fctl_mx_head(o, "fabricctl_agent_refusals_aggregated_total", "counter",
		     "Refusals audited only in a count or a summary record, not one by one.");
	fctl_mx_sample_u64(o, "fabricctl_agent_refusals_aggregated_total", "", st->refusals_aggregated);
}

static void agent_families(const struct fctl_metrics_src *src, struct fctl_buf *o)
{
	const struct fctl_agent_stats *st = src->st;

	build_info(src, o);
	fctl_mx_head(o, "fabricctl_agent_start_time_seconds", "gauge",
		     "Unix time the agent started.");
	fctl_mx_sample(o, "fabricctl_agent_start_time_seconds", "", st->start_time);
	fctl_mx_head(o, "fabricctl_agent_connections", "gauge",
		     "Open control connections (Unix socket and TLS; scrapes are not counted).");
	fctl_mx_sample_u64(o, "fabricctl_agent_connections", "", src->control_connections);
	requests(st, o);
	fctl_mx_head(o, "fabricctl_profile_applied", "gauge",
		     "1 when a profile was applied on this host.");
	fctl_mx_sample_u64(o, "fabricctl_profile_applied", "", st->applied);
	if (st->applied) {
		fctl_mx_head(o, "fabricctl_profile_version", "gauge",
			     "Version of the applied profile.");
		fctl_mx_sample_u64(o, "fabricctl_profile_version", "", st->applied_version);
	}
	if (st->drift_known) {
		fctl_mx_head(o, "fabricctl_drift", "gauge",
			     "1 when the live state differed from the applied profile at the last "
			     "check.");
		fctl_mx_sample_u64(o, "fabricctl_drift", "", st->drift);
		fctl_mx_head(o, "fabricctl_drift_last_check_timestamp_seconds", "gauge",
			     "Unix time of the last drift check.");
		fctl_mx_sample(o, "fabricctl_drift_last_check_timestamp_seconds", "",
			       st->drift_last_check);
	}
	fctl_mx_head(o, "fabricctl_drift_checks_total", "counter", "Drift checks run.");
	fctl_mx_sample_u64(o, "fabricctl_drift_checks_total", "", st->drift_checks);
	fctl_mx_head(o, "fabricctl_drift_detected_total", "counter", "Checks that found drift.");
	fctl_mx_sample_u64(o, "fabricctl_drift_detected_total", "", st->drift_detected);
	fctl_mx_head(o, "fabricctl_drift_repairs_total", "counter",
		     "Drift repairs (re-applies) by result.");
	fctl_mx_sample_u64(o, "fabricctl_drift_repairs_total", "result=\"ok\"", st->drift_repairs);
	fctl_mx_sample_u64(o, "fabricctl_drift_repairs_total", "result=\"failed\"",
			   st->drift_repair_failures);
	fctl_mx_head(o, "fabricctl_mka_restarts_total", "counter",
		     "wpa_supplicants of MKA ports the agent restarted (dead or hung), by result.");
	fctl_mx_sample_u64(o, "fabricctl_mka_restarts_total", "result=\"ok\"", st->mka_restarts);
	fctl_mx_sample_u64(o, "fabricctl_mka_restarts_total", "result=\"failed\"",
			   st->mka_restart_failures);
}

int fctl_metrics_render(const struct fctl_metrics_src *src, struct fctl_buf *out)
{
	struct fctl_host_state *live = NULL;
	struct fctl_mx_links links;
	char err[256];
	int r, rl;

	agent_families(src, out);
	rl = fctl_mx_links_load(src->eo, src->host, &links);
	if (rl == 0)
		fctl_mx_drift_links(src, &links, out);
	r = fctl_engine_show(NULL, src->eo, &live, err, sizeof(err));
	if (r == 0 && rl == 0 && fctl_mx_macsec(src, &links, live, out) < 0)
		r = -ENOMEM;
	if (rl == 0)
		fctl_mx_rotation(src, &links, out);
	fctl_mx_probe(src, out);
	fctl_mx_audit(src, out);
	fctl_mx_head(out, "fabricctl_state_read_ok", "gauge",
		     "1 when the live state could be read for this scrape.");
	fctl_mx_sample_u64(out, "fabricctl_state_read_ok", "", r == 0);
	fctl_mx_links_release(&links);
	fctl_host_state_free(live);
	return out->oom || rl < 0 ? -ENOMEM : 0;
}
