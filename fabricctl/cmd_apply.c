// SPDX-License-Identifier: MIT
/* fabricctl apply: a profile (or a saved plan) applied on this host through the host
 * transaction (fctl/host_apply.h), and what it says printed; the apply that rollback makes
 * of a stored version */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "fctl/approvals.h"
#include "fctl/audit.h"
#include "fctl/host_apply.h"
#include "fctl/plan.h"
#include "host.h"

/* FCTL_TEST_SWAP_PROFILE=SRC (builds with FCTL_TEST_HOOKS only, docs/apply.md): after
 * the desired-state cache read the profile's bytes, SRC's bytes are written over the
 * profile file, before it is loaded: a file rewritten between the two reads. */
static void test_swap_profile(const char *file)
{
#ifdef FCTL_TEST_HOOKS
	const char *src = getenv("FCTL_TEST_SWAP_PROFILE");
	struct fctl_buf b = { 0 };
	FILE *o;

	if (src && *src && fctl_file_read(src, &b) == 0 && (o = fopen(file, "w"))) {
		if (fwrite(b.data, 1, b.len, o) != b.len)
			cli_err("FCTL_TEST_SWAP_PROFILE: short write to %s", file);
		fclose(o);
	}
	fctl_buf_release(&b);
#else
	(void)file;
#endif
}

/* What apply and rollback print of the engine's result: the findings, stdout (JSON or
 * text), the failure lines. Returns the exit code so far. */
static int say_result(const char *cmd, struct cli_host *c, const struct fctl_profile *p,
		      struct fctl_host_apply *h)
{
	const struct fctl_apply_result *res = &h->res;
	struct fctl_buf out = { 0 };
	int r = h->r, rc;

	if (!c->json)
		cli_findings_text(&res->findings);
	if (h->refused) {
		/* apply --plan: a saved plan that no longer holds is a check of the input that
		 * failed (exit 1); anything else refused is the environment's (exit 2) */
		if (r == -ESTALE)
			cli_err("%s: %s", cmd, res->error);
		rc = r == -ESTALE ? EXIT_INVALID : cli_env_error(cmd, r, res->error);
		if (c->json) {
			cli_apply_json(&out, c, p, res, "refused");
			cli_write(stdout, &out);
		}
		fctl_buf_release(&out);
		return rc;
	}
	if (c->json) {
		cli_apply_json(&out, c, p, res, h->result);
	} else if (!c->quiet) {
		if (res->recovered)
			fctl_buf_printf(&out, "recovered: an interrupted apply was rolled back first\n");
		if (res->plan && res->plan->n_ops)
			fctl_plan_to_text(res->plan, &out, cli_color(stdout));
		if (r == 0 && c->eo.dry_run)
			fctl_buf_printf(&out, "dry run: nothing changed\n");
		else if (r == 0 && (!res->plan || !res->plan->n_ops))
			fctl_buf_printf(&out,
					"host %s already matches %s version %" PRIu64
					": no changes, %" PRIu64 " netlink writes\n",
					res->host, p->name, p->version, res->writes);
		else if (r == 0)
			fctl_buf_printf(&out,
					"applied %s version %" PRIu64 " on %s: %zu operations, %" PRIu64
					" netlink writes, %" PRIu64 " round trips, %.3f s\n",
					p->name, p->version, res->host, res->ops_done, res->writes,
					res->round_trips, res->seconds);
	}
	cli_write(stdout, &out);
	fctl_buf_release(&out);
	if (r < 0) {
		cli_err("%s failed on %s: %s", cmd, res->host, res->error);
		if (res->rolled_back && res->restored_exactly)
			cli_err("rolled back: %s is exactly as it was before", res->host);
		else
			cli_err("ROLLBACK INCOMPLETE on %s: run 'fabricctl recover' and inspect "
				"with 'fabricctl show'",
				res->host);
		return EXIT_FAILED;
	}
	if (res->error[0])
		cli_err("warning: %s", res->error);
	/* --dry-run --detailed-exitcode: plan's exit, 0 no changes, 4 changes, 5 disruptive */
	return c->eo.dry_run && res->plan ? cli_plan_exit(c->detailed, res->plan->n_ops,
			fctl_plan_count_disruptive(res->plan)) : EXIT_OK;
}

/* The host transaction (fctl/host_apply.h) run and printed: what it says on stderr in its
 * order, the result between its engine and its MKA start-up and record. */
