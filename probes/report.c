// SPDX-License-Identifier: MIT
/*
 * Verdicts against a profile's SLO, and the report in three forms: a table
 * for people, JSON (units in the field names) and JUnit XML for CI. Also the
 * wire form in which the server sends its end's evidence to the client.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

const char *const probe_test_names[6] = { "send_lat", "write_lat", "read_lat",
					  "send_bw",  "write_bw",  "read_bw" };

bool probe_test_is_lat(const char *test)
{
	size_t n = strlen(test);

	return n > 4 && strcmp(test + n - 4, "_lat") == 0;
}

void probe_end_add_counter(struct probe_end *e, const char *name, uint64_t delta)
{
	struct probe_ctr *c;

	if (e->n_ctr == PROBE_MAX_CTR)
		return;
	c = &e->ctr[e->n_ctr++];
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->delta = delta;
	c->cls = fctl_counter_classify(name);
	if (c->cls == FCTL_COUNTER_LOSS)
		e->loss += delta;
	else if (c->cls == FCTL_COUNTER_RETRANS)
		e->retrans += delta;
	else if (c->cls == FCTL_COUNTER_ERROR)
		e->errors += delta;
}

static void reason(struct probe_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(struct probe_result *r, const char *fmt, ...)
{
	va_list ap;

	if (r->n_reasons == PROBE_MAX_REASONS)
		return;
	va_start(ap, fmt);
	vsnprintf(r->reasons[r->n_reasons++], sizeof(r->reasons[0]), fmt, ap);
	va_end(ap);
}

/* "out_of_seq_request=3 on h2 (server)" for every counter of class cls that moved. */
static void class_detail(const struct probe_result *r, enum fctl_counter_class cls, char *out,
			 size_t len)
{
	size_t off = 0;

	out[0] = '\0';
	for (int e = 0; e < (r->has_peer ? 2 : 1); e++) {
		for (size_t i = 0; i < r->end[e].n_ctr; i++) {
			const struct probe_ctr *c = &r->end[e].ctr[i];

			if (c->cls != cls || !c->delta || off >= len)
				continue;
			off += (size_t)snprintf(out + off, len - off, "%s%s=%" PRIu64 " on %s",
						off ? ", " : "", c->name, c->delta,
						r->end[e].host[0] ? r->end[e].host : r->end[e].role);
		}
	}
}

static void macsec_verdict(struct probe_result *r, const struct probe_end *e, bool required)
{
	const struct probe_macsec *m = &e->ms;
	const char *who = e->host[0] ? e->host : e->role;

	if (!m->checked) {
		if (required)
			reason(r, "macsec: not checked on %s: %s", who, m->err[0] ? m->err : "no data");
		return;
	}
	if (!m->is_macsec) {
		if (required)
			reason(r, "macsec: '%s' on %s is not a MACsec device: RDMA traffic is not "
				  "encrypted", m->ifname, who);
		return;
	}
	if (!m->up)
		reason(r, "macsec: '%s' on %s is down", m->ifname, who);
	if (!m->encrypt)
		reason(r, "macsec: encryption is off on '%s' on %s", m->ifname, who);
	if (!m->tx_sa_active)
		reason(r, "macsec: no active transmit SA on '%s' on %s", m->ifname, who);
	if (r->ran && m->out_pkts_encrypted == 0)
		reason(r, "macsec: OutPktsEncrypted did not grow on '%s' on %s during the run",
		       m->ifname, who);
	if (m->in_pkts_not_valid || m->in_pkts_invalid || m->in_pkts_no_sci ||
	    m->in_pkts_unknown_sci || m->in_pkts_late)
		reason(r, "macsec: frames refused on '%s' on %s: InPktsNotValid=%" PRIu64
			  " InPktsInvalid=%" PRIu64 " InPktsNoSCI=%" PRIu64 " InPktsUnknownSCI=%" PRIu64
			  " InPktsLate=%" PRIu64,
		       m->ifname, who, m->in_pkts_not_valid, m->in_pkts_invalid, m->in_pkts_no_sci,
		       m->in_pkts_unknown_sci, m->in_pkts_late);
}

