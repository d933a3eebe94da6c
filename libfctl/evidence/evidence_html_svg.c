// SPDX-License-Identifier: MIT
/* The report's plots as inline SVG: the change timeline, probe latency, MACsec counters. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "evidence_html_int.h"

#define W 1180     /* viewBox width */
#define X0 150     /* plot area, left */
#define X1 1160    /* plot area, right */
#define LANE 54    /* timeline lane height */
#define LX0 220    /* latency plot area, left: room for the row labels */
#define MARK_GAP 20 /* timeline: the least distance between two marks of a lane (a mark is 17) */
#define LBL_CHAR 8  /* timeline: an upper bound of a band label's character width (11px bold) */
#define TICK_CHAR 7 /* an upper bound of a time label's character width (11px) */

static const char *const lane_name[EH_KINDS] = {
	"Applies", "Key rotation", "Key state", "Probes", "Other, manual",
};

static const char *tone_fill(const char *tone)
{
	if (!strcmp(tone, "good"))
		return "#1a7f37";
	if (!strcmp(tone, "bad"))
		return "#cf222e";
	if (!strcmp(tone, "warn"))
		return "#bf8700";
	if (!strcmp(tone, "manual"))
		return "#8250df";
	return "#57606a";
}

struct axis {
	int64_t t0, t1; /* the time range shown */
};

static double tx(const struct axis *a, int64_t t)
{
	return X0 + (double)(t - a->t0) * (X1 - X0) / (double)(a->t1 - a->t0);
}

static void axis_of(struct axis *a, const struct ehrec *r, size_t n)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN, pad;

	for (size_t i = 0; i < n; i++) {
		if (!r[i].t_us)
			continue;
		lo = r[i].t_us < lo ? r[i].t_us : lo;
		hi = r[i].t_us > hi ? r[i].t_us : hi;
	}
	if (lo > hi)
		lo = hi = 0;
	if (hi - lo < 1000) { /* one instant: a second around it */
		lo -= 500000;
		hi += 500000;
	}
	pad = (hi - lo) / 25;
	a->t0 = lo - pad;
	a->t1 = hi + pad;
}

static void fmt_tick(int64_t t, int64_t step, char *out, size_t len)
{
	time_t s = (time_t)(t / 1000000);
	struct tm tm;

	gmtime_r(&s, &tm);
	if (step < 1000000)
		snprintf(out, len, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min, tm.tm_sec,
			 (int)(t % 1000000 / 1000));
	else if (step < 86400000000LL)
		snprintf(out, len, "%02d:%02d:%02d", tm.tm_hour, tm.tm_min, tm.tm_sec);
	else
		snprintf(out, len, "%02d-%02d %02d:%02d", tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			 tm.tm_min);
}

/* Vertical grid lines and time labels at a round step below y. */
static void time_ticks(struct fctl_buf *b, const struct axis *a, int ytop, int y)
{
	static const int64_t steps[] = {
		1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000, 2000000,
		5000000, 10000000, 15000000, 30000000, 60000000, 120000000, 300000000, 600000000,
		900000000, 1800000000, 3600000000LL, 7200000000LL, 10800000000LL, 21600000000LL,
		43200000000LL, 86400000000LL, 172800000000LL, 604800000000LL,
	};
	int64_t step = steps[FCTL_ARRAY_SIZE(steps) - 1], first;
	char label[40];

	for (size_t i = 0; i < FCTL_ARRAY_SIZE(steps); i++) {
		if ((a->t1 - a->t0) / steps[i] <= 7) {
			step = steps[i];
			break;
		}
	}
	first = (a->t0 / step + 1) * step;
	for (int64_t t = first; t <= a->t1; t += step) {
		double x = tx(a, t);

		fmt_tick(t, step, label, sizeof(label));
		/* a label that would run past the SVG's edge (which clips it) ends at its line */
		fctl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"grid\"/>"
				   "<text x=\"%.1f\" y=\"%d\" class=\"tick\" text-anchor=\"%s\">%s"
				   "</text>\n", x, ytop, x, y, x, y + 16,
				x + (double)strlen(label) * TICK_CHAR / 2 > W - 2 ? "end" : "middle", label);
	}
}

