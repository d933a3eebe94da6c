// SPDX-License-Identifier: MIT
/* fabricctl plan --offline NEW [--from OLD]; the profile comparison diff OLD NEW shares */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fctl/plan.h"

bool cli_host_wanted(const struct cli_host_filter *f, const char *host)
{
	if (!f->n)
		return true;
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->v[i], host) == 0)
			return true;
	return false;
}

size_t cli_profile_hosts(const struct fctl_profile *nw, const struct fctl_profile *old,
			 const char **v, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; nw && i < nw->n_hosts && n < cap; i++)
		v[n++] = nw->hosts[i].name;
	for (size_t i = 0; old && i < old->n_hosts && n < cap; i++)
		if (!nw || !fctl_profile_find_host(nw, old->hosts[i].name))
			v[n++] = old->hosts[i].name;
	return n;
}

int cli_render_host(const struct fctl_profile *p, const char *host, struct fctl_host_state **out)
{
	int r;

	if (!p || !fctl_profile_find_host(p, host)) {
		*out = fctl_host_state_new(host);
		return *out ? 0 : -ENOMEM;
	}
	r = fctl_profile_render_host(p, host, out);
	if (r < 0)
		cli_err("cannot render host '%s': %s", host, strerror(-r));
	return r;
}

int cli_host_filter_check(const struct cli_host_filter *f, const struct fctl_profile *a,
			  const struct fctl_profile *b)
{
	for (size_t i = 0; i < f->n; i++) {
		if ((!a || !fctl_profile_find_host(a, f->v[i])) &&
		    (!b || !fctl_profile_find_host(b, f->v[i]))) {
			cli_err("host '%s' is in neither profile", f->v[i]);
			return EXIT_USAGE;
		}
	}
	return EXIT_OK;
}

static void profile_json(struct fctl_buf *o, const char *key, const struct fctl_profile *p)
{
	fctl_buf_printf(o, "\"%s\":", key);
	if (!p) {
		fctl_buf_puts(o, "null");
		return;
	}
	fctl_buf_puts(o, "{\"file\":");
	fctl_buf_json_str(o, p->file);
	fctl_buf_puts(o, ",\"name\":");
	fctl_buf_json_str(o, p->name);
	fctl_buf_printf(o, ",\"version\":%llu,\"sha256\":\"", (unsigned long long)p->version);
	fctl_buf_put_hex(o, p->sha256, 32);
	fctl_buf_puts(o, "\"}");
}

void cli_warn_renamed(const char *cmd, const struct fctl_profile *old, const char *old_path,
		      const struct fctl_profile *nw, const char *new_path)
{
	if (strcmp(old->name, nw->name) != 0)
		cli_err("warning: %s: the profile's name changes from '%s' (%s) to '%s' (%s): "
			"is that the file you meant?",
			cmd, old->name, old_path, nw->name, new_path);
}

/* What the offline plan printed so far: hosts shown, operations, disruptive operations. */
struct plan_totals {
	size_t shown, total, disruptive;
};

/* The JSON object's opening up to "hosts":[, or the text's first line. */
static void plan_header(struct fctl_buf *out, bool json, const struct fctl_profile *nw,
			const struct fctl_profile *old)
{
	if (json) {
		fctl_buf_puts(out, "{");
		profile_json(out, "profile", nw);
		fctl_buf_putc(out, ',');
		profile_json(out, "from", old);
		fctl_buf_puts(out, ",\"hosts\":[");
	} else {
		fctl_buf_printf(out, "plan: profile %s version %llu", nw->name,
				(unsigned long long)nw->version);
		if (old)
			fctl_buf_printf(out, " from version %llu\n", (unsigned long long)old->version);
		else
			fctl_buf_puts(out, " from nothing\n");
	}
}

/*
 * Plans one host from OLD (or nothing) to NEW (or nothing), appends the plan to out and
 * counts it in t. Returns 0 or a negative errno.
 */
