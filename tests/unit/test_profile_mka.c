// SPDX-License-Identifier: MIT
/*
 * Unit tests of the MKA policy form (docs/mka.md): parsing into struct fctl_mka and every
 * validation rule, each asserting the exact finding (code, line, column) and count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/profile.h"

struct want {
	const char *code;
	uint32_t line, col;
};

struct mcase {
	const char *name;
	const char *yaml;
	size_t n_errors;
	struct want w[3];
};

/* lines 1-8: header, "macsec:", "  p:", replay protection (a must_secure policy) */
#define HDR                                                                                        \
	"schema: 1\nprofile:\n  name: t\n  version: 1\nmacsec:\n  p:\n"                           \
	"    replay_protect: true\n    replay_window: 0\n"
#define CAK "      cak: { backend: file, id: nonexistent/cak, version: 1 }\n"
/* body lines from 9; the mka block last, its cak and ckn on the two lines after 'mka:' */
#define MKA(pre, ckn, post) HDR pre "    mka:\n" CAK "      ckn: " ckn "\n" post "hosts: []\n"

static const struct mcase cases[] = {
	{ "a valid mka policy", MKA("", "\"00112233\"", "      priority: 0\n"), 0, { { NULL } } },
	{ "ckn of 32 bytes is fine", MKA("", "\"" "00112233445566778899aabbccddeeff"
					 "00112233445566778899aabbccddeeff" "\"", ""), 0, { { NULL } } },
	{ "ckn with an odd number of digits", MKA("", "\"001\"", ""), 1,
	  { { "ckn-length", 11, 12 } } },
	{ "ckn of 33 bytes", MKA("", "\"" "00112233445566778899aabbccddeeff"
				 "00112233445566778899aabbccddeeff" "00" "\"", ""), 1,
	  { { "ckn-length", 11, 12 } } },
	{ "ckn that is not hex", MKA("", "\"00zz\"", ""), 1, { { "ckn-format", 11, 12 } } },
	{ "cipher other than gcm-aes-128", MKA("    cipher: gcm-aes-256\n", "\"0011\"", ""), 1,
	  { { "mka-cipher", 9, 13 } } },
	{ "xpn cipher", MKA("    cipher: gcm-aes-xpn-128\n", "\"0011\"", ""), 1,
	  { { "mka-cipher", 9, 13 } } },
	{ "icv_len other than 16", MKA("    icv_len: 8\n", "\"0011\"", ""), 1,
	  { { "mka-unsupported", 9, 14 } } },
	{ "pn_rekey_threshold: MKA rekeys itself",
	  MKA("    pn_rekey_threshold: 1000\n", "\"0011\"", ""), 1,
	  { { "mka-unsupported", 9, 25 } } },
	{ "both key and mka",
	  MKA("    key: { backend: file, id: nonexistent/k }\n", "\"0011\"", ""), 1,
	  { { "key-and-mka", 11, 7 } } },
	{ "neither key nor mka", HDR "hosts: []\n", 1, { { "missing-key", 7, 5 } } },
	{ "mka without ckn", HDR "    mka:\n" CAK "hosts: []\n", 1, { { "missing-key", 10, 7 } } },
	{ "priority above 255", MKA("", "\"0011\"", "      priority: 256\n"), 1,
	  { { "out-of-range", 12, 17 } } },
	{ "port 65535: wpa_supplicant takes 1..65534", MKA("    port: 65535\n", "\"0011\"", ""), 1,
	  { { "out-of-range", 11, 7 } } },
	{ "port 65534 is fine", MKA("    port: 65534\n", "\"0011\"", ""), 0, { { NULL } } },
	{ "unknown key in mka", MKA("", "\"0011\"", "      cipher: x\n"), 1,
	  { { "unknown-key", 12, 7 } } },
	{ "a KMS cak names its version",
	  HDR "    mka:\n      cak: { backend: kmip, id: cak1 }\n      ckn: \"0011\"\n"
	      "hosts: []\n", 1, { { "key-version", 10, 12 } } },
	{ "fallback with its own ckn is fine",
	  MKA("", "\"0011\"", "      fallback:\n  " CAK "        ckn: \"0012\"\n"), 0, { { NULL } } },
	{ "fallback with the primary's ckn (any case)",
	  MKA("", "\"00aa\"", "      fallback:\n  " CAK "        ckn: \"00AA\"\n"), 1,
	  { { "ckn-duplicate", 14, 14 } } },
	{ "fallback ckn checked too",
	  MKA("", "\"00aa\"", "      fallback:\n  " CAK "        ckn: \"0\"\n"), 1,
	  { { "ckn-length", 14, 14 } } },
	{ "integrity only is still weak under must_secure",
	  MKA("    encrypt: false\n", "\"0011\"", ""), 1, { { "integrity-only", 9, 14 } } },
};

static bool has(const struct fctl_diags *d, const struct want *w)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->v[i].severity == FCTL_SEV_ERROR && strcmp(d->v[i].code, w->code) == 0 &&
		    d->v[i].line == w->line && d->v[i].col == w->col)
			return true;
	return false;
}

