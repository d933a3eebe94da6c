// SPDX-License-Identifier: MIT
/*
 * pn/sa-ledger and pn/ranges.json of an evidence bundle (docs/audit.md "Packet-number
 * evidence"): the host's packet-number ledger as the window's sa-ledger records anchor it
 * (its length and SHA-256, in the hash-chained, signed log), and the PN ranges each key
 * used per SCI and direction, derived from its lines. verify.sh derives them again with
 * jq, compares, and checks that no two ranges of one key, SCI and direction overlap.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "fctl/sa_ledger.h"
#include "evidence_int.h"

struct range {
	struct fctl_sa_ledger_event ev; /* dir, key, KEYID, SCI of the group */
	bool has_first, has_next;
	uint64_t first, next;
	size_t from_line, to_line; /* 0: none */
};

static bool same_group(const struct fctl_sa_ledger_event *a, const struct fctl_sa_ledger_event *b)
{
	return a->tx == b->tx && a->sci == b->sci && a->has_hash == b->has_hash &&
	       (!a->has_hash || memcmp(a->hash, b->hash, sizeof(a->hash)) == 0) &&
	       memcmp(a->keyid, b->keyid, sizeof(a->keyid)) == 0;
}

/* One event into the ranges: a start opens one; a retirement closes the group's last
 * one when it is open, else, past every PN the group's ranges reached (or with no range
 * before), it is a range whose start is not known; else nothing was used since. */
static int take(struct range **v, size_t *n, size_t *cap, const struct fctl_sa_ledger_event *ev,
		size_t line)
{
	struct range *last = NULL, *x;
	uint64_t reached = 0;
	bool any = false;

	for (size_t i = *n; i-- > 0;) {
		if (!same_group(&(*v)[i].ev, ev))
			continue;
		if (!last)
			last = &(*v)[i];
		any = true;
		if ((*v)[i].has_next && (*v)[i].next > reached)
			reached = (*v)[i].next;
	}
	if (ev->retired && last && !last->has_next) {
		last->has_next = true;
		last->next = ev->pn;
		last->to_line = line;
		return 0;
	}
	if (ev->retired && any && ev->pn <= reached)
		return 0;
	x = fctl_array_grow(v, n, cap, sizeof(**v));
	if (!x)
		return -ENOMEM;
	*x = (struct range){ .ev = *ev };
	if (ev->retired) {
		x->has_next = true;
		x->next = ev->pn;
		x->to_line = line;
	} else {
		x->has_first = true;
		x->first = ev->pn;
		x->from_line = line;
	}
	return 0;
}

static void pn_json(struct fctl_buf *b, const char *key, bool has, uint64_t v)
{
	if (has)
		fctl_buf_printf(b, ",\"%s\":\"%" PRIu64 "\"", key, v);
	else
		fctl_buf_printf(b, ",\"%s\":null", key);
}

static void line_json(struct fctl_buf *b, const char *key, size_t line)
{
	if (line)
		fctl_buf_printf(b, ",\"%s\":%zu", key, line);
	else
		fctl_buf_printf(b, ",\"%s\":null", key);
}

int fctl_evi_pn_ranges(const char *ledger, size_t len, struct fctl_buf *out, char *err,
		       size_t errlen)
{
	size_t hl = sizeof(FCTL_SA_LEDGER_HEAD) - 1, n = 0, cap = 0, line = 1;
	struct range *v = NULL;
	const char *p = ledger + hl, *end = ledger + len;
	int r = 0;

	if (len < hl || memcmp(ledger, FCTL_SA_LEDGER_HEAD, hl) != 0 || (len && ledger[len - 1] != '\n')) {
		snprintf(err, errlen, "the packet-number ledger does not start with its head or "
			 "does not end with a whole line");
		return -EBADMSG;
	}
	while (r == 0 && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char buf[160];
		struct fctl_sa_ledger_event ev;

		line++;
		if ((size_t)(nl - p) >= sizeof(buf)) {
			r = -EBADMSG;
		} else {
			memcpy(buf, p, (size_t)(nl - p));
			buf[nl - p] = '\0';
			r = fctl_sa_ledger_parse(buf, &ev) < 0 ? -EBADMSG : take(&v, &n, &cap, &ev, line);
		}
		if (r == -EBADMSG)
			snprintf(err, errlen, "line %zu of the packet-number ledger is not a ledger event",
				 line);
		p = nl + 1;
	}
	fctl_buf_puts(out, "{\"note\":\"PN ranges per key (its ledger name, never its bytes), "
			   "SCI and direction, from pn/sa-ledger: first is the PN the SA started at, "
			   "next the PN it stopped before (null: unknown); lines are the ledger's\","
			   "\"ranges\":[");
	for (size_t i = 0; r == 0 && i < n; i++) {
		char hash[2 * FCTL_SA_LEDGER_HASH_LEN + 1] = "-", kid[2 * FCTL_SA_LEDGER_KEYID_LEN + 1];

		if (v[i].ev.has_hash)
			fctl_format_hex(v[i].ev.hash, FCTL_SA_LEDGER_HASH_LEN, hash);
		fctl_format_hex(v[i].ev.keyid, FCTL_SA_LEDGER_KEYID_LEN, kid);
		fctl_buf_printf(out, "%s{\"key\":\"%s\",\"keyid\":\"%s\",\"sci\":\"0x%016" PRIx64
				"\",\"dir\":\"%s\"", i ? "," : "", hash, kid, v[i].ev.sci,
				v[i].ev.tx ? "tx" : "rx");
		pn_json(out, "first", v[i].has_first, v[i].first);
		pn_json(out, "next", v[i].has_next, v[i].next);
		line_json(out, "from_line", v[i].from_line);
		line_json(out, "to_line", v[i].to_line);
		fctl_buf_putc(out, '}');
	}
	fctl_buf_puts(out, "]}\n");
	free(v);
	if (r == 0 && out->oom)
		r = -ENOMEM;
	return r;
}

