// SPDX-License-Identifier: MIT
/* The agent's role policy: allow, deny, pin, deny wins, the role set; strict parsing. */
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

#include "fctl/proto.h"
#include "fctl/tls.h"

#define V FCTL_ROLE_BIT(FCTL_ROLE_VIEWER)
#define O FCTL_ROLE_BIT(FCTL_ROLE_OPERATOR)
#define K FCTL_ROLE_BIT(FCTL_ROLE_KEY_CUSTODIAN)

/* fingerprints: every byte the same, so a policy line is easy to write */
#define FP(b) "sha256:" b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b b
#define FP_COLONS(b)                                                                     \
	"sha256:" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b \
	":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b ":" b \
	":" b ":" b ":" b ":" b ":" b

static const char policy[] =
	"# the original form still works\n"
	"operator alice\n"                                          /* 2 */
	"viewer bob   # comments after a rule\n"                    /* 3 */
	"allow key-custodian dn:CN=carol,OU=ops,O=fabricctl test\n" /* 4 */
	"allow operator " FP("d0") "\n"                             /* 5 */
	"allow viewer cn:Jane Doe\n"                                /* 6 */
	"\n"
	"deny all cn:mallory\n"                                     /* 8 */
	"deny key-custodian cn:eve\n"                               /* 9 */
	"deny operator " FP_COLONS("B2") "\n"                       /* 10 */
	"pin key-custodian " FP("a1") "\n"                          /* 11 */
	"pin key-custodian " FP("a3") "\n";                         /* 12 */