static void marker(struct fctl_buf *b, const struct ehrec *r, double x, double y, int k)
{
	const char *fill = tone_fill(fctl_eh_tone(r));

	fctl_buf_puts(b, "<g>");
	if (fctl_eh_kind(r) == EH_ROTATION) /* a diamond */
		fctl_buf_printf(b, "<path d=\"M%.1f %.1fl8 8l-8 8l-8 -8z\" fill=\"%s\" "
				   "stroke=\"#fff\" stroke-width=\"1.5\">", x, y - 8, fill);
	else if (fctl_eh_kind(r) == EH_KEYSTATE)
		fctl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"14\" rx=\"2\" "
				   "fill=\"%s\" stroke=\"#fff\" stroke-width=\"1.5\">", x - 7, y - 7, fill);
	else
		fctl_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"7\" fill=\"%s\" "
				   "stroke=\"#fff\" stroke-width=\"1.5\">", x, y, fill);
	fctl_buf_printf(b, "<title>#%" PRIu64 " ", r->seq);
	fctl_eh_esc(b, r->time);
	fctl_buf_putc(b, ' ');
	fctl_eh_esc(b, r->action);
	fctl_buf_putc(b, ' ');
	fctl_eh_esc(b, r->result);
	if (r->host || r->link) {
		fctl_buf_puts(b, " on ");
		fctl_eh_esc(b, r->host ? r->host : r->link);
	}
	fctl_buf_puts(b, fctl_eh_kind(r) == EH_ROTATION ? "</title></path>"
			 : fctl_eh_kind(r) == EH_KEYSTATE ? "</title></rect>"
							    : "</title></circle>");
	/* seq labels alternate above and below, so neighbours do not overwrite each other */
	fctl_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"middle\">#%"
			   PRIu64 "</text></g>\n", x, k % 2 ? y + 22 : y - 13, r->seq);
}

static bool rot_end(const struct ehrec *r)
{
	return r->result && (!strcmp(r->result, "committed") || !strcmp(r->result, "rolled-back") ||
			     !strcmp(r->result, "failed"));
}

static bool same_link(const struct ehrec *a, const struct ehrec *b)
{
	const char *x = a->link ? a->link : a->host, *y = b->link ? b->link : b->host;

	return (!x && !y) || (x && y && !strcmp(x, y));
}

/* Each rotation run of a link (first record to committed/rolled-back/failed) as a bar, its
 * overlap window (confirmed, the switch, to committed) shaded. */
static void rotation_bars(struct fctl_buf *b, const double *xs, const struct ehrec *r, size_t n,
			  double y)
{
	bool *done = calloc(n ? n : 1, sizeof(bool));

	for (size_t i = 0; done && i < n; i++) {
		const struct ehrec *first = &r[i], *confirmed = NULL, *last = first;

		if (done[i] || fctl_eh_kind(first) != EH_ROTATION || !first->t_us)
			continue;
		for (size_t j = i; j < n; j++) {
			if (fctl_eh_kind(&r[j]) != EH_ROTATION || !same_link(&r[j], first) ||
			    !r[j].t_us)
				continue;
			done[j] = true;
			last = &r[j];
			if (r[j].result && !strcmp(r[j].result, "confirmed"))
				confirmed = &r[j];
			if (rot_end(&r[j]))
				break;
		}
		if (last == first)
			continue;
		fctl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"20\" rx=\"4\" "
				   "class=\"rotbar\"><title>rotation #%" PRIu64 " to #%" PRIu64
				   "</title></rect>\n", xs[first - r], y - 10,
				xs[last - r] - xs[first - r], first->seq, last->seq);
		if (confirmed && last->result && !strcmp(last->result, "committed") &&
		    last != confirmed) {
			double x = xs[confirmed - r], w = xs[last - r] - x;

			fctl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"20\" "
					   "class=\"overlap\"><title>overlap window: old and new key "
					   "accepted, #%" PRIu64 " to #%" PRIu64 " (%.3f s)</title></rect>"
					   "<text x=\"%.1f\" y=\"%.1f\" class=\"lbl\" text-anchor=\"middle\">"
					   "overlap %.3f s</text>\n", x, y - 10, w, confirmed->seq, last->seq,
					(double)(last->t_us - confirmed->t_us) / 1e6, x + w / 2, y + 24,
					(double)(last->t_us - confirmed->t_us) / 1e6);
		}
	}
	free(done);
}

