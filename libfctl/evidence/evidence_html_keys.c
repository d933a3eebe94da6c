// SPDX-License-Identifier: MIT
/* report.html: the key lifecycle and the verification sections. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence_html_int.h"

/* --- the key lifecycle --- */

struct kver {
	char name[128];
	bool has_version;
	uint64_t version;
	char kcv[FCTL_AUDIT_KCV_LEN + 1];
	const struct ehrec *ev[32]; /* the records naming a state, in order */
	size_t nev;
};

static const char *state_class(const char *s)
{
	if (!s)
		return "neutral";
	if (!strcmp(s, "active"))
		return "st-active";
	if (!strcmp(s, "pre-active") || !strcmp(s, "pending"))
		return "st-pre";
	if (!strcmp(s, "deactivated") || !strcmp(s, "retired"))
		return "st-deactivated";
	if (!strcmp(s, "compromised"))
		return "st-compromised";
	if (!strcmp(s, "destroyed"))
		return "st-destroyed";
	return "neutral";
}

static void state_chip(struct fctl_buf *b, const char *s)
{
	fctl_buf_printf(b, "<span class=\"chip %s\">", state_class(s));
	fctl_eh_esc(b, s);
	fctl_buf_puts(b, "</span>");
}

/* The key a key-state record names: "BACKEND:ID version N ..." in its detail, else its key
 * id, link or host. */
static void key_name(const struct ehrec *r, struct kver *k)
{
	const char *d = r->detail ? r->detail : "", *v = strstr(d, " version ");
	size_t nl = v ? (size_t)(v - d) : 0;

	k->has_version = false;
	if (v && nl && nl < sizeof(k->name) && !memchr(d, ' ', nl) &&
	    sscanf(v + 9, "%" SCNu64, &k->version) == 1) {
		snprintf(k->name, sizeof(k->name), "%.*s", (int)nl, d);
		k->has_version = true;
		return;
	}
	snprintf(k->name, sizeof(k->name), "%s",
		 r->nk ? r->keyids[0] : r->link ? r->link : r->host ? r->host : "(unnamed key)");
}

static size_t key_versions(const struct ehrec *r, size_t n, struct kver *kv, size_t max)
{
	size_t nkv = 0;

	for (size_t i = 0; i < n; i++) {
		struct kver k = { 0 };
		size_t j;

		if (!r[i].key_state)
			continue;
		key_name(&r[i], &k);
		for (j = 0; j < nkv; j++)
			if (!strcmp(kv[j].name, k.name) && kv[j].has_version == k.has_version &&
			    kv[j].version == k.version)
				break;
		if (j == nkv) {
			if (nkv == max)
				continue;
			kv[nkv++] = k;
		}
		if (r[i].nkcv && !kv[j].kcv[0])
			memcpy(kv[j].kcv, r[i].kcvs[0], sizeof(kv[j].kcv));
		if (kv[j].nev < FCTL_ARRAY_SIZE(kv[j].ev))
			kv[j].ev[kv[j].nev++] = &r[i];
	}
	return nkv;
}

static void versions_table(struct fctl_buf *b, const struct ehrec *r, size_t n)
{
	struct kver *kv = calloc(64, sizeof(*kv));
	size_t nkv = kv ? key_versions(r, n, kv, 64) : 0;

	if (!kv) {
		b->oom = true;
		return;
	}
	if (!nkv) {
		fctl_buf_puts(b, "<p class=\"nr\">No key state recorded in the slice.</p>");
		free(kv);
		return;
	}
	fctl_buf_puts(b, "<div class=\"tw\"><table><tr><th>key</th><th>version</th><th>KCV</th><th>states, in "
			 "order</th><th>state at the end of the slice</th></tr>\n");
	for (size_t j = 0; j < nkv; j++) {
		fctl_buf_puts(b, "<tr><td class=\"mono\">");
		fctl_eh_esc(b, kv[j].name);
		fctl_buf_puts(b, "</td>");
		if (kv[j].has_version)
			fctl_buf_printf(b, "<td class=\"num\">%" PRIu64 "</td>", kv[j].version);
		else
			fctl_buf_puts(b, "<td class=\"nr\">not recorded</td>");
		if (kv[j].kcv[0])
			fctl_buf_printf(b, "<td><code>%s</code></td><td>", kv[j].kcv);
		else
			fctl_buf_puts(b, "<td class=\"nr\">not recorded</td><td>");
		for (size_t e = 0; e < kv[j].nev; e++) {
			fctl_buf_puts(b, e ? " → " : "");
			state_chip(b, kv[j].ev[e]->key_state);
			fctl_buf_printf(b, " <span class=\"legend\">#%" PRIu64 " ", kv[j].ev[e]->seq);
			fctl_eh_esc(b, kv[j].ev[e]->time);
			fctl_buf_puts(b, kv[j].ev[e]->manual ? " manual record</span>" : "</span>");
		}
		fctl_buf_puts(b, "</td><td>");
		state_chip(b, kv[j].ev[kv[j].nev - 1]->key_state);
		if (kv[j].ev[kv[j].nev - 1]->manual) /* a person's word, not the tool's */
			fctl_buf_puts(b, " <span class=\"chip manual\">manual record</span>");
		fctl_buf_puts(b, "</td></tr>\n");
	}
	fctl_buf_puts(b, "</table></div>");
	free(kv);
}

