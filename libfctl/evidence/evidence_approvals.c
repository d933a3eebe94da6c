// SPDX-License-Identifier: MIT
/* The evidence bundle's approvals (docs/audit.md, docs/approvals.md): the signature files the
 * window's apply and rollback records name, and the allowed_signers file to check them with. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/approvals.h"
#include "evidence_html_int.h"
#include "evidence_int.h"

/* One approval of a record: "PRINCIPAL SHA256:KEYFP sha256:HEX" split at its last two
 * spaces. false when it is not of that form. */
static bool approval_split(const char *s, size_t len, char *principal, size_t plen, char *fp,
			   size_t fplen, char hex[65])
{
	const char *sp2 = NULL, *sp1 = NULL;

	for (size_t i = len; i-- > 0;) {
		if (s[i] != ' ')
			continue;
		if (!sp2)
			sp2 = s + i;
		else {
			sp1 = s + i;
			break;
		}
	}
	if (!sp1 || sp1 == s || (size_t)(sp1 - s) >= plen || (size_t)(sp2 - sp1 - 1) >= fplen ||
	    (size_t)(s + len - sp2 - 1) != 7 + 64 || strncmp(sp2 + 1, "sha256:", 7) != 0)
		return false;
	snprintf(principal, plen, "%.*s", (int)(sp1 - s), s);
	snprintf(fp, fplen, "%.*s", (int)(sp2 - sp1 - 1), sp1 + 1);
	memcpy(hex, sp2 + 8, 64);
	hex[64] = '\0';
	return strspn(hex, "0123456789abcdef") == 64;
}

int fctl_evi_approval_next(const char *v, size_t vl, size_t *pos, char *principal,
			   size_t plen, char *fp, size_t fplen, char hex[65])
{
	for (size_t i = *pos; i < vl; i++) {
		size_t k = i + 1;

		if (v[i] != '"')
			continue;
		while (k < vl && v[k] != '"')
			k++;
		*pos = k + 1;
		return approval_split(v + i + 1, k - i - 1, principal, plen, fp, fplen, hex)
			       ? 1
			       : -EBADMSG;
	}
	*pos = vl;
	return 0;
}

/* The signature file with this digest beside any copy of p (the history's copies keep
 * NNNNNN-vV.yaml.sig.d/, a --profile file its PROFILE.sig and PROFILE.sig.d/): its bytes
 * into b. 0, -ENOENT when none has it. */
static int find_sig(const struct prof *p, const char *hex, struct fctl_buf *b)
{
	for (size_t s = 0; s < p->nsrc; s++) {
		char **files = NULL;
		size_t n = 0;
		int r = fctl_approvals_list(p->srcs[s], &files, &n);

		for (size_t i = 0; r == 0 && i < n; i++) {
			char h[65];

			fctl_buf_release(b);
			if (fctl_approvals_read_at(AT_FDCWD, files[i], 64 * 1024, b) < 0)
				continue;
			fctl_evi_sha256_hex(b->data ? b->data : "", b->len, h);
			if (!strcmp(h, hex)) {
				fctl_approvals_list_free(files, n);
				return 0;
			}
		}
		fctl_approvals_list_free(files, n);
	}
	fctl_buf_release(b);
	return -ENOENT;
}

static const struct prof *carried(const struct ev *e, const struct rec *r)
{
	for (size_t i = 0; r->psha && i < e->np; i++)
		if (!strcmp(e->p[i].sha, r->psha))
			return e->p[i].file ? &e->p[i] : NULL;
	return NULL;
}

static bool have_file(const struct ev *e, const char *name)
{
	for (size_t i = 0; i < e->nf; i++)
		if (!strcmp(e->f[i].name, name))
			return true;
	return false;
}

/* One record's approvals into j (a member of "records"), their signature files into the
 * bundle. */
static int add_record(struct ev *e, const struct rec *rc, const char *v, size_t vl,
		      struct fctl_buf *j, bool first)
{
	const struct prof *p = carried(e, rc);
	bool one = true;

