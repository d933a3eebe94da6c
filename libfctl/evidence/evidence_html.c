// SPDX-License-Identifier: MIT
/* report.html: the auditor's reading of an evidence bundle, one self-contained page. */
#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "evidence_html_int.h"

/* --- reading the records --- */

enum ehkind fctl_eh_kind(const struct ehrec *r)
{
	const char *a = r->action ? r->action : "";

	if (r->manual)
		return EH_OTHER;
	if (!strcmp(a, "apply") || !strcmp(a, "rollback") || !strcmp(a, "recover") ||
	    !strcmp(a, "drift"))
		return EH_APPLY;
	if (!strcmp(a, "key-state"))
		return EH_KEYSTATE;
	if (!strncmp(a, "key-", 4))
		return EH_ROTATION;
	if (!strcmp(a, "probe"))
		return EH_PROBE;
	return EH_OTHER;
}

const char *fctl_eh_tone(const struct ehrec *r)
{
	static const char *const good[] = { "applied", "unchanged", "pass", "passed", "ok",
					    "committed", "confirmed", "recorded", "started" };
	static const char *const warn[] = { "rolled-back", "recovering", "triggered" };
	const char *s = r->result ? r->result : "";

	if (r->manual)
		return "manual";
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(good); i++)
		if (!strcmp(s, good[i]))
			return "good";
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(warn); i++)
		if (!strcmp(s, warn[i]))
			return "warn";
	if (!strcmp(s, "failed") || !strcmp(s, "fail") || !strcmp(s, "refused"))
		return "bad";
	return "neutral";
}

void fctl_eh_esc(struct fctl_buf *b, const char *s)
{
	fctl_buf_xml_str(b, s ? s : "-");
}

/* The value of the token "key=..." of the detail's figures (after ": "), its length in *len. */
static const char *token(const char *detail, const char *key, size_t *len)
{
	const char *p = detail ? strstr(detail, ": ") : NULL;
	size_t kl = strlen(key);

	for (p = p ? p + 2 : detail; p && *p;) {
		size_t tl = strcspn(p, " ");

		if (tl > kl && !strncmp(p, key, kl) && p[kl] == '=') {
			*len = tl - kl - 1;
			return p + kl + 1;
		}
		p += tl;
		p += strspn(p, " ");
	}
	return NULL;
}

bool fctl_eh_fig(const char *detail, const char *key, double *v)
{
	size_t len;
	const char *t = token(detail, key, &len);
	char num[64], *end;

	if (!t || !len || len >= sizeof(num))
		return false;
	memcpy(num, t, len);
	num[len] = '\0';
	*v = strtod(num, &end);
	return end != num && !*end && *v == *v;
}

bool fctl_eh_word(const char *detail, const char *key, char *out, size_t len)
{
	size_t tl;
	const char *t = token(detail, key, &tl);

	if (!t || !len)
		return false;
	snprintf(out, len, "%.*s", (int)tl, t);
	return true;
}

size_t fctl_eh_ends(const char *detail, char (*who)[64], size_t max)
{
	const char *p = detail ? strstr(detail, ": ") : NULL;
	size_t n = 0;

	for (p = p ? p + 2 : NULL; p && *p && n < max;) {
		size_t tl = strcspn(p, " "), dot = strcspn(p, ".=");

		if (dot < tl && p[dot] == '.' && dot < 64 && !strncmp(p + dot, ".macsec=", 8)) {
			snprintf(who[n], 64, "%.*s", (int)dot, p);
			n++;
		}
		p += tl;
		p += strspn(p, " ");
	}
	return n;
}

void fctl_eh_test_name(const struct ehrec *r, char *out, size_t len)
{
	const char *d = r->detail ? r->detail : "", *c = strstr(d, ": ");
	size_t n = c ? (size_t)(c - d) : strlen(d);

	/* the link is the record's own field: "send_lat size=2" */
	for (const char *w = d; (w = strchr(w, ' ')) && (size_t)(w - d) < n; w++)
		if (!strncmp(w, " link=", 6) || !strncmp(w, " peer=", 6)) {
			n = (size_t)(w - d);
			break;
		}
	snprintf(out, len, "%.*s", (int)n, d);
}

static int64_t parse_time(const char *s)
{
	struct tm tm = { 0 };
	int us = 0;

	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d.%6dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &us) != 7)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000000 + us;
}

/* The principals of an apply's "approvals" (fctl_evi_approval_next), ", " between them;
 * NULL for none, for one not of the approvals' form, or for no memory. */
static char *approvers_of(const char *v, size_t n)
{
	char principal[160], fp[80], hex[65];
	struct fctl_buf b = { 0 };
	size_t pos = 0;
	int r;

	while ((r = fctl_evi_approval_next(v, n, &pos, principal, sizeof(principal), fp,
					   sizeof(fp), hex)) > 0)
		fctl_buf_printf(&b, "%s%s", b.len ? ", " : "", principal);
	if (r < 0 || !b.len) {
		fctl_buf_release(&b);
		return NULL;
	}
	return fctl_buf_steal(&b);
}

