// SPDX-License-Identifier: MIT
/*
 * Unit tests of mka/ports.json (fctl_evi_mka_json, libfctl/evidence/evidence_mka.c): the
 * MKA ports of an evidence window from the agent's mka-state, mka-restart and mka-rotate records,
 * per host and port, with CKN, key server and the CAK's check value; parsed back with
 * the audit module's JSON field reader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "evidence_int.h"
#include "fctl/audit.h"

#define CKN "00112233445566778899aabbccddeeff"

static const struct fctl_evi_mka_in recs[] = {
	{ 3, "2026-12-01T21:00:00Z", "mka-state", "h2", "secured",
	  "port=eth0.100 ckn=" CKN " key_server=52:54:00:fa:01:00@1 is_key_server=no live_peers=1",
	  "a1b2c3" },
	{ 4, "2026-12-01T21:00:05Z", "mka-restart", "h2", "restarted",
	  "port=eth0.100 reason=dead (wpa_supplicant not running)", NULL },
	{ 5, "2026-12-01T21:00:06Z", "mka-state", "h1", "secured",
	  "port=eth0.100 ckn=" CKN " key_server=52:54:00:fa:01:00@1 is_key_server=yes live_peers=1",
	  "a1b2c3" },
	{ 6, "2026-12-01T21:00:09Z", "mka-state", "h2", "not-secured",
	  "port=eth0.100 ckn=" CKN " key_server=- is_key_server=no live_peers=0", "a1b2c3" },
	{ 7, "2026-12-01T21:00:12Z", "mka-state", "h2", "secured",
	  "port=eth0.100 ckn=" CKN " key_server=52:54:00:fa:02:00@1 is_key_server=yes live_peers=1",
	  "d4e5f6" },
};

static char *field(const char *json, size_t len, const char *key)
{
	char *v = NULL;

	assert_int_equal(fctl_audit_field(json, len, key, &v), 0);
	return v;
}

static void test_ports(void **state)
{
	struct fctl_buf b = { 0 };
	const char *p, *h2;
	size_t pl;
	char *v;

	(void)state;
	assert_int_equal(fctl_evi_mka_json(recs, 5, &b), 0);
	assert_non_null(b.data);
	assert_int_equal(fctl_audit_field_raw(b.data, b.len, "ports", &p, &pl), 0);
	/* sorted by host: h1 first, then h2 */
	h2 = strstr(p, "{\"host\":\"h2\"");
	assert_non_null(strstr(p, "{\"host\":\"h1\""));
	assert_non_null(h2);
	assert_true(strstr(p, "{\"host\":\"h1\"") < h2);
	v = field(h2, strlen(h2), "port");
	assert_string_equal(v, "eth0.100");
	free(v);
	/* h2: the last state names the new key server; both check values; no restart
	 * record's words taken for fields */
	v = field(h2, strlen(h2), "key_server");
	assert_string_equal(v, "52:54:00:fa:02:00@1");
	free(v);
	assert_non_null(strstr(h2, "\"kcv\":[\"a1b2c3\",\"d4e5f6\"]"));
	assert_non_null(strstr(h2, "\"ckn\":[\"" CKN "\"]"));
	assert_non_null(strstr(h2, "\"key_servers\":[\"52:54:00:fa:01:00@1\",\"52:54:00:fa:02:00@1\"]"));
	assert_non_null(strstr(h2, "\"secured\":true}"));
	assert_non_null(strstr(h2, "{\"seq\":4,\"time\":\"2026-12-01T21:00:05Z\",\"action\":"
				   "\"mka-restart\",\"result\":\"restarted\",\"key_server\":null,"
				   "\"kcv\":null}"));
	/* four records of h2, one of h1 */
	assert_non_null(strstr(h2, "\"seq\":7"));
	assert_null(strstr(h2, "\"seq\":5"));
	fctl_buf_release(&b);
}

static void test_last_not_secured_and_empty(void **state)
{
	struct fctl_buf b = { 0 };

	(void)state;
	/* up to seq 6: h2's last state is not secured, with no key server */
	assert_int_equal(fctl_evi_mka_json(recs, 4, &b), 0);
	assert_non_null(strstr(b.data, "\"key_server\":null,\"secured\":false}"));
	fctl_buf_release(&b);
	assert_int_equal(fctl_evi_mka_json(recs, 0, &b), 0);
	assert_non_null(strstr(b.data, "\"ports\":[]"));
	fctl_buf_release(&b);
}

/* A CAK rotation's records (docs/mka.md, "CAK rotation"): among the port's events, and
 * the new CKN and check value after it, as the agent writes them. */
static void test_rotation(void **state)
{
	static const struct fctl_evi_mka_in rot[] = {
		{ 10, "2026-12-03T03:10:25Z", "mka-state", "h1", "secured",
		  "port=eth0.100 ckn=" CKN " key_server=52:54:00:fa:01:00@1 is_key_server=yes "
		  "live_peers=1", "00ba49" },
		{ 11, "2026-12-03T03:10:58Z", "mka-rotate", "h1", "moved",
		  "port=eth0.100 addresses moved to the new CA's SecY", NULL },
		{ 12, "2026-12-03T03:11:02Z", "mka-rotate", "h1", "done",
		  "port=eth0.100 old CA stopped, the new CA is current", NULL },
		{ 13, "2026-12-03T03:11:03Z", "mka-state", "h1", "secured",
		  "port=eth0.100 ckn=6171459b key_server=52:54:00:fa:01:00@2 is_key_server=yes "
		  "live_peers=1", "0ac4ad" },
	};
	struct fctl_buf b = { 0 };

	(void)state;
	assert_int_equal(fctl_evi_mka_json(rot, 4, &b), 0);
	assert_non_null(b.data);
	assert_non_null(strstr(b.data, "mka-rotate records"));
	assert_non_null(strstr(b.data, "\"seq\":11,\"time\":\"2026-12-03T03:10:58Z\",\"action\":"
				       "\"mka-rotate\",\"result\":\"moved\""));
	assert_non_null(strstr(b.data, "\"seq\":12,\"time\":\"2026-12-03T03:11:02Z\",\"action\":"
				       "\"mka-rotate\",\"result\":\"done\""));
	assert_non_null(strstr(b.data, "\"kcv\":[\"00ba49\",\"0ac4ad\"]"));
	assert_non_null(strstr(b.data, "\"ckn\":[\"" CKN "\",\"6171459b\"]"));
	fctl_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_last_not_secured_and_empty),
		cmocka_unit_test(test_rotation),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