static bool case_ok(const char *file, const struct mcase *c)
{
	struct fctl_profile *p = NULL;
	struct fctl_diags d = { 0 };
	bool ok = true;

	if (fctl_profile_parse(file, (const unsigned char *)c->yaml, strlen(c->yaml), &d, &p) == 0)
		fctl_profile_validate(p, &d);
	if (d.n_errors != c->n_errors) {
		print_error("case '%s': %zu errors, expected %zu\n", c->name, d.n_errors,
			    c->n_errors);
		ok = false;
	}
	for (size_t i = 0; i < 3 && c->w[i].code; i++)
		if (!has(&d, &c->w[i])) {
			print_error("case '%s': no [%s] at %u:%u\n", c->name, c->w[i].code,
				    c->w[i].line, c->w[i].col);
			ok = false;
		}
	if (!ok) {
		struct fctl_buf b = { 0 };

		fctl_diags_to_text(&d, &b, false);
		print_message("%s", b.data ? b.data : "(no findings)\n");
		fctl_buf_release(&b);
	}
	fctl_diags_release(&d);
	fctl_profile_free(p);
	return ok;
}

static void test_rules(void **state)
{
	size_t bad = 0;

	(void)state;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(cases); i++)
		bad += !case_ok("m.yaml", &cases[i]);
	if (bad)
		fail_msg("%zu of %zu cases failed", bad, FCTL_ARRAY_SIZE(cases));
}

/* The model: what the parser keeps of an mka block. */
static void test_model(void **state)
{
	static const char y[] = MKA("", "\"00112233\"", "      priority: 7\n      fallback:\n  " CAK
				    "        ckn: \"44\"\n");
	static const char y2[] = MKA("", "\"00\"", "");
	struct fctl_profile *p = NULL;
	struct fctl_diags d = { 0 };

	(void)state;
	assert_int_equal(fctl_profile_parse("m.yaml", (const unsigned char *)y, strlen(y), &d, &p), 0);
	assert_int_equal(p->n_policies, 1);
	assert_true(p->policies[0].has_mka);
	assert_false(p->policies[0].has_key);
	assert_string_equal(p->policies[0].mka.primary.ckn, "00112233");
	assert_string_equal(p->policies[0].mka.primary.cak.backend, "file");
	assert_int_equal(p->policies[0].mka.primary.cak.version, 1);
	assert_int_equal(p->policies[0].mka.priority, 7);
	assert_true(p->policies[0].mka.has_fallback);
	assert_string_equal(p->policies[0].mka.fallback.ckn, "44");
	fctl_diags_release(&d);
	fctl_profile_free(p);
	assert_int_equal(fctl_profile_parse("m.yaml", (const unsigned char *)y2, strlen(y2), &d, &p), 0);
	assert_int_equal(p->policies[0].mka.priority, FCTL_MKA_PRIORITY_DEFAULT);
	fctl_diags_release(&d);
	fctl_profile_free(p);
}

/* A CAK file: 16 or 32 bytes of hex, owner-only; nothing else. */
static void cak_case(const char *dir, const char *key, mode_t mode, size_t n_errors,
		     const char *code)
{
	char kpath[128], ppath[128], yaml[512];
	struct fctl_profile *p = NULL;
	struct fctl_diags d = { 0 };
	FILE *f;

	snprintf(kpath, sizeof(kpath), "%s/cak.key", dir);
	snprintf(ppath, sizeof(ppath), "%s/p.yaml", dir);
	unlink(kpath);
	f = fopen(kpath, "w");
	assert_non_null(f);
	fputs(key, f);
	fclose(f);
	assert_int_equal(chmod(kpath, mode), 0);
	snprintf(yaml, sizeof(yaml), HDR "    mka:\n      cak: { backend: file, id: cak.key }\n"
		 "      ckn: \"0011\"\nhosts: []\n");
	f = fopen(ppath, "w");
	assert_non_null(f);
	fputs(yaml, f);
	fclose(f);
	assert_int_equal(fctl_profile_load(ppath, &d, &p), 0);
	fctl_profile_validate(p, &d);
	if (d.n_errors != n_errors || (code && !(d.n && strcmp(d.v[0].code, code) == 0))) {
		struct fctl_buf b = { 0 };

		fctl_diags_to_text(&d, &b, false);
		fail_msg("cak file case (%s): %zu errors, expected %zu\n%s", code ? code : "ok",
			 d.n_errors, n_errors, b.data ? b.data : "");
	}
	/* key bytes never appear in a finding */
	for (size_t i = 0; i < d.n; i++)
		assert_null(strstr(d.v[i].msg, "00112233"));
	fctl_diags_release(&d);
	fctl_profile_free(p);
	unlink(kpath);
	unlink(ppath);
}

static void test_cak_file(void **state)
{
	char dir[] = "/tmp/fctl-cak-XXXXXX";

	(void)state;
	assert_non_null(mkdtemp(dir));
	cak_case(dir, "00112233445566778899aabbccddeeff\n", 0600, 0, NULL);
	cak_case(dir, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 0400,
		 0, NULL);
	cak_case(dir, "00112233445566778899aabbccddeeff0011223344556677", 0600, 1, "key-length");
	cak_case(dir, "00112233445566778899aabbccddeezz", 0600, 1, "key-format");
	cak_case(dir, "00112233445566778899aabbccddeeff", 0644, 1, "key-permissions");
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_model),
		cmocka_unit_test(test_cak_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
