// SPDX-License-Identifier: MIT
/* The report's fabric latency heatmap: hosts x hosts, each cell the largest p99 of the
 * probe-fabric records between the two hosts, as inline SVG (docs/audit.md, "The report"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence_html_int.h"

#define HM_MAX 64   /* hosts shown; more are counted, not drawn */
#define HM_CELL 64  /* a cell's side */
#define HM_LBL 150  /* room for the row labels (left) and column labels (top) */

struct heat {
	char host[HM_MAX][64];
	size_t n;
	bool more;
	double us[HM_MAX][HM_MAX];
	bool has[HM_MAX][HM_MAX];
};

static int heat_host(struct heat *h, const char *name)
{
	for (size_t i = 0; i < h->n; i++)
		if (!strcmp(h->host[i], name))
			return (int)i;
	if (h->n == HM_MAX) {
		h->more = true;
		return -1;
	}
	snprintf(h->host[h->n], sizeof(h->host[0]), "%s", name);
	return (int)h->n++;
}

static void heat_put(struct heat *h, int i, int j, double v)
{
	if (!h->has[i][j] || v > h->us[i][j])
		h->us[i][j] = v;
	h->has[i][j] = true;
}

/* the word " key=VALUE" of the detail's head (the test's name, before ": ") into out */
static bool head_word(const char *detail, const char *key, char out[64])
{
	const char *end = detail ? strstr(detail, ": ") : NULL;
	size_t kl = strlen(key);

	for (const char *p = detail; p && end && (p = strchr(p, ' ')) && p < end; p++) {
		if (strncmp(p + 1, key, kl) || p[1 + kl] != '=')
			continue;
		p += kl + 2;
		snprintf(out, 64, "%.*s", (int)strcspn(p, " :"), p);
		return out[0] != '\0';
	}
	return false;
}

/* green (lowest) through yellow to red (highest) */
static void heat_colour(char out[8], double v, double lo, double hi)
{
	double f = hi > lo ? (v - lo) / (hi - lo) : 0;
	int r = f < 0.5 ? (int)(46 + f * 2 * (230 - 46)) : 230;
	int g = f < 0.5 ? 160 : (int)(160 - (f - 0.5) * 2 * (160 - 60));

	snprintf(out, 8, "#%02x%02x%02x", (unsigned)r & 0xff, (unsigned)g & 0xff, 60u);
}

static void heat_cells(struct fctl_buf *b, const struct heat *h, double lo, double hi)
{
	for (size_t i = 0; i < h->n; i++) {
		for (size_t j = 0; j < h->n; j++) {
			double x = HM_LBL + (double)j * HM_CELL, y = HM_LBL + (double)i * HM_CELL;
			char fill[8] = "#eaeef2";

			if (h->has[i][j])
				heat_colour(fill, h->us[i][j], lo, hi);
			fctl_buf_printf(b, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%d\" height=\"%d\" "
					   "fill=\"%s\" stroke=\"#ffffff\">", x, y, HM_CELL, HM_CELL,
					fill);
			fctl_buf_puts(b, "<title>");
			fctl_eh_esc(b, h->host[i]);
			fctl_buf_puts(b, " - ");
			fctl_eh_esc(b, h->host[j]);
			if (h->has[i][j])
				fctl_buf_printf(b, ": p99 %.3f us</title></rect>", h->us[i][j]);
			else
				fctl_buf_puts(b, ": no link probed</title></rect>");
			fctl_buf_printf(b, "<text x=\"%.0f\" y=\"%.0f\" class=\"hmv\" "
					   "text-anchor=\"middle\">", x + HM_CELL / 2.0,
					y + HM_CELL / 2.0 + 4);
			if (h->has[i][j])
				fctl_buf_printf(b, "%.1f", h->us[i][j]);
			else
				fctl_buf_puts(b, "-");
			fctl_buf_puts(b, "</text>\n");
		}
	}
}

void fctl_eh_svg_heatmap(struct fctl_buf *b, const struct ehrec *r, size_t n)
{
	struct heat *h = calloc(1, sizeof(*h));
	double lo = 0, hi = 0, v;
	bool any = false;
	int side;

	if (!h)
		return;
	for (size_t k = 0; k < n; k++) {
		char a[64], z[64];
		int i, j;

		if (r[k].manual || !r[k].action || strcmp(r[k].action, "probe-fabric") ||
		    !fctl_eh_fig(r[k].detail, "latency_p99_us", &v) ||
		    !head_word(r[k].detail, "a", a) || !head_word(r[k].detail, "b", z))
			continue;
		i = heat_host(h, a);
		j = heat_host(h, z);
		if (i < 0 || j < 0)
			continue;
		heat_put(h, i, j, v);
		heat_put(h, j, i, v);
		lo = any && lo < v ? lo : v;
		hi = any && hi > v ? hi : v;
		any = true;
	}
	if (any) {
		side = HM_LBL + (int)h->n * HM_CELL + 20;
		fctl_buf_puts(b, "<p class=\"legend\">The fabric probe's links (probe-fabric "
				 "records), hosts x hosts: the p99 latency in microseconds of the "
				 "links between two hosts (the largest, of several), green lowest to "
				 "red highest; grey: no link probed.</p>\n");
		fctl_buf_printf(b, "<svg class=\"plot heat\" viewBox=\"0 0 %d %d\" role=\"img\" "
				   "aria-label=\"fabric latency heatmap, p99 microseconds\" "
				   "style=\"max-width:%dpx\">\n", side, side, side);
		for (size_t i = 0; i < h->n; i++) {
			double c = HM_LBL + (double)i * HM_CELL + HM_CELL / 2.0;

			fctl_buf_printf(b, "<text x=\"%d\" y=\"%.0f\" class=\"rowlbl\" "
					   "text-anchor=\"end\">", HM_LBL - 8, c + 4);
			fctl_eh_esc(b, h->host[i]);
			fctl_buf_printf(b, "</text><text x=\"%.0f\" y=\"%d\" class=\"rowlbl\" "
					   "text-anchor=\"start\" transform=\"rotate(-45 %.0f %d)\">",
					c, HM_LBL - 8, c, HM_LBL - 8);
			fctl_eh_esc(b, h->host[i]);
			fctl_buf_puts(b, "</text>\n");
		}
		heat_cells(b, h, lo, hi);
		fctl_buf_puts(b, "</svg>\n");
		if (h->more)
			fctl_buf_printf(b, "<p class=\"legend\">Only the first %d hosts are drawn.</p>",
					HM_MAX);
	}
	free(h);
}
