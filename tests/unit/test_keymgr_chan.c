// SPDX-License-Identifier: MIT
/* The apply path's channel to fabricctl-keymgr: the real `fetch-sak` over a socketpair. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/keysrc.h"

static char dir[] = "/tmp/fctl-test-chan-XXXXXX";
static const char keymgr[] = FCTL_TEST_KEYMGR;

static void write_key(const char *name, const char *hex)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(hex, f);
	fclose(f);
	assert_int_equal(chmod(path, 0600), 0);
}

static int fetch(const char *backend, const char *id, uint32_t version, size_t len,
		 struct fctl_key **k, char *err, size_t errlen)
{
	struct fctl_keyref ref = { .backend = (char *)(uintptr_t)backend,
				   .id = (char *)(uintptr_t)id, .version = version };

	*k = NULL;
	err[0] = '\0';
	return fctl_keymgr_fetch(keymgr, &ref, dir, len, k, err, errlen);
}

/* A file reference through keymgr: the bytes and the KCV of the file's key; versions as
 * the apply engine has them (version 2 of "k" is "k.v2"). */
static void test_file_key_through_keymgr(void **state)
{
	struct fctl_key *k;
	char err[512], kcv[7];

	(void)state;
	write_key("k", "000102030405060708090a0b0c0d0e0f\n");
	write_key("k.v2", "202122232425262728292a2b2c2d2e2f202122232425262728292a2b2c2d2e2f\n");
	assert_int_equal(fetch("file", "k", 0, 16, &k, err, sizeof(err)), 0);
	assert_non_null(k);
	assert_int_equal(k->len, 16);
	assert_int_equal(k->bytes[0], 0);
	assert_int_equal(k->bytes[15], 15);
	fctl_key_kcv_hex(k, kcv);
	assert_string_equal(kcv, "c6a13b"); /* as tests/unit/test_keys.c computes it */
	fctl_key_free(k);
	assert_int_equal(fetch("file", "k", 2, 32, &k, err, sizeof(err)), 0);
	assert_int_equal(k->len, 32);
	assert_int_equal(k->bytes[0], 0x20);
	assert_int_equal(k->bytes[31], 0x2f);
	fctl_key_free(k);
}

/* Errors come back as keymgr's own text, with no key */
static void test_errors_come_back(void **state)
{
	struct fctl_key *k;
	char err[512];

	(void)state;
	write_key("short", "000102030405060708090a0b0c0d0e0f\n");
	/* the file holds a 128-bit key, the cipher wants 256 */
	assert_int_equal(fetch("file", "short", 0, 32, &k, err, sizeof(err)), -EINVAL);
	assert_null(k);
	assert_non_null(strstr(err, "not a valid 32-byte hex key"));
	assert_null(strstr(err, "0102030405"));
	/* keymgr keeps a file key id below the base it was given, as the CLI does */
	assert_int_equal(fetch("file", "../short", 0, 16, &k, err, sizeof(err)), -EINVAL);
	assert_null(k);
	assert_non_null(strstr(err, "has a '..' component"));
	/* no such file */
	assert_int_equal(fetch("file", "nope", 0, 16, &k, err, sizeof(err)), -ENOENT);
	assert_null(k);
	assert_non_null(strstr(err, "No such file"));
	/* a KMS reference without a version: keymgr has the backend, and refuses it before
	 * any KMS is contacted */
	assert_int_equal(fetch("kmip", "name", 0, 16, &k, err, sizeof(err)), -ENOKEY);
	assert_null(k);
	assert_non_null(strstr(err, "names no version"));
	/* a backend nobody has */
	assert_int_equal(fetch("vault", "x", 1, 16, &k, err, sizeof(err)), -EOPNOTSUPP);
	assert_null(k);
	assert_non_null(strstr(err, "not available"));
	/* a keymgr that is not there */
	{
		struct fctl_keyref ref = { .backend = (char *)(uintptr_t) "kmip",
					   .id = (char *)(uintptr_t) "name", .version = 1 };

		assert_true(fctl_keymgr_fetch("/nonexistent/fabricctl-keymgr", &ref, NULL, 16, &k,
					      err, sizeof(err)) < 0);
		assert_null(k);
		assert_non_null(strstr(err, "cannot run"));
	}
}

/* The key source: file keys are read here, KMS references need keymgr */
static void test_key_source(void **state)
{
	struct fctl_key_source none = { 0 }, src = { .keymgr_path = keymgr };
	struct fctl_keyref file = { .backend = (char *)(uintptr_t) "file",
				    .id = (char *)(uintptr_t) "k" };
	struct fctl_keyref kms = { .backend = (char *)(uintptr_t) "pkcs11",
				   .id = (char *)(uintptr_t) "token=t;object=o" };
	struct fctl_key *k = NULL;
	char err[512];

	(void)state;
	write_key("k", "000102030405060708090a0b0c0d0e0f\n");
	assert_int_equal(fctl_key_source_fetch(&none, &file, dir, 16, &k, err, sizeof(err)), 0);
	assert_int_equal(k->bytes[15], 15);
	fctl_key_free(k);
	k = NULL;
	assert_int_equal(fctl_key_source_fetch(&none, &kms, dir, 16, &k, err, sizeof(err)),
			 -EOPNOTSUPP);
	assert_non_null(strstr(err, "fabricctl-keymgr, which was not found"));
	/* with keymgr: its answer, here the version check */
	assert_int_equal(fctl_key_source_fetch(&src, &kms, dir, 16, &k, err, sizeof(err)),
			 -ENOKEY);
	assert_null(k);
	assert_non_null(strstr(err, "names no version"));
}

/* keymgr serves a socketpair only: not a terminal, a file or a stream socket */
static void test_keymgr_refuses_other_fds(void **state)
{
	char cmd[600];

	(void)state;
	snprintf(cmd, sizeof(cmd), "'%s' fetch-sak --fd 0 </dev/null 2>/dev/null", keymgr);
	assert_int_equal(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof(cmd), "'%s' fetch-sak 2>/dev/null", keymgr);
	assert_int_equal(WEXITSTATUS(system(cmd)), 2);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file_key_through_keymgr),
		cmocka_unit_test(test_errors_come_back),
		cmocka_unit_test(test_key_source),
		cmocka_unit_test(test_keymgr_refuses_other_fds),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
