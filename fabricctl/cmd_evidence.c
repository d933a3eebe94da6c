// SPDX-License-Identifier: MIT
/* fabricctl evidence --out FILE.tar --sign KEY [--sign KEY2] [--since T] [--until T] [--change ID]
 * [--html FILE] [--whole-log] [--consistency-from SIZE]... [--ledger FILE] [--allowed-signers FILE]:
 * the bundle, and/or the
 * auditor's report (report.html) on its own */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fctl/approvals.h"
#include "fctl/audit.h"
#include "fctl/evidence.h"
#include "fctl/state.h"

enum {
	O_OUT = 0x100,
	O_SIGN,
	O_SINCE,
	O_UNTIL,
	O_CHANGE,
	O_LOG,
	O_CPS,
	O_PUB,
	O_PROFILE,
	O_HISTORY,
	O_OPERATOR,
	O_JSON,
	O_HTML,
	O_WHOLE_LOG,
	O_CONSISTENCY,
	O_ALLOW_EMPTY,
	O_LEDGER,
	O_ALLOWED_SIGNERS,
};

static const struct option opts[] = {
	{ "out", required_argument, NULL, O_OUT },
	{ "sign", required_argument, NULL, O_SIGN },
	{ "since", required_argument, NULL, O_SINCE },
	{ "until", required_argument, NULL, O_UNTIL },
	{ "change", required_argument, NULL, O_CHANGE },
	{ "log", required_argument, NULL, O_LOG },
	{ "checkpoints", required_argument, NULL, O_CPS },
	{ "pubkey", required_argument, NULL, O_PUB },
	{ "profile", required_argument, NULL, O_PROFILE },
	{ "history", required_argument, NULL, O_HISTORY },
	{ "operator", required_argument, NULL, O_OPERATOR },
	{ "json", no_argument, NULL, O_JSON },
	{ "html", required_argument, NULL, O_HTML },
	{ "whole-log", no_argument, NULL, O_WHOLE_LOG },
	{ "consistency-from", required_argument, NULL, O_CONSISTENCY },
	{ "allow-empty", no_argument, NULL, O_ALLOW_EMPTY },
	{ "ledger", required_argument, NULL, O_LEDGER },
	{ "allowed-signers", required_argument, NULL, O_ALLOWED_SIGNERS },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

const struct option *cli_opts_evidence(const char *cmd, const char *sub)
{
	(void)cmd;
	(void)sub;
	return opts;
}

/* This host's packet-number ledger, as its SA door keeps it (docs/keys-and-pn.md). */
static const char *default_ledger(void)
{
	static char path[PATH_MAX + 16];

	fctl_state_dir_path(NULL, NULL, path, PATH_MAX);
	strcat(path, "/sa-ledger");
	return path;
}

/* The allowed_signers of this host's approval policy (docs/approvals.md), NULL without one. */
static const char *default_allowed_signers(void)
{
	static struct fctl_approval_policy pol;
	char err[256];

	return fctl_approval_policy_load(cli_approvals_conf(), &pol, err, sizeof(err)) == 1 ? pol.signers
												   : NULL;
}

/* What was not given, from this host: the log, its ledger, its policy's allowed_signers
 * (the one its applies were checked against). */
static void host_defaults(struct fctl_evidence_opts *o, const char *log)
{
	o->log_path = fctl_audit_log_path(log, true);
	o->ledger_path = o->ledger_path ? o->ledger_path : default_ledger();
	o->allowed_signers = o->allowed_signers ? o->allowed_signers : default_allowed_signers();
}

int cmd_evidence(int argc, char **argv)
{
	const char *signs[16], *profiles[256], *out = NULL, *log = NULL, *html_path = NULL;
	uint64_t from[64];
	struct fctl_evidence_opts o = { .tool_version = FCTL_VERSION };
	struct fctl_buf tar = { 0 }, html = { 0 };
	char err[768] = "";
	bool json = false;
	int ch, r;

	o.sign_keys = signs;
	o.profiles = profiles;
	o.consistency_from = from;
	optind = 1;
	while ((ch = cli_getopt("evidence", argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case O_OUT: out = optarg; break;
		case O_SINCE: o.since = optarg; break;
		case O_UNTIL: o.until = optarg; break;
		case O_CHANGE: o.change_id = optarg; break;
		case O_LOG: log = optarg; break;
		case O_CPS: o.checkpoint_path = optarg; break;
		case O_PUB: o.pubkey_path = optarg; break;
		case O_HISTORY: o.history_dir = optarg; break;
		case O_OPERATOR: o.operator_name = optarg; break;
		case O_JSON: json = true; break;
		case O_HTML: html_path = optarg; break;
		case O_WHOLE_LOG: o.whole_log = true; break;
		case O_ALLOW_EMPTY: o.allow_empty = true; break;
		case O_LEDGER: o.ledger_path = optarg; break;
		case O_ALLOWED_SIGNERS: o.allowed_signers = optarg; break;
		case O_CONSISTENCY:
			if (o.n_consistency_from >= FCTL_ARRAY_SIZE(from) ||
			    fctl_parse_u64(optarg, &from[o.n_consistency_from]) < 0 ||
			    !from[o.n_consistency_from]) {
				cli_err("evidence: --consistency-from takes a tree size (1 or more), "
					"at most %zu times", FCTL_ARRAY_SIZE(from));
				return EXIT_USAGE;
			}
			o.n_consistency_from++;
			break;
		case O_SIGN:
			if (o.n_sign_keys >= FCTL_ARRAY_SIZE(signs)) {
				cli_err("evidence: at most %zu --sign keys", FCTL_ARRAY_SIZE(signs));
				return EXIT_USAGE;
			}
			signs[o.n_sign_keys++] = optarg;
			break;
		case O_PROFILE:
			if (o.n_profiles >= FCTL_ARRAY_SIZE(profiles)) {
				cli_err("evidence: too many --profile files");
				return EXIT_USAGE;
			}
			profiles[o.n_profiles++] = optarg;
			break;
		case 'h':
			cli_usage_cmd("evidence");
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_err("evidence: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if ((!out && !html_path) || (out && !o.n_sign_keys)) {
		cli_err("evidence: expected --out FILE.tar and at least one --sign KEY, or --html FILE");
		return EXIT_USAGE;
	}
	host_defaults(&o, log);
	o.html = html_path ? &html : NULL;
	/* --html alone without --sign: the report only, nothing signed */
	if (!out && !o.n_sign_keys)
		r = fctl_evidence_report(&o, &html, err, sizeof(err));
	else
		r = fctl_evidence_build(&o, &tar, err, sizeof(err));
	if (r < 0) {
		cli_err("evidence: %s", err[0] ? err : strerror(-r));
		fctl_buf_release(&tar);
		fctl_buf_release(&html);
		return r == -EBADMSG ? EXIT_INVALID : EXIT_USAGE; /* -ENODATA: nothing selected */
	}
	if (out && (r = fctl_file_replace(out, NULL, tar.data, tar.len, 0644, 0)) < 0)
		cli_err("evidence: cannot write '%s': %s", out, strerror(-r));
	else if (html_path &&
		 (r = fctl_file_replace(html_path, NULL, html.data, html.len, 0644, 0)) < 0)
		cli_err("evidence: cannot write '%s': %s", html_path, strerror(-r));
	fctl_buf_release(&html);
	if (r < 0) {
		fctl_buf_release(&tar);
		return EXIT_USAGE;
	}
	if (!out) {
		if (json)
			printf("{\"report\":\"%s\",\"signatures\":%zu}\n", html_path,
			       o.n_sign_keys);
		else
			printf("wrote %s (the report alone, %s): a reading aid; the bundle and "
			       "verify.sh are the proof (docs/audit.md)\n", html_path,
			       o.n_sign_keys ? "as the bundle would carry it" : "nothing signed");
		return EXIT_OK;
	}
	if (json && html_path)
		printf("{\"bundle\":\"%s\",\"bytes\":%zu,\"signatures\":%zu,\"report\":\"%s\"}\n",
		       out, tar.len, o.n_sign_keys, html_path);
	else if (json)
		printf("{\"bundle\":\"%s\",\"bytes\":%zu,\"signatures\":%zu}\n", out, tar.len,
		       o.n_sign_keys);
	else
		printf("wrote %s (%zu bytes, %zu signature%s); check it with your own copies of the "
		       "public keys: bash verify.sh --tar %s --signer-pub SIGNER.pub%s --audit-pub "
		       "AUDIT.pub (docs/audit.md)\n",
		       out, tar.len, o.n_sign_keys, o.n_sign_keys == 1 ? "" : "s", out,
		       o.n_sign_keys > 1 ? " --signer-pub ..." : "");
	if (!json && html_path)
		printf("wrote %s (the bundle's report.html, a reading aid)\n", html_path);
	fctl_buf_release(&tar);
	return EXIT_OK;
}