/* A faint band per change id, from its first record's mark to its last one's, labelled. */
static void change_bands(struct fctl_buf *b, const double *xs, const struct ehrec *r, size_t n,
			 int h)
{
	for (size_t i = 0; i < n; i++) {
		double lo = xs[i], hi = xs[i];
		bool seen = false, wide;
		double x;

		if (!r[i].change || !r[i].t_us)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = r[j].change && !strcmp(r[j].change, r[i].change);
		if (seen)
			continue;
		for (size_t j = i; j < n; j++) {
			if (!r[j].change || strcmp(r[j].change, r[i].change) || !r[j].t_us)
				continue;
			lo = xs[j] < lo ? xs[j] : lo;
			hi = xs[j] > hi ? xs[j] : hi;
		}
		/* the label starts at the band's left edge, or ends at its right edge when it would
		 * run past the SVG's (which clips it: "change CHC") */
		x = lo - 10;
		wide = x + (double)(strlen("change ") + strlen(r[i].change)) * LBL_CHAR > W - 4;
		fctl_buf_printf(b, "<rect x=\"%.1f\" y=\"22\" width=\"%.1f\" height=\"%d\" "
				   "class=\"band\"/><text x=\"%.1f\" y=\"16\" class=\"bandlbl\"%s>",
				x, hi - lo + 20, h, wide ? hi + 10 : x, wide ? " text-anchor=\"end\"" : "");
		fctl_buf_puts(b, "change ");
		fctl_eh_esc(b, r[i].change);
		fctl_buf_puts(b, "</text>\n");
	}
}

/* The worse of two tones: bad, warn, neutral, manual, good (in that order). */
static const char *worse(const char *a, const char *b)
{
	static const char *const rank[] = { "bad", "warn", "neutral", "manual", "good" };

	if (!a)
		return b;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(rank); i++)
		if (!strcmp(a, rank[i]) || !strcmp(b, rank[i]))
			return rank[i];
	return a;
}

/* A window of more than EH_COMPACT records: per lane, the records of each of EH_BINS time
 * slices as one bar (its height their number, its colour the worst result among them, its
 * title the seq range and the count that failed), instead of one mark per record. */
struct bin {
	size_t count, bad;
	uint64_t first, last;
	const char *tone;
};

static void lane_bins(struct fctl_buf *b, const struct axis *a, const struct ehrec *r,
		      size_t n, enum ehkind kd, int y)
{
	struct bin bins[EH_BINS] = { 0 };
	size_t most = 0;
	double bw = (double)(X1 - X0) / EH_BINS;

	for (size_t i = 0; i < n; i++) {
		struct bin *c;
		long k;

		if (!r[i].t_us || fctl_eh_kind(&r[i]) != kd)
			continue;
		k = (long)((tx(a, r[i].t_us) - X0) / bw);
		c = &bins[k < 0 ? 0 : k >= EH_BINS ? EH_BINS - 1 : k];
		if (!c->count++)
			c->first = r[i].seq;
		c->last = r[i].seq;
		c->bad += !strcmp(fctl_eh_tone(&r[i]), "bad");
		c->tone = worse(c->tone, fctl_eh_tone(&r[i]));
		most = c->count > most ? c->count : most;
	}
	for (int k = 0; k < EH_BINS; k++) {
		const struct bin *c = &bins[k];
		double h;

		if (!c->count)
			continue;
		h = 6 + 38.0 * (double)c->count / (double)most;
		fctl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
				   "fill=\"%s\"><title>%zu record%s, #%" PRIu64 " to #%" PRIu64
				   ", %zu failed or refused</title></rect>\n", X0 + k * bw,
				y + LANE - 5 - h, bw - 1, h, tone_fill(c->tone), c->count,
				c->count == 1 ? "" : "s", c->first, c->last, c->bad);
	}
}

/* The x of each record's mark (records without a time: none): at its time, moved right, and
 * back left at the plot's end, just enough that no two marks of a lane are closer than
 * MARK_GAP (a lane of more marks than fit gets them evenly spaced). In record order. */
