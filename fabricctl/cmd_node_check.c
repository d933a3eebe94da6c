// SPDX-License-Identifier: MIT
/* fabricctl node-check: is this node fit for jobs (fctl/nodecheck.h); Slurm drain/resume. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "fctl/nodecheck.h"

#define SLURM_PREFIX "fabricctl:"
#define DEFAULT_TIMEOUT_S 30 /* slurmd kills its HealthCheckProgram after 60 s */
#define DRAIN_GRACE_MS 15000 /* scontrol's time to drain after the check's deadline */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Runs scontrol (from PATH, as slurmd's HealthCheckProgram environment has it) with argv,
 * its stdout into out (may be NULL); the exit code, or -1 when it could not run or was still
 * running at deadline (monotonic ms, 0 = none: then it is killed by its PID). */
static int scontrol(char *const argv[], struct fctl_buf *out, uint64_t deadline)
{
	int fds[2], status;
	bool late = false;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) < 0)
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
		execvp("scontrol", argv);
		dprintf(2, "%s: node-check: cannot run scontrol: %s\n", prog_name, strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		uint64_t t = now_ms();
		char tmp[4096];
		ssize_t k;

		if (deadline && t >= deadline) {
			kill(pid, SIGKILL);
			late = true;
			break;
		}
		k = poll(&pfd, 1, deadline ? (int)(deadline - t) : -1);
		if (k <= 0)
			continue; /* EINTR, or the deadline: seen above */
		k = read(fds[0], tmp, sizeof(tmp));
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
	return !late && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
static int slurm_act(const char *node, bool healthy, const char *why, uint64_t deadline,
		     char *action, size_t alen)
{
	char nn[300], reason[400], state[128], cur[512], name[256];
	struct fctl_buf b = { 0 };
	char *show[] = { "scontrol", "show", "node", name, NULL };
	char *upd[] = { "scontrol", "update", nn, NULL, reason, NULL };
	bool drained, ours;
	int rc;

	snprintf(nn, sizeof(nn), "nodename=%s", node);
	snprintf(name, sizeof(name), "%s", node);
	rc = scontrol(show, &b, deadline);
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
		rc = scontrol(upd, NULL, deadline);
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
	rc = scontrol(upd, NULL, deadline);
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
	const char *audit_log; /* where --allow-never-applied records its passes */
	const char *unhealthy; /* --unhealthy TEXT: no check, the node is unhealthy for TEXT */
	uint64_t timeout_s;    /* the deadline of the check and what --slurm does */
};

/* --unhealthy's text: printable ASCII, a Slurm reason's length at most */
static bool reason_ok(const char *s)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return n > 0 && n <= 200;
}

static int parse_opt(int ch, struct nc_args *a)
{
	switch (ch) {
	case 'j': a->json = true; return -1;
	case 'q': a->quiet = true; return -1;
	case 's': a->slurm = true; return -1;
	case 'n': a->node = optarg; return -1;
	case 'H': a->eo.host = optarg; return -1;
	case 'N': a->eo.netns = optarg; return -1;
	case 'S': a->eo.state_dir = optarg; return -1;
	case 'A': a->o.allow_never_applied = true; return -1;
	case 'L': a->audit_log = optarg; return -1;
	case 'a':
		if (fctl_parse_duration(optarg, &a->o.max_probe_age_s) < 0 || !a->o.max_probe_age_s) {
			cli_err("node-check: --max-probe-age: '%s' is not a duration above 0 "
				"(e.g. 30m)", optarg);
			return EXIT_USAGE;
		}
		return -1;
	case 't':
		if (fctl_parse_duration(optarg, &a->timeout_s) < 0 || !a->timeout_s ||
		    a->timeout_s > 3600) {
			cli_err("node-check: --timeout: '%s' is not a duration from 1s to 1h", optarg);
			return EXIT_USAGE;
		}
		return -1;
	case 'U':
		if (!reason_ok(optarg)) {
			cli_err("node-check: --unhealthy: the reason must be 1 to 200 printable "
				"characters");
			return EXIT_USAGE;
		}
		a->unhealthy = optarg;
		return -1;
	case 'h': cli_usage_cmd("node-check"); return EXIT_OK;
	default: return EXIT_USAGE;
	}
}

static const struct option opts[] = {
	{ "json", no_argument, NULL, 'j' },    { "quiet", no_argument, NULL, 'q' },
	{ "slurm", no_argument, NULL, 's' },   { "node", required_argument, NULL, 'n' },
	{ "host", required_argument, NULL, 'H' },
	{ "netns", required_argument, NULL, 'N' },
	{ "state-dir", required_argument, NULL, 'S' },
	{ "max-probe-age", required_argument, NULL, 'a' },
	{ "allow-never-applied", no_argument, NULL, 'A' },
	{ "audit-log", required_argument, NULL, 'L' },
	{ "timeout", required_argument, NULL, 't' },
	{ "unhealthy", required_argument, NULL, 'U' },
	{ "help", no_argument, NULL, 'h' },    { NULL, 0, NULL, 0 },
};

