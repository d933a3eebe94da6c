// SPDX-License-Identifier: MIT
/* fabricctl agent: the per-host daemon (docs/agent.md). Parses options and runs
 * libfctl's agent loop with them; in the worker mode, runs the request the library
 * hands over by the very functions the local command runs once its command line is
 * parsed (host.h), so a remote command prints what the local one prints. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fctl/agent.h"
#include "host.h"

/* The options of the local command a request stands for, as cli_host_parse makes them
 * of its command line: --json, apply's --dry-run and --confirm, --host (not history's or
 * recover's), --netns, --state-dir, and --audit-log for the commands that change the host.
 * The strings are copied into buffers of the sizes the command line's copies had, so a
 * value is cut where it was cut before. */
static void request_host(const struct fctl_agent_request *rq, struct cli_host *c)
{
	static char host[256], netns[256], sd[4096], alog[4096];
	bool writes = rq->type == FCTL_MSG_APPLY || rq->type == FCTL_MSG_ROLLBACK ||
		      rq->type == FCTL_MSG_RECOVER || rq->type == FCTL_MSG_CONFIRM;

	cli_host_init(c);
	c->json = rq->options & FCTL_OPT_JSON;
	if (rq->type == FCTL_MSG_APPLY) {
		c->eo.dry_run = rq->options & FCTL_OPT_DRY_RUN;
		/* the engine's confirmed apply, and its watchdog on this host; the protocol
		 * took only 1 s to 7 days (FCTL_PROTO_MAX_CONFIRM), as --confirm does */
		if (rq->confirm_seconds)
			cli_host_confirm(c, rq->confirm_seconds);
	}
	if (rq->host && rq->type != FCTL_MSG_HISTORY && rq->type != FCTL_MSG_RECOVER) {
		snprintf(host, sizeof(host), "%s", rq->host);
		c->eo.host = host;
	}
	if (rq->netns) {
		snprintf(netns, sizeof(netns), "%s", rq->netns);
		c->eo.netns = netns;
	}
	if (rq->state_dir) {
		snprintf(sd, sizeof(sd), "%s", rq->state_dir);
		c->eo.state_dir = sd;
	}
	if (rq->audit_log && writes) {
		snprintf(alog, sizeof(alog), "%s", rq->audit_log);
		c->audit_log = alog;
	}
}

/* A request's profile (plan, apply, diff: the protocol requires one), as the command
 * line's copy had it; said as the local command says a missing one. */
static const char *request_profile(const struct fctl_agent_request *rq)
{
	static char path[4096];
	static const char *const missing[] = {
		[FCTL_MSG_PLAN] = "plan: expected exactly one profile (NEW)",
		[FCTL_MSG_APPLY] = "apply: expected exactly one PROFILE",
		[FCTL_MSG_DIFF] = "diff: expected PROFILE (drift against the live state) or OLD NEW",
	};

	if (!rq->profile_path) {
		cli_err("%s", missing[rq->type]);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s", rq->profile_path);
	return path;
}

/* In the worker: one request, run by the function the local command runs once it has
 * parsed its command line (host.h), with the options the request carries. */
static int run_request(const struct fctl_agent_request *rq)
{
	const char *file = NULL;
	struct cli_host c;

	switch (rq->type) {
	case FCTL_MSG_PROBE_SERVE:
	case FCTL_MSG_PROBE_RUN:
		cli_audit_set_actor(rq->actor_cert, rq->has_actor_uid, rq->actor_uid);
		return cli_probe_request(rq);
	case FCTL_AGENT_MKA_RESTART: /* the agent's own, never a client's */
		return rq->mka_step ? cli_mka_step(rq) : cli_mka_restart(rq, cli_keymgr_path());
	case FCTL_MSG_PLAN:
	case FCTL_MSG_APPLY:
	case FCTL_MSG_DIFF:
	case FCTL_MSG_SHOW:
	case FCTL_MSG_ROLLBACK:
	case FCTL_MSG_HISTORY:
	case FCTL_MSG_RECOVER:
	case FCTL_MSG_CONFIRM:
		break;
	default:
		cli_err("agent: request type %u has no command", rq->type);
		return EXIT_USAGE;
	}
	request_host(rq, &c);
	/* the records of this worker name the client, not the agent's root */
	cli_audit_set_actor(rq->actor_cert, rq->has_actor_uid, rq->actor_uid);
	if ((rq->type == FCTL_MSG_PLAN || rq->type == FCTL_MSG_APPLY ||
	     rq->type == FCTL_MSG_DIFF) && !(file = request_profile(rq)))
		return EXIT_USAGE;
	switch (rq->type) {
	case FCTL_MSG_PLAN:
		return cli_plan_live_run(&c, file);
	case FCTL_MSG_APPLY:
		return cli_apply_file(&c, file);
	case FCTL_MSG_DIFF:
		return cli_diff_live_run(&c, file);
	case FCTL_MSG_SHOW:
		return cli_show_run(&c);
	case FCTL_MSG_ROLLBACK:
		return cli_rollback_run(&c, rq->to_version);
	case FCTL_MSG_HISTORY:
		return cli_history_run(&c);
	case FCTL_MSG_RECOVER:
		return cli_recover_run(&c);
	default: /* FCTL_MSG_CONFIRM */
		return cli_confirm_run(&c);
	}
}

static const struct option opts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "socket", required_argument, NULL, 1 },
	{ "listen", required_argument, NULL, 1 },
	{ "cert", required_argument, NULL, 1 },
	{ "key", required_argument, NULL, 1 },
	{ "ca", required_argument, NULL, 1 },
	{ "policy", required_argument, NULL, 1 },
	{ "crl", required_argument, NULL, 1 },
	{ "metrics", required_argument, NULL, 1 },
	{ "group", required_argument, NULL, 1 },
	{ "state-dir", required_argument, NULL, 1 },
	{ "netns", required_argument, NULL, 1 },
	{ "host", required_argument, NULL, 1 },
	{ "profile-dir", required_argument, NULL, 1 },
	{ "audit-log", required_argument, NULL, 1 },
	{ "drift-interval", required_argument, NULL, 1 },
	{ "drift-repair", no_argument, NULL, 2 },
	{ "max-connections", required_argument, NULL, 1 },
	{ "max-handshakes-per-address", required_argument, NULL, 1 },
	{ "handshake-timeout", required_argument, NULL, 1 },
	{ "max-unix-connections", required_argument, NULL, 1 },
	{ "unix-root-reserve", required_argument, NULL, 1 },
	{ "max-metrics-connections", required_argument, NULL, 1 },
	{ "refusal-interval", required_argument, NULL, 1 },
	{ "max-refusal-sources", required_argument, NULL, 1 },
	{ "timeout", required_argument, NULL, 1 },
	{ "max-frame", required_argument, NULL, 1 },
	{ "max-buffered", required_argument, NULL, 1 },
	{ "max-workers", required_argument, NULL, 1 },
	{ "pull-dir", required_argument, NULL, 1 },
	{ "pull-file", required_argument, NULL, 1 },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

