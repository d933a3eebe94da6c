// SPDX-License-Identifier: MIT
/* Prometheus text exposition of the agent: counters, drift, MACsec SecY counters and
 * SA packet-number usage. Metric names: docs/agent.md. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "fctl/agent.h"
#include "fctl/engine.h"
#include "fctl/nl.h"

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

static void head(struct fctl_buf *o, const char *name, const char *type, const char *help)
{
	fctl_buf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sa_pn(struct fctl_buf *o, const char *ifname, const char *dir, const char *sci,
		  unsigned an, const struct fctl_sa *sa, bool xpn)
{
	/* the kernel reports the next PN to use: pn - 1 of the space is gone */
	double used = sa->pn ? (double)(sa->pn - 1) : 0.0;
	double space = xpn ? 18446744073709551616.0 : 4294967296.0;

	fctl_buf_printf(o, "fabricctl_macsec_sa_pn_usage_ratio{ifname=\"%s\",dir=\"%s\",sci=\"%s\",an=\"%u\"} %.9g\n",
			ifname, dir, sci, an, used / space);
}

static void secy(struct fctl_buf *o, struct fctl_nl *nl, const struct fctl_link *l)
{
	struct fctl_macsec_stats s;
	const struct fctl_macsec *m = &l->macsec;
	bool xpn = fctl_cipher_is_xpn(m->cipher);
	char sci[24];

	fctl_sci_format(m->sci, sci);
	for (unsigned an = 0; an < FCTL_MAX_AN; an++)
		if (m->txsa[an].present)
			sa_pn(o, l->name, "tx", sci, an, &m->txsa[an], xpn);
	for (size_t i = 0; i < m->n_rxsc; i++) {
		char rsci[24];

		fctl_sci_format(m->rxsc[i].sci, rsci);
		for (unsigned an = 0; an < FCTL_MAX_AN; an++)
			if (m->rxsc[i].sa[an].present)
				sa_pn(o, l->name, "rx", rsci, an, &m->rxsc[i].sa[an], xpn);
	}
	if (!nl || fctl_nl_read_macsec_stats(nl, l->name, &s) < 0)
		return;
#define C(metric, v) \
	fctl_buf_printf(o, "fabricctl_macsec_" metric "_total{ifname=\"%s\"} %" PRIu64 "\n", l->name, \
			(uint64_t)(v))
	C("out_pkts_untagged", s.out_pkts_untagged);
	C("in_pkts_untagged", s.in_pkts_untagged);
	C("out_pkts_too_long", s.out_pkts_too_long);
	C("in_pkts_no_tag", s.in_pkts_no_tag);
	C("in_pkts_bad_tag", s.in_pkts_bad_tag);
	C("in_pkts_unknown_sci", s.in_pkts_unknown_sci);
	C("in_pkts_no_sci", s.in_pkts_no_sci);
	C("in_pkts_overrun", s.in_pkts_overrun);
	C("out_pkts_protected", s.out_pkts_protected);
	C("out_pkts_encrypted", s.out_pkts_encrypted);
	C("out_octets_protected", s.out_octets_protected);
	C("out_octets_encrypted", s.out_octets_encrypted);
	C("in_octets_validated", s.rx_total.in_octets_validated);
	C("in_octets_decrypted", s.rx_total.in_octets_decrypted);
	C("in_pkts_unchecked", s.rx_total.in_pkts_unchecked);
	C("in_pkts_delayed", s.rx_total.in_pkts_delayed);
	C("in_pkts_ok", s.rx_total.in_pkts_ok);
	C("in_pkts_invalid", s.rx_total.in_pkts_invalid);
	C("in_pkts_late", s.rx_total.in_pkts_late);
	C("in_pkts_not_valid", s.rx_total.in_pkts_not_valid);
	C("in_pkts_not_using_sa", s.rx_total.in_pkts_not_using_sa);
	C("in_pkts_unused_sa", s.rx_total.in_pkts_unused_sa);
#undef C
}

int fctl_metrics_render(const struct fctl_engine_opts *o, const struct fctl_agent_stats *st,
			struct fctl_buf *out)
{
	struct fctl_host_state *live = NULL;
	struct fctl_nl *nl = NULL;
	char err[256];
	int r;