int cli_apply_profile(const char *cmd, struct cli_host *c, struct fctl_profile *p)
{
	const struct fctl_host_apply_opts o = {
		.cmd = cmd, .audit_log = c->audit_log, .change_id = c->change_id,
		.approvals_conf = cli_approvals_conf(), .actor = cli_audit_actor(),
		.self_exe = "/proc/self/exe", .quiet = c->quiet || c->json,
	};
	struct fctl_host_apply h;
	int rc;

	if (c->eo.dry_run && c->eo.confirm_seconds) {
		cli_err("%s: --confirm with --dry-run: a plan has nothing to confirm", cmd);
		return EXIT_USAGE;
	}
	/* apply --plan FILE: this host, these bytes; the engine checks the rest under the lock */
	if (c->plan && (rc = cli_saved_plan_check(c, p)) != EXIT_OK)
		return rc;
	rc = fctl_host_apply_open(&h, &o, &c->eo, p);
	cli_say(&h.msgs);
	if (rc >= 0) {
		fctl_host_apply_release(&h);
		fctl_approvals_release(&c->approvals);
		return rc;
	}
	if (!c->json && !c->quiet && isatty(fileno(stderr)))
		c->eo.progress = cli_progress;
	fctl_host_apply_run(&h);
	rc = say_result(cmd, c, p, &h);
	rc = fctl_host_apply_finish(&h, rc);
	cli_say(&h.msgs);
	if (h.r == 0 && h.res.confirm_pending && !c->quiet && !c->json)
		cli_confirm_note(&c->eo);
	fctl_host_apply_release(&h); /* the watchdog now needs nothing of this process */
	fctl_approvals_release(&c->approvals);
	return rc;
}

/* Whether profile p was parsed from exactly these bytes (its sha256 is of its file's). */
static bool same_bytes(const struct fctl_profile *p, const struct fctl_buf *b)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	return EVP_Digest(b->data, b->len, md, &n, EVP_sha256(), NULL) == 1 &&
	       n == sizeof(p->sha256) && CRYPTO_memcmp(md, p->sha256, n) == 0;
}

/* An apply of the bytes applied (or stored) last for this host: the desired-state cache
 * (docs/apply.md "Unchanged re-applies") stands for the profile's load, validation and
 * render; the engine still reads the live state, plans, repairs drift and the record is
 * audited as always. Any other apply loads the profile and, when it succeeded, stores
 * its state. Returns the exit code, or -1 when the caller is to load the profile. */
static int apply_cached(struct cli_host *c, const char *file)
{
	struct fctl_host_state *want = NULL;
	struct fctl_profile *p = NULL;
	struct fctl_buf bytes = { 0 };
	int r, rc;

	if (c->eo.dry_run || fctl_file_read(file, &bytes) < 0) {
		fctl_buf_release(&bytes);
		return -1;
	}
	test_swap_profile(file);
	r = fctl_engine_desired_load(&c->eo, file, (const unsigned char *)bytes.data, bytes.len,
				     &p, &want);
	c->desired_cache = r == 1 ? "hit" : r == 0 ? "miss" : "ignored";
	if (r != 1) {
		rc = cli_load_profile(file, &p, true, c->json);
		if (rc != EXIT_OK) {
			fctl_buf_release(&bytes);
			return rc;
		}
	}
	c->eo.desired = want;
	rc = cli_apply_profile("apply", c, p);
	/* stored only when the profile loaded is the bytes the entry is keyed by: a file
	 * rewritten between the two reads must not give those bytes this state */
	if (r != 1 && rc == EXIT_OK && same_bytes(p, &bytes))
		fctl_engine_desired_store(&c->eo, file, (const unsigned char *)bytes.data,
					  bytes.len, p); /* a failure only costs the next load */
	c->eo.desired = NULL;
	fctl_host_state_free(want);
	fctl_profile_free(p);
	fctl_buf_release(&bytes);
	return rc;
}

int cmd_apply(int argc, char **argv)
{
	int remote = cmd_fabric_dispatch("apply", argc, argv); /* --fabric, --target */

	if (remote >= 0)
		return remote;

	char saved[1024];
	const char *file;
	struct cli_host c;
	int rc = cli_host_parse("apply", argc, argv, &c, NULL);

	if (rc >= 0)
		return rc;
	if (c.plan && optind == argc) {
		/* apply --plan FILE: the profile the saved plan was made from */
		rc = cli_saved_plan_profile(c.plan, saved, sizeof(saved));
		if (rc != EXIT_OK)
			return rc;
		file = saved;
	} else if (optind + 1 == argc) {
		file = argv[optind];
	} else {
		cli_err("apply: expected exactly one PROFILE");
		return EXIT_USAGE;
	}
	return cli_apply_file(&c, file);
}

int cli_apply_file(struct cli_host *c, const char *file)
{
	struct fctl_profile *p = NULL;
	int rc = cli_need_regular("apply", file);

	if (rc != EXIT_OK)
		return rc;
	rc = apply_cached(c, file);
	if (rc >= 0)
		return rc;
	rc = cli_load_profile(file, &p, true, c->json);
	if (rc != EXIT_OK)
		return rc;
	rc = cli_apply_profile("apply", c, p);
	fctl_profile_free(p);
	return rc;
}
