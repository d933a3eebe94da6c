// SPDX-License-Identifier: MIT
/*
 * Unit tests of the packet-number evidence (libfctl/evidence/evidence_pn.c, docs/audit.md
 * "Packet-number evidence"): the ledger's lines read strictly (fctl/sa_ledger.h), the PN
 * ranges derived from them per key, SCI and direction (fctl_evi_pn_ranges), and the
 * ledger taken only when every sa-ledger anchor of the window is a prefix of it
 * (fctl_evi_pn_ledger). verify.sh derives the same ranges with jq: the attack test
 * tests/security/evidence_pn.sh checks that both agree on a host's life.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "evidence_int.h"
#include "fctl/sa_ledger.h"

#define H1 "11111111111111111111111111111111"
#define K1 "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"
#define H2 "22222222222222222222222222222222"
#define K9 "f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9"
#define SCI "0x525400fa01000001"

/* the ranges of ledger text (its head added) into a NUL-terminated buffer; r the result */
static char *ranges(const char *events, int *r)
{
	struct fctl_buf in = { 0 }, out = { 0 };
	char err[200] = "";

	fctl_buf_puts(&in, FCTL_SA_LEDGER_HEAD);
	fctl_buf_puts(&in, events);
	*r = fctl_evi_pn_ranges(in.data, in.len, &out, err, sizeof(err));
	fctl_buf_release(&in);
	if (*r < 0) {
		fctl_buf_release(&out);
		return strdup(err);
	}
	fctl_buf_putc(&out, '\0');
	return fctl_buf_steal(&out);
}

static void test_life(void **state)
{
	int r;
	char *j = ranges("live tx " H1 " " K1 " " SCI " 1\n"
			 "retired tx " H1 " " K1 " " SCI " 38\n"
			 "live tx " H2 " " K1 " " SCI " 1\n" /* another key, same KEYID */
			 "live tx " H1 " " K1 " " SCI " 38\n",
			 &r);

	(void)state;
	assert_int_equal(r, 0);
	assert_non_null(strstr(j, "{\"key\":\"" H1 "\",\"keyid\":\"" K1 "\",\"sci\":\"" SCI
				  "\",\"dir\":\"tx\",\"first\":\"1\",\"next\":\"38\",\"from_line\":2,"
				  "\"to_line\":3}"));
	assert_non_null(strstr(j, "\"key\":\"" H2 "\",\"keyid\":\"" K1 "\",\"sci\":\"" SCI
				  "\",\"dir\":\"tx\",\"first\":\"1\",\"next\":null,\"from_line\":4,"
				  "\"to_line\":null}"));
	assert_non_null(strstr(j, "\"first\":\"38\",\"next\":null,\"from_line\":5"));
	free(j);
}

/* A retirement with no open range: past what the key reached, a range whose start is not
 * known; at or below it, nothing used since (an SA added inactive, never recorded, then
 * removed); the first event of a key known by KEYID only. */
static void test_retired_without_start(void **state)
{
	int r;
	char *j = ranges("retired tx - " K9 " " SCI " 500\n"
			 "live tx " H1 " " K1 " " SCI " 1\n"
			 "retired tx " H1 " " K1 " " SCI " 38\n"
			 "retired tx " H1 " " K1 " " SCI " 38\n"
			 "retired tx " H1 " " K1 " " SCI " 40\n",
			 &r);

	(void)state;
	assert_int_equal(r, 0);
	assert_non_null(strstr(j, "\"key\":\"-\",\"keyid\":\"" K9 "\",\"sci\":\"" SCI
				  "\",\"dir\":\"tx\",\"first\":null,\"next\":\"500\",\"from_line\":null,"
				  "\"to_line\":2}"));
	assert_non_null(strstr(j, "\"first\":\"1\",\"next\":\"38\",\"from_line\":3,\"to_line\":4}"));
	assert_null(strstr(j, "\"to_line\":5"));
	assert_non_null(strstr(j, "\"first\":null,\"next\":\"40\",\"from_line\":null,\"to_line\":6}"));
	free(j);
}

/* XPN's 64-bit PNs stay exact: decimal strings, not JSON numbers */
static void test_xpn_exact(void **state)
{
	int r;
	char *j = ranges("live rx " H1 " " K1 " " SCI " 9007199254740993\n"
			 "retired rx " H1 " " K1 " " SCI " 18446744073709551615\n",
			 &r);

	(void)state;
	assert_int_equal(r, 0);
	assert_non_null(strstr(j, "\"dir\":\"rx\",\"first\":\"9007199254740993\","
				  "\"next\":\"18446744073709551615\""));
	free(j);
}