const struct option *cli_opts_agent(const char *cmd, const char *sub)
{
	(void)cmd;
	(void)sub;
	return opts;
}

/* The agent's log (fctl_agent_log_set): one write(2) per line, so that it is safe in a
 * child between fork and exec and lines of the agent's processes never interleave. */
static void agent_log_line(const char *line)
{
	static const char prefix[] = "fabricctl-agent: ";
	char buf[sizeof(prefix) + 4096 + 1];
	size_t n = strlen(line), p = sizeof(prefix) - 1;

	if (n > sizeof(buf) - p - 1)
		n = sizeof(buf) - p - 1;
	memcpy(buf, prefix, p);
	memcpy(buf + p, line, n);
	buf[p + n] = '\n';
	(void)!write(STDERR_FILENO, buf, p + n + 1);
}

/* The worker mode (`fabricctl agent --worker 3`): the library reads the request and,
 * for one that changes nothing, sandboxes this process (fctl_agent_worker_open); then
 * the request runs here and the worker exits with its code. */
static int run_worker(void)
{
	struct fctl_agent_worker w;
	char err[512] = "";
	int code;

	if (fctl_agent_worker_open(&w, 3, err, sizeof(err)) < 0) {
		agent_log_line(err);
		code = 2;
	} else {
		code = run_request(&w.rq);
	}
	fflush(NULL); /* the run's output, before _exit */
	fctl_agent_worker_release(&w);
	return code & 0xff;
}

int cmd_agent(int argc, char **argv)
{
	static char keys[32][32];
	static const char *key[32], *val[32];
	struct fctl_agent_start st = { .keys = key, .vals = val };
	char err[768] = "";
	int ch, idx = 0, r;

	fctl_agent_log_set(agent_log_line);
	/* the agent's worker, re-executed by the agent */
	if (argc == 3 && strcmp(argv[1], "--worker") == 0 && strcmp(argv[2], "3") == 0)
		_exit(run_worker());
	/* the agent's TLS front-end, re-executed by the agent (fctl_agent_frontend_main) */
	if (argc == 3 && strcmp(argv[1], "--frontend") == 0 && strcmp(argv[2], "3") == 0)
		_exit(fctl_agent_frontend_main(3));
	optind = 1;
	while ((ch = cli_getopt("agent", argc, argv, "h", opts, &idx)) != -1) {
		switch (ch) {
		case 'c':
			st.config = optarg;
			break;
		case 1:
		case 2:
			if (st.n == FCTL_ARRAY_SIZE(key)) {
				cli_err("agent: too many options");
				return EXIT_USAGE;
			}
			/* option names use '-', configuration keys '_' */
			snprintf(keys[st.n], sizeof(keys[0]), "%s", opts[idx].name);
			for (char *p = keys[st.n]; *p; p++)
				if (*p == '-')
					*p = '_';
			key[st.n] = keys[st.n];
			val[st.n++] = ch == 2 ? "true" : optarg;
			break;
		case 'h':
			cli_usage_cmd("agent");
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_err("agent: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	st.keymgr_path = cli_keymgr_path(); /* the apply worker finds it itself (cmd_apply) */
	r = fctl_agent_run(&st, err, sizeof(err));
	if (r < 0) {
		cli_err("agent: %s", err[0] ? err : strerror(-r));
		return EXIT_USAGE;
	}
	return EXIT_OK;
}