static void mark_xs(const struct axis *a, const struct ehrec *r, size_t n, double *xs)
{
	for (int l = 0; l < EH_KINDS; l++) {
		double gap = MARK_GAP, prev = 0, next;
		size_t m = 0, last = n;

		for (size_t i = 0; i < n; i++)
			m += r[i].t_us && fctl_eh_kind(&r[i]) == (enum ehkind)l;
		if (m > 1 && (double)(m - 1) * gap > X1 - X0)
			gap = (double)(X1 - X0) / (double)(m - 1);
		for (size_t i = 0, k = 0; i < n; i++) {
			if (!r[i].t_us || fctl_eh_kind(&r[i]) != (enum ehkind)l)
				continue;
			xs[i] = tx(a, r[i].t_us);
			if (k++ && xs[i] < prev + gap)
				xs[i] = prev + gap;
			prev = xs[i];
			last = i;
		}
		if (last == n)
			continue;
		next = xs[last] > X1 ? X1 : xs[last];
		for (size_t i = last + 1; i-- > 0;) {
			if (!r[i].t_us || fctl_eh_kind(&r[i]) != (enum ehkind)l)
				continue;
			xs[i] = xs[i] > next ? next : xs[i];
			next = xs[i] - gap;
		}
	}
}

void fctl_eh_svg_timeline(struct fctl_buf *b, const struct ehrec *r, size_t n)
{
	int count[EH_KINDS] = { 0 }, lanes = EH_KINDS - 1, h;
	size_t k[EH_KINDS] = { 0 };
	double *xs = calloc(n ? n : 1, sizeof(double));
	struct axis a;

	if (!xs) {
		b->oom = true;
		return;
	}
	for (size_t i = 0; i < n; i++)
		count[fctl_eh_kind(&r[i])]++;
	if (count[EH_OTHER])
		lanes = EH_KINDS;
	h = lanes * LANE;
	axis_of(&a, r, n);
	if (n > EH_COMPACT) /* time slices, not marks: the records at their times */
		for (size_t i = 0; i < n; i++)
			xs[i] = r[i].t_us ? tx(&a, r[i].t_us) : 0;
	else
		mark_xs(&a, r, n, xs);
	fctl_buf_printf(b, "<svg class=\"plot\" viewBox=\"0 0 %d %d\" role=\"img\" "
			   "aria-label=\"change timeline\">\n",
			W, h + 64);
	change_bands(b, xs, r, n, h);
	for (int l = 0; l < lanes; l++) {
		int y = 22 + l * LANE;

		fctl_buf_printf(b, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" class=\"%s\"/>"
				   "<text x=\"8\" y=\"%d\" class=\"lane\">%s</text>"
				   "<text x=\"8\" y=\"%d\" class=\"lanen\">%d record%s</text>\n",
				X0 - 10, y, X1 - X0 + 20, LANE, l % 2 ? "laneb" : "lanea", y + 26,
				lane_name[l], y + 41, count[l], count[l] == 1 ? "" : "s");
	}
	time_ticks(b, &a, 22, 22 + h);
	rotation_bars(b, xs, r, n, 22 + EH_ROTATION * LANE + LANE / 2.0);
	if (n > EH_COMPACT) {
		for (int l = 0; l < lanes; l++)
			lane_bins(b, &a, r, n, (enum ehkind)l, 22 + l * LANE);
		fctl_buf_puts(b, "</svg>\n");
		free(xs);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		enum ehkind kd = fctl_eh_kind(&r[i]);

		if (!r[i].t_us || (kd == EH_OTHER && lanes < EH_KINDS))
			continue;
		/* seq labels alternate above and below within a lane */
		marker(b, &r[i], xs[i], 22 + kd * LANE + LANE / 2.0, (int)k[kd]++);
	}
	fctl_buf_puts(b, "</svg>\n");
	free(xs);
}

/* --- latency: a percentile ladder per probe record, log scale --- */

static const struct {
	const char *key, *name, *colour;
} pct[] = {
	{ "latency_p50_us", "p50", "#0969da" },
	{ "latency_p99_us", "p99", "#8250df" },
	{ "latency_p999_us", "p99.9", "#bf8700" },
	{ "latency_max_us", "max", "#cf222e" },
};

static double lx(double v, double lo, double hi)
{
	return LX0 + (log10(v) - lo) * (X1 - LX0) / (hi - lo);
}

