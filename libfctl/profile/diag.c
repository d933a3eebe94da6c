// SPDX-License-Identifier: MIT
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
	fctl_buf_puts(o, "],\"findings\":[");
	for (size_t i = 0; i < d->n; i++) {
		if (i)
			fctl_buf_putc(o, ',');
		json_diag(o, &d->v[i]);
	}
	fctl_buf_printf(o, "],\"dropped\":%zu}\n", d->dropped);
	return o->oom ? -12 : 0;
}

int fctl_diags_to_junit(const struct fctl_diags *d, const char *const *files, size_t n_files,
			struct fctl_buf *o)
{
	size_t failing = 0;

	for (size_t f = 0; f < n_files; f++)
		failing += errors_in(d, files[f]) > 0;
	fctl_buf_puts(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fctl_buf_printf(o,
			"<testsuites name=\"fabricctl validate\" tests=\"%zu\" failures=\"%zu\">\n"
			"  <testsuite name=\"fabricctl validate\" tests=\"%zu\" failures=\"%zu\" "
			"errors=\"0\" skipped=\"0\">\n",
			n_files, failing, n_files, failing);
	for (size_t f = 0; f < n_files; f++) {
		size_t ne = errors_in(d, files[f]);

		fctl_buf_puts(o, "    <testcase classname=\"profile\" name=\"");
		fctl_buf_xml_str(o, files[f]);
		fctl_buf_puts(o, "\" file=\"");
		fctl_buf_xml_str(o, files[f]);
		fctl_buf_puts(o, "\">\n");
		if (ne) {
			struct fctl_buf body = { 0 };

			for (size_t i = 0; i < d->n; i++) {
				const struct fctl_diag *g = &d->v[i];

				if (strcmp(g->file, files[f]) != 0 || g->severity != FCTL_SEV_ERROR)
					continue;
				fctl_buf_printf(&body, "%s:%u:%u: %s [%s]\n", g->file, g->line,
						g->col, g->msg, g->code);
				if (g->hint)
					fctl_buf_printf(&body, "  hint: %s\n", g->hint);
			}
			fctl_buf_printf(o, "      <failure type=\"invalid-profile\" message=\"%zu error%s\">",
					ne, ne == 1 ? "" : "s");
			fctl_buf_xml_str(o, body.data);
			fctl_buf_puts(o, "</failure>\n");
			fctl_buf_release(&body);
		}
		fctl_buf_puts(o, "    </testcase>\n");
	}
	fctl_buf_puts(o, "  </testsuite>\n</testsuites>\n");
	return o->oom ? -12 : 0;
}
