// SPDX-License-Identifier: MIT
/* fabricctl plan PROFILE against the live state; saved plans (plan --out, apply --plan). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/audit.h"
#include "fctl/plan.h"
#include "host.h"

void cli_findings_text(const struct fctl_diags *d)
{
	struct fctl_buf b = { 0 };

	if (!d->n)
		return;
	fctl_diags_to_text(d, &b, cli_color(stderr));
	cli_write(stderr, &b);
	fctl_buf_release(&b);
}

/* A saved plan's read error: EXIT_INVALID when the file was read and is not a saved plan
 * (or was edited), EXIT_USAGE when it could not be read. */
static int load_saved(const char *file, struct fctl_saved_plan *sp)
{
	char err[1400];
	int r = fctl_engine_plan_load(file, sp, err, sizeof(err));

	if (r == 0)
		return EXIT_OK;
	cli_err("apply: --plan: %s; nothing was changed", err);
	return r == -EINVAL ? EXIT_INVALID : EXIT_USAGE;
}

int cli_saved_plan_profile(const char *file, char *out, size_t len)
{
	struct fctl_saved_plan sp;
	int rc = load_saved(file, &sp);

	if (rc == EXIT_OK)
		snprintf(out, len, "%s", sp.profile_file);
	return rc;
}

int cli_saved_plan_check(struct cli_host *c, const struct fctl_profile *p)
{
	struct fctl_saved_plan sp;
	char host[64], now[65], then[65];
	const char *netns = c->eo.netns ? c->eo.netns : "";
	int rc = load_saved(c->plan, &sp);

	if (rc != EXIT_OK)
		return rc;
	if (fctl_engine_host_name(&c->eo, host, sizeof(host)) < 0) {
		cli_err("apply: cannot tell which host this is (--host NAME)");
		return EXIT_USAGE;
	}
	if (strcmp(sp.host, host) != 0 || strcmp(sp.netns, netns) != 0) {
		cli_err("apply: the saved plan %s was made for host '%s'%s%s%s, not for '%s'%s%s%s "
			"(--host, --netns); nothing was changed", c->plan, sp.host,
			*sp.netns ? " (netns '" : "", sp.netns, *sp.netns ? "')" : "", host,
			*netns ? " (netns '" : "", netns, *netns ? "')" : "");
		return EXIT_INVALID;
	}
	if (memcmp(sp.profile_sha256, p->sha256, 32) != 0) {
		fctl_format_hex(p->sha256, 32, now);
		fctl_format_hex(sp.profile_sha256, 32, then);
		cli_err("apply: the profile changed since the plan was made: %s is %s version "
			"%" PRIu64 " (SHA-256 %.16s...), the saved plan %s was made from %s version "
			"%" PRIu64 " (SHA-256 %.16s...); nothing was changed: plan --out again",
			p->file, p->name, p->version, now, c->plan, sp.profile_name,
			sp.profile_version, then);
		return EXIT_INVALID;
	}
	c->seal = sp.seal;
	c->eo.expect = &c->seal;
	return EXIT_OK;
}

/* plan --out FILE: the plan, the profile's bytes, this host and what the plan was computed
 * against, for apply --plan FILE. EXIT_OK or EXIT_USAGE after saying why. */
