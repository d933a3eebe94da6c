// SPDX-License-Identifier: MIT
/* The file key backend: permissions, lengths, format, check values. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/key_backend.h"
#include "fctl/keys.h"

static char dir[] = "/tmp/fctl-test-keys-XXXXXX";

static void write_key(const char *name, const char *content, mode_t mode)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static int fetch(const char *id, size_t len, struct fctl_key **k, char *err, size_t errlen)
{
	char idbuf[64];
	struct fctl_keyref ref = { .backend = (char *)(uintptr_t) "file", .id = idbuf };

	snprintf(idbuf, sizeof(idbuf), "%s", id);
	return fctl_key_fetch(&ref, dir, len, k, err, errlen);
}

struct case_ {
	const char *name;
	const char *content;
	mode_t mode;
	size_t len;
	int want;
	const char *err_contains;
};

static const struct case_ cases[] = {
	{ "ok128", "000102030405060708090a0b0c0d0e0f\n", 0600, 16, 0, NULL },
	{ "ok256", "000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f", 0400, 32, 0,
	  NULL },
	{ "group", "000102030405060708090a0b0c0d0e0f\n", 0640, 16, -EPERM, "expected 0600" },
	{ "world", "000102030405060708090a0b0c0d0e0f\n", 0604, 16, -EPERM, "mode 0604" },
	{ "short", "0001020304050607\n", 0600, 16, -EINVAL, "not a valid 16-byte hex key" },
	{ "long", "000102030405060708090a0b0c0d0e0f00\n", 0600, 16, -EINVAL,
	  "not a valid 16-byte hex key" },
	{ "nonhex", "zz0102030405060708090a0b0c0d0e0f\n", 0600, 16, -EINVAL,
	  "not a valid 16-byte hex key" },
	{ "128for256", "000102030405060708090a0b0c0d0e0f\n", 0600, 32, -EINVAL,
	  "not a valid 32-byte hex key" },
};

static void test_cases(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct case_ *c = &cases[i];
		struct fctl_key *k = NULL;
		char err[512] = "";
		int r;

		write_key(c->name, c->content, c->mode);
		r = fetch(c->name, c->len, &k, err, sizeof(err));
		if (r != c->want)
			fail_msg("case %s: got %d (%s), want %d", c->name, r, err, c->want);
		if (c->want == 0) {
			assert_non_null(k);
			assert_int_equal(k->len, c->len);
			assert_int_equal(k->bytes[1], 1);
			assert_int_equal(k->bytes[15], 15);
		} else {
			assert_null(k);
			if (!strstr(err, c->err_contains))
				fail_msg("case %s: error '%s' lacks '%s'", c->name, err, c->err_contains);
			/* never the key bytes in an error, nor what the file holds: how many
			 * digits (a size oracle) or where a non-hex character is */
			assert_null(strstr(err, "0102030405"));
			assert_null(strstr(err, "holds"));
			assert_null(strstr(err, "offset"));
		}
		fctl_key_free(k);
	}
}

/* A KMS stand-in: the version check must refuse before it is asked. */
static int stub_fetch(const struct fctl_keyref *ref, const char *base_dir, size_t want_len,
		      struct fctl_key **out, struct fctl_key_info *info, char *err, size_t errlen)
{
	fail_msg("the backend was asked for a reference without a version");
	return -EIO;
}

static int stub_info(const struct fctl_keyref *ref, const char *base_dir,
		     struct fctl_key_info *out, char *err, size_t errlen)
{
	fail_msg("the backend was asked for a reference without a version");
	return -EIO;
}

static const struct fctl_key_backend stub = {
	.name = "pkcs11", .needs_version = true, .fetch = stub_fetch, .info = stub_info,
};
static const struct fctl_key_backend stub_file = {
	.name = "file", .fetch = stub_fetch, .info = stub_info,
};

