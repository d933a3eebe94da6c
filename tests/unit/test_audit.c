// SPDX-License-Identifier: MIT
/* Audit log: Merkle tree (RFC 6962 vectors), chain, checkpoints, and one test per attack. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <limits.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/audit.h"

/* --- Merkle tree --- */

/* RFC 6962 test inputs (as in Certificate Transparency's tests); the roots were computed
 * independently with python3 hashlib from the RFC's definition of MTH. */
static const struct {
	const char *hex;
} leaves[] = {
	{ "" }, { "00" }, { "10" }, { "2021" }, { "3031" }, { "40414243" },
	{ "5051525354555657" }, { "606162636465666768696a6b6c6d6e6f" },
};

static const char *const roots[] = {
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
	"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
	"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
	"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
	"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
	"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
	"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
	"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
};

static void test_merkle_vectors(void **state)
{
	struct fctl_audit_tree t;
	uint8_t root[32], leaf[32], data[16];
	char hex[65];

	(void)state;
	fctl_audit_tree_init(&t);
	fctl_audit_tree_root(&t, root);
	fctl_format_hex(root, 32, hex);
	assert_string_equal(hex, roots[0]);
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(leaves); i++) {
		size_t n = strlen(leaves[i].hex) / 2;

		assert_int_equal(n ? fctl_parse_hex(leaves[i].hex, data, n) : 0, 0);
		fctl_audit_leaf_hash(data, n, leaf);
		fctl_audit_tree_push(&t, leaf);
		fctl_audit_tree_root(&t, root);
		fctl_format_hex(root, 32, hex);
		assert_string_equal(hex, roots[i + 1]);
	}
}

/* MTH by the RFC's recursive definition */
static void mth(uint8_t (*l)[32], size_t n, uint8_t out[32])
{
	uint8_t a[32], b[32];
	size_t k = 1;

	if (n == 1) {
		memcpy(out, l[0], 32);
		return;
	}
	while (k * 2 < n)
		k *= 2;
	mth(l, k, a);
	mth(l + k, n - k, b);
	fctl_audit_node_hash(a, b, out);
}

static void test_merkle_against_recursive(void **state)
{
	static uint8_t l[300][32];
	struct fctl_audit_tree t;
	uint8_t a[32], b[32];

	(void)state;
	fctl_audit_tree_init(&t);
	for (size_t i = 0; i < 300; i++) {
		char rec[32];
		int n = snprintf(rec, sizeof(rec), "record %zu", i);

		fctl_audit_leaf_hash(rec, (size_t)n, l[i]);
		fctl_audit_tree_push(&t, l[i]);
		fctl_audit_tree_root(&t, a);
		mth(l, i + 1, b);
		assert_memory_equal(a, b, 32);
	}
}

static void test_base64(void **state)
{
	struct fctl_buf b = { 0 };
	uint8_t out[8];

	(void)state;
	fctl_audit_b64_encode("foob", 4, &b);
	assert_string_equal(b.data, "Zm9vYg==");
	assert_int_equal(fctl_audit_b64_decode("Zm9vYg==", 8, out, sizeof(out)), 4);
	assert_memory_equal(out, "foob", 4);
	assert_int_equal(fctl_audit_b64_decode("Zm9vYg=", 7, out, sizeof(out)), -EINVAL);
	assert_int_equal(fctl_audit_b64_decode("Zm=vYg==", 8, out, sizeof(out)), -EINVAL);
	fctl_buf_release(&b);
}

/* --- records: no field can carry a key --- */

static void test_entry_refuses_key_material(void **state)
{
	const char *key128[] = { "00112233445566778899aabbccddeeff" };
	const char *kcv_ok[] = { "a1b2c3" }, *keyid_ok[] = { "0011223344556677" };
	struct fctl_audit_entry e = { .action = "key-state", .result = "active" };
	char err[256];

	(void)state;
	assert_int_equal(fctl_audit_entry_check(&e, err, sizeof(err)), 0);
	e.kcvs = key128;
	e.n_kcvs = 1;
	assert_int_equal(fctl_audit_entry_check(&e, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "check value"));
	e.kcvs = kcv_ok;
	e.key_ids = key128;
	e.n_key_ids = 1;
	assert_int_equal(fctl_audit_entry_check(&e, err, sizeof(err)), -EINVAL);
	e.key_ids = keyid_ok;
	assert_int_equal(fctl_audit_entry_check(&e, err, sizeof(err)), 0);
	e.action = NULL;
	assert_int_equal(fctl_audit_entry_check(&e, err, sizeof(err)), -EINVAL);
}

/* --- a log in a temporary directory --- */

struct fx {
	char dir[64];
	char log[128], cps[128], key[128], pub[128];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[256];

	strcpy(f->dir, "/tmp/fctl-audit-test.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->log, sizeof(f->log), "%s/audit.log", f->dir);
	snprintf(f->cps, sizeof(f->cps), "%s/audit.log.checkpoints", f->dir);
	snprintf(f->key, sizeof(f->key), "%s/audit.key", f->dir);
	snprintf(f->pub, sizeof(f->pub), "%s/audit.pub", f->dir);
	if (fctl_audit_keygen(f->dir, err, sizeof(err)) < 0)
		return -1;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* writes n records (actions "act-1".."act-n"), a checkpoint at close */
static void write_log(struct fx *f, const char *log, unsigned int n, unsigned int checkpoint_at)
{
	struct fctl_audit_opts o = { .log_path = log, .key_path = f->key, .batch = 4 };
	struct fctl_audit *a = NULL;
	char err[256], act[32];

	assert_int_equal(fctl_audit_open(&o, &a, err, sizeof(err)), 0);
	for (unsigned int i = 1; i <= n; i++) {
		struct fctl_audit_entry e = { .action = act, .result = "applied", .host = "h1" };

		snprintf(act, sizeof(act), "act-%u", i);
		assert_int_equal(fctl_audit_append(a, &e), 0);
		if (i == checkpoint_at)
			assert_int_equal(fctl_audit_checkpoint(a), 0);
	}
	assert_int_equal(fctl_audit_close(a), 0);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *p;
	long n;

	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	p = malloc((size_t)n + 1);
	assert_int_equal(fread(p, 1, (size_t)n, fp), (size_t)n);
	p[n] = '\0';
	fclose(fp);
	*len = (size_t)n;
	return p;
}

static void spit(const char *path, const char *p, size_t len)
{
	FILE *fp = fopen(path, "wb");

	assert_non_null(fp);
	assert_int_equal(fwrite(p, 1, len, fp), len);
	fclose(fp);
}

/* start of line no (1-based) */
static char *line_at(char *p, unsigned int no)
{
	for (unsigned int i = 1; i < no; i++)
		p = strchr(p, '\n') + 1;
	return p;
}

static const struct fctl_audit_finding *find(const struct fctl_audit_report *r,
					     enum fctl_audit_finding_kind k)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->f[i].kind == k)
			return &r->f[i];
	return NULL;
}