void probe_verdict(const struct probe_slo *slo, struct probe_result *r)
{
	uint64_t loss = 0, retrans = 0, errors = 0;
	char detail[160];
	int n_ends = r->has_peer ? 2 : 1;

	r->n_reasons = 0;
	if (!r->ran)
		reason(r, "run failed: %s", r->error[0] ? r->error : "unknown error");
	if (r->wc_status && r->ran)
		reason(r, "bad completion: %s", r->wc_status_str);
	for (int e = 0; e < n_ends; e++) {
		loss += r->end[e].loss;
		retrans += r->end[e].retrans;
		errors += r->end[e].errors;
		if (!r->end[e].counters_ok)
			reason(r, "counters: not read on %s: %s",
			       r->end[e].host[0] ? r->end[e].host : r->end[e].role,
			       r->end[e].counters_err[0] ? r->end[e].counters_err : "no data");
	}
	if (loss > slo->max_loss) {
		class_detail(r, FCTL_COUNTER_LOSS, detail, sizeof(detail));
		reason(r, "loss: %" PRIu64 " (max %" PRIu64 "): %s", loss, slo->max_loss, detail);
	}
	if (slo->has_max_retrans && retrans > slo->max_retrans) {
		class_detail(r, FCTL_COUNTER_RETRANS, detail, sizeof(detail));
		reason(r, "retransmissions: %" PRIu64 " (max %" PRIu64 "): %s", retrans,
		       slo->max_retrans, detail);
	}
	if (errors) {
		class_detail(r, FCTL_COUNTER_ERROR, detail, sizeof(detail));
		reason(r, "errors: %" PRIu64 ": %s", errors, detail);
	}
	if (r->ran && r->has_lat) {
		if (slo->has_p99 && r->ex.p99_us > slo->p99_us)
			reason(r, "latency p99 %.3f us > %.3f us", r->ex.p99_us, slo->p99_us);
		if (slo->has_p999 && r->ex.p999_us > slo->p999_us)
			reason(r, "latency p99.9 %.3f us > %.3f us", r->ex.p999_us, slo->p999_us);
	}
	if (r->ran && !r->has_lat && slo->has_bw && r->gbps < slo->bw_gbps)
		reason(r, "bandwidth %.6f Gb/s < %.6f Gb/s", r->gbps, slo->bw_gbps);
	if (r->ran && r->bidirectional && !(r->gbps_client > 0 && r->gbps_server > 0))
		reason(r, "bidirectional: the %s's direction moved nothing",
		       r->gbps_client > 0 ? "server" : "client");
	for (int e = 0; e < n_ends; e++)
		macsec_verdict(r, &r->end[e], slo->require_macsec);
	r->pass = r->n_reasons == 0;
}

void probe_report_verdict(struct probe_report *rep)
{
	rep->pass = rep->n_res > 0;
	for (size_t i = 0; i < rep->n_res; i++) {
		probe_verdict(&rep->slo, &rep->res[i]);
		if (!rep->res[i].pass)
			rep->pass = false;
	}
}

/* --- JSON ----------------------------------------------------------------- */

static void jnum(struct fctl_buf *b, const char *key, double v, bool comma)
{
	fctl_buf_json_str(b, key);
	/* %.17g round-trips; JSON has no inf or nan */
	if (v != v || v > 1e300 || v < -1e300)
		fctl_buf_puts(b, ":null");
	else
		fctl_buf_printf(b, ":%.17g", v);
	if (comma)
		fctl_buf_putc(b, ',');
}

static void ju64(struct fctl_buf *b, const char *key, uint64_t v, bool comma)
{
	fctl_buf_json_str(b, key);
	fctl_buf_printf(b, ":%" PRIu64 "%s", v, comma ? "," : "");
}

static void jstr(struct fctl_buf *b, const char *key, const char *v, bool comma)
{
	fctl_buf_json_str(b, key);
	fctl_buf_putc(b, ':');
	fctl_buf_json_str(b, v);
	if (comma)
		fctl_buf_putc(b, ',');
}

static void jbool(struct fctl_buf *b, const char *key, bool v, bool comma)
{
	fctl_buf_json_str(b, key);
	fctl_buf_printf(b, ":%s%s", v ? "true" : "false", comma ? "," : "");
}

