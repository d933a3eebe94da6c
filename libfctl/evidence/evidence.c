// SPDX-License-Identifier: MIT
/* Evidence bundles: the audit slice, statements, key metadata, profiles, all signed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "fctl/audit.h"
#include "fctl/evidence.h"
#include "evidence_int.h"
#include "evidence_html_int.h"

#define HISTORY_DIR "/var/lib/fabricctl/history"

int fctl_evi_fail(struct ev *e, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->err, e->errlen, fmt, ap);
	va_end(ap);
	return r;
}

void fctl_evi_sha256_hex(const void *p, size_t n, char out[65])
{
	uint8_t h[32];
	unsigned int hl = 32;

	if (EVP_Digest(p, n, h, &hl, EVP_sha256(), NULL) != 1)
		abort();
	fctl_format_hex(h, 32, out);
}

int fctl_evi_add_file(struct ev *e, const char *name, struct fctl_buf *data)
{
	struct fctl_evidence_file *f;

	if (data->oom)
		return fctl_evi_fail(e, -ENOMEM, "out of memory");
	f = fctl_array_grow(&e->f, &e->nf, &e->capf, sizeof(*e->f));
	if (!f || !(f->name = fctl_strdup(name)))
		return fctl_evi_fail(e, -ENOMEM, "out of memory");
	f->len = data->len;
	f->data = data->len ? fctl_buf_steal(data) : fctl_strdup("");
	return f->data ? 0 : fctl_evi_fail(e, -ENOMEM, "out of memory");
}

static int add_text(struct ev *e, const char *name, const char *text)
{
	struct fctl_buf b = { 0 };

	fctl_buf_puts(&b, text);
	return fctl_evi_add_file(e, name, &b);
}

/* ["aa","bb"] of hex strings into out[n][width + 1] */
size_t fctl_evi_hex_list(const char *line, size_t len, const char *key, char *out, size_t width)
{
	const char *v;
	size_t vl, n = 0;

	if (fctl_audit_field_raw(line, len, key, &v, &vl) < 0)
		return 0;
	for (size_t i = 0; i < vl && n < FCTL_AUDIT_MAX_KEYS; i++) {
		size_t k = 0;

		if (v[i] != '"')
			continue;
		for (i++; i < vl && v[i] != '"'; i++, k++)
			if (k < width)
				out[n * (width + 1) + k] = v[i];
		out[n * (width + 1) + (k < width ? k : width)] = '\0';
		n++;
	}
	return n;
}

static int collect(void *ctx, const char *line, size_t len)
{
	struct ev *e = ctx;
	struct rec *r = fctl_array_grow(&e->r, &e->nr, &e->capr, sizeof(*e->r));
	char *seq = NULL, *ver = NULL;
	const char *pv;
	size_t pl;

	if (!r || !(r->line = malloc(len + 1)))
		return -ENOMEM;
	memcpy(r->line, line, len);
	r->line[len] = '\0';
	r->len = len;
	fctl_audit_field(line, len, "seq", &seq);
	fctl_parse_u64(seq ? seq : "0", &r->seq);
	free(seq);
	fctl_audit_field(line, len, "time", &r->time);
	fctl_audit_field(line, len, "action", &r->action);
	fctl_audit_field(line, len, "host", &r->host);
	fctl_audit_field(line, len, "change", &r->change);
	fctl_audit_field(line, len, "result", &r->result);
	fctl_audit_field(line, len, "key_state", &r->key_state);
	fctl_audit_field(line, len, "detail", &r->detail);
	if (fctl_audit_field_raw(line, len, "profile", &pv, &pl) == 0) {
		r->has_profile = true;
		fctl_audit_field(pv, pl, "name", &r->pname);
		fctl_audit_field(pv, pl, "sha256", &r->psha);
		if (fctl_audit_field(pv, pl, "version", &ver) == 0)
			fctl_parse_u64(ver, &r->pver);
		free(ver);
	}
	r->nk = fctl_evi_hex_list(line, len, "key_ids", &r->keyids[0][0], FCTL_AUDIT_KEYID_LEN);
	r->nkcv = fctl_evi_hex_list(line, len, "kcv", &r->kcvs[0][0], FCTL_AUDIT_KCV_LEN);
	r->manual = fctl_audit_field_raw(line, len, "manual", &pv, &pl) == 0;
	r->in_slice = true;
	if (e->since[0] && (!r->time || strcmp(r->time, e->since) < 0))
		r->in_slice = false;
	if (e->until[0] && (!r->time || strcmp(r->time, e->until) > 0))
		r->in_slice = false;
	if (e->o->change_id && (!r->change || strcmp(r->change, e->o->change_id) != 0))
		r->in_slice = false;
	return 0;
}

static void rec_release(struct rec *r)
{
	free(r->line);
	free(r->time);
	free(r->action);
	free(r->host);
	free(r->change);
	free(r->result);
	free(r->key_state);
	free(r->detail);
	free(r->pname);
	free(r->psha);
}

