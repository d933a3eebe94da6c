// SPDX-License-Identifier: MIT
/*
 * The last run for monitoring: the report the agent reads (STATE_DIR/probe/last, lines
 * of key=value words) and the node_exporter textfile (--metrics-textfile). Both
 * formats: docs/probes.md, "Metrics"; the agent's side: libfctl/agent/metrics_state.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "probe.h"

/* Words carry no spaces or quotes: anything else becomes '_'. */
static void put_safe(struct fctl_buf *b, const char *key, const char *v)
{
	fctl_buf_printf(b, " %s=", key);
	for (const unsigned char *c = (const unsigned char *)(v && *v ? v : "-"); *c; c++)
		fctl_buf_putc(b, *c <= ' ' || *c == '"' || *c == '\\' || *c >= 0x7f ? '_'
										   : (char)*c);
}

static uint64_t res_loss(const struct probe_result *r)
{
	return r->end[0].loss + (r->has_peer ? r->end[1].loss : 0);
}

static uint64_t res_retrans(const struct probe_result *r)
{
	return r->end[0].retrans + (r->has_peer ? r->end[1].retrans : 0);
}

int probe_report_last(const struct probe_report *rep, int exit_code, double now,
		      struct fctl_buf *b)
{
	fctl_buf_printf(b, "fabricctl-probe-last format=1 time=%.3f exit=%d", now, exit_code);
	put_safe(b, "peer", rep->peer);
	put_safe(b, "link", rep->link);
	put_safe(b, "netdev", rep->netdev);
	fctl_buf_putc(b, '\n');
	for (size_t i = 0; i < rep->n_res; i++) {
		const struct probe_result *r = &rep->res[i];

		fctl_buf_printf(b, "result test=%s size_bytes=%" PRIu32 " test_pass=%d", r->test,
				r->size, r->pass);
		if (r->ran && r->has_lat)
			fctl_buf_printf(b, " latency_p50_seconds=%.9g latency_p99_seconds=%.9g"
					   " latency_p999_seconds=%.9g",
					r->ex.p50_us / 1e6, r->ex.p99_us / 1e6,
					r->ex.p999_us / 1e6);
		else if (r->ran)
			fctl_buf_printf(b, " bandwidth_bytes_per_second=%.9g", r->gbps * 1e9 / 8);
		if (r->ran)
			fctl_buf_printf(b, " loss_packets=%" PRIu64 " retransmissions=%" PRIu64,
					res_loss(r), res_retrans(r));
		fctl_buf_putc(b, '\n');
	}
	return b->oom ? -ENOMEM : 0;
}

/* key="value" with the format's escapes. */
static void label(char *set, size_t len, const char *key, const char *v)
{
	size_t n = strlen(set);

	n += (size_t)snprintf(set + n, len - n, "%s%s=\"", n ? "," : "", key);
	for (const char *p = v ? v : ""; *p && n + 3 < len; p++) {
		if (*p == '\\' || *p == '"' || *p == '\n') {
			set[n++] = '\\';
			set[n++] = *p == '\n' ? 'n' : *p;
		} else {
			set[n++] = *p;
		}
	}
	if (n + 2 <= len) {
		set[n++] = '"';
		set[n] = '\0';
	}
}

static void head(struct fctl_buf *b, const char *name, const char *help)
{
	fctl_buf_printf(b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name);
}

enum what { W_PASS, W_LAT, W_BW, W_LOSS, W_RETRANS };

static void per_test(struct fctl_buf *b, const struct probe_report *rep, const char *base,
		     enum what w, const char *name, const char *help)
{
	head(b, name, help);
	for (size_t i = 0; i < rep->n_res; i++) {
		const struct probe_result *r = &rep->res[i];
		char set[512], size[16];

		snprintf(size, sizeof(size), "%" PRIu32, r->size);
		snprintf(set, sizeof(set), "%s", base);
		label(set, sizeof(set), "test", r->test);
		label(set, sizeof(set), "size_bytes", size);
		if (w == W_PASS) {
			fctl_buf_printf(b, "%s{%s} %d\n", name, set, r->pass);
		} else if (w == W_LAT && r->ran && r->has_lat) {
			const double q[3] = { r->ex.p50_us, r->ex.p99_us, r->ex.p999_us };
			const char *pct[3] = { "50", "99", "99.9" };

			for (int k = 0; k < 3; k++)
				fctl_buf_printf(b, "%s{%s,percentile=\"%s\"} %.9g\n", name, set,
						pct[k], q[k] / 1e6);
		} else if (w == W_BW && r->ran && !r->has_lat) {
			fctl_buf_printf(b, "%s{%s} %.9g\n", name, set, r->gbps * 1e9 / 8);
		} else if ((w == W_LOSS || w == W_RETRANS) && r->ran) {
			fctl_buf_printf(b, "%s{%s} %" PRIu64 "\n", name, set,
					w == W_LOSS ? res_loss(r) : res_retrans(r));
		}
	}
}

int probe_report_textfile(const struct probe_report *rep, int exit_code, double now,
			  struct fctl_buf *b)
{
	char base[384] = "";

	label(base, sizeof(base), "peer", rep->peer);
	label(base, sizeof(base), "link", rep->link);
	head(b, "fabricctl_probe_last_run_timestamp_seconds",
	     "Unix time the last probe run ended.");
	fctl_buf_printf(b, "fabricctl_probe_last_run_timestamp_seconds{%s} %.3f\n", base, now);
	head(b, "fabricctl_probe_exit_code",
	     "Exit code of the last probe run: 0 passed, 1 failed its SLO, 2 could not run.");
	fctl_buf_printf(b, "fabricctl_probe_exit_code{%s} %d\n", base, exit_code);
	head(b, "fabricctl_probe_pass", "1 when the last probe run passed (exit 0).");
	fctl_buf_printf(b, "fabricctl_probe_pass{%s} %d\n", base, exit_code == 0);
	per_test(b, rep, base, W_PASS, "fabricctl_probe_test_pass",
		 "1 when the test passed its SLO in the last run.");
	per_test(b, rep, base, W_LAT, "fabricctl_probe_latency_seconds",
		 "Latency percentiles (50, 99, 99.9; exact, nearest rank) of the last run.");
	per_test(b, rep, base, W_BW, "fabricctl_probe_bandwidth_bytes_per_second",
		 "Bandwidth of the last run.");
	per_test(b, rep, base, W_LOSS, "fabricctl_probe_loss_packets",
		 "Packets lost in the last run (both ends).");
	per_test(b, rep, base, W_RETRANS, "fabricctl_probe_retransmissions",
		 "Retransmissions in the last run (both ends).");
	return b->oom ? -ENOMEM : 0;
}

int probe_write_atomic(const char *path, const struct fctl_buf *b)
{
	/* PATH.tmp.PID in the same directory, then rename: a reader (node_exporter, the
	 * agent) sees the old file or the new one, never a part */
	return fctl_file_replace(path, NULL, b->data ? b->data : "", b->len, 0644, 0);
}