static void verify(struct fx *f, struct fctl_audit_report *r)
{
	assert_int_equal(fctl_audit_verify(f->log, f->cps, f->pub, r), 0);
}

static void dump(const struct fctl_audit_report *r)
{
	for (size_t i = 0; i < r->n; i++)
		print_message("  %s: %s\n", fctl_audit_finding_name(r->f[i].kind), r->f[i].msg);
}

static void test_good_log_verifies(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	char *p, hex[65];
	size_t len;

	write_log(f, f->log, 10, 5);
	verify(f, &r);
	dump(&r);
	assert_int_equal(r.n_errors, 0);
	assert_int_equal(r.records, 10);
	assert_int_equal(r.checkpoints, 2);
	assert_int_equal(r.checkpoint_size, 10);
	/* the chain: record 2's prev is the leaf hash of record 1's bytes */
	p = slurp(f->log, &len);
	{
		uint8_t leaf[32];
		char *nl = strchr(p, '\n');

		fctl_audit_leaf_hash(p, (size_t)(nl - p), leaf);
		fctl_format_hex(leaf, 32, hex);
		assert_non_null(strstr(nl + 1, hex));
		assert_memory_equal(p, "{\"seq\":1,\"prev\":\"0000000000", 27);
	}
	free(p);
	fctl_audit_report_release(&r);
}

static void test_flip_a_byte(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	const struct fctl_audit_finding *x;
	size_t len;
	char *p, *l;

	write_log(f, f->log, 10, 0);
	p = slurp(f->log, &len);
	l = strstr(line_at(p, 5), "act-5");
	l[0] = 'A'; /* one byte of record 5 */
	spit(f->log, p, len);
	verify(f, &r);
	dump(&r);
	x = find(&r, FCTL_AUDIT_MODIFIED);
	assert_non_null(x);
	assert_int_equal(x->seq, 5);
	assert_int_equal(x->line, 5);
	assert_non_null(strstr(x->msg, "modified record: seq 5"));
	assert_non_null(find(&r, FCTL_AUDIT_ROOT_MISMATCH));
	free(p);
	fctl_audit_report_release(&r);
}

static void test_flip_a_byte_in_the_last_record(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	size_t len;
	char *p;

	write_log(f, f->log, 10, 0);
	p = slurp(f->log, &len);
	strstr(line_at(p, 10), "act-10")[0] = 'X';
	spit(f->log, p, len);
	verify(f, &r);
	dump(&r);
	/* no later record holds its hash: the signed root does */
	assert_non_null(find(&r, FCTL_AUDIT_ROOT_MISMATCH));
	assert_true(r.n_errors >= 1);
	free(p);
	fctl_audit_report_release(&r);
}

static void test_delete_a_line(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	const struct fctl_audit_finding *x;
	size_t len;
	char *p, *l, *e;

	write_log(f, f->log, 10, 0);
	p = slurp(f->log, &len);
	l = line_at(p, 5);
	e = strchr(l, '\n') + 1;
	memmove(l, e, len - (size_t)(e - p));
	len -= (size_t)(e - l);
	spit(f->log, p, len);
	verify(f, &r);
	dump(&r);
	x = find(&r, FCTL_AUDIT_DELETED);
	assert_non_null(x);
	assert_int_equal(x->seq, 5);
	assert_non_null(strstr(x->msg, "deleted record: seq 5 is missing"));
	assert_null(find(&r, FCTL_AUDIT_MODIFIED));
	free(p);
	fctl_audit_report_release(&r);
}

static void test_swap_two_lines(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	const struct fctl_audit_finding *x;
	size_t len, l4, l5;
	char *p, *a, *b, *tmp;

	write_log(f, f->log, 10, 0);
	p = slurp(f->log, &len);
	a = line_at(p, 4);
	b = line_at(p, 5);
	l4 = (size_t)(b - a);
	l5 = (size_t)(strchr(b, '\n') + 1 - b);
	tmp = malloc(l4 + l5);
	memcpy(tmp, b, l5);
	memcpy(tmp + l5, a, l4);
	memcpy(a, tmp, l4 + l5);
	free(tmp);
	spit(f->log, p, len);
	verify(f, &r);
	dump(&r);
	x = find(&r, FCTL_AUDIT_REORDERED);
	assert_non_null(x);
	assert_int_equal(x->seq, 4);
	assert_int_equal(x->line, 5);
	assert_non_null(strstr(x->msg, "reordered records: seq 4"));
	assert_null(find(&r, FCTL_AUDIT_DELETED));
	assert_null(find(&r, FCTL_AUDIT_MODIFIED));
	assert_non_null(find(&r, FCTL_AUDIT_ROOT_MISMATCH));
	free(p);
	fctl_audit_report_release(&r);
}

static void test_cut_the_tail(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	const struct fctl_audit_finding *x;
	size_t len;
	char *p;

	write_log(f, f->log, 10, 0);
	p = slurp(f->log, &len);
	spit(f->log, p, (size_t)(line_at(p, 8) - p)); /* records 8..10 gone */
	verify(f, &r);
	dump(&r);
	x = find(&r, FCTL_AUDIT_TRUNCATED);
	assert_non_null(x);
	assert_non_null(strstr(x->msg, "cut-off tail: the log holds 7 records"));
	assert_non_null(strstr(x->msg, "covers 10 (3 records missing)"));
	free(p);
	fctl_audit_report_release(&r);
}