const struct option *cli_opts_node_check(const char *cmd, const char *sub)
{
	(void)cmd;
	(void)sub;
	return opts;
}

static int parse(int argc, char **argv, struct nc_args *a)
{
	int ch, rc;

	optind = 1;
	a->timeout_s = DEFAULT_TIMEOUT_S;
	while ((ch = cli_getopt("node-check", argc, argv, "qh", opts, NULL)) != -1)
		if ((rc = parse_opt(ch, a)) >= 0)
			return rc;
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

/* Slurm's node name: --node, else slurmd's, else the short hostname; NULL when none */
static const char *slurm_node(struct nc_args *a)
{
	static char hn[256];

	if (!a->node)
		a->node = getenv("SLURMD_NODENAME");
	if (!a->node && gethostname(hn, sizeof(hn) - 1) == 0) {
		hn[strcspn(hn, ".")] = '\0';
		a->node = hn;
	}
	return a->node;
}

/* With --slurm, drains (healthy false) or resumes per slurm_act under deadline; action
 * says what happened. 0, or -1 when scontrol failed or there is no node name. */
static int slurm_do(struct nc_args *a, bool healthy, const char *why, uint64_t deadline,
		    char *action, size_t alen)
{
	if (!slurm_node(a)) {
		snprintf(action, alen, "no node name");
		return -1;
	}
	return slurm_act(a->node, healthy, why, deadline, action, alen);
}

/* The check could not give a verdict (err: why; the check's error, its deadline, or
 * --unhealthy): unhealthy, so with --slurm the node is drained with a reason that says so.
 * rc is the exit code (EXIT_USAGE, or EXIT_INVALID for --unhealthy). */
static int no_verdict(struct nc_args *a, const char *err, int rc)
{
	char action[600] = "";
	struct fctl_buf o = { 0 };

	if (a->slurm && slurm_do(a, false, err, now_ms() + DRAIN_GRACE_MS, action,
				 sizeof(action)) < 0)
		rc = EXIT_USAGE;
	if (rc == EXIT_USAGE)
		cli_err("%s", err);
	if (a->json) {
		fctl_buf_puts(&o, "{\"healthy\":false,\"error\":");
		fctl_buf_json_str(&o, err);
		if (a->slurm) {
			fctl_buf_puts(&o, ",\"slurm\":{\"node\":");
			fctl_buf_json_str(&o, a->node ? a->node : "");
			fctl_buf_puts(&o, ",\"action\":");
			fctl_buf_json_str(&o, action);
			fctl_buf_putc(&o, '}');
		}
		fctl_buf_puts(&o, "}\n");
	} else {
		if (rc != EXIT_USAGE && !a->quiet)
			fctl_buf_printf(&o, "node-check: UNHEALTHY: %s\n", err);
		if (a->slurm)
			fctl_buf_printf(&o, "node-check: slurm node %s: %s\n",
					a->node ? a->node : "?", action);
	}
	cli_write(stdout, &o);
	fctl_buf_release(&o);
	return rc;
}

/* --allow-never-applied passed a host that never had a profile applied: one audit record
 * says so. 0, or negative errno (then the pass does not hold: the node is unhealthy). */
static int audit_never_applied(const struct nc_args *a, const struct fctl_nodecheck_report *r)
{
	struct fctl_audit *au = NULL;
	char d[400];
	int e = cli_audit_open(a->audit_log, &au);
	struct fctl_host_event ev = { .action = "node-check", .result = "allowed", .host = r->host,
				      .detail = d };

	if (e < 0)
		return e;
	snprintf(d, sizeof(d), "no profile ever applied on this host: passed by "
		 "--allow-never-applied (%zu other check%s failed)", r->failed,
		 r->failed == 1 ? "" : "s");
	e = cli_audit_record(au, &ev);
	if (cli_audit_close(au) < 0 && e == 0)
		e = -EIO;
	return e;
}

/* The check and what --slurm does with it; the exit code. Runs in the supervised child. */
static int check_and_act(struct nc_args *a, uint64_t deadline)
{
	struct fctl_nodecheck_report r;
	struct fctl_buf out = { 0 };
	char err[768] = "", why[400], action[600] = "";
	bool healthy;
	int rc, e;

	if (a->unhealthy)
		return no_verdict(a, a->unhealthy, EXIT_INVALID);
	a->o.eo = &a->eo;
	a->o.now = (double)time(NULL);
	e = fctl_nodecheck_run(&a->o, &r, err, sizeof(err));
	if (e < 0) {
		fctl_nodecheck_release(&r);
		snprintf(why, sizeof(why), "node-check could not run: %s",
			 err[0] ? err : strerror(-e));
		return no_verdict(a, why, EXIT_USAGE);
	}
	healthy = !r.failed;
	fctl_nodecheck_reason(&r, why, sizeof(why));
	if (r.never_applied && a->o.allow_never_applied &&
	    (e = audit_never_applied(a, &r)) < 0) {
		healthy = false;
		snprintf(why, sizeof(why), "no profile ever applied, and --allow-never-applied "
			 "cannot be audited: %s", strerror(-e));
	}
	rc = healthy ? EXIT_OK : EXIT_INVALID;
	if (a->slurm && slurm_do(a, healthy, why, deadline, action, sizeof(action)) < 0)
		rc = EXIT_USAGE;
	if (a->json)
		print_json(&r, a->slurm ? a->node : NULL, action, &out);
	else if (!a->quiet || rc == EXIT_USAGE)
		print_text(&r, a->slurm ? a->node : NULL, action, &out);
	if (!healthy && !r.failed && !a->quiet)
		fctl_buf_printf(&out, "node-check: UNHEALTHY: %s\n", why);
	if (cli_write(stdout, &out) < 0)
		rc = EXIT_USAGE;
	fctl_buf_release(&out);
	fctl_nodecheck_release(&r);
	return rc;
}

/* Waits for child pid until deadline (SIGCHLD blocked by the caller): true when it ended,
 * its wait status in *status. */
static bool wait_until(pid_t pid, uint64_t deadline, int *status)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	for (;;) {
		pid_t w = waitpid(pid, status, WNOHANG);
		uint64_t t = now_ms(), left;
		struct timespec ts;

		if (w == pid || (w < 0 && errno != EINTR))
			return w == pid;
		if (t >= deadline)
			return false;
		left = deadline - t;
		ts.tv_sec = (time_t)(left / 1000);
		ts.tv_nsec = (long)(left % 1000) * 1000000;
		sigtimedwait(&chld, NULL, &ts);
	}
}

