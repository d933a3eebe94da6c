// SPDX-License-Identifier: MIT
/* mka/ports.json of an evidence bundle: the MKA ports of the window's mka-* records. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence_int.h"

/* The value of "key=" in a detail of space-separated key=value words, into out ("" when
 * absent or "-"). */
static void word(const char *detail, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);

	out[0] = '\0';
	for (const char *p = detail; p && *p;) {
		const char *end = strchr(p, ' ');
		size_t wl = end ? (size_t)(end - p) : strlen(p);

		if (wl > kl && p[kl] == '=' && strncmp(p, key, kl) == 0) {
			size_t vl = wl - kl - 1;

			if (vl >= len)
				vl = len - 1;
			memcpy(out, p + kl + 1, vl);
			out[vl] = '\0';
			if (strcmp(out, "-") == 0)
				out[0] = '\0';
			return;
		}
		p = end ? end + 1 : NULL;
	}
}

struct port {
	char host[256], port[40];
	size_t first; /* index of its first record in in[] */
};

static void str_or_null(struct fctl_buf *b, const char *key, const char *v)
{
	fctl_buf_printf(b, ",\"%s\":", key);
	if (v && *v)
		fctl_buf_json_str(b, v);
	else
		fctl_buf_puts(b, "null");
}

/* A JSON array of the distinct non-empty values of field f of port's records. */
static void distinct(struct fctl_buf *b, const char *key, const struct fctl_evi_mka_in *in,
		     size_t n, const struct port *pt, const char *field)
{
	char seen[16][80];
	size_t ns = 0;

	fctl_buf_printf(b, ",\"%s\":[", key);
	for (size_t i = pt->first; i < n; i++) {
		char v[80], po[40];
		bool dup = false;

		word(in[i].detail, "port", po, sizeof(po));
		if (strcmp(in[i].host ? in[i].host : "", pt->host) || strcmp(po, pt->port))
			continue;
		if (field)
			word(in[i].detail, field, v, sizeof(v));
		else
			snprintf(v, sizeof(v), "%s", in[i].kcv ? in[i].kcv : "");
		for (size_t k = 0; k < ns && !dup; k++)
			dup = !strcmp(seen[k], v);
		if (!v[0] || dup || ns == 16)
			continue;
		memcpy(seen[ns++], v, sizeof(v));
		fctl_buf_puts(b, ns > 1 ? "," : "");
		fctl_buf_json_str(b, v);
	}
	fctl_buf_putc(b, ']');
}

static void one_port(struct fctl_buf *b, const struct fctl_evi_mka_in *in, size_t n,
		     const struct port *pt)
{
	const struct fctl_evi_mka_in *last = NULL;
	char ks[80] = "", v[80];
	bool first = true;

	fctl_buf_puts(b, "{\"host\":");
	fctl_buf_json_str(b, pt->host);
	str_or_null(b, "port", pt->port);
	distinct(b, "ckn", in, n, pt, "ckn");
	distinct(b, "kcv", in, n, pt, NULL);
	distinct(b, "key_servers", in, n, pt, "key_server");
	fctl_buf_puts(b, ",\"events\":[");
	for (size_t i = pt->first; i < n; i++) {
		char po[40];

		word(in[i].detail, "port", po, sizeof(po));
		if (strcmp(in[i].host ? in[i].host : "", pt->host) || strcmp(po, pt->port))
			continue;
		fctl_buf_printf(b, "%s{\"seq\":%" PRIu64, first ? "" : ",", in[i].seq);
		str_or_null(b, "time", in[i].time);
		str_or_null(b, "action", in[i].action);
		str_or_null(b, "result", in[i].result);
		word(in[i].detail, "key_server", v, sizeof(v));
		str_or_null(b, "key_server", v);
		str_or_null(b, "kcv", in[i].kcv);
		fctl_buf_putc(b, '}');
		first = false;
		if (in[i].action && !strcmp(in[i].action, "mka-state"))
			last = &in[i];
	}
	fctl_buf_putc(b, ']');
	/* where the window ends: the last state record's */
	if (last)
		word(last->detail, "key_server", ks, sizeof(ks));
	str_or_null(b, "key_server", ks);
	fctl_buf_printf(b, ",\"secured\":%s}",
			!last ? "null" : last->result && !strcmp(last->result, "secured") ? "true"
											 : "false");
}

static int cmp_port(const void *x, const void *y)
{
	const struct port *a = x, *b = y;
	int c = strcmp(a->host, b->host);

	return c ? c : strcmp(a->port, b->port);
}

int fctl_evi_mka_json(const struct fctl_evi_mka_in *in, size_t n, struct fctl_buf *out)
{
	struct port *pt = NULL;
	size_t np = 0, cap = 0;

	for (size_t i = 0; i < n; i++) {
		struct port p = { .first = i };
		bool dup = false;

		word(in[i].detail, "port", p.port, sizeof(p.port));
		snprintf(p.host, sizeof(p.host), "%s", in[i].host ? in[i].host : "");
		for (size_t k = 0; k < np && !dup; k++)
			dup = !strcmp(pt[k].host, p.host) && !strcmp(pt[k].port, p.port);
		if (dup || !p.port[0])
			continue;
		struct port *slot = fctl_array_grow(&pt, &np, &cap, sizeof(*pt));

		if (!slot) {
			free(pt);
			return -ENOMEM;
		}
		*slot = p;
	}
	if (np)
		qsort(pt, np, sizeof(*pt), cmp_port);
	fctl_buf_puts(out, "{\"note\":\"MKA ports from the window's mka-state, mka-restart and "
			   "mka-rotate records: CKN, key server, the CAK's check value (3 bytes); never a "
			   "CAK or SAK\",\"ports\":[");
	for (size_t k = 0; k < np; k++) {
		fctl_buf_puts(out, k ? "," : "");
		one_port(out, in, n, &pt[k]);
	}
	fctl_buf_puts(out, "]}\n");
	free(pt);
	return out->oom ? -ENOMEM : 0;
}

int fctl_evi_add_mka(struct ev *e)
{
	struct fctl_evi_mka_in *in = calloc(e->nr ? e->nr : 1, sizeof(*in));
	struct fctl_buf b = { 0 };
	size_t n = 0;
	int r = 0;

	if (!in)
		return fctl_evi_fail(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < e->nr; i++) {
		const struct rec *rc = &e->r[i];

		if (!rc->in_slice || !rc->action || strncmp(rc->action, "mka-", 4) != 0)
			continue;
		in[n++] = (struct fctl_evi_mka_in){ .seq = rc->seq, .time = rc->time,
						    .action = rc->action, .host = rc->host,
						    .result = rc->result, .detail = rc->detail,
						    .kcv = rc->nkcv ? rc->kcvs[0] : NULL };
	}
	if (n && fctl_evi_mka_json(in, n, &b) < 0)
		r = fctl_evi_fail(e, -ENOMEM, "out of memory");
	else if (n)
		r = fctl_evi_add_file(e, "mka/ports.json", &b);
	fctl_buf_release(&b);
	free(in);
	return r;
}