static int plan_host(struct fctl_buf *out, bool json, bool color, const struct fctl_profile *nw,
		     const struct fctl_profile *old, const char *host, struct plan_totals *t)
{
	struct fctl_host_state *a = NULL, *b = NULL;
	struct fctl_plan *plan = NULL;
	int r;

	r = cli_render_host(old, host, &a);
	if (r == 0)
		r = cli_render_host(nw, host, &b);
	if (r == 0)
		r = fctl_plan_compute(a, b, &plan);
	if (r == 0) {
		if (json) {
			if (t->shown)
				fctl_buf_putc(out, ',');
			fctl_plan_to_json(plan, out);
		} else {
			fctl_plan_to_text(plan, out, color);
		}
		t->shown++;
		t->total += plan->n_ops;
		t->disruptive += fctl_plan_count_disruptive(plan);
	}
	fctl_plan_free(plan);
	fctl_host_state_free(a);
	fctl_host_state_free(b);
	return r;
}

/* The JSON object's summary and close, or the text's total line. */
static void plan_summary(struct fctl_buf *out, bool json, const struct plan_totals *t)
{
	if (json)
		fctl_buf_printf(out, "],\"summary\":{\"hosts\":%zu,\"ops\":%zu,\"disruptive\":%zu}}\n",
				t->shown, t->total, t->disruptive);
	else
		fctl_buf_printf(out, "total: %zu operation%s on %zu host%s, %zu disruptive\n",
				t->total, t->total == 1 ? "" : "s", t->shown,
				t->shown == 1 ? "" : "s", t->disruptive);
}

/* Appends line (len bytes) of a plan's text to md as Markdown; *fence says whether a
 * ```diff block is open. */
static void md_line(struct fctl_buf *md, const char *line, size_t len, bool *fence, bool *ops)
{
	if (len >= 6 && strncmp(line, "plan: ", 6) == 0) {
		fctl_buf_printf(md, "### fabricctl %.*s\n\n", (int)len, line);
	} else if (len >= 5 && strncmp(line, "host ", 5) == 0 && line[len - 1] == ':') {
		fctl_buf_printf(md, "#### host `%.*s`\n\n", (int)(len - 6), line + 5);
		*ops = false;
	} else if (len >= 8 && strncmp(line, "  plan: ", 8) == 0) {
		if (*fence)
			fctl_buf_puts(md, "```\n\n");
		*fence = false;
		if (!*ops)
			fctl_buf_puts(md, "No changes.\n\n");
		else
			fctl_buf_printf(md, "%.*s\n\n", (int)(len - 8), line + 8);
		if (*ops && !memmem(line, len, " 0 disruptive", 13))
			fctl_buf_puts(md, "> **Disruptive**: traffic on the links marked "
					  "`[disruptive]` stops while this runs; it needs a "
					  "maintenance window.\n\n");
	} else if (len >= 7 && strncmp(line, "total: ", 7) == 0) {
		fctl_buf_printf(md, "**%.*s**\n", (int)len, line);
	} else if (len >= 2 && strncmp(line, "  ", 2) == 0 && strncmp(line, "  no changes", 12)) {
		if (!*fence)
			fctl_buf_puts(md, "```diff\n");
		*fence = *ops = true;
		fctl_buf_printf(md, "%.*s\n", (int)(len - 2), line + 2);
	}
}

void cli_plan_markdown(const struct fctl_buf *text, struct fctl_buf *md)
{
	const char *p = text->data, *end = text->data + text->len;
	bool fence = false, ops = false;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

		md_line(md, p, len, &fence, &ops);
		p = nl ? nl + 1 : end;
	}
	if (fence)
		fctl_buf_puts(md, "```\n");
}

int cli_plan_exit(bool detailed, size_t ops, size_t disruptive)
{
	if (!detailed || !ops)
		return EXIT_OK;
	return disruptive ? EXIT_PLAN_DISRUPTIVE : EXIT_PLAN_CHANGES;
}

/* plan's options: those of the offline plan and of the live form (cmd_plan_live.c
 * parses the live form's again with its own table, cli_opts_host) */
