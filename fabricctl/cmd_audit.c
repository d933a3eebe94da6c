// SPDX-License-Identifier: MIT
/* fabricctl audit keygen | verify | show | append | checkpoint | rotate */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fctl/approvals.h"
#include "fctl/audit.h"
#include "fctl/sa_ledger.h"
#include "fctl/plan.h"

/* The policy's notice (a key pair made, or none to sign with) on stderr. */
static void say_notice(int flags, const char *note, const char *hint)
{
	if (flags & FCTL_AUDIT_KEY_CREATED)
		cli_err("audit: %s", note);
	else if (flags & FCTL_AUDIT_UNSIGNED)
		cli_err("warning: audit: %s%s", note, hint);
}

enum {
	O_JSON = 0x100,
	O_LOG,
	O_CPS,
	O_PUB,
	O_KEY,
	O_OUT,
	O_SINCE,
	O_UNTIL,
	O_CHANGE,
	O_ACTION,
	O_RESULT,
	O_HOST,
	O_LINK,
	O_SECY,
	O_PNAME,
	O_PVER,
	O_PSHA,
	O_KCV,
	O_KEYID,
	O_KSTATE,
	O_DETAIL,
	O_ERROR,
	O_CERT,
	O_COUNT,
	O_BATCH,
	O_EVERY,
	O_ROTATE,
	O_ORIGIN,
	O_SYSLOG,
	O_TRUSTED,
	O_UNSIGNED_OK,
	O_SELF,
	O_WPUB,
	O_WITNESSES,
	O_COSIGS,
};