/* the two notes of a checkpoints file (checkpoints at 5 and 10) */
static void notes(const char *p, const char **n2)
{
	*n2 = strstr(p, "\n\n\xe2\x80\x94");
	assert_non_null(*n2);
	*n2 = strstr(*n2 + 3, "\n\n");
	assert_non_null(*n2);
	*n2 += 2;
}

static void test_replace_a_signature(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	const struct fctl_audit_finding *x;
	size_t len;
	char *p, *s1, *s2;
	const char *n2;

	write_log(f, f->log, 10, 5);
	p = slurp(f->cps, &len);
	notes(p, &n2);
	/* the signature of the first note, pasted under the second */
	s1 = strstr(p, "\xe2\x80\x94 ");
	s2 = strstr(n2, "\xe2\x80\x94 ");
	assert_true(s2 > s1);
	{
		size_t sl = (size_t)(strchr(s1, '\n') - s1);

		assert_int_equal(sl, (size_t)(strchr(s2, '\n') - s2));
		memcpy(s2, s1, sl);
	}
	spit(f->cps, p, len);
	verify(f, &r);
	dump(&r);
	x = find(&r, FCTL_AUDIT_BAD_SIGNATURE);
	assert_non_null(x);
	assert_int_equal(x->seq, 10);
	assert_non_null(strstr(x->msg, "does not verify"));
	free(p);
	fctl_audit_report_release(&r);
}

static void test_signature_by_another_key(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	char other[160], err[256], origin[FCTL_AUDIT_ORIGIN_MAX];
	struct fctl_buf note = { 0 };
	uint8_t root[32] = { 0 };

	write_log(f, f->log, 3, 0);
	assert_int_equal(fctl_audit_origin(f->log, origin, sizeof(origin)), 0);
	/* a checkpoint signed by someone else's key, appended */
	snprintf(other, sizeof(other), "%s/other", f->dir);
	assert_int_equal(fctl_audit_keygen(other, err, sizeof(err)), 0);
	strcat(other, "/audit.key");
	assert_int_equal(fctl_audit_checkpoint_sign(other, origin, 3, root, &note, err,
						    sizeof(err)),
			 0);
	{
		int fd = open(f->cps, O_WRONLY | O_APPEND);

		assert_true(write(fd, note.data, note.len) == (ssize_t)note.len);
		close(fd);
	}
	verify(f, &r);
	dump(&r);
	assert_non_null(find(&r, FCTL_AUDIT_NO_SIGNATURE));
	assert_non_null(strstr(find(&r, FCTL_AUDIT_NO_SIGNATURE)->msg, "missing signature"));
	fctl_buf_release(&note);
	fctl_audit_report_release(&r);
}

static void test_replace_a_checkpoint(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	const struct fctl_audit_finding *x;
	char log2[160], cps2[192];
	size_t len, len2;
	char *p, *q;

	/* a second log with different records, signed by the same key */
	snprintf(log2, sizeof(log2), "%s/other.log", f->dir);
	snprintf(cps2, sizeof(cps2), "%s.checkpoints", log2);
	write_log(f, f->log, 10, 0);
	{
		struct fctl_audit_opts o = { .log_path = log2, .key_path = f->key };
		struct fctl_audit *a = NULL;
		struct fctl_audit_entry e = { .action = "forged", .result = "applied" };
		char err[256];

		assert_int_equal(fctl_audit_open(&o, &a, err, sizeof(err)), 0);
		for (int i = 0; i < 10; i++)
			assert_int_equal(fctl_audit_append(a, &e), 0);
		assert_int_equal(fctl_audit_close(a), 0);
	}
	p = slurp(f->cps, &len);
	q = slurp(cps2, &len2);
	spit(f->cps, q, len2); /* a validly signed checkpoint of another log */
	verify(f, &r);
	dump(&r);
	x = find(&r, FCTL_AUDIT_ROOT_MISMATCH);
	assert_non_null(x);
	assert_non_null(strstr(x->msg, "does not match the recomputed root of the first 10"));
	assert_null(find(&r, FCTL_AUDIT_BAD_SIGNATURE));
	free(p);
	free(q);
	fctl_audit_report_release(&r);
}

static void test_missing_checkpoints(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;

	write_log(f, f->log, 3, 0);
	assert_int_equal(unlink(f->cps), 0);
	verify(f, &r);
	dump(&r);
	assert_non_null(find(&r, FCTL_AUDIT_NO_SIGNATURE));
	assert_int_equal(r.n_errors, 1);
	fctl_audit_report_release(&r);
}

static void test_torn_last_line_and_repair(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	const struct fctl_audit_finding *x;
	size_t len;
	char *p;
	char want[64];

	write_log(f, f->log, 5, 0);
	p = slurp(f->log, &len);
	{
		int fd = open(f->log, O_WRONLY | O_APPEND);

		assert_int_equal(write(fd, "{\"seq\":6,\"prev\":\"ab", 19), 19);
		close(fd);
	}
	verify(f, &r);
	dump(&r);
	x = find(&r, FCTL_AUDIT_TORN);
	assert_non_null(x);
	assert_int_equal(x->line, 6);
	assert_int_equal(x->offset, len);
	snprintf(want, sizeof(want), "audit.log:6, byte offset %zu: 19 bytes", len);
	assert_non_null(strstr(x->msg, want));
	fctl_audit_report_release(&r);

	/* the next writer terminates the fragment and records the repair */
	write_log(f, f->log, 2, 0);
	verify(f, &r);
	dump(&r);
	assert_int_equal(r.n_errors, 0);
	assert_int_equal(r.records, 8); /* 5 + repair + 2 */
	x = find(&r, FCTL_AUDIT_WARNING);
	assert_non_null(x);
	assert_non_null(strstr(x->msg, "torn record"));
	free(p);
	fctl_audit_report_release(&r);
}

