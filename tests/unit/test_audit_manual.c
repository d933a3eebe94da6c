// SPDX-License-Identifier: MIT
/* Manual audit records: the "manual":true mark in the canonical form, the writer's, and the names a manual record may not take. */
#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fctl/audit.h"
#include "fctl/proto.h"

static const char head[] =
	"{\"seq\":4,\"prev\":\"0000000000000000000000000000000000000000000000000000000000000000\","
	"\"time\":\"2026-05-01T12:00:00.123456Z\",\"actor\":{\"user\":\"root\",\"uid\":0}";

static int check(const char *tail, struct fctl_audit_record *rec, char *why, size_t wl)
{
	char line[512];

	snprintf(line, sizeof(line), "%s%s", head, tail);
	why[0] = '\0';
	return fctl_audit_record_check(line, strlen(line), rec, why, wl);
}

/* "manual":true right after the actor is canonical and read; absent is the tool's record;
 * any other spelling or place is not canonical */
static void test_canonical_manual(void **state)
{
	static const struct {
		const char *tail, *why;
	} bad[] = {
		{ ",\"manual\":false,\"action\":\"kms-rotate\",\"result\":\"done\"}", "true or absent" },
		{ ",\"manual\":1,\"action\":\"kms-rotate\",\"result\":\"done\"}", "true or absent" },
		{ ",\"manual\":\"true\",\"action\":\"kms-rotate\",\"result\":\"done\"}", "true or absent" },
		{ ",\"action\":\"kms-rotate\",\"manual\":true,\"result\":\"done\"}", "\"manual\"" },
		{ ",\"action\":\"kms-rotate\",\"result\":\"done\",\"manual\":true}", "\"manual\"" },
		{ ",\"manual\":true,\"manual\":true,\"action\":\"kms-rotate\",\"result\":\"done\"}",
		  "\"manual\"" },
	};
	struct fctl_audit_record rec;
	char why[256];

	(void)state;
	assert_int_equal(check(",\"manual\":true,\"action\":\"kms-rotate\",\"result\":\"done\"}",
			       &rec, why, sizeof(why)), 0);
	assert_true(rec.manual);
	assert_int_equal(check(",\"action\":\"apply\",\"result\":\"applied\"}", &rec, why,
			       sizeof(why)), 0);
	assert_false(rec.manual);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(check(bad[i].tail, NULL, why, sizeof(why)), -EINVAL);
		if (!strstr(why, bad[i].why))
			fail_msg("case %zu: '%s' does not name '%s'", i, why, bad[i].why);
	}
}

/* the tool's own actions are refused for a manual record, others pass; every request type
 * of the agent protocol (the agent audits each by its name) is among the tool's */
static void test_manual_action_names(void **state)
{
	static const char *const tool[] = { "apply", "rollback", "recover", "drift", "probe",
					    "confirm-rollback", "log-repair", "key-rotation",
					    "key-state", "key-rotate", "mka-state", "teardown" };
	static const char *const ok[] = { "kms-rotate", "change-approved", "act-1", "a", "rotate" };
	static const char *const notname[] = { "", "Apply", "apply now", "-x", "a_b", "1st",
					       "kms\nrotate",
					       "a123456789012345678901234567890123456789012345678" };
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(tool) / sizeof(tool[0]); i++) {
		assert_true(fctl_audit_action_is_tool(tool[i]));
		assert_int_equal(fctl_audit_manual_action_check(tool[i], err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "fabricctl writes itself"));
		assert_non_null(strstr(err, tool[i]));
	}
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		assert_int_equal(fctl_audit_manual_action_check(ok[i], err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(notname) / sizeof(notname[0]); i++)
		assert_int_equal(fctl_audit_manual_action_check(notname[i], err, sizeof(err)),
				 -EINVAL);
	for (unsigned int t = 0; t < 256; t++) {
		const char *n = fctl_proto_type_name((uint8_t)t);

		if (n && !fctl_audit_action_is_tool(n))
			fail_msg("protocol type '%s' (the agent audits requests by it) is not a tool "
				 "action", n);
	}
}

/* the writer: a manual entry is refused with a tool action, written with the mark after the
 * actor otherwise; a tool entry has no mark; the log of both verifies, and the mark cannot
 * be taken out of a record without the chain saying so */
static void test_writer_marks_manual(void **state)
{
	char dir[] = "/tmp/fctl-manual.XXXXXX", log[300], pub[300], key[300], err[256], *p;
	struct fctl_audit_entry man = { .manual = true, .action = "apply", .result = "applied" };
	struct fctl_audit_entry tool = { .action = "apply", .result = "applied", .host = "h1" };
	struct fctl_audit_report r = { 0 };
	struct fctl_audit *a = NULL;
	FILE *fp;
	long n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(fctl_audit_keygen(dir, err, sizeof(err)), 0);
	snprintf(log, sizeof(log), "%s/audit.log", dir);
	snprintf(key, sizeof(key), "%s/audit.key", dir);
	snprintf(pub, sizeof(pub), "%s/audit.pub", dir);
	assert_int_equal(fctl_audit_entry_check(&man, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "'apply'"));
	{
		struct fctl_audit_opts o = { .log_path = log, .key_path = key };

		assert_int_equal(fctl_audit_open(&o, &a, err, sizeof(err)), 0);
	}
	assert_int_equal(fctl_audit_append(a, &man), -EINVAL);
	man.action = "kms-rotate";
	assert_int_equal(fctl_audit_append(a, &man), 0);
	assert_int_equal(fctl_audit_append(a, &tool), 0);
	assert_int_equal(fctl_audit_append(a, &tool), 0);
	assert_int_equal(fctl_audit_close(a), 0);
	assert_int_equal(fctl_audit_verify(log, NULL, pub, &r), 0);
	assert_int_equal(r.n_errors, 0);
	assert_int_equal(r.records, 3);
	fctl_audit_report_release(&r);
	fp = fopen(log, "r+b");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	p = calloc(1, (size_t)n + 1);
	assert_int_equal(fread(p, 1, (size_t)n, fp), (size_t)n);
	assert_non_null(strstr(p, "},\"manual\":true,\"action\":\"kms-rotate\""));
	assert_null(strstr(strstr(p, "\"manual\"") + 1, "\"manual\"")); /* the tool's: none */
	/* the mark taken out of record 1: record 2's prev no longer names it */
	{
		char *m = strstr(p, ",\"manual\":true"), *rest = m + strlen(",\"manual\":true");

		memmove(m, rest, strlen(rest) + 1);
		rewind(fp);
		assert_int_equal(fwrite(p, 1, strlen(p), fp), strlen(p));
		assert_int_equal(ftruncate(fileno(fp), (off_t)strlen(p)), 0);
	}
	fclose(fp);
	free(p);
	assert_int_equal(fctl_audit_verify(log, NULL, pub, &r), 0);
	assert_true(r.n_errors > 0);
	{
		bool modified = false;

		for (size_t i = 0; i < r.n; i++)
			modified |= r.f[i].kind == FCTL_AUDIT_MODIFIED && r.f[i].seq <= 2;
		assert_true(modified);
	}
	fctl_audit_report_release(&r);
	{
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canonical_manual),
		cmocka_unit_test(test_manual_action_names),
		cmocka_unit_test(test_writer_marks_manual),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
