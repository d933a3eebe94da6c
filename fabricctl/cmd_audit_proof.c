// SPDX-License-Identifier: MIT
/* fabricctl audit proof | note | witness: RFC 9162 proofs, checkpoints, a CLI witness */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fctl/audit.h"

enum {
	P_JSON = 0x100,
	P_LOG,
	P_CPS,
	P_INCL,
	P_CONS,
	P_SIZE,
	P_KEY,
	P_NAME,
	P_STATE,
	P_LOGPUB,
	P_CHECKPOINT,
	P_PROOF,
};

static const struct option popts[] = {
	{ "json", no_argument, NULL, P_JSON },
	{ "log", required_argument, NULL, P_LOG },
	{ "checkpoints", required_argument, NULL, P_CPS },
	{ "inclusion", required_argument, NULL, P_INCL },
	{ "consistency", required_argument, NULL, P_CONS },
	{ "size", required_argument, NULL, P_SIZE },
	{ "key", required_argument, NULL, P_KEY },
	{ "name", required_argument, NULL, P_NAME },
	{ "state", required_argument, NULL, P_STATE },
	{ "log-pub", required_argument, NULL, P_LOGPUB },
	{ "checkpoint", required_argument, NULL, P_CHECKPOINT },
	{ "proof", required_argument, NULL, P_PROOF },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

const struct option *cli_opts_audit_proof(void)
{
	return popts;
}

struct pargs {
	bool json, incl, cons, has_size;
	const char *log, *cps, *key, *name, *state, *log_pub, *checkpoint, *proof;
	uint64_t seq, old_size, size;
};

static int pparse(const char *sub, int argc, char **argv, struct pargs *a)
{
	char what[32];
	int ch;

	snprintf(what, sizeof(what), "audit %s", sub);
	memset(a, 0, sizeof(*a));
	optind = 1;
	while ((ch = cli_getopt(what, argc, argv, "h", popts, NULL)) != -1) {
		uint64_t *num = NULL;

		switch (ch) {
		case P_JSON: a->json = true; break;
		case P_LOG: a->log = optarg; break;
		case P_CPS: a->cps = optarg; break;
		case P_INCL: a->incl = true; num = &a->seq; break;
		case P_CONS: a->cons = true; num = &a->old_size; break;
		case P_SIZE: a->has_size = true; num = &a->size; break;
		case P_KEY: a->key = optarg; break;
		case P_NAME: a->name = optarg; break;
		case P_STATE: a->state = optarg; break;
		case P_LOGPUB: a->log_pub = optarg; break;
		case P_CHECKPOINT: a->checkpoint = optarg; break;
		case P_PROOF: a->proof = optarg; break;
		case 'h':
			cli_usage_cmd("audit");
			return EXIT_OK;
		default:
			return EXIT_USAGE;
		}
		if (num && (fctl_parse_u64(optarg, num) < 0 || strspn(optarg, "0123456789") !=
							       strlen(optarg))) {
			cli_err("audit %s: '%s' is not a number", sub, optarg);
			return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_err("audit %s: unexpected argument '%s'", sub, argv[optind]);
		return EXIT_USAGE;
	}
	return -1;
}

static void put_hashes(struct fctl_buf *o, const uint8_t (*p)[32], size_t n, bool json)
{
	char hex[65];

	for (size_t i = 0; i < n; i++) {
		fctl_format_hex(p[i], 32, hex);
		if (json)
			fctl_buf_printf(o, "%s\"%s\"", i ? "," : "", hex);
		else
			fctl_buf_printf(o, "  %s\n", hex);
	}
}

/* Prints an inclusion proof of one record, or a consistency proof between two sizes. */
static int do_proof(struct pargs *a)
{
	const char *log = fctl_audit_log_path(a->log, true);
	uint8_t (*leaves)[32] = NULL, path[FCTL_AUDIT_PROOF_MAX][32], root[32], old[32];
	struct fctl_buf o = { 0 };
	uint64_t n = 0, size;
	size_t plen = 0;
	char hex[65], ohex[65];
	int r, rc = EXIT_USAGE;

	if (a->incl == a->cons) {
		cli_err("audit proof: give --inclusion SEQ or --consistency OLD_SIZE");
		return EXIT_USAGE;
	}
	r = fctl_audit_leaves(log, &leaves, &n);
	if (r < 0) {
		cli_err("audit proof: cannot read '%s': %s", log, strerror(-r));
		return EXIT_USAGE;
	}
	size = a->has_size ? a->size : n;
	if (size > n || size == 0) {
		cli_err("audit proof: --size %" PRIu64 ": the log holds %" PRIu64 " records", size, n);
		goto out;
	}
	const uint8_t (*lv)[32] = (const uint8_t(*)[32])leaves;

	fctl_audit_mth(lv, size, root);
	fctl_format_hex(root, 32, hex);
	if (a->incl) {
		if (a->seq == 0 || a->seq > size ||
		    fctl_audit_inclusion_proof(lv, size, a->seq - 1, path, &plen) < 0) {
			cli_err("audit proof: --inclusion %" PRIu64 ": records are 1..%" PRIu64,
				a->seq, size);
			goto out;
		}
		if (a->json)
			fctl_buf_printf(&o, "{\"leaf_index\":%" PRIu64 ",\"tree_size\":%" PRIu64
					    ",\"root\":\"%s\",\"path\":[", a->seq - 1, size, hex);
		else
			fctl_buf_printf(&o, "inclusion of seq %" PRIu64 " (leaf %" PRIu64 ") in the "
					    "tree of %" PRIu64 " records, root %s:\n", a->seq,
					a->seq - 1, size, hex);
	} else {
		if (a->old_size == 0 || a->old_size > size ||
		    fctl_audit_consistency_proof(lv, size, a->old_size, path, &plen) < 0) {
			cli_err("audit proof: --consistency %" PRIu64 ": sizes are 1..%" PRIu64,
				a->old_size, size);
			goto out;
		}
		fctl_audit_mth(lv, a->old_size, old);
		fctl_format_hex(old, 32, ohex);
		if (a->json)
			fctl_buf_printf(&o, "{\"old_size\":%" PRIu64 ",\"tree_size\":%" PRIu64
					    ",\"old_root\":\"%s\",\"root\":\"%s\",\"path\":[",
					a->old_size, size, ohex, hex);
		else
			fctl_buf_printf(&o, "consistency of %" PRIu64 " records (root %s) with %"
					    PRIu64 " (root %s):\n", a->old_size, ohex, size, hex);
	}
	put_hashes(&o, (const uint8_t(*)[32])path, plen, a->json);
	if (a->json)
		fctl_buf_puts(&o, "]}\n");
	rc = cli_write(stdout, &o) < 0 ? EXIT_USAGE : EXIT_OK;
out:
	fctl_buf_release(&o);
	free(leaves);
	return rc;
}

/* Prints the latest checkpoint note (what a witness is given, or an auditor keeps). */
static int do_note(struct pargs *a)
{
	const char *log = fctl_audit_log_path(a->log, true);
	struct fctl_buf b = { 0 };
	char *cps = NULL;
	uint64_t size;
	int r;

	if (!a->cps && asprintf(&cps, "%s.checkpoints", log) < 0)
		return EXIT_USAGE;
	r = fctl_audit_latest_checkpoint(a->cps ? a->cps : cps, &b, &size);
	if (r < 0)
		cli_err("audit note: no checkpoint in '%s': %s", a->cps ? a->cps : cps, strerror(-r));
	else
		r = cli_write(stdout, &b);
	free(cps);
	fctl_buf_release(&b);
	return r < 0 ? EXIT_USAGE : EXIT_OK;
}

/* The path of a proof printed by 'audit proof --consistency --json'. */
static int read_proof(const char *file, struct fctl_audit_witness_req *q,
		      uint8_t (*path)[32])
{
	struct fctl_buf b = { 0 };
	char *v = NULL;
	const char *p;
	size_t plen = 0, n;
	int r = fctl_file_read(file, &b);

	if (r < 0 || !b.data)
		goto bad;
	if (fctl_audit_field(b.data, b.len, "old_size", &v) < 0 || fctl_parse_u64(v, &q->old_size))
		goto bad;
	free(v);
	v = NULL;
	if (fctl_audit_field(b.data, b.len, "tree_size", &v) < 0 || fctl_parse_u64(v, &q->new_size))
		goto bad;
	if (fctl_audit_field_raw(b.data, b.len, "path", &p, &n) < 0 || n < 2 || p[0] != '[')
		goto bad;
	for (size_t i = 1; i + 1 < n;) {
		if (p[i] == ',' || p[i] == ' ') {
			i++;
			continue;
		}
		if (plen == FCTL_AUDIT_PROOF_MAX || n - i < 67 || p[i] != '"' || p[i + 65] != '"')
			goto bad;
		char hex[65];

		memcpy(hex, p + i + 1, 64);
		hex[64] = '\0';
		if (fctl_parse_hex(hex, path[plen++], 32) < 0)
			goto bad;
		i += 66;
	}
	free(v);
	fctl_buf_release(&b);
	q->path = (const uint8_t(*)[32])path;
	q->plen = plen;
	return 0;
bad:
	free(v);
	fctl_buf_release(&b);
	cli_err("audit witness: '%s' is not a consistency proof ('audit proof --consistency N "
		"--json')", file);
	return -EINVAL;
}

static int do_witness(struct pargs *a)
{
	uint8_t path[FCTL_AUDIT_PROOF_MAX][32];
	struct fctl_audit_witness_req q = {
		.key_path = a->key, .name = a->name, .state_path = a->state, .log_pub = a->log_pub,
	};
	struct fctl_buf note = { 0 }, out = { 0 };
	char err[512] = "";
	int r;

	if (!a->key || !a->name || !a->state || !a->checkpoint) {
		cli_err("audit witness: --key FILE --name NAME --state FILE --checkpoint FILE are "
			"needed (and --log-pub FILE the first time, --proof FILE after)");
		return EXIT_USAGE;
	}
	r = fctl_file_read(a->checkpoint, &note);
	if (r < 0 || !note.data) {
		cli_err("audit witness: cannot read '%s': %s", a->checkpoint, strerror(r ? -r : EINVAL));
		fctl_buf_release(&note);
		return EXIT_USAGE;
	}
	if (a->proof && read_proof(a->proof, &q, path) < 0) {
		fctl_buf_release(&note);
		return EXIT_USAGE;
	}
	q.note = note.data;
	q.note_len = note.len;
	r = fctl_audit_witness_cosign(&q, &out, err, sizeof(err));
	if (r < 0)
		cli_err("audit witness: %s", err[0] ? err : strerror(-r));
	else
		cli_write(stdout, &out);
	fctl_buf_release(&note);
	fctl_buf_release(&out);
	return r == 0 ? EXIT_OK : r == -ESTALE || r == -EINVAL ? EXIT_INVALID : EXIT_USAGE;
}

int cmd_audit_proof(const char *sub, int argc, char **argv)
{
	struct pargs a;
	int rc = pparse(sub, argc, argv, &a);

	if (rc >= 0)
		return rc;
	if (!strcmp(sub, "proof"))
		return do_proof(&a);
	if (!strcmp(sub, "note"))
		return do_note(&a);
	return do_witness(&a);
}