static int parse_one(struct ehrec *r, const char *line, size_t len)
{
	char *num = NULL;
	const char *pv;
	size_t pl;

	fctl_audit_field(line, len, "seq", &num);
	if (num)
		fctl_parse_u64(num, &r->seq);
	free(num);
	fctl_audit_field(line, len, "time", &r->time);
	r->t_us = parse_time(r->time);
	fctl_audit_field(line, len, "action", &r->action);
	fctl_audit_field(line, len, "result", &r->result);
	fctl_audit_field(line, len, "host", &r->host);
	fctl_audit_field(line, len, "link", &r->link);
	fctl_audit_field(line, len, "secy", &r->secy);
	fctl_audit_field(line, len, "change", &r->change);
	fctl_audit_field(line, len, "error", &r->error);
	fctl_audit_field(line, len, "detail", &r->detail);
	fctl_audit_field(line, len, "key_state", &r->key_state);
	r->manual = fctl_audit_field_raw(line, len, "manual", &pv, &pl) == 0;
	if (fctl_audit_field_raw(line, len, "profile", &pv, &pl) == 0) {
		r->has_profile = true;
		fctl_audit_field(pv, pl, "name", &r->pname);
		num = NULL;
		if (fctl_audit_field(pv, pl, "version", &num) == 0)
			fctl_parse_u64(num, &r->pver);
		free(num);
	}
	r->nk = fctl_evi_hex_list(line, len, "key_ids", &r->keyids[0][0], FCTL_AUDIT_KEYID_LEN);
	r->nkcv = fctl_evi_hex_list(line, len, "kcv", &r->kcvs[0][0], FCTL_AUDIT_KCV_LEN);
	if (fctl_audit_field_raw(line, len, "approvals", &pv, &pl) == 0)
		r->approvers = approvers_of(pv, pl);
	return 0;
}

static void rec_free(struct ehrec *r)
{
	free(r->time);
	free(r->action);
	free(r->result);
	free(r->host);
	free(r->link);
	free(r->secy);
	free(r->change);
	free(r->error);
	free(r->detail);
	free(r->key_state);
	free(r->pname);
	free(r->approvers);
}

static const struct fctl_evidence_file *file_of(const struct fctl_evidence_html_in *in,
						const char *name)
{
	for (size_t i = 0; i < in->n_files; i++)
		if (!strcmp(in->files[i].name, name))
			return &in->files[i];
	return NULL;
}

static int parse_slice(const struct fctl_evidence_html_in *in, struct ehrec **out, size_t *n)
{
	const struct fctl_evidence_file *f = file_of(in, "audit/slice.jsonl");
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	for (size_t off = 0; f && off < f->len;) {
		const char *nl = memchr(f->data + off, '\n', f->len - off);
		size_t len = nl ? (size_t)(nl - (f->data + off)) : f->len - off;
		struct ehrec *r;

		if (len) {
			if (!(r = fctl_array_grow(out, n, &cap, sizeof(**out))))
				return -ENOMEM;
			memset(r, 0, sizeof(*r));
			parse_one(r, f->data + off, len);
		}
		off += len + 1;
	}
	return 0;
}

/* --- the page --- */