static void test_eval(void **state)
{
	static const struct {
		const char *name, *cn, *dn;
		uint8_t fp;
		enum fctl_role cert_role;
		unsigned want;
		const char *why; /* part of the reason, NULL = none */
	} cases[] = {
		/* allow: a CN rule replaces the certificate's own role (up or down) */
		{ "allow-cn-up", "alice", "CN=alice", 0x01, FCTL_ROLE_VIEWER, O, NULL },
		{ "allow-cn-down", "bob", "CN=bob", 0x02, FCTL_ROLE_OPERATOR, V, NULL },
		{ "allow-cn-spaces", "Jane Doe", "CN=Jane Doe", 0x03, FCTL_ROLE_NONE, V, NULL },
		{ "allow-dn", "carol", "CN=carol,OU=ops,O=fabricctl test", 0xa3, FCTL_ROLE_NONE, K,
		  NULL },
		{ "allow-dn-exact", "carol", "CN=carol,OU=ops", 0xa3, FCTL_ROLE_NONE, 0, NULL },
		{ "allow-sha256", "dave", "CN=dave", 0xd0, FCTL_ROLE_VIEWER, O, NULL },
		/* no rule: the certificate's own role */
		{ "cert-role", "frank", "CN=frank", 0x04, FCTL_ROLE_OPERATOR, O, NULL },
		{ "no-role", "nobody", "CN=nobody", 0x05, FCTL_ROLE_NONE, 0, NULL },
		/* deny */
		{ "deny-all", "mallory", "CN=mallory", 0x06, FCTL_ROLE_OPERATOR, 0,
		  "role operator denied by policy:8" },
		{ "deny-one", "eve", "CN=eve", 0xa1, FCTL_ROLE_KEY_CUSTODIAN, 0,
		  "role key-custodian denied by policy:9" },
		{ "deny-other-role", "eve", "CN=eve", 0x07, FCTL_ROLE_VIEWER, V, NULL },
		/* deny wins over allow: alice's CN allows operator, her fingerprint is denied */
		{ "deny-wins", "alice", "CN=alice", 0xb2, FCTL_ROLE_VIEWER, 0,
		  "role operator denied by policy:10" },
		/* pin: OU/SAN key-custodian is not enough when the role has pins */
		{ "pin-refused", "kc2", "CN=kc2,OU=key-custodian", 0xa2, FCTL_ROLE_KEY_CUSTODIAN, 0,
		  "role key-custodian is pinned to other certificates (policy:11)" },
		{ "pin-accepted", "kc1", "CN=kc1,OU=key-custodian", 0xa1, FCTL_ROLE_KEY_CUSTODIAN,
		  K, NULL },
		{ "pin-second", "kc3", "CN=kc3", 0xa3, FCTL_ROLE_KEY_CUSTODIAN, K, NULL },
		/* a pin does not grant */
		{ "pin-no-grant", "kc4", "CN=kc4", 0xa1, FCTL_ROLE_VIEWER, V, NULL },
		/* a pin applies to an allow rule's role too */
		{ "pin-allow-dn", "carol", "CN=carol,OU=ops,O=fabricctl test", 0x08,
		  FCTL_ROLE_NONE, 0, "pinned to other certificates" },
	};
	struct fctl_tls_policy *p = NULL;
	char err[256] = "";

	(void)state;
	assert_int_equal(fctl_tls_policy_parse(policy, sizeof(policy) - 1, "policy", &p, err,
					       sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fctl_tls_peer peer = { .dn = cases[i].dn, .cn = cases[i].cn,
					      .cert_role = cases[i].cert_role };
		char why[200];
		unsigned got;

		memset(peer.sha256, cases[i].fp, sizeof(peer.sha256));
		got = fctl_tls_policy_eval(p, &peer, why, sizeof(why));
		if (got != cases[i].want || (cases[i].why && !strstr(why, cases[i].why)) ||
		    (!cases[i].why && why[0]))
			fail_msg("%s: roles 0x%x, want 0x%x; why '%s', want '%s'", cases[i].name,
				 got, cases[i].want, why, cases[i].why ? cases[i].why : "");
	}
	fctl_tls_policy_free(p);
}

static void test_no_policy(void **state)
{
	struct fctl_tls_peer peer = { .dn = "CN=x", .cn = "x", .cert_role = FCTL_ROLE_OPERATOR };
	struct fctl_tls_policy *p = NULL;
	char err[64];

	(void)state;
	assert_int_equal(fctl_tls_policy_eval(NULL, &peer, NULL, 0), O);
	/* an empty file is a policy without rules */
	assert_int_equal(fctl_tls_policy_parse("", 0, "empty", &p, err, sizeof(err)), 0);
	assert_int_equal(fctl_tls_policy_eval(p, &peer, NULL, 0), O);
	fctl_tls_policy_free(p);
	fctl_tls_policy_free(NULL);
}

static void test_role_set(void **state)
{
	(void)state;
	assert_true(fctl_roles_allow(V | K, FCTL_MSG_STATUS, 0));
	assert_false(fctl_roles_allow(V | K, FCTL_MSG_APPLY, 0));
	assert_true(fctl_roles_allow(V | K, FCTL_MSG_APPLY, FCTL_OPT_DRY_RUN));
	assert_true(fctl_roles_allow(V | O, FCTL_MSG_ROLLBACK, 0));
	assert_true(fctl_roles_allow(0, FCTL_MSG_HELLO, 0));
	assert_false(fctl_roles_allow(0, FCTL_MSG_STATUS, 0));
	/* confirm keeps a change: the role of apply, never a viewer's, dry-run bit or not */
	assert_false(fctl_roles_allow(V, FCTL_MSG_CONFIRM, 0));
	assert_false(fctl_roles_allow(V | K, FCTL_MSG_CONFIRM, FCTL_OPT_DRY_RUN));
	assert_false(fctl_roles_allow(0, FCTL_MSG_CONFIRM, 0));
	assert_true(fctl_roles_allow(O, FCTL_MSG_CONFIRM, FCTL_OPT_JSON));
	assert_true(fctl_roles_allow(V | O, FCTL_MSG_CONFIRM, 0));
	assert_true(fctl_role_allows(FCTL_ROLE_LOCAL, FCTL_MSG_CONFIRM, 0));
	assert_false(fctl_role_allows(FCTL_ROLE_VIEWER, FCTL_MSG_CONFIRM, 0));
	assert_false(fctl_role_allows(FCTL_ROLE_KEY_CUSTODIAN, FCTL_MSG_CONFIRM, 0));
	/* a confirmed apply is an apply: a viewer may not send one */
	assert_false(fctl_roles_allow(V, FCTL_MSG_APPLY, FCTL_OPT_JSON));
	assert_int_equal(fctl_roles_primary(V | K), FCTL_ROLE_KEY_CUSTODIAN);
	assert_int_equal(fctl_roles_primary(V | O | K), FCTL_ROLE_OPERATOR);
	assert_int_equal(fctl_roles_primary(V), FCTL_ROLE_VIEWER);
	assert_int_equal(fctl_roles_primary(0), FCTL_ROLE_NONE);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "frobnicate operator cn:x\n", "p:1: unknown directive 'frobnicate'" },
		{ "\n# comment\noperator alice\nalow viewer cn:x\n",
		  "p:4: unknown directive 'alow'" },
		{ "operator alice extra\n", "p:1: expected 'ROLE CN'" },
		{ "operator\n", "p:1: expected 'ROLE CN'" },
		{ "allow wizard cn:x\n", "p:1: allow needs a role" },
		{ "allow all cn:x\n", "p:1: allow needs a role" },
		{ "pin all " FP("a1") "\n", "p:1: pin needs a role" },
		{ "deny all\n", "p:1: expected cn:NAME, dn:DN or sha256:FINGERPRINT" },
		{ "deny all uid:0\n", "p:1: expected cn:NAME" },
		{ "allow operator cn:\n", "p:1: 'cn:' needs a value" },
		{ "allow operator sha256:abcd\n", "p:1: bad fingerprint" },
		{ "allow operator " FP("zz") "\n", "p:1: bad fingerprint" },
		{ "allow operator " FP("a1") "00\n", "p:1: bad fingerprint" },
		{ "pin operator cn:alice\n", "p:1: pin takes sha256:FINGERPRINT only" },
		{ "viewer ok\r\ndeny viewer dn:\r\n", "p:2: 'dn:' needs a value" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fctl_tls_policy *p = NULL;
		char err[256] = "";
		int r = fctl_tls_policy_parse(cases[i].text, strlen(cases[i].text), "p", &p, err,
					      sizeof(err));

		if (r != -EINVAL || p || !strstr(err, cases[i].want))
			fail_msg("case %zu: r=%d err '%s', want '%s'", i, r, err, cases[i].want);
	}
	{
		/* a NUL byte inside a line is refused, not cut */
		static const char nul[] = "operator alice\nviewer b\0ob\n";
		struct fctl_tls_policy *p = NULL;
		char err[256] = "";

		assert_int_equal(fctl_tls_policy_parse(nul, sizeof(nul) - 1, "p", &p, err,
						       sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "p:2: NUL byte"));
	}
}

static void test_load(void **state)
{
	char path[] = "/tmp/fctl-policy-XXXXXX", err[256] = "";
	struct fctl_tls_policy *p = NULL;
	int fd = mkstemp(path);
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	fputs("operator alice\nmystery line\n", f);
	fclose(f);
	assert_int_equal(fctl_tls_policy_load(path, &p, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, path));
	assert_non_null(strstr(err, ":2: unknown directive 'mystery'"));
	unlink(path);
	assert_int_equal(fctl_tls_policy_load(path, &p, err, sizeof(err)), -ENOENT);
	assert_null(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_eval),      cmocka_unit_test(test_no_policy),
		cmocka_unit_test(test_role_set),  cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
