// SPDX-License-Identifier: MIT
/*
 * The remote side of apply | plan | show | diff | rollback | history | status:
 * --target HOST (one agent) or --fabric (every host of the inventory), over
 * mutual TLS or a Unix socket. Parses the options and prints (text or --json);
 * the fan-out and the two-phase fabric apply with its rollback are libfctl's
 * fctl_fabric (fctl/fabric.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fctl/agent.h"
#include "fctl/approvals.h"
#include "fctl/fabric.h"
#include "fctl/inventory.h"
#include "fctl/profile_slice.h"
#include "fctl/tls.h"

struct remote {
	const char *cmd;
	uint8_t type;
	bool fabric, json, quiet, whole_profile;
	const char *target, *inventory, *profile_file, *cert, *key, *ca;
	struct fctl_fabric_opts o;
	struct fctl_profile *profile;
	struct fctl_profile_slicer *slicer; /* NULL: every host gets the whole profile */
	unsigned char *bytes;
	struct fctl_buf sigs; /* apply: the profile's signature files (FCTL_TLV_SIGS) */
	struct fctl_inventory inv;
};

static const char *outcome_text(int rc)
{
	return rc == 0	  ? "ok"
	       : rc == 1  ? "differences or invalid"
	       : rc == 13 ? "permission denied"
	       : rc == 3  ? "failed, rolled back on the host"
			  : "error";
}

/* Progress on stderr while the phases run; a changed host that cannot be rolled
 * back is said whatever --quiet. */
static void progress(void *ctx, const struct fctl_fabric_progress *ev)
{
	const struct remote *rm = ctx;

	if (ev->event == FCTL_FABRIC_NOT_ROLLED_BACK) {
		if (ev->r->status == -ETIMEDOUT)
			cli_err("apply: %s timed out and may have applied; it had no profile "
				"applied before, so it cannot be rolled back through its history",
				ev->r->host->name);
		else
			cli_err("apply: %s had no profile applied before: it cannot be rolled "
				"back through its history; it keeps the new profile",
				ev->r->host->name);
		return;
	}
	if (!rm->quiet)
		fprintf(stderr, "%s [%zu/%zu] %s: %s\n", fctl_proto_type_name(ev->phase), ev->done,
			ev->total, ev->r->host->name, outcome_text(ev->r->exit));
}

/* What a host's stderr shows: the agent's, or why there was no answer. */
static char *host_error(const struct fctl_fabric_result *r, char *buf, size_t len)
{
	const struct fctl_inventory_host *h = r->host;

	if (r->status == 0)
		return r->error;
	if (r->status == -EDESTADDRREQ)
		snprintf(buf, len, "fabricctl: host '%s' has no agent endpoint "
				   "(hosts[].agent or --inventory)\n", h->name);
	else
		snprintf(buf, len, "fabricctl: %s (%s): %s%s\n", h->name, h->endpoint,
			 r->error ? r->error : "",
			 r->status == -ECONNRESET || (r->error && strstr(r->error, "closed"))
				 ? " (refused? the agent needs a certificate of the fabric CA that "
				   "names a role)"
				 : "");
	return buf;
}

static const char *env_or(const char *v, const char *env)
{
	return v ? v : getenv(env);
}

/* apply --target HOST --confirm DURATION: 1 s to 7 days, as the local apply takes it */
static int parse_confirm(struct remote *rm, const char *arg)
{
	uint64_t s;

	if (cli_parse_confirm(arg, &s) < 0)
		return -EINVAL;
	rm->o.confirm_seconds = (uint32_t)s;
	return 0;
}

/* --parallel N (ch 'n') or --timeout DUR ('o') */
static int parse_limit(struct remote *rm, int ch, const char *arg)
{
	uint64_t n;

	if (ch == 'n') {
		if (fctl_parse_u64(arg, &n) < 0 || !n || n > FCTL_FABRIC_MAX_PARALLEL) {
			cli_err("%s: --parallel expects 1..%u", rm->cmd, FCTL_FABRIC_MAX_PARALLEL);
			return -EINVAL;
		}
		rm->o.parallel = (unsigned)n;
		return 0;
	}
	if (fctl_parse_duration(arg, &n) < 0 || !n || n > 3600) {
		cli_err("%s: --timeout expects 1s..1h", rm->cmd);
		return -EINVAL;
	}
	rm->o.timeout_s = (unsigned)n;
	return 0;
}

/* The remote form's options, one table a command: the parser and the completion read the
 * same (cli_opts_remote). */