/* "a -> b" after the word in the detail, e.g. "version 2 -> 3" */
static bool arrow(const char *d, const char *word, uint64_t *a, uint64_t *b)
{
	const char *p = d ? strstr(d, word) : NULL;

	return p && sscanf(p + strlen(word), "%" SCNu64 " -> %" SCNu64, a, b) == 2;
}

static void overlap_cell(struct fctl_buf *b, const struct ehrec *r, size_t n, size_t i)
{
	const struct ehrec *c = NULL;
	const char *o = r[i].detail ? strstr(r[i].detail, "overlap rx ok old an ") : NULL;
	uint64_t old_ok, new_ok;
	bool any = false;

	fctl_buf_puts(b, "<td>");
	for (size_t j = i; r[i].result && !strcmp(r[i].result, "committed") && j-- > 0;) {
		const char *x = r[j].link ? r[j].link : r[j].host, *y = r[i].link ? r[i].link : r[i].host;

		if (fctl_eh_kind(&r[j]) != EH_ROTATION || (x && y && strcmp(x, y)))
			continue;
		if (r[j].result && !strcmp(r[j].result, "confirmed"))
			c = &r[j];
		if (c || (r[j].result && !strcmp(r[j].result, "committed")))
			break;
	}
	if (c && c->t_us && r[i].t_us) {
		fctl_buf_printf(b, "%.3f s (#%" PRIu64 " confirmed → #%" PRIu64 " committed)",
				(double)(r[i].t_us - c->t_us) / 1e6, c->seq, r[i].seq);
		any = true;
	}
	if (o && sscanf(o + 21, "%" SCNu64 ", new an %" SCNu64, &old_ok, &new_ok) == 2) {
		fctl_buf_printf(b, "%sframes received during it: old key %" PRIu64 ", new key %" PRIu64,
				any ? "<br>" : "", old_ok, new_ok);
		any = true;
	}
	if (r[i].detail && strstr(r[i].detail, "no overlap")) {
		fctl_buf_puts(b, any ? "<br>" : "");
		fctl_buf_puts(b, "<span class=\"chip bad\">no overlap (compromised)</span>");
		any = true;
	}
	if (!any)
		fctl_buf_puts(b, "<span class=\"nr\">not recorded</span>");
	fctl_buf_puts(b, "</td>");
}

static void rotations_table(struct fctl_buf *b, const struct ehrec *r, size_t n)
{
	size_t nrot = 0;

	fctl_buf_puts(b, "<div class=\"tw\"><table class=\"dense\"><tr><th>seq</th><th>time (UTC)"
			 "</th><th>link</th><th>step</th>"
			 "<th>key version</th><th>AN</th><th>KCV</th><th>overlap window</th>"
			 "<th>detail</th></tr>\n");
	for (size_t i = 0; i < n; i++) {
		uint64_t a, c;

		if (fctl_eh_kind(&r[i]) != EH_ROTATION)
			continue;
		nrot++;
		fctl_buf_printf(b, "<tr><td class=\"num\">%" PRIu64 "</td><td class=\"t\">", r[i].seq);
		fctl_eh_esc(b, r[i].time);
		fctl_buf_puts(b, "</td><td>");
		fctl_eh_esc(b, r[i].link ? r[i].link : r[i].host);
		fctl_buf_printf(b, "</td><td><span class=\"chip %s\">", fctl_eh_tone(&r[i]));
		fctl_eh_esc(b, r[i].result);
		fctl_buf_puts(b, "</span></td>");
		if (arrow(r[i].detail, "version ", &a, &c))
			fctl_buf_printf(b, "<td>%" PRIu64 " → %" PRIu64 "</td>", a, c);
		else
			fctl_buf_puts(b, "<td class=\"nr\">not recorded</td>");
		if (arrow(r[i].detail, "an ", &a, &c))
			fctl_buf_printf(b, "<td>%" PRIu64 " → %" PRIu64 "</td>", a, c);
		else
			fctl_buf_puts(b, "<td class=\"nr\">-</td>");
		if (r[i].nkcv)
			fctl_buf_printf(b, "<td><code>%s</code></td>", r[i].kcvs[0]);
		else
			fctl_buf_puts(b, "<td class=\"nr\">-</td>");
		overlap_cell(b, r, n, i);
		fctl_buf_puts(b, "<td class=\"detail\">");
		fctl_eh_esc(b, r[i].detail);
		if (r[i].error) {
			fctl_buf_puts(b, "<br><b>error:</b> ");
			fctl_eh_esc(b, r[i].error);
		}
		fctl_buf_puts(b, "</td></tr>\n");
	}
	fctl_buf_puts(b, "</table></div>");
	if (!nrot)
		fctl_buf_puts(b, "<p class=\"nr\">No key rotation recorded in the slice.</p>");
}

