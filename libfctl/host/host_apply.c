// SPDX-License-Identifier: MIT
/* The host transaction: a profile applied on this host, gated by approvals, audited,
 * optionally confirmed, its MKA ports started (fctl/host_apply.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fctl/host_apply.h"
#include "fctl/plan.h"
#include "fctl/profile.h"
#include "fctl/util.h"
#include "host_int.h"

/* FCTL_TEST_STOP_AFTER_APPLY=FILE (builds with FCTL_TEST_HOOKS only, docs/apply.md): after
 * the engine returned, the pid goes to FILE and the process stops itself, for a test to
 * kill -9 it there. */
static void test_stop_after_apply(void)
{
#ifdef FCTL_TEST_HOOKS
	const char *f = getenv("FCTL_TEST_STOP_AFTER_APPLY");
	char line[32];
	int fd, n;

	if (!f || !*f || (fd = open(f, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0)
		return;
	n = snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	if (write(fd, line, (size_t)n) != n) {
		/* the test waits for the file: it sees the short write */
	}
	close(fd);
	raise(SIGSTOP);
#endif
}

static bool bytes_of(const struct fctl_profile *p, const struct fctl_buf *b)
{
	unsigned char md[32];

	return EVP_Digest(b->data ? b->data : "", b->len, md, NULL, EVP_sha256(), NULL) == 1 &&
	       CRYPTO_memcmp(md, p->sha256, 32) == 0;
}

int fctl_host_approvals_gate(const char *conf, const struct fctl_profile *p,
			     struct fctl_approvals *out, char *why, size_t len)
{
	struct fctl_approval_policy pol;
	struct fctl_buf b = { 0 }, t = { 0 };
	char err[512];
	int r = fctl_approval_policy_load(conf, &pol, err, sizeof(err)), rc;

	*out = (struct fctl_approvals){ 0 };
	if (r < 0) {
		snprintf(why, len, "the approval policy cannot be read: %s", err);
		return FCTL_HOST_USAGE;
	}
	if (r == 0)
		return FCTL_HOST_OK;
	r = fctl_file_read(p->file, &b);
	if (r < 0) {
		snprintf(why, len, "%s: %s", p->file, strerror(-r));
		fctl_buf_release(&b);
		return FCTL_HOST_USAGE;
	}
	/* the bytes checked are the bytes parsed: a file rewritten in between is refused */
	if (!bytes_of(p, &b)) {
		snprintf(why, len, "%s changed while it was read: its approvals cannot be checked",
			 p->file);
		fctl_buf_release(&b);
		return FCTL_HOST_INVALID;
	}
	r = fctl_approvals_check(p->file, b.data, b.len, &pol, time(NULL), out, err, sizeof(err));
	fctl_buf_release(&b);
	if (r < 0) {
		snprintf(why, len, "%s (the approval policy %s)", err, pol.conf);
		return FCTL_HOST_USAGE;
	}
	rc = FCTL_HOST_OK;
	if (!out->met) {
		fctl_approvals_text(out, &t);
		snprintf(why, len, "%s version %" PRIu64 " (%s) is %s", p->name ? p->name : "?",
			 p->version, p->file, t.data ? t.data : "NOT approved");
		rc = FCTL_HOST_INVALID;
	}
	fctl_buf_release(&t);
	return rc;
}

void fctl_host_approvals_note(const char *conf, const struct fctl_profile *p, const char *cmd,
			      bool dry_run, bool quiet, struct fctl_host_msgs *m)
{
	struct fctl_approvals a;
	char why[2048];
	int rc = fctl_host_approvals_gate(conf, p, &a, why, sizeof(why));

	if (rc != FCTL_HOST_OK)
		fctl_hosti_say(m, "%s: %s%s", cmd, why,
			       dry_run ? ": an apply of it would be refused" : "");
	else if (a.required && !quiet) {
		struct fctl_buf t = { 0 };

		fctl_approvals_text(&a, &t);
		fctl_hosti_say(m, "%s: %s version %" PRIu64 " is %s", cmd, p->name ? p->name : "?",
			       p->version, t.data ? t.data : "");
		fctl_buf_release(&t);
	}
	fctl_approvals_release(&a);
}

/* Approvals (docs/approvals.md): with a policy on this host, a version without the
 * approvals it requires is refused before anything is read from the kernel: said, audited
 * as refused (who signed, who is missing, which allowed_signers file), the audit log
 * closed, nothing changed. A dry run only says what an apply would meet. */
static int approvals_gate(struct fctl_host_apply *h)
{
	const struct fctl_host_apply_opts *o = h->o;
	char why[2048], host[64] = "";
	int rc;

	if (h->eo->dry_run) {
		fctl_host_approvals_note(o->approvals_conf, h->p, o->cmd, true, o->quiet, &h->msgs);
		return FCTL_HOST_OK;
	}
	rc = fctl_host_approvals_gate(o->approvals_conf, h->p, &h->approvals, why, sizeof(why));
	if (rc == FCTL_HOST_OK)
		return rc; /* the apply's record names them */
	fctl_hosti_say(&h->msgs, "%s: refused: %s; nothing was changed", o->cmd, why);
	fctl_engine_host_name(h->eo, host, sizeof(host));
	{
		struct fctl_host_event ev = { .action = o->cmd, .result = "refused", .host = host,
					      .change_id = o->change_id, .p = h->p, .error = why };

		if (h->audit && fctl_host_audit_record(h->audit, &ev, &h->msgs) < 0)
			rc = FCTL_HOST_USAGE;
	}
	fctl_host_audit_close(h->audit, &h->msgs);
	h->audit = NULL;
	fctl_approvals_release(&h->approvals);
	return rc;
}

int fctl_host_apply_open(struct fctl_host_apply *h, const struct fctl_host_apply_opts *o,
			 struct fctl_engine_opts *eo, const struct fctl_profile *p)
{
	int rc;

	*h = (struct fctl_host_apply){ .o = o, .eo = eo, .p = p, .life_fd = -1 };
	if (!eo->dry_run && fctl_host_audit_open(o->audit_log, o->actor, &h->audit, &h->msgs) < 0) {
		fctl_hosti_say(&h->msgs, "%s: refused: the audit log cannot be written, nothing was "
			       "changed (--audit-log PATH or FCTL_AUDIT_LOG to use another)", o->cmd);
		return FCTL_HOST_USAGE;
	}
	rc = approvals_gate(h); /* refused: audited, closed */
	if (rc != FCTL_HOST_OK)
		return rc;
	/* before the apply: the deadline's owner, should this process die at any point */
	if (eo->confirm_seconds) {
		int r = fctl_host_confirm_watch(eo, o->self_exe, o->audit_log, o->change_id,
						&h->life_fd);

		if (r < 0) {
			fctl_hosti_say(&h->msgs, "apply: refused: the confirmation watchdog did not "
				       "start (%s); nothing was changed", strerror(-r));
			fctl_host_audit_close(h->audit, &h->msgs);
			h->audit = NULL;
			return FCTL_HOST_USAGE;
		}
	}
	return -1;
}

void fctl_host_apply_run(struct fctl_host_apply *h)
{
	const struct fctl_apply_result *res = &h->res;
	bool dry = h->eo->dry_run;

	h->r = fctl_engine_apply(h->p, h->eo, &h->res);
	h->ran = true;
	test_stop_after_apply();
	h->refused = h->r < 0 && res->refused;
	if (h->refused)
		h->result = "refused";
	else if (h->r == 0 && res->withheld)
		h->result = "withheld";
	else if (h->r == 0)
		h->result = res->plan && res->plan->n_ops && !dry ? "applied"
			    : dry				  ? "planned"
								  : "unchanged";
	else
		h->result = res->rolled_back && res->restored_exactly ? "rolled-back" : "failed";
}

int fctl_host_apply_finish(struct fctl_host_apply *h, int rc)
{
	const struct fctl_host_apply_opts *o = h->o;
	bool dry = h->eo->dry_run;

	if (h->refused) {
		fctl_host_apply_audit(h->audit, o->cmd, o->change_id, h->eo, h->p, &h->res,
				      &h->approvals, "refused", &rc, &h->msgs);
		goto out;
	}
	if (h->r >= 0) {
		/* the VLAN devices of MKA ports exist now: their wpa_supplicants next */
		if (!dry) {
			rc = fctl_host_mka_up(h->p, h->res.host, h->eo->netns, h->eo->keymgr_path,
					      o->quiet, &h->msgs);
			/* the record names the CAKs in use by their check values, as the SAKs */
			fctl_host_mka_kcvs(h->p, h->res.host, &h->res);
		}
		if (rc != FCTL_HOST_OK && !dry)
			h->result = "failed";
		rc = fctl_host_withheld(&h->res, rc, &h->msgs);
	}
	if (!dry)
		fctl_host_apply_audit(h->audit, o->cmd, o->change_id, h->eo, h->p, &h->res,
				      &h->approvals, h->result, &rc, &h->msgs);
out:
	if (fctl_host_audit_close(h->audit, &h->msgs) < 0 && rc == FCTL_HOST_OK)
		rc = FCTL_HOST_USAGE;
	h->audit = NULL;
	return rc;
}

void fctl_host_apply_release(struct fctl_host_apply *h)
{
	if (h->audit)
		fctl_audit_close(h->audit);
	h->audit = NULL;
	if (h->life_fd >= 0)
		close(h->life_fd); /* the watchdog now needs nothing of this process */
	h->life_fd = -1;
	if (h->ran)
		fctl_apply_result_release(&h->res);
	fctl_approvals_release(&h->approvals);
	fctl_host_msgs_release(&h->msgs);
}