#define R_BASE                                                                              \
	{ "fabric", no_argument, NULL, 'F' }, { "target", required_argument, NULL, 'T' },     \
	{ "inventory", required_argument, NULL, 'I' },                                        \
	{ "profile", required_argument, NULL, 'P' }, { "cert", required_argument, NULL, 'C' }, \
	{ "key", required_argument, NULL, 'K' }, { "ca", required_argument, NULL, 'A' },       \
	{ "json", no_argument, NULL, 'j' }, { "parallel", required_argument, NULL, 'n' },      \
	{ "timeout", required_argument, NULL, 'o' }, { "quiet", no_argument, NULL, 'q' },      \
	{ "help", no_argument, NULL, 'h' }
#define R_END { NULL, 0, NULL, 0 }

static const struct option r_apply[] = {
	R_BASE, { "dry-run", no_argument, NULL, 'd' }, { "partial", no_argument, NULL, 'p' },
	{ "confirm", required_argument, NULL, 'c' }, R_END,
};
static const struct option r_sliced[] = { R_BASE, { "whole-profile", no_argument, NULL, 'W' },
					  R_END };
static const struct option r_rollback[] = { R_BASE, { "to", required_argument, NULL, 't' },
					    R_END };
static const struct option r_plain[] = { R_BASE, R_END };

static const struct {
	const char *cmd;
	uint8_t type;
	const struct option *opts;
} remote_cmds[] = {
	{ "apply", FCTL_MSG_APPLY, r_apply },	    { "plan", FCTL_MSG_PLAN, r_sliced },
	{ "show", FCTL_MSG_SHOW, r_plain },	    { "diff", FCTL_MSG_DIFF, r_sliced },
	{ "rollback", FCTL_MSG_ROLLBACK, r_rollback }, { "history", FCTL_MSG_HISTORY, r_plain },
	{ "status", FCTL_MSG_STATUS, r_plain },	    { "recover", FCTL_MSG_RECOVER, r_plain },
	{ "confirm", FCTL_MSG_CONFIRM, r_plain },
};

const struct option *cli_opts_remote(const char *cmd)
{
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(remote_cmds); i++)
		if (strcmp(remote_cmds[i].cmd, cmd) == 0)
			return remote_cmds[i].opts;
	return NULL;
}

bool cli_remote_form(const char *cmd, int argc, char **argv)
{
	bool remote = strcmp(cmd, "status") == 0;

	if (!cli_opts_remote(cmd))
		return false;
	for (int i = 1; i < argc && !remote; i++)
		remote = strcmp(argv[i], "--fabric") == 0 || strcmp(argv[i], "--target") == 0 ||
			 strncmp(argv[i], "--target=", 9) == 0;
	return remote;
}

