// SPDX-License-Identifier: MIT
/* fabricctl confirm: confirmed apply (apply --confirm), its watchdog, and what show says of it */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fctl/approvals.h"

#include "cli.h"
#include "host.h"
#include "fctl/audit.h"
#include "fctl/engine.h"
#include "fctl/proto.h"
#include "fctl/host_apply.h"
#include "fctl/state.h"

static void fmt_time(int64_t t, char *out, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	gmtime_r(&tt, &tm);
	strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void cli_confirm_id(char *out, size_t len)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(out, len, "%lld.%09ld-%ld", (long long)ts.tv_sec, ts.tv_nsec, (long)getpid());
}

int cli_parse_confirm(const char *arg, uint64_t *seconds)
{
	if (fctl_parse_duration(arg, seconds) < 0 || *seconds < 1 ||
	    *seconds > FCTL_PROTO_MAX_CONFIRM) {
		cli_err("apply: --confirm '%s': expected a duration from 1s to 7d (90, 90s, 5m, "
			"1h30m)", arg);
		return -EINVAL;
	}
	return 0;
}

void cli_confirm_json(const struct fctl_confirm_pending *c, struct fctl_buf *o)
{
	char dl[32], st[32];

	if (!c) {
		fctl_buf_puts(o, "null");
		return;
	}
	fmt_time(c->deadline, dl, sizeof(dl));
	fmt_time(c->started, st, sizeof(st));
	fctl_buf_printf(o, "{\"pending\":true,\"version\":%" PRIu64 ",\"profile\":", c->version);
	fctl_buf_json_str(o, c->name);
	fctl_buf_printf(o, ",\"applied\":\"%s\",\"deadline\":\"%s\",\"deadline_unix\":%" PRId64
			   ",\"seconds_left\":%" PRId64 ",\"rollback_to_version\":",
			st, dl, c->deadline, c->deadline - (int64_t)time(NULL));
	if (c->prev_seq)
		fctl_buf_printf(o, "%" PRIu64, c->prev_version);
	else
		fctl_buf_puts(o, "null");
	fctl_buf_printf(o, ",\"rolling_back\":%s}", c->expiring ? "true" : "false");
}

void cli_confirm_show(const struct fctl_engine_opts *eo, struct fctl_buf *json)
{
	struct fctl_confirm_pending c;
	int r = fctl_engine_confirm_pending(eo, &c);
	char dl[32];

	if (json) {
		cli_confirm_json(r == 1 ? &c : NULL, json);
		return;
	}
	if (r != 1)
		return;
	fmt_time(c.deadline, dl, sizeof(dl));
	cli_err("note: version %" PRIu64 " awaits confirmation until %s ('fabricctl confirm'); "
		"else the host goes back to %s",
		c.version, dl, c.prev_seq ? "the version before" : "nothing (teardown)");
}

/* One audit record of the confirmation's life (confirm, confirm-rollback). */
static int audit_event(const char *log, const char *change_id, const char *action,
		       const char *result, const struct fctl_apply_result *res, const char *detail)
{
	struct fctl_audit *audit = NULL;
	struct fctl_host_event ev = {
		.action = action, .result = result, .host = res ? res->host : NULL,
		.change_id = change_id, .detail = detail,
		.error = res && res->error[0] ? res->error : NULL, .plan = res ? res->plan : NULL,
		.kcvs = res ? res->kcvs : NULL, .n_kcvs = res ? res->n_kcvs : 0,
		.has_counts = res && res->plan, .ops = res ? res->ops_done : 0,
		.writes = res ? res->writes : 0,
		.ledger = res && res->has_ledger ? &res->ledger : NULL,
	};
	int r = cli_audit_open(log, &audit);

	if (r == 0)
		r = cli_audit_record(audit, &ev);
	if (cli_audit_close(audit) < 0 && r == 0)
		r = -EIO;
	return r;
}

/* The rollback at the deadline (or now, with force), audited. 1 rolled back, 0 nothing
 * was due, < 0 failed (said on stderr unless quiet). */
