// SPDX-License-Identifier: MIT
/* Findings (file:line:col, severity, code, hint) of profile checks, sorted, as text or JSON. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/diag.h"

void fctl_diags_release(struct fctl_diags *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].code);
		free(d->v[i].msg);
		free(d->v[i].hint);
	}
	free(d->v);
	memset(d, 0, sizeof(*d));
}

void fctl_diag_add(struct fctl_diags *d, enum fctl_severity sev, const char *file, uint32_t line,
		   uint32_t col, const char *code, const char *hint, const char *fmt, ...)
{
	struct fctl_buf b = { 0 };
	struct fctl_diag *g;
	va_list ap;
	size_t limit = d->limit ? d->limit : 1000;

	if (sev == FCTL_SEV_ERROR)
		d->n_errors++;
	if (d->n >= limit) {
		d->dropped++;
		return;
	}
	g = fctl_array_grow(&d->v, &d->n, &d->cap, sizeof(*g));
	if (!g) {
		d->dropped++;
		return;
	}
	va_start(ap, fmt);
	fctl_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	g->severity = sev;
	g->file = fctl_strdup(file ? file : "");
	g->line = line;
	g->col = col;
	g->code = fctl_strdup(code ? code : "error");
	g->hint = fctl_strdup(hint);
	g->msg = fctl_buf_steal(&b);
}

void fctl_diags_sort(struct fctl_diags *d)
{
	/* stable insertion sort: findings arrive nearly sorted already */
	for (size_t i = 1; i < d->n; i++) {
		struct fctl_diag t = d->v[i];
		size_t j = i;

		while (j > 0) {
			struct fctl_diag *p = &d->v[j - 1];
			int c = strcmp(p->file, t.file);

			if (c < 0 || (c == 0 && (p->line < t.line ||
						 (p->line == t.line && p->col <= t.col))))
				break;
			d->v[j] = *p;
			j--;
		}
		d->v[j] = t;
	}
}

int fctl_diags_to_text(const struct fctl_diags *d, struct fctl_buf *o, bool color)
{
	const char *bold = color ? "\033[1m" : "", *red = color ? "\033[31m" : "",
		   *mag = color ? "\033[35m" : "", *reset = color ? "\033[0m" : "";

	for (size_t i = 0; i < d->n; i++) {
		const struct fctl_diag *g = &d->v[i];
		bool err = g->severity == FCTL_SEV_ERROR;

		if (g->line)
			fctl_buf_printf(o, "%s%s:%u:%u:%s ", bold, g->file, g->line, g->col, reset);
		else
			fctl_buf_printf(o, "%s%s:%s ", bold, g->file, reset);
		fctl_buf_printf(o, "%s%s:%s %s [%s]\n", err ? red : mag,
				err ? "error" : "warning", reset, g->msg, g->code);
		if (g->hint)
			fctl_buf_printf(o, "  hint: %s\n", g->hint);
	}
	if (d->dropped)
		fctl_buf_printf(o, "(%zu more findings not shown)\n", d->dropped);
	return o->oom ? -12 : 0;
}

static void json_diag(struct fctl_buf *o, const struct fctl_diag *g)
{
	fctl_buf_puts(o, "{\"file\":");
	fctl_buf_json_str(o, g->file);
	fctl_buf_printf(o, ",\"line\":%u,\"column\":%u,\"severity\":\"%s\",\"code\":", g->line,
			g->col, g->severity == FCTL_SEV_ERROR ? "error" : "warning");
	fctl_buf_json_str(o, g->code);
	fctl_buf_puts(o, ",\"message\":");
	fctl_buf_json_str(o, g->msg);
	if (g->hint) {
		fctl_buf_puts(o, ",\"hint\":");
		fctl_buf_json_str(o, g->hint);
	}
	fctl_buf_putc(o, '}');
}