/* safe file name part */
static void slug(const char *s, char *out, size_t len)
{
	size_t k = 0;

	for (; s && *s && k + 1 < len; s++)
		out[k++] = (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
					   (*s >= '0' && *s <= '9') || *s == '-' || *s == '_' ||
					   *s == '.'
				   ? *s
				   : '_';
	out[k] = '\0';
	if (out[0] == '.')
		out[0] = '_'; /* never a dotfile */
	if (!k)
		snprintf(out, len, "unnamed");
}

/* Looks for a file with this digest: the history, then the --profile files. */
static int find_profile(struct ev *e, struct prof *p)
{
	const char *hist = e->o->history_dir ? e->o->history_dir : HISTORY_DIR;
	DIR *d = opendir(hist);
	struct dirent *de;
	char **cands = NULL;
	size_t nc = 0, capc = 0;
	int r = 0;

	/* sorted candidates, so the choice never depends on directory order */
	while (d && (de = readdir(d))) {
		size_t l = strlen(de->d_name);
		char **slot;

		if (l < 6 || strcmp(de->d_name + l - 5, ".yaml") != 0)
			continue;
		slot = fctl_array_grow(&cands, &nc, &capc, sizeof(*cands));
		if (!slot || asprintf(slot, "%s/%s", hist, de->d_name) < 0) {
			r = -ENOMEM;
			break;
		}
	}
	if (d)
		closedir(d);
	for (size_t i = 0; r == 0 && i < e->o->n_profiles; i++) {
		char **slot = fctl_array_grow(&cands, &nc, &capc, sizeof(*cands));

		if (!slot || !(*slot = fctl_strdup(e->o->profiles[i])))
			r = -ENOMEM;
	}
	for (size_t i = 0; r == 0 && i < nc; i++) {
		struct fctl_buf b = { 0 };
		char hex[65];

		if (fctl_file_read(cands[i], &b) < 0) {
			fctl_buf_release(&b);
			continue;
		}
		fctl_evi_sha256_hex(b.data ? b.data : "", b.len, hex);
		if (strcmp(hex, p->sha) == 0) {
			char nm[160], file[256], **src;

			/* every copy: each keeps the signatures of its apply beside it */
			src = fctl_array_grow(&p->srcs, &p->nsrc, &p->capsrc, sizeof(*p->srcs));
			if (!src || !(*src = fctl_strdup(cands[i])))
				r = -ENOMEM;
			if (!p->file) {
				slug(p->name, nm, sizeof(nm));
				snprintf(file, sizeof(file), "profiles/%s-v%" PRIu64 ".yaml", nm,
					 p->version);
				p->file = fctl_strdup(file);
				p->data = b;
				continue;
			}
		}
		fctl_buf_release(&b);
	}
	for (size_t i = 0; i < nc; i++)
		free(cands[i]);
	free(cands);
	return r;
}

static struct prof *profile_of(struct ev *e, const struct rec *r)
{
	for (size_t i = 0; i < e->np; i++)
		if (strcmp(e->p[i].sha, r->psha) == 0)
			return &e->p[i];
	return NULL;
}

static void json_kv(struct fctl_buf *b, const char *key, const char *v, bool comma)
{
	fctl_buf_printf(b, "%s\"%s\":", comma ? "," : "", key);
	fctl_buf_json_str(b, v);
}

static void record_subject(struct fctl_buf *b, const struct rec *r)
{
	char hex[65];

	fctl_evi_sha256_hex(r->line, r->len, hex);
	fctl_buf_printf(b, "{\"name\":\"audit/slice.jsonl#seq=%" PRIu64
			   "\",\"digest\":{\"sha256\":\"%s\"}}",
			r->seq, hex);
}

static void common_predicate(struct fctl_buf *b, const struct rec *r, bool first)
{
	json_kv(b, "action", r->action, !first);
	json_kv(b, "result", r->result, true);
	json_kv(b, "time", r->time, true);
	json_kv(b, "host", r->host, true);
	json_kv(b, "change", r->change, true);
	/* the record itself is the subject audit/slice.jsonl#seq=N, bound by its digest */
	fctl_buf_printf(b, ",\"audit_seq\":%" PRIu64, r->seq);
}

/* The in-toto v1 statement of record r into b: true, or false when r has none. */
static bool statement(struct ev *e, const struct rec *r, struct fctl_buf *b)
{
	if (!r->in_slice || !r->action || r->manual) /* the signers attest the tool's records */
		return false;
	fctl_buf_puts(b, "{\"_type\":\"https://in-toto.io/Statement/v1\",\"subject\":[");
	if (r->has_profile && r->psha &&
	    (!strcmp(r->action, "apply") || !strcmp(r->action, "rollback") ||
	     !strcmp(r->action, "recover"))) {
		const struct prof *p = profile_of(e, r);

		if (p && p->file) {
			fctl_buf_printf(b, "{\"name\":\"%s\",\"digest\":{\"sha256\":\"%s\"}},",
					p->file, r->psha);
		} else {
			fctl_buf_puts(b, "{\"name\":");
			{
				char pn[200];

				snprintf(pn, sizeof(pn), "profile:%s@v%" PRIu64,
					 r->pname ? r->pname : "?", r->pver);
				fctl_buf_json_str(b, pn);
			}
			fctl_buf_printf(b, ",\"digest\":{\"sha256\":\"%s\"}},", r->psha);
		}
		record_subject(b, r);
		fctl_buf_puts(b, "],\"predicateType\":\"https://fabricctl.dev/attestation/"
				  "profile-apply/v1\",\"predicate\":{");
		common_predicate(b, r, true);
		fctl_buf_puts(b, ",\"profile\":{");
		json_kv(b, "name", r->pname, false);
		fctl_buf_printf(b, ",\"version\":%" PRIu64 ",\"sha256\":\"%s\"}", r->pver,
				r->psha);
		fctl_buf_puts(b, "}}\n");
	} else if (!strncmp(r->action, "key-", 4)) {
		record_subject(b, r);
		fctl_buf_puts(b, "],\"predicateType\":\"https://fabricctl.dev/attestation/"
				  "key-lifecycle/v1\",\"predicate\":{");
		common_predicate(b, r, true);
		json_kv(b, "key_state", r->key_state, true);
		fctl_buf_puts(b, ",\"key_ids\":[");
		for (size_t k = 0; k < r->nk; k++)
			fctl_buf_printf(b, "%s\"%s\"", k ? "," : "", r->keyids[k]);
		fctl_buf_puts(b, "],\"kcv\":[");
		for (size_t k = 0; k < r->nkcv; k++)
			fctl_buf_printf(b, "%s\"%s\"", k ? "," : "", r->kcvs[k]);
		fctl_buf_puts(b, "]}}\n");
	} else if (!strcmp(r->action, "probe") || !strcmp(r->action, "probe-fabric")) {
		/* a probe-fabric record is one link's test: "TEST size=N link=L vlan=V ...: " */
		bool passed = r->result && (!strcmp(r->result, "pass") ||
					    !strcmp(r->result, "passed") ||
					    !strcmp(r->result, "ok"));
		const struct prof *p = r->psha ? profile_of(e, r) : NULL;

		record_subject(b, r);
		fctl_buf_printf(b,
				"],\"predicateType\":\"https://in-toto.io/attestation/"
				"test-result/v0.1\",\"predicate\":{\"result\":\"%s\","
				"\"configuration\":[",
				passed ? "PASSED" : "FAILED");
		if (p && p->file)
			fctl_buf_printf(b, "{\"name\":\"%s\",\"digest\":{\"sha256\":\"%s\"}}",
					p->file, r->psha);
		fctl_buf_printf(b, "],\"%s\":[", passed ? "passedTests" : "failedTests");
		{
			/* the test's name: a probe's detail is "TEST size=N link=L: figures" */
			const char *t = r->detail ? r->detail : r->action, *colon = strstr(t, ": ");
			char *tname = strndup(t, colon ? (size_t)(colon - t) : strlen(t));

			fctl_buf_json_str(b, tname ? tname : t);
			free(tname);
		}
		fctl_buf_printf(b, "],\"%s\":[],\"warnedTests\":[]", passed ? "failedTests"
									    : "passedTests");
		/* the record's own fields apart: "result" above is the predicate's */
		fctl_buf_puts(b, ",\"fabricctl\":{");
		common_predicate(b, r, true);
		json_kv(b, "detail", r->detail, true);
		fctl_buf_puts(b, "}}}\n");
	} else {
		return false;
	}
	return true;
}

/* attestations.intoto.jsonl: each statement in a DSSE envelope signed by every --sign key,
 * one a line, in record order. */
static int statements(struct ev *e)
{
	struct fctl_buf att = { 0 }, b = { 0 };
	int r = 0;

	for (size_t i = 0; i < e->nr; i++) {
		fctl_buf_release(&b);
		if (!statement(e, &e->r[i], &b))
			continue;
		if (b.oom) {
			r = fctl_evi_fail(e, -ENOMEM, "out of memory");
			goto out;
		}
		/* the payload is the statement without its newline */
		r = fctl_evidence_dsse(FCTL_EVIDENCE_INTOTO_TYPE, b.data, b.len - 1, e->o->sign_keys,
				       e->signer_ids, e->o->n_sign_keys, &att, e->err, e->errlen);
		if (r < 0)
			goto out;
		fctl_buf_putc(&att, '\n');
		e->nstmt++;
	}
	r = fctl_evi_add_file(e, FCTL_EVIDENCE_ATTESTATIONS, &att);
out:
	fctl_buf_release(&att);
	fctl_buf_release(&b);
	return r;
}

static int cmp_keyid(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void key_event(struct fctl_buf *b, const struct rec *r, const char *kcv, bool comma)
{
	fctl_buf_printf(b, "%s{\"seq\":%" PRIu64, comma ? "," : "", r->seq);
	json_kv(b, "time", r->time, true);
	json_kv(b, "action", r->action, true);
	json_kv(b, "state", r->key_state, true);
	json_kv(b, "result", r->result, true);
	json_kv(b, "host", r->host, true);
	json_kv(b, "kcv", kcv, true);
	if (r->manual) /* not the tool's: a person's record of what was done elsewhere */
		fctl_buf_puts(b, ",\"manual\":true");
	fctl_buf_putc(b, '}');
}

static int key_metadata(struct ev *e)
{
	const char **ids = NULL;
	size_t nids = 0, capids = 0;
	struct fctl_buf b = { 0 };
	int r;

	for (size_t i = 0; i < e->nr; i++) {
		for (size_t k = 0; e->r[i].in_slice && k < e->r[i].nk; k++) {
			bool seen = false;
			const char **slot;

			for (size_t j = 0; j < nids && !seen; j++)
				seen = !strcmp(ids[j], e->r[i].keyids[k]);
			if (seen)
				continue;
			slot = fctl_array_grow(&ids, &nids, &capids, sizeof(*ids));
			if (!slot) {
				free(ids);
				return fctl_evi_fail(e, -ENOMEM, "out of memory");
			}
			*slot = e->r[i].keyids[k];
		}
	}
	if (nids)
		qsort(ids, nids, sizeof(*ids), cmp_keyid);
	fctl_buf_puts(&b, "{\"note\":\"key ids (first 8 bytes of the key-id hash), key check "
			  "values (3 bytes), states and dates; never key material\",\"keys\":[");
	for (size_t j = 0; j < nids; j++) {
		bool first = true;

		fctl_buf_printf(&b, "%s{\"key_id\":\"%s\",\"events\":[", j ? "," : "", ids[j]);
		for (size_t i = 0; i < e->nr; i++) {
			const struct rec *rc = &e->r[i];

			for (size_t k = 0; rc->in_slice && k < rc->nk; k++) {
				if (strcmp(rc->keyids[k], ids[j]) != 0)
					continue;
				key_event(&b, rc, rc->nkcv == rc->nk ? rc->kcvs[k] : NULL, !first);
				first = false;
			}
		}
		fctl_buf_puts(&b, "]}");
	}
	fctl_buf_puts(&b, "],\"check_values_without_key_id\":[");
	{
		bool first = true;

		for (size_t i = 0; i < e->nr; i++) {
			const struct rec *rc = &e->r[i];

			if (!rc->in_slice || rc->nk || !rc->nkcv)
				continue;
			for (size_t k = 0; k < rc->nkcv; k++) {
				key_event(&b, rc, rc->kcvs[k], !first);
				first = false;
			}
		}
	}
	fctl_buf_puts(&b, "]}\n");
	free(ids);
	r = fctl_evi_add_file(e, "keys/kms-metadata.json", &b);
	fctl_buf_release(&b);
	return r;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int manifest(struct ev *e, size_t nsig, uint64_t cpsize, const char *cproot,
		    struct fctl_buf *m)
{
	const char **hosts = NULL;
	size_t nh = 0, caph = 0, nslice = 0;
	const char *op = e->o->operator_name;
	struct passwd *pw;
	uint64_t first = 0, last = 0;

	if (!op)
		op = (pw = getpwuid(getuid())) ? pw->pw_name : "unknown";
	for (size_t i = 0; i < e->nr; i++) {
		const struct rec *r = &e->r[i];
		bool seen = false;

		if (!r->in_slice)
			continue;
		if (!nslice++)
			first = r->seq;
		last = r->seq;
		if (!r->host)
			continue;
		for (size_t j = 0; j < nh && !seen; j++)
			seen = !strcmp(hosts[j], r->host);
		if (!seen) {
			const char **slot = fctl_array_grow(&hosts, &nh, &caph, sizeof(*hosts));

			if (!slot) {
				free(hosts);
				return fctl_evi_fail(e, -ENOMEM, "out of memory");
			}
			*slot = r->host;
		}
	}
	if (nh)
		qsort(hosts, nh, sizeof(*hosts), cmp_str);
	fctl_buf_printf(m, "{\n  \"bundle\": \"fabricctl-evidence\",\n  \"format\": 6,\n"
			   "  \"tool\": {\"name\": \"fabricctl\", \"version\": ");
	fctl_buf_json_str(m, e->o->tool_version ? e->o->tool_version : "unknown");
	fctl_buf_puts(m, "},\n  \"operator\": ");
	fctl_buf_json_str(m, op);
	fctl_buf_puts(m, ",\n  \"change_id\": ");
	fctl_buf_json_str(m, e->o->change_id);
	fctl_buf_puts(m, ",\n  \"window\": {\"since\": ");
	fctl_buf_json_str(m, e->since[0] ? e->since : NULL);
	fctl_buf_puts(m, ", \"until\": ");
	fctl_buf_json_str(m, e->until[0] ? e->until : NULL);
	fctl_buf_puts(m, "},\n  \"hosts\": [");
	for (size_t j = 0; j < nh; j++) {
		fctl_buf_puts(m, j ? ", " : "");
		fctl_buf_json_str(m, hosts[j]);
	}
	free(hosts);
	fctl_buf_printf(m, "],\n  \"audit\": {\"records\": %zu, \"selected_records\": %zu, "
			   "\"selected_first_seq\": %" PRIu64 ", \"selected_last_seq\": %" PRIu64
			   ", \"slice_records\": %zu, \"slice_first_seq\": %" PRIu64
			   ", \"slice_last_seq\": %" PRIu64 ", \"checkpoint_size\": %" PRIu64
			   ", \"checkpoint_root\": \"%s\", \"origin\": ",
			e->nr, nslice, first, last, e->nwin, e->nwin ? e->r[e->wfirst].seq : 0,
			e->nwin ? e->r[e->wlast].seq : 0, cpsize, cproot);
	fctl_buf_json_str(m, e->origin);
	fctl_buf_printf(m, ", \"proofs\": \"audit/proofs.json\", \"whole_log\": %s},\n",
			e->o->whole_log ? "true" : "false");
	fctl_evi_manifest_pn(e, m);
	fctl_evi_manifest_approvals(e, m);
	fctl_buf_puts(m, "  \"profiles\": [");
	for (size_t j = 0; j < e->np; j++) {
		fctl_buf_puts(m, j ? ",\n    {\"name\": " : "\n    {\"name\": ");
		fctl_buf_json_str(m, e->p[j].name);
		fctl_buf_printf(m, ", \"version\": %" PRIu64 ", \"sha256\": \"%s\", \"file\": ",
				e->p[j].version, e->p[j].sha);
		fctl_buf_json_str(m, e->p[j].file);
		fctl_buf_putc(m, '}');
	}
	fctl_buf_puts(m, e->np ? "\n  ],\n  \"signers\": [" : "],\n  \"signers\": [");
	for (size_t j = 0; j < nsig; j++)
		fctl_buf_printf(m, "%s{\"keyid\": \"%s\", \"public_key\": \"keys/signers/signer-%zu.pub\"}",
				j ? ", " : "", e->signer_ids[j], j + 1);
	/* every signer signs the manifest and each statement: all of them are required */
	fctl_buf_printf(m, "],\n  \"signatures_required\": %zu,\n  \"attestations\": {\"file\": \""
			FCTL_EVIDENCE_ATTESTATIONS "\", \"payload_type\": \"" FCTL_EVIDENCE_INTOTO_TYPE
			"\", \"statements\": %zu},\n  \"files\": [", nsig, e->nstmt);
	for (size_t j = 0; j < e->nf; j++) {
		char hex[65];

		fctl_evi_sha256_hex(e->f[j].data, e->f[j].len, hex);
		fctl_buf_printf(m, "%s\n    {\"name\": ", j ? "," : "");
		fctl_buf_json_str(m, e->f[j].name);
		fctl_buf_printf(m, ", \"size\": %zu, \"sha256\": \"%s\"}", e->f[j].len, hex);
	}
	fctl_buf_puts(m, "\n  ]\n}\n");
	return m->oom ? fctl_evi_fail(e, -ENOMEM, "out of memory") : 0;
}

static int cmp_file(const void *a, const void *b)
{
	const struct fctl_evidence_file *x = a, *y = b;

	return strcmp(x->name, y->name);
}

/* Ed25519 SubjectPublicKeyInfo (DER) = this prefix + the 32-byte key */
static const uint8_t spki_prefix[12] = { 0x30, 0x2a, 0x30, 0x05, 0x06, 0x03,
					 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00 };

/* The checkpoint file (cps) and audit public key (pub) paths, defaulted beside the log, and
 * the time window; both paths are the caller's to free, even on failure. */
static int paths_and_window(struct ev *e, char **cps, char **pub)
{
	const struct fctl_evidence_opts *o = e->o;

	if (!o->n_sign_keys || o->n_sign_keys > 16)
		return fctl_evi_fail(e, -EINVAL, "give one to sixteen --sign keys");
	if (asprintf(cps, "%s.checkpoints", o->log_path) < 0) {
		*cps = NULL;
		return fctl_evi_fail(e, -ENOMEM, "out of memory");
	}
	if (o->pubkey_path) {
		*pub = fctl_strdup(o->pubkey_path);
	} else {
		const char *slash = strrchr(o->log_path, '/');

		if (asprintf(pub, "%.*saudit.pub", slash ? (int)(slash - o->log_path + 1) : 0,
			     o->log_path) < 0)
			*pub = NULL;
	}
	if (!*pub)
		return fctl_evi_fail(e, -ENOMEM, "out of memory");
	if ((o->since && fctl_audit_parse_time(o->since, e->since) < 0) ||
	    (o->until && fctl_audit_parse_time(o->until, e->until) < 0))
		return fctl_evi_fail(e, -EINVAL, "times are 2024-05-01, 2024-05-01T12:00:00Z or @EPOCH");
	if (o->until && !strchr(o->until, 'T') && o->until[0] != '@')
		memcpy(e->until + 11, "23:59:59.999999Z", 17);
	return 0;
}

/* Step 1: the log must verify before anything is said about it; then its records are read,
 * and the latest signed checkpoint (its size and root in *cpsize and cproot) and the audit
 * public key go in. */
static int add_audit_anchor(struct ev *e, const char *cps, const char *pub, uint64_t *cpsize,
			    char cproot[65])
{
	const struct fctl_evidence_opts *o = e->o;
	struct fctl_audit_report rep = { 0 };
	struct fctl_buf b = { 0 };
	int r;

	r = fctl_audit_verify(o->log_path, o->checkpoint_path ? o->checkpoint_path : cps, pub, &rep);
	if (r < 0 || rep.n_errors) {
		size_t k = fctl_audit_report_first_error(&rep);

		/* a log or key that cannot be read is an I/O error, not a log that fails */
		r = fctl_evi_fail(e, r < 0 ? r : k < rep.n && rep.f[k].kind == FCTL_AUDIT_IO ? -EIO : -EBADMSG,
			 "the audit log does not verify: %s",
			 r < 0 ? strerror(-r) : k < rep.n ? rep.f[k].msg : "see 'fabricctl audit verify'");
		goto out;
	}
	r = fctl_audit_read(o->log_path, collect, e);
	if (r < 0) {
		r = fctl_evi_fail(e, r, "cannot read the audit log: %s", strerror(-r));
		goto out;
	}
	r = fctl_audit_latest_checkpoint(o->checkpoint_path ? o->checkpoint_path : cps, &b, cpsize);
	if (r < 0) {
		r = fctl_evi_fail(e, r, "no signed checkpoint to include");
		goto out;
	}
	{
		/* the origin is the first line of the note, the root the third: base64 there, hex
		 * in the manifest (the one encoding people compare: audit verify prints hex) */
		const char *l3 = strchr(b.data, '\n');
		uint8_t root[32];

		snprintf(e->origin, sizeof(e->origin), "%.*s", (int)strcspn(b.data, "\n"), b.data);
		l3 = l3 ? strchr(l3 + 1, '\n') : NULL;
		if (l3 && fctl_audit_b64_decode(l3 + 1, strcspn(l3 + 1, "\n"), root, 32) == 32)
			fctl_format_hex(root, 32, cproot);
	}
	if ((r = fctl_evi_add_file(e, "audit/checkpoint.txt", &b)) < 0)
		goto out;
	fctl_buf_release(&b);
	if ((r = fctl_file_read(pub, &b)) < 0) {
		r = fctl_evi_fail(e, r, "cannot read '%s': %s", pub, strerror(-r));
		goto out;
	}
	r = fctl_evi_add_file(e, "audit/audit.pub", &b);
out:
	fctl_audit_report_release(&rep);
	fctl_buf_release(&b);
	return r;
}

/* audit/proofs.json: each record of the window proven against the checkpoint (its first
 * cpsize records). */
static int add_proofs(struct ev *e, uint64_t cpsize)
{
	const struct fctl_evidence_opts *o = e->o;
	struct fctl_buf b = { 0 };
	uint8_t (*leaves)[32];
	int r;

	if (cpsize == 0 || cpsize > e->nr)
		return fctl_evi_fail(e, -EINVAL, "the checkpoint covers %" PRIu64 " records, the log has %zu",
			    cpsize, e->nr);
	if (!(leaves = malloc(e->nr * sizeof(*leaves))))
		return fctl_evi_fail(e, -ENOMEM, "out of memory");
	for (size_t i = 0; i < e->nr; i++)
		fctl_audit_leaf_hash(e->r[i].line, e->r[i].len, leaves[i]);
	r = fctl_evidence_proofs((const uint8_t(*)[32])leaves, cpsize,
				 e->nwin ? e->r[e->wfirst].seq : 0, e->nwin ? e->r[e->wlast].seq : 0,
				 o->consistency_from, o->n_consistency_from, &b, e->err, e->errlen);
	if (r == 0)
		r = fctl_evi_add_file(e, "audit/proofs.json", &b);
	fctl_buf_release(&b);
	free(leaves);
	return r;
}

/* Step 2: the window (every record from the first to the last one selected, so it is
 * chained), its proofs, the whole log on request; each profile the selection names looked up
 * once. */
static int add_log_and_slice(struct ev *e, uint64_t cpsize)
{
	struct fctl_buf b = { 0 };
	int r;

	if (e->o->whole_log) {
		for (size_t i = 0; i < e->nr; i++) {
			fctl_buf_append(&b, e->r[i].line, e->r[i].len);
			fctl_buf_putc(&b, '\n');
		}
		if ((r = fctl_evi_add_file(e, "audit/log.jsonl", &b)) < 0)
			goto out;
		fctl_buf_release(&b);
	}
	for (size_t i = 0; i < e->nr; i++) {
		if (!e->r[i].in_slice)
			continue;
		if (!e->nwin++)
			e->wfirst = i;
		e->wlast = i;
	}
	e->nwin = e->nwin ? e->wlast - e->wfirst + 1 : 0;
	if (!e->nwin && !e->o->allow_empty) {
		r = fctl_evi_fail(e, -ENODATA, "no record of the log is selected%s", FCTL_EVIDENCE_EMPTY_HINT);
		goto out;
	}
	for (size_t i = e->wfirst; e->nwin && i <= e->wlast; i++) {
		struct rec *rc = &e->r[i];

		fctl_buf_append(&b, rc->line, rc->len);
		fctl_buf_putc(&b, '\n');
		if (!rc->in_slice)
			continue;
		if (rc->has_profile && rc->psha && !profile_of(e, rc)) {
			struct prof *p = fctl_array_grow(&e->p, &e->np, &e->capp, sizeof(*e->p));

			if (!p || !(p->sha = fctl_strdup(rc->psha)) ||
			    !(p->name = fctl_strdup(rc->pname ? rc->pname : "unnamed"))) {
				r = fctl_evi_fail(e, -ENOMEM, "out of memory");
				goto out;
			}
			p->version = rc->pver;
			if ((r = find_profile(e, p)) < 0)
				goto out;
		}
	}
	if ((r = fctl_evi_add_file(e, "audit/slice.jsonl", &b)) < 0)
		goto out;
	r = add_proofs(e, cpsize);
out:
	fctl_buf_release(&b);
	return r;
}

static int add_profiles(struct ev *e)
{
	int r;

	for (size_t i = 0; i < e->np; i++) {
		bool dup = false;

		for (size_t j = 0; j < i && !dup; j++)
			dup = e->p[j].file && e->p[i].file && !strcmp(e->p[j].file, e->p[i].file);
		if (dup) { /* same name and version, other bytes: keep both apart */
			char *f = NULL;

			if (asprintf(&f, "profiles/%.16s-%s", e->p[i].sha, e->p[i].file + 9) < 0)
				return fctl_evi_fail(e, -ENOMEM, "out of memory");
			free(e->p[i].file);
			e->p[i].file = f;
		}
		if (e->p[i].file && (r = fctl_evi_add_file(e, e->p[i].file, &e->p[i].data)) < 0)
			return r;
	}
	return 0;
}

/* Step 3: each signer's public key, its id (the SHA-256 of its DER) in e->signer_ids; the
 * same key given twice is refused. */
static int add_signer_keys(struct ev *e)
{
	const struct fctl_evidence_opts *o = e->o;
	struct fctl_buf b = { 0 };
	int r = 0;

	for (size_t k = 0; k < o->n_sign_keys; k++) {
		uint8_t der[44], sig[64];
		char name[64];

		r = fctl_audit_ed25519_sign(o->sign_keys[k], "", 0, sig, der + 12, e->err,
					    e->errlen);
		if (r < 0)
			goto out;
		memcpy(der, spki_prefix, sizeof(spki_prefix));
		fctl_evi_sha256_hex(der, sizeof(der), e->signer_ids[k]);
		for (size_t j = 0; j < k; j++) {
			if (!strcmp(e->signer_ids[j], e->signer_ids[k])) {
				r = fctl_evi_fail(e, -EINVAL, "--sign '%s' is the same key as '%s'",
					 o->sign_keys[k], o->sign_keys[j]);
				goto out;
			}
		}
		fctl_buf_puts(&b, "-----BEGIN PUBLIC KEY-----\n");
		fctl_audit_b64_encode(der, sizeof(der), &b);
		fctl_buf_puts(&b, "\n-----END PUBLIC KEY-----\n");
		snprintf(name, sizeof(name), "keys/signers/signer-%zu.pub", k + 1);
		if ((r = fctl_evi_add_file(e, name, &b)) < 0)
			goto out;
		fctl_buf_release(&b);
	}
out:
	fctl_buf_release(&b);
	return r;
}

/* SHA256SUMS (sha256sum -c format) over every file so far: all but itself, MANIFEST.json and
 * MANIFEST.dsse.json. A convenience: the signed manifest lists it like any other file. */
static int add_sums(struct ev *e)
{
	struct fctl_buf sums = { 0 };
	int r;

	qsort(e->f, e->nf, sizeof(*e->f), cmp_file);
	for (size_t j = 0; j < e->nf; j++) {
		char hex[65];

		fctl_evi_sha256_hex(e->f[j].data, e->f[j].len, hex);
		fctl_buf_printf(&sums, "%s  %s\n", hex, e->f[j].name);
	}
	r = fctl_evi_add_file(e, "SHA256SUMS", &sums);
	fctl_buf_release(&sums);
	return r;
}

/* Step 4: SHA256SUMS, then MANIFEST.json listing every file (SHA256SUMS too) and its DSSE
 * envelope MANIFEST.dsse.json, signed by every --sign key. */
static int add_signed_manifest(struct ev *e, uint64_t cpsize, const char *cproot)
{
	struct fctl_buf m = { 0 }, env = { 0 };
	int r;

	if ((r = add_sums(e)) < 0)
		goto out;
	qsort(e->f, e->nf, sizeof(*e->f), cmp_file);
	if ((r = manifest(e, e->o->n_sign_keys, cpsize, cproot, &m)) < 0)
		goto out;
	r = fctl_evidence_dsse(FCTL_EVIDENCE_PAYLOAD_TYPE, m.data, m.len, e->o->sign_keys,
			       e->signer_ids, e->o->n_sign_keys, &env, e->err, e->errlen);
	if (r < 0)
		goto out;
	fctl_buf_putc(&env, '\n');
	if ((r = fctl_evi_add_file(e, "MANIFEST.json", &m)) < 0)
		goto out;
	r = fctl_evi_add_file(e, "MANIFEST.dsse.json", &env);
out:
	fctl_buf_release(&m);
	fctl_buf_release(&env);
	return r;
}

/* report.html, from the files so far; the manifest lists it like the rest. It shows the
 * selected records: the window's records of other changes are there for the chain and the
 * proof, so the page is the one `--html` alone makes of the same selection. */
static int add_report(struct ev *e)
{
	struct fctl_buf sel = { 0 }, html = { 0 };
	struct fctl_evidence_file *f = malloc((e->nf ? e->nf : 1) * sizeof(*f));
	int r;

	if (!f)
		return fctl_evi_fail(e, -ENOMEM, "out of memory");
	memcpy(f, e->f, e->nf * sizeof(*f));
	for (size_t i = e->wfirst; e->nwin && i <= e->wlast; i++) {
		if (!e->r[i].in_slice)
			continue;
		fctl_buf_append(&sel, e->r[i].line, e->r[i].len);
		fctl_buf_putc(&sel, '\n');
	}
	for (size_t i = 0; i < e->nf; i++) {
		if (strcmp(f[i].name, "audit/slice.jsonl"))
			continue;
		f[i].data = sel.data ? sel.data : "";
		f[i].len = sel.len;
	}
	{
		struct fctl_evidence_html_in h = { e->o, f, e->nf, e->since, e->until, e->signer_ids,
						   e->o->n_sign_keys, e->nstmt, e->nr, 0 };

		r = sel.oom ? -ENOMEM : fctl_evidence_html(&h, &html);
	}
	free(f);
	fctl_buf_release(&sel);
	if (r < 0) {
		fctl_buf_release(&html);
		return fctl_evi_fail(e, r, "out of memory");
	}
	return fctl_evi_add_file(e, FCTL_EVIDENCE_REPORT, &html);
}

int fctl_evidence_build(const struct fctl_evidence_opts *o, struct fctl_buf *out, char *err,
			size_t errlen)
{
	struct ev e = { .o = o, .err = err, .errlen = errlen };
	char *cps = NULL, *pub = NULL, cproot[65] = "";
	uint64_t cpsize = 0;
	int r;

	if ((r = paths_and_window(&e, &cps, &pub)) < 0 ||
	    (r = add_audit_anchor(&e, cps, pub, &cpsize, cproot)) < 0 ||
	    (r = add_log_and_slice(&e, cpsize)) < 0 || (r = add_profiles(&e)) < 0 ||
	    (r = fctl_evi_add_approvals(&e)) < 0)
		goto out;
	if ((r = add_signer_keys(&e)) < 0 || (r = statements(&e)) < 0 ||
	    (r = key_metadata(&e)) < 0 || (r = fctl_evi_add_mka(&e)) < 0 ||
	    (r = fctl_evi_add_pn(&e)) < 0)
		goto out;
	if ((r = add_text(&e, "VERIFY.md", fctl_evidence_verify_md)) < 0 ||
	    (r = add_text(&e, "verify.sh", fctl_evidence_verify_sh)) < 0)
		goto out;
	if ((r = add_report(&e)) < 0)
		goto out;
	if ((r = add_signed_manifest(&e, cpsize, cproot)) < 0)
		goto out;
	r = fctl_evidence_tar(e.f, e.nf, out);
	if (r < 0)
		fctl_evi_fail(&e, r, "cannot write the tar: %s", strerror(-r));
out:
	for (size_t i = 0; i < e.nr; i++)
		rec_release(&e.r[i]);
	free(e.r);
	for (size_t i = 0; i < e.nf; i++) {
		free(e.f[i].name);
		free(e.f[i].data);
	}
	free(e.f);
	for (size_t i = 0; i < e.np; i++) {
		free(e.p[i].name);
		free(e.p[i].sha);
		free(e.p[i].file);
		fctl_buf_release(&e.p[i].data);
		for (size_t k = 0; k < e.p[i].nsrc; k++)
			free(e.p[i].srcs[k]);
		free(e.p[i].srcs);
	}
	free(e.p);
	free(cps);
	free(pub);
	return r;
}
