// SPDX-License-Identifier: MIT
/* The fabric probe's latency matrix: hosts x hosts, each cell the p50 or p99 of the
 * latency test of the links between them, as text and JSON (contract in
 * fctl/fabric_probe.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/fabric_probe.h"
#include "fctl/util.h"

static size_t host_index(const char **hosts, size_t *n, const char *h)
{
	for (size_t i = 0; i < *n; i++)
		if (!strcmp(hosts[i], h))
			return i;
	hosts[*n] = h;
	return (*n)++;
}

/* the first latency test of r, or NULL */
static const struct fctl_probe_test *latency_test(const struct fctl_probe_result *r)
{
	for (size_t i = 0; i < r->n_tests; i++)
		if (r->tests[i].ran && r->tests[i].has_lat)
			return &r->tests[i];
	return NULL;
}

static void cell_put(struct fctl_probe_matrix *m, size_t i, size_t j,
		     const struct fctl_probe_test *t)
{
	size_t c = i * m->n_hosts + j;
	double v;

	if (!t) {
		if (m->kind[c] == FCTL_PROBE_CELL_NONE)
			m->kind[c] = FCTL_PROBE_CELL_NOFIG;
		return;
	}
	v = m->p99 ? t->p99_us : t->p50_us;
	if (m->kind[c] != FCTL_PROBE_CELL_US || v > m->us[c])
		m->us[c] = v;
	m->kind[c] = FCTL_PROBE_CELL_US;
}

int fctl_probe_matrix_build(const struct fctl_probe_result *res, size_t n, bool p99,
			    struct fctl_probe_matrix *m)
{
	const char **hosts = calloc(2 * n + 1, sizeof(*hosts));
	size_t nh = 0, *ia = calloc(n + 1, sizeof(*ia)), *ib = calloc(n + 1, sizeof(*ib));
	struct fctl_probe_matrix t = { .p99 = p99 };

	if (!hosts || !ia || !ib)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		ia[i] = host_index(hosts, &nh, res[i].item->host[0]);
		ib[i] = host_index(hosts, &nh, res[i].item->host[1]);
	}
	t.n_hosts = nh;
	t.hosts = hosts;
	t.kind = calloc(nh * nh + 1, sizeof(*t.kind));
	t.us = calloc(nh * nh + 1, sizeof(*t.us));
	if (!t.kind || !t.us)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		const struct fctl_probe_test *lt = latency_test(&res[i]);

		cell_put(&t, ia[i], ib[i], lt);
		cell_put(&t, ib[i], ia[i], lt);
	}
	free(ia);
	free(ib);
	*m = t;
	return 0;
oom:
	free(t.kind);
	free(t.us);
	free(hosts);
	free(ia);
	free(ib);
	return -ENOMEM;
}

void fctl_probe_matrix_text(const struct fctl_probe_matrix *m, struct fctl_buf *b)
{
	int w = 9;

	for (size_t i = 0; i < m->n_hosts; i++)
		if ((int)strlen(m->hosts[i]) > w)
			w = (int)strlen(m->hosts[i]);
	fctl_buf_printf(b, "latency %s (us), hosts x hosts:\n%-*s", m->p99 ? "p99" : "p50", w,
			"");
	for (size_t j = 0; j < m->n_hosts; j++)
		fctl_buf_printf(b, " %*s", w, m->hosts[j]);
	fctl_buf_putc(b, '\n');
	for (size_t i = 0; i < m->n_hosts; i++) {
		fctl_buf_printf(b, "%-*s", w, m->hosts[i]);
		for (size_t j = 0; j < m->n_hosts; j++) {
			size_t c = i * m->n_hosts + j;

			if (m->kind[c] == FCTL_PROBE_CELL_US)
				fctl_buf_printf(b, " %*.1f", w, m->us[c]);
			else
				fctl_buf_printf(b, " %*s", w,
						m->kind[c] == FCTL_PROBE_CELL_NOFIG ? "?" : "-");
		}
		fctl_buf_putc(b, '\n');
	}
}

void fctl_probe_matrix_json(const struct fctl_probe_matrix *m, struct fctl_buf *b)
{
	fctl_buf_printf(b, "{\"percentile\":\"%s\",\"hosts\":[", m->p99 ? "p99" : "p50");
	for (size_t i = 0; i < m->n_hosts; i++) {
		if (i)
			fctl_buf_putc(b, ',');
		fctl_buf_json_str(b, m->hosts[i]);
	}
	for (int pass = 0; pass < 2; pass++) {
		fctl_buf_puts(b, pass ? "],\"links\":[" : "],\"us\":[");
		for (size_t i = 0; i < m->n_hosts; i++) {
			fctl_buf_puts(b, i ? ",[" : "[");
			for (size_t j = 0; j < m->n_hosts; j++) {
				size_t c = i * m->n_hosts + j;

				if (j)
					fctl_buf_putc(b, ',');
				if (pass)
					fctl_buf_puts(b, m->kind[c] != FCTL_PROBE_CELL_NONE ? "true"
											    : "false");
				else if (m->kind[c] == FCTL_PROBE_CELL_US)
					fctl_buf_printf(b, "%.3f", m->us[c]);
				else
					fctl_buf_puts(b, "null");
			}
			fctl_buf_putc(b, ']');
		}
	}
	fctl_buf_puts(b, "]}");
}

void fctl_probe_matrix_release(struct fctl_probe_matrix *m)
{
	if (!m)
		return;
	free(m->hosts);
	free(m->kind);
	free(m->us);
	*m = (struct fctl_probe_matrix){ 0 };
}