int fctl_evi_pn_ledger(const struct fctl_evi_pn_anchor *a, size_t n, const char *path,
		       struct fctl_buf *ledger, size_t *top, char *err, size_t errlen)
{
	struct fctl_sa_ledger_anchor an[2];
	struct fctl_buf b = { 0 };
	size_t best = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		if (fctl_sa_ledger_anchor_parse(a[i].detail, &an[0]) < 0) {
			snprintf(err, errlen, "audit record %" PRIu64 " (sa-ledger) is not an anchor "
				 "of the packet-number ledger", a[i].seq);
			return -EBADMSG;
		}
		fctl_sa_ledger_anchor_parse(a[best].detail, &an[1]);
		if (an[0].size > an[1].size)
			best = i;
	}
	r = path ? fctl_file_read(path, &b) : -ENOENT;
	if (r < 0) {
		snprintf(err, errlen, "audit record %" PRIu64 " anchors the packet-number ledger, "
			 "which cannot be read%s%s: %s (give it with --ledger FILE)", a[best].seq,
			 path ? " from " : "", path ? path : "", strerror(-r));
		fctl_buf_release(&b);
		return r;
	}
	/* every anchor of the window a prefix of the ledger: it was only ever appended to */
	for (size_t i = 0; i < n; i++) {
		uint8_t md[32];
		unsigned int hl = 32;

		fctl_sa_ledger_anchor_parse(a[i].detail, &an[0]);
		if (an[0].size > b.len ||
		    EVP_Digest(b.data ? b.data : "", (size_t)an[0].size, md, &hl, EVP_sha256(), NULL) != 1 ||
		    memcmp(md, an[0].sha256, 32) != 0) {
			snprintf(err, errlen, "the packet-number ledger %s is not the one audit record "
				 "%" PRIu64 " anchors (%s): it was changed after it was recorded",
				 path, a[i].seq, a[i].detail);
			fctl_buf_release(&b);
			return -EBADMSG;
		}
	}
	fctl_sa_ledger_anchor_parse(a[best].detail, &an[0]);
	b.len = (size_t)an[0].size; /* what the log vouches for; later lines are not shown */
	*ledger = b;
	*top = best;
	return 0;
}

int fctl_evi_add_pn(struct ev *e)
{
	struct fctl_evi_pn_anchor *a = calloc(e->nwin ? e->nwin : 1, sizeof(*a));
	struct fctl_buf ledger = { 0 }, ranges = { 0 };
	size_t n = 0, top = 0;
	int r;

	if (!a)
		return fctl_evi_fail(e, -ENOMEM, "out of memory");
	/* the tool's anchors in the window (a manual record never takes this action) */
	for (size_t i = e->wfirst; e->nwin && i <= e->wlast; i++) {
		const struct rec *rc = &e->r[i];

		if (rc->action && !strcmp(rc->action, FCTL_SA_LEDGER_ACTION) && !rc->manual)
			a[n++] = (struct fctl_evi_pn_anchor){ .seq = rc->seq, .detail = rc->detail };
	}
	r = n ? fctl_evi_pn_ledger(a, n, e->o->ledger_path, &ledger, &top, e->err, e->errlen) : 0;
	if (n && r == 0) {
		r = fctl_evi_pn_ranges(ledger.data, ledger.len, &ranges, e->err, e->errlen);
		if (r == -ENOMEM)
			fctl_evi_fail(e, r, "out of memory");
	}
	if (n && r == 0) {
		e->has_pn = true;
		e->pn_seq = a[top].seq;
		snprintf(e->pn_anchor, sizeof(e->pn_anchor), "%s", a[top].detail);
		r = fctl_evi_add_file(e, "pn/sa-ledger", &ledger);
	}
	if (n && r == 0)
		r = fctl_evi_add_file(e, "pn/ranges.json", &ranges);
	fctl_buf_release(&ledger);
	fctl_buf_release(&ranges);
	free(a);
	return r;
}

void fctl_evi_manifest_pn(const struct ev *e, struct fctl_buf *m)
{
	struct fctl_sa_ledger_anchor an;
	char hex[65];

	if (!e->has_pn || fctl_sa_ledger_anchor_parse(e->pn_anchor, &an) < 0) {
		fctl_buf_puts(m, "  \"pn\": null,\n");
		return;
	}
	fctl_format_hex(an.sha256, 32, hex);
	fctl_buf_printf(m, "  \"pn\": {\"ledger\": \"pn/sa-ledger\", \"ranges\": \"pn/ranges.json\", "
			   "\"anchor_seq\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"sha256\": \"%s\"},\n",
			e->pn_seq, an.size, hex);
}