static void latency_row(struct fctl_buf *b, const struct ehrec *r, double y, double lo,
			double hi)
{
	double v[FCTL_ARRAY_SIZE(pct)], xmin = 0, xmax = 0;
	bool have[FCTL_ARRAY_SIZE(pct)], any = false;
	char test[128];

	for (size_t k = 0; k < FCTL_ARRAY_SIZE(pct); k++) {
		have[k] = fctl_eh_fig(r->detail, pct[k].key, &v[k]) && v[k] > 0;
		if (!have[k])
			continue;
		xmin = any ? fmin(xmin, lx(v[k], lo, hi)) : lx(v[k], lo, hi);
		xmax = any ? fmax(xmax, lx(v[k], lo, hi)) : lx(v[k], lo, hi);
		any = true;
	}
	fctl_eh_test_name(r, test, sizeof(test));
	fctl_buf_printf(b, "<text x=\"%d\" y=\"%.1f\" class=\"rowlbl\" text-anchor=\"end\">#%" PRIu64
			   " ", LX0 - 14, y + 4, r->seq);
	fctl_eh_esc(b, test);
	fctl_buf_puts(b, "</text>");
	fctl_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"ladder\"/>",
			xmin, y, xmax, y);
	for (size_t k = 0; k < FCTL_ARRAY_SIZE(pct); k++) {
		if (!have[k])
			continue;
		fctl_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\"><title>%s "
				   "%.3f us</title></circle><text x=\"%.1f\" y=\"%.1f\" class=\"val\" "
				   "text-anchor=\"middle\">%.1f</text>", lx(v[k], lo, hi), y,
				pct[k].colour, pct[k].name, v[k], lx(v[k], lo, hi),
				k % 2 ? y + 19 : y - 10, v[k]);
	}
	fctl_buf_putc(b, '\n');
}

void fctl_eh_svg_latency(struct fctl_buf *b, const struct ehrec *r, size_t n)
{
	double lo = 1e300, hi = -1e300, v;
	size_t rows = 0;
	int h;

	for (size_t i = 0; i < n; i++) {
		bool row = false, probe = fctl_eh_kind(&r[i]) == EH_PROBE;

		for (size_t k = 0; probe && k < FCTL_ARRAY_SIZE(pct); k++) {
			if (!fctl_eh_fig(r[i].detail, pct[k].key, &v) || v <= 0)
				continue;
			lo = fmin(lo, log10(v));
			hi = fmax(hi, log10(v));
			row = true;
		}
		rows += row;
	}
	if (!rows)
		return;
	lo = floor(lo - 0.05);
	hi = ceil(hi + 0.05);
	h = (int)rows * 44 + 70;
	fctl_buf_printf(b, "<svg class=\"plot\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label="
			   "\"probe latency percentiles\">\n",
			W, h);
	for (double d = lo; d <= hi + 1e-9; d += 1) {
		for (int m = 1; m < 10 && d + log10(m) <= hi + 1e-9; m += (m == 1 ? 1 : 3)) {
			double x = lx(pow(10, d) * m, lo, hi);

			fctl_buf_printf(b, "<line x1=\"%.1f\" y1=\"30\" x2=\"%.1f\" y2=\"%d\" class=\"%s\"/>"
					   "<text x=\"%.1f\" y=\"%d\" class=\"tick\" text-anchor=\"middle\">"
					   "%g</text>\n", x, x, h - 34, m == 1 ? "grid" : "gridm", x, h - 18,
					pow(10, d) * m);
		}
	}
	fctl_buf_printf(b, "<text x=\"%d\" y=\"%d\" class=\"tick\" text-anchor=\"end\">"
			   "microseconds (log scale)</text>", X1, h - 2);
	for (size_t k = 0; k < FCTL_ARRAY_SIZE(pct); k++)
		fctl_buf_printf(b, "<circle cx=\"%zu\" cy=\"14\" r=\"6\" fill=\"%s\"/><text x=\"%zu\" "
				   "y=\"19\" class=\"lbl\">%s</text>", LX0 + 10 + k * 90, pct[k].colour,
				LX0 + 22 + k * 90, pct[k].name);
	fctl_buf_putc(b, '\n');
	for (size_t i = 0, row = 0; i < n; i++) {
		bool any = false;

		for (size_t k = 0; fctl_eh_kind(&r[i]) == EH_PROBE && k < FCTL_ARRAY_SIZE(pct); k++)
			any |= fctl_eh_fig(r[i].detail, pct[k].key, &v) && v > 0;
		if (any)
			latency_row(b, &r[i], 52 + 44.0 * (double)row++, lo, hi);
	}
	fctl_buf_puts(b, "</svg>\n");
}