static void test_rotation_keeps_the_chain(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_opts o = { .log_path = f->log, .key_path = f->key };
	struct fctl_audit_report r;
	struct fctl_audit *a = NULL;
	struct fctl_audit_entry e = { .action = "apply", .result = "applied" };
	char err[256], rotated[192];
	size_t len;
	char *p;

	assert_int_equal(fctl_audit_open(&o, &a, err, sizeof(err)), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(fctl_audit_append(a, &e), 0);
	assert_int_equal(fctl_audit_rotate(a), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(fctl_audit_append(a, &e), 0);
	assert_int_equal(fctl_audit_close(a), 0);
	verify(f, &r);
	dump(&r);
	assert_int_equal(r.n_errors, 0);
	assert_int_equal(r.files, 2);
	assert_int_equal(r.records, 7);
	fctl_audit_report_release(&r);
	/* the first record of the new file continues the sequence */
	p = slurp(f->log, &len);
	assert_memory_equal(p, "{\"seq\":5,", 9);
	free(p);
	/* losing the rotated file is caught */
	snprintf(rotated, sizeof(rotated), "%s.000001", f->log);
	assert_int_equal(unlink(rotated), 0);
	verify(f, &r);
	dump(&r);
	assert_non_null(find(&r, FCTL_AUDIT_DELETED));
	fctl_audit_report_release(&r);
}

static void test_fields(void **state)
{
	const char *line = "{\"seq\":1,\"prev\":\"x\",\"actor\":{\"user\":\"r\\\"t\"},\"kcv\":[\"a\",\"b\"],"
			   "\"detail\":\"caf\\u00e9 \\n\"}";
	char *v = NULL;

	(void)state;
	assert_int_equal(fctl_audit_field(line, strlen(line), "detail", &v), 0);
	assert_string_equal(v, "caf\xc3\xa9 \n");
	free(v);
	assert_int_equal(fctl_audit_field(line, strlen(line), "kcv", &v), 0);
	assert_string_equal(v, "[\"a\",\"b\"]");
	free(v);
	assert_int_equal(fctl_audit_field(line, strlen(line), "user", &v), -ENOENT);
	assert_int_equal(fctl_audit_field(line, strlen(line), "seq", &v), 0);
	assert_string_equal(v, "1");
	free(v);
}

static void test_parse_time(void **state)
{
	char t[32];

	(void)state;
	assert_int_equal(fctl_audit_parse_time("2024-05-01", t), 0);
	assert_string_equal(t, "2024-05-01T00:00:00.000000Z");
	assert_int_equal(fctl_audit_parse_time("2024-05-01T12:30:00+02:00", t), 0);
	assert_string_equal(t, "2024-05-01T10:30:00.000000Z");
	assert_int_equal(fctl_audit_parse_time("@0", t), 0);
	assert_string_equal(t, "1970-01-01T00:00:00.000000Z");
	assert_int_equal(fctl_audit_parse_time("yesterday", t), -EINVAL);
}

/* --- the open policy --- */

static void test_policy_makes_the_key_and_signs(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_policy p = { .create_key = true };
	struct fctl_audit_report r;
	struct fctl_audit *a = NULL;
	struct fctl_audit_entry e = { .action = "key-rotation", .result = "committed" };
	char log[192], key[192], pub[192], cps[192], err[512];
	struct stat st;

	snprintf(log, sizeof(log), "%s/state/sub/km.log", f->dir);
	snprintf(key, sizeof(key), "%s/state/sub/audit.key", f->dir);
	snprintf(pub, sizeof(pub), "%s/state/sub/audit.pub", f->dir);
	snprintf(cps, sizeof(cps), "%s.checkpoints", log);
	p.log_path = log;
	assert_int_equal(fctl_audit_open_policy(&p, &a, err, sizeof(err)), FCTL_AUDIT_KEY_CREATED);
	assert_non_null(strstr(err, key));
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(fctl_audit_append(a, &e), 0);
	assert_int_equal(fctl_audit_close(a), 0);
	assert_int_equal(fctl_audit_verify(log, cps, pub, &r), 0);
	assert_int_equal(r.n_errors, 0);
	assert_int_equal(r.checkpoint_size, 1);
	fctl_audit_report_release(&r);
	/* the next writer finds it: no notice */
	assert_int_equal(fctl_audit_open_policy(&p, &a, err, sizeof(err)), 0);
	assert_int_equal(fctl_audit_close(a), 0);
}

static void test_policy_without_a_key(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_policy p = { 0 };
	struct fctl_audit *a = NULL;
	char log[192], file[192], err[512];

	/* no key, none to be made: chained, not signed, said */
	snprintf(log, sizeof(log), "%s/nokey/audit.log", f->dir);
	p.log_path = log;
	assert_int_equal(fctl_audit_open_policy(&p, &a, err, sizeof(err)), FCTL_AUDIT_UNSIGNED);
	assert_non_null(strstr(err, "no checkpoint key"));
	assert_int_equal(fctl_audit_close(a), 0);
	/* a key that cannot be made is no failure; a log that cannot be written is */
	snprintf(file, sizeof(file), "%s/plain", f->dir);
	spit(file, "x", 1);
	snprintf(log, sizeof(log), "%s/plain/audit.log", f->dir);
	p.create_key = true;
	err[0] = '\0';
	assert_int_equal(fctl_audit_open_policy(&p, &a, err, sizeof(err)), -ENOTDIR);
	assert_non_null(strstr(err, "plain"));
}

static void test_policy_path_and_actor(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_policy p = { .env = true, .actor = { .cert = "CN=agent-h1" } };
	struct fctl_audit *a = NULL;
	struct fctl_audit_entry e = { .action = "drift", .result = "detected" };
	struct fctl_audit_entry u = { .action = "connect", .result = "refused",
				      .has_actor_uid = true, .actor_uid = 4242 };
	char *text;
	size_t len;
	char err[512];

	assert_string_equal(fctl_audit_log_path(NULL, false), FCTL_AUDIT_LOG);
	assert_string_equal(fctl_audit_log_path("/x/y.log", true), "/x/y.log");
	setenv("FCTL_AUDIT_LOG", f->log, 1);
	assert_string_equal(fctl_audit_log_path("", true), f->log);
	assert_string_equal(fctl_audit_log_path(NULL, false), FCTL_AUDIT_LOG);
	assert_int_equal(fctl_audit_open_policy(&p, &a, err, sizeof(err)), 0); /* f->key beside */
	unsetenv("FCTL_AUDIT_LOG");
	assert_int_equal(fctl_audit_append(a, &e), 0);
	assert_int_equal(fctl_audit_append(a, &u), 0);
	assert_int_equal(fctl_audit_close(a), 0);
	text = slurp(f->log, &len);
	assert_non_null(strstr(text, "\"actor\":{\"cert\":\"CN=agent-h1\"},\"action\":\"drift\""));
	assert_non_null(strstr(text, "\"uid\":4242},\"action\":\"connect\""));
	free(text);
}

/* The user name is looked up once a handle and uid (a batch writes hundreds of records):
 * records of alternating uids still name each its own user. */
static void test_actor_user_per_uid(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_opts o = { .log_path = f->log, .key_path = f->key };
	struct fctl_audit_entry r = { .action = "a", .result = "r", .has_actor_uid = true,
				      .actor_uid = 0 };
	struct fctl_audit_entry n = { .action = "a", .result = "n", .has_actor_uid = true,
				      .actor_uid = 4294967294u }; /* no such user */
	struct fctl_audit *a = NULL;
	char err[256], *text, *p;
	size_t len;
	int n_root = 0, n_null = 0;

	assert_int_equal(fctl_audit_open(&o, &a, err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(fctl_audit_append(a, &r), 0);
		assert_int_equal(fctl_audit_append(a, &n), 0);
	}
	assert_int_equal(fctl_audit_close(a), 0);
	text = slurp(f->log, &len);
	for (p = text; (p = strstr(p, "\"actor\":{\"user\":")) != NULL; p++) {
		p += strlen("\"actor\":{\"user\":");
		static const char root[] = "\"root\",\"uid\":0}", none[] = "null,\"uid\":4294967294}";

		if (strncmp(p, root, sizeof(root) - 1) == 0)
			n_root++;
		else if (strncmp(p, none, sizeof(none) - 1) == 0)
			n_null++;
	}
	free(text);
	assert_int_equal(n_root, 3);
	assert_int_equal(n_null, 3);
}

/* --- canonical records, unsigned tails, origins, proofs, witnesses --- */

static void test_canonical_writer_output(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_opts o = { .log_path = f->log, .key_path = f->key };
	const char *ids[] = { "0011223344556677" }, *kcvs[] = { "a1b2c3", "000000" };
	const char *odd = "q\"b\\n\nt\tr\r\x01\x1f\x7f caf\xc3\xa9 \xf0\x9f\x94\x91 bad\xff\xc0\xaf end";
	struct fctl_audit_entry e = {
		.action = "apply", .result = odd, .actor_cert = "CN=a \"b\"", .change_id = "CHG-1",
		.host = "", .link = odd, .secy = "ms0", .profile_name = odd, .profile_version = 18446744073709551615ULL,
		.profile_sha256 = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
		.has_counts = true, .ops = 0, .writes = 12, .error = odd, .detail = "",
		.key_ids = ids, .n_key_ids = 1, .kcvs = kcvs, .n_kcvs = 2, .key_state = "active",
	};
	struct fctl_audit_entry plain = { .action = "x", .result = "y", .has_actor_uid = true,
					  .actor_uid = 4294967295u };
	struct fctl_audit *a = NULL;
	char err[256], why[256], *p, *l;
	size_t len;

	assert_int_equal(fctl_audit_open(&o, &a, err, sizeof(err)), 0);
	assert_int_equal(fctl_audit_append(a, &e), 0);
	assert_int_equal(fctl_audit_append(a, &plain), 0);
	assert_int_equal(fctl_audit_close(a), 0);
	p = slurp(f->log, &len);
	for (l = p; *l; l = strchr(l, '\n') + 1) {
		size_t n = (size_t)(strchr(l, '\n') - l);

		why[0] = '\0';
		assert_int_equal(fctl_audit_record_check(l, n, NULL, why, sizeof(why)), 0);
	}
	/* the bytes that are no UTF-8 became U+FFFD, one each */
	assert_non_null(strstr(p, "bad\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end"));
	assert_non_null(strstr(p, "\\u0001\\u001f\\u007f caf\xc3\xa9"));
	free(p);
}

static void test_canonical_rejects(void **state)
{
	static const char good[] =
		"{\"seq\":4,\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\","
		"\"time\":\"2026-05-01T12:00:00.123456Z\",\"actor\":{\"user\":\"root\",\"uid\":0},"
		"\"action\":\"apply\",\"host\":\"h1\",\"result\":\"ok\",\"ops\":1,\"writes\":2}";
	static const struct {
		const char *from, *to, *why;
	} bad[] = {
		{ "\"result\":\"ok\"", "\"result\":\"ok\",\"result\":\"failed\"", "\"result\"" },
		{ "\"action\":\"apply\",\"host\":\"h1\"", "\"host\":\"h1\",\"action\":\"apply\"", "action" },
		{ "\"writes\":2}", "\"writes\":2,\"x\":1}", "\"x\"" },
		{ "\"h1\"", "\"h\\u0031\"", "escape" },
		{ "\"h1\"", "\"h\\/1\"", "escape" },
		{ "\"h1\"", "\"h\\u001F\"", "escape" },
		{ "\"h1\"", "\"h\\u000a\"", "escape" },
		{ "\"h1\"", "\"h\x01\"", "control" },
		{ "\"h1\"", "\"h\xc0\xaf\"", "UTF-8" },
		{ "\"h1\"", "\"h\xed\xa0\x80\"", "UTF-8" },
		{ "\"ops\":1", "\"ops\":01", "leading zero" },
		{ "\"ops\":1", "\"ops\":1.0", "writes" },
		{ "\"uid\":0", "\"uid\":4294967296", "range" },
		{ "\"uid\":0", "\"uid\":-0", "number" },
		{ ",\"actor\"", ", \"actor\"", "actor" },
		{ "12:00:00.123456Z", "12:00:00.123Z", "time" },
		{ "2026-05-01", "2026-02-30", "real UTC" },
		{ "\"action\":\"apply\"", "\"action\":\"\"", "empty" },
		{ "\"seq\":4", "\"seq\":0", "from 1" },
		{ "\"writes\":2}", "\"writes\":2} ", "after" },
		{ "\"ops\":1,\"writes\":2", "\"ops\":1", "writes" },
		{ "\"prev\":\"0", "\"prev\":\"A", "hex" },
	};
	char line[1024], why[256];

	(void)state;
	assert_int_equal(fctl_audit_record_check(good, strlen(good), NULL, why, sizeof(why)), 0);
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(bad); i++) {
		const char *at = strstr(good, bad[i].from);

		assert_non_null(at);
		snprintf(line, sizeof(line), "%.*s%s%s", (int)(at - good), good, bad[i].to,
			 at + strlen(bad[i].from));
		why[0] = '\0';
		if (fctl_audit_record_check(line, strlen(line), NULL, why, sizeof(why)) != -EINVAL ||
		    !strstr(why, bad[i].why))
			fail_msg("case %zu (%s) not rejected as '%s': %s", i, line, bad[i].why, why);
	}
}

/* Appends a record made from the last one by a text replacement, chained, and signs. */
static void forge_last(struct fx *f, const char *from, const char *to)
{
	struct fctl_audit_opts o = { .log_path = f->log, .key_path = f->key };
	struct fctl_audit *a = NULL;
	char err[256], line[2048], hex[65], *p, *last, *at;
	uint8_t h[32];
	size_t len, n;
	uint64_t seq;

	p = slurp(f->log, &len);
	p[len - 1] = '\0';
	last = strrchr(p, '\n') ? strrchr(p, '\n') + 1 : p;
	n = strlen(last);
	fctl_audit_leaf_hash(last, n, h);
	fctl_format_hex(h, 32, hex);
	assert_int_equal(fctl_audit_parse_head(last, n, &seq, h), 0);
	at = strstr(last, "\"time\"");
	snprintf(line, sizeof(line), "{\"seq\":%" PRIu64 ",\"prev\":\"%s\",%s", seq + 1, hex, at);
	at = strstr(line, from);
	assert_non_null(at);
	{
		char tail[2048];

		snprintf(tail, sizeof(tail), "%s", at + strlen(from));
		snprintf(at, sizeof(line) - (size_t)(at - line), "%s%s\n", to, tail);
	}
	{
		int fd = open(f->log, O_WRONLY | O_APPEND);

		assert_true(write(fd, line, strlen(line)) == (ssize_t)strlen(line));
		close(fd);
	}
	free(p);
	assert_int_equal(fctl_audit_open(&o, &a, err, sizeof(err)), 0);
	assert_int_equal(fctl_audit_checkpoint(a), 0);
	assert_int_equal(fctl_audit_close(a), 0);
}

static void test_duplicate_key_fails_verify(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	const struct fctl_audit_finding *x;

	write_log(f, f->log, 3, 0);
	forge_last(f, "\"result\":\"applied\"", "\"result\":\"applied\",\"result\":\"failed\"");
	verify(f, &r);
	dump(&r);
	x = find(&r, FCTL_AUDIT_NONCANONICAL);
	assert_non_null(x);
	assert_int_equal(x->line, 4);
	assert_int_equal(x->seq, 4);
	assert_non_null(strstr(x->msg, "\"result\""));
	assert_int_equal(r.n_errors, 1);
	fctl_audit_report_release(&r);
}

static void test_time_backwards_fails_verify(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_report r;
	char *p;
	size_t len;

	write_log(f, f->log, 2, 0);
	p = slurp(f->log, &len);
	{
		/* an hour and a day before (same format): the year and day changed */
		char from[16], to[16];
		const char *t = strstr(p, "\"time\":\"") + 8;

		snprintf(from, sizeof(from), "\"time\":\"%.4s", t);
		snprintf(to, sizeof(to), "\"time\":\"%04d", atoi(t) - 1);
		forge_last(f, from, to);
	}
	free(p);
	verify(f, &r);
	dump(&r);
	assert_non_null(find(&r, FCTL_AUDIT_TIME));
	assert_int_equal(find(&r, FCTL_AUDIT_TIME)->line, 3);
	fctl_audit_report_release(&r);
}

static void test_unsigned_tail(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_opts o = { .log_path = f->log }; /* no key */
	struct fctl_audit_verify_opts v = { .log_path = f->log, .pubkey_path = f->pub };
	struct fctl_audit_entry e = { .action = "late", .result = "ok" };
	struct fctl_audit_report r;
	struct fctl_audit *a = NULL;
	char err[256];

	write_log(f, f->log, 4, 0);
	assert_int_equal(fctl_audit_open(&o, &a, err, sizeof(err)), 0);
	assert_int_equal(fctl_audit_append(a, &e), 0);
	assert_int_equal(fctl_audit_append(a, &e), 0);
	assert_int_equal(fctl_audit_close(a), 0);
	assert_int_equal(fctl_audit_verify_with(&v, &r), 0);
	assert_non_null(find(&r, FCTL_AUDIT_UNSIGNED_TAIL));
	assert_int_equal(r.unsigned_records, 2);
	assert_int_equal(r.n_errors, 1);
	fctl_audit_report_release(&r);
	v.allow_unsigned_tail = true;
	assert_int_equal(fctl_audit_verify_with(&v, &r), 0);
	assert_int_equal(r.n_errors, 0);
	assert_int_equal(r.unsigned_records, 2);
	assert_non_null(find(&r, FCTL_AUDIT_WARNING));
	fctl_audit_report_release(&r);
}

static void test_origin_names_the_log(void **state)
{
	struct fx *f = *state;
	struct fctl_audit_verify_opts v = { .log_path = f->log, .pubkey_path = f->pub };
	struct fctl_audit_report r;
	char want[FCTL_AUDIT_ORIGIN_MAX], host[256] = "", dir[4096], *p;
	size_t len;

	write_log(f, f->log, 2, 0);
	gethostname(host, sizeof(host) - 1);
	assert_non_null(realpath(f->dir, dir));
	snprintf(want, sizeof(want), "%s%s/audit.log", host, dir);
	p = slurp(f->cps, &len);
	assert_int_equal(strncmp(p, want, strlen(want)), 0);
	assert_int_equal(p[strlen(want)], '\n');
	free(p);
	assert_int_equal(fctl_audit_verify_with(&v, &r), 0);
	assert_int_equal(r.n_errors, 0);
	assert_string_equal(r.origin, want);
	fctl_audit_report_release(&r);
	v.origin = "gpu99/var/lib/fabricctl/audit/audit.log";
	assert_int_equal(fctl_audit_verify_with(&v, &r), 0);
	assert_non_null(find(&r, FCTL_AUDIT_WRONG_ORIGIN));
	fctl_audit_report_release(&r);
	assert_int_equal(fctl_audit_origin("/a b/c+d%e/audit.log", want, sizeof(want)), 0);
	assert_non_null(strstr(want, "/a%20b/c%2Bd%25e/audit.log"));
}

static void test_proofs_against_recursive(void **state)
{
	uint8_t l[40][32], path[FCTL_AUDIT_PROOF_MAX][32], root[32], old[32], want[32];
	uint8_t path2[FCTL_AUDIT_PROOF_MAX][32];
	struct fctl_audit_levels lv;
	size_t plen, plen2;

	(void)state;
	for (int i = 0; i < 40; i++)
		fctl_audit_leaf_hash(&i, sizeof(i), l[i]);
	for (uint64_t n = 1; n <= 40; n++) {
		fctl_audit_mth((const uint8_t(*)[32])l, n, root);
		mth(l, n, want);
		assert_memory_equal(root, want, 32);
		assert_int_equal(fctl_audit_levels_build((const uint8_t(*)[32])l, n, &lv), 0);
		assert_memory_equal(lv.lv[lv.n - 1][0], want, 32);
		for (uint64_t i = 0; i < n; i++) {
			assert_int_equal(fctl_audit_levels_path(&lv, i, path2, &plen2), 0);
			assert_int_equal(fctl_audit_inclusion_proof((const uint8_t(*)[32])l, n, i, path,
								    &plen), 0);
			assert_int_equal(plen, plen2); /* the level walk gives the RFC's path */
			assert_memory_equal(path, path2, plen * 32);
			assert_int_equal(fctl_audit_inclusion_check(i, n, l[i], (const uint8_t(*)[32])path,
								    plen, root), 1);
			assert_int_equal(fctl_audit_inclusion_check(i, n, l[(i + 1) % 40],
								    (const uint8_t(*)[32])path, plen,
								    root), 0);
		}
		for (uint64_t m = 1; m <= n; m++) {
			assert_int_equal(fctl_audit_consistency_proof((const uint8_t(*)[32])l, n, m, path,
								      &plen), 0);
			mth(l, m, old);
			assert_int_equal(fctl_audit_consistency_check(m, n, old, root,
								      (const uint8_t(*)[32])path,
								      plen), 1);
			old[0] ^= 1;
			assert_int_equal(fctl_audit_consistency_check(m, n, old, root,
								      (const uint8_t(*)[32])path,
								      plen), 0);
		}
		fctl_audit_levels_release(&lv);
	}
	fctl_audit_levels_release(NULL);
	assert_int_equal(fctl_audit_inclusion_proof((const uint8_t(*)[32])l, 3, 3, path, &plen),
			 -EINVAL);
	assert_int_equal(fctl_audit_consistency_proof((const uint8_t(*)[32])l, 3, 0, path, &plen),
			 -EINVAL);
}

/* Range proofs: every range of every tree up to 40 leaves gives the root (the recursive
 * MTH), and a changed leaf, a changed node, a dropped node or an extra one does not. */
static void test_range_proofs(void **state)
{
	uint8_t l[40][32], nodes[FCTL_AUDIT_PROOF_MAX + 1][32], root[32], bad[40][32];
	struct fctl_audit_levels lv;

	(void)state;
	for (int i = 0; i < 40; i++)
		fctl_audit_leaf_hash(&i, sizeof(i), l[i]);
	for (uint64_t n = 1; n <= 40; n++) {
		mth(l, n, root);
		assert_int_equal(fctl_audit_levels_build((const uint8_t(*)[32])l, n, &lv), 0);
		for (uint64_t lo = 0; lo < n; lo++) {
			for (uint64_t hi = lo; hi < n; hi++) {
				const uint8_t (*win)[32] = (const uint8_t(*)[32])l + lo;
				const uint8_t (*nd)[32] = (const uint8_t(*)[32])nodes;
				int nn = fctl_audit_levels_range(&lv, lo, hi, nodes);

				assert_true(nn >= 0 && nn <= 12);
				assert_int_equal(fctl_audit_range_check(n, lo, hi, win, nd, (size_t)nn,
									root), 1);
				memcpy(bad, win, (hi - lo + 1) * 32);
				bad[(hi - lo) / 2][5] ^= 1;
				assert_int_equal(fctl_audit_range_check(n, lo, hi,
									(const uint8_t(*)[32])bad, nd,
									(size_t)nn, root), 0);
				memcpy(nodes[nn], l[0], 32);
				assert_int_equal(fctl_audit_range_check(n, lo, hi, win, nd,
									(size_t)nn + 1, root), 0);
				if (hi + 1 < n) /* one leaf short of the range it proves */
					assert_int_equal(fctl_audit_range_check(n, lo, hi + 1, win, nd,
										(size_t)nn, root), 0);
				if (!nn)
					continue;
				assert_int_equal(fctl_audit_range_check(n, lo, hi, win, nd,
									(size_t)nn - 1, root), 0);
				nodes[nn - 1][31] ^= 0x80;
				assert_int_equal(fctl_audit_range_check(n, lo, hi, win, nd, (size_t)nn,
									root), 0);
			}
		}
		assert_int_equal(fctl_audit_levels_range(&lv, 0, n, nodes), -EINVAL);
		fctl_audit_levels_release(&lv);
	}
}

static void latest_note(struct fx *f, struct fctl_buf *b)
{
	uint64_t size;

	fctl_buf_reset(b);
	assert_int_equal(fctl_audit_latest_checkpoint(f->cps, b, &size), 0);
}

static int witness(struct fx *f, const char *wdir, const struct fctl_buf *note, uint64_t old,
		   struct fctl_buf *out, char *err)
{
	uint8_t (*lv)[32] = NULL, path[FCTL_AUDIT_PROOF_MAX][32];
	uint64_t n = 0;
	char key[160], state[160];
	struct fctl_audit_witness_req q = { .name = "w.example", .log_pub = f->pub,
					    .note = note->data, .note_len = note->len };
	int r;

	snprintf(key, sizeof(key), "%s/audit.key", wdir);
	snprintf(state, sizeof(state), "%s/state", wdir);
	q.key_path = key;
	q.state_path = state;
	assert_int_equal(fctl_audit_leaves(f->log, &lv, &n), 0);
	if (old && old <= n) {
		assert_int_equal(fctl_audit_consistency_proof((const uint8_t(*)[32])lv, n, old, path,
							      &q.plen), 0);
		q.old_size = old;
		q.new_size = n;
		q.path = (const uint8_t(*)[32])path;
	}
	fctl_buf_reset(out);
	r = fctl_audit_witness_cosign(&q, out, err, 256);
	free(lv);
	return r;
}

static void test_witness(void **state)
{
	struct fx *f = *state;
	struct fctl_buf note = { 0 }, out = { 0 }, all = { 0 };
	char err[256], wdir[128], wpub[160], *p;
	const char *pubs[1] = { wpub };
	struct fctl_audit_verify_opts v = { .log_path = f->log, .pubkey_path = f->pub,
					    .witness_pubs = pubs, .n_witness_pubs = 1,
					    .witnesses = 1 };
	struct fctl_audit_report r;
	size_t len;

	snprintf(wdir, sizeof(wdir), "%s/w", f->dir);
	snprintf(wpub, sizeof(wpub), "%s/audit.pub", wdir);
	assert_int_equal(fctl_audit_keygen(wdir, err, sizeof(err)), 0);
	write_log(f, f->log, 3, 0);
	latest_note(f, &note);
	assert_int_equal(witness(f, wdir, &note, 0, &out, err), 0);
	fctl_buf_append(&all, out.data, out.len);
	write_log(f, f->log, 2, 0); /* 5 records */
	latest_note(f, &note);
	assert_int_equal(witness(f, wdir, &note, 0, &out, err), -EINVAL); /* no proof */
	assert_int_equal(witness(f, wdir, &note, 3, &out, err), 0);
	fctl_buf_append(&all, out.data, out.len);
	{
		char cp[160];

		snprintf(cp, sizeof(cp), "%s.cosignatures", f->log);
		spit(cp, all.data, all.len);
	}
	assert_int_equal(fctl_audit_verify_with(&v, &r), 0);
	dump(&r);
	assert_int_equal(r.n_errors, 0);
	assert_int_equal(r.witnessed_size, 5);
	fctl_audit_report_release(&r);
	/* an older checkpoint, then a rewritten log, are refused */
	p = slurp(f->cps, &len);
	fctl_buf_reset(&note);
	fctl_buf_append(&note, p, (size_t)(strstr(p, "\n\n") - p) + 2);
	fctl_buf_append(&note, strstr(p, "\n\n") + 2,
			(size_t)(strstr(strstr(p, "\n\n") + 2, "\n\n") - strstr(p, "\n\n")));
	assert_int_equal(witness(f, wdir, &note, 0, &out, err), -ESTALE);
	assert_non_null(strstr(err, "older"));
	free(p);
	p = slurp(f->log, &len);
	*strstr(p, "act-1") = 'A';
	spit(f->log, p, len);
	free(p);
	write_log(f, f->log, 1, 0); /* 6 records, the writer signs what it found */
	latest_note(f, &note);
	assert_int_equal(witness(f, wdir, &note, 5, &out, err), -ESTALE);
	assert_non_null(strstr(err, "not consistent"));
	fctl_buf_release(&note);
	fctl_buf_release(&out);
	fctl_buf_release(&all);
}

#define FX(t) cmocka_unit_test_setup_teardown(t, fx_setup, fx_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merkle_vectors),
		cmocka_unit_test(test_merkle_against_recursive),
		cmocka_unit_test(test_base64),
		cmocka_unit_test(test_entry_refuses_key_material),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_parse_time),
		FX(test_good_log_verifies),
		FX(test_flip_a_byte),
		FX(test_flip_a_byte_in_the_last_record),
		FX(test_delete_a_line),
		FX(test_swap_two_lines),
		FX(test_cut_the_tail),
		FX(test_replace_a_signature),
		FX(test_signature_by_another_key),
		FX(test_replace_a_checkpoint),
		FX(test_missing_checkpoints),
		FX(test_torn_last_line_and_repair),
		FX(test_rotation_keeps_the_chain),
		FX(test_policy_makes_the_key_and_signs),
		FX(test_policy_without_a_key),
		FX(test_policy_path_and_actor),
		cmocka_unit_test(test_canonical_rejects),
		cmocka_unit_test(test_proofs_against_recursive),
		cmocka_unit_test(test_range_proofs),
		FX(test_actor_user_per_uid),
		FX(test_canonical_writer_output),
		FX(test_duplicate_key_fails_verify),
		FX(test_time_backwards_fails_verify),
		FX(test_unsigned_tail),
		FX(test_origin_names_the_log),
		FX(test_witness),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