static void json_end(struct fctl_buf *b, const struct probe_end *e)
{
	const struct probe_macsec *m = &e->ms;

	fctl_buf_putc(b, '{');
	jstr(b, "role", e->role, true);
	jstr(b, "host", e->host, true);
	jstr(b, "device", e->dev, true);
	jstr(b, "netdev", e->netdev, true);
	ju64(b, "messages", e->iters, true);
	jnum(b, "cpu_s", (double)e->cpu_ns / 1e9, true);
	jbool(b, "counters_read", e->counters_ok, true);
	jstr(b, "counters_error", e->counters_ok ? NULL : e->counters_err, true);
	ju64(b, "loss_packets", e->loss, true);
	ju64(b, "retransmissions", e->retrans, true);
	ju64(b, "error_events", e->errors, true);
	fctl_buf_puts(b, "\"counter_deltas\":{");
	for (size_t i = 0; i < e->n_ctr; i++) {
		if (i)
			fctl_buf_putc(b, ',');
		fctl_buf_json_str(b, e->ctr[i].name);
		fctl_buf_printf(b, ":{\"delta\":%" PRIu64 ",\"class\":", e->ctr[i].delta);
		fctl_buf_json_str(b, fctl_counter_class_name(e->ctr[i].cls));
		fctl_buf_putc(b, '}');
	}
	fctl_buf_puts(b, "},\"macsec\":{");
	jbool(b, "checked", m->checked, true);
	jstr(b, "error", m->checked ? NULL : m->err, true);
	jstr(b, "ifname", m->ifname, true);
	jbool(b, "is_macsec", m->is_macsec, true);
	jbool(b, "up", m->up, true);
	jbool(b, "encrypt", m->encrypt, true);
	jbool(b, "tx_sa_active", m->tx_sa_active, true);
	ju64(b, "out_pkts_encrypted_delta", m->out_pkts_encrypted, true);
	ju64(b, "in_pkts_not_valid_delta", m->in_pkts_not_valid, true);
	ju64(b, "in_pkts_invalid_delta", m->in_pkts_invalid, true);
	ju64(b, "in_pkts_no_sci_delta", m->in_pkts_no_sci, true);
	ju64(b, "in_pkts_unknown_sci_delta", m->in_pkts_unknown_sci, true);
	ju64(b, "in_pkts_late_delta", m->in_pkts_late, false);
	fctl_buf_puts(b, "}}");
}

static void json_result(struct fctl_buf *b, const struct probe_result *r)
{
	fctl_buf_putc(b, '{');
	jstr(b, "test", r->test, true);
	ju64(b, "size_bytes", r->size, true);
	ju64(b, "iterations", r->iters, true);
	jbool(b, "ran", r->ran, true);
	jstr(b, "error", r->error[0] ? r->error : NULL, true);
	jstr(b, "completion_status", r->wc_status ? r->wc_status_str : NULL, true);
	jbool(b, "pass", r->pass, true);
	fctl_buf_puts(b, "\"reasons\":[");
	for (size_t i = 0; i < r->n_reasons; i++) {
		if (i)
			fctl_buf_putc(b, ',');
		fctl_buf_json_str(b, r->reasons[i]);
	}
	fctl_buf_puts(b, "],");
	jnum(b, "elapsed_s", (double)r->elapsed_ns / 1e9, true);
	if (r->has_lat) {
		fctl_buf_puts(b, "\"perftest\":{");
		ju64(b, "samples", r->pt.n_samples, true);
		ju64(b, "samples_used", r->pt.n_used, true);
		jnum(b, "t_min_us", r->pt.t_min_us, true);
		jnum(b, "t_max_us", r->pt.t_max_us, true);
		jnum(b, "t_typical_us", r->pt.t_typical_us, true);
		jnum(b, "t_avg_us", r->pt.t_avg_us, true);
		jnum(b, "t_stdev_us", r->pt.t_stdev_us, true);
		jnum(b, "p99_us", r->pt.p99_us, true);
		jnum(b, "p999_us", r->pt.p999_us, false);
		fctl_buf_puts(b, "},");
		ju64(b, "latency_samples", r->ex.n, true);
		jnum(b, "latency_min_us", r->ex.min_us, true);
		jnum(b, "latency_max_us", r->ex.max_us, true);
		jnum(b, "latency_mean_us", r->ex.mean_us, true);
		jnum(b, "latency_stdev_us", r->ex.stdev_us, true);
		jnum(b, "latency_p50_us", r->ex.p50_us, true);
		jnum(b, "latency_p90_us", r->ex.p90_us, true);
		jnum(b, "latency_p99_us", r->ex.p99_us, true);
		jnum(b, "latency_p999_us", r->ex.p999_us, true);
		jnum(b, "latency_p9999_us", r->ex.p9999_us, true);
		fctl_buf_puts(b, "\"latency_histogram\":[");
		for (unsigned k = 0, first = 1; k < FCTL_STATS_HIST_BUCKETS; k++) {
			if (!r->ex.hist[k])
				continue;
			fctl_buf_printf(b, "%s{\"ge_ns\":%" PRIu64 ",\"lt_ns\":%" PRIu64
					   ",\"count\":%" PRIu64 "}",
					first ? "" : ",", k ? (uint64_t)1 << k : 0,
					k < 63 ? (uint64_t)1 << (k + 1) : UINT64_MAX, r->ex.hist[k]);
			first = 0;
		}
		fctl_buf_puts(b, "],");
	} else {
		jnum(b, "bandwidth_gbps", r->gbps, true);
		jnum(b, "message_rate_mpps", r->msg_rate_mpps, true);
		jbool(b, "bidirectional", r->bidirectional, true);
		if (r->bidirectional) {
			jnum(b, "bandwidth_by_client_gbps", r->gbps_client, true);
			jnum(b, "bandwidth_by_server_gbps", r->gbps_server, true);
		}
	}
	fctl_buf_puts(b, "\"ends\":[");
	json_end(b, &r->end[0]);
	if (r->has_peer) {
		fctl_buf_putc(b, ',');
		json_end(b, &r->end[1]);
	}
	fctl_buf_puts(b, "]}");
}