static int parse(struct remote *rm, int argc, char **argv)
{
	const struct option *opts = cli_opts_remote(rm->cmd);
	int ch;

	optind = 1;
	while ((ch = cli_getopt(rm->cmd, argc, argv, "qh", opts, NULL)) != -1) {
		switch (ch) {
		case 'F':
			rm->fabric = true;
			break;
		case 'T':
			rm->target = optarg;
			break;
		case 'I':
			rm->inventory = optarg;
			break;
		case 'P':
			rm->profile_file = optarg;
			break;
		case 'C':
			rm->cert = optarg;
			break;
		case 'K':
			rm->key = optarg;
			break;
		case 'A':
			rm->ca = optarg;
			break;
		case 'j':
			rm->json = true;
			rm->o.options |= FCTL_OPT_JSON;
			break;
		case 'd':
			rm->o.options |= FCTL_OPT_DRY_RUN;
			break;
		case 't':
			if (fctl_parse_u64(optarg, &rm->o.to_version) < 0 || !rm->o.to_version) {
				cli_err("%s: --to expects a profile version", rm->cmd);
				return EXIT_USAGE;
			}
			break;
		case 'p':
			rm->o.partial = true;
			break;
		case 'n':
		case 'o':
			if (parse_limit(rm, ch, optarg) < 0)
				return EXIT_USAGE;
			break;
		case 'q':
			rm->quiet = true;
			break;
		case 'W':
			rm->whole_profile = true;
			break;
		case 'c':
			if (parse_confirm(rm, optarg) < 0)
				return EXIT_USAGE;
			break;
		case 'h':
			cli_usage_cmd(rm->cmd);
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (rm->type == FCTL_MSG_STATUS && !rm->fabric && !rm->target)
		rm->target = "unix:" FCTL_AGENT_SOCKET;
	if (rm->fabric == !!rm->target) {
		cli_err("%s: give either --fabric or --target HOST", rm->cmd);
		return EXIT_USAGE;
	}
	if (optind < argc) {
		if (rm->profile_file || optind + 1 != argc) {
			cli_err("%s: expected at most one PROFILE", rm->cmd);
			return EXIT_USAGE;
		}
		rm->profile_file = argv[optind];
	}
	if ((rm->type == FCTL_MSG_APPLY || rm->type == FCTL_MSG_PLAN || rm->type == FCTL_MSG_DIFF) &&
	    !rm->profile_file) {
		cli_err("%s: expected a PROFILE", rm->cmd);
		return EXIT_USAGE;
	}
	if (rm->o.confirm_seconds && (rm->fabric || (rm->o.options & FCTL_OPT_DRY_RUN))) {
		/* a fabric apply has its own rollback, which a pending confirmation would
		 * refuse on every host it changed; a plan has nothing to confirm */
		cli_err("apply: --confirm goes with --target HOST, not with %s",
			rm->fabric ? "--fabric" : "--dry-run");
		return EXIT_USAGE;
	}
	if (rm->type == FCTL_MSG_ROLLBACK && !rm->o.to_version) {
		cli_err("rollback: expected --to VERSION");
		return EXIT_USAGE;
	}
	rm->cert = env_or(rm->cert, "FCTL_CERT");
	rm->key = env_or(rm->key, "FCTL_KEY");
	rm->ca = env_or(rm->ca, "FCTL_CA");
	return -1;
}

/* apply: the signature files beside the profile (PROFILE.sig, PROFILE.NAME.sig,
 * PROFILE.sig.d/ *.sig) travel with it, each under its own file name, so that the agent's
 * host checks them against its own policy as for a local apply (docs/approvals.md). A
 * symlinked one is not sent: it would not count locally either. */
static int load_sigs(struct remote *rm)
{
	char **files = NULL;
	size_t n = 0, k = 0;
	int rc = EXIT_OK, r = fctl_approvals_list(rm->profile_file, &files, &n);

	if (r < 0) {
		cli_err("%s: '%s': cannot list its signature files: %s", rm->cmd,
			rm->profile_file, strerror(-r));
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < n && rc == EXIT_OK; i++) {
		struct fctl_buf b = { 0 };
		const char *base = strrchr(files[i], '/');

		base = base ? base + 1 : files[i];
		r = fctl_approvals_read_at(AT_FDCWD, files[i], FCTL_PROTO_MAX_SIG, &b);
		if (r == -ELOOP || r == -EINVAL) {
			cli_err("warning: %s: '%s' is not a regular file: not sent (symlinks "
				"do not count)", rm->cmd, files[i]);
		} else if (r < 0) {
			cli_err("%s: signature file '%s': %s%s", rm->cmd, files[i], strerror(-r),
				r == -EFBIG ? " (at most 65536 bytes travel with a remote apply)" : "");
			rc = EXIT_USAGE;
		} else if ((r = fctl_proto_sig_put(&rm->sigs, &k, base, b.data, b.len)) < 0) {
			cli_err("%s: signature file '%s': %s", rm->cmd, files[i],
				r == -EINVAL ? "its name cannot travel to an agent (NAME.sig of "
					       "[A-Za-z0-9._+@-], at most 128 bytes)"
				: r == -ENOSPC ? "more signature files than a request carries (64)"
					       : strerror(-r));
			rc = EXIT_USAGE;
		}
		fctl_buf_release(&b);
	}
	fctl_approvals_list_free(files, n);
	rm->o.sigs = (const unsigned char *)rm->sigs.data;
	rm->o.sigs_len = rm->sigs.len;
	return rc;
}

static int read_bytes(const char *file, unsigned char **out, size_t *n)
{
	FILE *f = fopen(file, "rb");
	struct fctl_buf b = { 0 };
	char tmp[65536];
	size_t k;
	int r = 0;

	if (!f)
		return -errno;
	while ((k = fread(tmp, 1, sizeof(tmp), f)) > 0 && b.len <= FCTL_PROTO_MAX_PROFILE)
		fctl_buf_append(&b, tmp, k);
	if (ferror(f))
		r = -EIO;
	fclose(f);
	if (r == 0 && b.len > FCTL_PROTO_MAX_PROFILE)
		r = -EFBIG;
	if (r == 0 && b.oom)
		r = -ENOMEM;
	if (r < 0) {
		fctl_buf_release(&b);
		return r;
	}
	*n = b.len;
	*out = (unsigned char *)fctl_buf_steal(&b);
	return 0;
}

static void emit(FILE *f, const char *s)
{
	if (s && *s)
		fputs(s, f);
}

static void json_host(struct fctl_buf *o, const struct fctl_fabric_result *r, const char *phase,
		      bool raw_json)
{
	char buf[1024];
	const char *err = host_error(r, buf, sizeof(buf));

	fctl_buf_puts(o, "{\"host\":");
	fctl_buf_json_str(o, r->host->name);
	fctl_buf_puts(o, ",\"endpoint\":");
	fctl_buf_json_str(o, r->host->endpoint);
	fctl_buf_printf(o, ",\"phase\":\"%s\",\"exit\":%d", phase, r->exit);
	if (r->profile_sent)
		fctl_buf_printf(o, ",\"profile_bytes\":%zu", r->profile_sent);
	if (r->tls_resumed)
		fctl_buf_puts(o, ",\"tls_resumed\":true");
	if (r->has_prev)
		fctl_buf_printf(o, ",\"previous_version\":%" PRIu64, r->prev);
	fctl_buf_puts(o, ",\"output\":");
	/* the agent's --json output is embedded only when it is valid JSON: a broken or
	 * hostile agent gets a string, never a say in the document's structure */
	if (raw_json)
		fctl_fabric_json_output(o, r->output);
	else
		fctl_buf_json_str(o, r->output);
	fctl_buf_puts(o, ",\"error\":");
	fctl_buf_json_str(o, err && *err ? err : NULL);
	fctl_buf_puts(o, "}");
}

/* phase: what a host that took no part in the last phase is reported under */
static int print_hosts(struct remote *rm, const struct fctl_fabric_result *v, size_t n,
		       const char *phase, const char *result, int rc)
{
	struct fctl_buf o = { 0 };
	char buf[1024];

	if (rm->json) {
		fctl_buf_printf(&o, "{\"command\":\"%s\",\"result\":\"%s\",\"exit\":%d,\"hosts\":[",
				rm->cmd, result, rc);
		for (size_t i = 0; i < n; i++) {
			if (i)
				fctl_buf_putc(&o, ',');
			json_host(&o, &v[i], v[i].type ? fctl_proto_type_name(v[i].type) : phase,
				  true);
		}
		fctl_buf_puts(&o, "]}\n");
		cli_write(stdout, &o);
	} else {
		for (size_t i = 0; i < n; i++) {
			if (!rm->quiet || v[i].exit)
				printf("== %s (%s): exit %d\n", v[i].host->name,
				       v[i].host->endpoint, v[i].exit);
			if (!rm->quiet)
				emit(stdout, v[i].output);
			fflush(stdout);
			emit(stderr, host_error(&v[i], buf, sizeof(buf)));
		}
		if (!rm->quiet)
			printf("fabric %s: %s\n", rm->cmd, result);
	}
	fctl_buf_release(&o);
	return rc;
}

/* The verdict of a fabric apply as the command says it, and its exit code. */
static int print_apply(struct remote *rm, const struct fctl_fabric_result *v, size_t n,
		       const struct fctl_fabric_outcome *oc)
{
	const char *result = fctl_fabric_verdict_name(oc->verdict);

	switch (oc->verdict) {
	case FCTL_FABRIC_PLAN_FAILED:
		cli_err("apply: a plan failed; nothing was applied on any host");
		return print_hosts(rm, v, n, "plan", result,
				   oc->worst == 13 ? EXIT_USAGE : oc->worst);
	case FCTL_FABRIC_PLANNED:
		return print_hosts(rm, v, n, "plan", result, EXIT_OK);
	case FCTL_FABRIC_APPLIED:
		return print_hosts(rm, v, n, "apply", result, EXIT_OK);
	case FCTL_FABRIC_PARTIAL:
		cli_err("apply: failed on some hosts; --partial: the others keep the new profile");
		return print_hosts(rm, v, n, "apply", result, EXIT_FAILED);
	case FCTL_FABRIC_ROLLED_BACK:
		cli_err("apply: failed on at least one host; every host changed was rolled back");
		return print_hosts(rm, v, n, "apply", result, EXIT_FAILED);
	default:
		cli_err("apply: failed on at least one host; ROLLBACK INCOMPLETE: see per-host "
			"results");
		return print_hosts(rm, v, n, "apply", result, EXIT_USAGE);
	}
}

/* An agent that predates a request refuses it whole (docs/protocol.md, "Versions"):
 * nothing ran; say what that means. */
static void old_agent_hint(const struct remote *rm, const struct fctl_fabric_result *r)
{
	const char *e = r->status == 0 && r->exit == 2 ? r->error : NULL;

	if (!e)
		return;
	if (rm->type == FCTL_MSG_APPLY && rm->o.confirm_seconds &&
	    strstr(e, "unknown critical TLV 0x8017"))
		cli_err("apply: %s runs an agent older than 'apply --target --confirm': nothing "
			"was applied (upgrade its agent, or run 'apply --confirm' on the host)",
			r->host->name);
	else if (rm->type == FCTL_MSG_CONFIRM && strstr(e, "bad header"))
		cli_err("confirm: %s runs an agent older than 'confirm --target': nothing was "
			"confirmed (run 'fabricctl confirm' on the host)", r->host->name);
}

/* --target: exactly what the command prints on that host, and its exit code. */
static int run_target(struct remote *rm)
{
	static struct fctl_inventory_host direct;
	const struct fctl_inventory_host *h = fctl_inventory_find(&rm->inv, rm->target);
	struct fctl_fabric_result r = { 0 };
	char buf[1024];
	int rc;

	if (!h) {
		if (!strchr(rm->target, ':') && rm->target[0] != '/') {
			cli_err("%s: host '%s' is not in the inventory (give --inventory, a "
				"profile naming it, or an endpoint HOST:PORT / unix:PATH)",
				rm->cmd, rm->target);
			return EXIT_USAGE;
		}
		snprintf(direct.name, sizeof(direct.name), "%s", rm->target);
		snprintf(direct.endpoint, sizeof(direct.endpoint), "%s", rm->target);
		h = &direct;
	}
	r.host = h;
	if (fctl_fabric_call(&rm->o, rm->type, &r) < 0)
		return EXIT_USAGE;
	emit(stdout, r.output);
	fflush(stdout);
	emit(stderr, host_error(&r, buf, sizeof(buf)));
	old_agent_hint(rm, &r);
	rc = r.exit == 13 ? EXIT_USAGE : r.exit;
	fctl_fabric_results_release(&r, 1);
	return rc;
}

/* opts.profile_for: host h's slice of the profile; NULL (the whole profile) for an
 * endpoint without a host name (the agent then plans as the host it is), a host not in
 * the profile (the agent says so) or a slice that did not check out. */
static unsigned char *host_part(void *ctx, const struct fctl_inventory_host *h, size_t *len)
{
	const struct remote *rm = ctx;
	struct fctl_buf b = { 0 };

	if (!rm->slicer || strcmp(h->name, h->endpoint) == 0 ||
	    fctl_profile_slicer_host(rm->slicer, h->name, &b) < 0) {
		fctl_buf_release(&b);
		return NULL;
	}
	*len = b.len;
	return (unsigned char *)fctl_buf_steal(&b);
}

/* --fabric: every host of the inventory; apply in two phases. */
static int run_fabric(struct remote *rm)
{
	struct fctl_fabric_outcome oc;
	struct fctl_fabric_result *v;
	size_t n = rm->inv.n;
	int rc, r;

	if (!n) {
		cli_err("%s: --fabric needs hosts: a PROFILE, --profile FILE or --inventory FILE",
			rm->cmd);
		return EXIT_USAGE;
	}
	v = calloc(n, sizeof(*v));
	if (!v)
		return EXIT_USAGE;
	for (size_t i = 0; i < n; i++)
		v[i].host = &rm->inv.v[i];
	if (rm->type == FCTL_MSG_APPLY) {
		r = fctl_fabric_apply(&rm->o, v, n, &oc);
		rc = r < 0 ? EXIT_USAGE : print_apply(rm, v, n, &oc);
	} else {
		r = fctl_fabric_run(&rm->o, rm->type, v, n, &oc);
		rc = r < 0 ? EXIT_USAGE
			   : print_hosts(rm, v, n, rm->cmd, fctl_fabric_verdict_name(oc.verdict),
					 oc.worst == 13 ? EXIT_USAGE : oc.worst);
	}
	fctl_fabric_results_release(v, n);
	free(v);
	return rc;
}

/* The user's TLS session cache attached to ctx (docs/agent.md, "Session resumption"):
 * FCTL_TLS_CACHE=off for none, =PATH for another file. A cache refused (owner, mode) or
 * unreadable is said and the run goes on with full handshakes. True when attached. */
static bool session_cache(const char *cmd, struct ssl_ctx_st *ctx)
{
	const char *env = getenv("FCTL_TLS_CACHE");
	char path[PATH_MAX], err[768] = "";
	int r;

	if (env && strcmp(env, "off") == 0)
		return false;
	if (env && env[0] == '/')
		r = snprintf(path, sizeof(path), "%s", env) < (int)sizeof(path) ? 0 : -ENAMETOOLONG;
	else
		r = fctl_tls_cache_path(path, sizeof(path));
	if (r < 0)
		return false;
	r = fctl_tls_cache_attach(ctx, path, err, sizeof(err));
	if (r != 0)
		cli_err("%s: warning: %s%s", cmd, err,
			r == -EPERM ? ": not used (remove the file, or FCTL_TLS_CACHE=off)" : "");
	return r >= 0;
}

static int remote_main(struct remote *rm, int argc, char **argv)
{
	char err[768] = "";
	size_t n_bytes = 0;
	int rc = parse(rm, argc, argv), r;
	bool cache = false;

	if (rc >= 0)
		return rc;
	signal(SIGPIPE, SIG_IGN); /* a refused peer closes mid-write: an error, not a death */
	if (rm->profile_file) {
		/* findings name the file here, before anything is sent */
		rc = cli_need_regular(rm->cmd, rm->profile_file);
		if (rc == EXIT_OK)
			rc = cli_load_profile(rm->profile_file, &rm->profile, true, rm->json);
		if (rc != EXIT_OK)
			return rc;
		r = read_bytes(rm->profile_file, &rm->bytes, &n_bytes);
		if (r < 0) {
			cli_err("%s: '%s': %s", rm->cmd, rm->profile_file, strerror(-r));
			rc = EXIT_USAGE;
			goto out;
		}
		rm->o.profile = rm->bytes;
		rm->o.profile_len = n_bytes;
		rm->o.profile_name = rm->profile_file;
		if (rm->type == FCTL_MSG_APPLY && (rc = load_sigs(rm)) != EXIT_OK)
			goto out;
		/* plan and diff send each host its part (a layout not cut by lines: the
		 * whole profile, as apply always does) */
		if ((rm->type == FCTL_MSG_PLAN || rm->type == FCTL_MSG_DIFF) && !rm->whole_profile &&
		    fctl_profile_slicer_new(rm->bytes, n_bytes, rm->profile, &rm->slicer) == 0) {
			rm->o.profile_for = host_part;
			rm->o.profile_for_ctx = rm;
		}
	}
	r = fctl_inventory_load(&rm->inv, rm->profile, rm->inventory, err, sizeof(err));
	if (r < 0) {
		cli_err("%s: inventory %s", rm->cmd, err);
		rc = EXIT_USAGE;
		goto out;
	}
	if (rm->cert || rm->key || rm->ca) {
		r = fctl_tls_ctx_new(false, rm->cert, rm->key, rm->ca, &rm->o.tls, err,
				     sizeof(err));
		if (r < 0) {
			cli_err("%s: %s", rm->cmd, err);
			rc = EXIT_USAGE;
			goto out;
		}
		cache = session_cache(rm->cmd, rm->o.tls);
	}
	rm->o.progress = progress;
	rm->o.progress_ctx = rm;
	rc = rm->target ? run_target(rm) : run_fabric(rm);
	if (cache && fctl_tls_cache_save(rm->o.tls, err, sizeof(err)) < 0)
		cli_err("%s: warning: %s", rm->cmd, err);
out:
	fctl_inventory_release(&rm->inv);
	fctl_tls_ctx_free(rm->o.tls);
	fctl_profile_slicer_free(rm->slicer);
	fctl_profile_free(rm->profile);
	free(rm->bytes);
	fctl_buf_release(&rm->sigs);
	return rc;
}

int cmd_fabric_dispatch(const char *cmd, int argc, char **argv)
{
	struct remote rm = { .cmd = cmd };

	if (!cli_remote_form(cmd, argc, argv))
		return -1;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(remote_cmds); i++)
		if (strcmp(remote_cmds[i].cmd, cmd) == 0)
			rm.type = remote_cmds[i].type;
	return remote_main(&rm, argc, argv);
}

int cmd_status(int argc, char **argv)
{
	return cmd_fabric_dispatch("status", argc, argv);
}