void fctl_eh_section_keys(struct fctl_buf *b, const struct ehrec *r, size_t n)
{
	fctl_buf_puts(b, "<section id=\"keys\"><h2>Key lifecycle</h2><p class=\"legend\">Key "
			 "versions and their states (pre-active, active, deactivated, compromised) "
			 "from the key-state records, with the key check value (KCV: 3 bytes of "
			 "AES-ECB(key, 0), never the key). The records hold no key material.</p>\n"
			 "<h3>Key versions and states</h3>");
	versions_table(b, r, n);
	fctl_buf_puts(b, "<h3>Rotation steps</h3>");
	rotations_table(b, r, n);
	fctl_buf_puts(b, "</section>\n");
}

/* --- what fabricctl checked --- */

struct note {
	char origin[FCTL_AUDIT_ORIGIN_MAX], size[24], root[65]; /* root: hex, as people compare it */
	char signer[256], keyid[9];
	size_t nsig;
};

static void note_of(const struct fctl_evidence_html_in *in, struct note *nt)
{
	const struct fctl_evidence_file *f = NULL;
	size_t line = 0;

	memset(nt, 0, sizeof(*nt));
	for (size_t i = 0; i < in->n_files && !f; i++)
		if (!strcmp(in->files[i].name, "audit/checkpoint.txt"))
			f = &in->files[i];
	for (size_t off = 0; f && off < f->len; line++) {
		const char *s = f->data + off, *nl = memchr(s, '\n', f->len - off);
		size_t len = nl ? (size_t)(nl - s) : f->len - off;
		uint8_t raw[128];

		if (line == 0)
			snprintf(nt->origin, sizeof(nt->origin), "%.*s", (int)len, s);
		else if (line == 1)
			snprintf(nt->size, sizeof(nt->size), "%.*s", (int)len, s);
		else if (line == 2 && fctl_audit_b64_decode(s, len, raw, sizeof(raw)) == 32)
			fctl_format_hex(raw, 32, nt->root); /* base64 in the note */
		else if (len > 4 && !memcmp(s, "\xe2\x80\x94 ", 4)) { /* "— name base64" */
			const char *sp = memchr(s + 4, ' ', len - 4);
			int dl = sp ? fctl_audit_b64_decode(sp + 1, len - (size_t)(sp + 1 - s), raw,
							 sizeof(raw)) : -1;

			if (!nt->nsig++ && sp) {
				snprintf(nt->signer, sizeof(nt->signer), "%.*s", (int)(sp - s - 4), s + 4);
				if (dl >= 4)
					fctl_format_hex(raw, 4, nt->keyid);
			}
		}
		off += len + 1;
	}
}

static void check_row(struct fctl_buf *b, const char *what, const char *tone, const char *word)
{
	fctl_buf_printf(b, "<tr><th>%s</th><td><span class=\"chip %s\">%s</span></td><td>", what,
			tone, word);
}

