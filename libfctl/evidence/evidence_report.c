// SPDX-License-Identifier: MIT
/* The auditor's report without a bundle: the log verified, the slice read, the page made. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evidence_html_int.h"

struct slice {
	const struct fctl_evidence_opts *o;
	char since[32], until[32];
	struct fctl_buf lines; /* the records of the window and/or change, one a line */
	uint64_t records;
};

static int pick(void *ctx, const char *line, size_t len)
{
	struct slice *s = ctx;
	char *time = NULL, *change = NULL;
	bool in = true;

	s->records++;
	fctl_audit_field(line, len, "time", &time);
	fctl_audit_field(line, len, "change", &change);
	if (s->since[0] && (!time || strcmp(time, s->since) < 0))
		in = false;
	if (s->until[0] && (!time || strcmp(time, s->until) > 0))
		in = false;
	if (s->o->change_id && (!change || strcmp(change, s->o->change_id) != 0))
		in = false;
	if (in) {
		fctl_buf_append(&s->lines, line, len);
		fctl_buf_putc(&s->lines, '\n');
	}
	free(time);
	free(change);
	return s->lines.oom ? -ENOMEM : 0;
}

int fctl_evidence_report(const struct fctl_evidence_opts *o, struct fctl_buf *out, char *err,
			 size_t errlen)
{
	struct slice s = { .o = o };
	struct fctl_audit_report rep = { 0 };
	struct fctl_buf cp = { 0 };
	char *cps = NULL, *pub = NULL;
	struct fctl_evidence_file files[2] = { { 0 } };
	uint64_t cpsize = 0;
	int r;

	if ((o->since && fctl_audit_parse_time(o->since, s.since) < 0) ||
	    (o->until && fctl_audit_parse_time(o->until, s.until) < 0)) {
		snprintf(err, errlen, "times are 2024-05-01, 2024-05-01T12:00:00Z or @EPOCH");
		return -EINVAL;
	}
	if (o->until && !strchr(o->until, 'T') && o->until[0] != '@')
		memcpy(s.until + 11, "23:59:59.999999Z", 17);
	if (asprintf(&cps, "%s.checkpoints", o->log_path) < 0)
		cps = NULL;
	pub = o->pubkey_path ? fctl_strdup(o->pubkey_path) : fctl_audit_beside(o->log_path, "audit.pub");
	if (!cps || !pub) {
		r = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	r = fctl_audit_verify(o->log_path, o->checkpoint_path ? o->checkpoint_path : cps, pub, &rep);
	if (r < 0 || rep.n_errors) {
		size_t k = fctl_audit_report_first_error(&rep);

		snprintf(err, errlen, "the audit log does not verify: %s",
			 r < 0 ? strerror(-r) : k < rep.n ? rep.f[k].msg : "see 'fabricctl audit verify'");
		r = r < 0 ? r : k < rep.n && rep.f[k].kind == FCTL_AUDIT_IO ? -EIO : -EBADMSG;
		goto out;
	}
	if ((r = fctl_audit_read(o->log_path, pick, &s)) < 0 ||
	    (r = fctl_audit_latest_checkpoint(o->checkpoint_path ? o->checkpoint_path : cps, &cp,
					      &cpsize)) < 0) {
		snprintf(err, errlen, "cannot read the audit log or its checkpoint: %s", strerror(-r));
		goto out;
	}
	if (!s.lines.len && !o->allow_empty) {
		snprintf(err, errlen, "no record of the log is selected%s", FCTL_EVIDENCE_EMPTY_HINT);
		r = -ENODATA;
		goto out;
	}
	files[0] = (struct fctl_evidence_file){ "audit/checkpoint.txt", cp.data ? cp.data : "",
						cp.len };
	files[1] = (struct fctl_evidence_file){ "audit/slice.jsonl",
						s.lines.data ? s.lines.data : "", s.lines.len };
	{
		struct fctl_evidence_html_in in = {
			.o = o, .files = files, .n_files = 2, .since = s.since, .until = s.until,
			.log_records = s.records, .log_files = rep.files,
		};

		r = fctl_evidence_html(&in, out);
		if (r < 0)
			snprintf(err, errlen, "out of memory");
	}
out:
	fctl_audit_report_release(&rep);
	fctl_buf_release(&cp);
	fctl_buf_release(&s.lines);
	free(cps);
	free(pub);
	return r;
}
