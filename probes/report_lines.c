// SPDX-License-Identifier: MIT
/*
 * The report as lines for `fabricctl probe --fabric` (run --lines): one "result" line of
 * space-separated key=value words per test and size, then its "reason" lines. The agent
 * returns them; the CLI parses them (libfctl/fabric/fabric_probe.c). Format in
 * docs/probes.md, "The whole fabric".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "probe.h"

/* latency in us to the ns, bandwidth in Gb/s to the kb/s (%.6f: emulated links move
 * a hundredth of a Gb/s) */
static void num(struct fctl_buf *b, const char *key, double v, bool has)
{
	if (has)
		fctl_buf_printf(b, " %s=%.*f", key, strcmp(key, "gbps") == 0 ? 6 : 3, v);
	else
		fctl_buf_printf(b, " %s=-", key);
}

/* reasons carry no newline: one line each, whatever the text */
static void text(struct fctl_buf *b, const char *s)
{
	for (; *s; s++)
		fctl_buf_putc(b, *s == '\n' || *s == '\r' ? ' ' : *s);
}

int probe_report_lines(const struct probe_report *rep, struct fctl_buf *b)
{
	for (size_t i = 0; i < rep->n_res; i++) {
		const struct probe_result *r = &rep->res[i];
		const struct probe_end *c = &r->end[0], *s = &r->end[1];
		bool lat = r->ran && r->has_lat, bw = r->ran && !r->has_lat;
		uint64_t bad_c = c->ms.in_pkts_not_valid + c->ms.in_pkts_invalid +
				 c->ms.in_pkts_no_sci + c->ms.in_pkts_unknown_sci + c->ms.in_pkts_late;
		uint64_t bad_s = s->ms.in_pkts_not_valid + s->ms.in_pkts_invalid +
				 s->ms.in_pkts_no_sci + s->ms.in_pkts_unknown_sci + s->ms.in_pkts_late;

		fctl_buf_printf(b, "result test=%s size=%" PRIu32 " ran=%d pass=%d", r->test,
				r->size, r->ran, r->pass);
		num(b, "p50_us", r->ex.p50_us, lat);
		num(b, "p99_us", r->ex.p99_us, lat);
		num(b, "p999_us", r->ex.p999_us, lat);
		num(b, "gbps", r->gbps, bw);
		fctl_buf_printf(b, " loss_client=%" PRIu64 " loss_server=%" PRIu64
				   " retrans_client=%" PRIu64 " retrans_server=%" PRIu64,
				c->loss, r->has_peer ? s->loss : 0, c->retrans,
				r->has_peer ? s->retrans : 0);
		fctl_buf_printf(b, " encrypted_client=%" PRIu64 " encrypted_server=%" PRIu64
				   " macsec_bad_client=%" PRIu64 " macsec_bad_server=%" PRIu64
				   " macsec_client=%d macsec_server=%d\n",
				c->ms.out_pkts_encrypted, r->has_peer ? s->ms.out_pkts_encrypted : 0,
				bad_c, r->has_peer ? bad_s : 0, c->ms.is_macsec,
				r->has_peer && s->ms.is_macsec);
		if (!r->ran && r->error[0]) {
			fctl_buf_printf(b, "reason test=%s ", r->test);
			text(b, r->error);
			fctl_buf_putc(b, '\n');
		}
		for (size_t k = 0; k < r->n_reasons; k++) {
			fctl_buf_printf(b, "reason test=%s ", r->test);
			text(b, r->reasons[k]);
			fctl_buf_putc(b, '\n');
		}
	}
	fctl_buf_printf(b, "verdict pass=%d\n", rep->pass);
	return b->oom ? -ENOMEM : 0;
}
