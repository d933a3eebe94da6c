// SPDX-License-Identifier: MIT
/* report.html from a small synthetic slice: its sections, figures, and escaping. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evidence_html_int.h"

#define HEAD(seq, t) "{\"seq\":" #seq ",\"prev\":\"" \
	"0000000000000000000000000000000000000000000000000000000000000000\",\"time\":\"" t \
	"\",\"actor\":{\"user\":\"root\",\"uid\":0},"
#define END1 "h1.loss_packets=0 h1.retransmissions=0 h1.macsec=ms100 h1.encrypt=on " \
	"h1.tx_sa_active=yes h1.out_pkts_encrypted_delta=2004 h1.in_pkts_not_valid_delta=0 " \
	"h1.in_pkts_invalid_delta=0 h1.in_pkts_no_sci_delta=0 h1.in_pkts_unknown_sci_delta=0 " \
	"h1.in_pkts_late_delta=0"

/* a signature's digest as the writer records it: 64 hex digits */
#define D64 "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"

static char slice[] =
	HEAD(1, "2026-05-01T12:00:00.000000Z") "\"action\":\"apply\",\"change\":\"CHG-1\","
	"\"host\":\"h1\",\"link\":\"h1-h2\",\"result\":\"applied\",\"key_ids\":"
	"[\"0011223344556677\"],\"kcv\":[\"a1b2c3\"],\"approvals\":[\"alice@example.org "
	"SHA256:abc sha256:" D64 "\",\"bob<i>@example.org SHA256:def sha256:" D64 "\"]}\n"
	HEAD(2, "2026-05-01T12:00:01.000000Z") "\"action\":\"key-rotation\",\"change\":\"CHG-1\","
	"\"link\":\"h1-h2\",\"result\":\"confirmed\",\"detail\":\"new SAs on an 1\",\"kcv\":"
	"[\"d4e5f6\"]}\n"
	HEAD(3, "2026-05-01T12:00:03.500000Z") "\"action\":\"key-rotation\",\"change\":\"CHG-1\","
	"\"link\":\"h1-h2\",\"result\":\"committed\",\"detail\":\"an 0 -> 1, key version 2 -> 3; "
	"overlap rx ok old an 7, new an 90\",\"kcv\":[\"d4e5f6\"]}\n"
	HEAD(4, "2026-05-01T12:00:04.000000Z") "\"action\":\"key-state\",\"change\":\"CHG-1\","
	"\"link\":\"h1-h2\",\"result\":\"recorded\",\"detail\":\"file:k version 3 active on "
	"h1-h2\",\"kcv\":[\"d4e5f6\"],\"key_state\":\"active\"}\n"
	HEAD(5, "2026-05-01T12:00:05.000000Z") "\"action\":\"probe\",\"change\":\"CHG-1\","
	"\"host\":\"h1\",\"link\":\"h1-h2\",\"result\":\"pass\",\"detail\":\"send_lat size=2 "
	"link=h1-h2: iterations=100 latency_p50_us=4.000 latency_p99_us=9.500 latency_p999_us="
	"12.000 latency_max_us=30.000 loss_packets=0 retransmissions=0 " END1 " macsec=ok\"}\n"
	HEAD(6, "2026-05-01T12:00:06.000000Z") "\"action\":\"probe\",\"change\":\"CHG-1\","
	"\"host\":\"h1\",\"result\":\"fail\",\"error\":\"x<script>alert(1)</script>\","
	"\"detail\":\"evil<script>alert(\\\"q\\\")</script>: latency_p99_us=null macsec=ok\"}\n";

static char checkpoint[] =
	"h1/var/lib/fabricctl/audit/audit.log\n6\nrr0QpFUOBGfgj/mtDQ5kBRVZ5beYrYshwrHZCxI8MFI=\n\n"
	"\xe2\x80\x94 h1/var/lib/fabricctl/audit/audit.log AAECAwQFBgcICQoLDA0ODxAREhM=\n";

/* a manual record (audit append) naming a key state, and a failed apply whose error is
 * followed by a key id and no detail */
static char slice_manual[] =
	HEAD(1, "2026-05-01T12:00:00.000000Z") "\"manual\":true,\"action\":\"kms-rotate\","
	"\"host\":\"h1\",\"result\":\"applied\",\"detail\":\"file:k version 4 rotated by "
	"hand\",\"kcv\":[\"d4e5f6\"],\"key_state\":\"active\"}\n"
	HEAD(2, "2026-05-01T12:00:00.000100Z") "\"action\":\"apply\",\"host\":\"h1\","
	"\"result\":\"failed\",\"error\":\"No such device\",\"key_ids\":[\"8a09aa3011223344\"]}\n";

static char *render_slice(char *data, size_t len, struct fctl_buf *copy)
{
	static char cp_name[] = "audit/checkpoint.txt", slice_name[] = "audit/slice.jsonl";
	struct fctl_evidence_file files[2] = {
		{ cp_name, checkpoint, sizeof(checkpoint) - 1 },
		{ slice_name, data, len },
	};
	static const char ids[2][65] = { "aa", "bb" };
	struct fctl_evidence_opts o = { .change_id = "CHG-1", .operator_name = "auditor<b>",
					.tool_version = "0.1", .html = copy };
	struct fctl_evidence_html_in in = { .o = &o, .files = files, .n_files = 2,
					    .signer_ids = ids, .n_signers = 2, .n_statements = 4,
					    .log_records = 6 };
	struct fctl_buf b = { 0 };

	assert_int_equal(fctl_evidence_html(&in, &b), 0);
	assert_non_null(b.data);
	return fctl_buf_steal(&b);
}