static int save_plan(const struct cli_host *c, const struct fctl_profile *p,
		     const struct fctl_live_plan *lp)
{
	struct fctl_saved_plan sp = { .profile_version = p->version, .seal = lp->seal };
	char abs[PATH_MAX], err[1400];

	if (!realpath(p->file, abs)) {
		cli_err("plan: --out: cannot resolve '%s': %s", p->file, strerror(errno));
		return EXIT_USAGE;
	}
	snprintf(sp.host, sizeof(sp.host), "%s", lp->plan->host);
	snprintf(sp.netns, sizeof(sp.netns), "%s", c->eo.netns ? c->eo.netns : "");
	snprintf(sp.profile_file, sizeof(sp.profile_file), "%s", abs);
	snprintf(sp.profile_name, sizeof(sp.profile_name), "%s", p->name);
	memcpy(sp.profile_sha256, p->sha256, 32);
	sp.ops = lp->plan->n_ops;
	sp.disruptive = fctl_plan_count_disruptive(lp->plan);
	if (fctl_engine_plan_save(c->out, &sp, lp->plan, err, sizeof(err)) < 0) {
		cli_err("plan: --out: %s", err);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* The live plan's output: JSON (the plan object with its findings) or text/Markdown. */
static void plan_output(const struct cli_host *c, const struct fctl_profile *p,
			const struct fctl_live_plan *lp, struct fctl_buf *out)
{
	if (c->json) {
		fctl_plan_to_json(lp->plan, out);
		if (out->len && out->data[out->len - 1] == '}') {
			out->len--;
			fctl_buf_puts(out, ",\"findings\":");
			fctl_diags_findings_json(&lp->findings, out);
			fctl_buf_putc(out, '}');
		}
		fctl_buf_putc(out, '\n');
		return;
	}
	fctl_buf_printf(out, "plan: live state -> profile %s version %" PRIu64 "\n", p->name,
			p->version);
	fctl_plan_to_text(lp->plan, out, cli_color(stdout) && !c->markdown);
	if (c->markdown) {
		struct fctl_buf md = { 0 };

		cli_plan_markdown(out, &md);
		fctl_buf_release(out);
		*out = md;
	}
}

int cli_live_plan_load(const char *cmd, const struct cli_host *c, const char *file,
			 struct fctl_profile **p, struct fctl_live_plan *lp)
{
	char err[768] = "";
	int r, rc = cli_load_profile(file, p, true, c->json);

	if (rc != EXIT_OK)
		return rc;
	if (strcmp(cmd, "plan") == 0) /* what apply would say of its approvals */
		cli_approvals_note(*p, cmd, true, c->quiet || c->json);
	r = fctl_engine_plan(*p, &c->eo, lp, err, sizeof(err));
	if (r < 0)
		return cli_env_error(cmd, r, err);
	if (!c->json)
		cli_findings_text(&lp->findings);
	return EXIT_OK;
}

/* plan PROFILE (live): desired vs live, as the offline plan prints it */
int cmd_plan_live(int argc, char **argv)
{
	struct cli_host c;
	int rc = cli_host_parse("plan", argc, argv, &c, NULL);

	if (rc >= 0)
		return rc;
	if (optind + 1 != argc) {
		cli_err("plan: expected exactly one PROFILE");
		return EXIT_USAGE;
	}
	return cli_plan_live_run(&c, argv[optind]);
}

int cli_plan_live_run(const struct cli_host *c, const char *file)
{
	struct fctl_live_plan lp = { 0 };
	struct fctl_profile *p = NULL;
	struct fctl_buf out = { 0 };
	int rc;

	/* a saved plan names its profile's file, which apply --plan reads again */
	if (c->out && (rc = cli_need_regular("plan --out", file)) != EXIT_OK)
		return rc;
	/* parent-missing is a warning, not an error: the plan is what apply would try (and
	 * refuses) */
	rc = cli_live_plan_load("plan", c, file, &p, &lp);
	if (rc != EXIT_OK)
		goto out;
	if (c->out && (rc = save_plan(c, p, &lp)) != EXIT_OK)
		goto out;
	plan_output(c, p, &lp, &out);
	rc = cli_write(stdout, &out) < 0 ? EXIT_USAGE
					 : cli_plan_exit(c->detailed, lp.plan->n_ops,
							 fctl_plan_count_disruptive(lp.plan));
	if (c->out && !c->json)
		fprintf(stderr, "%s: plan saved to %s: 'fabricctl apply --plan %s' applies exactly "
			"this plan, or nothing if the profile or the host changed\n", prog_name,
			c->out, c->out);
out:
	fctl_buf_release(&out);
	fctl_live_plan_release(&lp);
	fctl_profile_free(p);
	return rc;
}