	head(out, "fabricctl_agent_start_time_seconds", "gauge", "Unix time the agent started.");
	fctl_buf_printf(out, "fabricctl_agent_start_time_seconds %.3f\n", st->start_time);
	head(out, "fabricctl_agent_connections", "gauge", "Open control connections.");
	fctl_buf_printf(out, "fabricctl_agent_connections %" PRIu64 "\n", st->connections);
	head(out, "fabricctl_agent_requests_total", "counter", "Requests answered, by type and result.");
	for (unsigned t = FCTL_MSG_HELLO; t <= FCTL_MSG_RECOVER; t++)
		for (unsigned k = 0; k < 2; k++)
			fctl_buf_printf(out, "fabricctl_agent_requests_total{type=\"%s\",result=\"%s\"} %" PRIu64 "\n",
					fctl_proto_type_name((uint8_t)t), k ? "failed" : "ok",
					st->requests[t][k]);
	head(out, "fabricctl_agent_refused_total", "counter", "Connections or requests refused, by reason.");
	for (unsigned k = 0; k < FCTL_REFUSED_MAX; k++)
		fctl_buf_printf(out, "fabricctl_agent_refused_total{reason=\"%s\"} %" PRIu64 "\n",
				fctl_refusal_name((enum fctl_refusal)k), st->refused[k]);
	head(out, "fabricctl_agent_refusals_aggregated_total", "counter",
	     "Refusals audited only in a count or a summary record, not one by one.");
	fctl_buf_printf(out, "fabricctl_agent_refusals_aggregated_total %" PRIu64 "\n",
			st->refusals_aggregated);
	head(out, "fabricctl_profile_applied", "gauge", "1 when a profile was applied on this host.");
	fctl_buf_printf(out, "fabricctl_profile_applied %d\n", st->applied);
	if (st->applied) {
		head(out, "fabricctl_profile_version", "gauge", "Version of the applied profile.");
		fctl_buf_printf(out, "fabricctl_profile_version %" PRIu64 "\n", st->applied_version);
	}
	if (st->drift_known) {
		head(out, "fabricctl_drift", "gauge", "1 when the live state differs from the applied profile at the last check.");
		fctl_buf_printf(out, "fabricctl_drift %d\n", st->drift);
		head(out, "fabricctl_drift_last_check_timestamp_seconds", "gauge", "Unix time of the last drift check.");
		fctl_buf_printf(out, "fabricctl_drift_last_check_timestamp_seconds %.3f\n", st->drift_last_check);
	}
	head(out, "fabricctl_drift_checks_total", "counter", "Drift checks run.");
	fctl_buf_printf(out, "fabricctl_drift_checks_total %" PRIu64 "\n", st->drift_checks);
	head(out, "fabricctl_drift_detected_total", "counter", "Checks that found drift.");
	fctl_buf_printf(out, "fabricctl_drift_detected_total %" PRIu64 "\n", st->drift_detected);
	head(out, "fabricctl_drift_repairs_total", "counter", "Drift repairs (re-applies) by result.");
	fctl_buf_printf(out, "fabricctl_drift_repairs_total{result=\"ok\"} %" PRIu64 "\n", st->drift_repairs);
	fctl_buf_printf(out, "fabricctl_drift_repairs_total{result=\"failed\"} %" PRIu64 "\n",
			st->drift_repair_failures);

	r = fctl_engine_show(NULL, o, &live, err, sizeof(err));
	if (r == 0 && fctl_nl_open(o->netns, &nl) < 0)
		nl = NULL;
	head(out, "fabricctl_macsec_sa_pn_usage_ratio", "gauge",
	     "Fraction of the packet-number space used (next PN / 2^32, or 2^64 for XPN).");
	for (size_t i = 0; r == 0 && i < live->n_links; i++)
		if (live->links[i].kind == FCTL_LINK_MACSEC)
			secy(out, nl, &live->links[i]);
	head(out, "fabricctl_state_read_ok", "gauge", "1 when the live state could be read for this scrape.");
	fctl_buf_printf(out, "fabricctl_state_read_ok %d\n", r == 0);
	fctl_nl_close(nl);
	fctl_host_state_free(live);
	return out->oom ? -ENOMEM : 0;
}