static const char css[] =
	"*{box-sizing:border-box}body{margin:0;background:#f6f8fa;color:#1f2328;font:14px/1.5 "
	"system-ui,-apple-system,'Segoe UI','DejaVu Sans',Helvetica,Arial,sans-serif}"
	"main{max-width:1240px;margin:0 auto;padding:24px 28px 60px}"
	"header{background:#0d1b2a;color:#e6edf3;padding:26px 0 22px}"
	"header .in{max-width:1240px;margin:0 auto;padding:0 28px}"
	"header h1{margin:0 0 4px;font-size:26px;font-weight:600}header .sub{color:#9fb1c4}"
	"nav{margin-top:14px}nav a{color:#cfe3ff;margin-right:18px;text-decoration:none;"
	"font-size:13px}nav a:hover{text-decoration:underline}"
	"section{background:#fff;border:1px solid #d0d7de;border-radius:8px;margin:22px 0;"
	"padding:18px 22px}h2{margin:0 0 10px;font-size:19px}h3{margin:18px 0 6px;font-size:15px}"
	".cards{display:flex;flex-wrap:wrap;gap:12px;margin:18px 0 0}.card{flex:1 1 150px;"
	"background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:10px 14px}"
	".card b{display:block;font-size:22px}.card span{color:#57606a;font-size:12px}"
	"table{border-collapse:collapse;width:100%;margin:8px 0;font-size:13px}"
	"th,td{border-bottom:1px solid #e5e8eb;padding:5px 8px;text-align:left;vertical-align:top}"
	"th{background:#f6f8fa;font-weight:600;white-space:nowrap}td.num{text-align:right;"
	"font-variant-numeric:tabular-nums}code,.mono{font-family:ui-monospace,'DejaVu Sans Mono',"
	"Menlo,Consolas,monospace;font-size:12px}td.t{white-space:nowrap;font-family:ui-monospace,"
	"'DejaVu Sans Mono',monospace;font-size:12px}.tw{overflow-x:auto}table.dense td,"
	"table.dense th{padding:4px 6px;font-size:12px}.detail{word-break:break-word;color:#424a53}"
	".chip{display:inline-block;padding:0 8px;border-radius:10px;font-size:12px;"
	"font-weight:600;white-space:nowrap}.good{background:#dafbe1;color:#116329}"
	".bad{background:#ffebe9;color:#a40e26}.warn{background:#fff8c5;color:#7d4e00}"
	".neutral{background:#eaeef2;color:#424a53}.manual{background:#fff;color:#6639ba;"
	"border:1px dashed #8250df}.nr{color:#8c959f;font-style:italic}"
	".st-active{background:#dafbe1;color:#116329}.st-pre{background:#ddf4ff;color:#0a3069}"
	".st-deactivated{background:#eaeef2;color:#424a53}.st-compromised{background:#cf222e;"
	"color:#fff}.st-destroyed{background:#24292f;color:#fff}"
	".verdict{border-left:5px solid;padding:8px 12px;margin:10px 0;border-radius:4px}"
	".verdict.good{border-color:#1a7f37}.verdict.bad{border-color:#cf222e}"
	".verdict.warn{border-color:#bf8700}.verdict.neutral{border-color:#8c959f}"
	".callout{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:12px 16px;"
	"margin:12px 0}.callout pre{white-space:pre-wrap;margin:6px 0 0}"
	"svg.plot{width:100%;height:auto;display:block;margin:8px 0;font-family:inherit}"
	"svg .grid{stroke:#d0d7de;stroke-width:1}svg .gridm{stroke:#eef1f4;stroke-width:1}"
	"svg .axis{stroke:#57606a}svg .tick{font-size:11px;fill:#57606a}"
	"svg .lane{font-size:13px;font-weight:600;fill:#1f2328}svg .lanen{font-size:11px;"
	"fill:#57606a}svg .lanea{fill:#fbfcfd}svg .laneb{fill:#f3f5f7}svg .lbl{font-size:11px;"
	"fill:#424a53}svg .val{font-size:10px;fill:#424a53}svg .hmv{font-size:13px;fill:#1f2328}"
	"svg .rowlbl{font-size:12px;fill:#1f2328}"
	"svg .band{fill:#0969da;fill-opacity:.06;stroke:#0969da;stroke-opacity:.35;"
	"stroke-dasharray:4 3}svg .bandlbl{font-size:11px;fill:#0969da;font-weight:600}"
	"svg .rotbar{fill:#8250df;fill-opacity:.18}svg .overlap{fill:#bf8700;fill-opacity:.35}"
	"svg .ladder{stroke:#8c959f;stroke-width:2}svg .enc{fill:#1a7f37}svg .refused{fill:#cf222e}"
	".legend{color:#57606a;font-size:12px}footer{color:#57606a;font-size:12px;margin-top:30px}";

static void chip(struct fctl_buf *b, const char *cls, const char *text)
{
	fctl_buf_printf(b, "<span class=\"chip %s\">", cls);
	fctl_eh_esc(b, text);
	fctl_buf_puts(b, "</span>");
}

static void td(struct fctl_buf *b, const char *s)
{
	fctl_buf_puts(b, "<td>");
	fctl_eh_esc(b, s);
	fctl_buf_puts(b, "</td>");
}

/* The action cell: the action, and for a manual record a chip that says so. */
static void action_cell(struct fctl_buf *b, const struct ehrec *r)
{
	fctl_eh_esc(b, r->action);
	if (r->manual)
		fctl_buf_puts(b, " <span class=\"chip manual\" title=\"written by hand with 'audit "
				 "append', not by fabricctl\">manual</span>");
}

/* What the record says: profile, detail, error, key ids, KCVs, sep between every two (a
 * part is never run into the one before it), key ids and KCVs in code_open/code_close. */
static void detail_parts(struct fctl_buf *b, const struct ehrec *r, const char *sep,
			 const char *code_open, const char *code_close)
{
	bool any = false;

	if (r->has_profile) {
		fctl_buf_puts(b, "profile ");
		fctl_eh_esc(b, r->pname);
		fctl_buf_printf(b, " v%" PRIu64, r->pver);
		any = true;
	}
	if (r->approvers) {
		fctl_buf_puts(b, any ? sep : "");
		fctl_buf_puts(b, "approved by ");
		fctl_eh_esc(b, r->approvers);
		any = true;
	}
	if (r->detail) {
		fctl_buf_puts(b, any ? sep : "");
		fctl_eh_esc(b, r->detail);
		any = true;
	}
	if (r->error) {
		fctl_buf_puts(b, any ? sep : "");
		fctl_buf_puts(b, "<b>error:</b> ");
		fctl_eh_esc(b, r->error);
		any = true;
	}
	for (size_t k = 0; k < r->nk; k++, any = true)
		fctl_buf_printf(b, "%skey id %s%s%s", any ? sep : "", code_open, r->keyids[k],
				code_close);
	for (size_t k = 0; k < r->nkcv; k++, any = true)
		fctl_buf_printf(b, "%sKCV %s%s%s", any ? sep : "", code_open, r->kcvs[k], code_close);
}