static void test_not_a_ledger(void **state)
{
	static const char *const bad[] = {
		"live tx " H1 " " K1 " " SCI " 01\n",             /* a leading zero */
		"live tx " H1 " " K1 " " SCI " 18446744073709551616\n", /* past 2^64 - 1 */
		"live tx " H1 " " K1 " 0x525400FA01000001 1\n",   /* upper case */
		"live tx " H1 " " K1 " " SCI "  1\n",             /* two spaces */
		"live tx " H1 " " K1 " " SCI " 1 x\n",            /* a seventh word */
		"gone tx " H1 " " K1 " " SCI " 1\n",
		"live tx " H1 " " K1 " " SCI " 1",                /* no newline: cut short */
	};
	struct fctl_buf out = { 0 };
	char err[200];
	int r;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *j = ranges(bad[i], &r);

		assert_int_equal(r, -EBADMSG);
		free(j);
	}
	free(ranges("live tx " H1 " " K1 " " SCI " 1\nlive\n", &r));
	assert_int_equal(r, -EBADMSG);
	assert_int_equal(fctl_evi_pn_ranges("not a ledger\n", 13, &out, err, sizeof(err)), -EBADMSG);
	fctl_buf_release(&out);
}

static void test_line_round_trip(void **state)
{
	char line[] = "retired rx - " K9 " " SCI " 77";
	struct fctl_sa_ledger_event ev;
	struct fctl_buf b = { 0 };

	(void)state;
	assert_int_equal(fctl_sa_ledger_parse(line, &ev), 0);
	assert_true(ev.retired && !ev.tx && !ev.has_hash);
	assert_true(ev.sci == 0x525400fa01000001ULL && ev.pn == 77);
	assert_int_equal(fctl_sa_ledger_format(&b, &ev), 0);
	fctl_buf_putc(&b, '\0');
	assert_string_equal(b.data, "retired rx - " K9 " " SCI " 77\n");
	fctl_buf_release(&b);
}

static void anchor_of(const char *text, size_t n, char *detail)
{
	struct fctl_sa_ledger_anchor a = { .size = n };
	unsigned int hl = 32;

	assert_int_equal(EVP_Digest(text, n, a.sha256, &hl, EVP_sha256(), NULL), 1);
	fctl_sa_ledger_anchor_format(&a, detail);
}

/* Every anchor a prefix of the file; the ledger cut to the longest; an edit refused. */
static void test_ledger_anchors(void **state)
{
	const char *text = FCTL_SA_LEDGER_HEAD "live tx " H1 " " K1 " " SCI " 1\n"
			   "retired tx " H1 " " K1 " " SCI " 38\n";
	size_t first = strlen(FCTL_SA_LEDGER_HEAD) + strlen("live tx " H1 " " K1 " " SCI " 1\n");
	char path[] = "/tmp/test_evidence_pn.XXXXXX", d1[96], d2[96], err[400];
	struct fctl_evi_pn_anchor a[2] = { { 12, d2 }, { 7, d1 } };
	struct fctl_sa_ledger_anchor back;
	struct fctl_buf led = { 0 };
	size_t top = 9;
	int r, fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(write(fd, "live rx", 7), 7); /* later, not anchored: not shown */
	close(fd);
	anchor_of(text, first, d1);
	anchor_of(text, strlen(text), d2);
	assert_int_equal(fctl_sa_ledger_anchor_parse(d2, &back), 0);
	assert_int_equal(back.size, strlen(text));
	r = fctl_evi_pn_ledger(a, 2, path, &led, &top, err, sizeof(err));
	assert_int_equal(r, 0);
	assert_int_equal(top, 0);
	assert_int_equal(led.len, strlen(text));
	assert_memory_equal(led.data, text, led.len);
	fctl_buf_release(&led);
	/* an anchor of other bytes: the file changed after it was recorded */
	anchor_of("fabricctl-sa-ledger 1\nlive rx", 29, d1);
	assert_int_equal(fctl_evi_pn_ledger(a, 2, path, &led, &top, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "audit record 7"));
	/* not an anchor at all */
	a[1].detail = "bytes=01 sha256=00";
	assert_int_equal(fctl_evi_pn_ledger(a, 2, path, &led, &top, err, sizeof(err)), -EBADMSG);
	unlink(path);
	a[1].detail = d2;
	assert_int_equal(fctl_evi_pn_ledger(a, 2, path, &led, &top, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "--ledger FILE"));
	assert_int_equal(fctl_evi_pn_ledger(a, 2, NULL, &led, &top, err, sizeof(err)), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_life),
		cmocka_unit_test(test_retired_without_start),
		cmocka_unit_test(test_xpn_exact),
		cmocka_unit_test(test_not_a_ledger),
		cmocka_unit_test(test_line_round_trip),
		cmocka_unit_test(test_ledger_anchors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