	if (!p)
		return fctl_evi_fail(e, -ENOENT,
				     "audit record %" PRIu64 " names approvals of %s version %" PRIu64
				     ", a profile the bundle does not carry: give its file "
				     "(--profile FILE or --history DIR)",
				     rc->seq, rc->pname ? rc->pname : "?", rc->pver);
	fctl_buf_printf(j, "%s\n    {\"seq\": %" PRIu64 ", \"time\": ", first ? "" : ",", rc->seq);
	fctl_buf_json_str(j, rc->time);
	fctl_buf_puts(j, ", \"profile\": ");
	fctl_buf_json_str(j, p->file);
	fctl_buf_puts(j, ", \"approvals\": [");
	for (size_t pos = 0;;) {
		char principal[160], fp[80], hex[65], name[96];
		struct fctl_buf b = { 0 };
		int r = fctl_evi_approval_next(v, vl, &pos, principal, sizeof(principal), fp,
					       sizeof(fp), hex);

		if (r == 0)
			break;
		if (r < 0)
			return fctl_evi_fail(e, -EBADMSG, "audit record %" PRIu64
					     ": an approval not of the form 'PRINCIPAL SHA256:KEY sha256:DIGEST'",
					     rc->seq);
		if (find_sig(p, hex, &b) < 0)
			return fctl_evi_fail(e, -ENOENT,
					     "audit record %" PRIu64 " names the approval of %s "
					     "(signature sha256:%s), but no signature file kept with %s "
					     "version %" PRIu64 " has that digest (--history DIR, --profile FILE)",
					     rc->seq, principal, hex, p->name, p->version);
		snprintf(name, sizeof(name), "approvals/%s.sig", hex);
		r = have_file(e, name) ? 0 : fctl_evi_add_file(e, name, &b);
		fctl_buf_release(&b);
		if (r < 0)
			return r;
		fctl_buf_puts(j, one ? "{\"principal\": " : ", {\"principal\": ");
		fctl_buf_json_str(j, principal);
		fctl_buf_puts(j, ", \"key\": ");
		fctl_buf_json_str(j, fp);
		fctl_buf_printf(j, ", \"sha256\": \"%s\", \"signature\": \"%s\"}", hex, name);
		one = false;
	}
	fctl_buf_puts(j, "]}");
	return 0;
}

int fctl_evi_add_approvals(struct ev *e)
{
	struct fctl_buf j = { 0 }, as = { 0 };
	bool first = true;
	int r = 0;

	fctl_buf_puts(&j, "{\"namespace\": \"" FCTL_APPROVALS_NAMESPACE "\", "
			  "\"allowed_signers\": \"approvals/allowed_signers\", \"records\": [");
	for (size_t i = e->wfirst; e->nwin && i <= e->wlast && r == 0; i++) {
		const struct rec *rc = &e->r[i];
		const char *v;
		size_t vl;

		if (!rc->in_slice || rc->manual ||
		    fctl_audit_field_raw(rc->line, rc->len, "approvals", &v, &vl) < 0 || vl <= 2)
			continue;
		r = add_record(e, rc, v, vl, &j, first);
		first = false;
	}
	if (r < 0 || first)
		goto out;
	if (!e->o->allowed_signers) {
		r = fctl_evi_fail(e, -ENOENT, "the window's records name approvals: give the "
					      "allowed_signers file they were checked against "
					      "(--allowed-signers FILE)");
		goto out;
	}
	if ((r = fctl_file_read(e->o->allowed_signers, &as)) < 0) {
		r = fctl_evi_fail(e, r, "cannot read '%s': %s", e->o->allowed_signers, strerror(-r));
		goto out;
	}
	fctl_buf_puts(&j, "\n  ]}\n");
	if ((r = fctl_evi_add_file(e, "approvals/allowed_signers", &as)) < 0 ||
	    (r = fctl_evi_add_file(e, "approvals/approvals.json", &j)) < 0)
		goto out;
	e->has_approvals = true;
out:
	fctl_buf_release(&j);
	fctl_buf_release(&as);
	return r;
}

void fctl_evi_manifest_approvals(const struct ev *e, struct fctl_buf *m)
{
	fctl_buf_puts(m, e->has_approvals ? "  \"approvals\": \"approvals/approvals.json\",\n"
					  : "  \"approvals\": null,\n");
}