static const struct option opts[] = {
	{ "json", no_argument, NULL, O_JSON },
	{ "log", required_argument, NULL, O_LOG },
	{ "checkpoints", required_argument, NULL, O_CPS },
	{ "pubkey", required_argument, NULL, O_PUB },
	{ "key", required_argument, NULL, O_KEY },
	{ "out", required_argument, NULL, O_OUT },
	{ "since", required_argument, NULL, O_SINCE },
	{ "until", required_argument, NULL, O_UNTIL },
	{ "change", required_argument, NULL, O_CHANGE },
	{ "action", required_argument, NULL, O_ACTION },
	{ "result", required_argument, NULL, O_RESULT },
	{ "host", required_argument, NULL, O_HOST },
	{ "link", required_argument, NULL, O_LINK },
	{ "secy", required_argument, NULL, O_SECY },
	{ "profile-name", required_argument, NULL, O_PNAME },
	{ "profile-version", required_argument, NULL, O_PVER },
	{ "profile-sha256", required_argument, NULL, O_PSHA },
	{ "kcv", required_argument, NULL, O_KCV },
	{ "key-id", required_argument, NULL, O_KEYID },
	{ "key-state", required_argument, NULL, O_KSTATE },
	{ "detail", required_argument, NULL, O_DETAIL },
	{ "error", required_argument, NULL, O_ERROR },
	{ "actor-cert", required_argument, NULL, O_CERT },
	{ "count", required_argument, NULL, O_COUNT },
	{ "batch", required_argument, NULL, O_BATCH },
	{ "checkpoint-every", required_argument, NULL, O_EVERY },
	{ "rotate-bytes", required_argument, NULL, O_ROTATE },
	{ "origin", required_argument, NULL, O_ORIGIN },
	{ "syslog", no_argument, NULL, O_SYSLOG },
	{ "trusted-checkpoint", required_argument, NULL, O_TRUSTED },
	{ "allow-unsigned-tail", no_argument, NULL, O_UNSIGNED_OK },
	{ "self-consistency-only", no_argument, NULL, O_SELF },
	{ "witness-pub", required_argument, NULL, O_WPUB },
	{ "witnesses", required_argument, NULL, O_WITNESSES },
	{ "cosignatures", required_argument, NULL, O_COSIGS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* audit proof | note | witness: cmd_audit_proof.c, its own table */
static bool proof_sub(const char *sub)
{
	return sub && (!strcmp(sub, "proof") || !strcmp(sub, "note") || !strcmp(sub, "witness"));
}

const struct option *cli_opts_audit(const char *cmd, const char *sub)
{
	(void)cmd;
	return proof_sub(sub) ? cli_opts_audit_proof() : opts;
}

#define MAX_WITNESS_PUBS 32

struct args {
	bool json, syslog, unsigned_ok, self;
	const char *log, *cps, *pub, *key, *out, *since, *until, *origin, *trusted, *cosigs;
	const char *wpub[MAX_WITNESS_PUBS];
	size_t n_wpub;
	uint64_t witnesses;
	struct fctl_audit_entry e;
	const char *kcv[FCTL_AUDIT_MAX_KEYS], *keyid[FCTL_AUDIT_MAX_KEYS];
	uint64_t count, batch, every, rotate;
};

static int parse(const char *sub, int argc, char **argv, struct args *a)
{
	char what[32];
	int ch;

	snprintf(what, sizeof(what), "audit %s", sub);
	memset(a, 0, sizeof(*a));
	a->count = 1;
	optind = 1;
	while ((ch = cli_getopt(what, argc, argv, "h", opts, NULL)) != -1) {
		uint64_t *num = NULL;

		switch (ch) {
		case O_JSON: a->json = true; break;
		case O_SYSLOG: a->syslog = true; break;
		case O_LOG: a->log = optarg; break;
		case O_CPS: a->cps = optarg; break;
		case O_PUB: a->pub = optarg; break;
		case O_KEY: a->key = optarg; break;
		case O_OUT: a->out = optarg; break;
		case O_SINCE: a->since = optarg; break;
		case O_UNTIL: a->until = optarg; break;
		case O_ORIGIN: a->origin = optarg; break;
		case O_TRUSTED: a->trusted = optarg; break;
		case O_UNSIGNED_OK: a->unsigned_ok = true; break;
		case O_SELF: a->self = true; break;
		case O_COSIGS: a->cosigs = optarg; break;
		case O_WITNESSES: num = &a->witnesses; break;
		case O_WPUB:
			if (a->n_wpub >= MAX_WITNESS_PUBS) {
				cli_err("audit %s: more than %d --witness-pub", sub, MAX_WITNESS_PUBS);
				return EXIT_USAGE;
			}
			a->wpub[a->n_wpub++] = optarg;
			break;
		case O_CHANGE: a->e.change_id = optarg; break;
		case O_ACTION: a->e.action = optarg; break;
		case O_RESULT: a->e.result = optarg; break;
		case O_HOST: a->e.host = optarg; break;
		case O_LINK: a->e.link = optarg; break;
		case O_SECY: a->e.secy = optarg; break;
		case O_PNAME: a->e.profile_name = optarg; break;
		case O_PSHA: a->e.profile_sha256 = optarg; break;
		case O_KSTATE: a->e.key_state = optarg; break;
		case O_DETAIL: a->e.detail = optarg; break;
		case O_ERROR: a->e.error = optarg; break;
		case O_CERT: a->e.actor_cert = optarg; break;
		case O_PVER: num = &a->e.profile_version; break;
		case O_COUNT: num = &a->count; break;
		case O_BATCH: num = &a->batch; break;
		case O_EVERY: num = &a->every; break;
		case O_ROTATE: num = &a->rotate; break;
		case O_KCV:
		case O_KEYID: {
			size_t *n = ch == O_KCV ? &a->e.n_kcvs : &a->e.n_key_ids;

			if (*n >= FCTL_AUDIT_MAX_KEYS) {
				cli_err("audit %s: too many --%s", sub, ch == O_KCV ? "kcv" : "key-id");
				return EXIT_USAGE;
			}
			(ch == O_KCV ? a->kcv : a->keyid)[(*n)++] = optarg;
			break;
		}
		case 'h':
			cli_usage_cmd("audit");
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
		if (num && fctl_parse_u64(optarg, num) < 0) {
			cli_err("audit %s: '%s' is not a number", sub, optarg);
			return EXIT_USAGE;
		}
	}
	a->e.kcvs = a->kcv;
	a->e.key_ids = a->keyid;
	if (optind != argc) {
		cli_err("audit %s: unexpected argument '%s'", sub, argv[optind]);
		return EXIT_USAGE;
	}
	return -1;
}

static int do_keygen(struct args *a)
{
	char err[512] = "";
	const char *dir = a->out ? a->out : FCTL_AUDIT_DIR;
	int r = fctl_audit_keygen(dir, err, sizeof(err));

	if (r < 0) {
		cli_err("audit keygen: %s", err[0] ? err : strerror(-r));
		if (r == -EEXIST)
			cli_err("hint: a key pair exists there already; it is never overwritten");
		return EXIT_USAGE;
	}
	if (a->json)
		printf("{\"private\":\"%s/audit.key\",\"public\":\"%s/audit.pub\"}\n", dir, dir);
	else
		printf("wrote %s/audit.key (mode 0600) and %s/audit.pub\n"
		       "keep a copy of audit.pub away from this host: verify with --pubkey COPY\n",
		       dir, dir);
	return EXIT_OK;
}

/* The trust anchor rule: a pinned key or a kept checkpoint, or self-consistency said so. */
static int verify_anchor(const struct args *a, const char **anchor)
{
	if (a->self && (a->pub || a->trusted)) {
		cli_err("audit verify: --self-consistency-only goes without --pubkey and "
			"--trusted-checkpoint");
		return -1;
	}
	if (!a->self && !a->pub && !a->trusted) {
		cli_err("audit verify: no trust anchor: pin the audit key (--pubkey FILE, a copy kept "
			"away from this host) or give a checkpoint you kept (--trusted-checkpoint "
			"FILE)");
		cli_err("hint: --self-consistency-only checks the log against the key beside it, "
			"which proves nothing about who wrote the log");
		return -1;
	}
	*anchor = a->self ? "self-consistency-only" : a->pub ? "pubkey" : "trusted-checkpoint";
	return 0;
}

/* Findings that say an input could not be read (the log, a key, a kept checkpoint): the
 * verification did not run, which is an I/O error (exit 2), not a log that fails (exit 1).
 * Each is said on stderr; its message names the path. */
static size_t io_findings(const struct fctl_audit_report *rep)
{
	size_t n = 0;

	for (size_t i = 0; i < rep->n; i++) {
		if (rep->f[i].kind != FCTL_AUDIT_IO)
			continue;
		cli_err("audit verify: %s", rep->f[i].msg);
		n++;
	}
	return n;
}

static void verify_text(const struct fctl_audit_report *rep, const char *log, size_t io,
			struct fctl_buf *out)
{
	char hex[65];

	for (size_t i = 0; i < rep->n; i++)
		fctl_buf_printf(out, "%s: %s\n", fctl_audit_finding_name(rep->f[i].kind),
				rep->f[i].msg);
	fctl_format_hex(rep->root, 32, hex);
	if (io) {
		fctl_buf_printf(out, "audit log %s could not be verified: %zu input%s could not "
				"be read\n", log, io, io == 1 ? "" : "s");
		return;
	}
	if (rep->n_errors)
		fctl_buf_printf(out, "audit log %s FAILS verification: %zu problem%s\n", log,
				rep->n_errors, rep->n_errors == 1 ? "" : "s");
	else
		fctl_buf_printf(out,
				"audit log %s verified: %" PRIu64 " records in %" PRIu64
				" file%s, signed checkpoint at %" PRIu64 ", root %s\n",
				log, rep->records, rep->files, rep->files == 1 ? "" : "s",
				rep->checkpoint_size, hex);
	fctl_buf_printf(out, "%" PRIu64 " unsigned record%s (past the latest signed%s checkpoint)\n",
			rep->unsigned_records, rep->unsigned_records == 1 ? "" : "s",
			rep->witnessed_size ? " and witnessed" : "");
	if (rep->trusted_size)
		fctl_buf_printf(out, "extends the trusted checkpoint of %" PRIu64 " records\n",
				rep->trusted_size);
	if (!strcmp(rep->anchor, "self-consistency-only"))
		fctl_buf_puts(out, "SELF-CONSISTENCY ONLY: checked against the key beside the log; "
				   "this proves nothing about who wrote the log (pin --pubkey or "
				   "--trusted-checkpoint)\n");
}

static int do_verify(struct args *a)
{
	struct fctl_audit_report rep = { 0 };
	struct fctl_buf out = { 0 };
	struct fctl_audit_verify_opts o = {
		.log_path = fctl_audit_log_path(a->log, true),
		.checkpoint_path = a->cps,
		.pubkey_path = a->pub,
		.trusted_checkpoint = a->trusted,
		.origin = a->origin,
		.allow_unsigned_tail = a->unsigned_ok,
		.witness_pubs = a->wpub,
		.n_witness_pubs = a->n_wpub,
		.witnesses = (unsigned int)a->witnesses,
		.cosignatures_path = a->cosigs,
	};
	const char *anchor;
	size_t io;
	int r, rc;

	if (verify_anchor(a, &anchor) < 0)
		return EXIT_USAGE;
	if (a->witnesses && !a->n_wpub) {
		cli_err("audit verify: --witnesses K needs the witnesses' keys (--witness-pub FILE)");
		return EXIT_USAGE;
	}
	r = fctl_audit_verify_with(&o, &rep);
	if (r < 0) {
		cli_err("audit verify: %s", strerror(-r));
		rc = EXIT_USAGE;
		goto out;
	}
	rep.anchor = anchor;
	io = io_findings(&rep);
	if (a->json) {
		fctl_audit_report_json(&rep, &out);
		fctl_buf_putc(&out, '\n');
	} else {
		verify_text(&rep, o.log_path, io, &out);
	}
	cli_write(stdout, &out);
	rc = io ? EXIT_USAGE : rep.n_errors ? EXIT_INVALID : EXIT_OK;
out:
	fctl_buf_release(&out);
	fctl_audit_report_release(&rep);
	return rc;
}

struct show_ctx {
	struct args *a;
	char since[32], until[32];
	struct fctl_buf out;
	size_t n;
	size_t bad; /* records not in the canonical form: not shown */
};

static void text_field(struct fctl_buf *o, const char *line, size_t len, const char *key,
		       int width)
{
	char *v = NULL;

	if (fctl_audit_field(line, len, key, &v) < 0)
		fctl_buf_printf(o, " %-*s", width, "-");
	else
		fctl_buf_printf(o, " %-*s", width, v);
	free(v);
}

static int show_one(void *ctx, const char *line, size_t len)
{
	struct show_ctx *c = ctx;
	char *t = NULL, *ch = NULL, why[256];
	bool keep = true;

	if (fctl_audit_record_check(line, len, NULL, why, sizeof(why)) < 0) {
		/* what jq and this reader would make of it may differ: show none of it */
		char *seq = NULL;

		fctl_audit_field(line, len, "seq", &seq);
		cli_err("audit show: seq %s is not a canonical record (%s): not shown; run 'audit "
			"verify'", seq ? seq : "?", why);
		free(seq);
		c->bad++;
		return 0;
	}
	if (fctl_audit_field(line, len, "time", &t) < 0)
		keep = false;
	if (keep && c->since[0] && strcmp(t, c->since) < 0)
		keep = false;
	if (keep && c->until[0] && strcmp(t, c->until) > 0)
		keep = false;
	if (keep && c->a->e.change_id &&
	    (fctl_audit_field(line, len, "change", &ch) < 0 || strcmp(ch, c->a->e.change_id) != 0))
		keep = false;
	if (keep) {
		if (c->a->json) {
			fctl_buf_puts(&c->out, c->n ? ",\n" : "\n");
			fctl_buf_append(&c->out, line, len);
		} else {
			char *seq = NULL, *prof = NULL, *actor = NULL;
			const char *pv;
			size_t pl;

			fctl_audit_field(line, len, "seq", &seq);
			fctl_buf_printf(&c->out, "%-6s %-27s", seq ? seq : "?", t);
			if (fctl_audit_field_raw(line, len, "actor", &pv, &pl) == 0 &&
			    (fctl_audit_field(pv, pl, "user", &actor) == 0 ||
			     fctl_audit_field(pv, pl, "cert", &actor) == 0))
				fctl_buf_printf(&c->out, " %-10s", actor);
			else
				fctl_buf_printf(&c->out, " %-10s", "-");
			text_field(&c->out, line, len, "action", -10);
			text_field(&c->out, line, len, "host", -10);
			if (fctl_audit_field_raw(line, len, "profile", &pv, &pl) == 0) {
				char *name = NULL, *ver = NULL;

				fctl_audit_field(pv, pl, "name", &name);
				fctl_audit_field(pv, pl, "version", &ver);
				fctl_buf_printf(&c->out, " %s v%s", name ? name : "?", ver ? ver : "?");
				free(name);
				free(ver);
			} else {
				fctl_buf_puts(&c->out, " -");
			}
			text_field(&c->out, line, len, "result", 0);
			if (fctl_audit_field_raw(line, len, "manual", &pv, &pl) == 0)
				fctl_buf_puts(&c->out, " (manual record: written by audit append)");
			fctl_buf_putc(&c->out, '\n');
			free(seq);
			free(prof);
			free(actor);
		}
		c->n++;
	}
	free(t);
	free(ch);
	return 0;
}

/* The log can be shown: its active file is there (not a directory), or it is missing after a
 * rotation (older files hold the records). A log that is not there at all is an error, not
 * an empty log. Negative errno. */
static int log_readable(const char *log)
{
	struct stat st;
	char **files = NULL;
	size_t n = 0;
	int r;

	if (stat(log, &st) == 0)
		return S_ISDIR(st.st_mode) ? -EISDIR : 0;
	r = -errno;
	if (r != -ENOENT || fctl_audit_files(log, &files, &n) < 0)
		return r;
	fctl_audit_files_free(files, n);
	return n > 1 ? 0 : r;
}

static int do_show(struct args *a)
{
	struct show_ctx c = { .a = a };
	const char *log = fctl_audit_log_path(a->log, true);
	int r, rc;

	if ((a->since && fctl_audit_parse_time(a->since, c.since) < 0) ||
	    (a->until && fctl_audit_parse_time(a->until, c.until) < 0)) {
		cli_err("audit show: expected a time as 2024-05-01, 2024-05-01T12:00:00Z or @EPOCH");
		return EXIT_USAGE;
	}
	if (a->until && !strchr(a->until, 'T') && a->until[0] != '@')
		memcpy(c.until + 11, "23:59:59.999999Z", 17); /* a date includes its whole day */
	if ((r = log_readable(log)) < 0) {
		cli_err("audit show: cannot read '%s': %s", log, strerror(-r));
		return EXIT_USAGE;
	}
	if (a->json)
		fctl_buf_puts(&c.out, "[");
	else
		fctl_buf_printf(&c.out, "%-6s %-27s %-10s %-10s %-10s %s\n", "SEQ", "TIME (UTC)",
				"ACTOR", "ACTION", "HOST", "PROFILE RESULT");
	r = fctl_audit_read(log, show_one, &c);
	if (r < 0) {
		cli_err("audit show: cannot read '%s': %s", log, strerror(-r));
		rc = EXIT_USAGE;
		goto out;
	}
	if (a->json)
		fctl_buf_puts(&c.out, c.n ? "\n]\n" : "]\n");
	rc = cli_write(stdout, &c.out) < 0 ? EXIT_USAGE : c.bad ? EXIT_INVALID : EXIT_OK;
out:
	fctl_buf_release(&c.out);
	return rc;
}

/* append, checkpoint, rotate: the options say everything (no key is made, the
 * environment names only the log) */
static int open_writer(struct args *a, struct fctl_audit **w)
{
	struct fctl_audit_policy p = {
		.log_path = fctl_audit_log_path(a->log, true),
		.key_path = a->key,
		.checkpoint_path = a->cps,
		.origin = a->origin,
		.batch = (unsigned int)a->batch,
		.checkpoint_every = (unsigned int)a->every,
		.rotate_bytes = a->rotate,
		.syslog = a->syslog,
	};
	char err[512] = "";
	int r = fctl_audit_open_policy(&p, w, err, sizeof(err));

	if (r < 0)
		cli_err("audit: %s", err);
	else
		say_notice(r, err, "");
	return r;
}

static int do_write(const char *sub, struct args *a)
{
	struct fctl_audit *w = NULL;
	char err[512];
	int r;

	/* a record written by hand says so, and cannot take an action of the tool's own */
	a->e.manual = true;
#ifdef FCTL_TEST_HOOKS
	/* test builds: fixtures standing in for the tool's own records (docs/audit.md) */
	if (getenv("FCTL_TEST_AUDIT_APPEND_AS_TOOL"))
		a->e.manual = false;
#endif
	if (strcmp(sub, "append") == 0 && fctl_audit_entry_check(&a->e, err, sizeof(err)) < 0) {
		cli_err("audit append: %s", err);
		return EXIT_USAGE;
	}
	if (open_writer(a, &w) < 0)
		return EXIT_USAGE;
	if (strcmp(sub, "append") == 0) {
		for (uint64_t i = 0; i < a->count; i++) {
			r = fctl_audit_append(w, &a->e);
			if (r < 0)
				goto fail;
		}
		r = fctl_audit_sync(w);
	} else if (strcmp(sub, "checkpoint") == 0) {
		r = fctl_audit_checkpoint(w);
	} else {
		r = fctl_audit_rotate(w);
	}
	if (r < 0)
		goto fail;
	r = fctl_audit_close(w);
	w = NULL;
	if (r < 0) {
		cli_err("audit %s: %s", sub, strerror(-r));
		return EXIT_USAGE;
	}
	return EXIT_OK;
fail:
	cli_err("audit %s: %s", sub, fctl_audit_error(w));
	fctl_audit_close(w);
	return EXIT_USAGE;
}

int cmd_audit(int argc, char **argv)
{
	struct args a;
	const char *sub;
	int rc;

	if (argc < 2) {
		cli_usage_cmd("audit");
		return EXIT_USAGE;
	}
	sub = argv[1];
	if (proof_sub(sub))
		return cmd_audit_proof(sub, argc - 1, argv + 1);
	rc = parse(sub, argc - 1, argv + 1, &a);
	if (rc >= 0)
		return rc;
	if (strcmp(sub, "keygen") == 0)
		return do_keygen(&a);
	if (strcmp(sub, "verify") == 0)
		return do_verify(&a);
	if (strcmp(sub, "show") == 0)
		return do_show(&a);
	if (strcmp(sub, "append") == 0 || strcmp(sub, "checkpoint") == 0 ||
	    strcmp(sub, "rotate") == 0)
		return do_write(sub, &a);
	cli_err("audit: unknown subcommand '%s' (keygen, verify, show, append, checkpoint, rotate, "
		"proof, note, witness)", sub);
	return EXIT_USAGE;
}

/* --- records of state-changing commands (apply, rollback, recover, drift) --- */

/* Who the records of this process name when an event names no one: set by the agent's
 * worker for its client; by default the caller's uid. */
static struct fctl_audit_actor actor;
static char actor_cert[320];

void cli_audit_set_actor(const char *cert, bool has_uid, uid_t uid)
{
	snprintf(actor_cert, sizeof(actor_cert), "%s", cert ? cert : "");
	actor.cert = cert ? actor_cert : NULL;
	actor.has_uid = has_uid;
	actor.uid = uid;
}

const struct fctl_audit_actor *cli_audit_actor(void)
{
	return &actor;
}

int cli_audit_open(const char *log_opt, struct fctl_audit **out)
{
	struct fctl_host_msgs m = { 0 };
	int r = fctl_host_audit_open(log_opt, &actor, out, &m);

	cli_say(&m);
	return r;
}

int cli_audit_record(struct fctl_audit *a, const struct fctl_host_event *ev)
{
	struct fctl_host_msgs m = { 0 };
	int r = fctl_host_audit_record(a, ev, &m);

	cli_say(&m);
	return r;
}

int cli_audit_close(struct fctl_audit *a)
{
	struct fctl_host_msgs m = { 0 };
	int r = fctl_host_audit_close(a, &m);

	cli_say(&m);
	return r;
}