int probe_report_json(const struct probe_report *rep, struct fctl_buf *b)
{
	const struct probe_slo *s = &rep->slo;

	fctl_buf_puts(b, "{\"schema\":1,\"tool\":\"fabricctl-probe\",");
	jstr(b, "peer", rep->peer, true);
	jstr(b, "link", rep->link[0] ? rep->link : NULL, true);
	jstr(b, "profile", rep->profile[0] ? rep->profile : NULL, true);
	jstr(b, "profile_name", rep->profile_name[0] ? rep->profile_name : NULL, true);
	ju64(b, "profile_version", rep->profile_version, true);
	jbool(b, "pass", rep->pass, true);
	fctl_buf_puts(b, "\"slo\":");
	if (!s->present) {
		fctl_buf_puts(b, "null,");
	} else {
		fctl_buf_putc(b, '{');
		if (s->has_p99)
			jnum(b, "latency_p99_us", s->p99_us, true);
		if (s->has_p999)
			jnum(b, "latency_p999_us", s->p999_us, true);
		if (s->has_bw)
			jnum(b, "bandwidth_gbps", s->bw_gbps, true);
		if (s->has_max_retrans)
			ju64(b, "max_retransmissions", s->max_retrans, true);
		jbool(b, "require_macsec", s->require_macsec, true);
		ju64(b, "max_loss", s->max_loss, false);
		fctl_buf_puts(b, "},");
	}
	fctl_buf_puts(b, "\"results\":[");
	for (size_t i = 0; i < rep->n_res; i++) {
		if (i)
			fctl_buf_putc(b, ',');
		json_result(b, &rep->res[i]);
	}
	fctl_buf_puts(b, "]}\n");
	return b->oom ? -ENOMEM : 0;
}

/* --- JUnit ---------------------------------------------------------------- */

int probe_report_junit(const struct probe_report *rep, struct fctl_buf *b)
{
	size_t failures = 0;
	double total = 0;
	const char *suite = rep->link[0] ? rep->link : rep->peer;

	for (size_t i = 0; i < rep->n_res; i++) {
		failures += !rep->res[i].pass;
		total += (double)rep->res[i].elapsed_ns / 1e9;
	}
	fctl_buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
	fctl_buf_puts(b, "  <testsuite name=\"probe.");
	fctl_buf_xml_str(b, suite);
	fctl_buf_printf(b, "\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" time=\"%.6f\">\n",
			rep->n_res, failures, total);
	for (size_t i = 0; i < rep->n_res; i++) {
		const struct probe_result *r = &rep->res[i];

		fctl_buf_puts(b, "    <testcase classname=\"probe.");
		fctl_buf_xml_str(b, suite);
		fctl_buf_printf(b, "\" name=\"%s size=%" PRIu32 "\" time=\"%.6f\"", r->test, r->size,
				(double)r->elapsed_ns / 1e9);
		if (r->pass) {
			fctl_buf_puts(b, "/>\n");
			continue;
		}
		fctl_buf_puts(b, ">\n      <failure message=\"");
		fctl_buf_xml_str(b, r->n_reasons ? r->reasons[0] : "failed");
		fctl_buf_puts(b, "\">");
		for (size_t k = 0; k < r->n_reasons; k++) {
			fctl_buf_xml_str(b, r->reasons[k]);
			fctl_buf_putc(b, '\n');
		}
		fctl_buf_puts(b, "</failure>\n    </testcase>\n");
	}
	fctl_buf_puts(b, "  </testsuite>\n</testsuites>\n");
	return b->oom ? -ENOMEM : 0;
}