void fctl_eh_section_verify(struct fctl_buf *b, const struct fctl_evidence_html_in *in,
		       const struct ehrec *r, size_t n)
{
	struct note nt;

	note_of(in, &nt);
	fctl_buf_puts(b, "<section id=\"verification\"><h2>Verification</h2><p class=\"legend\">"
			 "What fabricctl checked when it built this ");
	fctl_buf_puts(b, in->n_signers ? "bundle" : "report");
	fctl_buf_puts(b, ": it refuses to build one from a log that does not verify.</p><table>");
	check_row(b, "hash chain", "good", "verified");
	fctl_buf_printf(b, "%" PRIu64 " records", in->log_records);
	if (in->log_files)
		fctl_buf_printf(b, " in %" PRIu64 " file%s", in->log_files, in->log_files == 1 ? "" : "s");
	fctl_buf_puts(b, ": each in the canonical form, seq from 1 by one, each prev the RFC 6962 "
			 "leaf hash of the record before, no time more than 300 s before an earlier "
			 "one.</td></tr>");
	check_row(b, "checkpoint", "good", "verified");
	fctl_buf_puts(b, "size ");
	fctl_eh_esc(b, nt.size[0] ? nt.size : NULL);
	fctl_buf_puts(b, ", root <code>");
	fctl_eh_esc(b, nt.root[0] ? nt.root : NULL);
	fctl_buf_puts(b, "</code> (hex, as <code>fabricctl audit verify</code> prints it and the "
			 "manifest's <code>checkpoint_root</code> holds it): the Merkle root of the first "
			 "records recomputed and equal; no record past the latest signed checkpoint."
			 "</td></tr>");
	check_row(b, "checkpoint signature", nt.nsig ? "good" : "bad", nt.nsig ? "verified" : "none");
	fctl_buf_puts(b, "Ed25519 by <code>");
	fctl_eh_esc(b, nt.signer[0] ? nt.signer : NULL);
	fctl_buf_printf(b, "</code> (note key id <code>%s</code>), checked with ",
			nt.keyid[0] ? nt.keyid : "-");
	if (in->o->pubkey_path) {
		fctl_buf_puts(b, "<code>");
		fctl_eh_esc(b, in->o->pubkey_path);
		fctl_buf_puts(b, "</code>");
	} else {
		fctl_buf_puts(b, "the audit.pub beside the log");
	}
	fctl_buf_puts(b, " (the bundle's audit/audit.pub).</td></tr>");
	check_row(b, "origin", "good", "one log");
	fctl_buf_puts(b, "<code>");
	fctl_eh_esc(b, nt.origin[0] ? nt.origin : NULL);
	fctl_buf_puts(b, "</code>: every checkpoint names this log.</td></tr>");
	if (in->n_signers) {
		check_row(b, "signers", "good", "signed");
		fctl_buf_printf(b, "%zu signer%s (signatures required: %zu), each signing the manifest "
				   "and each of the %zu statements:", in->n_signers,
				in->n_signers == 1 ? "" : "s", in->n_signers, in->n_statements);
		for (size_t k = 0; k < in->n_signers; k++)
			fctl_buf_printf(b, "<br>key id <code>%s</code>", in->signer_ids[k]);
	} else {
		check_row(b, "signers", "warn", "none");
		fctl_buf_puts(b, "No bundle was built: this report was written alone and nothing "
				 "signs it.");
	}
	fctl_buf_puts(b, "</td></tr>");
	check_row(b, "slice", "neutral", "shown");
	fctl_buf_printf(b, "%zu record%s", n, n == 1 ? "" : "s");
	if (n)
		fctl_buf_printf(b, ", seq %" PRIu64 " to %" PRIu64, r[0].seq, r[n - 1].seq);
	if (in->o->change_id) {
		fctl_buf_puts(b, ", change ");
		fctl_eh_esc(b, in->o->change_id);
	}
	if (in->since && in->since[0]) {
		fctl_buf_puts(b, ", since ");
		fctl_eh_esc(b, in->since);
	}
	if (in->until && in->until[0]) {
		fctl_buf_puts(b, ", until ");
		fctl_eh_esc(b, in->until);
	}
	fctl_buf_puts(b, "</td></tr></table>\n<div class=\"callout\"><b>The real check is yours.</b> "
			 "These checks ran where the bundle was built, with the key found there. Run "
			 "verify.sh (better: a copy you keep) with public keys you hold, never the "
			 "ones inside the bundle:<pre class=\"mono\">bash verify.sh --tar BUNDLE.tar");
	for (size_t k = 0; k < (in->n_signers ? in->n_signers : 1); k++)
		fctl_buf_printf(b, " --signer-pub SIGNER%zu.pub", k + 1);
	fctl_buf_puts(b, " --audit-pub HOST-audit.pub</pre>or <code>--trusted-checkpoint FILE</code> "
			 "with a checkpoint you kept. It checks the signatures, every file against "
			 "the signed MANIFEST.json (this page included), the log's chain and "
			 "checkpoint, and every statement (docs/audit.md).</div></section>\n");
}