static void record_row(struct fctl_buf *b, const struct ehrec *r)
{
	fctl_buf_printf(b, "<tr><td class=\"num\">%" PRIu64 "</td><td class=\"t\">", r->seq);
	fctl_eh_esc(b, r->time);
	fctl_buf_puts(b, "</td><td>");
	action_cell(b, r);
	fctl_buf_puts(b, "</td><td>");
	chip(b, fctl_eh_tone(r), r->result ? r->result : "-");
	fctl_buf_puts(b, "</td>");
	td(b, r->host);
	td(b, r->link ? r->link : r->secy);
	td(b, r->change);
	fctl_buf_puts(b, "<td class=\"detail\">");
	detail_parts(b, r, "<br>", "<code>", "</code>");
	fctl_buf_puts(b, "</td></tr>\n");
}

/* The compact row of a large window (more than EH_COMPACT records): the same fields, once,
 * with no more markup than a row needs (the end tags HTML lets a table leave out). */
static void record_row_compact(struct fctl_buf *b, const struct ehrec *r)
{
	fctl_buf_printf(b, "<tr><td>%" PRIu64 "<td>", r->seq);
	fctl_eh_esc(b, r->time);
	fctl_buf_puts(b, "<td>");
	action_cell(b, r);
	fctl_buf_printf(b, "<td class=%s>", fctl_eh_tone(r));
	fctl_eh_esc(b, r->result);
	fctl_buf_puts(b, "<td>");
	fctl_eh_esc(b, r->host);
	fctl_buf_puts(b, "<td>");
	fctl_eh_esc(b, r->link ? r->link : r->secy);
	fctl_buf_puts(b, "<td>");
	fctl_eh_esc(b, r->change);
	fctl_buf_puts(b, "<td>");
	detail_parts(b, r, "; ", "", "");
	fctl_buf_putc(b, '\n');
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* A large window's changes (applies and key rotation steps) summed up: one row per change,
 * action, result and host, in the order they first occur, with the count and the seq and
 * time range (every record is in the table of all records). */
static void changes_summary(struct fctl_buf *b, const struct ehrec *r, size_t n)
{
	bool *done = calloc(n ? n : 1, sizeof(bool));

	fctl_buf_puts(b, "<div class=\"tw\"><table><tr><th>change</th><th>action</th>"
			 "<th>result</th><th>host</th><th>records</th><th>seq</th><th>time (UTC)</th>"
			 "</tr>\n");
	for (size_t i = 0; done && i < n; i++) {
		const struct ehrec *g = &r[i], *last = g;
		size_t count = 0;

		if (done[i] || (fctl_eh_kind(g) != EH_APPLY && fctl_eh_kind(g) != EH_ROTATION))
			continue;
		for (size_t j = i; j < n; j++) {
			if (done[j] || !same(r[j].change, g->change) || !same(r[j].action, g->action) ||
			    !same(r[j].result, g->result) || !same(r[j].host, g->host))
				continue;
			done[j] = true;
			count++;
			last = &r[j];
		}
		fctl_buf_puts(b, "<tr>");
		td(b, g->change);
		td(b, g->action);
		fctl_buf_puts(b, "<td>");
		chip(b, fctl_eh_tone(g), g->result ? g->result : "-");
		fctl_buf_puts(b, "</td>");
		td(b, g->host);
		fctl_buf_printf(b, "<td class=\"num\">%zu</td><td class=\"t\">%" PRIu64 " to %"
				   PRIu64 "</td><td class=\"t\">", count, g->seq, last->seq);
		fctl_eh_esc(b, g->time);
		fctl_buf_puts(b, " to ");
		fctl_eh_esc(b, last->time);
		fctl_buf_puts(b, "</td></tr>\n");
	}
	fctl_buf_puts(b, "</table></div>");
	free(done);
}

static void records_head(struct fctl_buf *b)
{
	fctl_buf_puts(b, "<div class=\"tw\"><table><tr><th>seq</th><th>time (UTC)</th><th>action</th>"
			 "<th>result</th><th>host</th><th>link</th><th>change</th><th>what the record "
			 "says</th></tr>\n");
}

static void section_timeline(struct fctl_buf *b, const struct ehrec *r, size_t n)
{
	fctl_buf_puts(b, "<section id=\"timeline\"><h2>Change timeline</h2>"
			 "<p class=\"legend\">Every record of the bundle's slice in time order (UTC): "
			 "applies, key rotations (a bar from the rotation's first record to its end; "
			 "the shaded part is the overlap window, from the confirmed switch to the "
			 "commit, when the old and the new key were both accepted), key state changes "
			 "and probe verdicts. Green: applied, committed or passed; red: failed or "
			 "refused; amber: rolled back. Dashed bands are change windows. Marks closer in "
			 "time than their width are set side by side, in record order. Purple marks "
			 "in the lane <i>Other, manual</i> are manual records, written by hand with "
			 "<code>audit append</code>: not the tool's, never green, counted as no apply, "
			 "rotation, key state or probe. Hover a mark for its record and time.");
	if (n > EH_COMPACT)
		fctl_buf_printf(b, " This window holds %zu records, more than %d: each lane shows "
				   "them in %d time slices, a bar a slice, its height their number, "
				   "its colour the worst result among them (hover for the seq range); "
				   "the changes are summed up below, and every record is in the table "
				   "of all records.", n, EH_COMPACT, EH_BINS);
	fctl_buf_puts(b, "</p>\n");
	if (!n) {
		fctl_buf_puts(b, "<p class=\"nr\">The slice holds no records.</p></section>\n");
		return;
	}
	fctl_eh_svg_timeline(b, r, n);
	fctl_buf_puts(b, "<h3>Changes made</h3>");
	if (n > EH_COMPACT) {
		changes_summary(b, r, n);
		fctl_buf_puts(b, "</section>\n");
		return;
	}
	records_head(b);
	for (size_t i = 0; i < n; i++)
		if (fctl_eh_kind(&r[i]) == EH_APPLY || fctl_eh_kind(&r[i]) == EH_ROTATION)
			record_row(b, &r[i]);
	fctl_buf_puts(b, "</table></div></section>\n");
}

/* One counter cell: "moving" is good for OutPktsEncrypted, "flat" for the refused ones. */
static void counter_cell(struct fctl_buf *b, const char *detail, const char *who, const char *key,
			 bool want_moving, bool *ok, bool *recorded)
{
	char k[160];
	double v;

	snprintf(k, sizeof(k), "%s.%s", who, key);
	if (!fctl_eh_fig(detail, k, &v)) {
		fctl_buf_puts(b, "<td class=\"nr\">not recorded</td>");
		*recorded = false;
		return;
	}
	if ((v > 0) == want_moving) {
		fctl_buf_printf(b, "<td class=\"num\"><span class=\"chip good\">%s +%.0f</span></td>",
				want_moving ? "moving" : "flat", v);
	} else {
		fctl_buf_printf(b, "<td class=\"num\"><span class=\"chip bad\">%s +%.0f</span></td>",
				want_moving ? "flat" : "moving", v);
		*ok = false;
	}
}

/* The rows of one probe record; *ok false when an end shows encryption not holding,
 * *recorded false when a figure is missing. Returns the number of ends with figures. */
static size_t counter_rows(struct fctl_buf *b, const struct ehrec *p, uint64_t after, bool *ok,
			   bool *recorded)
{
	static const char *const refused[] = { "in_pkts_not_valid_delta", "in_pkts_invalid_delta",
					       "in_pkts_no_sci_delta", "in_pkts_unknown_sci_delta",
					       "in_pkts_late_delta" };
	char who[4][64], w[64], test[128];
	size_t ne = fctl_eh_ends(p->detail, who, 4);

	fctl_eh_test_name(p, test, sizeof(test));
	if (!ne) {
		fctl_buf_printf(b, "<tr><td class=\"num\">%" PRIu64 "</td><td>", p->seq);
		fctl_eh_esc(b, test);
		fctl_buf_puts(b, "</td><td colspan=\"11\" class=\"nr\">MACsec counters not recorded");
		if (fctl_eh_word(p->detail, "macsec", w, sizeof(w))) {
			fctl_buf_puts(b, " (the record says only macsec=");
			fctl_eh_esc(b, w);
			fctl_buf_puts(b, ")");
		}
		fctl_buf_puts(b, "</td></tr>\n");
		*recorded = false;
		return 0;
	}
	for (size_t e = 0; e < ne; e++) {
		char k[160];

		fctl_buf_printf(b, "<tr><td class=\"num\">%" PRIu64 "</td><td>", p->seq);
		fctl_eh_esc(b, test);
		if (after)
			fctl_buf_printf(b, "<br><span class=\"legend\">after #%" PRIu64 "</span>", after);
		fctl_buf_puts(b, "</td><td>");
		fctl_eh_esc(b, who[e]);
		snprintf(k, sizeof(k), "%s.macsec", who[e]);
		fctl_buf_puts(b, " <code>");
		fctl_eh_esc(b, fctl_eh_word(p->detail, k, w, sizeof(w)) ? w : "?");
		fctl_buf_puts(b, "</code></td>");
		snprintf(k, sizeof(k), "%s.encrypt", who[e]);
		if (!fctl_eh_word(p->detail, k, w, sizeof(w))) {
			fctl_buf_puts(b, "<td class=\"nr\">not recorded</td>");
			*recorded = false;
		} else {
			fctl_buf_puts(b, "<td>");
			chip(b, strcmp(w, "on") ? "bad" : "good", w);
			fctl_buf_puts(b, "</td>");
			*ok &= !strcmp(w, "on");
		}
		counter_cell(b, p->detail, who[e], "out_pkts_encrypted_delta", true, ok, recorded);
		fctl_buf_puts(b, "<td class=\"nr\">not recorded</td>"); /* InPktsOK */
		for (size_t j = 0; j < FCTL_ARRAY_SIZE(refused); j++)
			counter_cell(b, p->detail, who[e], refused[j], false, ok, recorded);
		fctl_buf_puts(b, "<td class=\"nr\">not recorded</td><td>"); /* InPktsUnchecked */
		chip(b, fctl_eh_tone(p), p->result);
		fctl_buf_puts(b, "</td></tr>\n");
	}
	return ne;
}

/* One change window: its changes, the probes in it and their counters, and a verdict. */
static void counters_window(struct fctl_buf *b, const struct ehrec *r, size_t n, const char *chg)
{
	const struct ehrec **probes = calloc(n ? n : 1, sizeof(*probes));
	size_t np = 0, nchg = 0, ends = 0;
	bool ok = true, recorded = true;
	uint64_t after = 0;
	struct fctl_buf rows = { 0 };

	if (!probes) {
		b->oom = true;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		if ((chg && (!r[i].change || strcmp(r[i].change, chg))) || (!chg && r[i].change))
			continue;
		if (fctl_eh_kind(&r[i]) == EH_APPLY || fctl_eh_kind(&r[i]) == EH_ROTATION) {
			after = r[i].seq;
			nchg++;
		} else if (fctl_eh_kind(&r[i]) == EH_PROBE) {
			probes[np++] = &r[i];
			ends += counter_rows(&rows, &r[i], after, &ok, &recorded);
		}
	}
	fctl_buf_puts(b, "<h3>");
	fctl_eh_esc(b, chg ? chg : "records without a change id");
	fctl_buf_printf(b, "</h3><p class=\"legend\">%zu change record%s (applies, rotation steps), "
			   "%zu probe record%s.</p>", nchg, nchg == 1 ? "" : "s", np,
			np == 1 ? "" : "s");
	if (!np)
		fctl_buf_puts(b, "<div class=\"verdict neutral\">No probe ran in this window: nothing "
				 "here shows whether encryption stayed on.</div>");
	else if (!ok)
		fctl_buf_puts(b, "<div class=\"verdict bad\"><b>Encryption did NOT demonstrably stay "
				 "on</b>: an end had encryption off, OutPktsEncrypted did not grow, or "
				 "frames were refused (see the red cells).</div>");
	else if (!ends)
		fctl_buf_puts(b, "<div class=\"verdict warn\">MACsec counters not recorded in these "
				 "probe records: they cannot show that encryption stayed on.</div>");
	else
		fctl_buf_printf(b, "<div class=\"verdict %s\"><b>Encryption stayed on</b> at %zu "
				   "end%s: OutPktsEncrypted grew during every probe and no frame was "
				   "refused (InPktsNotValid, Invalid, NoSCI, UnknownSCI, Late flat)%s.</div>",
				recorded ? "good" : "warn", ends, ends == 1 ? "" : "s",
				recorded ? "" : "; some probe records lack counters");
	fctl_eh_svg_counters(b, probes, np);
	if (np) {
		fctl_buf_puts(b, "<div class=\"tw\"><table class=\"dense\"><tr><th>seq</th><th>probe"
				 "</th><th>end, device</th>"
				 "<th>encrypt</th><th>OutPktsEncrypted</th><th>InPktsOK</th>"
				 "<th>InPktsNotValid</th><th>InPktsInvalid</th><th>InPktsNoSCI</th>"
				 "<th>InPktsUnknownSCI</th><th>InPktsLate</th><th>InPktsUnchecked</th>"
				 "<th>verdict</th></tr>\n");
		fctl_buf_append(b, rows.data ? rows.data : "", rows.len);
		fctl_buf_puts(b, "</table></div>");
	}
	b->oom |= rows.oom;
	fctl_buf_release(&rows);
	free(probes);
}

static void section_counters(struct fctl_buf *b, const struct ehrec *r, size_t n)
{
	bool none = false;

	fctl_buf_puts(b, "<section id=\"macsec\"><h2>MACsec counters across each change window</h2>"
			 "<p class=\"legend\">Each probe record carries the change of the MACsec "
			 "counters of each end over its run (deltas). Encryption held when "
			 "OutPktsEncrypted moved and the counters of refused frames stayed flat. The "
			 "probe records do not carry InPktsOK or InPktsUnchecked: those columns say "
			 "<i>not recorded</i>, as does any figure a record lacks.</p>\n");
	for (size_t i = 0; i < n; i++) {
		bool seen = false;

		none |= !r[i].change;
		for (size_t j = 0; j < i && !seen && r[i].change; j++)
			seen = r[j].change && !strcmp(r[j].change, r[i].change);
		if (r[i].change && !seen)
			counters_window(b, r, n, r[i].change);
	}
	if (none)
		counters_window(b, r, n, NULL);
	fctl_buf_puts(b, "</section>\n");
}

static void fig_cell(struct fctl_buf *b, const char *detail, const char *key, int prec)
{
	double v;

	if (fctl_eh_fig(detail, key, &v)) {
		fctl_buf_puts(b, "<td class=\"num\">");
		fctl_buf_printf(b, "%.*f", prec, v);
		fctl_buf_puts(b, "</td>");
	} else {
		fctl_buf_puts(b, "<td class=\"nr\">not recorded</td>");
	}
}

static void section_latency(struct fctl_buf *b, const struct ehrec *r, size_t n)
{
	double loss = 0, rt = 0, v;
	size_t np = 0, nloss = 0, nrt = 0;

	fctl_buf_puts(b, "<section id=\"latency\"><h2>Probe latency, loss and retransmissions</h2>"
			 "<p class=\"legend\">The percentiles each probe record carries (p50, p99, "
			 "p99.9 and the maximum, microseconds, log scale). The records hold percentiles, "
			 "not histogram buckets: the buckets are in the probe's own JSON report "
			 "(<code>probe run --json</code>), not in the audit log.</p>\n");
	fctl_eh_svg_latency(b, r, n);
	fctl_eh_svg_heatmap(b, r, n);
	fctl_buf_puts(b, "<div class=\"tw\"><table class=\"dense\"><tr><th>seq</th><th>probe</th>"
			 "<th>host, link</th><th>iterations</th>"
			 "<th>typical µs</th><th>p50 µs</th><th>p99 µs</th><th>p99.9 µs</th>"
			 "<th>max µs</th><th>Gbit/s</th><th>loss packets</th><th>retransmissions</th>"
			 "<th>error events</th><th>verdict, reasons</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		char test[128];

		if (fctl_eh_kind(&r[i]) != EH_PROBE)
			continue;
		np++;
		fctl_eh_test_name(&r[i], test, sizeof(test));
		fctl_buf_printf(b, "<tr><td class=\"num\">%" PRIu64 "</td>", r[i].seq);
		td(b, test);
		fctl_buf_puts(b, "<td>");
		fctl_eh_esc(b, r[i].host);
		fctl_buf_puts(b, "<br>");
		fctl_eh_esc(b, r[i].link);
		fctl_buf_puts(b, "</td>");
		fig_cell(b, r[i].detail, "iterations", 0);
		fig_cell(b, r[i].detail, "t_typical_us", 3);
		fig_cell(b, r[i].detail, "latency_p50_us", 3);
		fig_cell(b, r[i].detail, "latency_p99_us", 3);
		fig_cell(b, r[i].detail, "latency_p999_us", 3);
		fig_cell(b, r[i].detail, "latency_max_us", 3);
		if (fctl_eh_fig(r[i].detail, "bandwidth_gbps", &v) ||
		    !fctl_eh_fig(r[i].detail, "bw_gbps", &v))
			fig_cell(b, r[i].detail, "bandwidth_gbps", 3);
		else
			fig_cell(b, r[i].detail, "bw_gbps", 3);
		fig_cell(b, r[i].detail, "loss_packets", 0);
		fig_cell(b, r[i].detail, "retransmissions", 0);
		fig_cell(b, r[i].detail, "error_events", 0);
		if (fctl_eh_fig(r[i].detail, "loss_packets", &v))
			loss += v, nloss++;
		if (fctl_eh_fig(r[i].detail, "retransmissions", &v))
			rt += v, nrt++;
		fctl_buf_puts(b, "<td>");
		chip(b, fctl_eh_tone(&r[i]), r[i].result);
		if (r[i].error) {
			fctl_buf_puts(b, " <span class=\"detail\">");
			fctl_eh_esc(b, r[i].error);
			fctl_buf_puts(b, "</span>");
		}
		fctl_buf_puts(b, "</td></tr>\n");
	}
	fctl_buf_puts(b, "</table></div>");
	if (!np)
		fctl_buf_puts(b, "<p class=\"nr\">No probe record in the slice.</p>");
	else
		fctl_buf_printf(b, "<div class=\"verdict %s\">Loss: %.0f packets in %zu of %zu probe "
				   "records that carry it; retransmissions: %.0f in %zu of %zu.%s</div>",
				loss || rt ? "bad" : nloss == np && nrt == np ? "good" : "warn", loss,
				nloss, np, rt, nrt, np,
				nloss < np || nrt < np ? " Records without the figures: not recorded." : "");
	fctl_buf_puts(b, "</section>\n");
}

static void page_head(struct fctl_buf *b, const struct fctl_evidence_html_in *in,
		      const struct ehrec *r, size_t n)
{
	const char *op = in->o->operator_name;
	struct passwd *pw;
	size_t kinds[EH_KINDS] = { 0 }, fails = 0, manual = 0;

	if (!op)
		op = (pw = getpwuid(getuid())) ? pw->pw_name : "unknown";
	for (size_t i = 0; i < n; i++) {
		kinds[fctl_eh_kind(&r[i])]++;
		fails += !strcmp(fctl_eh_tone(&r[i]), "bad");
		manual += r[i].manual;
	}
	fctl_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
			 "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
			 "style-src 'unsafe-inline'\">"
			 "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
			 "<title>Evidence report");
	if (in->o->change_id) {
		fctl_buf_puts(b, " — ");
		fctl_eh_esc(b, in->o->change_id);
	}
	fctl_buf_printf(b, "</title><style>%s</style></head><body>\n<header><div class=\"in\">"
			   "<h1>Evidence report", css);
	if (in->o->change_id) {
		fctl_buf_puts(b, ": change ");
		fctl_eh_esc(b, in->o->change_id);
	}
	fctl_buf_puts(b, "</h1><div class=\"sub\">");
	if (n) {
		fctl_eh_esc(b, r[0].time);
		fctl_buf_puts(b, " to ");
		fctl_eh_esc(b, r[n - 1].time);
		fctl_buf_puts(b, " (UTC) · ");
	}
	fctl_buf_puts(b, "assembled by ");
	fctl_eh_esc(b, op);
	fctl_buf_puts(b, " with fabricctl ");
	fctl_eh_esc(b, in->o->tool_version ? in->o->tool_version : "unknown");
	fctl_buf_puts(b, "</div><nav><a href=\"#timeline\">Timeline</a><a href=\"#macsec\">MACsec "
			 "counters</a><a href=\"#latency\">Probe latency</a><a href=\"#keys\">Key "
			 "lifecycle</a><a href=\"#verification\">Verification</a><a href=\"#records\">"
			 "All records</a></nav></div></header>\n<main>\n<div class=\"cards\">");
	fctl_buf_printf(b, "<div class=\"card\"><b>%zu</b><span>records in the slice</span></div>"
			   "<div class=\"card\"><b>%zu</b><span>applies</span></div>"
			   "<div class=\"card\"><b>%zu</b><span>key rotation records</span></div>"
			   "<div class=\"card\"><b>%zu</b><span>key state records</span></div>"
			   "<div class=\"card\"><b>%zu</b><span>probe verdicts</span></div>"
			   "<div class=\"card\"><b>%zu</b><span>failed or refused</span></div>"
			   "<div class=\"card\"><b>%zu</b><span>manual records (audit append)"
			   "</span></div></div>\n",
			n, kinds[EH_APPLY], kinds[EH_ROTATION], kinds[EH_KEYSTATE], kinds[EH_PROBE],
			fails, manual);
	fctl_buf_puts(b, "<div class=\"callout\"><b>This page is a reading aid, not the proof.</b> "
			 "It is one file of the bundle, listed with its SHA-256 in the signed "
			 "MANIFEST.json like every other: the manifest is the authority. Check the "
			 "bundle with <code>verify.sh</code> and public keys you hold (see "
			 "<a href=\"#verification\">Verification</a>).</div>\n");
}