static const struct option plan_opts[] = {
	{ "offline", no_argument, NULL, 'o' },	 { "from", required_argument, NULL, 'f' },
	{ "host", required_argument, NULL, 'H' }, { "json", no_argument, NULL, 'j' },
	{ "netns", required_argument, NULL, 'n' }, { "state-dir", required_argument, NULL, 'S' },
	{ "detailed-exitcode", no_argument, NULL, 'd' },
	{ "markdown", no_argument, NULL, 'm' },	 { "out", required_argument, NULL, 'O' },
	{ "help", no_argument, NULL, 'h' },	 { NULL, 0, NULL, 0 },
};

const struct option *cli_opts_plan(const char *cmd, const char *sub)
{
	(void)cmd;
	(void)sub;
	return plan_opts;
}

int cmd_plan(int argc, char **argv)
{
	int remote = cmd_fabric_dispatch("plan", argc, argv); /* --fabric, --target */

	if (remote >= 0)
		return remote;

	struct fctl_profile *nw = NULL, *old = NULL;
	const char *from = NULL, *hosts[1024];
	struct cli_host_filter filt = { 0 };
	struct fctl_buf out = { 0 };
	struct plan_totals totals = { 0 };
	bool offline = false, json = false, markdown = false, detailed = false, out_file = false;
	size_t nh;
	int c, rc;

	optind = 1;
	while ((c = cli_getopt("plan", argc, argv, "h", plan_opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			offline = true;
			break;
		case 'f':
			from = optarg;
			break;
		case 'H':
			if (filt.n == FCTL_ARRAY_SIZE(filt.v)) {
				cli_err("plan: too many --host options");
				return EXIT_USAGE;
			}
			filt.v[filt.n++] = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'm':
			markdown = true;
			break;
		case 'd':
			detailed = true;
			break;
		case 'n':
		case 'S':
			break; /* live plan options */
		case 'O':
			out_file = true;
			break;
		case 'h':
			cli_usage_cmd("plan");
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind + 1 != argc) {
		cli_err("plan: expected exactly one profile (NEW)");
		return EXIT_USAGE;
	}
	if (json && markdown) {
		cli_err("plan: --json and --markdown go to the same stdout; give one");
		return EXIT_USAGE;
	}
	if (!offline) {
		if (from) {
			cli_err("plan: --from needs --offline (the live plan starts from the kernel)");
			return EXIT_USAGE;
		}
		return cmd_plan_live(argc, argv);
	}
	if (out_file) {
		cli_err("plan: --out saves a live plan (it binds this host's live state); "
			"an offline plan is reviewed, not applied");
		return EXIT_USAGE;
	}
	rc = cli_load_profile(argv[optind], &nw, true, json);
	if (rc == EXIT_OK && from)
		rc = cli_load_profile(from, &old, true, json);
	if (rc == EXIT_OK && old)
		cli_warn_renamed("plan", old, from, nw, argv[optind]);
	if (rc == EXIT_OK) /* this machine's approval policy, when it has one */
		cli_approvals_note(nw, "plan", true, json);
	if (rc == EXIT_OK)
		rc = cli_host_filter_check(&filt, nw, old);
	if (rc != EXIT_OK)
		goto out;

	nh = cli_profile_hosts(nw, old, hosts, FCTL_ARRAY_SIZE(hosts));
	plan_header(&out, json, nw, old);
	for (size_t i = 0; i < nh; i++) {
		if (!cli_host_wanted(&filt, hosts[i]))
			continue;
		if (plan_host(&out, json, !markdown && cli_color(stdout), nw, old, hosts[i],
			      &totals) < 0) {
			rc = EXIT_USAGE;
			goto out;
		}
	}
	plan_summary(&out, json, &totals);
	if (markdown) {
		struct fctl_buf md = { 0 };

		cli_plan_markdown(&out, &md);
		fctl_buf_release(&out);
		out = md;
	}
	if (cli_write(stdout, &out) < 0)
		rc = EXIT_USAGE;
	else
		rc = cli_plan_exit(detailed, totals.total, totals.disruptive);
out:
	fctl_buf_release(&out);
	fctl_profile_free(nw);
	fctl_profile_free(old);
	return rc;
}