static size_t errors_in(const struct fctl_diags *d, const char *file)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n; i++)
		n += d->v[i].severity == FCTL_SEV_ERROR && strcmp(d->v[i].file, file) == 0;
	return n;
}

int fctl_diags_to_json(const struct fctl_diags *d, const char *const *files, size_t n_files,
		       struct fctl_buf *o)
{
	size_t warnings = 0;

	for (size_t i = 0; i < d->n; i++)
		warnings += d->v[i].severity == FCTL_SEV_WARNING;
	fctl_buf_printf(o, "{\"valid\":%s,\"errors\":%zu,\"warnings\":%zu,\"files\":[",
			d->n_errors ? "false" : "true", d->n_errors, warnings);
	for (size_t f = 0; f < n_files; f++) {
		fctl_buf_printf(o, "%s{\"file\":", f ? "," : "");
		fctl_buf_json_str(o, files[f]);
		fctl_buf_printf(o, ",\"valid\":%s}", errors_in(d, files[f]) ? "false" : "true");
	}
	fctl_buf_puts(o, "],\"findings\":");
	fctl_diags_findings_json(d, o);
	fctl_buf_printf(o, ",\"dropped\":%zu}\n", d->dropped);
	return o->oom ? -12 : 0;
}

int fctl_diags_findings_json(const struct fctl_diags *d, struct fctl_buf *o)
{
	fctl_buf_putc(o, '[');
	for (size_t i = 0; i < d->n; i++) {
		if (i)
			fctl_buf_putc(o, ',');
		json_diag(o, &d->v[i]);
	}
	fctl_buf_putc(o, ']');
	return o->oom ? -12 : 0;
}

/* Whole-file I/O findings are JUnit errors (the check could not run); the rest are
 * failures (the profile is wrong) or, as warnings, skipped test cases with the message. */
static bool is_io(const struct fctl_diag *g)
{
	return g->severity == FCTL_SEV_ERROR && strcmp(g->code, "io") == 0;
}

struct junit_counts {
	size_t tests, failures, errors, skipped;
};

static void junit_count(const struct fctl_diags *d, const char *file, struct junit_counts *c)
{
	size_t errors = 0;

	for (size_t i = 0; i < d->n; i++) {
		const struct fctl_diag *g = &d->v[i];

		if (strcmp(g->file, file) != 0)
			continue;
		c->tests++;
		if (g->severity == FCTL_SEV_WARNING)
			c->skipped++;
		else if (is_io(g))
			c->errors++;
		else
			c->failures++;
		errors += g->severity == FCTL_SEV_ERROR;
	}
	if (!errors)
		c->tests++; /* the passing test case "valid" */
}

static void junit_text(struct fctl_buf *o, const struct fctl_diag *g)
{
	struct fctl_buf t = { 0 };

	if (g->line)
		fctl_buf_printf(&t, "%s:%u:%u: ", g->file, g->line, g->col);
	else
		fctl_buf_printf(&t, "%s: ", g->file);
	fctl_buf_printf(&t, "%s: %s [%s]\n", g->severity == FCTL_SEV_ERROR ? "error" : "warning",
			g->msg, g->code);
	if (g->hint)
		fctl_buf_printf(&t, "  hint: %s\n", g->hint);
	fctl_buf_xml_str(o, t.data);
	if (t.oom)
		o->oom = true;
	fctl_buf_release(&t);
}

