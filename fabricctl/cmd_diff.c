// SPDX-License-Identifier: MIT
/* fabricctl diff OLD NEW (two profiles compared) and diff PROFILE (drift of the live state). */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fctl/audit.h"
#include "fctl/plan.h"
#include "host.h"

/* diff's options: those of the comparison of files and of the live form (which
 * cli_host_parse parses again with its own table, cli_opts_host) */
static const struct option diff_opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "host", required_argument, NULL, 'H' },
	{ "netns", required_argument, NULL, 'n' },
	{ "state-dir", required_argument, NULL, 'S' },
	{ "audit", no_argument, NULL, 'a' },
	{ "audit-log", required_argument, NULL, 'a' },
	{ "change", required_argument, NULL, 'a' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

const struct option *cli_opts_diff(const char *cmd, const char *sub)
{
	(void)cmd;
	(void)sub;
	return diff_opts;
}

/* diff --audit: one drift record. Negative errno when it could not be written (said). */
static int record_drift(const struct cli_host *c, const struct fctl_profile *p,
			const char *host, int links)
{
	struct fctl_audit *audit = NULL;
	char detail[64];
	struct fctl_host_event ev = { .action = "drift", .result = "found", .host = host,
				      .change_id = c->change_id, .p = p, .detail = detail };
	int r;

	snprintf(detail, sizeof(detail), "%d link%s differ%s from the profile", links,
		 links == 1 ? "" : "s", links == 1 ? "s" : "");
	r = cli_audit_open(c->audit_log, &audit);
	if (r == 0)
		r = cli_audit_record(audit, &ev);
	if (cli_audit_close(audit) < 0 && r == 0)
		r = -EIO;
	if (r < 0)
		cli_err("diff: --audit: the drift was not recorded");
	return r;
}

/* diff's output: JSON (host, drift, changes, findings) or the text. */
static void diff_output(bool json, const struct fctl_profile *p, const struct fctl_live_plan *lp,
			int r, const struct fctl_buf *part, struct fctl_buf *out)
{
	const char *host = lp->want->host;

	if (json) {
		fctl_buf_puts(out, "{\"host\":");
		fctl_buf_json_str(out, host);
		fctl_buf_printf(out, ",\"drift\":%s,\"links_differing\":%d,\"changes\":%s",
				r ? "true" : "false", r, part->data);
		fctl_buf_puts(out, ",\"findings\":");
		fctl_diags_findings_json(&lp->findings, out);
		fctl_buf_puts(out, "}\n");
	} else if (r) {
		fctl_buf_printf(out, "host %s: drift from %s version %" PRIu64
				     " (- live, + profile)\n%s",
				host, p->name, p->version, part->data);
	} else {
		fctl_buf_printf(out, "host %s: no drift from %s version %" PRIu64 "\n", host,
				p->name, p->version);
	}
}

/* diff PROFILE: drift between the profile and the live state */
int cmd_diff_live(int argc, char **argv)
{
	struct cli_host c;
	int rc = cli_host_parse("diff", argc, argv, &c, NULL);

	if (rc >= 0)
		return rc;
	return cli_diff_live_run(&c, argv[optind]);
}

int cli_diff_live_run(const struct cli_host *c, const char *file)
{
	struct fctl_live_plan lp = { 0 };
	struct fctl_profile *p = NULL;
	struct fctl_buf out = { 0 }, part = { 0 };
	bool audit_failed = false;
	int r, rc;

	rc = cli_live_plan_load("diff", c, file, &p, &lp);
	if (rc != EXIT_OK)
		goto out;
	r = c->json ? fctl_state_diff_json(lp.live, lp.want, &part)
		    : fctl_state_diff_text(lp.live, lp.want, &part, cli_color(stdout));
	if (r < 0) {
		rc = EXIT_USAGE;
		goto out;
	}
	/* a read command writes nothing unless asked: drift is recorded with --audit */
	if (r > 0 && (c->audit || c->audit_log) && record_drift(c, p, lp.want->host, r) < 0)
		audit_failed = true;
	diff_output(c->json, p, &lp, r, &part, &out);
	cli_write(stdout, &out);
	rc = audit_failed ? EXIT_USAGE : r ? EXIT_INVALID : EXIT_OK;
out:
	fctl_buf_release(&out);
	fctl_buf_release(&part);
	fctl_live_plan_release(&lp);
	fctl_profile_free(p);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	int remote = cmd_fabric_dispatch("diff", argc, argv); /* --fabric, --target */

	if (remote >= 0)
		return remote;

	struct fctl_profile *a = NULL, *b = NULL;
	struct cli_host_filter filt = { 0 };
	struct fctl_buf out = { 0 };
	const char *hosts[1024];
	bool json = false, audit = false;
	size_t nh, ndiff = 0, shown = 0;
	int c, rc;

	optind = 1;
	while ((c = cli_getopt("diff", argc, argv, "h", diff_opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'H':
			if (filt.n == FCTL_ARRAY_SIZE(filt.v)) {
				cli_err("diff: too many --host options");
				return EXIT_USAGE;
			}
			filt.v[filt.n++] = optarg;
			break;
		case 'a':
			audit = true;
			break; /* live diff options */
		case 'n':
		case 'S':
			break; /* live diff options */
		case 'h':
			cli_usage_cmd("diff");
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind + 1 == argc)
		return cmd_diff_live(argc, argv);
	if (optind + 2 != argc) {
		cli_err("diff: expected PROFILE (drift against the live state) or OLD NEW");
		return EXIT_USAGE;
	}
	if (audit) {
		cli_err("diff: --audit, --audit-log and --change record drift of the live state "
			"(diff PROFILE); OLD NEW compares files");
		return EXIT_USAGE;
	}
	rc = cli_load_profile(argv[optind], &a, true, json);
	if (rc == EXIT_OK)
		rc = cli_load_profile(argv[optind + 1], &b, true, json);
	if (rc == EXIT_OK && (rc = cli_host_filter_check(&filt, a, b)) == EXIT_OK)
		cli_warn_renamed("diff", a, argv[optind], b, argv[optind + 1]);
	if (rc != EXIT_OK)
		goto out;
	nh = cli_profile_hosts(b, a, hosts, FCTL_ARRAY_SIZE(hosts));
	if (json)
		fctl_buf_printf(&out, "{\"old_version\":%llu,\"new_version\":%llu,\"hosts\":[",
				(unsigned long long)a->version, (unsigned long long)b->version);
	for (size_t i = 0; i < nh; i++) {
		struct fctl_host_state *sa = NULL, *sb = NULL;
		struct fctl_buf part = { 0 };
		int r;

		if (!cli_host_wanted(&filt, hosts[i]))
			continue;
		r = cli_render_host(a, hosts[i], &sa);
		if (r == 0)
			r = cli_render_host(b, hosts[i], &sb);
		if (r == 0)
			r = json ? fctl_state_diff_json(sa, sb, &part)
				 : fctl_state_diff_text(sa, sb, &part, cli_color(stdout));
		if (r > 0) {
			ndiff += (size_t)r;
			if (json) {
				fctl_buf_printf(&out, "%s{\"host\":", shown++ ? "," : "");
				fctl_buf_json_str(&out, hosts[i]);
				fctl_buf_printf(&out, ",\"changes\":%s}", part.data);
			} else {
				fctl_buf_printf(&out, "host %s:\n%s", hosts[i], part.data);
			}
		}
		fctl_buf_release(&part);
		fctl_host_state_free(sa);
		fctl_host_state_free(sb);
		if (r < 0) {
			rc = EXIT_USAGE;
			goto out;
		}
	}
	if (json)
		fctl_buf_printf(&out, "],\"links_changed\":%zu}\n", ndiff);
	else if (!ndiff)
		fctl_buf_puts(&out, "no differences\n");
	if (cli_write(stdout, &out) < 0)
		rc = EXIT_USAGE;
	else
		rc = ndiff ? EXIT_INVALID : EXIT_OK;
out:
	fctl_buf_release(&out);
	fctl_profile_free(a);
	fctl_profile_free(b);
	return rc;
}
