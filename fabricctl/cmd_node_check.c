// SPDX-License-Identifier: MIT
/* fabricctl node-check: is this node fit for jobs (fctl/nodecheck.h); Slurm drain/resume. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "fctl/nodecheck.h"

#define SLURM_PREFIX "fabricctl:"

/* Runs scontrol (from PATH, as slurmd's HealthCheckProgram environment has it) with argv,
 * its stdout into out (may be NULL); the exit code, or -1 when it could not run. */
static int scontrol(char *const argv[], struct fctl_buf *out)
{
	int fds[2], status;
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execvp("scontrol", argv);
		dprintf(2, "%s: node-check: cannot run scontrol: %s\n", prog_name, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		char tmp[4096];
		ssize_t k = read(fds[0], tmp, sizeof(tmp));

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (out)
			fctl_buf_append(out, tmp, (size_t)k);
	}
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The value of "KEY=" in scontrol show node's text up to the end of its word (State) or
 * line (Reason, which holds spaces). */
static void node_field(const struct fctl_buf *b, const char *key, bool line, char *out,
		       size_t len)
{
	const char *p = b->data ? strstr(b->data, key) : NULL;
	size_t n;

	out[0] = '\0';
	if (!p)
		return;
	p += strlen(key);
	n = line ? strcspn(p, "\n") : strcspn(p, " \n");
	if (n >= len)
		n = len - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

/* Slurm's NHC convention: drain with a reason "fabricctl: WHY" when unhealthy, unless an
 * admin (a reason of another prefix) drained it already; resume when healthy only a node
 * this check drained (its reason starts with "fabricctl:"). What it did in action. */
static int slurm_act(const char *node, bool healthy, const char *why, char *action, size_t alen)
{
	char nn[300], reason[400], state[128], cur[512], name[256];
	struct fctl_buf b = { 0 };
	char *show[] = { "scontrol", "show", "node", name, NULL };
	char *upd[] = { "scontrol", "update", nn, NULL, reason, NULL };
	bool drained, ours;
	int rc;

	snprintf(nn, sizeof(nn), "nodename=%s", node);
	snprintf(name, sizeof(name), "%s", node);
	rc = scontrol(show, &b);
	fctl_buf_putc(&b, '\0');
	if (rc != 0) {
		fctl_buf_release(&b);
		snprintf(action, alen, "scontrol show node %s failed (exit %d)", node, rc);
		return -1;
	}
	node_field(&b, "State=", false, state, sizeof(state));
	node_field(&b, "Reason=", true, cur, sizeof(cur));
	fctl_buf_release(&b);
	drained = strstr(state, "DRAIN") != NULL;
	ours = strncmp(cur, SLURM_PREFIX, strlen(SLURM_PREFIX)) == 0;
	if (healthy) {
		if (drained && !ours) {
			snprintf(action, alen, "none: drained by someone else (%s)", cur);
			return 0;
		}
		if (!drained) {
			snprintf(action, alen, "none (state %s)", state);
			return 0;
		}
		upd[3] = "state=resume";
		upd[4] = NULL;
		rc = scontrol(upd, NULL);
		snprintf(action, alen, rc == 0 ? "resumed" : "resume failed (exit %d)", rc);
		return rc == 0 ? 0 : -1;
	}
	if (drained && !ours && cur[0]) {
		snprintf(action, alen, "none: drained by someone else (%s)", cur);
		return 0;
	}
	snprintf(reason, sizeof(reason), "reason=%s %s", SLURM_PREFIX, why);
	if (drained && strncmp(cur, reason + 7, strlen(reason + 7)) == 0) {
		snprintf(action, alen, "none: drained already");
		return 0;
	}
	upd[3] = "state=drain";
	rc = scontrol(upd, NULL);
	snprintf(action, alen, rc == 0 ? "drained" : "drain failed (exit %d)", rc);
	return rc == 0 ? 0 : -1;
}

static void print_json(const struct fctl_nodecheck_report *r, const char *node,
		       const char *action, struct fctl_buf *o)
{
	fctl_buf_puts(o, "{\"host\":");
	fctl_buf_json_str(o, r->host);
	fctl_buf_printf(o, ",\"healthy\":%s,\"failed\":%zu,\"applied\":%s", r->failed ? "false" : "true",
			r->failed, r->applied ? "true" : "false");
	if (r->applied) {
		fctl_buf_puts(o, ",\"profile\":");
		fctl_buf_json_str(o, r->profile);
		fctl_buf_printf(o, ",\"version\":%" PRIu64, r->version);
	}
	fctl_buf_printf(o, ",\"secys\":%zu,\"checks\":[", r->n_secy);
	for (size_t i = 0; i < r->n; i++) {
		fctl_buf_printf(o, "%s{\"check\":\"%s\",\"ok\":%s,\"link\":", i ? "," : "",
				r->v[i].check, r->v[i].ok ? "true" : "false");
		fctl_buf_json_str(o, r->v[i].link);
		fctl_buf_puts(o, ",\"ifname\":");
		fctl_buf_json_str(o, r->v[i].ifname);
		fctl_buf_puts(o, ",\"text\":");
		fctl_buf_json_str(o, r->v[i].text);
		fctl_buf_putc(o, '}');
	}
	fctl_buf_puts(o, "]");
	if (node) {
		fctl_buf_puts(o, ",\"slurm\":{\"node\":");
		fctl_buf_json_str(o, node);
		fctl_buf_puts(o, ",\"action\":");
		fctl_buf_json_str(o, action);
		fctl_buf_putc(o, '}');
	}
	fctl_buf_puts(o, "}\n");
}

static void print_text(const struct fctl_nodecheck_report *r, const char *node,
		       const char *action, struct fctl_buf *o)
{
	for (size_t i = 0; i < r->n; i++)
		fctl_buf_printf(o, "%-4s %-7s %s%s%s\n", r->v[i].ok ? "ok" : "FAIL", r->v[i].check,
				r->v[i].link, r->v[i].link[0] ? ": " : "", r->v[i].text);
	fctl_buf_printf(o, "node-check: %s %s (%zu SecY%s, %zu check%s failed)\n", r->host,
			r->failed ? "UNHEALTHY" : "healthy", r->n_secy, r->n_secy == 1 ? "" : "s",
			r->failed, r->failed == 1 ? "" : "s");
	if (node)
		fctl_buf_printf(o, "node-check: slurm node %s: %s\n", node, action);
}

struct nc_args {
	struct fctl_engine_opts eo;
	struct fctl_nodecheck_opts o;
	bool json, quiet, slurm;
	const char *node;
};

static int parse(int argc, char **argv, struct nc_args *a)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },    { "quiet", no_argument, NULL, 'q' },
		{ "slurm", no_argument, NULL, 's' },   { "node", required_argument, NULL, 'n' },
		{ "host", required_argument, NULL, 'H' },
		{ "netns", required_argument, NULL, 'N' },
		{ "state-dir", required_argument, NULL, 'S' },
		{ "max-probe-age", required_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },    { NULL, 0, NULL, 0 },
	};
	int ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
		switch (ch) {
		case 'j': a->json = true; break;
		case 'q': a->quiet = true; break;
		case 's': a->slurm = true; break;
		case 'n': a->node = optarg; break;
		case 'H': a->eo.host = optarg; break;
		case 'N': a->eo.netns = optarg; break;
		case 'S': a->eo.state_dir = optarg; break;
		case 'a':
			if (fctl_parse_duration(optarg, &a->o.max_probe_age_s) < 0 ||
			    !a->o.max_probe_age_s) {
				cli_err("node-check: --max-probe-age: '%s' is not a duration above 0 "
					"(e.g. 30m)", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'h': cli_usage_cmd("node-check"); return EXIT_OK;
		default: return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_err("node-check: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (a->node && !a->slurm) {
		cli_err("node-check: --node needs --slurm");
		return EXIT_USAGE;
	}
	return -1;
}

int cmd_node_check(int argc, char **argv)
{
	static char hn[256];
	struct fctl_nodecheck_report r;
	struct nc_args a = { 0 };
	struct fctl_buf out = { 0 };
	char err[768] = "", why[400], action[600] = "";
	int rc = parse(argc, argv, &a), e;

	if (rc >= 0)
		return rc;
	a.o.eo = &a.eo;
	a.o.now = (double)time(NULL);
	e = fctl_nodecheck_run(&a.o, &r, err, sizeof(err));
	if (e < 0) {
		fctl_nodecheck_release(&r);
		cli_err("node-check: %s", err[0] ? err : strerror(-e));
		return EXIT_USAGE;
	}
	rc = r.failed ? EXIT_INVALID : EXIT_OK;
	if (a.slurm) {
		/* Slurm's node name: --node, else slurmd's, else the short hostname */
		if (!a.node)
			a.node = getenv("SLURMD_NODENAME");
		if (!a.node && gethostname(hn, sizeof(hn) - 1) == 0) {
			hn[strcspn(hn, ".")] = '\0';
			a.node = hn;
		}
		fctl_nodecheck_reason(&r, why, sizeof(why));
		if (!a.node || slurm_act(a.node, !r.failed, why, action, sizeof(action)) < 0)
			rc = EXIT_USAGE;
		if (!a.node)
			snprintf(action, sizeof(action), "no node name");
	}
	if (a.json)
		print_json(&r, a.slurm ? a.node : NULL, action, &out);
	else if (!a.quiet || rc == EXIT_USAGE)
		print_text(&r, a.slurm ? a.node : NULL, action, &out);
	if (cli_write(stdout, &out) < 0)
		rc = EXIT_USAGE;
	fctl_buf_release(&out);
	fctl_nodecheck_release(&r);
	return rc;
}