static void junit_case(struct fctl_buf *o, const struct fctl_diag *g)
{
	const char *tag = g->severity == FCTL_SEV_WARNING ? "skipped" : is_io(g) ? "error"
											 : "failure";

	fctl_buf_puts(o, "    <testcase classname=\"");
	fctl_buf_xml_str(o, g->file);
	fctl_buf_puts(o, "\" name=\"");
	if (g->line)
		fctl_buf_printf(o, "%u:%u ", g->line, g->col);
	fctl_buf_xml_str(o, g->code);
	fctl_buf_puts(o, "\" file=\"");
	fctl_buf_xml_str(o, g->file);
	fctl_buf_putc(o, '"');
	if (g->line) /* a finding about the whole file has no line, rather than line 0 */
		fctl_buf_printf(o, " line=\"%u\"", g->line);
	fctl_buf_printf(o, ">\n      <%s", tag);
	if (strcmp(tag, "skipped") != 0) {
		fctl_buf_puts(o, " type=\"");
		fctl_buf_xml_str(o, g->code);
		fctl_buf_putc(o, '"');
	}
	fctl_buf_puts(o, " message=\"");
	if (g->severity == FCTL_SEV_WARNING)
		fctl_buf_puts(o, "warning: ");
	fctl_buf_xml_str(o, g->msg);
	fctl_buf_puts(o, "\">");
	junit_text(o, g);
	fctl_buf_printf(o, "</%s>\n", tag);
	if (g->severity == FCTL_SEV_WARNING) {
		fctl_buf_puts(o, "      <system-out>");
		junit_text(o, g);
		fctl_buf_puts(o, "</system-out>\n");
	}
	fctl_buf_puts(o, "    </testcase>\n");
}

static void junit_suite(struct fctl_buf *o, const struct fctl_diags *d, const char *file)
{
	struct junit_counts c = { 0 };
	bool errors = false;

	junit_count(d, file, &c);
	fctl_buf_puts(o, "  <testsuite name=\"");
	fctl_buf_xml_str(o, file);
	fctl_buf_puts(o, "\" file=\"");
	fctl_buf_xml_str(o, file);
	fctl_buf_printf(o, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" skipped=\"%zu\">\n",
			c.tests, c.failures, c.errors, c.skipped);
	for (size_t i = 0; i < d->n; i++) {
		if (strcmp(d->v[i].file, file) != 0)
			continue;
		errors |= d->v[i].severity == FCTL_SEV_ERROR;
		junit_case(o, &d->v[i]);
	}
	if (!errors) {
		fctl_buf_puts(o, "    <testcase classname=\"");
		fctl_buf_xml_str(o, file);
		fctl_buf_puts(o, "\" name=\"valid\" file=\"");
		fctl_buf_xml_str(o, file);
		fctl_buf_puts(o, "\"/>\n");
	}
	fctl_buf_puts(o, "  </testsuite>\n");
}

/* The files a report covers: those checked, then those only findings name (a directory
 * without profiles), each once. *out is malloc'd. */
static int junit_files(const struct fctl_diags *d, const char *const *files, size_t n_files,
		       const char ***out, size_t *n)
{
	const char **v = calloc(n_files + d->n + 1, sizeof(*v));
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t f = 0; f < n_files; f++)
		v[k++] = files[f];
	for (size_t i = 0; i < d->n; i++) {
		bool seen = false;

		for (size_t j = 0; j < k && !seen; j++)
			seen = strcmp(v[j], d->v[i].file) == 0;
		if (!seen)
			v[k++] = d->v[i].file;
	}
	*out = v;
	*n = k;
	return 0;
}

int fctl_diags_to_junit(const struct fctl_diags *d, const char *const *files, size_t n_files,
			struct fctl_buf *o)
{
	struct junit_counts all = { 0 };
	const char **v;
	size_t n;

	if (junit_files(d, files, n_files, &v, &n) < 0)
		return -ENOMEM;
	for (size_t f = 0; f < n; f++)
		junit_count(d, v[f], &all);
	fctl_buf_puts(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fctl_buf_printf(o,
			"<testsuites name=\"fabricctl validate\" tests=\"%zu\" failures=\"%zu\" "
			"errors=\"%zu\" skipped=\"%zu\">\n",
			all.tests, all.failures, all.errors, all.skipped);
	for (size_t f = 0; f < n; f++)
		junit_suite(o, d, v[f]);
	fctl_buf_puts(o, "</testsuites>\n");
	free(v);
	return o->oom ? -ENOMEM : 0;
}