static int expire(const struct fctl_engine_opts *eo, const char *id, bool force,
		  const char *log, const char *change_id, bool quiet)
{
	struct fctl_confirm_pending c;
	struct fctl_apply_result res;
	char detail[256], dl[32], to[64];
	int r = fctl_engine_confirm_expire(eo, id, force, &c, &res);

	if (r == 1) {
		fmt_time(c.deadline, dl, sizeof(dl));
		snprintf(detail, sizeof(detail),
			 "version %" PRIu64 " %s%s: back to %s", c.version,
			 force ? "cancelled before its deadline" : "not confirmed by ", force ? "" : dl,
			 fctl_host_confirm_back_to(&c, to, sizeof(to)));
		/* SAs withheld for nonce safety (docs/keys-and-pn.md): the record says which */
		if (res.withheld && !res.error[0])
			snprintf(res.error, sizeof(res.error), "%zu SAs withheld: %s", res.withheld,
				 res.withheld_why);
		audit_event(log, change_id, "confirm-rollback", "rolled-back", &res, detail);
	} else if (r < 0 && r != -EBUSY) {
		snprintf(detail, sizeof(detail), "the rollback of an unconfirmed apply failed");
		audit_event(log, change_id, "confirm-rollback", "failed", &res, detail);
	}
	if (r < 0 && !quiet)
		cli_err("confirm: rollback on %s failed: %s", res.host,
			res.error[0] ? res.error : strerror(-r));
	fctl_apply_result_release(&res);
	return r;
}

/* The watchdog's pid file STATE_DIR/confirm.pid, locked while it lives: an fd or -1. An
 * earlier watchdog (of a record just confirmed) may hold it for a moment: wait a little. */
