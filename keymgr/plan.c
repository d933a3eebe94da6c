// SPDX-License-Identifier: MIT
/*
 * rotate --dry-run: the plan of a rotation from the profile alone (no agent, no KMS, no
 * audit record, nothing written): the links in the order every phase sends them, the
 * requests of each phase (one per agent, KM_BATCH_MAX records at most), the waves the
 * --parallel bound makes of them, and the expected time from a cost model.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/util.h"
#include "keymgr.h"

/* The phases of km_rotate_batch, with the SA records each sends per link end. */
static const struct {
	const char *name;
	unsigned per_end;
} phases[] = {
	{ "prepare", 1 }, { "install-rx", 1 }, { "stage-tx", 1 }, { "confirm", 1 },
	{ "switch", 1 },  { "overlap", 1 },    { "overlap-end", 1 }, { "retire", 2 },
};

struct ep {
	const char *endpoint, *host;
	size_t ends;
};

static size_t endpoints(struct km_link *const *links, size_t n, struct ep *ep)
{
	size_t m = 0;

	for (size_t i = 0; i < n; i++)
		for (int e = 0; e < 2; e++) {
			const struct km_end *x = &links[i]->end[e];
			size_t j = 0;

			while (j < m && strcmp(ep[j].endpoint, x->endpoint) != 0)
				j++;
			if (j == m)
				ep[m++] = (struct ep){ x->endpoint, x->host, 0 };
			ep[j].ends++;
		}
	return m;
}

int km_plan_print(const struct km *k, struct km_link *const *links, size_t n,
		  const struct km_plan_model *mo, bool json)
{
	struct ep *ep = calloc(2 * n + 1, sizeof(*ep));
	unsigned par = k->parallel ? k->parallel : 1;
	uint64_t overlap = 0;
	double steps = 0, ph_ms[FCTL_ARRAY_SIZE(phases)];
	size_t m, reqs[FCTL_ARRAY_SIZE(phases)], waves[FCTL_ARRAY_SIZE(phases)], biggest = 0;
	struct fctl_buf o = { 0 };

	if (!ep)
		return -1;
	m = endpoints(links, n, ep);
	for (size_t i = 0; i < n; i++)
		if (!k->compromised && links[i]->overlap_s > overlap)
			overlap = links[i]->overlap_s;
	for (size_t j = 0; j < m; j++)
		if (ep[j].ends > biggest)
			biggest = ep[j].ends;
	for (size_t p = 0; p < FCTL_ARRAY_SIZE(phases); p++) {
		size_t recs = biggest * phases[p].per_end;
		size_t per = (recs + KM_BATCH_MAX - 1) / KM_BATCH_MAX;

		reqs[p] = 0;
		for (size_t j = 0; j < m; j++)
			reqs[p] += (ep[j].ends * phases[p].per_end + KM_BATCH_MAX - 1) / KM_BATCH_MAX;
		waves[p] = (reqs[p] + par - 1) / par;
		/* a wave lasts as long as its largest request; the biggest agent's come last */
		ph_ms[p] = (double)waves[p] * mo->request_ms +
			   (double)recs * mo->record_ms * (per ? 1.0 : 0.0) +
			   (p == 0 ? (double)n * mo->kms_ms : 0.0) +
			   (double)n * mo->journal_ms;
		steps += ph_ms[p];
	}
	if (json) {
		fctl_buf_puts(&o, "{\"plan\":{\"links\":[");
		for (size_t i = 0; i < n; i++) {
			fctl_buf_puts(&o, i ? "," : "");
			fctl_buf_json_str(&o, links[i]->name);
		}
		fctl_buf_puts(&o, "],\"agents\":[");
		for (size_t j = 0; j < m; j++) {
			fctl_buf_puts(&o, j ? ",{\"host\":" : "{\"host\":");
			fctl_buf_json_str(&o, ep[j].host);
			fctl_buf_puts(&o, ",\"endpoint\":");
			fctl_buf_json_str(&o, ep[j].endpoint);
			fctl_buf_printf(&o, ",\"link_ends\":%zu}", ep[j].ends);
		}
		fctl_buf_printf(&o, "],\"parallel\":%u,\"batch_max\":%d,\"overlap_s\":%" PRIu64
				",\"phases\":[", par, KM_BATCH_MAX, overlap);
		for (size_t p = 0; p < FCTL_ARRAY_SIZE(phases); p++)
			fctl_buf_printf(&o, "%s{\"phase\":\"%s\",\"requests\":%zu,\"records\":%zu,"
					"\"waves\":%zu,\"expected_ms\":%.1f}", p ? "," : "",
					phases[p].name, reqs[p], 2 * n * phases[p].per_end, waves[p],
					ph_ms[p]);
		fctl_buf_printf(&o, "],\"expected_ms\":{\"steps\":%.1f,\"overlap\":%.1f,"
				"\"total\":%.1f},\"model\":{\"request_ms\":%g,\"record_ms\":%g,"
				"\"kms_ms\":%g,\"journal_ms\":%g}}}\n", steps, (double)overlap * 1e3,
				steps + (double)overlap * 1e3, mo->request_ms, mo->record_ms,
				mo->kms_ms, mo->journal_ms);
	} else {
		fctl_buf_printf(&o, "rotation plan (dry run: nothing contacted, nothing written)\n"
				"%zu links on %zu agents, %u agents at once, overlap %" PRIu64 " s\n"
				"order (every phase sends its records in it):", n, m, par, overlap);
		for (size_t i = 0; i < n && i < 8; i++)
			fctl_buf_printf(&o, " %s", links[i]->name);
		if (n > 8)
			fctl_buf_printf(&o, " ... (%zu more)", n - 8);
		fctl_buf_puts(&o, "\n\nphase        requests  records  waves  expected\n");
		for (size_t p = 0; p < FCTL_ARRAY_SIZE(phases); p++)
			fctl_buf_printf(&o, "%-12s %8zu %8zu %6zu  %.1f s\n", phases[p].name,
					reqs[p], 2 * n * phases[p].per_end, waves[p],
					ph_ms[p] / 1e3);
		fctl_buf_printf(&o, "\nexpected: %.1f s of steps + %" PRIu64 " s overlap = %.1f s "
				"(model: %g ms per agent request, %g ms per SA record, %g ms per "
				"KMS fetch, %g ms per journal step)\n", steps / 1e3, overlap,
				steps / 1e3 + (double)overlap, mo->request_ms, mo->record_ms,
				mo->kms_ms, mo->journal_ms);
	}
	fwrite(o.data, 1, o.len, stdout);
	fctl_buf_release(&o);
	free(ep);
	return 0;
}