static char *render(struct fctl_buf *copy)
{
	return render_slice(slice, sizeof(slice) - 1, copy);
}

static void test_sections(void **state)
{
	static const char *const want[] = {
		"<!DOCTYPE html>", "id=\"timeline\"", "Change timeline", "id=\"macsec\"",
		"MACsec counters across each change window", "id=\"latency\"",
		"Probe latency, loss and retransmissions", "id=\"keys\"", "Key lifecycle",
		"id=\"verification\"", "Verification", "id=\"records\"", "</html>",
		"<svg class=\"plot\" viewBox", "aria-label=\"change timeline\"",
		"aria-label=\"probe latency percentiles\"", "aria-label=\"MACsec counters\"",
		"Encryption stayed on", "moving +2004", "flat +0", "not recorded",
		"overlap 2.500 s", "2.500 s (#2 confirmed", "old key 7, new key 90", "d4e5f6",
		"chip st-active", "2 → 3", "bash verify.sh --tar BUNDLE.tar --signer-pub SIGNER1.pub "
		"--signer-pub SIGNER2.pub --audit-pub HOST-audit.pub", "note key id <code>00010203",
		"h1/var/lib/fabricctl/audit/audit.log", "2 signers", "6 records",
		"Loss: 0 packets in 1 of 2",
		/* who approved the version the apply record names (its approvals' principals) */
		"approved by alice@example.org, bob&lt;i&gt;@example.org",
		/* the root in hex, as audit verify prints it (the note holds it in base64) */
		"root <code>aebd10a4550e0467e08ff9ad0d0e64051559e5b798ad8b21c2b1d90b123c3052</code>",
	};
	char *h = render(NULL);

	(void)state;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(want); i++)
		if (!strstr(h, want[i]))
			fail_msg("report lacks '%s'", want[i]);
	free(h);
}

static void test_escaping(void **state)
{
	char *h = render(NULL);

	(void)state;
	/* nothing from a record reaches the page unescaped; the page has no script at all */
	assert_null(strstr(h, "<script"));
	assert_null(strstr(h, "auditor<b>"));
	assert_non_null(strstr(h, "evil&lt;script&gt;alert(&quot;q&quot;)&lt;/script&gt;"));
	assert_non_null(strstr(h, "x&lt;script&gt;alert(1)&lt;/script&gt;"));
	assert_non_null(strstr(h, "auditor&lt;b&gt;"));
	/* and nothing is fetched */
	assert_null(strstr(h, "http://"));
	assert_null(strstr(h, "https://"));
	assert_null(strstr(h, "src=\""));
	free(h);
}

static void test_deterministic_and_copied(void **state)
{
	struct fctl_buf copy = { 0 };
	char *a = render(&copy), *b = render(NULL);

	(void)state;
	assert_string_equal(a, b);
	assert_non_null(copy.data);
	assert_string_equal(a, copy.data);
	fctl_buf_release(&copy);
	free(a);
	free(b);
}

/* a manual record is marked, never green, counted as no rotation or key state; a cell's
 * parts are separated (an error is never run into the key id after it) */
static void test_manual_and_separators(void **state)
{
	static const char *const want[] = {
		"kms-rotate <span class=\"chip manual\"", "<span class=\"chip manual\">applied</span>",
		"<b>0</b><span>key rotation records", "<b>0</b><span>key state records",
		"<b>1</b><span>manual records", "class=\"lane\">Other, manual</text>",
		"fill=\"#8250df\"", "manual record</span>",
		"<b>error:</b> No such device<br>key id <code>8a09aa3011223344</code>",
	};
	char *h = render_slice(slice_manual, sizeof(slice_manual) - 1, NULL);

	(void)state;
	for (size_t i = 0; i < FCTL_ARRAY_SIZE(want); i++)
		if (!strstr(h, want[i]))
			fail_msg("report lacks '%s'", want[i]);
	assert_null(strstr(h, "chip good\">applied"));
	assert_null(strstr(h, "No such devicekey id"));
	free(h);
}

static void test_figures(void **state)
{
	const char *d = "send_lat size=2 link=l: latency_p99_us=9.5 x=null " END1 " macsec=ok";
	char who[4][64], w[16];
	double v;

	(void)state;
	assert_true(fctl_eh_fig(d, "latency_p99_us", &v));
	assert_true(v > 9.49 && v < 9.51);
	assert_false(fctl_eh_fig(d, "x", &v));         /* null is no figure */
	assert_false(fctl_eh_fig(d, "size", &v));      /* the test name is not a figure */
	assert_false(fctl_eh_fig(d, "latency_p99", &v)); /* whole keys only */
	assert_true(fctl_eh_fig(d, "h1.out_pkts_encrypted_delta", &v));
	assert_true(v == 2004);
	assert_true(fctl_eh_word(d, "macsec", w, sizeof(w)));
	assert_string_equal(w, "ok");
	assert_int_equal(fctl_eh_ends(d, who, 4), 1);
	assert_string_equal(who[0], "h1");
	assert_int_equal(fctl_eh_ends("t: macsec=ok", who, 4), 0);
	assert_false(fctl_eh_fig(NULL, "x", &v));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sections),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_deterministic_and_copied),
		cmocka_unit_test(test_figures),
		cmocka_unit_test(test_manual_and_separators),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
