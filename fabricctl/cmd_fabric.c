// SPDX-License-Identifier: MIT
/*
 * The remote side of apply | plan | show | diff | rollback | history | status:
 * --target HOST (one agent) or --fabric (every host of the inventory), over
 * mutual TLS or a Unix socket. Fabric apply is two-phase: plan everywhere, apply
 * only when every plan succeeded, and roll back the hosts already changed when
 * one fails (unless --partial).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fctl/agent.h"
#include "fctl/inventory.h"
#include "fctl/tls.h"

struct remote {
	const char *cmd;
	uint8_t type;
	bool fabric, json, quiet, partial;
	uint32_t options;
	const char *target, *inventory, *profile_file, *cert, *key, *ca;
	uint64_t to;
	unsigned parallel, timeout;
	struct fctl_profile *profile;
	unsigned char *bytes;
	size_t n_bytes;
	struct ssl_ctx_st *ctx;
	struct fctl_inventory inv;
	pthread_mutex_t lock;
	size_t next, done, total;
	const char *phase;
};

struct hres {
	const struct fctl_inventory_host *h;
	uint8_t type;      /* request of this phase */
	uint32_t options;
	uint64_t to;
	int rc;            /* exit code of the host's command, 2 on a transport error */
	char *out, *err;
	bool has_prev;     /* the version applied before this run */
	uint64_t prev;
	bool changed;
};