static void test_missing_and_backend(void **state)
{
	struct fctl_keyref ref = { .backend = (char *)(uintptr_t) "vault",
				   .id = (char *)(uintptr_t) "x" };
	struct fctl_keyref nover = { .backend = (char *)(uintptr_t) "pkcs11",
				     .id = (char *)(uintptr_t) "token=t;object=o" };
	struct fctl_key *k = NULL;
	char err[256];

	(void)state;
	assert_int_equal(fetch("nope", 16, &k, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "No such file"));
	/* a backend this build does not have */
	assert_int_equal(fctl_key_fetch(&ref, dir, 16, &k, err, sizeof(err)), -EOPNOTSUPP);
	assert_null(k);
	/* the key module alone reaches no KMS: its backends are not registered here */
	assert_int_equal(fctl_key_fetch(&nover, dir, 16, &k, err, sizeof(err)), -EOPNOTSUPP);
	assert_non_null(strstr(err, "not available"));
	assert_null(fctl_key_backend_find("pkcs11"));
	assert_non_null(fctl_key_backend_find("file"));
	/* registered: once is enough, a second table of a name is refused */
	assert_int_equal(fctl_key_backend_register(&stub), 0);
	assert_int_equal(fctl_key_backend_register(&stub), 0);
	assert_int_equal(fctl_key_backend_register(&stub_file), -EEXIST);
	assert_ptr_equal(fctl_key_backend_find("pkcs11"), &stub);
	/* a KMS reference without a version fails closed before any KMS is contacted */
	assert_int_equal(fctl_key_fetch(&nover, dir, 16, &k, err, sizeof(err)), -ENOKEY);
	assert_non_null(strstr(err, "names no version"));
	assert_null(k);
	/* the file backend creates no keys and keeps no states */
	ref.backend = (char *)(uintptr_t) "file";
	assert_int_equal(fctl_key_create(&ref, 16, NULL, false, NULL, err, sizeof(err)),
			 -EOPNOTSUPP);
	assert_non_null(strstr(err, "does not create keys"));
	assert_int_equal(fctl_key_transition(&ref, FCTL_KEY_DO_ACTIVATE, err, sizeof(err)),
			 -EOPNOTSUPP);
}

/* Key check value = AES-ECB(key, 0^128)[0..2]: FIPS-197 appendix C.1 key gives
 * ciphertext 69c4e0d8... for plaintext 00112233...; for the zero block we check against
 * a value computed independently with `openssl enc -aes-128-ecb` (c6a13b). */
static void test_kcv(void **state)
{
	struct fctl_key *k = NULL;
	char err[256], kcv[7];

	(void)state;
	write_key("kcv", "000102030405060708090a0b0c0d0e0f", 0600);
	assert_int_equal(fetch("kcv", 16, &k, err, sizeof(err)), 0);
	fctl_key_kcv_hex(k, kcv);
	assert_string_equal(kcv, "c6a13b");
	fctl_key_free(k);
}

/* Key ids stay below the base: absolute ids and '..' are refused before any open, even
 * when they name a valid, owner-only key file. */
static void test_id_below_base(void **state)
{
	char base[96], abs[128], err[512];
	struct fctl_key *k = NULL;
	static const char *const bad[] = { "", "..", "../outside", "sub/../../outside", "a/..",
					   "./../outside" };

	(void)state;
	write_key("outside", "000102030405060708090a0b0c0d0e0f\n", 0600);
	snprintf(base, sizeof(base), "%s/base", dir);
	assert_int_equal(mkdir(base, 0700), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct fctl_keyref ref = { .backend = (char *)(uintptr_t) "file",
					   .id = (char *)(uintptr_t)bad[i] };

		err[0] = '\0';
		if (fctl_key_fetch(&ref, base, 16, &k, err, sizeof(err)) != -EINVAL)
			fail_msg("id '%s' was not refused (%s)", bad[i], err);
		assert_null(k);
		assert_non_null(strstr(err, "relative path below"));
	}
	snprintf(abs, sizeof(abs), "%s/outside", dir);
	{
		struct fctl_keyref ref = { .backend = (char *)(uintptr_t) "file", .id = abs };

		assert_int_equal(fctl_key_fetch(&ref, base, 16, &k, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "is an absolute path"));
		assert_null(k);
		/* with no base the rule is the same */
		assert_int_equal(fctl_key_fetch(&ref, NULL, 16, &k, err, sizeof(err)), -EINVAL);
	}
	/* names that only look like '..' are ordinary files below the base */
	{
		struct fctl_keyref ref = { .backend = (char *)(uintptr_t) "file",
					   .id = (char *)(uintptr_t) "..k" };

		assert_int_equal(fctl_key_fetch(&ref, dir, 16, &k, err, sizeof(err)), -ENOENT);
	}
	rmdir(base);
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
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_missing_and_backend),
		cmocka_unit_test(test_kcv),
		cmocka_unit_test(test_id_below_base),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