/* How the supervised check ended without its verdict (vfd: the pipe it writes one byte to
 * when check_and_act returned): NULL when it gave one; else why, in buf. An exit code alone
 * proves nothing: a crash the sanitizer catches, or an exit() deep in a library, also
 * exits. */
static const char *no_verdict_why(int vfd, int status, char *buf, size_t len)
{
	char v;

	if (read(vfd, &v, 1) == 1 && v == 'v' && WIFEXITED(status))
		return NULL;
	if (WIFSIGNALED(status))
		snprintf(buf, len, "node-check was killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "node-check ended without a verdict (exit %d)",
			 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return buf;
}

/* Runs check_and_act in a child process of its own process group under the deadline
 * (--timeout): its exit code once it said it finished; at the deadline the group is
 * killed (SIGKILL, by the child's PID), and a child that died without its verdict (a
 * crash) is no verdict either: the node is unhealthy, so --slurm drains it. A hang
 * anywhere in the check (a lock, netlink, a stuck file, scontrol) cannot keep a node in
 * service. */
static int supervise(struct nc_args *a)
{
	uint64_t deadline = now_ms() + a->timeout_s * 1000;
	sigset_t chld, old;
	char why[128];
	int status = 0, rc, vp[2];
	pid_t pid = -1;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old);
	fflush(stdout);
	fflush(stderr);
	if (pipe2(vp, O_CLOEXEC | O_NONBLOCK) == 0 && (pid = fork()) < 0) {
		close(vp[0]);
		close(vp[1]);
	}
	if (pid == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		setpgid(0, 0);
		close(vp[0]);
		rc = check_and_act(a, deadline);
		fflush(stdout);
		fflush(stderr);
		if (write(vp[1], "v", 1) != 1)
			rc = EXIT_USAGE;
		_exit(rc);
	}
	if (pid < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		snprintf(why, sizeof(why), "node-check could not run: %s", strerror(errno));
		return no_verdict(a, why, EXIT_USAGE);
	}
	close(vp[1]);
	setpgid(pid, pid);
	if (wait_until(pid, deadline, &status)) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		rc = no_verdict_why(vp[0], status, why, sizeof(why))
			     ? no_verdict(a, why, EXIT_USAGE)
			     : WEXITSTATUS(status);
		close(vp[0]);
		return rc;
	}
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	close(vp[0]);
	snprintf(why, sizeof(why), "node-check did not finish within %" PRIu64 " s", a->timeout_s);
	rc = no_verdict(a, why, EXIT_USAGE);
	wait_until(pid, now_ms() + 1000, &status); /* reaped, unless stuck in the kernel */
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

int cmd_node_check(int argc, char **argv)
{
	struct nc_args a = { 0 };
	int rc = parse(argc, argv, &a);

	if (rc >= 0)
		return rc;
	return supervise(&a);
}