int fctl_evidence_html(const struct fctl_evidence_html_in *in, struct fctl_buf *out)
{
	struct ehrec *r = NULL;
	size_t n = 0;
	struct fctl_buf b = { 0 };
	int ret;

	ret = parse_slice(in, &r, &n);
	if (ret == 0) {
		page_head(&b, in, r, n);
		section_timeline(&b, r, n);
		section_counters(&b, r, n);
		section_latency(&b, r, n);
		fctl_eh_section_keys(&b, r, n);
		fctl_eh_section_verify(&b, in, r, n);
		fctl_buf_puts(&b, "<section id=\"records\"><h2>All records of the slice</h2>");
		records_head(&b);
		for (size_t i = 0; i < n; i++) {
			if (n > EH_COMPACT)
				record_row_compact(&b, &r[i]);
			else
				record_row(&b, &r[i]);
		}
		fctl_buf_puts(&b, "</table></div></section>\n<footer>Generated by fabricctl from "
				  "audit/slice.jsonl and audit/checkpoint.txt of this bundle; no "
				  "script, nothing loaded from the network.</footer></main></body></html>\n");
		ret = b.oom ? -ENOMEM : 0;
	}
	if (ret == 0) {
		fctl_buf_append(out, b.data, b.len);
		if (in->o->html && in->o->html != out)
			fctl_buf_append(in->o->html, b.data, b.len);
		ret = out->oom || (in->o->html && in->o->html->oom) ? -ENOMEM : 0;
	}
	fctl_buf_release(&b);
	for (size_t i = 0; i < n; i++)
		rec_free(&r[i]);
	free(r);
	return ret;
}