/* --- text ----------------------------------------------------------------- */

static const char *macsec_word(const struct probe_result *r)
{
	for (int e = 0; e < (r->has_peer ? 2 : 1); e++)
		for (size_t k = 0; k < r->n_reasons; k++)
			if (strncmp(r->reasons[k], "macsec:", 7) == 0)
				return "FAIL";
	for (int e = 0; e < (r->has_peer ? 2 : 1); e++)
		if (!r->end[e].ms.checked || !r->end[e].ms.is_macsec)
			return "-";
	return "ok";
}

int probe_report_text(const struct probe_report *rep, struct fctl_buf *b)
{
	fctl_buf_printf(b, "probe: peer %s", rep->peer);
	if (rep->link[0])
		fctl_buf_printf(b, ", link '%s' of profile %s version %" PRIu64, rep->link,
				rep->profile_name, rep->profile_version);
	if (rep->n_res)
		fctl_buf_printf(b, ", %s -> %s over %s -> %s", rep->res[0].end[0].dev,
				rep->res[0].end[1].dev[0] ? rep->res[0].end[1].dev : "?",
				rep->res[0].end[0].netdev[0] ? rep->res[0].end[0].netdev : "?",
				rep->res[0].end[1].netdev[0] ? rep->res[0].end[1].netdev : "?");
	fctl_buf_putc(b, '\n');
	fctl_buf_printf(b, "%-9s %8s %8s %13s %13s %13s %11s %6s %8s %6s  %s\n", "test", "size",
			"iters", "t_typical_us", "p99_us", "p99.9_us", "bw_gbps", "loss", "retrans",
			"macsec", "verdict");
	for (size_t i = 0; i < rep->n_res; i++) {
		const struct probe_result *r = &rep->res[i];
		uint64_t loss = r->end[0].loss + (r->has_peer ? r->end[1].loss : 0);
		uint64_t rt = r->end[0].retrans + (r->has_peer ? r->end[1].retrans : 0);

		fctl_buf_printf(b, "%-9s %8" PRIu32 " %8" PRIu64, r->test, r->size, r->iters);
		if (r->ran && r->has_lat)
			fctl_buf_printf(b, " %13.3f %13.3f %13.3f %11s", r->pt.t_typical_us,
					r->ex.p99_us, r->ex.p999_us, "-");
		else if (r->ran)
			fctl_buf_printf(b, " %13s %13s %13s %11.6f", "-", "-", "-", r->gbps);
		else
			fctl_buf_printf(b, " %13s %13s %13s %11s", "-", "-", "-", "-");
		fctl_buf_printf(b, " %6" PRIu64 " %8" PRIu64 " %6s  %s\n", loss, rt, macsec_word(r),
				r->pass ? "pass" : "FAIL");
		if (r->ran && r->bidirectional)
			fctl_buf_printf(b, "    bidirectional: client %.6f + server %.6f Gb/s\n",
					r->gbps_client, r->gbps_server);
		for (size_t k = 0; k < r->n_reasons; k++)
			fctl_buf_printf(b, "    %s\n", r->reasons[k]);
	}
	fctl_buf_printf(b, "probe: %s\n", rep->pass ? "pass" : "FAIL");
	return b->oom ? -ENOMEM : 0;
}

/* --- the server's end on the wire ------------------------------------------ */

/* Words carry no spaces: free text is percent-encoded (space, %, control characters). */
static void put_word(struct fctl_buf *b, const char *key, const char *v)
{
	fctl_buf_printf(b, " %s=", key);
	for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
		if (*c <= ' ' || *c == '%' || *c == 0x7f)
			fctl_buf_printf(b, "%%%02x", *c);
		else
			fctl_buf_putc(b, (char)*c);
	}
}

static void get_word(const char *line, const char *key, char *out, size_t len)
{
	char raw[512];
	size_t o = 0;

	if (!fctl_kv_word(line, key, raw, sizeof(raw)))
		return;
	for (size_t i = 0; raw[i] && o + 1 < len; i++) {
		unsigned v;

		if (raw[i] == '%' && raw[i + 1] && raw[i + 2] && sscanf(raw + i + 1, "%2x", &v) == 1) {
			out[o++] = (char)v;
			i += 2;
		} else {
			out[o++] = raw[i];
		}
	}
	out[o] = '\0';
}