/* --- MACsec counters: per probe and end, OutPktsEncrypted against the frames refused --- */

static const char *const refused_keys[] = {
	"in_pkts_not_valid_delta", "in_pkts_invalid_delta", "in_pkts_no_sci_delta",
	"in_pkts_unknown_sci_delta", "in_pkts_late_delta",
};

static bool end_fig(const char *detail, const char *who, const char *key, double *v)
{
	char k[160];

	snprintf(k, sizeof(k), "%s.%s", who, key);
	return fctl_eh_fig(detail, k, v);
}

static double cy(double v, double top)
{
	return 200 - (v > 0 ? log10(v + 1) / top * 160 : 0);
}

void fctl_eh_svg_counters(struct fctl_buf *b, const struct ehrec *const *p, size_t n)
{
	char who[4][64];
	double top = 1, v;
	size_t bars = 0, k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t ne = fctl_eh_ends(p[i]->detail, who, 4);

		for (size_t e = 0; e < ne; e++, bars++)
			if (end_fig(p[i]->detail, who[e], "out_pkts_encrypted_delta", &v) && v > 0)
				top = fmax(top, ceil(log10(v + 1)));
	}
	if (!bars)
		return;
	fctl_buf_printf(b, "<svg class=\"plot small\" viewBox=\"0 0 %d 250\" role=\"img\" "
			   "aria-label=\"MACsec counters\">\n"
			   "<line x1=\"%d\" y1=\"200\" x2=\"%d\" y2=\"200\" class=\"axis\"/>"
			   "<text x=\"8\" y=\"46\" class=\"lbl\">packets (log)</text>"
			   "<rect x=\"%d\" y=\"8\" width=\"12\" height=\"12\" class=\"enc\"/><text x=\"%d\" "
			   "y=\"18\" class=\"lbl\">OutPktsEncrypted during the probe</text>"
			   "<rect x=\"%d\" y=\"8\" width=\"12\" height=\"12\" class=\"refused\"/>"
			   "<text x=\"%d\" y=\"18\" class=\"lbl\">frames refused (NotValid + Invalid + "
			   "NoSCI + UnknownSCI + Late)</text>\n", W, X0, X1, X0, X0 + 18, X0 + 300,
			X0 + 318);
	for (size_t i = 0; i < n; i++) {
		size_t ne = fctl_eh_ends(p[i]->detail, who, 4);

		for (size_t e = 0; e < ne; e++, k++) {
			double gw = (double)(X1 - X0) / (double)bars, x = X0 + gw * (double)k + gw / 2;
			double bw = fmin(gw / 3, 60), enc = 0, bad = 0;
			bool has_enc = end_fig(p[i]->detail, who[e], "out_pkts_encrypted_delta", &enc);

			for (size_t j = 0; j < FCTL_ARRAY_SIZE(refused_keys); j++)
				bad += end_fig(p[i]->detail, who[e], refused_keys[j], &v) ? v : 0;
			fctl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
					   "class=\"enc\"/><text x=\"%.1f\" y=\"%.1f\" class=\"val\" "
					   "text-anchor=\"middle\">%s%.0f</text>", x - bw - 2, cy(enc, top),
					bw, 200 - cy(enc, top), x - bw / 2 - 2, cy(enc, top) - 5,
					has_enc ? "" : "n/r ", enc);
			fctl_buf_printf(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
					   "class=\"refused\"/><text x=\"%.1f\" y=\"%.1f\" class=\"val\" "
					   "text-anchor=\"middle\">%.0f</text>", x + 2, cy(bad, top) - 1.5, bw,
					200 - cy(bad, top) + 1.5, x + bw / 2 + 2, cy(bad, top) - 6, bad);
			fctl_buf_printf(b, "<text x=\"%.1f\" y=\"220\" class=\"lbl\" text-anchor=\"middle\">"
					   "#%" PRIu64 " ", x, p[i]->seq);
			fctl_eh_esc(b, who[e]);
			fctl_buf_puts(b, "</text>\n");
		}
	}
	fctl_buf_puts(b, "</svg>\n");
}