static int pid_file(const struct fctl_engine_opts *eo)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], pid[24];
	int fd;

	fctl_state_dir_path(eo->state_dir, eo->netns, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/confirm.pid", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -1;
	for (int i = 0; i < 50 && flock(fd, LOCK_EX | LOCK_NB) < 0; i++)
		usleep(100 * 1000);
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -1;
	}
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || fctl_write_all(fd, pid, strlen(pid)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Waits up to a second for the CLI's end of the life pipe to close: false once it did. */
static bool cli_alive(int *life_fd)
{
	struct pollfd p = { .fd = *life_fd, .events = POLLIN };

	if (*life_fd < 0)
		return false;
	if (poll(&p, 1, 1000) == 0)
		return true;
	close(*life_fd); /* EOF or an error: the CLI is gone, whichever way it ended */
	*life_fd = -1;
	return false;
}

/* The watchdog: a process of its own session, started by apply --confirm before the apply,
 * that outlives the CLI. Once record id exists (the engine writes it before its journal)
 * it waits for the deadline and rolls back then; it ends when the record is confirmed or
 * replaced, or when the CLI ended (life_fd closed, however it died) without one. ready_fd
 * gets one byte once it watches. */
static int watchdog(const struct fctl_engine_opts *eo, const char *id, int ready_fd,
		    int life_fd, const char *log, const char *change_id)
{
	struct fctl_confirm_pending c;
	int pfd = pid_file(eo), r;
	bool seen = false;

	signal(SIGHUP, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (pfd < 0 || ready_fd < 0 || write(ready_fd, "1", 1) != 1)
		return EXIT_USAGE; /* no byte: apply is refused */
	close(ready_fd);
	for (;;) {
		int64_t left;
		bool mine;

		r = fctl_engine_confirm_pending(eo, &c);
		mine = r == 1 && strcmp(c.id, id) == 0;
		if (!mine) {
			/* confirmed or replaced; or the CLI ended without a record (refused,
			 * failed, nothing to change): read once more after it ended */
			if (seen || (life_fd < 0 && r >= 0))
				break;
			if (!cli_alive(&life_fd) && r < 0)
				sleep(1); /* unreadable for now: keep trying */
			continue;
		}
		seen = true;
		left = c.deadline - (int64_t)time(NULL);
		if (left <= 0 || c.expiring) {
			r = expire(eo, id, false, log, change_id, true);
			if (r >= 0)
				break;
			sleep(r == -EBUSY ? 1 : 5); /* the lock is held, or the rollback failed */
			continue;
		}
		if (life_fd >= 0)
			cli_alive(&life_fd); /* a second, and the pipe closed when it is gone */
		else
			sleep(left > 1 ? 1 : (unsigned)left);
	}
	if (life_fd >= 0)
		close(life_fd);
	close(pfd);
	return EXIT_OK;
}

void cli_confirm_note(const struct fctl_engine_opts *eo)
{
	struct fctl_confirm_pending c;
	char dl[32], to[64];

	if (fctl_engine_confirm_pending(eo, &c) != 1)
		return;
	fmt_time(c.deadline, dl, sizeof(dl));
	fprintf(stderr, "awaiting confirmation until %s: run 'fabricctl confirm' on this host "
			"(or 'fabricctl confirm --target HOST' through its agent), or it goes "
			"back to %s\n",
		dl, fctl_host_confirm_back_to(&c, to, sizeof(to)));
}

/* confirm's options */
struct confirm_args {
	struct fctl_engine_opts eo;
	const char *audit_log, *change_id, *watchdog;
	int ready_fd, life_fd;
	bool json, quiet, cancel;
};

static const struct option opts[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "netns", required_argument, NULL, 'n' },
	{ "host", required_argument, NULL, 'H' },
	{ "state-dir", required_argument, NULL, 's' },
	{ "audit-log", required_argument, NULL, 'a' },
	{ "change", required_argument, NULL, 'c' },
	{ "cancel", no_argument, NULL, 'C' },
	/* hidden: the watchdog apply --confirm starts (its id, its two pipe ends) */
	{ "watchdog", required_argument, NULL, CLI_HIDDEN | 'w' },
	{ "ready-fd", required_argument, NULL, CLI_HIDDEN | 'r' },
	{ "life-fd", required_argument, NULL, CLI_HIDDEN | 'l' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

const struct option *cli_opts_confirm(const char *cmd, const char *sub)
{
	(void)cmd;
	(void)sub;
	return opts;
}

static void args_init(struct confirm_args *a)
{
	memset(a, 0, sizeof(*a));
	a->ready_fd = a->life_fd = -1;
	a->eo.keymgr_path = cli_keymgr_path();
	a->change_id = getenv("FCTL_CHANGE_ID");
}

static int parse(int argc, char **argv, struct confirm_args *a)
{
	uint64_t v;
	int ch;

	args_init(a);
	optind = 1;
	while ((ch = cli_getopt("confirm", argc, argv, "qh", opts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			a->json = true;
			break;
		case 'n':
			a->eo.netns = optarg;
			break;
		case 'H':
			a->eo.host = optarg;
			break;
		case 's':
			a->eo.state_dir = optarg;
			break;
		case 'a':
			a->audit_log = optarg;
			break;
		case 'c':
			a->change_id = optarg;
			break;
		case 'C':
			a->cancel = true;
			break;
		case CLI_HIDDEN | 'w':
			a->watchdog = optarg;
			break;
		case CLI_HIDDEN | 'r':
		case CLI_HIDDEN | 'l':
			if (fctl_parse_u64(optarg, &v) < 0 || v < 3 || v > 1023) {
				cli_err("confirm: bad --%s '%s'",
					ch == (CLI_HIDDEN | 'r') ? "ready-fd" : "life-fd",
					optarg);
				return EXIT_USAGE;
			}
			*(ch == (CLI_HIDDEN | 'r') ? &a->ready_fd : &a->life_fd) = (int)v;
			break;
		case 'q':
			a->quiet = true;
			break;
		case 'h':
			cli_usage_cmd("confirm");
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_err("confirm: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	return -1;
}

/* confirm --cancel: the rollback now, as the deadline would make it */
static int cancel(struct confirm_args *a)
{
	int r = expire(&a->eo, NULL, true, a->audit_log, a->change_id, false);

	if (a->json)
		printf("{\"result\":\"%s\"}\n", r == 1 ? "rolled-back" : r == 0 ? "none" : "failed");
	if (r == 0) {
		cli_err("confirm: --cancel: no confirmation is pending");
		return EXIT_INVALID;
	}
	if (r < 0)
		return r == -EBUSY ? EXIT_USAGE : EXIT_FAILED;
	if (!a->json && !a->quiet)
		printf("cancelled: the host went back to the version before\n");
	return EXIT_OK;
}

/* A version confirmed stays: with an approval policy on this host it needs the approvals
 * the policy requires now (its copy in the history keeps its signatures). Refused, it is
 * not confirmed and the deadline still rolls it back; audited as a refused confirm. */
static int confirm_gate(const struct confirm_args *a, const char *host)
{
	struct fctl_approval_policy pol;
	struct fctl_confirm_pending c;
	struct fctl_diags d = { 0 };
	struct fctl_profile *p = NULL;
	struct fctl_approvals ap = { 0 };
	char why[2048];
	int rc;

	if (fctl_approval_policy_load(cli_approvals_conf(), &pol, why, sizeof(why)) == 0 ||
	    fctl_engine_confirm_pending(&a->eo, &c) != 1)
		return EXIT_OK; /* no policy; or nothing pending, which the engine says */
	if (fctl_engine_load_version(&a->eo, c.version, &d, &p) < 0) {
		snprintf(why, sizeof(why), "version %" PRIu64 " cannot be loaded from the history "
			 "to check its approvals", c.version);
		rc = EXIT_USAGE;
	} else {
		rc = cli_approvals_gate(p, &ap, why, sizeof(why));
	}
	fctl_diags_release(&d);
	fctl_profile_free(p);
	fctl_approvals_release(&ap);
	if (rc == EXIT_OK)
		return rc;
	cli_err("confirm: refused: %s; version %" PRIu64 " is not confirmed (its deadline "
		"rolls it back)", why, c.version);
	{
		struct fctl_apply_result res = { .failed_op = -1 };

		snprintf(res.host, sizeof(res.host), "%s", host);
		snprintf(res.error, sizeof(res.error), "%s", why);
		if (audit_event(a->audit_log, a->change_id, "confirm", "refused", &res, NULL) < 0)
			rc = EXIT_USAGE;
	}
	return rc;
}

/* confirm: the pending apply --confirm made permanent, after the approvals' gate, audited */
static int confirm_now(const struct confirm_args *a)
{
	struct fctl_confirm_pending c;
	char err[512] = "", host[64] = "", detail[128], dl[32];
	int r, rc;

	fctl_engine_host_name(&a->eo, host, sizeof(host));
	rc = confirm_gate(a, host);
	if (rc != EXIT_OK)
		return rc;
	r = fctl_engine_confirm(&a->eo, &c, err, sizeof(err));
	if (r < 0) {
		if (a->json)
			printf("{\"host\":\"%s\",\"result\":\"%s\"}\n", host,
			       r == -ENOENT ? "none" : r == -ETIMEDOUT ? "too-late" : "failed");
		cli_err("confirm: %s", err[0] ? err : strerror(-r));
		return r == -ENOENT || r == -ETIMEDOUT ? EXIT_INVALID : EXIT_USAGE;
	}
	fmt_time(c.deadline, dl, sizeof(dl));
	snprintf(detail, sizeof(detail), "version %" PRIu64 " confirmed before its deadline %s",
		 c.version, dl);
	{
		struct fctl_apply_result res = { .failed_op = -1 };

		snprintf(res.host, sizeof(res.host), "%s", host);
		rc = audit_event(a->audit_log, a->change_id, "confirm", "confirmed", &res, detail) < 0
			     ? EXIT_USAGE
			     : EXIT_OK;
	}
	if (rc != EXIT_OK)
		cli_err("confirm: version %" PRIu64 " IS confirmed, but no audit record says so",
			c.version);
	if (a->json)
		printf("{\"host\":\"%s\",\"result\":\"confirmed\",\"version\":%" PRIu64
		       ",\"deadline\":\"%s\"}\n", host, c.version, dl);
	else if (!a->quiet)
		printf("confirmed: version %" PRIu64 " stays on %s\n", c.version, host);
	return rc;
}

int cmd_confirm(int argc, char **argv)
{
	struct confirm_args a;
	int rc = cmd_fabric_dispatch("confirm", argc, argv); /* --target, --fabric */

	if (rc >= 0)
		return rc;
	rc = parse(argc, argv, &a);
	if (rc >= 0)
		return rc;
	if (a.watchdog)
		return watchdog(&a.eo, a.watchdog, a.ready_fd, a.life_fd, a.audit_log, a.change_id);
	if (a.cancel)
		return cancel(&a);
	return confirm_now(&a);
}

int cli_confirm_run(const struct cli_host *c)
{
	struct confirm_args a;

	args_init(&a);
	a.json = c->json;
	a.eo.host = c->eo.host;
	a.eo.netns = c->eo.netns;
	a.eo.state_dir = c->eo.state_dir;
	a.audit_log = c->audit_log;
	return confirm_now(&a);
}