int probe_end_to_wire(const struct probe_end *e, struct fctl_buf *b)
{
	const struct probe_macsec *m = &e->ms;

	fctl_buf_puts(b, "END");
	put_word(b, "host", e->host);
	put_word(b, "dev", e->dev);
	put_word(b, "netdev", e->netdev);
	fctl_buf_printf(b, " counters_ok=%d iters=%" PRIu64 " cpu_ns=%" PRIu64, e->counters_ok,
			e->iters, e->cpu_ns);
	if (e->elapsed_ns)
		fctl_buf_printf(b, " bytes=%" PRIu64 " elapsed_ns=%" PRIu64, e->bytes, e->elapsed_ns);
	put_word(b, "counters_err", e->counters_err);
	fctl_buf_putc(b, '\n');
	for (size_t i = 0; i < e->n_ctr; i++)
		fctl_buf_printf(b, "CTR %s %" PRIu64 "\n", e->ctr[i].name, e->ctr[i].delta);
	fctl_buf_printf(b, "MS checked=%d is_macsec=%d up=%d encrypt=%d tx_sa_active=%d"
			   " out_encrypted=%" PRIu64 " not_valid=%" PRIu64 " invalid=%" PRIu64
			   " no_sci=%" PRIu64 " unknown_sci=%" PRIu64 " late=%" PRIu64,
			m->checked, m->is_macsec, m->up, m->encrypt, m->tx_sa_active,
			m->out_pkts_encrypted, m->in_pkts_not_valid, m->in_pkts_invalid,
			m->in_pkts_no_sci, m->in_pkts_unknown_sci, m->in_pkts_late);
	put_word(b, "ifname", m->ifname);
	put_word(b, "err", m->err);
	fctl_buf_puts(b, "\nFIN\n");
	return b->oom ? -ENOMEM : 0;
}

static bool flag(const char *line, const char *key)
{
	uint64_t v = 0;

	return ctl_field_u64(line, key, &v) && v;
}

int probe_end_from_wire(const char *line, struct probe_end *e)
{
	if (strcmp(line, "FIN") == 0)
		return 1;
	if (strncmp(line, "END ", 4) == 0) {
		uint64_t ok = 0;

		get_word(line, "host", e->host, sizeof(e->host));
		get_word(line, "dev", e->dev, sizeof(e->dev));
		get_word(line, "netdev", e->netdev, sizeof(e->netdev));
		get_word(line, "counters_err", e->counters_err, sizeof(e->counters_err));
		ctl_field_u64(line, "counters_ok", &ok);
		e->counters_ok = ok;
		ctl_field_u64(line, "iters", &e->iters);
		ctl_field_u64(line, "cpu_ns", &e->cpu_ns);
		ctl_field_u64(line, "bytes", &e->bytes);
		ctl_field_u64(line, "elapsed_ns", &e->elapsed_ns);
		return 0;
	}
	if (strncmp(line, "CTR ", 4) == 0) {
		char name[48];
		uint64_t v;
		const char *sp = strchr(line + 4, ' ');

		if (!sp || (size_t)(sp - line - 4) >= sizeof(name) || fctl_parse_u64(sp + 1, &v) < 0)
			return -EINVAL;
		memcpy(name, line + 4, (size_t)(sp - line - 4));
		name[sp - line - 4] = '\0';
		probe_end_add_counter(e, name, v);
		return 0;
	}
	if (strncmp(line, "MS ", 3) == 0) {
		struct probe_macsec *m = &e->ms;

		m->checked = flag(line, "checked");
		m->is_macsec = flag(line, "is_macsec");
		m->up = flag(line, "up");
		m->encrypt = flag(line, "encrypt");
		m->tx_sa_active = flag(line, "tx_sa_active");
		ctl_field_u64(line, "out_encrypted", &m->out_pkts_encrypted);
		ctl_field_u64(line, "not_valid", &m->in_pkts_not_valid);
		ctl_field_u64(line, "invalid", &m->in_pkts_invalid);
		ctl_field_u64(line, "no_sci", &m->in_pkts_no_sci);
		ctl_field_u64(line, "unknown_sci", &m->in_pkts_unknown_sci);
		ctl_field_u64(line, "late", &m->in_pkts_late);
		get_word(line, "ifname", m->ifname, sizeof(m->ifname));
		get_word(line, "err", m->err, sizeof(m->err));
		return 0;
	}
	return -EINVAL;
}