static char *dupn(const void *p, size_t n)
{
	char *s = malloc(n + 1);

	if (s) {
		if (n)
			memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

static void hres_reset(struct hres *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
	r->rc = 0;
}

/* One request to one host, on its own connection. */
static void call_host(struct remote *rm, struct hres *hr)
{
	struct fctl_agent_conn *c = NULL;
	struct fctl_buf frame = { 0 };
	struct fctl_msg req = { .type = hr->type }, resp;
	char err[768] = "";
	int r;

	hres_reset(hr);
	if (!hr->h->endpoint[0]) {
		snprintf(err, sizeof(err), "fabricctl: host '%s' has no agent endpoint "
					   "(hosts[].agent or --inventory)\n", hr->h->name);
		hr->rc = EXIT_USAGE;
		hr->err = dupn(err, strlen(err));
		return;
	}
	r = fctl_agent_connect(hr->h->endpoint, rm->ctx, rm->timeout, &c, err, sizeof(err));
	if (r == 0) {
		req.options = hr->options;
		req.present = FCTL_HAS_OPTIONS;
		if (strcmp(hr->h->name, hr->h->endpoint) != 0) {
			/* an inventory host: the agent acts as that profile host */
			req.present |= FCTL_HAS_HOST;
			snprintf(req.host, sizeof(req.host), "%s", hr->h->name);
		}
		if (hr->type == FCTL_MSG_PLAN || hr->type == FCTL_MSG_APPLY ||
		    hr->type == FCTL_MSG_DIFF) {
			req.present |= FCTL_HAS_PROFILE | FCTL_HAS_PROFILE_NAME;
			req.profile = rm->bytes;
			req.profile_len = (uint32_t)rm->n_bytes;
			snprintf(req.profile_name, sizeof(req.profile_name), "%s", rm->profile_file);
		}
		if (hr->type == FCTL_MSG_ROLLBACK) {
			req.present |= FCTL_HAS_TO_VERSION;
			req.to_version = hr->to;
		}
		r = fctl_agent_call(c, &req, &resp, &frame, err, sizeof(err));
	}
	if (r < 0) {
		size_t k = strlen(err);

		char line[1024];

		(void)k;
		snprintf(line, sizeof(line), "fabricctl: %s (%s): %s%s\n", hr->h->name,
			 hr->h->endpoint, err,
			 r == -ECONNRESET || strstr(err, "closed")
				 ? " (refused? the agent needs a certificate of the fabric CA that "
				   "names a role)"
				 : "");
		hr->rc = EXIT_USAGE;
		hr->err = dupn(line, strlen(line));
	} else {
		hr->rc = (int)resp.result;
		hr->out = dupn(resp.output, resp.output_len);
		hr->err = dupn(resp.error, resp.error_len);
	}
	fctl_buf_release(&frame);
	fctl_agent_conn_free(c);
}

struct pool {
	struct remote *rm;
	struct hres *v;
	size_t n;
};

static void *pool_worker(void *arg)
{
	struct pool *p = arg;
	struct remote *rm = p->rm;

	for (;;) {
		size_t i;

		pthread_mutex_lock(&rm->lock);
		i = rm->next++;
		pthread_mutex_unlock(&rm->lock);
		if (i >= p->n)
			break;
		if (!p->v[i].type)
			continue;
		call_host(rm, &p->v[i]);
		pthread_mutex_lock(&rm->lock);
		rm->done++;
		if (!rm->quiet)
			fprintf(stderr, "%s [%zu/%zu] %s: %s\n", rm->phase, rm->done, rm->total,
				p->v[i].h->name,
				p->v[i].rc == 0 ? "ok" : p->v[i].rc == 1 ? "differences or invalid"
				: p->v[i].rc == 13			     ? "permission denied"
				: p->v[i].rc == 3 ? "failed, rolled back on the host"
						  : "error");
		pthread_mutex_unlock(&rm->lock);
	}
	return NULL;
}

/* Runs the requests set in v[] (type != 0) with at most rm->parallel at once. */
static void run_phase(struct remote *rm, const char *phase, struct hres *v, size_t n)
{
	pthread_t th[64];
	struct pool p = { rm, v, n };
	size_t nt = rm->parallel, started = 0;

	rm->next = rm->done = rm->total = 0;
	for (size_t i = 0; i < n; i++)
		rm->total += v[i].type != 0;
	rm->phase = phase;
	if (nt > rm->total)
		nt = rm->total;
	if (nt > FCTL_ARRAY_SIZE(th))
		nt = FCTL_ARRAY_SIZE(th);
	for (size_t i = 0; i < nt; i++)
		if (pthread_create(&th[started], NULL, pool_worker, &p) == 0)
			started++;
	if (!started)
		pool_worker(&p);
	for (size_t i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

static const char *env_or(const char *v, const char *env)
{
	return v ? v : getenv(env);
}

static int parse(struct remote *rm, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "fabric", no_argument, NULL, 'F' },	   { "target", required_argument, NULL, 'T' },
		{ "inventory", required_argument, NULL, 'I' }, { "profile", required_argument, NULL, 'P' },
		{ "cert", required_argument, NULL, 'C' },	   { "key", required_argument, NULL, 'K' },
		{ "ca", required_argument, NULL, 'A' },	   { "json", no_argument, NULL, 'j' },
		{ "dry-run", no_argument, NULL, 'd' },	   { "to", required_argument, NULL, 't' },
		{ "partial", no_argument, NULL, 'p' },	   { "parallel", required_argument, NULL, 'n' },
		{ "timeout", required_argument, NULL, 'o' }, { "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },	   { NULL, 0, NULL, 0 },
	};
	uint64_t n;
	int ch;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
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
			rm->options |= FCTL_OPT_JSON;
			break;
		case 'd':
			rm->options |= FCTL_OPT_DRY_RUN;
			break;
		case 't':
			if (fctl_parse_u64(optarg, &rm->to) < 0 || !rm->to) {
				cli_err("%s: --to expects a profile version", rm->cmd);
				return EXIT_USAGE;
			}
			break;
		case 'p':
			rm->partial = true;
			break;
		case 'n':
			if (fctl_parse_u64(optarg, &n) < 0 || !n || n > 64) {
				cli_err("%s: --parallel expects 1..64", rm->cmd);
				return EXIT_USAGE;
			}
			rm->parallel = (unsigned)n;
			break;
		case 'o':
			if (fctl_parse_duration(optarg, &n) < 0 || !n || n > 3600) {
				cli_err("%s: --timeout expects 1s..1h", rm->cmd);
				return EXIT_USAGE;
			}
			rm->timeout = (unsigned)n;
			break;
		case 'q':
			rm->quiet = true;
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
	if (rm->type == FCTL_MSG_ROLLBACK && !rm->to) {
		cli_err("rollback: expected --to VERSION");
		return EXIT_USAGE;
	}
	rm->cert = env_or(rm->cert, "FCTL_CERT");
	rm->key = env_or(rm->key, "FCTL_KEY");
	rm->ca = env_or(rm->ca, "FCTL_CA");
	return -1;
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

/* "...\"applied_version\":N..." of a status --json output */
static bool parse_prev(const char *s, uint64_t *v)
{
	const char *p = s ? strstr(s, "\"applied_version\":") : NULL;

	if (!p)
		return false;
	p += strlen("\"applied_version\":");
	if (*p < '0' || *p > '9')
		return false;
	*v = strtoull(p, NULL, 10);
	return true;
}

static void json_host(struct fctl_buf *o, const struct hres *r, const char *phase, bool raw_json)
{
	size_t len;

	fctl_buf_puts(o, "{\"host\":");
	fctl_buf_json_str(o, r->h->name);
	fctl_buf_puts(o, ",\"endpoint\":");
	fctl_buf_json_str(o, r->h->endpoint);
	fctl_buf_printf(o, ",\"phase\":\"%s\",\"exit\":%d", phase, r->rc);
	if (r->has_prev)
		fctl_buf_printf(o, ",\"previous_version\":%" PRIu64, r->prev);
	fctl_buf_puts(o, ",\"output\":");
	len = r->out ? strlen(r->out) : 0;
	while (len && r->out[len - 1] == '\n')
		len--;
	if (raw_json && len && (r->out[0] == '{' || r->out[0] == '['))
		fctl_buf_append(o, r->out, len);
	else
		fctl_buf_json_str(o, r->out);
	fctl_buf_puts(o, ",\"error\":");
	fctl_buf_json_str(o, r->err && *r->err ? r->err : NULL);
	fctl_buf_puts(o, "}");
}

static int print_hosts(struct remote *rm, struct hres *v, size_t n, const char *phase,
		       const char *result, int rc)
{
	struct fctl_buf o = { 0 };

	if (rm->json) {
		fctl_buf_printf(&o, "{\"command\":\"%s\",\"result\":\"%s\",\"exit\":%d,\"hosts\":[",
				rm->cmd, result, rc);
		for (size_t i = 0; i < n; i++) {
			if (i)
				fctl_buf_putc(&o, ',');
			json_host(&o, &v[i], v[i].type ? fctl_proto_type_name(v[i].type) : phase, true);
		}
		fctl_buf_puts(&o, "]}\n");
		cli_write(stdout, &o);
	} else {
		for (size_t i = 0; i < n; i++) {
			if (!rm->quiet || v[i].rc)
				printf("== %s (%s): exit %d\n", v[i].h->name, v[i].h->endpoint, v[i].rc);
			if (!rm->quiet)
				emit(stdout, v[i].out);
			fflush(stdout);
			emit(stderr, v[i].err);
		}
		if (!rm->quiet)
			printf("fabric %s: %s\n", rm->cmd, result);
	}
	fctl_buf_release(&o);
	return rc;
}

static int fabric_apply(struct remote *rm, struct hres *v, size_t n)
{
	bool ok = true, failed = false, rb_ok = true;
	size_t changed = 0;
	int worst = 0;

	/* phase 1: the version each host has now, then a plan everywhere */
	for (size_t i = 0; i < n; i++) {
		v[i].type = FCTL_MSG_STATUS;
		v[i].options = FCTL_OPT_JSON;
	}
	run_phase(rm, "status", v, n);
	for (size_t i = 0; i < n; i++) {
		if (v[i].rc) {
			ok = false;
			worst = worst > v[i].rc ? worst : v[i].rc;
		}
		v[i].has_prev = parse_prev(v[i].out, &v[i].prev);
		v[i].type = FCTL_MSG_PLAN;
		v[i].options = FCTL_OPT_JSON;
	}
	if (ok) {
		run_phase(rm, "plan", v, n);
		for (size_t i = 0; i < n; i++)
			if (v[i].rc) {
				ok = false;
				worst = worst > v[i].rc ? worst : v[i].rc;
			}
	}
	if (!ok || (rm->options & FCTL_OPT_DRY_RUN)) {
		if (!ok)
			cli_err("apply: a plan failed; nothing was applied on any host");
		return print_hosts(rm, v, n, "plan", ok ? "planned" : "plan-failed",
				   ok ? EXIT_OK : (worst == 13 ? EXIT_USAGE : worst));
	}
	/* phase 2: apply everywhere */
	for (size_t i = 0; i < n; i++) {
		v[i].type = FCTL_MSG_APPLY;
		v[i].options = FCTL_OPT_JSON;
	}
	run_phase(rm, "apply", v, n);
	for (size_t i = 0; i < n; i++) {
		v[i].changed = v[i].rc == 0 && v[i].out && strstr(v[i].out, "\"result\":\"applied\"");
		changed += v[i].changed;
		failed |= v[i].rc != 0;
	}
	if (!failed)
		return print_hosts(rm, v, n, "apply", "applied", EXIT_OK);
	if (rm->partial) {
		cli_err("apply: failed on some hosts; --partial: the others keep the new profile");
		return print_hosts(rm, v, n, "apply", "partial", EXIT_FAILED);
	}
	/* phase 3: put the hosts already changed back to the version they had */
	for (size_t i = 0; i < n; i++) {
		v[i].type = 0;
		if (!v[i].changed)
			continue;
		if (!v[i].has_prev) {
			cli_err("apply: %s had no profile applied before: it cannot be rolled back "
				"through its history; it keeps the new profile",
				v[i].h->name);
			rb_ok = false;
			continue;
		}
		v[i].type = FCTL_MSG_ROLLBACK;
		v[i].to = v[i].prev;
		v[i].options = FCTL_OPT_JSON;
	}
	if (changed) {
		struct hres *keep = calloc(n, sizeof(*keep));

		/* keep the apply results to report them; the rollback results replace them
		 * only for the hosts rolled back */
		for (size_t i = 0; keep && i < n; i++) {
			keep[i] = v[i];
			v[i].out = v[i].err = NULL;
			if (!v[i].type) {
				v[i].out = keep[i].out;
				v[i].err = keep[i].err;
				keep[i].out = keep[i].err = NULL;
			}
		}
		run_phase(rm, "rollback", v, n);
		for (size_t i = 0; i < n; i++) {
			if (v[i].type == FCTL_MSG_ROLLBACK && v[i].rc)
				rb_ok = false;
			if (keep && v[i].type == FCTL_MSG_ROLLBACK) {
				free(keep[i].out);
				free(keep[i].err);
			}
			if (!v[i].type)
				v[i].type = keep ? keep[i].type : FCTL_MSG_APPLY;
		}
		free(keep);
	}
	cli_err("apply: failed on at least one host; %s", rb_ok ? "every host changed was rolled back"
								   : "ROLLBACK INCOMPLETE: see per-host results");
	return print_hosts(rm, v, n, "apply", rb_ok ? "rolled-back" : "rollback-incomplete",
			   rb_ok ? EXIT_FAILED : EXIT_USAGE);
}

static int remote_main(struct remote *rm, int argc, char **argv)
{
	struct hres *v = NULL;
	char err[768] = "";
	size_t n = 0;
	int rc = parse(rm, argc, argv), r;

	if (rc >= 0)
		return rc;
	signal(SIGPIPE, SIG_IGN); /* a refused peer closes mid-write: an error, not a death */
	if (!rm->parallel)
		rm->parallel = 8;
	if (!rm->timeout)
		rm->timeout = 120;
	if (rm->profile_file) {
		/* findings name the file here, before anything is sent */
		rc = cli_load_valid_profile(rm->profile_file, &rm->profile, true);
		if (rc != EXIT_OK)
			return rc;
		r = read_bytes(rm->profile_file, &rm->bytes, &rm->n_bytes);
		if (r < 0) {
			cli_err("%s: '%s': %s", rm->cmd, rm->profile_file, strerror(-r));
			rc = EXIT_USAGE;
			goto out;
		}
	}
	r = fctl_inventory_load(&rm->inv, rm->profile, rm->inventory, err, sizeof(err));
	if (r < 0) {
		cli_err("%s: inventory %s", rm->cmd, err);
		rc = EXIT_USAGE;
		goto out;
	}
	if (rm->cert || rm->key || rm->ca) {
		r = fctl_tls_ctx_new(false, rm->cert, rm->key, rm->ca, &rm->ctx, err, sizeof(err));
		if (r < 0) {
			cli_err("%s: %s", rm->cmd, err);
			rc = EXIT_USAGE;
			goto out;
		}
	}
	if (rm->target) {
		const struct fctl_inventory_host *h = fctl_inventory_find(&rm->inv, rm->target);
		static struct fctl_inventory_host direct;

		if (!h) {
			if (!strchr(rm->target, ':') && rm->target[0] != '/') {
				cli_err("%s: host '%s' is not in the inventory (give --inventory, a "
					"profile naming it, or an endpoint HOST:PORT / unix:PATH)",
					rm->cmd, rm->target);
				rc = EXIT_USAGE;
				goto out;
			}
			snprintf(direct.name, sizeof(direct.name), "%s", rm->target);
			snprintf(direct.endpoint, sizeof(direct.endpoint), "%s", rm->target);
			h = &direct;
		}
		v = calloc(1, sizeof(*v));
		if (!v) {
			rc = EXIT_USAGE;
			goto out;
		}
		n = 1;
		v[0].h = h;
		v[0].type = rm->type;
		v[0].options = rm->options;
		v[0].to = rm->to;
		call_host(rm, &v[0]);
		/* exactly what the command prints on that host */
		emit(stdout, v[0].out);
		fflush(stdout);
		emit(stderr, v[0].err);
		if (v[0].rc == 13)
			v[0].rc = EXIT_USAGE;
		rc = v[0].rc;
		goto out;
	}
	if (!rm->inv.n) {
		cli_err("%s: --fabric needs hosts: a PROFILE, --profile FILE or --inventory FILE",
			rm->cmd);
		rc = EXIT_USAGE;
		goto out;
	}
	n = rm->inv.n;
	v = calloc(n, sizeof(*v));
	if (!v) {
		rc = EXIT_USAGE;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		v[i].h = &rm->inv.v[i];
		v[i].type = rm->type;
		v[i].options = rm->options;
		v[i].to = rm->to;
	}
	if (rm->type == FCTL_MSG_APPLY) {
		rc = fabric_apply(rm, v, n);
	} else {
		int worst = 0;

		run_phase(rm, rm->cmd, v, n);
		for (size_t i = 0; i < n; i++)
			worst = v[i].rc > worst ? v[i].rc : worst;
		if (worst == 13)
			worst = EXIT_USAGE;
		rc = print_hosts(rm, v, n, rm->cmd, worst ? "failed" : "ok", worst);
	}
out:
	for (size_t i = 0; i < n; i++)
		hres_reset(&v[i]);
	free(v);
	fctl_inventory_release(&rm->inv);
	fctl_tls_ctx_free(rm->ctx);
	fctl_profile_free(rm->profile);
	free(rm->bytes);
	return rc;
}

int cmd_fabric_dispatch(const char *cmd, int argc, char **argv)
{
	static const struct {
		const char *cmd;
		uint8_t type;
	} types[] = {
		{ "apply", FCTL_MSG_APPLY },	   { "plan", FCTL_MSG_PLAN },
		{ "show", FCTL_MSG_SHOW },	   { "diff", FCTL_MSG_DIFF },
		{ "rollback", FCTL_MSG_ROLLBACK }, { "history", FCTL_MSG_HISTORY },
		{ "status", FCTL_MSG_STATUS },	   { "recover", FCTL_MSG_RECOVER },
	};
	struct remote rm = { .cmd = cmd };
	bool remote = strcmp(cmd, "status") == 0;

	for (int i = 1; i < argc && !remote; i++)
		remote = strcmp(argv[i], "--fabric") == 0 || strcmp(argv[i], "--target") == 0 ||
			 strncmp(argv[i], "--target=", 9) == 0;
	if (!remote)
		return -1;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(types); i++)
		if (strcmp(types[i].cmd, cmd) == 0)
			rm.type = types[i].type;
	pthread_mutex_init(&rm.lock, NULL);
	return remote_main(&rm, argc, argv);
}

int cmd_status(int argc, char **argv)
{
	return cmd_fabric_dispatch("status", argc, argv);
}
